"""Digest fast paths for numpy arrays and pandas objects.

Arrays are hashed as dtype, shape and their data in C order, in place when contiguous
and through one small reused buffer otherwise. Frames are hashed column by column
(never by block), so a frame, its deep copy and its store/restore round trip give one
digest; object (string) columns a fixed number of values at a time.
"""

from __future__ import annotations

import functools
import struct
import sys
import weakref
from typing import Any

from ..errors import Unhashable
from . import frames, unwritten
from .plain import all_atomic
from .registry import CUSTOM, add_handler, add_whole, handler_for
from .values import ELEMENT, Hasher

_CHUNK_BYTES = 256 << 10  # the piece of a non-contiguous array copied for hashing
# Object columns are encoded this many elements at a time: each piece's Python objects
# (list, joined string, its UTF-8 bytes) stay small and in cache, and the boundaries
# depend only on the length, so the digest does not depend on how the data is chunked
# in memory.
_OBJ_CHUNK = 16384
_registered: set[str] = set()


def register(top: str) -> None:
    """Add the handlers for `top`'s types (numpy's too for pandas); once each."""
    if top in _registered:
        return
    _registered.add(top)
    if top in ("numpy", "pandas"):
        _register_numpy()
    if top == "pandas":
        _register_pandas()


# -- numpy ------------------------------------------------------------------------------
def _register_numpy() -> None:
    import numpy as np

    add_handler(np.ndarray, _h_ndarray)
    add_handler(np.generic, _h_scalar)
    add_whole(np.ndarray, _whole_ndarray)


def _h_scalar(h: Hasher, v: Any, path: str) -> None:
    import numpy as np

    h.tag(b"a")
    h.text(v.dtype.str if v.dtype.fields is None else str(v.dtype.descr))
    if v.dtype.hasobject:
        h.value(v.item(), path)
    else:
        h.raw(np.asarray(v).reshape(-1).view(np.uint8))


_PACK_Q = struct.Struct("<Q").pack


def _h_ndarray(h: Hasher, arr: Any, path: str) -> None:
    import numpy as np

    h.modules.add("numpy")
    t = type(arr)
    dtype = arr.dtype
    if t is np.ndarray and dtype.fields is None and not dtype.hasobject and arr.flags.c_contiguous:
        # The common case in two `update` calls: the same bytes as the general route
        # below (tag, dtype, shape, length-prefixed data), without its per-call costs.
        h.raw_part(_plain_prefix(arr))
        if arr.nbytes:
            h.spend(arr.nbytes, path)
            h.raw_part(arr.reshape(-1).view(np.uint8))
        return
    h.tag(b"A")
    if t is not np.ndarray:
        h.text(f"{t.__module__}.{t.__qualname__}")
    h.text(arr.dtype.str if arr.dtype.fields is None else str(arr.dtype.descr))
    h.text(repr(arr.shape))
    if arr.dtype.hasobject:
        h.integer(arr.size)
        _elements(h, arr.reshape(-1).tolist(), 0, f"{path}.flat")
    else:
        _array_data(h, arr)
    # (`np.ma` imports numpy.ma, 18 ms, where nothing made one: none exists without it)
    ma = sys.modules.get("numpy.ma")
    if ma is not None and isinstance(arr, ma.MaskedArray):
        _array_data(h, ma.getmaskarray(arr))
        h.value(arr.fill_value, f"{path}.fill_value")
    elif t is not np.ndarray and t.__dictoffset__:
        # a subclass's own attributes: a Quantity's unit, a tag a notebook class keeps;
        # not its weak references (an astropy column's to its table: a back-pointer)
        attrs = object.__getattribute__(arr, "__dict__")
        own = {k: v for k, v in attrs.items() if type(v) is not weakref.ReferenceType}
        h.mapping(own, b"d", path, attributes=True, by_name=True)  # (in any order)


def _plain_prefix(arr: Any) -> bytes:
    ds = arr.dtype.str.encode()
    sh = repr(arr.shape).encode()
    return b"A%s%s%s%s%s" % (_PACK_Q(len(ds)), ds, _PACK_Q(len(sh)), sh, _PACK_Q(arr.nbytes))


