"""The magics a step's code calls, as IPython's transform spells them
(`get_ipython().run_line_magic('time', 'y = f(df)')`), and what the engine must know of
them.

- The code some magics run: `%time`, `%%time`, `%timeit`, `%%timeit`, `%prun`, `%%prun`
  and `%%capture` run a string of code in the notebook's namespace, and so does `%run`
  of a script with `-i` or of a notebook (`%run setup.ipynb`), from its file. `expand`
  writes that code out just before the statement that calls the magic, so that the
  analysis reads it as the cell's own: its reads are inputs of the step, its
  assignments bindings. Code `%timeit` runs is written out as a function body, since
  its timer function keeps its assignments local. The code is found with the magic's
  own option parser, as IPython's completer finds it.
- Cell magics that run their body as a script in a subprocess (`%%bash`, `%%sh`,
  `%%script`, `%%python3`: IPython's `ScriptMagics`). They start it from a thread of
  their own, which the tripwire does not watch, so `scripts` finds them here.

Only IPython's own magics are read this way; a magic a user registers under one of
these names is left alone.
"""

from __future__ import annotations

import ast
import json
import logging
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

log = logging.getLogger(__name__)

__all__ = ["MagicUse", "SCOPE", "magic_call", "read"]

SCOPE = "__step_magic_scope__"  # the function `%timeit` code is written out in
_MAX_DEPTH = 4  # magics inside the code of magics, written out this deep


class MagicUse(msgspec.Struct, frozen=True):
    expanded: str | None  # the source with the magics' code written out; None: no such code
    scripts: tuple[str, ...]  # script cell magics called, e.g. ("%%bash",)


NONE = MagicUse(None, ())


def read(shell: InteractiveShell, transformed: str) -> MagicUse:
    """What the magics called in `transformed` (valid Python) run."""
    if "get_ipython().run_" not in transformed:
        return NONE
    tree = ast.parse(transformed)
    expander = _Expander(shell, depth=0)
    expander.visit(tree)
    expanded = ast.unparse(tree) if expander.wrote else None
    return MagicUse(expanded, tuple(dict.fromkeys(expander.scripts)))


def magic_call(node: ast.AST) -> tuple[str, list[str]] | None:
    """("line" or "cell", [name, *string arguments]) for `get_ipython().run_*_magic(...)`
    with literal arguments."""
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return None
    owner = node.func.value
    if not (
        isinstance(owner, ast.Call)
        and isinstance(owner.func, ast.Name)
        and owner.func.id == "get_ipython"
        and node.func.attr in ("run_line_magic", "run_cell_magic")
    ):
        return None
    args = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    if len(args) != len(node.args):  # some argument is not a literal string
        return None
    return node.func.attr[4:8], args


class _Expander(ast.NodeTransformer):
    def __init__(self, shell: InteractiveShell, depth: int) -> None:
        self.shell = shell
        self.depth = depth
        self.wrote = False
        self.scripts: list[str] = []

    def generic_visit(self, node: ast.AST) -> ast.AST:
        for field, value in ast.iter_fields(node):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                setattr(node, field, [s for stmt in value for s in self._statement(stmt)])
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST):
                        self.visit(item)
        return node

    def _statement(self, stmt: ast.stmt) -> list[ast.stmt]:
        """The statement, after the code of the magics it calls."""
        self.visit(stmt)  # magics in nested bodies go before their own statements
        before: list[ast.stmt] = []
        for call in _own_calls(stmt):
            found = magic_call(call)
            if found is not None:
                before += self._code_of(*found)
        return before + [stmt]

    def _code_of(self, kind: str, args: list[str]) -> list[ast.stmt]:
        name, *rest = args
        if kind == "cell" and len(rest) == 2 and _is_script(self.shell, name):
            self.scripts.append(f"%%{name}")
            return []
        found = _code(self.shell, kind, name, rest)
        if found is None or self.depth >= _MAX_DEPTH:
            return []
        code, own_scope = found
        try:
            tree: ast.Module = ast.parse(self.shell.transform_cell(code))
        except (SyntaxError, ValueError):
            return []  # the magic itself will raise; the step fails and stores nothing
        inner = _Expander(self.shell, self.depth + 1)
        inner.visit(tree)
        self.scripts += inner.scripts
        self.wrote = True
        if not own_scope:
            return tree.body
        scope = ast.parse(f"def {SCOPE}():\n    pass").body[0]
        assert isinstance(scope, ast.FunctionDef)  # (the def just parsed)
        scope.body = tree.body or scope.body
        return [scope]


