"""Objects without an encoding of their own: hashed by the parts pickle would store.

An object's reduction (`copyreg.dispatch_table`, else `__reduce_ex__(5)`: the callable
that rebuilds it, its arguments, its state, its items) is what survives a store/restore
round trip, so its digest is those parts, each hashed as a value by the caller's
`Hasher`: in the same memo (a member seen before is a reference to its first visit, a
cycle closes) and under the same budget, with the path of each member (`cfg.model.w`)
for the message when one cannot be hashed. A weak reference is its referent. An object that pickle refuses (a generator,
a lock, an open file) is unhashable at once: its internals are never walked.
"""

from __future__ import annotations

import copyreg
import gc
import re
import struct
import sys
import types
import weakref
from collections.abc import Sequence
from operator import attrgetter
from typing import Any

from ..errors import Unhashable
from .plain import flat_states


def encode(h: Any, v: Any, t: type, path: str) -> None:
    """Hash object `v` of type `t` into hasher `h` by its reduction."""
    if plain_class(t):  # reduces to (copyreg.__newobj__, (t,), its __dict__): only the state varies
        # (and unpickling updates a fresh __dict__ from it, in the same order)
        h.tag(b"N")
        h.mapping(v.__dict__, b"d", path, attributes=True)
        return
    if t is weakref.ReferenceType:
        _weak(h, v, path)
        return
    reducer = copyreg.dispatch_table.get(t)
    try:
        rv = reducer(v) if reducer is not None else v.__reduce_ex__(5)
    except Exception as e:
        raise Unhashable(path, f"{t.__name__} cannot be pickled ({e})") from None
    if isinstance(rv, str):  # a module-level object, stored by its name
        h.tag(b"G")
        module = _module_of(v, t, rv, path)
        h.modules.add(module.partition(".")[0])
        h.text(f"{module}:{rv}")
        return
    if not isinstance(rv, tuple) or not 2 <= len(rv) <= 6:
        raise Unhashable(path, f"{t.__name__} has a reduction pickle cannot use")
    fn, args, state, listitems, dictitems = (*rv[:5], None, None, None)[:5]
    if fn is iter and _remaining(h, args, state, path):
        return
    h.tag(b"R")
    h.value(fn, path)
    h.value(args, path)
    _state(h, state, path)
    if listitems is not None:
        h.value(list(listitems), path)
    if dictitems is not None:
        h.value(list(dictitems), path)


def _module_of(v: Any, t: type, name: str, path: str) -> str:
    """The module whose attribute `name` is `v`, as pickle finds it (its own module, or
    whichever module holds it). Raises Unhashable when none does: a ufunc that
    `numpy.frompyfunc` made is named after its function (`<lambda> (vectorized)`), a
    name that is all two of them share and that pickle refuses too."""
    known = _FOUND.get(id(v))
    if known is not None and known[0] is v:
        return known[1]
    module = getattr(v, "__module__", None) or getattr(t, "__module__", None)
    if not isinstance(module, str) or not _finds(module, name, v):
        # (every loaded module, as pickle looks: only when its own does not hold it)
        module = next((m for m in list(sys.modules) if _finds(m, name, v)), None)
        if module is None:
            raise Unhashable(
                path,
                f"{t.__name__} {name!r} is known by its name alone, and no module holds it "
                "under that name (made at run time: numpy.frompyfunc's ufuncs are named "
                "after their function), so its name does not tell what it is",
            )
    if len(_FOUND) < 65536:
        _FOUND[id(v)] = (v, module)
    return module


def _finds(module: str, name: str, v: Any) -> bool:
    """Whether module `module` holds `v` as `name` (dotted: a class's attribute). By the
    module's namespace itself: its `__getattr__` may import, warn or raise."""
    first, _, rest = name.partition(".")
    found = getattr(sys.modules.get(module), "__dict__", {}).get(first)
    for part in rest.split(".") if rest else ():
        found = vars(found).get(part) if hasattr(found, "__dict__") else None
    return found is v


# Objects found by their names (id -> (the object, its module)): a module's objects live
# as long as it does, so keeping them costs nothing.
_FOUND: dict[int, tuple[Any, str]] = {}


# A dict's views, each of the one dict it shows (a change to the dict shows in them):
# type -> the tag of its digest.
DICT_VIEWS: dict[type, bytes] = {type({}.keys()): b"k", type({}.values()): b"v", type({}.items()): b"i"}  # fmt: skip
VIEW_TYPES = frozenset({*DICT_VIEWS, types.MappingProxyType})


def viewed(view: Any) -> dict[Any, Any] | None:
    """The dict a view (a dict's keys, values or items; a mapping proxy) shows: the view's
    one referent. None when that is not a dict (a proxy over another mapping)."""
    referents = gc.get_referents(view)
    mapping = referents[0] if len(referents) == 1 else None
    return mapping if isinstance(mapping, dict) else None


def match_parts(m: re.Match[Any]) -> tuple[Any, ...]:
    """What a regex match is: its pattern, the string and bounds it searched, and where
    it matched (each group's span)."""
    return (m.re, m.string, m.pos, m.endpos, m.regs)