def data_prefix(value: Any) -> bytes | None:
    """What the digest of `value` hashes before its memory, when it is a plain array
    (an ndarray of a plain dtype, C-contiguous) that is digested as those bytes and then
    its memory, and nothing else: xxh3_128 over the prefix and the array's bytes is its
    digest (`Hasher.value_digest`). None for any other value, or one a registered hasher
    digests its own way. Whoever copies the array's bytes can check them against the
    digest without hashing the array twice (`storage/behind.py`)."""
    np = sys.modules.get("numpy")
    t = type(value)
    if np is None or t is not np.ndarray or (CUSTOM and _custom(value)):
        return None
    if handler_for(t) is not _h_ndarray:
        return None
    dtype = value.dtype
    if dtype.fields is not None or dtype.hasobject or not value.flags.c_contiguous:
        return None
    return _plain_prefix(value)


def _whole_ndarray(h: Hasher, arr: Any, path: str) -> Any:
    """A large plain array digested alone (a key's input, a value stored): its digest
    state from `unwritten`, which hashes its bytes only when they may have changed."""
    if arr.nbytes < unwritten.MIN_BYTES:
        return None
    prefix = data_prefix(arr)
    if prefix is None:
        return None
    h.modules.add("numpy")
    h.spend(arr.nbytes, path)
    return unwritten.state_after(prefix, arr)


def _custom(value: Any) -> bool:
    return type(value) in CUSTOM or any(isinstance(value, c) for c in CUSTOM)


