"""Digests of functions and classes.

Notebook-defined functions and classes are hashed by what they do: bytecode, constants,
defaults and closure cells, so editing a helper in an earlier cell invalidates exactly
the steps that reach it; and by what they hold: a class's attributes, the attributes set
on a function (`f.cache = {}`), which a step that sets them changes in place. The
notebook globals they read are not part of their digest: they are inputs of the step
that reaches them, told to the hasher's `reach` (see `reach`). Imported ones are hashed
by module, qualified name and the module's version (the version goes into the key), or
for a local module the digest of its source (`sources`); what functions of a local
module read from it is told to `reach` too. A name only tells what the module holds
under it: a function made by `exec` of generated source (sympy's `lambdify`) or a class
made at run time (sympy's `Function('f')`) is hashed by what it is, as the notebook's
are. A local module's class is also what its plain attributes hold now (`Config.lr`
set at run time is no part of the source). What a function holds (closure cells, defaults,
attributes) is walked as part of the digest that reaches it (`with_state`), each object
once.
"""

from __future__ import annotations

import copyreg
import functools
import sys
import types
from typing import Any

import xxhash

from . import bytecode, objects
from .plain import ATOMIC, all_atomic
from .sources import is_local_module
from .values import Hasher

# `__slotnames__` is a cache copyreg adds to a class the first time one of its
# instances is pickled (or hashed): not part of what the class is.
_SKIP_CLASS_ATTRS = frozenset(
    {"__dict__", "__weakref__", "__module__", "__qualname__", "__slotnames__", "_abc_impl"}
)
LRU_WRAPPER = type(functools.lru_cache()(lambda: None))


def is_notebook_defined(obj: Any, main_ns: dict | None) -> bool:
    if isinstance(obj, types.FunctionType):
        return obj.__globals__ is main_ns or obj.__module__ == "__main__"
    return getattr(obj, "__module__", None) == "__main__"


def callable_digest(obj: Any, hasher: Hasher) -> bytes:
    """16-byte digest of a function, class or builtin, in a state of its own: the same
    wherever in a value it is reached (`Hasher.callable` computes it once per digest)."""
    visiting = hasher.visiting
    oid = id(obj)
    if oid in visiting:  # recursion (f calls g calls f): refer to it by name
        return visiting[oid]
    visiting[oid] = xxhash.xxh3_128_digest(("rec:" + _name(obj)).encode())
    try:
        return _callable_digest(obj, hasher)
    finally:
        del visiting[oid]


def _callable_digest(obj: Any, hasher: Hasher) -> bytes:
    sub = hasher.child("fresh")
    if isinstance(obj, types.MethodType):
        sub.value(obj, _name(obj))
    elif isinstance(obj, types.FunctionType) and (
        is_notebook_defined(obj, hasher.main_ns) or not _named(obj)
    ):
        _function(sub, obj)
    elif isinstance(obj, type) and is_notebook_defined(obj, hasher.main_ns):
        _class(sub, obj)
    elif isinstance(obj, type) and objects.made_at_run_time(obj):
        _made_class_body(sub, obj, _name(obj))
    else:
        sub.tag(b"g")
        module = _by_name(sub, obj)
        if isinstance(obj, types.FunctionType) and "<locals>" in obj.__qualname__:
            # A function a library's function made (a closure: json's `scan_once`,
            # optax's `update`) is its code, known by name and version, and what it
            # was made with: two made with other values are other functions.
            _made_with(sub, obj, obj.__qualname__)
        if is_local_module(module):
            if isinstance(obj, type):
                _class_data(sub, obj)
            if hasher.reach is not None:
                _local_reads(obj, module, hasher.reach)
    return sub.digest()


def _class_data(h: Hasher, cls: type) -> None:
    """What a local module's class holds beyond its source: its settings now, the plain
    values among its attributes (numbers, strings, None, tuples of them). `Config.lr =
    0.5` in a cell is no part of `helpers.py`, and a step reading `Config.lr` (through
    the class, an instance, or a function of the module) was served what 0.1 made. Its
    functions are its source's, and what it holds that changes as it is used (a cache,
    a counter of its instances) is state, as an installed module's registries are: in a
    resumed Run All, the steps served do not fill it, and every later step would run."""
    h.tag(b"d")
    for name, attr in sorted(cls.__dict__.items(), key=lambda kv: str(kv[0])):
        if name not in _SKIP_CLASS_ATTRS and _plain(attr):
            h.text(name)
            h.value(attr, f"{cls.__qualname__}.{name}")


