"""The engine's modules imported while the kernel is idle after the extension is loaded,
so that the first step does not wait for them.

`%load_ext` registers the magics and hooks only (`engine_slot.py`); the engine's modules
(about seventy of ours, diskcache, sqlite3, xxhash) were imported by the first step, in
the user's wait. Once the cell that loaded the extension has run and its reply is sent,
a daemon thread now imports them while the user reads the next cell. No engine starts. When there is no
store yet (no index in its directory), none is made (a kernel that never steps leaves
none) and the first step can only run live: what only a live run needs (`LIVE_RUN`:
the tripwire, keeping values) is imported too, and the tripwire's sweep of the loaded
modules done (`watchpoints.prepare`). When there is one, the notebook is likely
resumed, and a resume that only serves never needs those (the first live run imports
them, as before): the store is opened instead (its index's settings, the sweep of
partial writes), and the engine takes it (`take_store`) if it starts on that same
directory and size limit, else closes it and opens its own (a `%config` in between).

Loaded by the kernel's configuration (`c.InteractiveShellApp.extensions`), as the
kernel starts and before it reads a request, the thread starts at once: the engine is
ready by the time the first cell comes, which waits for what is left.

No code of the notebook's runs beside the thread: the next cell, whatever it is, and
whatever starts the engine first wait for it to end (`wait`). While it works, the
thread holds the collector's young threshold (`engine.collector.held_off`: it cannot
pause the collector without deciding for the notebook), which a cell running beside it
would find changed, and the engine records the thresholds among the process state of
a step. Under Run All the next cell comes at once and waits for what is left: the same
wait the first step had (started beside the load cell's reply, the thread delayed it by
as much as it saved the next cell). A
module the first step imports while the thread is importing it waits on the module's
own import lock, as two threads importing one module do; the package's import graph
has no cycle, so neither can wait on the other. What fails is logged and left to the
first step, which does it again and says what failed where the user sees it.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..engine import collector

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from ..storage.store import Store

log = logging.getLogger(__name__)
# What the first step imports before it runs (`magics._import_engine`), then what
# starting the engine imports (`magics._engine_started`, the `on_start` hooks of `load`).
MODULES = (
    "resumable_cells.engine.execution",
    "resumable_cells.engine.kernel",
    "resumable_cells.storage.store",
    "resumable_cells.ipython.freshness",
    "resumable_cells.ipython.outside",
)
# What a live run imports before its body (`Execution._run_live`, `_run_body`).
LIVE_RUN = (
    "resumable_cells.engine.keep.admit",
    "resumable_cells.engine.keep.build",
    "resumable_cells.engine.keep.changes",
    "resumable_cells.engine.keep.sharing",
    "resumable_cells.engine.keep.value_check",
    "resumable_cells.engine.live.named_files",
    "resumable_cells.engine.live.trace",
    "resumable_cells.engine.live.tripwire",
    "resumable_cells.engine.objects.identities",
    "resumable_cells.engine.state.settings_read",
)
_thread: threading.Thread | None = None
# (directory, size limit, its index file's device and inode, the store)
_opened: tuple[Path, int | None, tuple[int, int], Store] | None = None


def arm(shell: InteractiveShell, store_dir: Path, size_limit: int | None) -> None:
    """Start the thread once the cell running now has run and its reply is sent (the
    event loop's next turn after `post_run_cell`); have the next cell wait for it
    (`pre_run_cell`), starting it first if the loop has not taken that turn (a kernel
    reads a request queued meanwhile without one). Once per process.

    Loaded as the kernel starts (`c.InteractiveShellApp.extensions`), no cell runs: the
    thread starts at once, while the kernel readies itself and waits for its first
    request, and that request's cell waits for what it has left (a startup file the
    kernel runs is such a cell too)."""
    if _thread is not None:
        return
    # The cell that loaded the extension has run (none did when the kernel loaded it)
    ran = not _in_a_request(shell)
    if ran:
        start(store_dir, size_limit)

    def after_the_cell(result: Any) -> None:
        nonlocal ran
        ran = True
        shell.events.unregister("post_run_cell", after_the_cell)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # (no event loop: a terminal, a script)
            start(store_dir, size_limit)
        else:  # (started beside the reply, it would delay it)
            loop.call_soon(start, store_dir, size_limit)

    def before_a_cell(info: Any) -> None:
        if ran:
            start(store_dir, size_limit)
            wait()
            shell.events.unregister("pre_run_cell", before_a_cell)

    if not ran:
        shell.events.register("post_run_cell", after_the_cell)
    shell.events.register("pre_run_cell", before_a_cell)


def _in_a_request(shell: InteractiveShell) -> bool:
    """Whether the extension is being loaded by a request the kernel runs (a cell's
    `%load_ext`), rather than as the kernel starts, before it has read any. Outside a
    kernel (a terminal, a script) a cell is assumed."""
    kernel = getattr(shell, "kernel", None)
    get_parent = getattr(kernel, "get_parent", None)
    if get_parent is None:
        return True
    try:
        return bool(get_parent())  # (ipykernel's parent request: {} until the first)
    except Exception:  # another kernel's shell: as a cell
        log.debug("the kernel's current request could not be read", exc_info=True)
        return True


def start(store_dir: Path, size_limit: int | None) -> None:
    """Import the engine's modules in a thread of their own, then `LIVE_RUN` if there is
    no store at `store_dir`, else open it. Once per process."""
    global _thread
    if _thread is not None:
        return
    _thread = threading.Thread(
        target=_warm, args=(store_dir, size_limit), name="resumable-cells-import", daemon=True
    )
    _thread.start()


def wait() -> None:
    """Return once the thread (if one started) has imported what it imports."""
    if _thread is not None and _thread is not threading.current_thread():
        _thread.join()


def take_store(store_dir: Path, size_limit: int | None) -> Store | None:
    """The store the thread opened, if at `store_dir` with `size_limit` and its index is
    still the file it opened (not deleted or replaced by a cell since); None otherwise
    (the store it opened is closed). Call after `wait`."""
    global _opened
    opened, _opened = _opened, None
    if opened is None:
        return None
    directory, limit, index, store = opened
    if (directory, limit) == (store_dir, size_limit) and _identity(directory) == index:
        return store
    store.close()
    return None


def _identity(store_dir: Path) -> tuple[int, int] | None:
    from ..storage.store import index_identity  # (imported by the thread first)

    return index_identity(store_dir)


def _warm(store_dir: Path, size_limit: int | None) -> None:
    global _opened
    with collector.held_off():
        try:
            for name in MODULES:
                importlib.import_module(name)
            collector.settle_once("step", collecting=False)
            index = _identity(store_dir)  # (a folder alone is a store still to make)
            if index is None:
                for name in LIVE_RUN:
                    importlib.import_module(name)
                collector.settle_once("live", collecting=False)
                from ..engine.live import watchpoints  # (imported above)

                watchpoints.prepare()  # the tripwire's sweep of the loaded modules
                return
            from ..storage.store import Store  # (imported above)

            store = Store(store_dir, size_limit)
        except Exception:  # the first step does it again and says what failed
            log.debug("readying the engine ahead of the first step failed", exc_info=True)
            return
        # (after the open: a damaged index is replaced by it, and says so when taken)
        index = _identity(store_dir)
        if index is not None:
            _opened = (store_dir, size_limit, index, store)
        else:
            store.close()
