"""Value digests: xxh3_128 over a typed, length-prefixed canonical encoding.

A digest depends only on the value: not on the process, PYTHONHASHSEED, object
identity, or whether the value was deep-copied or restored from the store. Large buffers
are hashed in place through memoryviews, never copied whole.

Owns: `digest`, `register_hasher`, `Hasher` (the streaming encoder), and the tables
that route a type to its encoding. Functions and classes are hashed by code (`code`),
numpy and pandas objects by their data (`arrays`): the package plugs both in
(`hashing/__init__.py`), so that they import this module and this module imports neither.
"""

from __future__ import annotations

import io
import math
import pickle
import struct
import types
from collections.abc import Callable
from typing import Any

import xxhash

from ..errors import Unhashable
from .plain import all_atomic, flat_items
from .registry import CUSTOM, callable_digest, handler_for, register_hasher

__all__ = ["Hasher", "Unhashable", "digest", "register_hasher", "hex_digest"]

_PACK_Q = struct.Struct("<Q").pack


# The path elements of containers are hashed under (see Unhashable.rebased).
ELEMENT = Unhashable.ELEMENT


def digest(value: Any, *, name: str = "value", main_ns: dict | None = None) -> bytes:
    """The 16-byte digest of `value`. Raises `Unhashable` naming the failing path."""
    h = Hasher(main_ns)
    h.value(value, name)
    return h.digest()


def hex_digest(value: Any, *, name: str = "value", main_ns: dict | None = None) -> str:
    return digest(value, name=name, main_ns=main_ns).hex()


_ATOMIC_TYPES = {str, bytes, int, float, bool, type(None), complex}


