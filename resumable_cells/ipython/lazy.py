"""Reading the values hits left unread before any cell that may read them runs.

An AST transformer, the one hook IPython runs for every cell (silent executions of
frontends' variable inspectors included) after it is parsed and before it runs: when
values are pending (`engine/restore/pending.py`), it reads those the cell may read
(`engine/code/plain_reads.py`; all of them when it cannot tell). A value that cannot
be read rejects the cell before it runs, with the message that says which step to run
again. After each cell, the names it bound again stop being pending.

Inspecting a pending name (Shift-Tab; `name?` is a cell) reads it first; completing a
name offers the pending ones, and completing an attribute of one (`df.<Tab>`) reads it
first. A message to a
widget (ipywidgets' `interact`, any comm but the sidebar's) may run notebook code that
reads any name, outside a cell: every pending value is read before it is handled.
"""

from __future__ import annotations

import ast
import logging
from typing import TYPE_CHECKING, Any

from IPython.core.error import InputRejected

from ..errors import NotRestored
from .comm import to_sidebar

if TYPE_CHECKING:
    from .engine_slot import EngineSlot

log = logging.getLogger(__name__)


class ValueNotRestored(NotRestored, InputRejected):
    """A value a hit left unread that could not be read: the cell does not run."""


class ReadPending(ast.NodeTransformer):
    """Reads the pending values a cell may read; changes nothing in the cell."""

    def __init__(self, slot: EngineSlot) -> None:
        super().__init__()
        self.slot = slot

    def visit(self, node: ast.AST) -> ast.AST:
        engine = self.slot.started
        if engine is None or not engine.pending:  # the common case: two tests
            return node
        from ..engine.code import plain_reads  # values are pending: the engine started

        wanted = plain_reads.needs(node, engine.ns)
        try:
            if wanted is None:
                engine.pending.materialise_all(engine.ns)
            else:
                engine.pending.materialise(wanted, engine.ns)
        except NotRestored as err:
            raise ValueNotRestored(str(err)) from None
        return node


def attach(slot: EngineSlot) -> None:
    """At load. Each hook asks the slot for the engine: none started, nothing pending."""
    shell = slot.shell
    if any(isinstance(t, ReadPending) for t in shell.ast_transformers):
        return
    shell.ast_transformers.append(ReadPending(slot))
    shell.events.register("post_run_cell", _settler(slot))
    _wrap_inspection(slot)
    _wrap_comm_messages(slot)
    completer = getattr(shell, "Completer", None)
    if completer is not None:
        completer.custom_matchers.append(_completions(slot))


def detach(shell: Any) -> None:
    shell.ast_transformers[:] = [
        t for t in shell.ast_transformers if not isinstance(t, ReadPending)
    ]
    completer = getattr(shell, "Completer", None)
    if completer is not None:
        completer.custom_matchers[:] = [
            m for m in completer.custom_matchers if getattr(m, "__name__", "") != "pending_names"
        ]


def _completions(slot: EngineSlot) -> Any:
    """A matcher (IPython's first kind: the token in, completions out), run before the
    others: the pending names a token starts, and the value of `name.` read, so that the
    completers after it see its attributes."""

    def pending_names(text: str) -> list[str]:
        engine = slot.started
        if engine is None or not engine.pending or not text:
            return []
        root, dot, _ = text.partition(".")
        if dot:
            if root in engine.pending:
                try:
                    engine.pending.materialise([root], engine.ns)
                except NotRestored:
                    log.debug("completing %s: its value cannot be read", root, exc_info=True)
            return []
        return [n for n in engine.pending.names() if n.startswith(text)]

    return pending_names


def _settler(slot: EngineSlot) -> Any:
    def settle(_result: Any) -> None:
        engine = slot.started
        if engine is not None and engine.pending:
            engine.pending.settle(engine.ns)

    return settle


def _wrap_inspection(slot: EngineSlot) -> None:
    """`name?` goes through a cell; Shift-Tab asks the shell directly."""
    shell = slot.shell
    original = shell.object_inspect_mime

    def object_inspect_mime(oname: str, *args: Any, **kwargs: Any) -> Any:
        root = oname.split(".", 1)[0].strip()
        engine = slot.started
        if engine is not None and root in engine.pending:
            try:
                engine.pending.materialise([root], engine.ns)
            except NotRestored:
                log.debug("inspecting %s: its value cannot be read", root, exc_info=True)
        return original(oname, *args, **kwargs)

    shell.object_inspect_mime = object_inspect_mime  # type: ignore[method-assign]  # per shell


def _wrap_comm_messages(slot: EngineSlot) -> None:
    kernel = getattr(slot.shell, "kernel", None)
    handlers = getattr(kernel, "shell_handlers", None)
    if not isinstance(handlers, dict) or "comm_msg" not in handlers:
        return  # not in a kernel (a terminal IPython): no widgets
    original = handlers["comm_msg"]

    def comm_msg(stream: Any, ident: Any, msg: dict[str, Any]) -> Any:
        engine = slot.started
        if engine is not None and engine.pending and not to_sidebar(kernel, msg):
            try:
                engine.pending.materialise_all(engine.ns)
            except NotRestored as err:  # the handler runs; a read of it fails there
                log.warning("%s", err)
        return original(stream, ident, msg)

    handlers["comm_msg"] = comm_msg
