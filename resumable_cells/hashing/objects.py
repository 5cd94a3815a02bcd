"""Objects without an encoding of their own: hashed by the parts pickle would store.

An object's reduction (`copyreg.dispatch_table`, else `__reduce_ex__(5)`: the callable
that rebuilds it, its arguments, its state, its items) is what survives a store/restore
round trip, so its digest is those parts, each hashed as a value by the caller's
`Hasher`: in the same memo (a member seen before is a reference to its first visit, a
cycle closes) and under the same budget, with the path of each member (`cfg.model.w`)
for the message when one cannot be hashed. An object that pickle refuses (a generator,
a lock, an open file) is unhashable at once: its internals are never walked.
"""

from __future__ import annotations

import copyreg
from typing import Any

from ..errors import Unhashable


def encode(h: Any, v: Any, t: type, path: str) -> None:
    """Hash object `v` of type `t` into hasher `h` by its reduction."""
    reducer = copyreg.dispatch_table.get(t)
    try:
        rv = reducer(v) if reducer is not None else v.__reduce_ex__(5)
    except Exception as e:
        raise Unhashable(path, f"{t.__name__} cannot be pickled ({e})") from None
    if isinstance(rv, str):  # a module-level object, stored by its name
        h.tag(b"G")
        module = getattr(v, "__module__", None) or getattr(t, "__module__", "?")
        h.text(f"{module}:{rv}")
        return
    if not isinstance(rv, tuple) or not 2 <= len(rv) <= 6:
        raise Unhashable(path, f"{t.__name__} has a reduction pickle cannot use")
    fn, args, state, listitems, dictitems = (*rv[:5], None, None, None)[:5]
    h.tag(b"R")
    h.value(fn, path)
    h.value(args, path)
    _state(h, state, path)
    if listitems is not None:
        h.value(list(listitems), path)
    if dictitems is not None:
        h.value(list(dictitems), path)


def _state(h: Any, state: Any, path: str) -> None:
    """An object's state; its attributes are named `path.attr` when one fails."""
    if type(state) is dict:
        h.mapping(state, b"d", path, attributes=True)
    elif type(state) is tuple and len(state) == 2 and type(state[1]) is dict:
        h.tag(b"2")  # (__dict__ or None, slots) of a class with __slots__
        _state(h, state[0], path)
        h.mapping(state[1], b"d", path, attributes=True)
    else:
        h.value(state, path)