def _plain(value: Any) -> bool:
    return type(value) in ATOMIC or (type(value) is tuple and all_atomic(value))


def with_state(obj: Any, h: Hasher, path: str) -> bool:
    """Write a function or class that holds state as a part of the digest that reaches
    it (`_function_with_state`, `_made_class`); False for one `callable_digest`
    digests whole."""
    if isinstance(obj, type):
        return _made_class(obj, h, path)
    return _function_with_state(obj, h, path)


def _made_class(cls: type, h: Hasher, path: str) -> bool:
    """Write a class made at run time (`objects.made_at_run_time`) by what its library
    pickles it as (sympy registers that), else by its attributes as a notebook class's,
    walked in this digest's memo: mpmath makes a class of numbers for each of its
    contexts, which holds the context, and a digest of each on its own walked the
    context again. False for any other class."""
    if is_notebook_defined(cls, h.main_ns) or not objects.made_at_run_time(cls):
        return False
    h.shared.code = True
    _made_class_body(h, cls, path)
    return True


def _made_class_body(h: Hasher, cls: type, path: str) -> None:
    h.tag(b"y")
    if type(cls) in copyreg.dispatch_table:  # what its library pickles it as
        objects.encode(h, cls, type(cls), path)
    else:
        _class(h, cls)


def _function_with_state(fn: types.FunctionType, h: Hasher, path: str) -> bool:
    """Write a function that holds state as a part of the digest that reaches it: its
    code (a notebook function's by its bytecode, a library's by name and version), then
    what it was made with (defaults, closure cells, attributes), walked in this digest's
    memo as any object's state is, each object once. A digest of its own, as
    `callable_digest` makes, walks afresh for each function what they share: mpmath's
    45 functions of its context each walked the context, its other functions and two
    sibling contexts (30-100 ms a function, 24 s for the names of `from mpmath import
    *`), and notebook functions whose defaults hold a dict of them all grew with the
    square of their number, past the recursion limit at 100. False for a function
    `callable_digest` digests whole: one that holds nothing, a library's own function,
    a `__main__` function whose globals are not the notebook's."""
    if is_notebook_defined(fn, h.main_ns):
        if fn.__globals__ is not h.main_ns or not _holds_state(fn):
            return False
        h.tag(b"n")
        code = h.child("fresh")
        _function_code(code, fn)
        h.raw(code.digest())
    elif "<locals>" in fn.__qualname__ and _named(fn):
        h.tag(b"c")
        module = _by_name(h, fn)
        if h.reach is not None and is_local_module(module):
            _local_reads(fn, module, h.reach)
    else:
        return False
    h.shared.code = True
    _made_with(h, fn, path)
    return True


def _named(fn: types.FunctionType) -> bool:
    """Whether a function's module and qualified name tell its code: it was defined in
    a module loaded from its file (an installed package's, known by version; a local
    one's, by its source). Not one made by `exec` of generated source into a namespace
    of its own (sympy's `lambdify`, `namedtuple`'s methods, a dict a cell built): its
    name is the same for every expression it was made from, so it is hashed by its
    code, as a notebook function is."""
    g = fn.__globals__
    name = g.get("__name__")
    module = sys.modules.get(name) if isinstance(name, str) else None
    return (
        module is not None
        and getattr(module, "__dict__", None) is g
        and getattr(module, "__file__", None) is not None
    )


def _holds_state(fn: types.FunctionType) -> bool:
    return bool(fn.__defaults__ or fn.__kwdefaults__ or fn.__closure__ or fn.__dict__)


def _by_name(h: Hasher, obj: Any) -> str:
    """Write an imported function or class by its module and qualified name (its
    package's version goes into the key); returns the module's name."""
    module = getattr(obj, "__module__", None) or "builtins"
    h.text(f"{module}:{getattr(obj, '__qualname__', _name(obj))}")
    top = module.partition(".")[0]
    if top not in ("builtins", "__main__"):
        h.modules.add(top)
    return module


def _function(h: Hasher, fn: types.FunctionType) -> None:
    _function_code(h, fn)
    _made_with(h, fn, fn.__qualname__)


def _function_code(h: Hasher, fn: types.FunctionType) -> None:
    """A function's code, names and the globals it reads (when they are the notebook's,
    what it reads is told to `reach` instead): all of it but its state. A notebook
    function's, or one made from generated source."""
    h.tag(b"f")
    _code(h, fn.__code__)
    path = fn.__qualname__
    # (set beside the code by `functools.wraps`, or by a step: `f.__doc__ = ...`)
    h.value((fn.__name__, fn.__qualname__, fn.__doc__, fn.__module__), path)
    g = fn.__globals__
    reads = bytecode.scan(fn.__code__)
    if g is h.main_ns:  # its globals are inputs of the step: the key digests them
        if h.reach is not None:
            h.reach.notebook_function(fn.__qualname__, reads, defaults_of(fn))
        return
    for name in sorted(reads.names):
        if name in g and not is_own(g[name]):
            h.text(name)
            h.value(g[name], name)


