"""Which names of the notebook a plain cell may read, before it runs: the values a hit
left unread (`restore/pending.py`) that must be read first.

Over-approximate, never under: every global name the cell's code loads or deletes, in
any scope of it (a function it defines and calls), and what the notebook's functions
and classes it reaches read (their bytecode, `hashing/bytecode.py`), transitively. When
the cell reads the namespace in a way that cannot be followed (`globals()`, `locals()`,
`vars()`, `dir()`, `eval`, `exec`, `get_ipython()` for a magic that is not known to read
nothing of it, `import __main__`), the answer is None: every name.

The `%%step` cell itself (`get_ipython().run_cell_magic('step', ...)`) reads nothing
here: the step reads what it needs when it runs (`execution.py`).
"""

from __future__ import annotations

import ast
import functools
import types
from collections import deque
from collections.abc import Iterator
from typing import Any

from ...hashing import bytecode

# Names whose call reads the namespace in ways the analysis cannot follow.
_DYNAMIC = frozenset(
    {"globals", "locals", "vars", "dir", "eval", "exec", "get_ipython", "__import__"}
)
# Magics known to read no variable of the notebook (`%step` reads what it shows itself).
_QUIET_MAGICS = frozenset(
    {"step", "matplotlib", "load_ext", "reload_ext", "unload_ext", "config", "autoreload",
     "aimport", "autoawait", "precision", "pylab", "env", "cd", "pwd"}
)  # fmt: skip
_MAGIC_CALLS = frozenset({"run_line_magic", "run_cell_magic"})


def needs(tree: ast.AST, ns: dict[str, Any]) -> set[str] | None:
    """The global names the cell `tree` (as IPython transformed it) may read, with what
    the notebook functions it reaches read; None when it may read any."""
    found: set[str] = set()
    for node in _code(tree):
        if isinstance(node, ast.Name):
            if node.id in _DYNAMIC:
                return None
            if not isinstance(node.ctx, ast.Store):
                found.add(node.id)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            found.add(node.target.id)  # `a += 1` reads `a` (its target is a Store)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if "__main__" in modules or getattr(node, "module", None) == "__main__":
                return None
    return _reached(found, ns)


def _code(tree: ast.AST) -> Iterator[ast.AST]:
    """The nodes of the cell, but the statements that only call a quiet magic."""
    body = tree.body if isinstance(tree, ast.Module) else [tree]
    for stmt in body:
        if not _quiet_magic(stmt):
            yield from ast.walk(stmt)


def _quiet_magic(stmt: ast.AST) -> bool:
    """`get_ipython().run_line_magic('matplotlib', 'inline')` and the like."""
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return False
    call = stmt.value
    f = call.func
    if not (isinstance(f, ast.Attribute) and f.attr in _MAGIC_CALLS):
        return False
    owner = f.value
    if not (isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name)):
        return False
    if owner.func.id != "get_ipython" or not call.args:
        return False
    first = call.args[0]
    return isinstance(first, ast.Constant) and first.value in _QUIET_MAGICS


def _reached(names: set[str], ns: dict[str, Any]) -> set[str] | None:
    """`names` and the globals the notebook code they hold reads, transitively."""
    out = set(names)
    todo = deque(names)
    seen_code: set[int] = set()
    while todo:
        value = ns.get(todo.popleft())
        for code in _codes_of(value, ns):
            if id(code) in seen_code:
                continue
            seen_code.add(id(code))
            reads = bytecode.scan(code)
            if reads.dynamic:
                return None
            for n in reads.names - out:
                out.add(n)
                todo.append(n)
    return out


def _codes_of(value: Any, ns: dict[str, Any], depth: int = 0) -> list[types.CodeType]:
    """The code objects of notebook functions a value holds and may run: a function, a
    method, a class and its methods, an instance's class, a partial, a wrapper."""
    if value is None or depth > 3:
        return []
    if isinstance(value, types.FunctionType):
        codes = [value.__code__] if value.__globals__ is ns else []
        inner = getattr(value, "__wrapped__", None)
        return codes + (_codes_of(inner, ns, depth + 1) if inner is not None else [])
    if isinstance(value, types.MethodType):
        return _codes_of(value.__func__, ns, depth + 1)
    if isinstance(value, functools.partial):
        return _codes_of(value.func, ns, depth + 1)
    cls = value if isinstance(value, type) else type(value)
    if getattr(cls, "__module__", None) != "__main__":
        return []
    codes = []
    for klass in cls.__mro__:
        if getattr(klass, "__module__", None) != "__main__":
            continue
        for member in vars(klass).values():
            if isinstance(member, (staticmethod, classmethod)):
                member = member.__func__
            elif isinstance(member, property):
                member = member.fget
            if isinstance(member, types.FunctionType) and member.__globals__ is ns:
                codes.append(member.__code__)
    return codes
