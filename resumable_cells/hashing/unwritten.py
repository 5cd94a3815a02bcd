"""Which large arrays have not been written since their digest was taken, so that a step
reading an unchanged 1 GB input does not hash its bytes again at every run.

Linux (6.7 and later) can tell which pages of a range were written since a point in
time, at no cost to the program until the first write to each page: userfaultfd's
write protection in its asynchronous mode (the kernel resolves the fault itself and
takes the protection off the page) read back with the PAGEMAP_SCAN ioctl of
/proc/self/pagemap. Every write to a private page of this process faults on it and
marks it: Python code, numpy's C loops, a view, another thread, the kernel filling it
(`readinto`, /proc/self/mem). A page whose protection is gone, or that is not watched
(another array's range released, a fork, a new mapping), reads as written: doubt means
hashing again, never reusing a digest.

What is watched: a plain C-contiguous array (`arrays.data_prefix`) of `MIN_BYTES` or
more, or a frame or series of numeric columns (`arrays._whole_frame`, which also
compares what else its digest reads: labels, index, dtypes), whose memory numpy
allocated, or the store mapped for a restored value (`own_memory`): private anonymous
memory, never a file or shared mapping, whose bytes another process or the disk can
change without a fault here. The
first write to a protected page costs a fault (about 1.6 µs per 4 KiB page, some four
times what hashing the page costs). A value is protected at its first digest: most large
values are only read after the step that made them, whose next reader then needs no
hash. One found written is not protected again until a digest finds it unchanged, so an
array a loop updates in place pays the faults once after each such digest, not at
every write.

What it cannot see: a device writing into memory by DMA (a buffer pinned for a GPU or a
network card with `cudaHostRegister`, a registered io_uring buffer) writes no page
table. Elsewhere (another system, an older kernel, a sandbox that refuses userfaultfd),
or with RESUMABLE_CELLS_WATCH_WRITES=off, nothing is watched and every digest hashes the
bytes, as before (logged once).
"""

from __future__ import annotations

import ctypes
import functools
import logging
import os
import threading
import weakref
from collections.abc import Callable
from typing import Any

import xxhash

from .pagewatch import PAGE, Pages

log = logging.getLogger(__name__)

ENV = "RESUMABLE_CELLS_WATCH_WRITES"  # "off" (or 0, no, false): hash every time
MIN_BYTES = 4 << 20  # smaller arrays hash in under 0.5 ms: not worth a watch
MAX_WATCHED = 256  # each watch may split a memory mapping in two; the kernel caps those


class _Seen:
    """One value digested before: what its digest read besides memory (`shape`), the
    memory it read (`regions`, (address, size) each), the digest state it left and
    what else that digest noted (`extra`), whether it was found unchanged the last
    time, and the pages protected when they are."""

    __slots__ = ("ref", "shape", "regions", "state", "extra", "steady", "spans", "ends")

    def __init__(self, ref: weakref.ref, shape: Any, regions: tuple, state: Any, extra: Any):
        self.ref = ref
        self.shape = shape
        self.regions = regions
        self.state = state
        self.extra = extra
        self.steady = False
        self.spans: list[tuple[int, int]] | None = None  # each region's protected pages
        self.ends: list[tuple[bytes, bytes]] = []  # each region's bytes on shared pages


# Memory maps this process made for restored values (`own_memory`), while they live.
_OWN_MAPS: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()
_lock = threading.RLock()  # re-entered when freeing a value calls back into `_forget`
_seen: dict[int, _Seen] = {}
_pages: Pages | None = None
_tried = False


def state_after(prefix: bytes, arr: Any) -> Any:
    """The xxh3_128 state after `prefix` and the bytes of `arr` (a plain C-contiguous
    array, `arrays.data_prefix`): the state its last digest left when its pages were
    not written since, else hashed now. The caller owns the state returned."""
    if arr.nbytes < MIN_BYTES or not numpy_memory(arr):
        return _hash(prefix, arr)
    region = (arr.__array_interface__["data"][0], arr.nbytes)
    return remembered(arr, prefix, (region,), lambda: (_hash(prefix, arr), None))[0]


