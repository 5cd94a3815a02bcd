"""Value digests: xxh3_128 over a typed, length-prefixed canonical encoding.

A digest depends only on the value: not on the process, PYTHONHASHSEED, or whether the
value was deep-copied or restored from the store. Large buffers are hashed in place
through memoryviews, never copied whole.

Bounded: one digest walks each object once. The memo maps every object already hashed
to the order of its first visit, and a second visit (a shared member, a cycle) writes a
reference to that order instead of the object again (but for values that cannot be
changed, tuples and objects whose class compares and hashes by value, which are written
out wherever they occur: whether two equal ones are one object is no part of a value); the memo keeps the objects alive,
so an id is never reused while the digest runs. A budget of time and bytes (`budget`)
makes a value past it unhashable instead of hanging. Objects that are not data (figures
and artists) have a handler of their own (`opaque`) and are never walked.

Owns: `digest`, `register_hasher`, `Hasher` (the streaming encoder), `ReadAs` (one
that digests some objects as others stand in for them), and the tables
that route a type to its encoding. Functions and classes are hashed by code (`code`),
numpy and pandas objects by their data (`arrays`), other objects by the parts pickle
would store (`objects`): the package plugs `code` and `arrays` in (`hashing/__init__.py`),
so that they import this module and this module imports neither.
"""

from __future__ import annotations

import math
import pickle
import re
import struct
import types
from collections.abc import Callable
from itertools import repeat
from typing import Any

import xxhash

from ..errors import Unhashable
from . import objects
from .memo import Memo, Shared
from .plain import all_atomic, flat_items
from .registry import (
    CUSTOM,
    PROCESS_TYPES,
    WHOLE,
    callable_digest,
    handler_for,
    process_token,
    register_hasher,
    with_state,
)

__all__ = ["Hasher", "ReadAs", "Unhashable", "digest", "register_hasher", "hex_digest"]

_PACK_Q = struct.Struct("<Q").pack
_FLAT = b"P"  # the tag of plain data written as one pickle stream (`Hasher.flat`)