class Hasher:
    """Streams the canonical encoding of values into one xxh3_128 state.

    `modules` collects the top-level modules whose types or functions were reached, so
    the key can include their versions. `main_ns` is the notebook namespace: functions
    and classes whose globals are that namespace are hashed by code.
    """

    def __init__(self, main_ns: dict | None = None):
        self._h = xxhash.xxh3_128()
        self.modules: set[str] = set()
        self.main_ns = main_ns
        self._active: dict[int, int] = {}  # id -> position, to encode cycles
        # Callables being hashed, shared with child states, so that recursion (f calls
        # g calls f) refers back by name instead of recursing forever.
        self.visiting: dict[int, bytes] = {}
        # What the functions reached read from their namespaces (`reach.Reached`), for
        # the key to take as inputs; None when nobody asks.
        self.reach: Any = None
        self._flat_pickler: pickle.Pickler | None = None

    def child(self) -> Hasher:
        """A fresh digest state that shares this one's context."""
        sub = Hasher(self.main_ns)
        sub.visiting = self.visiting
        sub.reach = self.reach
        return sub

    def digest(self) -> bytes:
        return self._h.digest()

    def value_digest(self, v: Any, path: str = "value") -> str:
        """Hash one value into this (fresh) state and return the hex digest."""
        self.value(v, path)
        return self._h.hexdigest()

    # -- primitives ---------------------------------------------------------------
    def tag(self, t: bytes) -> None:
        self._h.update(t)

    def raw(self, data) -> None:
        """Length-prefixed bytes or buffer (hashed in place)."""
        mv = memoryview(data)
        self._h.update(_PACK_Q(mv.nbytes))
        if mv.nbytes:
            self._h.update(mv if mv.contiguous else mv.tobytes())

    def raw_header(self, nbytes: int) -> None:
        """Start a length-prefixed run that `raw_part` fills piece by piece."""
        self._h.update(_PACK_Q(nbytes))

    def raw_part(self, data) -> None:
        self._h.update(data)

    def text(self, s: str) -> None:
        self.raw(s.encode("utf-8", "surrogatepass"))

    def integer(self, n: int) -> None:
        self.raw(n.to_bytes((n.bit_length() + 8) // 8 or 1, "little", signed=True))

    # -- values -------------------------------------------------------------------
    def value(self, v: Any, path: str) -> None:
        t = type(v)
        fast = _FAST.get(t)
        if fast is not None:
            fast(self, v)
            return
        if CUSTOM and (t in CUSTOM or any(isinstance(v, c) for c in CUSTOM)):
            self._custom(v, path)
            return
        oid = id(v)
        if oid in self._active:  # a cycle: refer back instead of recursing forever
            self.tag(b"@")
            self.integer(self._active[oid])
            return
        self._active[oid] = len(self._active)
        try:
            self._compound(v, t, path)
        finally:
            del self._active[oid]

    def _compound(self, v: Any, t: type, path: str) -> None:
        if t is list or t is tuple:
            self._sequence(v, t, path)
        elif t is dict:
            self._dict(v, path)
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
        value = self.value
        i = 0
        try:
            for i, item in enumerate(v):  # noqa: B007 (i names the failing element)
                value(item, ELEMENT)
        except Unhashable as e:
            raise e.rebased(f"{path}[{i}]") from None

    def _dict(self, v, path):
        self.tag(b"d")
        self.integer(len(v))
        if all_atomic(v) and flat_items(v.values()):
            self.flat(v)
            return
        value = self.value
        k = None
        try:
            for k, item in v.items():  # noqa: B007
                value(k, ELEMENT)
                value(item, ELEMENT)
        except Unhashable as e:
            raise e.rebased(f"{path}[{k!r}]") from None

    def flat(self, v) -> None:
        """Plain data (`flat_items`): one C-level pickle stream, memo off so that the
        bytes do not depend on whether equal strings are one object or two. A pickle
        stream is self-delimiting (it ends at STOP), so it needs no length prefix."""
        self.tag(b"P")
        p = self._flat_pickler
        if p is None:
            p = self._flat_pickler = pickle.Pickler(_UpdateSink(self._h), protocol=5)
            p.fast = True
        p.dump(v)

    def _set(self, v, t, path):
        # Canonical order: sorted element digests, so set iteration order (which depends
        # on PYTHONHASHSEED for strings) never reaches the digest.
        self.tag(b"s" if t is set else b"f")
        parts = sorted(self._part(x, f"{path}{{…}}") for x in v)
        self.integer(len(parts))
        for p in parts:
            self._h.update(p)

    def _part(self, v, path) -> bytes:
        sub = self.child()
        sub.value(v, path)
        self.modules |= sub.modules
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
        if isinstance(v, (types.FunctionType, type)) or t in _CALLABLE_TYPES:
            self.tag(b"F")
            self._h.update(callable_digest(v, self))
            return
        wrapped = wrapped_function(v)
        if wrapped is not None:  # it pickles by name only: it is the code it wraps
            self.tag(b"W")
            self.text(_qualname(t))
            self._h.update(callable_digest(wrapped, self))
            return
        if t is types.ModuleType:
            self.tag(b"M")
            self.text(v.__name__)
            self.modules.add(v.__name__.partition(".")[0])
            return
        self._note_module(t)
        self.tag(b"o")
        self.text(_qualname(t))
        if isinstance(t, type) and getattr(t, "__module__", None) == "__main__":
            self._h.update(callable_digest(t, self))  # a notebook class: by code
        self._pickled(v, path)

    def _pickled(self, v, path):
        sink = _HashSink(self)
        try:
            _DigestPickler(sink, self, path).dump(v)
        except Unhashable:
            raise
        except Exception as e:
            raise Unhashable(path, f"{type(v).__name__} cannot be pickled ({e})") from None

    def _note_module(self, t: type) -> None:
        mod = getattr(t, "__module__", None) or ""
        top = mod.partition(".")[0]
        if top and top not in ("builtins", "__main__"):
            self.modules.add(top)


class _UpdateSink:
    """A file-like sink whose `write` is the digest state's own `update` (no Python
    frame per write)."""

    __slots__ = ("write",)

    def __init__(self, h):
        self.write = h.update


class _HashSink(io.RawIOBase):
    def __init__(self, hasher: Hasher):
        self._h = hasher._h

    def writable(self) -> bool:
        return True

    def write(self, b) -> int:
        self._h.update(b)
        return len(b) if not isinstance(b, memoryview) else b.nbytes


class _DigestPickler(pickle.Pickler):
    """A deterministic pickle stream for arbitrary objects.

    Values with a canonical encoding of their own (sets, arrays, frames, notebook
    functions, modules) are replaced by their digest through `persistent_id`, so the
    stream never depends on set order or on how a function pickles by reference.
    """

    def __init__(self, sink, hasher: Hasher, path: str):
        super().__init__(sink, protocol=5, buffer_callback=self._buffer)
        self._hasher = hasher
        self._path = path
        self._depth = 0

    def _buffer(self, buf: pickle.PickleBuffer) -> bool:
        self._hasher.raw(buf.raw())
        return False  # out of band: hashed in place above, not copied into the stream

    def persistent_id(self, obj):
        t = type(obj)
        if t in _ATOMIC_TYPES or t is list or t is dict or t is tuple:
            return None
        if t is set or t is frozenset or handler_for(t) is not None or t is types.ModuleType:
            return self._sub_digest(obj)
        if isinstance(obj, (types.FunctionType, type)) or t in _CALLABLE_TYPES:
            return self._sub_digest(obj)
        if t in CUSTOM or wrapped_function(obj) is not None:
            return self._sub_digest(obj)
        self._hasher._note_module(t)
        return None

    def _sub_digest(self, obj) -> bytes:
        return self._hasher._part(obj, self._path)


def wrapped_function(v: Any) -> types.FunctionType | None:
    """The function a callable object wraps (`functools.lru_cache`, any object that
    `functools.update_wrapper` filled), read from its own dict so no `__getattr__` runs."""
    if not callable(v):
        return None
    d = getattr(v, "__dict__", None)
    wrapped = d.get("__wrapped__") if isinstance(d, dict) else None
    return wrapped if isinstance(wrapped, types.FunctionType) else None


def _qualname(t: type) -> str:
    return f"{getattr(t, '__module__', '?')}.{getattr(t, '__qualname__', t.__name__)}"


_CALLABLE_TYPES = {types.BuiltinFunctionType, types.MethodType, types.BuiltinMethodType}


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


def _h_int(h: Hasher, v: int) -> None:
    b = v.to_bytes((v.bit_length() + 8) // 8 or 1, "little", signed=True)
    h._h.update(_TAG_LEN(b"i", len(b)) + b)


def _h_bool(h: Hasher, v: bool) -> None:
    h._h.update(b"T" if v else b"B")


def _h_none(h: Hasher, v: None) -> None:
    h._h.update(b"N")


_PACK_FLOAT = struct.Struct("<cd").pack


def _h_float(h: Hasher, v: float) -> None:
    # All NaNs are one value for our purposes; -0.0 stays distinct from 0.0.
    h._h.update(_PACK_FLOAT(b"r", math.nan if v != v else v))


def _h_complex(h: Hasher, v: complex) -> None:
    h.tag(b"x")
    h._h.update(struct.pack("<dd", v.real, v.imag))


_FAST: dict[type, Callable[[Hasher, Any], None]] = {
    str: _h_str,
    bytes: _h_bytes,
    bytearray: _h_bytes,
    int: _h_int,
    bool: _h_bool,
    type(None): _h_none,
    float: _h_float,
    complex: _h_complex,
}
