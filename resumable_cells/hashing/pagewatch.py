"""This process's pages, as the kernel watches them for writes: protect a range, then
ask whether any page of it was written since, or is not private anonymous memory
(Linux 6.7 and later: userfaultfd's write protection in its asynchronous mode, read back
with the PAGEMAP_SCAN ioctl of /proc/self/pagemap). What is watched, and why that is
enough, is `unwritten`'s; this module only speaks to the kernel.
"""

from __future__ import annotations

import ctypes
import logging
import os
import platform

log = logging.getLogger(__name__)

PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096

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


class Pages:
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
        """Whether a page of [start, end) is in `category` (written, a file's); a scan
        that stopped short of the end without finding one says yes too."""
        scan = _Scan(
            ctypes.sizeof(_Scan), _SCAN_CHECK_WPASYNC, start, end, 0,
            ctypes.addressof(self.region), 1, 1, 0, category, 0, category,
        )  # fmt: skip
        found = self._ioctl(self.pagemap, _PAGEMAP_SCAN, scan, "PAGEMAP_SCAN") > 0
        return found or scan.walk_end < end

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
