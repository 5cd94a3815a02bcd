"""Which names of the notebook a plain cell may read, before it runs: the values a hit
left unread (`restore/pending.py`) that must be read first.

Over-approximate, never under: every global name the cell's code loads or deletes, in
any scope of it (a function it defines and calls), the names the expressions and
formulas it passes to a library spell (`df.query('a in @ids')`), and what the notebook
code its values hold reads (functions, methods, classes, and those a container or an
object holds: `ops['total']()`; their bytecode, `hashing/bytecode.py`), transitively. When
the cell reads the namespace in a way that cannot be followed (`globals()`, `locals()`,
`vars()`, `dir()`, `eval`, `exec`, `get_ipython()` for a magic that is not known to read
nothing of it, `import __main__`, `sys.modules['__main__']`), the answer is None: every name.

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
from . import inputs
from .namespace_reads import called_name, expression_arg, expression_text, notebook_module

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
        elif isinstance(node, ast.Call) and called_name(node.func) in bytecode.EXPRESSION_CALLS:
            spelled = _spelled(node, ns)
            if spelled is None:
                return None
            found.update(spelled)
        elif notebook_module(node):  # `sys.modules['__main__']`
            return None
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if "__main__" in modules or getattr(node, "module", None) == "__main__":
                return None
    return _reached(found, ns)


def _spelled(call: ast.Call, ns: dict[str, Any]) -> list[str] | None:
    """The names an expression or formula passed to `call` spells (`df.query('a in
    @ids')`, `smf.ols('y ~ center(x)', data=df)`), which the library reads from the
    cell's namespace; None when the string cannot be known before the cell runs."""
    arg = expression_arg(call)
    if arg is None:
        return []
    text = expression_text(arg)
    if text is not None:
        return bytecode.expression_names(text)
    if isinstance(arg, ast.Name) and arg.id in ns:  # (not a string: spells nothing)
        return list(inputs.spelled([arg.id], ns))
    return None


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
    """`names` and the globals the notebook code they hold reads, transitively; None
    when a value holds more than can be looked through (`_Held`)."""
    out = set(names)
    todo = deque(names)
    seen_code: set[int] = set()
    held = _Held(ns)
    while todo:
        name = todo.popleft()
        try:
            codes = held.codes(ns.get(name))
        except _TooMuch:
            return None
        for code in codes:
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


# Objects a cell's values are looked into, in all, for the notebook code they hold:
# past it (a list of a million records), every pending value is read instead.
_LOOKED_AT_MAX = 20_000
# Values that hold no code, not looked into.
_LEAVES = (int, float, complex, str, bytes, bytearray, bool, type(None), types.ModuleType)
_CONTAINERS = (list, tuple, set, frozenset, deque)
_CODE_HOLDERS = (types.FunctionType, types.MethodType, functools.partial)


class _TooMuch(Exception):
    """The values hold more objects than `_LOOKED_AT_MAX`."""


class _Held:
    """The code objects of notebook functions a value holds and may run: a function
    (with what its closure, defaults and `__wrapped__` hold), a method (and the object
    it is bound to), a partial, a class and its methods, an instance's class and its
    attributes, and whatever of these a dict, list, tuple or set holds, at any depth:
    `ops['total']()` runs the lambda in `ops`, `h.callback()` the function `h` holds.
    Of a library's object, only the functions it holds itself (a transformer's `func`):
    its insides (a figure's thousands of artists) would cost every plain cell that
    names it milliseconds for as long as values are pending."""

    def __init__(self, ns: dict[str, Any]) -> None:
        self.ns = ns
        self.seen: set[int] = set()
        self.left = _LOOKED_AT_MAX

    def codes(self, value: Any) -> list[types.CodeType]:
        out: list[types.CodeType] = []
        todo = [value]
        while todo:
            value = todo.pop()
            if isinstance(value, _LEAVES) or id(value) in self.seen:
                continue
            self.seen.add(id(value))
            self.left -= 1
            if self.left < 0:
                raise _TooMuch
            self._look_into(value, out, todo)
        return out

    def _look_into(self, value: Any, out: list[types.CodeType], todo: list[Any]) -> None:
        if isinstance(value, types.FunctionType):
            if value.__globals__ is self.ns:
                out.append(value.__code__)
            todo += _contents(value.__closure__)
            todo += [*(value.__defaults__ or ()), *(value.__kwdefaults__ or {}).values()]
            todo.append(getattr(value, "__wrapped__", None))
        elif isinstance(value, types.MethodType):
            todo += [value.__func__, value.__self__]
        elif isinstance(value, functools.partial):
            todo += [value.func, *value.args, *value.keywords.values()]
        elif isinstance(value, dict):
            todo += [*value.keys(), *value.values()]
        elif isinstance(value, _CONTAINERS):
            todo += list(value)
        elif isinstance(value, type):
            out += self._methods(value, todo)
        else:
            todo.append(type(value))  # (its class, looked into once however many instances)
            try:  # (not `getattr`: a proxy's `__getattr__` would run)
                attrs = object.__getattribute__(value, "__dict__")
            except Exception:
                return  # no attribute dict: slots, a C type
            if not isinstance(attrs, dict):
                return
            if type(value).__module__ == "__main__" or isinstance(value, types.SimpleNamespace):
                todo += attrs.values()
            else:  # a library's object: the code it holds itself (`FunctionTransformer.func`)
                todo += [v for v in attrs.values() if isinstance(v, _CODE_HOLDERS)]

    def _methods(self, cls: type, todo: list[Any]) -> list[types.CodeType]:
        """The code of the notebook's own methods of `cls` and its bases; what their
        other attributes hold is looked into (`todo`)."""
        codes = []
        for klass in cls.__mro__:
            if getattr(klass, "__module__", None) != "__main__":
                continue
            for member in vars(klass).values():
                if isinstance(member, (staticmethod, classmethod)):
                    member = member.__func__
                elif isinstance(member, property):
                    member = member.fget
                if isinstance(member, types.FunctionType) and member.__globals__ is self.ns:
                    codes.append(member.__code__)
                elif not isinstance(member, types.FunctionType):
                    todo.append(member)
        return codes


def _contents(closure: tuple[types.CellType, ...] | None) -> list[Any]:
    out = []
    for cell in closure or ():
        try:
            out.append(cell.cell_contents)
        except ValueError:  # a closure cell not yet assigned
            continue
    return out
