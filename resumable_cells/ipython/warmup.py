"""The engine's modules imported while the kernel is idle after the extension is loaded,
so that the first step does not wait for them.

`%load_ext` registers the magics and hooks only (`engine_slot.py`); the engine's modules
(about seventy of ours, diskcache, sqlite3, xxhash) were imported by the first step, in
the user's wait. Once the cell that loaded the extension has run, a daemon thread now
imports them while the user reads the next cell. It imports modules only: the store is
not opened (no directory is made for a kernel that never steps), no engine starts,
nothing of a live run is imported (a resume that only serves never needs it).

No code of the notebook's runs beside the thread: the next cell, whatever it is, and
whatever starts the engine first wait for it to end (`wait`). While it imports, the
thread holds the collector's young threshold (`engine.collector.held_off`: it cannot
pause the collector without deciding for the notebook), which a cell running beside it
would find changed and would run without collections; the engine records the
thresholds among the process state of a step. Under Run All the next cell comes at once
and waits for what is left of the import: the same wait the first step had. A module
the first step imports while the thread is importing it waits on the module's own
import lock, as two threads importing one module do; the package's import graph has no
cycle, so neither can wait on the other. A failed import is logged and left to the
first step, which imports the same modules and says what failed where the user sees it.
"""

from __future__ import annotations

import importlib
import logging
import threading
from typing import TYPE_CHECKING, Any

from ..engine import collector

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

log = logging.getLogger(__name__)
# What the first step imports before it runs (`magics._import_engine`) and what starting
# the engine imports (`magics._engine_started`), in that order.
MODULES = (
    "resumable_cells.engine.execution",
    "resumable_cells.engine.kernel",
    "resumable_cells.storage.store",
)
_thread: threading.Thread | None = None


def arm(shell: InteractiveShell) -> None:
    """Start the thread once the cell running now has run (`post_run_cell`); have the
    next cell wait for it (`pre_run_cell`). Once per process."""
    if _thread is not None:
        return

    def after_the_cell(result: Any) -> None:
        shell.events.unregister("post_run_cell", after_the_cell)
        start()

    def before_a_cell(info: Any) -> None:
        wait()
        if _thread is not None:  # (done: no later cell need ask)
            shell.events.unregister("pre_run_cell", before_a_cell)

    shell.events.register("post_run_cell", after_the_cell)
    shell.events.register("pre_run_cell", before_a_cell)


def start() -> None:
    """Import the engine's modules in a thread of their own, once per process."""
    global _thread
    if _thread is not None:
        return
    _thread = threading.Thread(target=_import, name="resumable-cells-import", daemon=True)
    _thread.start()


def wait() -> None:
    """Return once the thread (if one started) has imported what it imports."""
    if _thread is not None and _thread is not threading.current_thread():
        _thread.join()


def _import() -> None:
    try:
        with collector.held_off():
            for name in MODULES:
                importlib.import_module(name)
            collector.settle_once("step", collecting=False)
    except Exception:  # the first step imports them again and shows what failed
        log.debug("importing the engine's modules ahead of the first step failed", exc_info=True)
