"""What a step leaves behind to run after it ends: the notebook's code handed to the
process to be called later.

A live step may start a thread that is still running when it ends, schedule an asyncio
task or a callback on the kernel's event loop, register an IPython event callback, an
input or AST transformer or a magic, set a trace or profile function, set a signal
handler, or register a pandas accessor (`register_dataframe_accessor`). A hit binds
values and sets the process state again; it starts and registers nothing, so what
that code did afterwards (a result appended by the thread, a flag the callback set,
the magic or accessor a later cell uses) would happen only when the step ran: such a
step has an effect and is not cached.

Only the notebook's own code counts: a function, method, class or coroutine defined in
a cell (its globals are the notebook's namespace) or in a module of the notebook's
folder, or a thread whose stack runs such code when the step ends (a pool's worker
running a submitted job). What a library starts or registers for itself (tqdm's monitor
thread, a pool's idle workers, matplotlib's callbacks) is left alone: an import the hit
makes again registers it again, and its work is the library's.

Registries are read when the step starts and when it ends: the objects in them are
kept meanwhile, so an identity seen before cannot be reused by a new one. The notebook's
code is looked for only among what is new, and among the threads the step's own thread
started (`watching`).
"""

from __future__ import annotations

import asyncio
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

from . import watchpoints
from .notebook_code import is_notebooks, notebook_globals

_SIGNALS = tuple(signal.valid_signals())
_TRANSFORMERS = ("input_transformers_cleanup", "input_transformers_post", "ast_transformers")
_SIGNAL_NAMES = tuple(getattr(s, "name", str(s)) for s in _SIGNALS)
try:  # CPython's C function that `signal.getsignal` wraps: the same handler, without
    # turning it into an enum member, which takes 20 times as long (40 µs for them all)
    from _signal import getsignal as _getsignal  # type: ignore[import-not-found]
except ImportError:  # (another Python)
    _getsignal = signal.getsignal


# What each registry's new member means, for the message (an IPython event's callbacks
# are told by the event's name)
_SAID = {
    "task": "left an asyncio task running",
    "handle": "scheduled a callback on the event loop",
    "trace": "set a trace function",
    "profile": "set a profile function",
    "signal": "set a signal handler",
    "accessor": "registered a pandas accessor",
    "input_transformers_cleanup": "added an IPython input transformer",
    "input_transformers_post": "added an IPython input transformer",
    "ast_transformers": "added an IPython AST transformer",
    "line": "registered a line magic",
    "cell": "registered a cell magic",
}


class Held(NamedTuple):
    """The registries as a step started: (name, the callables it held) each; and the
    threads the step's own thread started since, and those they started."""

    registries: list[tuple[str, list[Any]]]
    started: list[threading.Thread]


@contextmanager
def watching(shell: Any) -> Iterator[Held]:
    """The registries as the step starts; within the block (inside the tripwire's
    `watchpoints.watching`), the threads started by a thread watched for the step are
    kept (`Thread.start`, wrapped on the class for the block) and adopted by its watch,
    so that those they start are too. A thread another thread starts meanwhile is not
    the step's: a server started in an earlier cell answers the step's request in a
    thread of its own, running the notebook's handler, and may still be finishing when
    the step ends."""
    held = Held(_registries(shell), [])
    start = threading.Thread.start

    def starting(thread: threading.Thread) -> None:
        if watchpoints.watched():
            held.started.append(thread)
            watchpoints.adopt(thread)
        start(thread)

    threading.Thread.start = starting  # type: ignore[method-assign, assignment]
    try:
        yield held
    finally:
        if threading.Thread.start is starting:  # (else a step within put its own)
            threading.Thread.start = start  # type: ignore[method-assign]


