"""The cell's own code, run as IPython would run it without the magic.

The body is compiled under the outer cell's name and line numbers (the `%%step` line
counted as line 1), so tracebacks and SyntaxErrors point at the cell's own lines; it is
executed here, in the notebook's namespace, rather than through a nested `run_cell`
(which would hide errors from the frontend); the last expression is evaluated and
returned for IPython to display.
"""

from __future__ import annotations

import ast
import sys
from typing import Any


def run(shell, ns: dict, line: str, cell: str, transformed: str) -> Any:
    """Execute the cell `cell` (IPython-transformed: `transformed`) of `%%step {line}`;
    returns the value of its last expression, or None."""
    __tracebackhide__ = True  # noqa: F841
    filename = register_source(shell, f"%%step {line}\n{cell}")
    tree = shell.compile.ast_parse(transformed, filename=filename)
    tree = shell.transform_ast(tree)
    ast.increment_lineno(tree, 1)  # line 1 is the %%step line
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    exec(shell.compile(tree, filename, "exec"), ns)
    if last is not None:
        return eval(shell.compile(last, filename, "eval"), ns)
    return None


def syntax_error(shell, err: SyntaxError, line: str, cell: str) -> SyntaxError:
    """`err` as Python would give it for the cell itself (its own file name and line
    numbers, the %%step line counted)."""
    source = f"%%step {line}\n{cell}"
    filename = register_source(shell, source)
    lineno = (err.lineno or 0) + 1
    lines = source.splitlines()
    text = lines[lineno - 1] if lineno - 1 < len(lines) else None
    return type(err)(err.msg, (filename, lineno, err.offset, text))


def register_source(shell, source: str) -> str:
    """Put the cell's source in linecache so tracebacks show its lines, under the
    outer cell's number (`Cell In[5], line 3`)."""
    number = _outer_cell_number(shell)
    try:
        return shell.compile.cache(source, number, raw_code=source + "\n# step")
    except TypeError:  # IPython before 8.x: no raw_code
        return shell.compile.cache(source, number)


def _outer_cell_number(shell) -> int:
    names = getattr(shell.compile, "_filename_map", {})
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename in names:
            return names[frame.f_code.co_filename]
        frame = frame.f_back
    return shell.execution_count
