"""The snapshot of a notebook's run that the sidebar draws (see docs/PROTOCOL.md).

Read straight from the store, so the server extension can fill the panel before any
kernel runs; the kernel sends the same shape over its comm.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from ..storage.store import Store
from . import glance, journal, runs, staleness


def build(
    store: Store, run: runs.Run | None, current_session: str | None = None, rows=None
) -> dict:
    """`rows`: the kernel's own (with what plain cells changed); else from the record.
    `cache` has the store's figures (the kernel adds the team cache's)."""
    cache = {"store": glance.store_figures(store)} if store is not None else None
    if run is None:
        return {"notebook": None, "session": current_session, "run": None, "budget": None,
                "sessions": [], "executions": [], "steps": [], "cache": cache}  # fmt: skip
    execs = journal.load(store, run.id, current_session)
    return {
        "notebook": run.notebook,
        "session": current_session,  # the kernel's own; None from the server route
        "run": {k: v for k, v in msgspec.structs.asdict(run).items() if k != "notebook"},
        "budget": runs.Budget(store, run.id).snapshot(),
        "sessions": journal.sessions(execs),
        "executions": execs,
        "steps": staleness.step_rows(execs) if rows is None else rows,
        "cache": cache,
    }


def load_snapshot(store_dir: str | Path, notebook_id: str) -> dict:
    """The stored run of `notebook_id` (a notebook file name) in `store_dir`, without
    creating anything: a missing store or run gives an empty snapshot."""
    store_dir = Path(store_dir)
    if not (store_dir / "index").exists():
        return dict(build(None, None), notebook=notebook_id)  # type: ignore[arg-type]
    store = Store(store_dir)
    try:
        row = store.ledger.run(notebook_id)
        run = runs.Run(**row) if row else None
        snap = build(store, run)
        snap["notebook"] = notebook_id
        return snap
    finally:
        store.close()


def rename_notebook(store_dir: str | Path, old: str, new: str) -> None:
    """Keep a notebook's run when the notebook file is renamed."""
    store_dir = Path(store_dir)
    if not (store_dir / "index").exists():
        return
    store = Store(store_dir)
    try:
        store.ledger.rename_run(old, new)
    finally:
        store.close()
