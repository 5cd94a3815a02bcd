"""The kernel's engine, started when it is first needed, and the plain cells run before.

`%load_ext resumable_cells` registers the magics and the hooks a cell goes through (the
awaiting transformer, the reading of values hits left unread, the sidebar's comm target):
that is all a kernel needs until its first `%%step`. The engine itself (the store
opened, the run and its record read, and the modules that hash, store and restore
values imported) starts at the first `%%step` cell, `%step` command, sidebar request or
`resumable_cells.record()`, so that loading the extension costs a few milliseconds
rather than the hundred a notebook of fast cells would feel. The hooks ask the slot for
the engine only when they have work: `started` is None until then, and nothing is
pending or watched.

Until it starts, the slot keeps the plain cells that ran (`CellRan`): the staleness
watcher (`freshness.py`) that starts with the engine labels the inputs those cells
rebound as it would have had it been watching.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from ..engine.kernel import Engine

log = logging.getLogger(__name__)


class CellRan(msgspec.Struct, frozen=True):
    """A cell that ran: when it ended, its label (`In [23]`) and its source."""

    time: float
    where: str
    source: str


def cell_ran(result: Any) -> CellRan:
    """The `CellRan` of IPython's `post_run_cell` result."""
    count = getattr(result, "execution_count", None)
    info = getattr(result, "info", None)
    return CellRan(
        time.time(), f"In [{count}]" if count else "", getattr(info, "raw_cell", "") or ""
    )


class EngineSlot:
    """Holds the kernel's engine once `get` started it; `on_start` hooks run then, in the
    order they were added, with the engine."""

    def __init__(self, shell: InteractiveShell, start: Callable[[], Engine]) -> None:
        self.shell = shell
        self._start = start
        self.started: Engine | None = None
        self.on_start: list[Callable[[Engine], None]] = []
        self.cells_before: list[CellRan] = []  # plain cells run before the engine started
        shell.events.register("post_run_cell", self._cell_ran)

    def get(self) -> Engine:
        """The engine, started now if it was not."""
        if self.started is None:
            engine = self._start()
            self._stop_logging()
            self.started = engine
            for hook in self.on_start:
                hook(engine)
        return self.started

    def transform(self, cell: str) -> str:
        """The cell as IPython transforms it: the engine's remembered transform once it
        started, IPython's own before (a transformer must not start it: a store that
        fails to open would fail a cell in IPython's preprocessing)."""
        if self.started is not None:
            return self.started.transform(cell)
        return self.shell.transform_cell(cell)

    def close(self) -> None:
        """The extension is unloaded: the engine (if it started) is the caller's."""
        self._stop_logging()

    def _cell_ran(self, result: Any) -> None:
        self.cells_before.append(cell_ran(result))

    def _stop_logging(self) -> None:
        try:
            self.shell.events.unregister("post_run_cell", self._cell_ran)
        except ValueError:  # already stopped
            log.debug("the slot's cell log was not registered", exc_info=True)