def after(shell: Any, held: Held, namespace: dict[str, Any]) -> list[str]:
    """What the step left to run, as effects ("left a thread running (worker)"): each
    thread it started still alive, and each callable new in a registry since `held`,
    that is the notebook's code."""
    found: list[str] = []
    alive = [t for t in held.started if t.is_alive()]
    frames = sys._current_frames() if alive else {}
    for t in alive:
        if _thread_runs_notebook_code(t, namespace, frames):
            found.append(f"left a thread running ({t.name})")
    for (name, items), (_, was) in zip(_registries(shell), held.registries, strict=True):
        if items == was:  # (`==` compares identities first, in C)
            continue
        old = {id(x) for x in was}
        for i, item in enumerate(items):
            if id(item) in old:
                continue
            if name == "accessor":  # pandas' Accessor: the class it makes (its attribute)
                item = getattr(item, "_accessor", None)
            label = _notebook_label(item, namespace)
            if label is not None:
                said = _SAID.get(name) or f"registered an IPython {name} callback"
                found.append(f"{said} ({_SIGNAL_NAMES[i] if name == 'signal' else label})")
    return found


def _registries(shell: Any) -> list[tuple[str, list[Any]]]:
    """Every registry, in the same order at both ends of a step."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    out: list[tuple[str, list[Any]]] = [
        ("task", list(asyncio.all_tasks(loop)) if loop is not None else []),
        # The loop's queues are its own attributes (asyncio's, not a public interface):
        # a loop without them (uvloop) has its callbacks unseen.
        ("handle", [*getattr(loop, "_ready", ()), *getattr(loop, "_scheduled", ())]),
        ("trace", [sys.gettrace(), threading.gettrace()]),
        ("profile", [sys.getprofile(), threading.getprofile()]),
        ("signal", list(map(_getsignal, _SIGNALS))),
    ]
    # The classes `register_*_accessor` extends, and their names (pandas' own set): empty
    # until pandas is imported, so that a step importing it is compared with them
    pandas = sys.modules.get("pandas")
    for cls in (pandas.DataFrame, pandas.Series, pandas.Index) if pandas else (None,) * 3:
        names = sorted(getattr(cls, "_accessors", ()))
        out.append(("accessor", [vars(cls).get(n) for n in names]))
    if shell is None:
        return out
    out += [(event, list(cbs)) for event, cbs in shell.events.callbacks.items()]
    out += [(attr, list(getattr(shell, attr, ()))) for attr in _TRANSFORMERS]
    magics = shell.magics_manager.magics
    out += [(kind, list(magics.get(kind, {}).values())) for kind in ("line", "cell")]
    return out


def _notebook_label(item: Any, namespace: dict[str, Any]) -> str | None:
    """A name for `item` when it runs the notebook's code, else None."""
    if isinstance(item, asyncio.Task):
        coro = item.get_coro()
        return _name(coro) if _coroutine_is_notebooks(coro, namespace) else None
    if isinstance(item, asyncio.Handle):
        if item.cancelled():
            return None
        item = getattr(item, "_callback", None)  # (asyncio's own attribute, see above)
    return _name(item) if is_notebooks(item, namespace) else None


def _thread_runs_notebook_code(
    t: threading.Thread, ns: dict[str, Any], frames: dict[int, Any]
) -> bool:
    """Whether the thread's code is the notebook's: its `run`, its target (a Timer's
    function), or a frame of its stack as the step ends."""
    run = type(t).run
    if run is not threading.Thread.run and is_notebooks(run, ns):
        return True
    # The target a Thread keeps until it has run (CPython's attribute), a Timer's function
    for fn in (getattr(t, "_target", None), getattr(t, "function", None)):
        if fn is not None and is_notebooks(fn, ns):
            return True
    frame = frames.get(t.ident) if t.ident is not None else None
    while frame is not None:
        if notebook_globals(frame.f_globals, ns):
            return True
        frame = frame.f_back
    return False


def _coroutine_is_notebooks(coro: Any, ns: dict[str, Any]) -> bool:
    """Whether the coroutine, or one it awaits, runs in the notebook's globals."""
    for _ in range(100):  # (an await chain is short; a cycle is not followed forever)
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        if frame is not None and notebook_globals(frame.f_globals, ns):
            return True
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
        if coro is None:
            return False
    return False


def _name(obj: Any) -> str:
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    return str(name) if name else type(obj).__name__
