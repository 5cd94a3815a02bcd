"""What a function's code reads from its module's namespace, read off its bytecode.

For a code object and the code nested in it (inner functions, lambdas, comprehensions):
the global names it loads, stores or deletes; the attribute chains it reads from a
global (`settings.THRESHOLD`: a global load, then attribute loads) or sets
(`settings.THRESHOLD = 0.7`: then an attribute store); the names it reads
through `globals()['name']`, `globals().get('name')`, `eval('...')` or `exec('...')`
with a literal; the environment variables it may read (`ENVIRON_READS`); the string
constants that could name a file it opens (`files.could_name`); and the dynamic reads
it cannot resolve (`globals()` used any other way, `eval`/`exec` of anything but one
literal string). Remembered per code object.
"""

from __future__ import annotations

import ast
import dis
import keyword
import re
import types

import msgspec

from .files import could_name

_LOADS = frozenset({"LOAD_GLOBAL", "LOAD_NAME"})
_WRITES = frozenset({"STORE_GLOBAL", "DELETE_GLOBAL", "STORE_NAME", "DELETE_NAME"})
_ATTRS = frozenset({"LOAD_ATTR", "LOAD_METHOD"})
_SUBSCRIPT_WRITES = frozenset({"STORE_SUBSCR", "DELETE_SUBSCR"})
_ATTR_WRITES = frozenset({"STORE_ATTR", "DELETE_ATTR"})
_KEPT = 4096


class CodeReads(msgspec.Struct, frozen=True):
    names: frozenset[str]  # globals loaded, stored or deleted (literal dynamic reads too)
    chains: frozenset[tuple[str, ...]]  # (global, attribute, ...) read
    dynamic: tuple[str, ...]  # reads of the namespace that cannot be resolved
    writes: frozenset[str] = frozenset()  # globals stored or deleted
    attr_writes: frozenset[tuple[str, ...]] = frozenset()  # (global, ..., attribute) set
    environ: frozenset[str] = frozenset()  # environment variables it may read (`ENVIRON_READS`)
    strings: frozenset[str] = frozenset()  # its string constants that could name a file


# By id (a code object's own hash reads all of its bytecode), with the code kept alive.
_MEMO: dict[int, tuple[types.CodeType, CodeReads]] = {}


def scan(code: types.CodeType) -> CodeReads:
    """What `code` reads from the namespace of the function's module."""
    got = _MEMO.get(id(code))
    if got is None or got[0] is not code:
        if len(_MEMO) >= _KEPT:
            _MEMO.clear()
        got = _MEMO[id(code)] = (code, _scan(code))
    return got[1]


def _scan(code: types.CodeType) -> CodeReads:
    names: set[str] = set()
    writes: set[str] = set()
    chains: set[tuple[str, ...]] = set()
    attr_writes: set[tuple[str, ...]] = set()
    dynamic: list[str] = []
    ins = list(dis.get_instructions(code))
    for i, op in enumerate(ins):
        if op.opname in _WRITES:
            names.add(op.argval)
            writes.add(op.argval)
        elif op.opname in _LOADS:
            name = op.argval
            if name == "globals":
                _globals_call(ins, i, names, dynamic)
            elif name in ("eval", "exec"):
                _eval_call(ins, i, name, names, dynamic)
            else:
                names.add(name)
                attrs = _attribute_run(ins, i + 1)
                if attrs:
                    chains.add((name, *attrs))
                after = ins[i + 1 + len(attrs)] if i + 1 + len(attrs) < len(ins) else None
                if after is not None and after.opname in _ATTR_WRITES:
                    attr_writes.add((name, *attrs, after.argval))
    if EXPRESSION_CALLS.intersection(code.co_names):  # df.query('A < @lim'), smf.ols('y ~ f(x)')
        for const in code.co_consts:
            if isinstance(const, str):
                names.update(expression_names(const))
    environ: set[str] = set()
    if ENVIRON_READS.intersection(code.co_names):  # os.environ['MODE'], os.getenv('MODE')
        environ.update(c for c in code.co_consts if isinstance(c, str) and _ENV_NAME.match(c))
    strings = {c for c in code.co_consts if isinstance(c, str) and could_name(c)}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            inner = scan(const)
            names |= inner.names
            writes |= inner.writes
            attr_writes |= inner.attr_writes
            chains |= inner.chains
            environ |= inner.environ
            strings |= inner.strings
            dynamic.extend(d for d in inner.dynamic if d not in dynamic)
    return CodeReads(
        frozenset(names),
        frozenset(chains),
        tuple(dict.fromkeys(dynamic)),
        frozenset(writes),
        frozenset(attr_writes),
        frozenset(environ),
        frozenset(strings),
    )


