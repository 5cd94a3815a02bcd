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
more whose memory numpy allocated (private anonymous memory), never a file or shared
mapping, whose bytes another process or the disk can change without a fault here. The
first write to a protected page costs a fault (about 1.6 µs per 4 KiB page, some four
times what hashing the page costs), so an array is protected only once two digests in a
row found it unchanged; one found written is not protected again until it has been
found unchanged again. An array that a loop updates in place each step is therefore
hashed each step, as before, and never pays for faults.

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
import platform
import threading
import weakref
from typing import Any

import xxhash

log = logging.getLogger(__name__)

ENV = "RESUMABLE_CELLS_WATCH_WRITES"  # "off" (or 0, no, false): hash every time
MIN_BYTES = 4 << 20  # smaller arrays hash in under 0.5 ms: not worth a watch
MAX_WATCHED = 256  # each watch may split a memory mapping in two; the kernel caps those
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096

# The kernel's interface (include/uapi/linux/userfaultfd.h and fs.h).
_SYSCALL = {"x86_64": 323, "aarch64": 282}
_USER_MODE_ONLY = 1  # unprivileged: only faults taken in user mode are handed to us,
# which the asynchronous mode never does (the kernel resolves every fault itself)
_API = 0xAA
_FEATURE_WP_UNPOPULATED = 1 << 13
_FEATURE_WP_ASYNC = 1 << 15
_REGISTER_MODE_WP = 1 << 1
_WRITEPROTECT_MODE_WP = 1 << 0
_SCAN_CHECK_WPASYNC = 1 << 1
_IS_WRITTEN = 1 << 1
_IS_FILE = 1 << 2


def _ioc(direction: int, kind: int, nr: int, size: int) -> int:
    return (direction << 30) | (size << 16) | (kind << 8) | nr


_U64 = ctypes.c_uint64


class _Api(ctypes.Structure):
    _fields_ = [("api", _U64), ("features", _U64), ("ioctls", _U64)]


class _Range(ctypes.Structure):
    _fields_ = [("start", _U64), ("len", _U64)]


class _Register(ctypes.Structure):
    _fields_ = [("range", _Range), ("mode", _U64), ("ioctls", _U64)]


class _Protect(ctypes.Structure):
    _fields_ = [("range", _Range), ("mode", _U64)]


class _Scan(ctypes.Structure):
    _fields_ = [
        (name, _U64)
        for name in (
            "size flags start end walk_end vec vec_len max_pages category_inverted "
            "category_mask category_anyof_mask return_mask"
        ).split()
    ]


class _Region(ctypes.Structure):
    _fields_ = [("start", _U64), ("end", _U64), ("categories", _U64)]


_UFFDIO_API = _ioc(3, 0xAA, 0x3F, ctypes.sizeof(_Api))
_UFFDIO_REGISTER = _ioc(3, 0xAA, 0x00, ctypes.sizeof(_Register))
_UFFDIO_UNREGISTER = _ioc(2, 0xAA, 0x01, ctypes.sizeof(_Range))
_UFFDIO_WRITEPROTECT = _ioc(3, 0xAA, 0x06, ctypes.sizeof(_Protect))
_PAGEMAP_SCAN = _ioc(3, ord("f"), 16, ctypes.sizeof(_Scan))


