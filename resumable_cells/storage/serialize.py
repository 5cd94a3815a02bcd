"""Pickling of bound values, protocol 5 with out-of-band buffers.

Plain pickle stores notebook functions by reference (`__main__.f`), which a new kernel
cannot resolve, and refuses lambdas and modules. Here notebook functions are stored by
code (marshal; the Python version is part of every key) and rebuilt against the
notebook namespace; their closure cells are stored as cells, so that functions closing
over one variable still share it when they are stored together. Modules are stored by
name and imported again on restore. A weak reference is stored with its referent (a
restored one whose referent nothing else holds dies: the round-trip check then sees a
dead reference where a live one was, and the value is not cached). Object arrays of strings (pandas string and object
columns) travel as one joined UTF-8 buffer out of band instead of one pickled string at
a time. A caller may write some objects as persistent ids (`persistent_id`) and give
them back when loading (`persistent_load`): the engine does so for objects a step's
entry refers to rather than stores (`engine/units/stream.py`).

A buffer smaller than `IN_BAND_MAX` is copied into the main stream rather than kept out
of band: a figure holds thousands of arrays of a few dozen bytes (its transforms, paths
and images), and each buffer out of band is a part of its own in the blob (a header
entry, an aligned start, a read on restore). A 64-image figure: 7,946 buffers, 32 bytes
the median; pickling it went from 283 to 130 ms. Protocol 5 writes a writable buffer in
band as a bytearray and a read-only one as bytes, so an array comes back as writable as
it went.
"""

from __future__ import annotations

import builtins
import enum
import functools
import importlib
import io
import logging
import marshal
import pickle
import re
import sys
import types
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ..errors import ResumableCellsError, Unstorable
from ..hashing import opaque
from ..hashing.objects import DICT_VIEWS
from ..hashing.registry import PROCESS_TYPES, process_object, process_token
from . import decorated

log = logging.getLogger(__name__)

IN_BAND_MAX = 16 << 10  # bytes: a smaller buffer is copied into the main stream
_MAIN_NS: dict[str, Any] = {}
# Objects pickled as the attribute of an installed module they are (id -> (the object,
# module, attribute)), while `importing` is in force.
_IMPORTED: dict[int, tuple[Any, str, str]] = {}


def set_main_namespace(ns: dict[str, Any]) -> None:
    global _MAIN_NS
    _MAIN_NS = ns


@contextmanager
def importing(refs: dict[int, tuple[Any, str, str]]) -> Iterator[None]:
    """Within the block, the objects of `refs` pickle as the module attributes they are
    (`from sympy import *` binds `test`, an object of a class of its own that pickle
    cannot find by name): loading one imports the module and reads the attribute."""
    _IMPORTED.update(refs)
    try:
        yield
    finally:
        for k in refs:
            _IMPORTED.pop(k, None)


def imported(value: Any) -> bool:
    """Whether `value` pickles now as the module attribute it is (`importing`): what
    loads it is that very object, read from its module."""
    ref = _IMPORTED.get(id(value)) if _IMPORTED else None
    return ref is not None and ref[0] is value


class _Attribute:
    """Pickles as the attribute `attr` of the module `module`: loading it reads it."""

    def __init__(self, module: str, attr: str) -> None:
        self.module, self.attr = module, attr

    def __reduce__(self) -> tuple[Any, tuple[str, str]]:
        return _import_attribute, (self.module, self.attr)


def _import_attribute(module: str, attr: str) -> Any:
    loaded = importlib.import_module(module)
    try:
        return getattr(loaded, attr)
    except AttributeError:  # a submodule not imported yet
        return importlib.import_module(f"{module}.{attr}")


