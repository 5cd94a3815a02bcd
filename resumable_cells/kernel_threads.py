"""Which threads are the kernel's own rather than the notebook's: those running when the
extension was loaded (ipykernel's I/O, control, shell channel and heartbeat threads,
IPython's history saver), those of a class of the kernel's packages (its parent poller,
started after an extension loaded from the kernel's configuration), and this package's
(named `resumable-cells-...`). Any other thread was started by the notebook's code, in
a step or a plain cell: a pool made in an earlier cell that runs a step's work logs for
that step. A module of its own, with no import of the package, so that loading the
extension notes them without importing the engine that asks."""

from __future__ import annotations

import threading
import weakref

OWN_PREFIX = "resumable-cells"  # the name every thread of this package's starts with
_KERNEL_PACKAGES = frozenset({"ipykernel", "IPython", "jupyter_client", "zmq", "tornado"})
_FOUND: weakref.WeakSet[threading.Thread] | None = None


def note() -> None:
    """Note the threads running now as the kernel's (once per process: the first call
    counts)."""
    global _FOUND
    if _FOUND is None:
        _FOUND = weakref.WeakSet(threading.enumerate())


def kernels() -> set[threading.Thread]:
    """The kernel's threads running now, but the calling one (an engine made without
    loading the extension notes them at its first question)."""
    note()
    found = _FOUND if _FOUND is not None else ()
    me = threading.current_thread()
    return {t for t in threading.enumerate() if t is not me and _is_kernels(t, found)}


def _is_kernels(t: threading.Thread, found) -> bool:
    return (
        t in found
        or type(t).__module__.partition(".")[0] in _KERNEL_PACKAGES
        or t.name.startswith(OWN_PREFIX)
    )
