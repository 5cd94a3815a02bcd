"""Static analysis of a step's code: what it reads, what it binds, how it is named.

The code is first transformed by IPython (so `!cmd` and `%magic` lines become calls),
then parsed; the normalised form is the AST dump without positions, so comments and
formatting never reach the key. Reads are flow-sensitive at the top level: a name the
cell assigns before reading it is not an input.

Reads of the namespace that are not spelled as names are found too: attribute chains
(`settings.THRESHOLD`, whose root may be a module), `globals()['cfg']`,
`globals().get('cfg')` and `eval`/`exec` of a literal string (read as the names they
spell); any other use of `globals()`, or of `vars()`, `locals()` and `dir()` at the top
level, `eval`/`exec` of anything but a literal, and a shell's `user_ns` are dynamic
reads, listed by their source.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

import msgspec
import xxhash

from ...hashing.bytecode import expression_names
from ...hashing.files import could_name
from .namespace_reads import NamespaceReads

__all__ = ["CellInfo", "analyse"]


class CellInfo(msgspec.Struct, frozen=True):
    normalised: str
    reads: tuple[str, ...]  # names read before the cell binds them, in order of first use
    binds: tuple[str, ...]  # names the cell assigns, imports, defines (incl. `global` in defs)
    deletes: tuple[str, ...]  # names a `del` statement deletes
    calls: tuple[tuple[str, ...], ...]  # dotted call targets, e.g. ("time", "time")
    imports: dict[str, str] = msgspec.field(default_factory=dict)  # alias -> module path
    star_imports: tuple[str, ...] = ()  # modules imported with `from module import *`
    code_hash: str = ""
    chains: tuple[tuple[str, ...], ...] = ()  # attribute chains read: ("settings", "X")
    attr_writes: tuple[tuple[str, ...], ...] = ()  # attribute chains assigned or deleted
    # chains whose items the cell's top level assigns or deletes: ("os", "environ")
    item_writes: tuple[tuple[str, ...], ...] = ()
    dynamic: tuple[str, ...] = ()  # reads of the namespace that cannot be resolved
    # names a `del` at the cell's top level deletes: gone once the cell ran, whatever the
    # namespace held before (`tmp = f(); del tmp`)
    top_deletes: tuple[str, ...] = ()
    # inputs whose string values are expressions or formulas a library reads names from
    # (`smf.ols(formula, data=df)`): the names they spell are inputs too (`inputs.py`)
    expression_vars: tuple[str, ...] = ()
    environ: tuple[str, ...] = ()  # environment variables read by a literal name
    # string constants that could name a file the cell opens where Python does not see it
    # (`engine/live/named_files.py`), at most MAX_STRINGS
    strings: tuple[str, ...] = ()
    # dotted call targets called with no argument at all (`np.random.default_rng()`)
    bare_calls: tuple[tuple[str, ...], ...] = ()

    def default_name(self) -> str:
        if self.binds:
            return ",".join(self.binds[:2])
        return "cell-" + self.code_hash[:8]


def analyse(transformed_source: str) -> CellInfo:
    """Analyse IPython-transformed cell source. Raises SyntaxError like Python would."""
    tree = ast.parse(transformed_source)
    normalised = ast.dump(tree, annotate_fields=False, include_attributes=False)
    walker = _Walker()
    for stmt in tree.body:
        walker.stmt(stmt)
    spelled = _spelled_by_the_cell(tree, walker)
    return CellInfo(
        normalised=normalised,
        reads=tuple(walker.reads),
        binds=tuple(dict.fromkeys(walker.binds)),
        deletes=tuple(dict.fromkeys(walker.deletes)),
        calls=tuple(walker.calls),
        bare_calls=tuple(dict.fromkeys(walker.bare_calls)),
        imports=walker.imports,
        star_imports=tuple(dict.fromkeys(walker.star_imports)),
        code_hash=xxhash.xxh3_128_hexdigest(normalised.encode()),
        chains=tuple(dict.fromkeys(walker.chains)),
        attr_writes=tuple(dict.fromkeys(walker.attr_writes)),
        item_writes=tuple(dict.fromkeys(walker.item_writes)),
        dynamic=tuple(dict.fromkeys(walker.dynamic)),
        expression_vars=tuple(dict.fromkeys(spelled)),
        environ=tuple(dict.fromkeys(walker.environ)),
        strings=_strings(tree),
        top_deletes=tuple(
            dict.fromkeys(
                t.id
                for s in tree.body
                if isinstance(s, ast.Delete)
                for t in s.targets
                if isinstance(t, ast.Name)
            )
        ),
    )


MAX_STRINGS = 256


def _strings(tree: ast.Module) -> tuple[str, ...]:
    found = dict.fromkeys(
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and could_name(n.value)
    )
    return tuple(found)[:MAX_STRINGS]


def _spelled_by_the_cell(tree: ast.Module, walker: _Walker) -> list[str]:
    """Of the names the cell passes as expressions or formulas, those it reads from the
    namespace (their values are read as the key is made). A name the cell binds itself
    is not known here: every string the cell holds is read as one (the formula assigned
    a line above), and a pandas expression is a dynamic read, as before."""
    inputs = []
    local = False
    for name, pandas_call in walker.expression_vars:
        if name in walker._read_set:
            inputs.append(name)
        elif pandas_call is not None:
            walker.dynamic.append(pandas_call)
        else:
            local = True
    if local:
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                for name in expression_names(node.value):
                    walker.load(name)
    return inputs


class _Walker:
    """Walks top-level statements in execution order, tracking definite assignment."""

    def __init__(self) -> None:
        self.assigned: set[str] = set()
        self.reads: list[str] = []
        self._read_set: set[str] = set()
        self.binds: list[str] = []
        self.deletes: list[str] = []
        self.calls: list[tuple[str, ...]] = []
        self.bare_calls: list[tuple[str, ...]] = []
        self.imports: dict[str, str] = {}
        self.star_imports: list[str] = []
        self.chains: list[tuple[str, ...]] = []
        self.attr_writes: list[tuple[str, ...]] = []
        self.item_writes: list[tuple[str, ...]] = []
        self.dynamic: list[str] = []
        # (name, the source of a pandas call) of each name passed as an expression
        self.expression_vars: list[tuple[str, str | None]] = []
        self.environ: list[str] = []
        self.environ_set: set[str] = set()  # variables the top level set by a literal name

    # -- names -----------------------------------------------------------------------
    def load(self, name: str) -> None:
        if name not in self.assigned and name not in self._read_set:
            self._read_set.add(name)
            self.reads.append(name)

    def store(self, name: str) -> None:
        self.assigned.add(name)
        self.binds.append(name)

    # -- statements ------------------------------------------------------------------
    def stmt(self, node: ast.stmt) -> None:
        method = getattr(self, "_" + type(node).__name__, None)
        if method is not None:
            method(node)
        else:
            self.generic(node)

    def generic(self, node: ast.AST) -> None:
        """Children in field order, which is evaluation order for most nodes."""
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                self.stmt(child)
            elif isinstance(child, ast.ExceptHandler):
                if child.type is not None:
                    self.expr(child.type)
                if child.name:  # bound before the handler's body reads it
                    self.store(child.name)
                for s in child.body:
                    self.stmt(s)
            elif isinstance(child, ast.match_case):
                self._match_case(child)
            else:
                self.expr(child)

    def _match_case(self, case: ast.match_case) -> None:
        # The pattern's values and classes are read; its capture names are bound.
        for node in ast.walk(case.pattern):
            if isinstance(node, ast.MatchValue):
                self.expr(node.value)
            elif isinstance(node, ast.MatchClass):
                self.expr(node.cls)
            elif isinstance(node, ast.MatchMapping):
                for k in node.keys:
                    self.expr(k)
        for name in _captures(case.pattern):
            self.store(name)
        if case.guard is not None:
            self.expr(case.guard)
        for s in case.body:
            self.stmt(s)

    def _Assign(self, node: ast.Assign) -> None:
        self.expr(node.value)
        for t in node.targets:
            self.target(t)

    def _AugAssign(self, node: ast.AugAssign) -> None:
        self.expr(node.value)
        if isinstance(node.target, ast.Name):
            self.load(node.target.id)
        self.target(node.target)

    def _AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.expr(node.value)
            self.target(node.target)

    def _For(self, node: ast.For) -> None:
        self.expr(node.iter)
        self.target(node.target)
        for s in node.body + node.orelse:
            self.stmt(s)

    _AsyncFor = _For

    def _With(self, node: ast.With) -> None:
        for item in node.items:
            self.expr(item.context_expr)
            if item.optional_vars is not None:
                self.target(item.optional_vars)
        for s in node.body:
            self.stmt(s)

    _AsyncWith = _With

    def _If(self, node: ast.If) -> None:
        # A name is definitely assigned after an `if` only when both branches assign it.
        self.expr(node.test)
        before = set(self.assigned)
        for s in node.body:
            self.stmt(s)
        after_body, self.assigned = self.assigned, set(before)
        for s in node.orelse:
            self.stmt(s)
        self.assigned = after_body & self.assigned

    def _Import(self, node: ast.Import) -> None:
        for alias in node.names:
            name = alias.asname or alias.name.partition(".")[0]
            self.imports[name] = alias.name if alias.asname else name
            self.store(name)

    def _ImportFrom(self, node: ast.ImportFrom) -> None:
        for alias in node.names:
            if alias.name == "*":
                self.star_imports.append(node.module or "")
                continue
            name = alias.asname or alias.name
            self.imports[name] = f"{node.module}.{alias.name}"
            self.store(name)

    def _Delete(self, node: ast.Delete) -> None:
        for t in node.targets:
            if isinstance(t, ast.Name):
                self.load(t.id)
                self.deletes.append(t.id)
                self.assigned.discard(t.id)
            else:
                self.expr(t)

    def _FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for d in node.decorator_list:
            self.expr(d)
        self._arguments_defaults(node.args)
        self._function_body(node.args, node.body)
        self.store(node.name)

    _AsyncFunctionDef = _FunctionDef

    def _ClassDef(self, node: ast.ClassDef) -> None:
        for d in node.decorator_list + node.bases + [k.value for k in node.keywords]:
            self.expr(d)
        inner = _ScopeReads(self, local=set())
        for s in node.body:
            inner.visit(s)
        self.store(node.name)

    def _Global(self, node: ast.Global) -> None:
        pass

    def _Try(self, node: ast.Try) -> None:
        self.generic(node)

    # -- expressions -----------------------------------------------------------------
    def expr(self, node: ast.AST) -> None:
        _ScopeReads(self, local=None).visit(node)

    def target(self, node: ast.AST) -> None:
        if isinstance(node, ast.Name):
            self.store(node.id)
        elif isinstance(node, (ast.Tuple, ast.List)):
            for elt in node.elts:
                self.target(elt)
        elif isinstance(node, ast.Starred):
            self.target(node.value)
        else:  # attribute or subscript target: its object is read, not rebound
            self.expr(node)

    def _arguments_defaults(self, args: ast.arguments) -> None:
        for d in args.defaults + [d for d in args.kw_defaults if d is not None]:
            self.expr(d)

    def _function_body(self, args: ast.arguments, body: list[ast.stmt]) -> None:
        local = _params(args) | _local_stores(body)
        inner = _ScopeReads(self, local=local)
        for s in body:
            inner.visit(s)


class _ScopeReads(NamespaceReads, ast.NodeVisitor):
    """Reads inside one expression or nested scope. `local` is None at the top level
    (reads are checked against the walker's definite assignments), or the set of names
    local to the enclosing function/class chain."""

    _walrus_outer = False  # inside a top-level comprehension, := binds at the top level

    def __init__(self, walker: _Walker, local: set[str] | None) -> None:
        self.w = walker
        self.local = local

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            if self.local is None or node.id not in self.local:
                self.w.load(node.id)
        elif isinstance(node.ctx, ast.Store) and self.local is None:
            self.w.store(node.id)  # walrus at top level

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.visit(node.value)
        if self.local is None or self._walrus_outer:
            self.w.store(node.target.id)

    def visit_Global(self, node: ast.Global) -> None:
        for name in node.names:
            self.w.binds.append(name)

    def _nested(self, args: ast.arguments | None, body: list[ast.stmt] | ast.expr) -> None:
        outer = self.local or set()
        local = outer | (_params(args) if args else set()) | _local_stores(body)
        inner = _ScopeReads(self.w, local=local)
        for s in body if isinstance(body, list) else [body]:
            inner.visit(s)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for d in node.decorator_list + node.args.defaults:
            self.visit(d)
        for kw in node.args.kw_defaults:
            if kw is not None:
                self.visit(kw)
        if self.local is not None:
            self.local = self.local | {node.name}
        self._nested(node.args, node.body)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> None:
        for d in node.args.defaults:
            self.visit(d)
        self._nested(node.args, node.body)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for d in node.decorator_list + node.bases:
            self.visit(d)
        self._nested(None, node.body)

    def _comprehension(
        self,
        node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp,
        elts: list[ast.expr],
    ) -> None:
        gens = node.generators
        self.visit(gens[0].iter)  # evaluated in the enclosing scope
        targets: set[str] = set()
        for g in gens:
            targets |= {n.id for n in ast.walk(g.target) if isinstance(n, ast.Name)}
        inner = _ScopeReads(self.w, local=(self.local or set()) | targets)
        inner._walrus_outer = self.local is None
        for i, g in enumerate(gens):
            if i:
                inner.visit(g.iter)
            for cond in g.ifs:
                inner.visit(cond)
        for e in elts:
            inner.visit(e)

    def visit_ListComp(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp) -> None:
        self._comprehension(node, [node.elt])

    visit_SetComp = visit_GeneratorExp = visit_ListComp

    def visit_DictComp(self, node: ast.DictComp) -> None:
        self._comprehension(node, [node.key, node.value])


def _params(args: ast.arguments) -> set[str]:
    names = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
    if args.vararg:
        names.add(args.vararg.arg)
    if args.kwarg:
        names.add(args.kwarg.arg)
    return names


def _local_stores(body: list[ast.stmt] | ast.expr) -> set[str]:
    """Names a function body binds locally (not declared global or nonlocal)."""
    stores: set[str] = set()
    declared: set[str] = set()
    for stmt in body if isinstance(body, list) else [body]:
        for node in _walk_same_scope(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                stores.add(node.id)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                stores.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                stores |= {(a.asname or a.name).partition(".")[0] for a in node.names}
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                declared |= set(node.names)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                stores.add(node.name)
            elif isinstance(node, ast.match_case):
                stores |= set(_captures(node.pattern))
    return stores - declared


def _captures(pattern: ast.AST) -> list[str]:
    """The names a `case` pattern binds."""
    names = []
    for node in ast.walk(pattern):
        if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            names.append(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.append(node.rest)
    return names


def _walk_same_scope(node: ast.AST) -> Iterator[ast.AST]:
    yield node
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp)):
            continue
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield child  # its name is bound here; its body is its own scope
            continue
        yield from _walk_same_scope(child)