def dumps(
    value: Any, name: str = "value", persistent_id: Callable[[Any], Any] | None = None
) -> tuple[bytes, list[pickle.PickleBuffer]]:
    """Main stream and out-of-band buffers (zero-copy views of the value's data; one
    under `IN_BAND_MAX` bytes is copied into the stream instead). `persistent_id(obj)`
    may return an id to write instead of `obj` (None: pickle it)."""
    buffers: list[pickle.PickleBuffer] = []

    def in_band(buffer: pickle.PickleBuffer) -> bool:
        if memoryview(buffer).nbytes < IN_BAND_MAX:
            return True
        buffers.append(buffer)
        return False

    out = io.BytesIO()
    if _IMPORTED and imported(value):
        # (pickle never asks `reducer_override` about an exact dict, list or tuple)
        value = _Attribute(*_IMPORTED[id(value)][1:])
    pickler = _Pickler(out, in_band, top=value)
    if persistent_id is not None:
        # an instance may set its own (pickle's documented way); typeshed types a method
        pickler.persistent_id = persistent_id  # type: ignore[method-assign]
    try:
        pickler.dump(value)
    except ResumableCellsError:
        raise
    except Exception as e:
        raise Unstorable(name, f"{type(value).__name__} cannot be pickled ({e})") from None
    return out.getvalue(), buffers


def loads(
    main: bytes,
    buffers: list[Any],  # PickleBuffers, or the bytes or views a store read back
    persistent_load: Callable[[Any], Any] | None = None,
) -> Any:
    """The value of a stream from `dumps`; `persistent_load(pid)` gives back the object
    of each persistent id."""
    if persistent_load is None:
        return pickle.loads(main, buffers=buffers)
    unpickler = pickle.Unpickler(io.BytesIO(main), buffers=buffers)
    unpickler.persistent_load = persistent_load  # type: ignore[method-assign]  # (as above)
    return unpickler.load()


class _Pickler(pickle.Pickler):
    def __init__(
        self, file: io.BytesIO, buffer_callback: Callable[[pickle.PickleBuffer], bool], top: Any
    ) -> None:
        super().__init__(file, protocol=5, buffer_callback=buffer_callback)
        self._top = top

    def reducer_override(self, obj: Any) -> Any:
        if _IMPORTED and imported(obj):
            return _import_attribute, _IMPORTED[id(obj)][1:]
        t = type(obj)
        if t in PROCESS_TYPES:  # (the shell `ip = get_ipython()` binds: this kernel's own)
            token = process_token(obj)
            if token is not None:
                return process_object, (token,)
        # A figure pickles tens of thousands of objects of a few dozen types: what the
        # override can do with a type is decided once, at its first object.
        if t in _PLAIN:
            return NotImplemented
        if t in _DRAWINGS:
            return opaque.reduce(obj)
        reduced = self._reduce(obj)
        if _drawing_only(t):
            _DRAWINGS.add(t)
        elif reduced is NotImplemented and not _depends_on_value(t):
            _PLAIN.add(t)
        return reduced

    def _reduce(self, obj: Any) -> Any:
        np = sys.modules.get("numpy")
        if np is not None and type(obj) is np.ndarray and obj.dtype.kind == "O":
            if obj.size >= _STR_ARRAY_MIN:
                reduced = _str_array_reduce(obj)
                if reduced is not None:
                    return reduced
            return NotImplemented
        if np is not None and type(obj) is np.ndarray and not obj.flags.writeable:
            return _read_only_reduce(obj)
        if np is not None and type(obj) is np.ndarray and obj.dtype.kind in "mM":
            return _times_reduce(obj)
        if np is not None and isinstance(obj, np.ndarray) and type(obj) is not np.ndarray:
            return array_subclass_reduce(obj)
        if type(obj) is weakref.ReferenceType and obj.__callback__ is None:
            referent = obj()  # in the same stream: the restored reference is to its copy
            return (_weak, (referent,)) if referent is not None else (_dead_weak, ())
        if isinstance(obj, types.ModuleType):
            return _import_module, (obj.__name__,)
        drawing = opaque.reduce(obj)  # a figure, an artist: with its digest's tokens
        if drawing is not NotImplemented:
            return drawing
        if isinstance(obj, types.FunctionType) and _by_code(obj):
            return function_reduce(obj)
        if isinstance(obj, types.CellType):
            return _new_cell, (), _cell_state(obj), None, None, _set_cell
        if isinstance(obj, type) and obj.__module__ == "__main__":
            qualname = obj.__qualname__
            if obj is self._top or _MAIN_NS.get(qualname) is not obj:
                # A class another one replaced (`class A` run twice) is stored by
                # value: by name, its instances would come back as the new one's.
                return _class_reduce(obj)
            # Anywhere else a class is stored by name: the entry that binds it is
            # restored first, and its instances then refer to that one class object.
            return _main_attr, (qualname,)
        special = decorated.reduce(obj)  # lru_cache, cached_property, dataclasses
        if special is not NotImplemented:
            return special
        if isinstance(obj, (staticmethod, classmethod)):
            return type(obj), (obj.__func__,)
        if isinstance(obj, property):
            return property, (obj.fget, obj.fset, obj.fdel, obj.__doc__)
        return NotImplemented


