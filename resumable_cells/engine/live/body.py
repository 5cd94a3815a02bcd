"""The cell's own code, run as IPython would run it without the magic.

The body is compiled under the outer cell's name and line numbers (the `%%step` line
counted as line 1, when the cell has one: auto mode's cells do not), so tracebacks and SyntaxErrors point at the cell's own lines; it is
executed here, in the notebook's namespace, rather than through a nested `run_cell`
(which would hide errors from the frontend); the last expression is evaluated and
returned for IPython to display. A body with top-level `await` is compiled as IPython
compiles such a cell and awaited (`run_awaiting`).
"""

from __future__ import annotations

import ast
import inspect
import sys
from types import CodeType, FrameType
from typing import TYPE_CHECKING, Any

from ...display.prompt import prompt_number

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell


def run(
    shell: InteractiveShell, ns: dict[str, Any], header: str | None, cell: str, transformed: str
) -> Any:
    """Execute the body `cell` (IPython-transformed: `transformed`) of the cell whose
    first line is `header` (`%%step ...`; None: the cell is the body, as in auto mode);
    returns the value of the expression IPython would show last, or None."""
    __tracebackhide__ = True  # noqa: F841
    parts, last = _compiled(shell, header, cell, transformed, top_level_await=False)
    for code in parts:
        exec(code, ns)
    return eval(last, ns) if last is not None else None


async def run_awaiting(
    shell: InteractiveShell, ns: dict[str, Any], header: str | None, cell: str, transformed: str
) -> Any:
    """`run` for a body with top-level `await`: compiled as IPython compiles such a
    cell and awaited where the step is awaited (IPython's event loop)."""
    __tracebackhide__ = True  # noqa: F841
    parts, last = _compiled(shell, header, cell, transformed, top_level_await=True)
    for code in parts:
        if code.co_flags & inspect.CO_COROUTINE:
            await eval(code, ns)
        else:
            exec(code, ns)
    if last is None:
        return None
    value = eval(last, ns)
    return (await value) if last.co_flags & inspect.CO_COROUTINE else value


def _compiled(
    shell: InteractiveShell,
    header: str | None,
    cell: str,
    transformed: str,
    top_level_await: bool,
) -> tuple[list[CodeType], CodeType | None]:
    """(the body's code, run in order; the expression whose value is the step's result,
    or None), compiled under the outer cell's name and line numbers."""
    filename = register_source(shell, cell if header is None else f"{header}\n{cell}")
    # Line 1 is the %%step line: parsed after an empty line, the body's nodes carry the
    # cell's own line numbers without a walk over the tree to shift them.
    source = transformed if header is None else "\n" + transformed
    tree = shell.transform_ast(shell.compile.ast_parse(source, filename=filename))
    executed, shown, result = _interactive(tree.body, getattr(shell, "ast_node_interactivity", ""))
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT if top_level_await else 0
    parts: list[CodeType] = []
    with shell.compile.extra_flags(flags):
        # IPython annotates `source` as str; like `compile`, it takes a tree too
        if executed or not shown:
            module = ast.Module(executed, type_ignores=[])
            parts.append(shell.compile(module, filename, "exec"))  # type: ignore[arg-type]
        if shown:  # each expression statement goes to the displayhook as it runs
            parts.append(shell.compile(ast.Interactive(shown), filename, "single"))  # type: ignore[arg-type]
        last = shell.compile(result, filename, "eval") if result is not None else None  # type: ignore[arg-type]
    return parts, last


def _interactive(
    nodes: list[ast.stmt], how: str
) -> tuple[list[ast.stmt], list[ast.stmt], ast.Expression | None]:
    """The body's statements as IPython runs a cell's under its `ast_node_interactivity`:
    (run as they are, run showing each expression statement's value, the expression
    whose value is the result). `last_expr` (the default) shows the last statement when
    it is an expression, `last_expr_or_assign` also the name a last assignment binds,
    `last` the last statement, `all` every one, `none` nothing."""
    nodes = list(nodes)
    if how == "last_expr_or_assign":
        target = _assigned(nodes[-1]) if nodes else None
        if target is not None:
            shown = ast.Expr(ast.Name(target, ast.Load()))
            nodes.append(ast.fix_missing_locations(ast.copy_location(shown, nodes[-1])))
        how = "last_expr"
    if how == "none" or not nodes:
        return nodes, [], None
    last = nodes[-1]
    result = None
    if isinstance(last, ast.Expr):
        nodes.pop()
        result = ast.Expression(last.value)
    if how == "all":
        return [], nodes, result
    if how == "last" and result is None:
        return nodes[:-1], nodes[-1:], None
    return nodes, [], result


def _assigned(node: ast.stmt) -> str | None:
    """The name a single-target assignment binds (IPython's `last_expr_or_assign`)."""
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        target: ast.expr = node.targets[0]
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        target = node.target
    else:
        return None
    return target.id if isinstance(target, ast.Name) else None


def awaited_by_cell() -> bool:
    """Whether the code that called IPython's `run_cell_magic` for this step is a
    coroutine: the cell as the `await` transformer rewrites it, which awaits the step."""
    frame: FrameType | None = sys._getframe(1)
    for _ in range(30):
        if frame is None:
            return False
        if frame.f_code.co_name == "run_cell_magic" and frame.f_back is not None:
            return bool(frame.f_back.f_code.co_flags & inspect.CO_COROUTINE)
        frame = frame.f_back
    return False


def syntax_error(
    shell: InteractiveShell, err: SyntaxError, header: str | None, cell: str
) -> SyntaxError:
    """`err` as Python would give it for the cell itself (its own file name and line
    numbers, the %%step line counted when there is one)."""
    source = cell if header is None else f"{header}\n{cell}"
    filename = register_source(shell, source)
    lineno = (err.lineno or 0) + (header is not None)
    lines = source.splitlines()
    text = lines[lineno - 1] if lineno - 1 < len(lines) else None
    return type(err)(err.msg, (filename, lineno, err.offset, text))


def register_source(shell: InteractiveShell, source: str) -> str:
    """Put the cell's source in linecache so tracebacks show its lines, under the
    outer cell's number (`Cell In[5], line 3`)."""
    number = _outer_cell_number(shell)
    try:
        return shell.compile.cache(source, number, raw_code=source + "\n# step")
    except TypeError:  # IPython before 8.x: no raw_code
        return shell.compile.cache(source, number)


def _outer_cell_number(shell: InteractiveShell) -> int:
    names: dict[str, int] = getattr(shell.compile, "_filename_map", {})
    frame: FrameType | None = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename in names:
            return names[frame.f_code.co_filename]
        frame = frame.f_back
    return prompt_number(shell) or 0
