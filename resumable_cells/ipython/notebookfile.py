"""Which cells `%step plan` and `%step restore` work from: the ones the frontend sent
with the request (the sidebar adds the notebook's code cells, unsaved edits included, to
the metadata of a request that runs either: `sent_cells`), else the notebook file this
kernel is running.

JupyterLab and Notebook 7 name it (`__session__`, `JPY_SESSION_NAME`). A headless run
(nbconvert, papermill, nbclient) does not: then the notebook is recognised by its
content, as the `.ipynb` file in the working directory whose code cells hold the most
of the cells this kernel has run (the current one included). When none does, the plan
is made from the step cells this kernel has run, and it says so.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import msgspec
from IPython.core.error import UsageError

from .. import settings


class Located(msgspec.Struct):
    path: str | None  # None: no file; `cells` are what the kernel ran
    note: str  # what was used, when the frontend did not say ("" when it did)
    cells: list[dict] | None = None


def sent_cells(shell: Any) -> list[dict] | None:
    """The code cells the frontend sent with the request being run (metadata
    `resumable_cells.cells`: [{"id", "source"}]), or None when it sent none (a frontend
    without the sidebar, nbclient) or something else."""
    kernel = getattr(shell, "kernel", None)
    if kernel is None:
        return None
    try:
        meta = kernel.get_parent().get("metadata") or {}
    except Exception:  # no request being handled
        return None
    return cells_of((meta.get("resumable_cells") or {}).get("cells"))


def cells_of(sent: Any) -> list[dict] | None:
    """Cells a frontend sent ([{"id", "source"}], over the comm or in a request's
    metadata) as the plan and the restore take them; None when they are not that."""
    if not isinstance(sent, list) or not all(
        isinstance(c, dict) and isinstance(c.get("source"), str) for c in sent
    ):
        return None
    return [{"id": c.get("id") if isinstance(c.get("id"), str) else None,
             "source": c["source"]} for c in sent]  # fmt: skip


def code_cells(path: str) -> list[dict]:
    """The code cells of a notebook file: [{"id", "source"}] (UsageError if unreadable)."""
    try:
        with open(path, encoding="utf-8") as f:
            nb = json.load(f)
    except (OSError, ValueError) as err:
        raise UsageError(f"%step plan: cannot read {path} ({err}).") from None
    out = []
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code":
            src = cell.get("source", "")
            out.append(
                {"id": cell.get("id"), "source": "".join(src) if isinstance(src, list) else src}
            )
    return out


def locate(shell: Any, explicit: str | None = None) -> Located:
    if explicit:
        if not os.path.isfile(explicit):
            raise UsageError(f"%step plan: no notebook at {explicit!r}.")
        return Located(explicit, "")
    session = settings.session_path(shell.user_ns)
    if session:
        for c in (session, os.path.join(os.getcwd(), os.path.basename(session))):
            if os.path.isfile(c):
                return Located(c, "")
    ran = [s.strip() for s in _history(shell) if s.strip()]
    found = _by_content(ran)
    if found:
        best, others = found
        also = f" (also matching: {', '.join(others)})" if others else ""
        note = (
            f"this kernel was not told its notebook file; using {best}, the notebook in "
            f"{os.getcwd()} whose cells match the cells it ran{also}"
        )
        return Located(best, note)
    cells = [{"id": None, "source": s} for s in dict.fromkeys(ran) if s.startswith("%%step")]
    note = (
        "this kernel was not told its notebook file and none in the working directory "
        f"holds the cells it ran; planned the {len(cells)} step cells it has run so far "
        "(give the file with `%step plan --notebook PATH`)"
    )
    return Located(None, note, cells)


def _history(shell: Any) -> list[str]:
    hm = getattr(shell, "history_manager", None)
    return list(getattr(hm, "input_hist_raw", None) or [])


def _by_content(ran: list[str]) -> tuple[str, list[str]] | None:
    if not ran:
        return None
    current = ran[-1]
    scored = []
    for path in sorted(Path.cwd().glob("*.ipynb")):
        try:
            sources = {c["source"].strip() for c in code_cells(str(path))}
        except UsageError:
            continue
        if current in sources:
            scored.append((sum(s in sources for s in ran), path.name))
    if not scored:
        return None
    top = max(score for score, _ in scored)
    names = [name for score, name in scored if score == top]
    return names[0], names[1:]
