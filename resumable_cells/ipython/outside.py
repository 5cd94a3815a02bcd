"""What may run the notebook's code outside a step, told to the engine's `Carry`
(`engine/code/carry.py`): the digests a step took at its end are taken by the next
step's key only when nothing of the sort ran in between.

IPython's `pre_execute` starts every execution, silent ones (a frontend's variable
inspector) included, and the `comm` package triggers it around a comm message's
callbacks (a widget's); `pre_run_cell` says which cell an execution is: a whole `%%step`
cell (the magic on its first line is then all the cell runs), or anything else. The
kernel's messages other than the execution's own and a few that never run the
notebook's code (below) may run it: a comm's target runs when the frontend opens it and
its close callback when it closes it, an inspection or a completion may evaluate
attributes, the debugger evaluates expressions; each one makes the engine forget the
digests it kept, but one to the sidebar's own comm. Callbacks of IPython's cell events
that belong to none of the packages below run code of the notebook's own around every
cell: then no digest is carried at all.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..engine.kernel import Engine
from .comm import to_sidebar

# Messages that never run the notebook's code. `execute_request` does, and is what
# `pre_execute` counts.
_HARMLESS = frozenset(
    {
        "execute_request",
        "kernel_info_request",
        "connect_request",
        "history_request",
        "comm_info_request",
        "is_complete_request",
        "shutdown_request",
        "interrupt_request",
        "usage_request",
        "create_subshell_request",
        "delete_subshell_request",
        "list_subshell_request",
    }
)
_EVENTS = ("pre_execute", "pre_run_cell", "post_execute", "post_run_cell")
# Packages whose callbacks on those events change no value of the notebook's.
_TRUSTED = ("IPython", "ipykernel", "matplotlib", "matplotlib_inline", "resumable_cells")
# A callback or handler of ours carries this attribute (a handler: the one it wraps).
_OURS = "_resumable_cells_outside"


def attach(engine: Engine) -> None:
    """Tell `engine.carry` what starts and what may run the notebook's code from now on
    (an engine loaded again replaces the one told before)."""
    _detach_events(engine.shell)
    events = engine.shell.events
    events.register("pre_execute", _marked(engine.carry.execution_started))
    events.register("pre_run_cell", _marked(_cell_watcher(engine)))
    for handlers, kernel in _handler_tables(engine.shell):
        for msg_type, handler in list(handlers.items()):
            if msg_type not in _HARMLESS:
                original = getattr(handler, _OURS, handler)
                handlers[msg_type] = _told(engine, kernel, original)


def detach(engine: Engine) -> None:
    _detach_events(engine.shell)
    for handlers, _ in _handler_tables(engine.shell):
        for msg_type, handler in list(handlers.items()):
            original = getattr(handler, _OURS, None)
            if original is not None:
                handlers[msg_type] = original
    engine.carry.outside_code()  # what runs from now on is not seen: nothing carries over


def _detach_events(shell: Any) -> None:
    for name in ("pre_execute", "pre_run_cell"):
        shell.events.callbacks[name] = [
            cb for cb in shell.events.callbacks[name] if not hasattr(cb, _OURS)
        ]


def _handler_tables(shell: Any) -> list[tuple[dict[str, Any], Any]]:
    """The kernel's tables of message handlers (none in a terminal IPython)."""
    kernel = getattr(shell, "kernel", None)
    tables = (getattr(kernel, t, None) for t in ("shell_handlers", "control_handlers"))
    return [(handlers, kernel) for handlers in tables if isinstance(handlers, dict)]


def _marked(callback: Callable[..., None]) -> Callable[..., None]:
    def marked(*args: Any) -> None:
        callback(*args)

    setattr(marked, _OURS, callback)
    return marked


def _is_step_cell(raw_cell: str) -> bool:
    """Whether a cell is a whole `%%step` cell: its first line (after blank ones, as
    IPython strips them) calls the magic."""
    first = raw_cell.lstrip("\r\n").partition("\n")[0]
    return first == "%%step" or first.startswith(("%%step ", "%%step\t"))


def _cell_watcher(engine: Engine) -> Callable[[Any], None]:
    def cell_started(info: Any) -> None:
        raw = getattr(info, "raw_cell", None)
        if isinstance(raw, str) and _is_step_cell(raw) and _only_trusted_callbacks(engine):
            engine.carry.step_cell()

    return cell_started


def _only_trusted_callbacks(engine: Engine) -> bool:
    callbacks = engine.shell.events.callbacks
    for event in _EVENTS:
        for cb in callbacks.get(event, ()):
            module = getattr(cb, "__module__", None)
            if not isinstance(module, str) or module.partition(".")[0] not in _TRUSTED:
                return False
    return True


def _told(engine: Engine, kernel: Any, handler: Callable[..., Any]) -> Callable[..., Any]:
    """`handler`, telling the engine first that the notebook's code may run."""

    def handle(stream: Any, ident: Any, msg: dict[str, Any]) -> Any:
        if not to_sidebar(kernel, msg):
            engine.carry.outside_code()
        return handler(stream, ident, msg)

    setattr(handle, _OURS, handler)
    return handle
