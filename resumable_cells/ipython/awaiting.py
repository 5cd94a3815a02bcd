"""Top-level `await` in a `%%step` cell, awaited by IPython as it awaits a plain cell.

A cell magic is called synchronously, so a body with top-level `await` cannot run
inside it. IPython runs a cell with top-level `await` by awaiting it (in ipykernel, in
the kernel's event loop). This input transformer runs after IPython's own, when a
`%%step` cell has become `get_ipython().run_cell_magic('step', LINE, BODY)`: if BODY
awaits, as IPython decides it for a plain cell, the cell becomes
`await get_ipython().run_cell_magic(...)`. The magic then returns the step as an
awaitable (`engine.execution.AwaitedStep`) and IPython awaits it where it would have
awaited the plain cell. With autoawait off, nothing is rewritten and the magic refuses
the step before anything runs.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .engine_slot import EngineSlot

_CALL = "get_ipython().run_cell_magic('step', "


class AwaitedSteps:
    """The transformer (one per shell, in `shell.input_transformers_post`)."""

    def __init__(self, slot: EngineSlot):
        self.slot = slot

    def __call__(self, lines: list[str]) -> list[str]:
        if not lines or not lines[0].startswith(_CALL) or not self.slot.shell.autoawait:
            return lines
        # (IPython's transforms never write `await`: a body without the word needs none,
        # and IPython transforms each cell twice, through here each time; the body is a
        # string literal in the cell, where the words stay as they are)
        source = "".join(lines)
        if "await" not in source and "async" not in source:
            return lines
        body = _step_body(source)
        if body is None or ("await" not in body and "async" not in body):
            return lines
        from ..engine.code import step_code  # a step cell: the engine is about to be used

        if not step_code.awaits(self.slot.transform(body)):
            return lines
        return ["await " + lines[0], *lines[1:]]


def install(slot: EngineSlot) -> None:
    uninstall(slot.shell)
    slot.shell.input_transformers_post.append(AwaitedSteps(slot))


def uninstall(shell) -> None:
    kept = [t for t in shell.input_transformers_post if not isinstance(t, AwaitedSteps)]
    shell.input_transformers_post[:] = kept


@lru_cache(maxsize=512)
def _step_body(source: str) -> str | None:
    """BODY of a cell that is only `get_ipython().run_cell_magic('step', LINE, BODY)`.
    A pure function of the source, remembered: IPython transforms a cell twice per run
    (`run_cell`, `should_run_async`), and a step cell is run again and again."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Expr):
        return None
    call = tree.body[0].value
    if not isinstance(call, ast.Call) or len(call.args) != 3:
        return None
    body = call.args[2]
    return body.value if isinstance(body, ast.Constant) and isinstance(body.value, str) else None