def _integer_bytes(n: int) -> bytes:
    """An integer as `Hasher.integer` writes it: length-prefixed, little-endian."""
    b = n.to_bytes((n.bit_length() + 8) // 8 or 1, "little", signed=True)
    return _PACK_Q(len(b)) + b


# The path elements of containers are hashed under (see Unhashable.rebased).
ELEMENT = Unhashable.ELEMENT


def digest(value: Any, *, name: str = "value", main_ns: dict | None = None) -> bytes:
    """The 16-byte digest of `value`. Raises `Unhashable` naming the failing path."""
    h = Hasher(main_ns)
    h.value_digest(value, name)
    return h.digest()


def hex_digest(value: Any, *, name: str = "value", main_ns: dict | None = None) -> str:
    return digest(value, name=name, main_ns=main_ns).hex()


class Hasher:
    """Streams the canonical encoding of values into one xxh3_128 state.

    `modules` collects the top-level modules whose types or functions were reached, so
    the key can include their versions. `main_ns` is the notebook namespace: functions
    and classes whose globals are that namespace are hashed by code.
    """

    def __init__(self, main_ns: dict | None = None, *, _shared=None, _memo=None):
        self._h = xxhash.xxh3_128()
        self.shared = _shared or Shared(main_ns)
        self.memo = _memo or Memo()
        self._flat_pickler: pickle.Pickler | None = None

    @property
    def main_ns(self) -> dict | None:
        return self.shared.main_ns

    @property
    def modules(self) -> set[str]:
        return self.shared.modules

    @property
    def visiting(self) -> dict[int, bytes]:
        return self.shared.visiting

    @property
    def reach(self) -> Any:
        """What reached functions read (`reach.Reached`, shared by the digest's states)."""
        return self.shared.reach

    @reach.setter
    def reach(self, value: Any) -> None:
        self.shared.reach = value

    def child(self, memo: str = "shared") -> Hasher:
        """Another digest state of this digest: `memo` "shared" (a part of the value,
        whose shared members refer to the same first visits), "chained" (a set
        element) or "fresh" (a function's digest, the same wherever it is reached)."""
        if memo == "shared":
            m = self.memo
        elif memo == "chained":
            m = Memo(self.memo)
        else:
            m = Memo()
        # (its own class: a `ReadAs` digest reads its stand-ins in every part of it)
        return type(self)(_shared=self.shared, _memo=m)

    def digest(self) -> bytes:
        return self._h.digest()

    def state(self) -> Any:
        """A copy of the digest state: what has been hashed so far."""
        return self._h.copy()

    def value_digest(self, v: Any, path: str = "value") -> str:
        """Hash one value into this (fresh) state and return the hex digest."""
        try:
            self.whole(v, path)
        except RecursionError:
            raise Unhashable(path, "it is nested too deeply to hash") from None
        return self._h.hexdigest()

    def whole(self, v: Any, path: str) -> None:
        """Hash `v` as the whole of this fresh state: the same digest as `value`, which
        a type with a whole-value shortcut (a large array unwritten since its last
        digest, `unwritten`) may give without reading its bytes."""
        shortcut = WHOLE.get(type(v))
        if shortcut is None and handler_for(type(v)) is not None:
            # (the first value of a library registers its handlers and shortcuts)
            shortcut = WHOLE.get(type(v))
        if shortcut is not None:
            state = shortcut(self, v, path)
            if state is not None:
                self._h = state
                return
        self.value(v, path)

    # -- primitives ---------------------------------------------------------------------
    def tag(self, t: bytes) -> None:
        self._h.update(t)

    def raw(self, data, path: str = "value") -> None:
        """Length-prefixed bytes or buffer (hashed in place)."""
        mv = memoryview(data)
        n = mv.nbytes
        self._h.update(_PACK_Q(n))
        if n:
            if n > 4096:
                self.shared.meter.spend(n, path)
            self._h.update(mv if mv.contiguous else mv.tobytes())

    def spend(self, nbytes: int, path: str) -> None:
        """Count `nbytes` read against the budget (raises Unhashable past it)."""
        self.shared.meter.spend(nbytes, path)

    def raw_header(self, nbytes: int, path: str = "value") -> None:
        """Start a length-prefixed run that `raw_part` fills piece by piece."""
        self.shared.meter.spend(nbytes, path)
        self._h.update(_PACK_Q(nbytes))

    def raw_part(self, data) -> None:
        self._h.update(data)

    def text(self, s: str) -> None:
        b = s.encode("utf-8", "surrogatepass")
        if len(b) > 4096:
            self.raw(b)
        else:
            self._h.update(_PACK_Q(len(b)) + b)

    def integer(self, n: int) -> None:
        self._h.update(_integer_bytes(n))

    def note_module(self, t: type) -> None:
        """`t`'s package is reached: its version goes into the key."""
        mod = getattr(t, "__module__", None) or ""
        top = mod.partition(".")[0] if isinstance(mod, str) else ""
        if top and top not in ("builtins", "__main__"):
            self.shared.modules.add(top)

    # -- values -------------------------------------------------------------------------
    def value(self, v: Any, path: str) -> None:
        t = type(v)
        fast = _FAST.get(t)
        if fast is not None:
            fast(self, v)
            return
        if CUSTOM and (t in CUSTOM or any(isinstance(v, c) for c in CUSTOM)):
            self._custom(v, path)
            return
        self.shared.meter.tick(path)
        if t is tuple or t is frozenset:
            # Values, never in a cycle of their own (a cycle runs through a mutable part,
            # which is remembered): not remembered, so that whether two equal ones are
            # one object (a constant, a cached empty one) or two never reaches the digest.
            self._compound(v, t, path)
            return
        if _is_value_type(t) and id(v) not in self.shared.inline:
            # Likewise objects compared by value (sympy's cached `x`, dates, units), which
            # a pickle round trip may share otherwise; one reached from itself (through
            # its own state) is a cycle, remembered as any object.
            self.shared.inline.add(id(v))
            try:
                self._compound(v, t, path)
            finally:
                self.shared.inline.discard(id(v))
            return
        memo = self.memo
        first = memo.seen.get(id(v))
        first = first[0] if first is not None else memo.find(id(v)) if memo.parent else None
        if first is not None:  # visited before: a shared member or a cycle
            self._h.update(b"@")
            self.integer(first)
            return
        memo.seen[id(v)] = (memo.count(), v)
        prefix = self.shared.plain.get(t)
        if prefix is not None:  # (what `_object` and `objects.encode` wrote for the first)
            self._h.update(prefix)
            self.mapping_body(v.__dict__, path, attributes=True)
            return
        self._compound(v, t, path)

    def _compound(self, v: Any, t: type, path: str) -> None:
        if t is list or t is tuple:
            self._sequence(v, t, path)
        elif t is dict:
            self.mapping(v, b"d", path)
        elif t is set or t is frozenset:
            self._set(v, t, path)
        else:
            handler = handler_for(t)
            if handler is not None:
                handler(self, v, path)
            else:
                self._object(v, t, path)

    def _sequence(self, v, t, path):
        self.tag(b"l" if t is list else b"t")
        self.integer(len(v))
        if flat_items(v):
            self.flat(v)
            return
        if len(v) > 1 and self._records(v, path):
            return
        value = self.value
        i = 0
        try:
            for i, item in enumerate(v):  # noqa: B007 (i names the failing element)
                value(item, ELEMENT)
        except Unhashable as e:
            raise e.rebased(f"{path}[{i}]") from None

    def _records(self, v: Any, path: str) -> bool:
        """Instances of one plain class holding plain data (a list of dataclass records),
        each written as `value` writes it: the first by `value`, which encodes the class;
        the others as its state alone, without asking of each object what the whole list
        answered once (`objects.flat_records`). False, having written nothing, for any
        other list, and where one of them was met before (a reference is written then)."""
        t = type(v[0])
        if CUSTOM or t in _FAST or _is_value_type(t):
            return False
        memo = self.memo
        ids = list(map(id, v))
        if memo.parent is not None or len(set(ids)) != len(ids):
            return False
        if any(map(memo.seen.__contains__, ids)):
            return False
        states = objects.flat_records(v)
        if states is None:
            return False
        i = 0
        try:
            self.value(v[0], ELEMENT)
            prefix = self.shared.plain.get(t)
            if prefix is None:  # (a class `_object` does not write as plain: each by `value`)
                for i in range(1, len(v)):  # noqa: B007 (i names the failing element)
                    self.value(v[i], ELEMENT)
                return True
            # What `value`, `mapping_body` and `flat` write for each, in two calls:
            # the class, the state's length and the tag, then the state's pickle.
            heads: dict[int, bytes] = {}
            seen, tick, update, dump = (
                memo.seen,
                self.shared.meter.tick,
                self._h.update,
                self._flat_dump(),
            )
            for i in range(1, len(v)):
                tick(ELEMENT)
                seen[ids[i]] = (memo.count(), v[i])
                n = len(states[i])
                head = heads.get(n)
                if head is None:
                    head = heads[n] = prefix + _integer_bytes(n) + _FLAT
                update(head)
                dump(states[i])
        except Unhashable as e:
            raise e.rebased(f"{path}[{i}]") from None
        return True

    def mapping(self, v, tag: bytes, path: str, attributes: bool = False, by_name=False) -> None:
        """A dict (or a mapping proxy) in its order. `attributes`: an object's state,
        a failing member is `path.k`; `by_name`: in the order of its keys (the order
        attributes were set in is not the value, and a restore may set them in
        another)."""
        self.tag(tag)
        self.mapping_body(v, path, attributes, by_name)

    def mapping_body(self, v, path: str, attributes: bool = False, by_name=False) -> None:
        """`mapping` after its tag."""
        self.integer(len(v))
        if by_name and all(type(k) is str for k in v):
            v = dict(sorted(v.items()))
        if all_atomic(v) and flat_items(v.values()):
            self.flat(v if type(v) is dict else dict(v))
            return
        value = self.value
        k = None
        try:
            for k, item in v.items():  # noqa: B007
                value(k, ELEMENT)
                value(item, ELEMENT)
        except Unhashable as e:
            where = f".{k}" if attributes and isinstance(k, str) else f"[{k!r}]"
            raise e.rebased(path + where) from None

    def flat(self, v) -> None:
        """Plain data (`flat_items`): one C-level pickle stream, memo off so that the
        bytes do not depend on whether equal strings are one object or two. A pickle
        stream is self-delimiting (it ends at STOP), so it needs no length prefix."""
        self.tag(_FLAT)
        self._flat_dump()(v)

    def _flat_dump(self) -> Callable[[Any], None]:
        p = self._flat_pickler
        if p is None:
            p = self._flat_pickler = pickle.Pickler(_UpdateSink(self._h), protocol=5)
            p.fast = True
        return p.dump

    def _set(self, v, t, path):
        # Canonical order: sorted element digests, so set iteration order (which depends
        # on PYTHONHASHSEED for strings) never reaches the digest.
        self.tag(b"s" if t is set else b"f")
        kinds = set(map(type, v))
        if kinds <= _ELEMENT_TYPES:  # (a vocabulary: no Hasher per word)
            parts = sorted(map(_element_digest, v)) if len(kinds) > 1 else _same_kind(v, kinds)
        else:
            parts = sorted(self.part(x, f"{path}{{…}}", "chained") for x in v)
        self.integer(len(parts))
        for p in parts:
            self._h.update(p)

    def part(self, v, path, memo: str = "shared") -> bytes:
        """The 16-byte digest of `v` hashed in a child state (see `child`)."""
        sub = self.child(memo)
        sub.value(v, path)
        return sub.digest()

    def _custom(self, v, path):
        fn = CUSTOM.get(type(v)) or next(f for c, f in CUSTOM.items() if isinstance(v, c))
        self.tag(b"c")
        self.text(_qualname(type(v)))
        try:
            stand_in = fn(v)
        except Exception as e:
            raise Unhashable(path, f"registered hasher failed: {e!r}") from None
        self.value(stand_in, path)

    def _object(self, v, t, path):
        token = process_token(v) if t in PROCESS_TYPES else None
        if token is not None:  # (the shell a notebook binds: its token, never its state)
            self.tag(b"g")
            self.text(token)
            return
        if t is types.MethodType:  # the function by code, its object like any member
            self.tag(b"m")
            self._h.update(self.callable(v.__func__))
            self.value(v.__self__, f"{path}.__self__")
            return
        if (t is types.FunctionType or isinstance(v, type)) and with_state(v, self, path):
            return
        if isinstance(v, (types.FunctionType, type)) or _named_builtin(v, t):
            self.tag(b"F")
            self._h.update(self.callable(v))
            return
        if t is types.ModuleType:
            self.tag(b"M")
            self.text(v.__name__)
            self.shared.modules.add(v.__name__.partition(".")[0])
            return
        if t is types.MappingProxyType:
            self.mapping(v, b"p", path)
            return
        view = objects.DICT_VIEWS.get(t)
        if view is not None:  # the dict it shows, in the memo: `d` and `d.keys()` share it
            self.tag(b"V" + view)
            self.value(objects.viewed(v), path)
            return
        if t is re.Match:  # (pickle refuses one; it is its pattern, string and spans)
            self.tag(b"r")
            self.value(objects.match_parts(v), path)
            return
        header, top, notebook = objects.header(t)
        if top:
            self.shared.modules.add(top)
        self._h.update(header)
        made = not notebook and objects.made_at_run_time(t)
        if notebook:
            self._h.update(self.callable(t))  # a notebook class: by code
        elif made:
            self.value(t, path)  # its class, walked in this digest (its name tells nothing)
        objects.encode(self, v, t, path)
        if made:  # (its class is a reference into this digest's memo: no shared prefix)
            return
        if objects.plain_class(t) and (not notebook or id(t) in self.shared.callables):
            # (`objects.encode` wrote b"Nd" before the __dict__: see `mapping_body`)
            self.shared.plain[t] = header + (self.callable(t) if notebook else b"") + b"Nd"

    def callable(self, obj: Any) -> bytes:
        """The digest of a function or class (`code`), computed once per digest."""
        cached = self.shared.callables.get(id(obj))
        if cached is not None:
            return cached[0]
        self.shared.code = True
        d = callable_digest(obj, self)
        if id(obj) not in self.shared.visiting:  # not a reference back into a recursion
            self.shared.callables[id(obj)] = (d, obj)
        return d


class ReadAs(Hasher):
    """A digest that reads some objects as others: wherever it reaches an object of
    `stand_ins` (by id), it digests the object standing in for it instead, and every
    holder of the one refers to the same first visit of the other. What a value would
    be once those objects are given the stand-ins' state (a unit's copy, whose
    references to the inputs' objects lead to the live ones, digested as a hit leaves
    it: `engine/keep/unit_check.py`). Its own class, so that the plain digest's every
    visit stays one lookup shorter.

    A stand-in must be an object of its own (no value reaches it otherwise), of the
    type of the object it stands for; the caller keeps both alive. Plain data (`flat`)
    is written out without visiting its containers: where an object holds atoms only,
    its stand-in must hold the same (a state copied from it does)."""

    def __init__(
        self,
        main_ns: dict | None = None,
        stand_ins: dict[int, Any] | None = None,
        *,
        _shared=None,
        _memo=None,
    ):
        super().__init__(main_ns, _shared=_shared, _memo=_memo)
        if stand_ins is not None:
            self.shared.stand_ins = stand_ins

    def value(self, v: Any, path: str) -> None:
        super().value(self.shared.stand_ins.get(id(v), v), path)


_VALUE_TYPES: dict[type, bool] = {}
_NOT_VALUES = frozenset({list, dict, set, bytearray, types.FunctionType, types.MethodType, type})


def _is_value_type(t: type) -> bool:
    """Whether `t`'s objects compare and hash by value (their class defines both `__eq__`
    and `__hash__`): immutable values, whose identity a mutation cannot show."""
    known = _VALUE_TYPES.get(t)
    if known is None:
        eq, hashed = getattr(t, "__eq__", None), getattr(t, "__hash__", None)
        known = (
            t not in _NOT_VALUES
            and not issubclass(t, (type, types.ModuleType))
            and hashed is not None
            and hashed is not object.__hash__
            and eq is not object.__eq__
        )
        _VALUE_TYPES[t] = known
    return known


def _named_builtin(v: Any, t: type) -> bool:
    """A module's builtin function (`len`), not an object's builtin method (`lst.append`,
    which is its object and a name: `objects`)."""
    return t is types.BuiltinFunctionType and (
        v.__self__ is None or type(v.__self__) is types.ModuleType
    )


class _UpdateSink:
    """A file-like sink whose `write` is the digest state's own `update` (no Python
    frame per write)."""

    __slots__ = ("write",)

    def __init__(self, h):
        self.write = h.update


def _qualname(t: type) -> str:
    return f"{getattr(t, '__module__', '?')}.{getattr(t, '__qualname__', t.__name__)}"


# -- fast paths for exact builtin types ----------------------------------------------
# Each writes its tag, then a length-prefixed body, in as few `update` calls as it can
# (the bytes are what `tag` + `raw` would write).
_TAG_LEN = struct.Struct("<cQ").pack


def _h_str(h: Hasher, v: str) -> None:
    b = v.encode("utf-8", "surrogatepass")
    u = h._h.update
    u(_TAG_LEN(b"u", len(b)))
    u(b)


def _h_bytes(h: Hasher, v) -> None:
    h.tag(b"b")
    h.raw(v)


def _h_pickle_buffer(h: Hasher, v: pickle.PickleBuffer) -> None:
    h.tag(b"b")  # the bytes pickle would carry out of band
    h.raw(v.raw())


def _int_encoding(v: int) -> bytes:
    b = v.to_bytes((v.bit_length() + 8) // 8 or 1, "little", signed=True)
    return _TAG_LEN(b"i", len(b)) + b


def _h_int(h: Hasher, v: int) -> None:
    h._h.update(_int_encoding(v))


def _h_bool(h: Hasher, v: bool) -> None:
    h._h.update(b"T" if v else b"B")


def _h_none(h: Hasher, v: None) -> None:
    h._h.update(b"N")


_PACK_FLOAT = struct.Struct("<cd").pack


def _float_encoding(v: float) -> bytes:
    # All NaNs are one value for our purposes; -0.0 stays distinct from 0.0.
    return _PACK_FLOAT(b"r", math.nan if v != v else v)


def _h_float(h: Hasher, v: float) -> None:
    h._h.update(_float_encoding(v))


def _h_complex(h: Hasher, v: complex) -> None:
    h.tag(b"x")
    h._h.update(struct.pack("<dd", v.real, v.imag))


def _str_digest(v: str) -> bytes:
    b = v.encode("utf-8", "surrogatepass")
    return _XXH(_TAG_LEN(b"u", len(b)) + b)  # (what `_h_str` writes, in one piece)


# The digest `Hasher.part` gives an element of these types (what its `_FAST` writer
# writes, hashed alone), made without a Hasher: a set's elements are digested one by
# one, and a vocabulary holds a million of them.
_XXH = xxhash.xxh3_128_digest
_ELEMENT_DIGESTS: dict[type, Callable[[Any], bytes]] = {
    str: _str_digest,
    int: lambda v: _XXH(_int_encoding(v)),
    float: lambda v: _XXH(_float_encoding(v)),
    bool: lambda v: _XXH(b"T" if v else b"B"),
    type(None): lambda v: _XXH(b"N"),
}
_ELEMENT_TYPES = frozenset(_ELEMENT_DIGESTS)


def _element_digest(v: Any) -> bytes:
    return _ELEMENT_DIGESTS[type(v)](v)


def _same_kind(v: set | frozenset, kinds: set[type]) -> list[bytes]:
    """The sorted element digests of a set whose elements are all of one type of
    `_ELEMENT_DIGESTS` (or none); strings in passes at C speed."""
    if kinds != {str}:
        return sorted(map(_ELEMENT_DIGESTS[next(iter(kinds))], v)) if kinds else []
    # (`_str_digest` in passes over all of them)
    encoded = list(map(str.encode, v, repeat("utf-8"), repeat("surrogatepass")))
    framed = map(bytes.__add__, map(_TAG_LEN, repeat(b"u"), map(len, encoded)), encoded)
    return sorted(map(_XXH, framed))


_FAST: dict[type, Callable[[Hasher, Any], None]] = {
    str: _h_str,
    bytes: _h_bytes,
    bytearray: _h_bytes,
    pickle.PickleBuffer: _h_pickle_buffer,
    int: _h_int,
    bool: _h_bool,
    type(None): _h_none,
    float: _h_float,
    complex: _h_complex,
}
