"""Reads of the notebook's namespace that are not spelled as plain names, for the static
analysis of a cell (`analysis`): attribute chains (`settings.THRESHOLD`), items of the
namespace by a literal name (`globals()['cfg']`, `globals().get('cfg')`), attributes of
the notebook's module (`sys.modules['__main__'].cfg`), one cell's result or source by
number (`Out[5]` as `_5`, `In[5]` as `_i5`), environment variables by a literal
name (`os.environ['MODE']`, `os.getenv('MODE')`, `'MODE' in os.environ`), code given to
`eval`/`exec` as a literal string (read as the names it spells), the names a pandas
expression string spells (`df.query('A < @lim')`, `pd.eval('df.A * k')`), and the dynamic reads
that cannot be resolved: `globals()` used any other way, `vars()`, `locals()` and
`dir()` at the top level, the notebook's module whole (`vars(__main__)`,
`__main__.__dict__`, `dir(sys.modules['__main__'])`), `eval`/`exec` of anything but a
literal, a shell's `user_ns`, and IPython's magics that list the namespace (`%who`,
`%who_ls`, `%whos`).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from ...hashing.bytecode import EXPRESSION_CALLS, EXPRESSION_KEYWORDS, expression_names
from .magics import magic_call

_SHELL_NAMESPACES = frozenset({"user_ns", "user_global_ns"})
_LISTING_MAGICS = frozenset({"who", "who_ls", "whos"})  # (they list the namespace's names)


class NamespaceReads:
    """Visitor methods for those reads; the visitor has `w` (the cell's walker, which
    collects `reads`, `chains`, `attr_writes`, `item_writes`, `dynamic`, `calls`, `bare_calls`,
    `expression_vars` and `environ`) and
    `local` (the names local to the enclosing function, or None at the top level)."""

    w: Any
    local: set[str] | None
    # ast.NodeVisitor's, which the walker mixes this class into
    visit: Callable[[ast.AST], Any]
    generic_visit: Callable[[ast.AST], Any]

    def visit_Call(self, node: ast.Call) -> None:
        target = dotted(node.func)
        if target:
            self.w.calls.append(target)
            if not node.args and not node.keywords:
                self.w.bare_calls.append(target)
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "get" and self._namespace(func.value):
            key = literal(node.args[0]) if node.args else None
            if key is None:
                self.w.dynamic.append(source(node))
            else:
                self._read_by_name(key)
            for a in node.args[key is not None :] + [k.value for k in node.keywords]:
                self.visit(a)
            return
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "update"
            and self._namespace(func.value)
        ):
            for a in node.args + [k.value for k in node.keywords]:
                self.visit(a)  # writes only: the namespace is compared after the run
            return
        if isinstance(func, ast.Name) and func.id in ("eval", "exec"):
            self._eval(node, func.id)
            return
        if self._whole_module(node) or _listing_magic(node):
            self.w.dynamic.append(source(node))
        if isinstance(func, ast.Name) and func.id in ("setattr", "delattr") and len(node.args) > 1:
            # `setattr(json, 'X', 4)` writes `json.X` as `json.X = 4` does
            chain, name = dotted(node.args[0]), literal(node.args[1])
            if chain and name is not None and (self.local is None or chain[0] not in self.local):
                self.w.attr_writes.append((*chain, name))
        if target in _ENVIRON_GETS and node.args:  # `os.getenv('MODE')`, `os.environ.get`
            name = literal(node.args[0])
            if name is not None:
                self._environ(name)
        called = called_name(func)
        if called in EXPRESSION_CALLS:
            self._expression(node, called)
        if self._namespace(node):
            self.w.dynamic.append(source(node))
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        """`'MODE' in os.environ` reads the variable (whether it is set)."""
        operands = [node.left, *node.comparators]
        for k, op in enumerate(node.ops):
            if isinstance(op, (ast.In, ast.NotIn)) and dotted(operands[k + 1]) in _ENVIRON:
                name = literal(operands[k])
                if name is not None:
                    self._environ(name)
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if notebook_module(node):  # handed on, read by name later: a dynamic read
            self.w.dynamic.append(source(node))
            return
        entry = _history_entry(node)
        if entry is not None and isinstance(node.ctx, ast.Load):
            # `Out[5]` is `_5`, `In[5]` is `_i5`: one cell's, where all of `Out` changes
            # with every result shown (a step reading it would never be served)
            self._read_by_name(entry)
            return
        if not isinstance(node.ctx, ast.Load) and self.local is None:
            chain = dotted(node.value)  # `mimetypes.types_map[k] = v`, `del os.environ[k]`
            owner, name = _attribute_dict(node.value), literal(node.slice)
            if owner and name is not None:  # `json.__dict__['X'] = 4`, `vars(json)['X']`
                self.w.attr_writes.append((*owner, name))
            elif chain:
                self.w.item_writes.append(chain)
        if dotted(node.value) in _ENVIRON and (name := literal(node.slice)) is not None:
            if isinstance(node.ctx, ast.Load):  # `os.environ['MODE']`
                self._environ(name)
            elif self.local is None:  # set by the cell before it reads it: not an input
                self.w.environ_set.add(name)
        if not self._namespace(node.value):
            self.generic_visit(node)
            return
        key = literal(node.slice)
        if key is None:
            self.w.dynamic.append(source(node))
            self.visit(node.slice)
        elif isinstance(node.ctx, ast.Load):
            self._read_by_name(key)
        # an item assigned or deleted is a binding: the namespace is compared after the run

    def visit_Attribute(self, node: ast.Attribute) -> None:
        main = notebook_module(node.value) or self._main_name(node.value)
        if node.attr == "__dict__" and main:  # the namespace whole
            self.w.dynamic.append(source(node))
            return
        if notebook_module(node.value):  # `sys.modules['__main__'].cfg` is the notebook's cfg
            if isinstance(node.ctx, ast.Load):
                self._read_by_name(node.attr)
            return  # (assigned or deleted: the namespace is compared after the run)
        chain = dotted(node)
        if node.attr in _SHELL_NAMESPACES or _SHELL_NAMESPACES.intersection(chain[1:]):
            self.w.dynamic.append(source(node))
        if not chain:
            self.generic_visit(node)
            return
        if self.local is None or chain[0] not in self.local:
            writes = not isinstance(node.ctx, ast.Load)
            (self.w.attr_writes if writes else self.w.chains).append(chain)
        base = node.value
        while isinstance(base, ast.Attribute):  # its prefixes are not chains of their own
            base = base.value
        self.visit(base)

    def _namespace(self, node: ast.AST) -> bool:
        """A call that returns the notebook's namespace: `globals()`, and at the top level
        `vars()` and `locals()` (inside a function they are its own locals)."""
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            return False
        if node.args or node.keywords:
            return False
        return node.func.id == "globals" or (
            self.local is None and node.func.id in ("vars", "locals", "dir")
        )

    def _main_name(self, node: ast.AST) -> bool:
        """A name of the notebook's module: one the cell imports it as, or `__main__`
        (`import __main__` in an earlier cell)."""
        return isinstance(node, ast.Name) and (
            node.id == "__main__" or self.w.imports.get(node.id) == "__main__"
        )

    def _whole_module(self, node: ast.Call) -> bool:
        """`vars(__main__)`, `dir(__main__)`: every name of the notebook's namespace
        (`vars(sys.modules['__main__'])` is one through the module handed on)."""
        func = node.func
        return (
            isinstance(func, ast.Name)
            and func.id in ("vars", "dir")
            and len(node.args) == 1
            and self._main_name(node.args[0])
        )

    def _environ(self, name: str) -> None:
        if name not in self.w.environ_set:
            self.w.environ.append(name)

    def _read_by_name(self, name: str) -> None:
        if self.local is None or name not in self.local:
            self.w.load(name)

    def _eval(self, node: ast.Call, fn: str) -> None:
        """`eval('a + b')` reads a and b where it runs; with a namespace of its own
        (`eval(src, env)`) it reads what it is given; otherwise it is dynamic."""
        src = literal(node.args[0]) if node.args else None
        own_namespace = len(node.args) > 1 and not self._namespace(node.args[1])
        if src is not None and not own_namespace:
            try:
                parsed = ast.parse(src, mode="eval" if fn == "eval" else "exec")
            except (SyntaxError, ValueError):
                parsed = None  # the call raises: it reads nothing
            if parsed is not None:
                for part in ast.iter_child_nodes(parsed):
                    if isinstance(part, ast.stmt) and self.local is None:
                        # run in the notebook's namespace: a statement of the cell's own,
                        # in the order it runs (`exec('g = g')` reads g, then binds it)
                        self.w.stmt(part)
                    else:
                        self.visit(part)
        elif not own_namespace:
            self.w.dynamic.append(source(node))
        for a in node.args[1:] + [k.value for k in node.keywords]:
            if not self._namespace(a):
                self.visit(a)
        if own_namespace:
            self.visit(node.args[0])

    def _expression(self, node: ast.Call, called: str) -> None:
        """`df.query('A < @lim')`, `pd.eval('df.A * k')`, `smf.ols('y ~ center(x)',
        data=df)`: the library reads the caller's variables named in the string, where
        the analysis cannot see them (`EXPRESSION_CALLS`). Every name the string spells
        is taken as a read (a column's name that is also a variable's makes that
        variable an input: a miss too many, never a stale hit). A string bound to a name
        (`smf.ols(formula, data=df)`) is read from the namespace when the key is made
        (`expression_vars`, with the source to call dynamic when the cell binds the name
        itself and the call is pandas'); a pandas expression built otherwise cannot be
        read here: a dynamic read."""
        arg = expression_arg(node)
        if arg is None:
            return
        text = expression_text(arg)
        if text is not None:
            for name in expression_names(text):
                self._read_by_name(name)
        elif called in _PANDAS_EXPRESSIONS and not isinstance(arg, ast.Name):
            self.w.dynamic.append(source(node))
        elif isinstance(arg, ast.Name) and (self.local is None or arg.id not in self.local):
            pandas = called in _PANDAS_EXPRESSIONS
            self.w.expression_vars.append((arg.id, source(node) if pandas else None))


_PANDAS_EXPRESSIONS = frozenset({"query", "eval"})
# The environment, as a cell spells it (`from os import environ, getenv` too).
_ENVIRON = frozenset({("os", "environ"), ("environ",)})
_ENVIRON_GETS = frozenset(
    {("os", "environ", "get"), ("environ", "get"), ("os", "getenv"), ("getenv",)}
)


def notebook_module(node: ast.AST) -> bool:
    """`sys.modules['__main__']`: the module whose dict is the notebook's namespace."""
    return (
        isinstance(node, ast.Subscript)
        and dotted(node.value) == ("sys", "modules")
        and literal(node.slice) == "__main__"
    )


def _history_entry(node: ast.Subscript) -> str | None:
    """`_5` for `Out[5]`, `_i5` for `In[5]` (IPython binds both); else None."""
    if not isinstance(node.value, ast.Name) or node.value.id not in ("Out", "In"):
        return None
    n = node.slice.value if isinstance(node.slice, ast.Constant) else None
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        return None
    return f"_{n}" if node.value.id == "Out" else f"_i{n}"


def _listing_magic(node: ast.Call) -> bool:
    """`%who_ls`, as IPython spells it: `get_ipython().run_line_magic('who_ls', '')`."""
    found = magic_call(node)
    if found is None or found[0] != "line" or not found[1]:
        return False
    return found[1][0] in _LISTING_MAGICS


def called_name(func: ast.AST) -> str | None:
    """The name a call is made by: `f` of `f(...)` and of `obj.f(...)`."""
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else None


def expression_arg(node: ast.Call) -> ast.AST | None:
    """The string argument of an expression call: its first, or the keyword naming it."""
    if node.args and not isinstance(node.args[0], ast.Starred):
        return node.args[0]
    return next((k.value for k in node.keywords if k.arg in EXPRESSION_KEYWORDS), None)


def expression_text(node: ast.AST) -> str | None:
    """The text of a literal string or an f-string (its fields as `0`), else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = [
            v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else " 0 "
            for v in node.values
        ]
        return "".join(parts)
    return None


def _attribute_dict(node: ast.AST) -> tuple[str, ...]:
    """The chain whose attribute dict `node` is (`json.__dict__`, `vars(json)`), or ()."""
    chain = dotted(node)
    if len(chain) > 1 and chain[-1] == "__dict__":
        return chain[:-1]
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "vars"
        and len(node.args) == 1
        and not node.keywords
    ):
        return dotted(node.args[0])
    return ()


def literal(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def source(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 60 else text[:57] + "..."


def dotted(node: ast.AST) -> tuple[str, ...]:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return tuple(reversed(parts))
    return ()