class _Pages:
    """This process's userfaultfd and pagemap: protect a range, ask whether any page of
    it was written since, or is not private anonymous memory. Raises OSError when the
    system offers neither."""

    def __init__(self) -> None:
        number = _SYSCALL.get(platform.machine())
        if number is None or not os.path.exists("/proc/self/pagemap"):
            raise OSError(f"no write tracking on {platform.system()} {platform.machine()}")
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.libc.syscall.restype = ctypes.c_long
        self.libc.ioctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p]
        fd = self.libc.syscall(number, os.O_CLOEXEC | os.O_NONBLOCK | _USER_MODE_ONLY)
        if fd < 0:
            raise self._error("userfaultfd")
        self.uffd = fd
        self.pagemap = -1
        try:
            api = _Api(_API, _FEATURE_WP_ASYNC | _FEATURE_WP_UNPOPULATED, 0)
            self._ioctl(self.uffd, _UFFDIO_API, api, "UFFDIO_API (asynchronous mode)")
            self.pagemap = os.open("/proc/self/pagemap", os.O_RDONLY | os.O_CLOEXEC)
            self.region = _Region()
            # PAGEMAP_SCAN came in Linux 6.7: ask once, on an empty range
            self._scan(0, 0, _IS_WRITTEN)
        except OSError:
            self.close()
            raise
        self.pid = os.getpid()

    def close(self) -> None:
        for fd in (self.uffd, self.pagemap):
            if fd >= 0:
                os.close(fd)
        self.uffd = self.pagemap = -1

    def _error(self, what: str) -> OSError:
        err = ctypes.get_errno()
        return OSError(err, f"{what}: {os.strerror(err)}")

    def _ioctl(self, fd: int, request: int, arg: ctypes.Structure, what: str) -> int:
        got = self.libc.ioctl(fd, request, ctypes.byref(arg))
        if got < 0:
            raise self._error(what)
        return got

    def _scan(self, start: int, end: int, category: int) -> bool:
        """Whether a page of [start, end) is in `category` (written, a file's)."""
        scan = _Scan(
            ctypes.sizeof(_Scan), _SCAN_CHECK_WPASYNC, start, end, 0,
            ctypes.addressof(self.region), 1, 1, 0, category, 0, category,
        )  # fmt: skip
        return self._ioctl(self.pagemap, _PAGEMAP_SCAN, scan, "PAGEMAP_SCAN") > 0

    def protect(self, start: int, end: int) -> None:
        rng = _Range(start, end - start)
        self._ioctl(self.uffd, _UFFDIO_REGISTER, _Register(rng, _REGISTER_MODE_WP, 0), "register")
        self._ioctl(
            self.uffd, _UFFDIO_WRITEPROTECT, _Protect(rng, _WRITEPROTECT_MODE_WP), "protect"
        )

    def written(self, start: int, end: int) -> bool:
        """Whether a page of the range may have been written since it was protected: a
        range no longer watched in full (EPERM) counts as written."""
        try:
            return self._scan(start, end, _IS_WRITTEN)
        except OSError as e:
            log.debug("pages %#x-%#x taken as written: %s", start, end, e)
            return True

    def private(self, start: int, end: int) -> bool:
        """Whether no page of the range belongs to a file or a shared mapping (a range
        that cannot be asked counts as shared)."""
        try:
            return not self._scan(start, end, _IS_FILE)
        except OSError as e:
            log.debug("pages %#x-%#x taken as shared: %s", start, end, e)
            return False

    def release(self, start: int, end: int) -> None:
        try:
            self._ioctl(self.uffd, _UFFDIO_UNREGISTER, _Range(start, end - start), "unregister")
        except OSError as e:  # the memory is gone already: nothing left to release
            log.debug("pages %#x-%#x not released: %s", start, end, e)


class _Seen:
    """One array digested before: its digest state after its bytes, whether it was found
    unchanged the last time, whether its pages are protected now."""

    __slots__ = ("ref", "where", "prefix", "state", "steady", "span", "ends")

    def __init__(self, ref: weakref.ref, where: tuple[int, int], prefix: bytes, state: Any):
        self.ref = ref
        self.where = where  # (address, size) of its bytes
        self.prefix = prefix
        self.state = state
        self.steady = False
        self.span: tuple[int, int] | None = None  # the pages protected, when they are
        self.ends = (b"", b"")  # its bytes on the pages it shares, when protected


_lock = threading.RLock()  # re-entered when freeing an array calls back into `_forget`
_seen: dict[int, _Seen] = {}
_pages: _Pages | None = None
_tried = False