def remembered(
    value: Any, shape: Any, regions: tuple, compute: Callable[[], tuple[Any, Any]]
) -> tuple[Any, Any]:
    """(digest state, extra) of `value`, whose digest reads `shape` (anything compared
    by equality: a prefix, a frame's labels) and the bytes of `regions` ((address,
    size) of memory numpy allocated, which `value` keeps alive) and nothing else:
    what its last digest left when `shape` is the same and no byte of `regions` was
    written since, else `compute()` (which hashes it) now. The caller owns the state."""
    with _lock:
        pages = _the_pages()
        key = id(value)
        seen = _seen.get(key)
        if seen is not None and (seen.ref() is not value or seen.regions != regions):
            _drop(key)
            seen = None
        if seen is not None and seen.spans is not None and pages is not None:
            if seen.shape == shape and _unchanged(pages, seen):
                return seen.state.copy(), seen.extra
            seen.steady = False  # written: hashed from now on until found unchanged again
            _unprotect(seen)
        # Protected at its first digest, as at any digest after one that found it
        # unchanged: most large values are read, not written, after the step that made
        # them, and waiting for a second digest to say so cost two more hashes of it.
        spans = _protect(pages, regions, seen) if seen is None or seen.steady else None
        ends = [_ends(r, span) for r, span in zip(regions, spans)] if spans else []
        state, extra = compute()
        if spans is not None and pages is not None:
            if not all(pages.private(*span) for span in spans if span[0] < span[1]):
                _release(spans)
                spans = None
        if seen is None:
            _remember(value, shape, regions, state, extra, spans, ends)
        else:
            seen.steady = seen.shape == shape and seen.state.digest() == state.digest()
            seen.shape, seen.state, seen.extra = shape, state.copy(), extra
            seen.spans, seen.ends = spans, ends
        return state, extra


def watching() -> bool:
    """Whether this process can watch arrays for writes (opens the watch if not yet)."""
    with _lock:
        return _the_pages() is not None


def watched() -> int:
    """How many values are protected now."""
    with _lock:
        return sum(1 for s in _seen.values() if s.spans is not None)


def _hash(prefix: bytes, arr: Any) -> Any:
    h = xxhash.xxh3_128(prefix)
    h.update(arr.reshape(-1).view("u1"))
    return h


def own_memory(buffer: Any) -> None:
    """`buffer`, an anonymous private memory map this process made (the bytes of a
    value restored from the store, `storage/blobs.py`), is memory only this process
    writes, as numpy's own is: a value restored into it is watched like one computed."""
    _OWN_MAPS[id(buffer)] = buffer


def numpy_memory(arr: Any) -> bool:
    """Whether numpy allocated the memory under `arr` (with its default allocator), or
    it lies in a buffer `own_memory` was told of: private anonymous memory that only
    this process writes."""
    import numpy as np

    base = arr
    while isinstance(base.base, np.ndarray):
        base = base.base
    if base.base is not None:  # (an array over another object's buffer)
        owner = base.base.obj if isinstance(base.base, memoryview) else base.base
        if isinstance(owner, np.ndarray):  # (one owning its memory: asked as itself)
            return owner.base is None and numpy_memory(owner)
        return _OWN_MAPS.get(id(owner)) is owner
    if not base.flags.owndata:
        return False
    core = getattr(np, "_core", None) or getattr(np, "core", None)
    handler_name = getattr(getattr(core, "multiarray", None), "get_handler_name", None)
    return handler_name is None or handler_name(base) == "default_allocator"