def _weak(h: Any, v: weakref.ref, path: str) -> None:
    """A weak reference is its referent (in the memo: a reference back to an object seen
    before, `tree.me` to `tree`), or dead. One with a callback is refused: the callback
    cannot be stored with it (`storage/serialize.py` stores the others)."""
    if v.__callback__ is not None:
        raise Unhashable(path, "a weak reference with a callback cannot be pickled")
    referent = v()
    h.tag(b"W" if referent is not None else b"w")
    if referent is not None:
        h.value(referent, path)


def _remaining(h: Any, args: Any, state: Any, path: str) -> bool:
    """A builtin iterator over a sequence (`iter(seq)`, positioned at `state`) is the
    items it has left: an exhausted one reduces to `iter(())` and comes back from a
    pickle as `iter(())` at position 0, which is the same iterator."""
    if not (type(args) is tuple and len(args) == 1 and (state is None or type(state) is int)):
        return False
    try:
        left = args[0][state or 0 :]
    except TypeError:
        return False
    h.tag(b"I")
    h.value(left, path)
    return True


def _state(h: Any, state: Any, path: str) -> None:
    """An object's state; its attributes are named `path.attr` when one fails."""
    if type(state) is dict:
        h.mapping(state, b"d", path, attributes=True, by_name=True)
    elif type(state) is tuple and len(state) == 2 and type(state[1]) is dict:
        h.tag(b"2")  # (__dict__ or None, slots) of a class with __slots__
        _state(h, state[0], path)
        h.mapping(state[1], b"d", path, attributes=True, by_name=True)
    else:
        h.value(state, path)


def plain_class(t: type) -> bool:
    """Whether instances of `t` pickle as their class and their __dict__, nothing else."""
    plain = _PLAIN.get(t)
    if plain is None:
        plain = _PLAIN[t] = _default_reduction(t)
    return plain


_PLAIN: dict[type, bool] = {}
_STATE = attrgetter("__dict__")


def flat_records(items: Sequence[Any]) -> list[dict[str, Any]] | None:
    """The attribute dicts of `items` when all are instances of one plain class
    (`plain_class`) holding plain data only (`plain.flat_states`), in their order; else
    None. A list of records is told plain by one pass over all of them."""
    kinds = set(map(type, items))
    if len(kinds) != 1:
        return None
    (t,) = kinds
    if not plain_class(t):  # (before reading __dict__: a partial makes one when asked)
        return None
    states = list(map(_STATE, items))
    return states if flat_states(states) else None


_HEAPTYPE = 1 << 9
_OBJECT_GETSTATE = getattr(object, "__getstate__", None)


def _default_reduction(t: type) -> bool:
    """Whether instances of `t` pickle by object's own reduction from their __dict__:
    classes written in Python, without __slots__, builtin bases or pickling hooks."""
    mro = getattr(t, "__mro__", ())
    if not mro or t in copyreg.dispatch_table:
        return False
    for base in mro[:-1]:
        own = vars(base)
        if not base.__flags__ & _HEAPTYPE or "__slots__" in own:
            return False
        if any(k in own for k in _HOOKS):
            return False
    return getattr(t, "__getstate__", None) is _OBJECT_GETSTATE and t.__dictoffset__ != 0


_HOOKS = ("__reduce_ex__", "__reduce__", "__getstate__", "__getnewargs_ex__", "__getnewargs__")


_HEADERS: dict[type, tuple[bytes, str, bool]] = {}


def header(t: type) -> tuple[bytes, str, bool]:
    """An object's tag and qualified class name, its package (for the key's versions)
    and whether its class is the notebook's: once per type."""
    found = _HEADERS.get(t)
    if found is None:
        name = f"{getattr(t, '__module__', '?')}.{getattr(t, '__qualname__', t.__name__)}".encode(
            "utf-8", "surrogatepass"
        )
        module = getattr(t, "__module__", None)
        top = module.partition(".")[0] if isinstance(module, str) else ""
        found = (b"o" + struct.pack("<Q", len(name)) + name,
                 "" if top in ("", "builtins", "__main__") else top,
                 top == "__main__")  # fmt: skip
        if len(_HEADERS) < 65536:
            _HEADERS[t] = found
    return found


def made_at_run_time(cls: type) -> bool:
    """Whether a class defined in Python is not found again by its module and qualified
    name: one a function made at run time (sympy's `Function('f')`, whose module is
    None and whose name is all two such classes with other assumptions share). It is
    hashed by what its library pickles it as when the library says (sympy does), else
    by what it holds, as a notebook class is (`code.callable_digest`), and so are its
    instances' classes."""
    made = _MADE.get(cls)
    if made is None:
        module = getattr(cls, "__module__", None)
        made = bool(cls.__flags__ & _HEAP_TYPE) and not (  # (a class of C: its name tells it)
            isinstance(module, str) and _finds(module, cls.__qualname__, cls)
        )
        if len(_MADE) < 65536:
            _MADE[cls] = made
    return made


_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class defined by a class statement or type()
_MADE: dict[type, bool] = {}