def state_after(prefix: bytes, arr: Any) -> Any:
    """The xxh3_128 state after `prefix` and the bytes of `arr` (a plain C-contiguous
    array, `arrays.data_prefix`): the state its last digest left when its pages were
    not written since, else hashed now. The caller owns the state returned."""
    if arr.nbytes < MIN_BYTES or not _numpy_memory(arr):
        return _hash(prefix, arr)
    where = (arr.__array_interface__["data"][0], arr.nbytes)
    with _lock:
        pages = _the_pages()
        seen = _seen.get(id(arr))
        if seen is not None and (seen.ref() is not arr or seen.where != where):
            _drop(id(arr))
            seen = None
        if seen is not None and seen.span is not None and pages is not None:
            if (
                seen.prefix == prefix
                and _ends(arr, seen.span) == seen.ends
                and not pages.written(*seen.span)
            ):
                return seen.state.copy()
            seen.steady = False  # written: hashed from now on until found unchanged again
            _unprotect(seen)
        span = _protect(pages, where, seen) if seen is not None and seen.steady else None
        ends = _ends(arr, span) if span is not None else (b"", b"")
        state = _hash(prefix, arr)
        if span is not None and pages is not None and not pages.private(*span):
            pages.release(*span)
            span = None
        if seen is None:
            _remember(arr, where, prefix, state)
        else:
            seen.steady = seen.prefix == prefix and seen.state.digest() == state.digest()
            seen.prefix, seen.state, seen.span, seen.ends = prefix, state.copy(), span, ends
        return state


def watching() -> bool:
    """Whether this process can watch arrays for writes (opens the watch if not yet)."""
    with _lock:
        return _the_pages() is not None


def watched() -> int:
    """How many arrays are protected now."""
    with _lock:
        return sum(1 for s in _seen.values() if s.span is not None)


def _hash(prefix: bytes, arr: Any) -> Any:
    h = xxhash.xxh3_128(prefix)
    h.update(arr.reshape(-1).view("u1"))
    return h


def _numpy_memory(arr: Any) -> bool:
    """Whether numpy allocated the memory under `arr` (with its default allocator):
    private anonymous memory that only this process writes."""
    import numpy as np

    base = arr
    while isinstance(base.base, np.ndarray):
        base = base.base
    if base.base is not None or not base.flags.owndata:
        return False
    core = getattr(np, "_core", None) or getattr(np, "core", None)
    handler_name = getattr(getattr(core, "multiarray", None), "get_handler_name", None)
    return handler_name is None or handler_name(base) == "default_allocator"


def _the_pages() -> _Pages | None:
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
            _pages = _Pages()
        except OSError as e:
            log.info("large unchanged arrays are hashed again at each digest: %s", e)
    return _pages


def _protect(pages: _Pages | None, where: tuple[int, int], seen: _Seen) -> tuple[int, int] | None:
    """Protect the pages wholly inside the array's bytes. The bytes on the pages at its
    ends, which it shares with its neighbours (a heap block's header, another array),
    are compared instead (`_ends`): a neighbour's write there says nothing of the
    array's own bytes."""
    if pages is None:
        return None
    start = -(-where[0] // _PAGE) * _PAGE
    end = (where[0] + where[1]) // _PAGE * _PAGE
    for other in _seen.values():
        # Protecting pages again forgets that they were written: another array on them
        # (a view, the array it views) that was written since its digest is hashed
        # again from now on, before its writes are forgotten.
        span = other.span
        if other is not seen and span and span[0] < end and start < span[1]:
            if pages.written(*span):
                other.steady, other.span = False, None
    try:
        pages.protect(start, end)
    except OSError as e:
        log.debug("array at %#x not watched: %s", where[0], e)
        pages.release(start, end)
        return None
    return start, end


def _ends(arr: Any, span: tuple[int, int]) -> tuple[bytes, bytes]:
    """The array's bytes outside its protected pages, at its start and at its end."""
    flat = arr.reshape(-1).view("u1")
    address = arr.__array_interface__["data"][0]
    return flat[: span[0] - address].tobytes(), flat[span[1] - address :].tobytes()


def _unprotect(seen: _Seen) -> None:
    span, seen.span = seen.span, None
    if span is None or _pages is None:
        return
    # A page another watched array shares (the ends of two neighbours) stays watched
    # for it: releasing the rest is enough.
    if not any(s.span and s.span[0] < span[1] and span[0] < s.span[1] for s in _seen.values()):
        _pages.release(*span)


def _remember(arr: Any, where: tuple[int, int], prefix: bytes, state: Any) -> None:
    key = id(arr)
    while len(_seen) >= MAX_WATCHED:
        _drop(next(iter(_seen)))
    _seen[key] = _Seen(
        weakref.ref(arr, functools.partial(_forget, key)), where, prefix, state.copy()
    )


def _forget(key: int, _ref: Any = None) -> None:
    with _lock:
        _drop(key)


def _drop(key: int) -> None:
    seen = _seen.pop(key, None)
    if seen is not None:
        _unprotect(seen)
