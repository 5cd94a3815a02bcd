"""Auto mode: every code cell the user runs is a step, without `%%step` in its source.

`%step auto on` keeps the choice for the notebook (in the store, so a restarted kernel
that loads the extension is in auto mode again); `c.StepMagics.auto = True` turns it on
for every notebook. The cell is rewritten as IPython reads it, before it looks for a
cell magic: `%%step --auto` goes first, so the cell runs under the rules any step has
(a name derived from what it assigns, its inputs in the key, the tripwire: a cell that
writes a file or runs a subprocess is run and not cached). Cells left as they are: those
that start with another cell magic (one cell magic cannot wrap another, as `verify`
decides too), cells of only our own commands (`%step ...`, `%load_ext ...`, `%config
...`), and every execution that is not the user's: silent ones, those not stored in the
history, completion and inspection, and any shell without a kernel (a terminal reads
partial input through the same transforms).
"""

from __future__ import annotations

import logging
import sys
from types import FrameType
from typing import TYPE_CHECKING, Any

from .. import cells, settings

if TYPE_CHECKING:
    from ..engine.kernel import Engine
    from .engine_slot import EngineSlot

log = logging.getLogger(__name__)
SETTING = "auto"
_OWN_COMMANDS = ("%step", "%load_ext", "%reload_ext", "%unload_ext", "%config")


class AutoCells:
    """The transform IPython runs on each cell's lines (its cleanup transforms), and
    whether auto mode is on in this kernel."""

    def __init__(self, slot: EngineSlot, on: bool) -> None:
        self.slot = slot
        self.on = on

    def __call__(self, lines: list[str]) -> list[str]:
        if not self.on or not lines or _transforming_a_body(self.slot):
            return lines
        source = "".join(lines)
        if not wraps(source) or _users_own_cell(self.slot.shell) != source.rstrip("\n"):
            return lines
        return ["%%step --auto\n", *lines]


def wraps(source: str) -> bool:
    """Whether auto mode puts this cell under `%%step`."""
    if not source.strip() or cells.cell_magic(source) is not None:
        return False
    code = [
        ln.strip() for ln in source.splitlines() if ln.strip() and not ln.strip().startswith("#")
    ]
    # (a cell of comments only is a step too, as `verify` wraps it: nothing to serve,
    # but one rule for both)
    return not code or not all(ln.split()[0] in _OWN_COMMANDS for ln in code)


def _transforming_a_body(slot: EngineSlot) -> bool:
    """Whether this is not a cell's own transform but a step's body transformed again:
    by the engine (`Engine.transform`), or inside the shell's transform of the cell (the
    awaiting transformer, one of the shell's own, asks for the body's)."""
    engine = slot.started
    if engine is not None and engine.transforming:
        return True
    shell = slot.shell
    frame: FrameType | None = sys._getframe(2)
    outer = 0
    while frame is not None:
        if frame.f_code.co_name == "transform_cell" and frame.f_locals.get("self") is shell:
            outer += 1
            if outer > 1:
                return True
        frame = frame.f_back
    return False


def _users_own_cell(shell: Any) -> str | None:
    """The code of the execute request being handled, when the user sent it (not
    silent, kept in the history), else None. Only that code is wrapped, not code it
    runs: the body of `%%time` or `%%capture`, `get_ipython().run_cell(...)`. (ipykernel
    transforms the cell twice, to decide how to run it and to run it; both see it
    wrapped.)"""
    kernel = getattr(shell, "kernel", None)
    if kernel is None:
        return None
    try:
        parent = kernel.get_parent()
    except Exception:  # no request being handled (a test harness)
        log.debug("no parent request: auto mode leaves the cell", exc_info=True)
        return None
    content = parent.get("content") or {}
    if (
        (parent.get("header") or {}).get("msg_type") != "execute_request"
        or content.get("silent", False)
        or not content.get("store_history", True)
    ):
        return None
    code = content.get("code")
    return code.rstrip("\n") if isinstance(code, str) else None


def attach(slot: EngineSlot, configured: bool, store_dir: str = "") -> AutoCells:
    """Install the transform; on when configured for every notebook or kept for this one
    (in the store directory's `notebooks.json`, read without opening the store)."""
    shell = slot.shell
    for t in shell.input_transformers_cleanup:
        if isinstance(t, AutoCells):
            return t
    kept = settings.notebook_setting(
        settings.store_dir(configured=store_dir), settings.notebook_id(shell.user_ns), SETTING
    )
    auto = AutoCells(slot, kept == "on" if kept is not None else configured)
    # first: it sees the cell as sent (the other cleanups, dedent and prompt stripping,
    # then apply to the step's body, which IPython transforms again)
    shell.input_transformers_cleanup.insert(0, auto)
    return auto


def detach(shell: Any) -> None:
    shell.input_transformers_cleanup[:] = [
        t for t in shell.input_transformers_cleanup if not isinstance(t, AutoCells)
    ]


def of(engine: Engine) -> AutoCells | None:
    for t in engine.shell.input_transformers_cleanup:
        if isinstance(t, AutoCells):
            return t
    return None


def switch(engine: Engine, on: bool) -> None:
    """`%step auto on|off`: now, and kept for this notebook."""
    auto = of(engine)
    if auto is None:
        raise RuntimeError("auto mode's transform is not installed: load the extension")
    auto.on = on
    settings.keep_notebook_setting(
        engine.store.dir, engine.notebook, SETTING, "on" if on else "off"
    )