def _made_with(h: Hasher, fn: types.FunctionType, path: str) -> None:
    """What a function holds beside its code: defaults, closure cells, attributes."""
    h.value(fn.__defaults__, f"{path}.__defaults__")
    h.value(fn.__kwdefaults__, f"{path}.__kwdefaults__")
    for i, cell in enumerate(fn.__closure__ or ()):
        try:
            contents = cell.cell_contents
        except ValueError:  # an empty cell: the closed-over name is not bound yet
            h.tag(b"0")
            continue
        h.value(contents, f"{path}.<closure {fn.__code__.co_freevars[i]}>")
    if fn.__dict__:  # attributes set on it (`f.cache = {}`) are its state, as a class's are
        h.tag(b"D")
        h.mapping(fn.__dict__, b"a", path, attributes=True, by_name=True)


def _local_reads(obj: Any, module: str, reach: Any) -> None:
    """Tell `reach` what a function (or the methods of a class) of a local module reads
    from the module's namespace."""
    if isinstance(obj, types.FunctionType):
        reach.module_function(module, bytecode.scan(obj.__code__), defaults_of(obj))
    elif isinstance(obj, type):
        for attr in vars(obj).values():
            if isinstance(attr, (staticmethod, classmethod)):
                attr = attr.__func__
            if isinstance(attr, types.FunctionType):
                reach.module_function(module, bytecode.scan(attr.__code__), defaults_of(attr))


def defaults_of(fn: types.FunctionType) -> tuple[Any, ...]:
    """A function's default values, positional and keyword-only."""
    return (*(fn.__defaults__ or ()), *(fn.__kwdefaults__ or {}).values())


def _class(h: Hasher, cls: type) -> None:
    h.tag(b"k")
    h.text(cls.__qualname__)
    for base in cls.__bases__:
        h.raw(h.callable(base))
    meta = type(cls)
    if meta is not type and is_notebook_defined(meta, h.main_ns):
        # a metaclass of the notebook's is the class's too (its `__call__` makes the
        # instances; what it keeps changes as they are made)
        h.tag(b"m")
        h.raw(h.callable(meta))
    # By name: the order of a class's attributes is not what it does (a class stored
    # and rebuilt may set its methods after its other attributes).
    for name, attr in sorted(cls.__dict__.items(), key=lambda kv: str(kv[0])):
        if name in _SKIP_CLASS_ATTRS:
            continue
        h.text(name)
        if isinstance(attr, (staticmethod, classmethod)):
            attr = attr.__func__
        if isinstance(attr, property):
            attr = (attr.fget, attr.fset, attr.fdel)
        h.value(attr, f"{cls.__qualname__}.{name}")


def _code(h: Hasher, code: types.CodeType) -> None:
    h.tag(b"K")
    h.raw(code.co_code)
    h.text(code.co_name)
    h.value(
        (
            code.co_argcount,
            code.co_posonlyargcount,
            code.co_kwonlyargcount,
            code.co_flags,
            code.co_names,
            code.co_varnames,
            code.co_freevars,
            code.co_cellvars,
        ),
        code.co_qualname if hasattr(code, "co_qualname") else code.co_name,
    )
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _code(h, const)
        else:
            h.value(const, "<const>")


def is_own(value: Any) -> bool:
    """The extension's own objects (the `step` helper) are never inputs."""
    return getattr(type(value), "_resumable_cells_own", False)


def _name(obj: Any) -> str:
    return getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) or repr(obj)


# -- the standard library's wrappers of functions ------------------------------------------
def h_lru_wrapper(h: Hasher, v: Any, path: str) -> None:
    """A `functools.lru_cache` (or `cache`) function: the function it wraps, by code,
    and the cache's parameters (its contents are results the function gives again)."""
    h.tag(b"L")
    h.value(tuple(sorted(v.cache_parameters().items())), path)
    h.raw(h.callable(v.__wrapped__))


def h_cached_property(h: Hasher, v: Any, path: str) -> None:
    """A `functools.cached_property`: its function and name (not its lock)."""
    h.tag(b"Q")
    h.value(v.attrname, path)
    h.raw(h.callable(v.func))