# Types whose instances `reducer_override` leaves to pickle, whatever their value.
_PLAIN: set[type] = set()
# Drawing types no other branch of `_reduce` is about: `opaque.reduce` decides alone.
_DRAWINGS: set[type] = set()


def load_back(
    main: bytes,
    buffers: list,
    name: str,
    persistent_load: Callable[[Any], Any] | None = None,
) -> Any:
    """A pickle just made (`dumps`), loaded back to check it: from read-only views of
    its buffers, never a copy of large data; a loader that writes into its buffers gets
    copies. Raises Unstorable, naming `name`, when it cannot be loaded."""
    views = [memoryview(b).toreadonly() for b in buffers]
    try:
        return loads(main, views, persistent_load)
    except (ValueError, TypeError, BufferError):
        log.debug("%s is loaded back from copies of its buffers", name, exc_info=True)
    except Exception as err:
        raise Unstorable(name, f"its pickle cannot be loaded back ({err!r})") from None
    try:
        return loads(main, [bytearray(b) for b in buffers], persistent_load)
    except Exception as err:
        raise Unstorable(name, f"its pickle cannot be loaded back ({err!r})") from None


def _depends_on_value(t: type) -> bool:
    """Types for which the override's answer depends on the object, not its type:
    arrays (their dtype and flags), weak references (their callback), functions and classes (where they were made), cache
    wrappers (their module), the dataclasses sentinels (which instance), drawings
    (whether they were digested), regex matches (whether a search finds them again)."""
    return (
        issubclass(t, (types.FunctionType, type))
        or opaque.is_drawing_type(t)
        or t.__name__ == "ndarray"
        or t is weakref.ReferenceType
        or t is decorated.LRU_WRAPPER
        or decorated.is_sentinel_type(t)
        or t is re.Match
    )


# The types other branches of `_reduce` are about (beside arrays and those `decorated` names).
_OTHER_BRANCHES = (types.ModuleType, types.FunctionType, types.CellType, type,
                   weakref.ReferenceType, staticmethod, classmethod, property,
                   functools.cached_property, types.MappingProxyType, re.Match)  # fmt: skip


def _drawing_only(t: type) -> bool:
    """Whether `_reduce` of any instance of `t` is `opaque.reduce` of it: a drawing type
    that no other branch of `_reduce` is about."""
    return opaque.is_drawing_type(t) and not (
        issubclass(t, _OTHER_BRANCHES)
        or any(c.__name__ == "ndarray" for c in t.__mro__)
        or t is decorated.LRU_WRAPPER
        or decorated.is_sentinel_type(t)
        or t in DICT_VIEWS
    )


def _by_code(fn: types.FunctionType) -> bool:
    """Notebook functions, and functions pickle cannot find by name: made inside a
    module's function (a decorator's wrapper) or renamed into `__main__` by
    `functools.wraps` (dataclasses' `__repr__` wrapper)."""
    if fn.__globals__ is _MAIN_NS:
        return True
    if _private_globals(fn):
        return True
    home = fn.__globals__.get("__name__")
    if fn.__module__ != "__main__" and "<locals>" not in fn.__qualname__:
        return False
    return home == "__main__" or home in sys.modules