def _own_calls(stmt: ast.stmt) -> Iterator[ast.Call]:
    """The calls in `stmt` itself, not in the statements nested in it."""
    todo: list[Any] = [v for f, v in ast.iter_fields(stmt) if not _is_block(v)]
    while todo:
        node = todo.pop()
        if isinstance(node, list):
            todo += [n for n in node if isinstance(n, ast.AST) and not isinstance(n, ast.stmt)]
            continue
        if not isinstance(node, ast.AST):
            continue
        if isinstance(node, ast.Call):
            yield node
        todo += [v for _, v in ast.iter_fields(node) if not _is_block(v)]


def _is_block(value: Any) -> bool:
    return isinstance(value, list) and any(
        isinstance(v, (ast.stmt, ast.ExceptHandler, ast.match_case)) for v in value
    )


def _is_script(shell: InteractiveShell, name: str) -> bool:
    # `%%script` is a method of ScriptMagics, `%%bash` and the like closures made by it:
    # what they share is their module.
    magic = shell.find_cell_magic(name)
    return getattr(magic, "__module__", None) == "IPython.core.magics.script"


def _code(
    shell: InteractiveShell, kind: str, name: str, rest: list[str]
) -> tuple[str, bool] | None:
    """(the code the magic runs, whether it runs in a scope of its own), for IPython's
    code-running magics; None for any other magic."""
    from IPython.core.error import UsageError

    find: Callable[[str], Any] = shell.find_line_magic if kind == "line" else shell.find_cell_magic
    magic = find(name)
    owner = getattr(magic, "__self__", None)
    # IPython imports a magic's module as the magic is first looked up: importing
    # `IPython.core.magics.execution` here (6 ms) would load it for `%matplotlib` too.
    execution = sys.modules.get("IPython.core.magics.execution")
    if execution is None or not isinstance(owner, execution.ExecutionMagics):
        return None
    line, cell = (rest[0], None) if kind == "line" else (rest[0], rest[1])
    try:
        if name == "time":
            parser = getattr(magic, "parser", None)
            code = " ".join(parser.parse_argstring(line, partial=True)[1]) if parser else line
            return (cell if cell is not None else code), False
        if name == "timeit":
            _, stmt = owner.parse_options(
                line, "n:r:tcp:qov:", posix=False, strict=False, preserve_non_opts=True
            )
            return (stmt if cell is None else f"{stmt}\n{cell}"), True
        if name == "prun":
            _, stmt = owner.parse_options(line, "D:l:rs:T:q", list_all=True, posix=False)
            return (stmt if cell is None else f"{stmt}\n{cell}"), False
        if name == "capture" and cell is not None:
            return cell, False
        if name == "run" and cell is None:
            return _run_in_namespace(owner, line)
    except (UsageError, SystemExit, ValueError):  # bad options: the magic will say so
        log.debug("the options of %%%s were not understood", name, exc_info=True)
    return None


def _run_in_namespace(owner: Any, line: str) -> tuple[str, bool] | None:
    """The code `%run` runs in the notebook's namespace: a script's with `-i`, and
    every code cell of a notebook (`%run setup.ipynb`, whatever the options); it reads
    the notebook's names as the cell's own code would. A script run without `-i` runs
    in a namespace of its own (its file is an input as any file read), and `-m`
    a module: neither reads the notebook's names."""
    from IPython.utils.path import get_py_filename

    opts, args = owner.parse_options(line, "nidtN:b:pD:l:rs:T:em:G", mode="list", list_all=1)
    if "m" in opts or not args:
        return None
    try:
        path = get_py_filename(args[0])
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError):
        return None  # the magic will say so
    if path.lower().endswith(".ipynb"):
        try:
            cells = json.loads(text).get("cells", [])
        except (ValueError, AttributeError):
            return None
        sources = ["".join(c.get("source", "")) for c in cells if c.get("cell_type") == "code"]
        transform = owner.shell.transform_cell
        return "\n".join(transform(src) for src in sources if src.strip()), False
    if path.lower().endswith(".ipy") or "i" in opts:
        return text, False
    return None