def _array_data(h: Hasher, arr: Any) -> None:
    import numpy as np

    arr = np.asarray(arr)
    if arr.flags.c_contiguous:
        h.raw(arr.reshape(-1).view(np.uint8))
        return
    # A strided or Fortran-ordered array: its C-order bytes, a few rows at a time,
    # through one small buffer reused for every piece. The buffer stays in the CPU
    # cache (the copy and the hash of a piece cost about one pass over it), no fresh
    # memory is touched, and hashing a view never doubles memory.
    h.raw_header(arr.nbytes)
    n = arr.shape[0]
    rows = max(1, _CHUNK_BYTES // max(1, arr.nbytes // max(1, n)))
    buf = np.empty((min(rows, n),) + arr.shape[1:], dtype=arr.dtype)
    for i in range(0, n, rows):
        part = arr[i : i + rows]
        dst = buf[: len(part)]
        np.copyto(dst, part)
        h.raw_part(dst.reshape(-1).view(np.uint8))


# -- pandas -----------------------------------------------------------------------------
def _register_pandas() -> None:
    import pandas as pd

    add_handler(pd.DataFrame, _h_frame)
    add_handler(pd.Series, _h_series)
    add_handler(pd.Index, _h_index)
    add_handler(pd.api.extensions.ExtensionArray, _h_ext_array_value)
    add_whole(pd.DataFrame, _whole_frame)
    add_whole(pd.Series, _whole_series)


def _h_frame(h: Hasher, df: Any, path: str) -> None:
    h.modules.add("pandas")
    h.tag(b"D")
    _h_index(h, df.index, f"{path}.index")
    _h_index(h, df.columns, f"{path}.columns")
    columns = frames.column_arrays(df)  # (numpy values hash as their column's array does)
    if columns is not None:
        for label, values in zip(df.columns, columns):
            _column(h, values, values.dtype, f"{path}[{label!r}]")
    else:  # (a column by position; `iloc` takes three times as long)
        for label, col in df.items():
            _column(h, col.array, col.dtype, f"{path}[{label!r}]")
    h.value(dict(df.attrs), f"{path}.attrs")
    _flags(h, df)


def _flags(h: Hasher, value: Any) -> None:
    """A frame's or series' flags, when not the default (`allows_duplicate_labels`
    set False in place by a later step is a change of it)."""
    if not value.flags.allows_duplicate_labels:
        h.tag(b"u")


def _whole_frame(h: Hasher, df: Any, path: str) -> Any:
    """A large frame of numeric columns digested alone: its digest state from
    `unwritten`, which digests it only when its columns' memory may have been written
    or what else its digest reads changed (the labels, the range index, the dtypes).
    None for any other frame (an index of values, object or extension columns, attrs):
    digested as any value."""
    if df.shape[0] * df.shape[1] < unwritten.MIN_BYTES // 8 or df.attrs:
        return None
    if not df.flags.allows_duplicate_labels:
        return None
    if not all(_numeric(dtype) for dtype in set(df.dtypes)):  # before a Series per column
        return None
    index = _range_index(df.index)
    labels = _labels(df.columns)
    if index is None or labels is None:
        return None
    regions: list[tuple[int, int]] = []
    rows = frames.column_rows(df)
    if rows is not None:
        found = _rows_memory(rows)
    else:  # (the public way: a Series made for each column)
        found = [(_column_memory(column), column.dtype) for _, column in df.items()]
    taken: set[tuple[int, int]] = set()  # (each column of a whole block gives the block)
    for region, _ in found:
        if region is None:
            return None
        if region in taken:
            continue
        taken.add(region)
        if regions and sum(regions[-1]) == region[0]:  # the next row of one block
            regions[-1] = (regions[-1][0], regions[-1][1] + region[1])
        else:
            regions.append(region)
    if len(regions) > _MAX_REGIONS:
        return None
    dtypes = tuple(dtype for _, dtype in found)  # (numpy dtypes: equal when their names are)
    return _remembered(h, df, path, (index, labels, dtypes), tuple(regions))


def _whole_series(h: Hasher, s: Any, path: str) -> Any:
    """A large numeric series digested alone, as `_whole_frame` a frame."""
    if len(s) < unwritten.MIN_BYTES // 8 or s.attrs or type(s.name) not in _LABELS:
        return None
    if not s.flags.allows_duplicate_labels:
        return None
    index = _range_index(s.index)
    region = _column_memory(s)
    if index is None or region is None:
        return None
    return _remembered(h, s, path, (index, s.name, str(s.dtype)), (region,))


def _remembered(h: Hasher, value: Any, path: str, shape: tuple, regions: tuple) -> Any:
    def digest() -> tuple[Any, frozenset[str]]:
        before = set(h.modules)
        h.value(value, path)
        return h.state(), frozenset(h.modules - before)

    state, modules = unwritten.remembered(value, (type(value), shape), regions, digest)
    h.modules.update(modules)
    h.spend(sum(size for _, size in regions), path)
    return state


_LABELS = (str, int, type(None))  # labels that cannot change in place
# A frame's columns sit in a few blocks, each one piece of memory; one of columns added
# one by one (a block each) is hashed each time rather than watched piece by piece.
_MAX_REGIONS = 64


def _range_index(idx: Any) -> tuple | None:
    """What a frame's digest reads of a range index (its bounds and names), or None
    for any other index."""
    import pandas as pd

    if type(idx) is not pd.RangeIndex or any(type(n) not in _LABELS for n in idx.names):
        return None
    return (idx.start, idx.stop, idx.step, tuple(idx.names))


def _labels(columns: Any) -> tuple | None:
    """What a frame's digest reads of its column labels, or None when they are not a
    few thousand strings or integers."""
    if len(columns) > 4096 or any(type(n) not in _LABELS for n in columns.names):
        return None
    labels = tuple(columns)
    if any(type(label) not in _LABELS for label in labels):
        return None
    return (type(columns).__name__, str(columns.dtype), tuple(columns.names), labels)


def _numeric(dtype: Any) -> bool:
    """A numpy dtype of numbers, booleans or naive datetimes (not an extension dtype)."""
    import numpy as np

    return isinstance(dtype, np.dtype) and dtype.kind in "biufcmM"


def _column_memory(column: Any) -> tuple[int, int] | None:
    """(address, size) of a numeric column's values when they are memory numpy
    allocated that the column holds, else None. Asked twice, the second while the
    first is alive: a copy made to answer would sit elsewhere each time."""
    import numpy as np

    if not _numeric(column.dtype):
        return None
    values, again = np.asarray(column.array), np.asarray(column.array)
    if values.__array_interface__["data"][0] != again.__array_interface__["data"][0]:
        return None
    return _values_memory(values)


def _values_memory(values: Any) -> tuple[int, int] | None:
    """(address, size) of a column's numpy values when they are contiguous memory numpy
    allocated, else None."""
    if not values.flags.c_contiguous or not unwritten.numpy_memory(values):
        return None
    return values.__array_interface__["data"][0], values.nbytes


def _rows_memory(rows: list[tuple[Any, int]]) -> list[tuple[tuple[int, int] | None, Any]]:
    """The memory and the dtype of each column given as (block, row), worked out once a
    block (a hundred columns asked one by one took a millisecond): what `_values_memory`
    answers for the row's view when the row is contiguous; when only the block is (a
    frame made from a C-ordered array without a copy, pandas' default before 3.0: each
    column strided through the block), the block's whole memory, which is all its
    columns' bytes and nothing else. None for memory numpy did not allocate."""
    blocks: dict[int, tuple[int, int, int] | None] = {}
    out: list[tuple[tuple[int, int] | None, Any]] = []
    for values, row in rows:
        if id(values) not in blocks:
            start = values.__array_interface__["data"][0]
            if not unwritten.numpy_memory(values):
                blocks[id(values)] = None
            elif values.shape[1] <= 1 or values.strides[1] == values.itemsize:
                blocks[id(values)] = (start, values.strides[0], values.shape[1] * values.itemsize)
            elif values.flags.f_contiguous:
                blocks[id(values)] = (start, 0, values.nbytes)  # (every row: the whole block)
            else:
                blocks[id(values)] = None
        block = blocks[id(values)]
        if block is None:
            out.append((None, values.dtype))
        else:
            start, stride, size = block
            out.append(((start + row * stride, size), values.dtype))
    return out


def _h_series(h: Hasher, s: Any, path: str) -> None:
    h.modules.add("pandas")
    h.tag(b"S")
    h.value(s.name, f"{path}.name")
    _h_index(h, s.index, f"{path}.index")
    _column(h, s.array, s.dtype, path)
    if s.attrs:  # (as a frame's: `s.attrs['unit'] = 'm'` in place is a change of it)
        h.tag(b"a")
        h.value(dict(s.attrs), f"{path}.attrs")
    _flags(h, s)


def _h_index(h: Hasher, idx: Any, path: str) -> None:
    import pandas as pd

    h.modules.add("pandas")
    h.tag(b"I")
    h.text(type(idx).__name__)
    h.value(list(idx.names), f"{path}.names")
    if isinstance(idx, pd.RangeIndex):
        h.value((idx.start, idx.stop, idx.step), path)
    elif isinstance(idx, pd.MultiIndex):
        h.integer(idx.nlevels)
        for level, codes in zip(idx.levels, idx.codes):
            _h_index(h, level, f"{path}.levels")
            _array_data(h, codes)
    else:
        _column(h, idx.array, idx.dtype, path)


def _h_ext_array_value(h: Hasher, arr: Any, path: str) -> None:
    h.modules.add("pandas")
    _column(h, arr, arr.dtype, path)


def _column(h: Hasher, arr: Any, dtype: Any, path: str) -> None:
    """One column's values: dtype, length, then data by the cheapest exact route."""
    import numpy as np
    import pandas as pd

    h.tag(b"C")
    h.text(_dtype_text(dtype))
    h.integer(len(arr))
    if type(arr) is np.ndarray and not arr.dtype.hasobject:  # (a block's row: none of below)
        _array_data(h, arr)
        return
    if isinstance(dtype, pd.CategoricalDtype):
        _array_data(h, arr.codes)
        _h_index(h, dtype.categories, f"{path}.categories")
        h.value(bool(dtype.ordered), path)
        return
    if hasattr(arr, "__arrow_array__") and _arrow_column(h, arr):
        return
    if hasattr(arr, "_data") and hasattr(arr, "_mask"):  # nullable Int64/boolean/Float64
        _array_data(h, arr._mask)
        _array_data(h, arr._data)
        return
    if hasattr(arr, "asi8"):  # datetimes, timedeltas, periods: their int64 view
        _array_data(h, np.asarray(arr.asi8))
        return
    values = arr if isinstance(arr, np.ndarray) else np.asarray(arr, dtype=None)
    if values.dtype.hasobject:
        _object_column(h, values, path)
    else:
        _array_data(h, values)


_DTYPE_TEXT: dict[Any, str] = {}


def _dtype_text(dtype: Any) -> str:
    """`str(dtype)`, kept for numpy's builtin dtypes (numpy makes it in Python: 4 µs a
    column). Only those: an equal dtype with metadata would find a builtin's entry."""
    if getattr(dtype, "isbuiltin", 0) != 1:
        return str(dtype)
    text = _DTYPE_TEXT.get(dtype)
    if text is None:
        text = _DTYPE_TEXT[dtype] = str(dtype)
    return text


def _object_column(h: Hasher, values: Any, path: str) -> None:
    """An object column, `_OBJ_CHUNK` elements at a time. A piece of strings only is
    hashed as one NUL-joined string (unambiguous when no string holds a NUL); a piece
    of strings and missing values as its missing-value mask, the missing values, and
    the joined strings; a piece of other plain values (numbers, None) as one pickle
    stream; anything else element by element."""
    import numpy as np
    import pandas as pd

    h.tag(b"O")
    n = len(values)
    for lo in range(0, n, _OBJ_CHUNK):
        items = values[lo : lo + _OBJ_CHUNK].tolist()
        if _joined(h, items, b"J"):
            continue
        piece = np.asarray(values[lo : lo + _OBJ_CHUNK])
        mask = pd.isna(piece)
        if mask.any() and isinstance(mask, np.ndarray):
            present = piece[~mask].tolist()
            if _joinable(present):
                h.tag(b"K")
                _array_data(h, mask.view(np.uint8))
                _elements(h, piece[mask].tolist(), None, path)
                _joined(h, present, b"J")
                continue
        if all_atomic(items):  # numbers, None, bools, bytes: one C-level pickle
            h.tag(b"F")
            h.flat(items)
            continue
        h.tag(b"E")
        _elements(h, items, lo, path)


def _joinable(items: list) -> bool:
    try:
        joined = "\x00".join(items)
    except TypeError:
        return False
    return joined.count("\x00") == max(0, len(items) - 1)


def _joined(h: Hasher, items: list, tag: bytes) -> bool:
    try:
        joined = "\x00".join(items)
    except TypeError:  # not all strings
        return False
    if joined.count("\x00") != max(0, len(items) - 1):
        return False  # a string holds the separator itself
    h.tag(tag)
    h.text(joined)
    return True


def _elements(h: Hasher, items: list, start: int | None, path: str) -> None:
    """Each element by the general route; the path is only formatted on failure."""
    value = h.value
    i = 0
    try:
        for i, x in enumerate(items):  # noqa: B007
            value(x, ELEMENT)
    except Unhashable as e:
        where = f"[{start + i}]" if start is not None else "[<missing value>]"
        raise e.rebased(path + where) from None


@functools.cache
def _pyarrow() -> Any:
    """pyarrow, or None where it is not installed: looked for once per process. A failed
    import is not remembered by Python, so importing it per column searched the whole
    path every time (0.3 ms, most of a small frame's digest)."""
    try:
        import pyarrow
    except ImportError:
        return None
    return pyarrow


def _arrow_column(h: Hasher, arr: Any) -> bool:
    """Arrow-backed strings: offsets rebased per chunk, then the data bytes; chunking
    (which a copy or a round trip may change) does not reach the digest."""
    import numpy as np

    pa = _pyarrow()
    if pa is None:  # python-backed strings also offer __arrow_array__
        return False
    chunked = arr.__arrow_array__()
    if isinstance(chunked, pa.Array):
        chunked = pa.chunked_array([chunked])
    if not (pa.types.is_string(chunked.type) or pa.types.is_large_string(chunked.type)):
        return False
    width = np.int64 if pa.types.is_large_string(chunked.type) else np.int32
    h.tag(b"w")
    n = len(chunked)
    h.integer(chunked.null_count)
    if chunked.null_count:
        h.raw_header(n)
        for chunk in chunked.chunks:
            h.raw_part(chunk.is_null().to_numpy(zero_copy_only=False).view(np.uint8))
    base = 0
    spans = []
    h.raw_header(8 * n)
    for chunk in chunked.chunks:
        offsets = np.frombuffer(chunk.buffers()[1], dtype=width)
        offsets = offsets[chunk.offset : chunk.offset + len(chunk) + 1]
        rebased = offsets[1:].astype(np.int64) - int(offsets[0]) + base
        h.raw_part(rebased.view(np.uint8))
        spans.append((chunk.buffers()[2], int(offsets[0]), int(offsets[-1])))
        base += int(offsets[-1] - offsets[0])
    h.raw_header(base)
    for data, lo, hi in spans:
        if hi > lo:
            h.raw_part(memoryview(data)[lo:hi])
    return True