def _private_globals(fn: types.FunctionType) -> bool:
    """Whether `fn` runs against a namespace of its own, no module's and not the
    notebook's (sympy's `lambdify` execs the code it writes in a dict it builds)."""
    home = fn.__globals__.get("__name__")
    module = sys.modules.get(home) if isinstance(home, str) else None
    return (
        fn.__globals__ is not _MAIN_NS
        and home != "__main__"
        and (module is None or vars(module) is not fn.__globals__)
    )


def _names_used(code: types.CodeType) -> set[str]:
    """The global names a code object (and the code it nests) may read."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names_used(const)
    return names


def function_reduce(fn: types.FunctionType) -> tuple:
    """How a function is pickled by code: its closure cells as cells, what
    `functools.wraps` copied onto it beside its code, and the globals of its module
    when it was not made in the notebook."""
    # What `functools.wraps` copies onto a wrapper lives beside its code, not in it.
    about = (fn.__module__, fn.__doc__, fn.__annotations__ or None)
    state = (fn.__defaults__, fn.__kwdefaults__, fn.__dict__ or None, fn.__qualname__, about)
    args = (marshal.dumps(fn.__code__), fn.__name__, fn.__closure__, state)
    home = fn.__globals__.get("__name__")
    if fn.__globals__ is _MAIN_NS or home == "__main__":
        return _rebuild_function, args
    if _private_globals(fn):  # the names its code reads from that namespace, by value
        used = {n: fn.__globals__[n] for n in _names_used(fn.__code__) if n in fn.__globals__}
        return _rebuild_function, (*args, None, used)
    return _rebuild_function, (*args, home)  # run against its own module's globals


def _cell_state(cell: types.CellType) -> tuple[Any, ...]:
    """A cell's contents as a pickle state: a tuple, never None (pickle skips a state of
    None, and a cell holding None came back empty: `singledispatch`'s `cache_token`),
    empty for an empty cell."""
    try:
        return (cell.cell_contents,)
    except ValueError:  # a name the closure has not bound yet
        return ()


def _read_only_reduce(arr):
    """A read-only array whose memory can be written (a library's view: `np.asarray` of
    a pandas column): pickled from a writable view and made read-only when loaded.
    Pickled as itself, its buffer would be read-only when loaded, and so would the
    memory it views, where the live one was writable: a later step that wrote into
    that memory (or restored a view of it) could not."""
    view = arr.view()
    try:
        view.flags.writeable = True
    except ValueError:  # memory that is read-only live too (an array over bytes)
        if arr.flags.c_contiguous or arr.flags.f_contiguous:
            return NotImplemented  # pickle restores its buffer read-only, as it is
        view = arr.copy()  # pickled in band, it would come back writable
    return _make_read_only, (view,)


def _times_reduce(arr):
    """A datetime64 or timedelta64 array, pickled as its int64 view and made a view of
    its own type when loaded: numpy pickles these dtypes in band, a copy of every byte
    in the stream, signed with the stream at SHA-256's speed, where an int64 array's
    data travels out of band like any other array's (a frame's datetime column: 8 MB a
    million rows)."""
    if arr.nbytes < IN_BAND_MAX or not (arr.flags.c_contiguous or arr.flags.f_contiguous):
        return NotImplemented
    np = sys.modules["numpy"]
    ints = arr.view(np.dtype(f"i{arr.dtype.itemsize}").newbyteorder(arr.dtype.byteorder))
    return _times_from_ints, (ints, arr.dtype)


def _times_from_ints(ints, dtype):
    return ints.view(dtype)


def array_subclass_reduce(arr: Any) -> Any:
    """An ndarray subclass, pickled by its class's own reduction (numpy's, which drops
    the instance dict: a tag a notebook class keeps on its arrays; or the class's own:
    astropy's Column keeps some attributes and makes the others anew) with its instance
    dict, set after it: it comes back with every attribute it had. NotImplemented for
    one without an instance dict, or a reduction of another shape."""
    t = type(arr)
    if not t.__dictoffset__:
        return NotImplemented
    rv = arr.__reduce_ex__(5)
    if not (isinstance(rv, tuple) and len(rv) == 3):
        return NotImplemented
    attrs = object.__getattribute__(arr, "__dict__")
    return rv[0], rv[1], (rv[2], attrs), None, None, _set_array_state


def _set_array_state(arr, state) -> None:
    arr.__setstate__(state[0])
    attrs = object.__getattribute__(arr, "__dict__")
    attrs.clear()  # (what the class's own state set is in the dict too)
    attrs.update(state[1])


def _make_read_only(arr):
    arr.flags.writeable = False
    return arr


def _weak(referent: Any) -> weakref.ref:
    return weakref.ref(referent)


class _Gone:
    pass


def _dead_weak() -> weakref.ref:
    return weakref.ref(_Gone())  # its referent is gone at once, as the stored one was


def _new_cell() -> types.CellType:
    return types.CellType()


def _set_cell(cell: types.CellType, state: tuple[Any, ...]) -> None:
    # The contents are set after the cell exists, so a function closing over itself
    # (a recursive inner function) pickles: the cell is memoized before its contents.
    if state:
        cell.cell_contents = state[0]


def _rebuild_function(code_bytes, name, closure, state, module=None, own_globals=None):
    code = marshal.loads(code_bytes)
    if own_globals is not None:
        home = {"__builtins__": builtins, **own_globals}
    else:
        home = _MAIN_NS if module is None else importlib.import_module(module).__dict__
    fn = types.FunctionType(code, home, name, None, closure)
    defaults, kwdefaults, fdict, qualname = state[:4]
    fn.__defaults__ = defaults
    fn.__kwdefaults__ = kwdefaults
    fn.__qualname__ = qualname
    if len(state) > 4:
        fn.__module__, fn.__doc__, annotations = state[4]
        fn.__annotations__ = annotations or {}
    if fdict:
        fn.__dict__.update(fdict)
    return fn


# Made again by `type()` from the rest: the instance dict and weakref slots, the slot
# descriptors of `__slots__`, copyreg's `__slotnames__` cache, an ABC's registry.
_CLASS_SKIP = frozenset({"__dict__", "__weakref__", "__slotnames__", "_abc_impl"})
_SLOT_DESCRIPTORS = (types.MemberDescriptorType, types.GetSetDescriptorType)


def _class_reduce(cls: type):
    """A notebook class by its attributes. Methods that refer to the class itself (a
    `super()` call closes over `__class__`) are set once the class exists, so that
    they refer to the rebuilt class (pickle's memo holds it by then)."""
    if decorated.is_namedtuple(cls):
        return decorated.namedtuple_reduce(cls)
    if isinstance(cls, enum.EnumMeta):
        return _enum_reduce(cls)
    early: dict[str, Any] = {}
    late: dict[str, Any] = {}
    rewraps = _rewrapping(cls)
    for k, v in cls.__dict__.items():
        if k in _CLASS_SKIP or isinstance(v, _SLOT_DESCRIPTORS):
            continue
        v = _as_written(v) if rewraps else v
        (late if _refers_to(v, cls) else early)[k] = v
    args = (type(cls), cls.__name__, cls.__qualname__, cls.__bases__, early)
    return _rebuild_class, args, late or None, None, None, _set_class_attrs


# What `EnumType` makes as it makes a class (its members' tables, flags' masks, the
# `__new__` it puts in place), made again when the class is rebuilt from its members.
_ENUM_MADE = frozenset(
    {"_new_member_", "_use_args_", "_member_names_", "_member_map_", "_value2member_map_",
     "_unhashable_values_", "_member_type_", "_value_repr_", "_boundary_", "_flag_mask_",
     "_singles_mask_", "_all_bits_", "_inverted_", "_iter_member_", "__new__"}
)  # fmt: skip


def _enum_reduce(cls: Any) -> Any:
    """A notebook `Enum` by its members' names and values (aliases too, in their order)
    and what its body defined besides (methods, properties, `_missing_`): made again by
    its metaclass, members and all, so that a member restored elsewhere (by the class's
    name and its value) is a member of that class. One whose members its own `__new__`
    makes is refused: the values it was given are not kept."""
    if getattr(cls._new_member_, "__module__", None) == "__main__":
        raise pickle.PicklingError(f"{cls.__name__} is an Enum with a __new__ of its own")
    members = [(k, m._value_) for k, m in cls._member_map_.items()]
    early: dict[str, Any] = {}
    late: dict[str, Any] = {}
    for k, v in cls.__dict__.items():
        if k in cls._member_map_ or k in _ENUM_MADE or k in _CLASS_SKIP or _from_a_library(v):
            continue
        (late if _refers_to(v, cls) else early)[k] = v
    args = (type(cls), cls.__name__, cls.__qualname__, cls.__bases__, members, early)
    return _rebuild_enum, args, late or None, None, None, _set_class_attrs


def _from_a_library(attr: Any) -> bool:
    """A function a library's class put in the class (a `Flag`'s operators): made again
    with it, not the notebook's."""
    return isinstance(attr, types.FunctionType) and attr.__module__ != "__main__"


def _rebuild_enum(meta, name, qualname, bases, members, attrs):
    body = meta.__prepare__(name, bases)
    for k, v in attrs.items():  # (`_generate_next_value_`, `__init__`: before the members)
        body[k] = v
    for k, v in members:
        body[k] = v
    cls = meta(name, bases, body)
    cls.__qualname__ = qualname
    return cls


def _rewrapping(cls: type) -> bool:
    """Whether a library base class's `__init_subclass__` may change the class's
    attributes as it is made (scikit-learn's `TransformerMixin` wraps `transform`): it
    runs again when the class is rebuilt, so the class is stored as it was written. A
    notebook base's hook does not run again (`_rebuild_class`): what it did is kept."""
    return any(
        "__init_subclass__" in vars(b) and not _notebooks(b)
        for b in cls.__mro__[1:]
        if b is not object
    )


def _notebooks(cls: type) -> bool:
    """A class the notebook defined (its hooks' work is in the stored state)."""
    return cls.__module__ == "__main__"


def _as_written(attr: Any) -> Any:
    """A notebook function a library wrapped (`functools.wraps` keeps it as
    `__wrapped__`), as it was written; anything else as it is."""
    if not isinstance(attr, types.FunctionType) or attr.__globals__ is _MAIN_NS:
        return attr
    inner: Any = getattr(attr, "__wrapped__", None)
    while isinstance(inner, types.FunctionType):
        if inner.__globals__ is _MAIN_NS:
            return inner
        inner = getattr(inner, "__wrapped__", None)
    return attr


def _refers_to(attr: Any, cls: type) -> bool:
    """Whether a class attribute is a function whose closure holds `cls`."""
    if isinstance(attr, (staticmethod, classmethod)):
        attr = attr.__func__
    parts = (attr.fget, attr.fset, attr.fdel) if isinstance(attr, property) else (attr,)
    for fn in parts:
        for cell in getattr(fn, "__closure__", None) or ():
            state = _cell_state(cell)
            if state and state[0] is cls:
                return True
    return False


def _rebuild_class(meta, name, qualname, bases, attrs):
    # What the notebook's own class hooks did as the class was first made (a base's
    # `__init_subclass__` or a metaclass's `__init__` adding it to a registry, setting
    # or wrapping its attributes) is in the stored state of the registry and the class:
    # running them again as the class is rebuilt (when the live run's values are checked,
    # and on a hit) would do it twice. A library's hooks run: sklearn's wrap the
    # methods the class is stored with as written (`_rewrapping`).
    with _notebook_subclass_hooks_passed(bases):
        if _notebook_metaclass(meta):
            cls = type.__new__(meta, name, bases, dict(attrs))  # not its __new__, __init__
        else:
            cls = meta(name, bases, dict(attrs))
    cls.__qualname__ = qualname
    return cls


def _notebook_metaclass(meta: type) -> bool:
    """A metaclass the notebook defined over `type` alone (one over a library's, such as
    `ABCMeta`, needs that one's `__new__` to make the class)."""
    below = meta.__mro__[1:]
    return (
        meta is not type
        and below[-2:] == (type, object)
        and all(map(_notebooks, (meta, *below[:-2])))
    )


@contextmanager
def _notebook_subclass_hooks_passed(bases: tuple[type, ...]) -> Iterator[None]:
    """Within the block, each notebook class's own `__init_subclass__` among the bases'
    ancestors only passes the call on to the next one (a library's runs)."""
    owners = {
        b
        for base in bases
        for b in base.__mro__
        if _notebooks(b) and "__init_subclass__" in vars(b)
    }
    saved = [(b, vars(b)["__init_subclass__"]) for b in owners]
    for b, _ in saved:
        type.__setattr__(b, "__init_subclass__", classmethod(_passing_on(b)))
    try:
        yield
    finally:
        for b, hook in saved:
            type.__setattr__(b, "__init_subclass__", hook)


def _passing_on(owner: Any) -> Callable[..., None]:
    def init_subclass(cls: Any, **kwargs: Any) -> None:
        super(owner, cls).__init_subclass__(**kwargs)

    return init_subclass


def _set_class_attrs(cls: type, late: dict | None) -> None:
    for k, v in (late or {}).items():
        setattr(cls, k, v)


def _import_module(name: str):
    return importlib.import_module(name)


def _main_attr(qualname: str):
    obj: Any = _MAIN_NS
    head, _, rest = qualname.partition(".")
    obj = _MAIN_NS[head]
    for part in rest.split(".") if rest else ():
        obj = getattr(obj, part)
    return obj


# -- object arrays of strings (pandas string and object columns) ------------------------
# Pickle stores such an array as one object per element, memoized: 10 million strings
# take about 10 s to dump and 5 s to load. Here the strings travel as one NUL-joined
# UTF-8 buffer, out of band (written and read like any array's data), with the few
# elements that are not strings (missing values) pickled beside it by position.
_STR_ARRAY_MIN = 4096


def _str_array_reduce(arr):
    fortran = arr.flags.f_contiguous and not arr.flags.c_contiguous
    order = "F" if fortran else "C"
    items = arr.ravel(order=order).tolist()
    kinds = set(map(type, items))
    if str not in kinds:
        return None
    others = None
    strings = items
    if len(kinds) > 1:
        others = {i: x for i, x in enumerate(items) if type(x) is not str}
        if len(others) * 2 > len(items) or any(x is arr for x in others.values()):
            return None  # mostly other objects (or itself): plain pickling suits it better
        strings = [x for x in items if type(x) is str]
    joined = "\x00".join(strings)
    if joined.count("\x00") != len(strings) - 1:
        return None  # a string holds the separator itself
    data = pickle.PickleBuffer(joined.encode("utf-8", "surrogatepass"))
    return _rebuild_str_array, (data, len(strings), arr.shape, order, others)


def _rebuild_str_array(data, count, shape, order, others):
    import numpy as np

    strings = str(data, "utf-8", "surrogatepass").split("\x00") if count else []
    if len(strings) != count:
        raise ValueError("string array does not have the stored number of strings")
    if not others:
        out = np.fromiter(strings, dtype=object, count=count)
    else:
        out = np.empty(count + len(others), dtype=object)
        where = np.fromiter(others.keys(), dtype=np.intp, count=len(others))
        mask = np.ones(len(out), dtype=bool)
        mask[where] = False
        out[mask] = np.fromiter(strings, dtype=object, count=count)
        for i, x in others.items():
            out[i] = x
    return out.reshape(shape, order=order)