# Names whose use reads environment variables by a string (`os.environ['MODE']`,
# `os.environ.get('MODE')`, `os.getenv('MODE')`): every string constant of such code that
# could name one is taken as a variable read (one that is not set reads as missing).
ENVIRON_READS = frozenset({"environ", "getenv"})
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


# Calls that read the caller's variables named in a string, where no analysis of the
# code sees them: pandas' expressions (`df.query('A < @lim')`, `df.eval`, `pd.eval`),
# numexpr's `evaluate('a * b')`, and model formulas, which look up the names they spell
# in the frame that calls them (statsmodels' `smf.ols('y ~ center(x)', data=df)`, patsy's
# `dmatrices`, formulaic's `model_matrix`): a notebook function or variable a formula
# names is an input of the step like one the code names.
EXPRESSION_CALLS = frozenset(
    {"query", "eval", "evaluate", "dmatrix", "dmatrices", "model_matrix", "from_formula",
     "ols", "wls", "gls", "glsar", "glm", "gee", "ordinal_gee", "nominal_gee", "mixedlm",
     "rlm", "logit", "probit", "mnlogit", "poisson", "negativebinomial", "quantreg", "phreg"}
)  # fmt: skip
# The keywords that pass the string, where it is not the first argument.
EXPRESSION_KEYWORDS = frozenset({"expr", "ex", "formula", "formula_like", "spec"})
_QUOTED = re.compile(r"`[^`]*`|'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
_NAME = re.compile(r"(?<![\w.])@?([A-Za-z_]\w*)")


def expression_names(text: str) -> list[str]:
    """The names an expression string or a formula spells (`A < @lim`, `df.A * k`,
    `y ~ center(x)`): the library reads them from the caller's frame (`EXPRESSION_CALLS`).
    Names outside its quoted strings and backticked column names, keywords left out."""
    bare = _QUOTED.sub(" ", text)
    return [m for m in _NAME.findall(bare) if not keyword.iskeyword(m)]


def _attribute_run(ins: list[dis.Instruction], j: int) -> list[str]:
    attrs = []
    while j < len(ins) and ins[j].opname in _ATTRS:
        attrs.append(ins[j].argval)
        j += 1
    return attrs


def _call(ins: list[dis.Instruction], j: int, nargs: int) -> int | None:
    """The index after a call of `nargs` positional arguments starting at `j`, or None."""
    if j < len(ins) and ins[j].opname == "PRECALL":
        if ins[j].arg != nargs:
            return None
        j += 1
    if j < len(ins) and ins[j].opname == "CALL" and ins[j].arg == nargs:
        return j + 1
    return None


def _literal(ins: list[dis.Instruction], j: int) -> str | None:
    if j < len(ins) and ins[j].opname == "LOAD_CONST" and isinstance(ins[j].argval, str):
        return ins[j].argval
    return None


def _is_subscript(op: dis.Instruction) -> bool:
    return op.opname == "BINARY_SUBSCR" or (op.opname == "BINARY_OP" and op.argrepr == "[]")


def _globals_call(ins, i, names: set[str], dynamic: list[str]) -> None:
    """`globals()['x']` and `globals().get('x')` read x; a literal item assignment is a
    write (seen when the namespace is compared after the run); anything else is dynamic."""
    j = _call(ins, i + 1, 0)
    if j is not None and j + 1 < len(ins):
        key = _literal(ins, j)
        if key is not None and (
            _is_subscript(ins[j + 1]) or ins[j + 1].opname in _SUBSCRIPT_WRITES
        ):
            names.add(key)
            return
        if ins[j].opname in _ATTRS and ins[j].argval == "get":
            key = _literal(ins, j + 1)
            if key is not None and _call(ins, j + 2, 1) is not None:
                names.add(key)
                return
    dynamic.append("globals()")


def _eval_call(ins, i, fn: str, names: set[str], dynamic: list[str]) -> None:
    """`eval('a + b')` reads a and b; `eval(anything else)` is dynamic."""
    src = _literal(ins, i + 1)
    if src is not None and _call(ins, i + 2, 1) is not None:
        names.update(literal_reads(src, "eval" if fn == "eval" else "exec"))
        return
    dynamic.append(f"{fn}()")


def literal_reads(source: str, mode: str) -> list[str]:
    """The names a literal string of code given to `eval` or `exec` loads."""
    try:
        tree = ast.parse(source, mode=mode)
    except (SyntaxError, ValueError):
        return []  # the call raises: it reads nothing
    found = (
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
    )
    return list(dict.fromkeys(found))
