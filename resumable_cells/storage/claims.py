"""Claims on keys, so that kernels sharing one store compute a key once.

A claim is a POSIX record lock (`fcntl`) on one byte of the store's `claims` file, at an
offset taken from the key. Taking it and letting it go are a system call each, not a
write to the index (two SQLite write transactions per live step, when a claim was a
row), and the operating system lets go of it when its holder dies, however it dies: no
claim outlives its kernel. A second kernel finds the byte locked, is told which
process holds it, and polls until it is free (then it finds the entry).

Record locks belong to a process, and closing any descriptor of the file would drop
all of them: the file is opened once per process and kept open (the few most recently
used stores' files; one is closed only when no claim on it is held), and claims on one
key within a process are counted, the byte unlocked when the last is let go (a step run
again while its first run's entry is still being written behind). Two keys can share
an offset (one pair in two billion): the second kernel then waits for the first, looks
its own key up and, finding nothing, claims it and runs.
"""

from __future__ import annotations

import errno
import hashlib
import os
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

try:
    import fcntl
except ImportError:  # no POSIX record locks (Windows): steps run unclaimed, said in the log
    fcntl = None  # type: ignore[assignment]

_POLL_S = 0.05  # how often a waiter looks at the holder's progress
_OFFSETS = 1 << 31  # lock offsets below 2**31: what every lock manager takes, NFS's too
_HELD = (errno.EACCES, errno.EAGAIN)  # what a lock another process holds fails with
FILE = "claims"

_FILES_KEPT = 8  # claims files kept open (one per store this process claims in)

_lock = threading.Lock()  # the descriptors and counts below, and taking and letting go
_files: dict[str, tuple[int, int, int]] = {}  # path -> (descriptor, device, inode)
_counts: dict[tuple[int, int, int], int] = {}  # (device, inode, offset) -> claims held


@contextmanager
def claim(
    store_dir: Path, key: str, on_wait: Callable[[dict], None] | None = None
) -> Iterator[bool]:
    """Hold the right to compute `key` in the store at `store_dir`; a waiter is told
    (`on_wait(holder)`: its `pid` and `host`, None when not known) once. Yields whether
    it had to wait. Raises OSError when the file system takes no locks."""
    path = os.path.join(store_dir, FILE)
    offset = _offset(key)
    waited = False
    while True:
        held = _take(path, offset)
        if held is not None:
            break
        if not waited and on_wait is not None:
            on_wait(_holder(path, offset))
        waited = True
        time.sleep(_POLL_S)  # the holder may take as long as the step
    try:
        yield waited
    finally:
        _let_go(held)


def _offset(key: str) -> int:
    digest = hashlib.blake2b(key.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % _OFFSETS


def _take(path: str, offset: int) -> tuple[int, int, int, int] | None:
    """Lock the byte at `offset`: (descriptor, device, inode, offset), or None when
    another process holds it."""
    if fcntl is None:
        raise OSError(errno.ENOTSUP, "no POSIX record locks on this platform")
    with _lock:
        fd, device, inode = _descriptor(path)
        counted = (device, inode, offset)
        if not _counts.get(counted):
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset, os.SEEK_SET)
            except OSError as err:
                if err.errno in _HELD:
                    return None
                raise
        _counts[counted] = _counts.get(counted, 0) + 1
        return fd, device, inode, offset


def _let_go(held: tuple[int, int, int, int]) -> None:
    fd, device, inode, offset = held
    counted = (device, inode, offset)
    with _lock:
        left = _counts.get(counted, 1) - 1
        if left > 0:
            _counts[counted] = left
            return
        _counts.pop(counted, None)
        fcntl.lockf(fd, fcntl.LOCK_UN, 1, offset, os.SEEK_SET)


def _descriptor(path: str) -> tuple[int, int, int]:
    """The open claims file at `path`: (descriptor, device, inode), opened once (and
    again after `reopen`)."""
    known = _files.pop(path, None)
    if known is None:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        st = os.fstat(fd)
        known = (fd, st.st_dev, st.st_ino)
        _close_unused()
    _files[path] = known  # (the most recently used last)
    return known


def reopen(store_dir: Path) -> None:
    """A store is opened at `store_dir`: when the claims file there is not the one this
    process has open (the store was deleted and made again), claims there open it anew."""
    path = os.path.join(store_dir, FILE)
    with _lock:
        known = _files.get(path)
        if known is None:
            return
        try:
            st = os.stat(path)
            if (st.st_dev, st.st_ino) == known[1:]:
                return
        except FileNotFoundError:
            pass
        del _files[path]
        if not any(c[:2] == known[1:] for c in _counts):
            os.close(known[0])


def _close_unused() -> None:
    """Close the least recently used files past `_FILES_KEPT` that hold no claim."""
    for path in list(_files)[: max(0, len(_files) - _FILES_KEPT + 1)]:
        fd, device, inode = _files[path]
        if not any(c[:2] == (device, inode) for c in _counts):
            del _files[path]
            os.close(fd)


def _holder(path: str, offset: int) -> dict:
    """Who holds the byte at `offset`: {"pid", "host"} (Linux tells the process of a
    lock taken on this host; elsewhere, or for another host's lock, None)."""
    unknown: dict = {"pid": None, "host": None}
    if not sys.platform.startswith("linux"):
        return unknown
    with _lock:
        known = _files.get(path)
        if known is None:
            return unknown
        fd = known[0]
        # struct flock on Linux: l_type, l_whence, l_start, l_len, l_pid
        query = struct.pack("hhqqi", fcntl.F_WRLCK, os.SEEK_SET, offset, 1, 0)
        try:
            answer = fcntl.fcntl(fd, fcntl.F_GETLK, query)
        except OSError:
            return unknown
    kind, _, _, _, pid = struct.unpack("hhqqi", answer)
    if kind == fcntl.F_UNLCK or pid <= 0:
        return unknown
    return {"pid": pid, "host": socket.gethostname()}


def pid_alive(pid: int) -> bool:
    """Whether process `pid` runs on this host (one we may not signal counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
