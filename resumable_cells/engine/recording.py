"""The record of one execution of a step, as it happens.

A `start` row when it begins and an `end` row when it finishes go to the run's journal
(a hit is one row; the end row is written once the kernel is idle, `Engine.record_soon`),
and each merged execution to the engine's listeners (the sidebar) at once;
warnings go to stderr under the step's name; the one-line status follows the end. None
of it may fail the user's cell: what cannot be written is said and logged.
"""

from __future__ import annotations

import logging
import os
import random
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import logs
from ..display import statusline
from ..display.prompt import prompt_number
from ..errors import BudgetExceeded
from ..records.provenance import Origin

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from .kernel import Engine

log = logging.getLogger(__name__)
# Execution ids: 64 random bits, from a generator of the package's own seeded from the
# system once (and again in a forked child). `os.urandom` on every step is a system call
# that lets the kernel's I/O thread take the GIL just as it sends the cell's first
# messages, and the step waits for it back.
_ids = random.Random(os.urandom(32))
if hasattr(os, "register_at_fork"):  # (POSIX)
    os.register_at_fork(after_in_child=lambda: _ids.seed(os.urandom(32)))
_NO_STATUS_LINE = ("error", "interrupted", "refused")
_COMPUTED_NOW = ("live", "effect")  # their values are this execution's own
_NOTHING_SPENT = {"tokens": 0, "cost": 0.0}
_LEFT_VALUES = ("hit", "live", "effect")  # the names they bound come from them


class Recording:
    """What one execution tells: its record rows, warnings and status line."""

    def __init__(self, engine: Engine, name: str) -> None:
        self.engine = engine
        self.name = name
        self.id = _execution_id()
        self.start = time.time()
        self.t0 = time.perf_counter()
        parent = _request(engine.shell)
        restoring = engine.restoring  # (a session restore: the cell it serves again)
        self.cell_id: str | None = (
            restoring.cell_id if restoring else (parent.get("metadata") or {}).get("cellId")
        )
        self.execution_count = (
            restoring.execution_count if restoring else prompt_number(engine.shell)
        )
        # The request's cell is this `%%step` cell (not a cell that runs steps in a
        # loop, nor a restore serving many): nothing of the cell runs after the step.
        code = (parent.get("content") or {}).get("code")
        self.cell_is_step = (
            restoring is None and isinstance(code, str) and code.lstrip().startswith("%%step")
        )
        self.key: str | None = None
        self.inputs: dict[str, dict[str, Any]] = {}  # name -> type, size, digest
        self.outputs: list[dict[str, Any]] = []  # name, type, size, digest of each bound value
        self.origin: Origin | None = None  # the provenance of the values it left
        self.entry_key: str | None = None  # the entry it served or stored, if any
        self.wrote_streams = False  # stdout/stderr written: the status line must follow it
        self.ran = False  # the body ran: the step's spend (`engine.step_spend`) is its own
        self.begun = False  # a start row was written
        self.ended = False  # the execution's last row was written
        # auto mode: no status line for a run or a hit shorter than this many seconds
        # that saved less (the cell's badge says it)
        self.quiet_below = 0.0

    def started(self, reason: str | None = None) -> None:
        row = self._row(status="running", reason=reason)
        row["event"] = "start"
        self._append(row)
        self.begun = True

    def interrupted(self) -> None:
        """Ctrl-C ended the execution wherever it was (its key, body, hashing, store or
        replay): its rows say `interrupted`, unless it had already ended."""
        if self.ended:
            return
        if not self.begun:
            self.started()
        self.finished("interrupted", reason="interrupted by the user")

    def finished(
        self,
        status: str,
        *,
        reason: str | None = None,
        note: str | None = None,
        saved: float = 0.0,
        source: str = "local",
        computed: float | None = None,
    ) -> None:
        """The end row (a hit's only row), the `note` as a warning, the status line.
        `computed`: when a hit's entry was made (else the value is computed now)."""
        duration = time.perf_counter() - self.t0
        saved = max(0.0, saved - duration)  # one figure: the record's, the line's, the panel's
        end = time.time()
        row = self._row(status=status, reason=reason)
        row.update(
            event="start" if status == "hit" else "end",  # a hit is a whole execution in one row
            end=end, duration_s=duration, saved_s=saved,
            computed=computed or (end if status in _COMPUTED_NOW else None),
            outputs=self.outputs,
            spend={"steps": 0 if status in ("hit", "refused") else 1,
                   **(self.engine.step_spend if self.ran else _NOTHING_SPENT)},
            source=source if status == "hit" else None,
            provenance=self.origin.to_json() if self.origin is not None else None,
        )  # fmt: skip
        if status in _LEFT_VALUES:
            self.engine.producers.note(self.name, self.entry_key, self.outputs)
        self._append(row, later=True)
        self.ended = True
        if note:
            self.warn(note)
        trivial = status in ("live", "hit") and max(duration, saved) < self.quiet_below
        if not self.engine.quiet and status not in _NO_STATUS_LINE and not trivial:
            age = end - computed if computed else None
            statusline.show_line(
                self.name, status, duration, saved, reason, source, age,
                flush=self.wrote_streams, ends_cell=self.cell_is_step,
            )  # fmt: skip

    def _row(self, *, status: str, reason: str | None) -> dict[str, Any]:
        engine = self.engine
        return {
            "id": self.id, "run": engine.run.id, "session": engine.session,
            "step": self.name, "cell_id": self.cell_id,
            "execution_count": self.execution_count,
            "key": self.key, "status": status,
            "start": self.start, "reason": reason,
            "inputs": [{"name": n, **i} for n, i in self.inputs.items()],
        }  # fmt: skip

    def _append(self, row: dict[str, Any], later: bool = False) -> None:
        try:
            merged = self.engine.journal.append(row, later=later)
            if later:
                self.engine.record_soon()
        except Exception as err:  # the record must never fail the cell
            log.debug("a record row of %s was not written", self.name, exc_info=True)
            self.warn(f"the record could not be written ({err})")
            merged = row
        self.engine.emit("execution", dict(merged))

    def warn(self, message: str) -> None:
        self.wrote_streams = True
        logs.warn_step(self.name, message)

    def best_effort(
        self, warning: str | None, fn: Callable[..., Any], *args: Any, **kwargs: Any
    ) -> Any:
        """Call a store operation; a failure is logged, said (when `warning` is given)
        and gives None instead of failing the user's cell. Budget refusals pass."""
        try:
            return fn(*args, **kwargs)
        except BudgetExceeded:
            raise
        except Exception as err:
            log.debug("step %s survived a failure of %s", self.name, _name(fn), exc_info=True)
            if warning:
                self.warn(f"{warning} ({err})")
            return None


def _name(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)


def cell_id(shell: InteractiveShell) -> str | None:
    """The notebook cell id the frontend sent with the execute request, if any."""
    cell: str | None = (_request(shell).get("metadata") or {}).get("cellId")
    return cell


def _request(shell: InteractiveShell) -> dict[str, Any]:
    """The execute request the kernel is running ({} outside a kernel)."""
    kernel = getattr(shell, "kernel", None)
    if kernel is None:
        return {}
    try:
        parent = kernel.get_parent()
    except Exception:  # a kernel without a parent message (a test harness)
        log.debug("no parent message from the kernel", exc_info=True)
        return {}
    return parent if isinstance(parent, dict) else {}


def _execution_id() -> str:
    """A new execution's id: as `uuid4().hex[:16]` gave, without the system call."""
    return f"e-{_ids.getrandbits(64):016x}"
