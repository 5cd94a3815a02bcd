"""Pickling of bound values, protocol 5 with out-of-band buffers.

Plain pickle stores notebook functions by reference (`__main__.f`), which a new kernel
cannot resolve, and refuses lambdas and modules. Here notebook functions are stored by
code (marshal; the Python version is part of every key) and rebuilt against the
notebook namespace; their closure cells are stored as cells, so that functions closing
over one variable still share it when they are stored together. Modules are stored by
name and imported again on restore. Object arrays of strings (pandas string and object
columns) travel as one joined UTF-8 buffer out of band instead of one pickled string at
a time. A caller may write some objects as persistent ids (`persistent_id`) and give
them back when loading (`persistent_load`): the engine does so for objects a step's
entry refers to rather than stores (`engine/unit.py`).
"""

from __future__ import annotations

import importlib
import io
import marshal
import pickle
import sys
import types
from collections.abc import Callable
from typing import Any

from ..errors import ResumableCellsError, Unstorable

_MAIN_NS: dict[str, Any] = {}


def set_main_namespace(ns: dict) -> None:
    global _MAIN_NS
    _MAIN_NS = ns


def dumps(
    value: Any, name: str = "value", persistent_id: Callable[[Any], Any] | None = None
) -> tuple[bytes, list[pickle.PickleBuffer]]:
    """Main stream and out-of-band buffers (zero-copy views of the value's data).
    `persistent_id(obj)` may return an id to write instead of `obj` (None: pickle it)."""
    buffers: list[pickle.PickleBuffer] = []
    out = io.BytesIO()
    pickler = _Pickler(out, buffers.append, top=value)
    if persistent_id is not None:
        pickler.persistent_id = persistent_id
    try:
        pickler.dump(value)
    except ResumableCellsError:
        raise
    except Exception as e:
        raise Unstorable(name, f"{type(value).__name__} cannot be pickled ({e})") from None
    return out.getvalue(), buffers


def loads(main: bytes, buffers: list, persistent_load: Callable[[Any], Any] | None = None) -> Any:
    """The value of a stream from `dumps`; `persistent_load(pid)` gives back the object
    of each persistent id."""
    if persistent_load is None:
        return pickle.loads(main, buffers=buffers)
    unpickler = pickle.Unpickler(io.BytesIO(main), buffers=buffers)
    unpickler.persistent_load = persistent_load
    return unpickler.load()


class _Pickler(pickle.Pickler):
    def __init__(self, file, buffer_callback, top):
        super().__init__(file, protocol=5, buffer_callback=buffer_callback)
        self._top = top

    def reducer_override(self, obj):
        np = sys.modules.get("numpy")
        if np is not None and type(obj) is np.ndarray and obj.dtype.kind == "O":
            if obj.size >= _STR_ARRAY_MIN:
                reduced = _str_array_reduce(obj)
                if reduced is not None:
                    return reduced
            return NotImplemented
        if isinstance(obj, types.ModuleType):
            return _import_module, (obj.__name__,)
        if isinstance(obj, types.FunctionType) and _is_notebook_function(obj):
            return function_reduce(obj)
        if isinstance(obj, types.CellType):
            return _new_cell, (), _cell_value(obj), None, None, _set_cell
        if isinstance(obj, type) and obj.__module__ == "__main__":
            if obj is self._top:
                return _class_reduce(obj)
            # Anywhere else a class is stored by name: the entry that binds it is
            # restored first, and its instances then refer to that one class object.
            return _main_attr, (obj.__qualname__,)
        if isinstance(obj, (staticmethod, classmethod)):
            return type(obj), (obj.__func__,)
        if isinstance(obj, property):
            return property, (obj.fget, obj.fset, obj.fdel, obj.__doc__)
        return NotImplemented


def _is_notebook_function(fn: types.FunctionType) -> bool:
    return fn.__module__ == "__main__" or fn.__globals__ is _MAIN_NS


def function_reduce(fn: types.FunctionType) -> tuple:
    """How a notebook function is pickled: by code, with its closure cells as cells."""
    state = (fn.__defaults__, fn.__kwdefaults__, fn.__dict__ or None, fn.__qualname__)
    return _rebuild_function, (marshal.dumps(fn.__code__), fn.__name__, fn.__closure__, state)


_EMPTY = "__resumable_cells_empty_cell__"


def _cell_value(cell):
    try:
        return cell.cell_contents
    except ValueError:
        return _EMPTY


def _new_cell() -> types.CellType:
    return types.CellType()


def _set_cell(cell, value) -> None:
    # The contents are set after the cell exists, so a function closing over itself
    # (a recursive inner function) pickles: the cell is memoized before its contents.
    if not (isinstance(value, str) and value == _EMPTY):
        cell.cell_contents = value


def _rebuild_function(code_bytes, name, closure, state):
    code = marshal.loads(code_bytes)
    fn = types.FunctionType(code, _MAIN_NS, name, None, closure)
    defaults, kwdefaults, fdict, qualname = state
    fn.__defaults__ = defaults
    fn.__kwdefaults__ = kwdefaults
    fn.__qualname__ = qualname
    if fdict:
        fn.__dict__.update(fdict)
    return fn


_CLASS_SKIP = frozenset({"__dict__", "__weakref__"})


def _class_reduce(cls: type):
    attrs = {k: v for k, v in cls.__dict__.items() if k not in _CLASS_SKIP}
    return _rebuild_class, (type(cls), cls.__name__, cls.__qualname__, cls.__bases__, attrs)


def _rebuild_class(meta, name, qualname, bases, attrs):
    cls = meta(name, bases, dict(attrs))
    cls.__qualname__ = qualname
    return cls


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