def _the_pages() -> Pages | None:
    global _pages, _tried
    if _pages is not None and _pages.pid != os.getpid():
        # a forked child: the descriptors name the parent's memory; watch nothing here
        _pages, _tried = None, True
        _seen.clear()
    if not _tried:
        _tried = True
        if os.environ.get(ENV, "").strip().lower() in ("off", "0", "no", "false"):
            log.info("large arrays are hashed at each digest: %s is off", ENV)
            return None
        try:
            _pages = Pages()
        except OSError as e:
            log.info("large unchanged arrays are hashed again at each digest: %s", e)
    return _pages


def _inner(region: tuple[int, int]) -> tuple[int, int]:
    """The pages wholly inside a region (empty when it spans none)."""
    start = -(-region[0] // PAGE) * PAGE
    end = (region[0] + region[1]) // PAGE * PAGE
    return start, max(start, end)


def _protect(
    pages: Pages | None, regions: tuple, seen: _Seen | None
) -> list[tuple[int, int]] | None:
    """Protect the pages wholly inside each region. The bytes on the pages at a region's
    ends, which it shares with its neighbours (a heap block's header, another array),
    are compared instead (`_ends`): a neighbour's write there says nothing of the
    region's own bytes."""
    if pages is None:
        return None
    spans = [_inner(r) for r in regions]
    for other in _seen.values():
        # Protecting pages again forgets that they were written: another value on them
        # (a view, the array it views, a frame's column) that was written since its
        # digest is hashed again from now on, before its writes are forgotten.
        if other is seen or not other.spans or not _overlap(other.spans, spans):
            continue
        if not _unchanged(pages, other):
            other.steady, other.spans = False, None
    done: list[tuple[int, int]] = []
    try:
        for span in spans:
            if span[0] < span[1]:
                pages.protect(*span)
                done.append(span)
    except OSError as e:
        log.debug("a value at %#x not watched: %s", regions[0][0], e)
        _release(done + [span])
        return None
    return spans


def _unchanged(pages: Pages, seen: _Seen) -> bool:
    """Whether no byte of a protected value's regions was written since."""
    assert seen.spans is not None
    for region, span, ends in zip(seen.regions, seen.spans, seen.ends):
        if _ends(region, span) != ends:
            return False
        if span[0] < span[1] and pages.written(*span):
            return False
    return True


def _ends(region: tuple[int, int], span: tuple[int, int]) -> tuple[bytes, bytes]:
    """A region's bytes outside its protected pages, at its start and at its end."""
    address, size = region
    if span[0] >= span[1]:  # no whole page: all of it
        return ctypes.string_at(address, size), b""
    end = address + size
    return ctypes.string_at(address, span[0] - address), ctypes.string_at(span[1], end - span[1])


def _overlap(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> bool:
    return any(x[0] < y[1] and y[0] < x[1] for x in a for y in b)


def _unprotect(seen: _Seen) -> None:
    spans, seen.spans = seen.spans, None
    if spans:
        _release(spans)


def _release(spans: list[tuple[int, int]]) -> None:
    if _pages is None:
        return
    # A page another watched value shares (a view, a frame's column) stays watched for
    # it: releasing the rest is enough.
    others = [span for s in _seen.values() if s.spans for span in s.spans]
    for span in spans:
        if span[0] < span[1] and not _overlap([span], others):
            _pages.release(*span)


def _remember(
    value: Any,
    shape: Any,
    regions: tuple,
    state: Any,
    extra: Any,
    spans: list[tuple[int, int]] | None,
    ends: list[tuple[bytes, bytes]],
) -> None:
    key = id(value)
    while len(_seen) >= MAX_WATCHED:
        _drop(next(iter(_seen)))
    ref = weakref.ref(value, functools.partial(_forget, key))
    seen = _seen[key] = _Seen(ref, shape, regions, state.copy(), extra)
    seen.spans, seen.ends = spans, ends


def _forget(key: int, _ref: Any = None) -> None:
    with _lock:
        _drop(key)


def _drop(key: int) -> None:
    seen = _seen.pop(key, None)
    if seen is not None:
        _unprotect(seen)
