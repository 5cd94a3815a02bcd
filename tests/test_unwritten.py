"""Large arrays unwritten since their last digest are not hashed again, and any write,
by any route, is seen: the digest is always the one a fresh copy of the bytes has.

These use Linux's own write protection (userfaultfd, PAGEMAP_SCAN: Linux 6.7 and
later), in this process and through a real kernel; elsewhere the watch is off and every
digest hashes, which the tests of hashing cover.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import platform
import subprocess
import sys
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from steps import served

from resumable_cells.hashing import hex_digest, unwritten

_MB = 1 << 20


def _kernel_at_least(major: int, minor: int) -> bool:
    release = platform.release().split("-")[0].split(".")
    return (int(release[0]), int(release[1])) >= (major, minor)


pytestmark = pytest.mark.skipif(
    platform.system() != "Linux" or platform.machine() not in ("x86_64", "aarch64")
    or not _kernel_at_least(6, 7),
    reason="write tracking needs Linux 6.7 or later on x86_64 or aarch64",
)  # fmt: skip


class _Hashes:
    """Counts the digests that read an array's bytes."""

    def __init__(self, monkeypatch):
        self.count = 0
        real = unwritten._hash

        def counted(prefix, arr):
            self.count += 1
            return real(prefix, arr)

        monkeypatch.setattr(unwritten, "_hash", counted)


def _fresh(arr) -> str:
    return hex_digest(arr.copy())


def _watched_array(nbytes: int = 8 * _MB, seed: int = 0):
    arr = np.random.default_rng(seed).random(nbytes // 8)
    for _ in range(4):  # the first digest, found unchanged, protected, then served
        hex_digest(arr)
    return arr


def test_this_machine_watches_writes():
    assert unwritten.watching()


def test_an_unchanged_array_is_not_hashed_again(monkeypatch):
    arr = _watched_array()
    hashes = _Hashes(monkeypatch)
    first = hex_digest(arr)
    assert [hex_digest(arr) for _ in range(5)] == [first] * 5
    assert hashes.count == 0
    assert first == _fresh(arr)


def _write_item(arr, at):
    arr[at // 8] += 1.0


def _write_view(arr, at):
    view = arr[at // 8 :]
    view[0] = -view[0] - 1.0


def _write_ufunc(arr, at):
    np.add(arr[at // 8 : at // 8 + 3], 2.0, out=arr[at // 8 : at // 8 + 3])


def _write_readinto(arr, at):
    with open("/dev/urandom", "rb") as f:
        f.readinto(memoryview(arr).cast("B")[at : at + 1])


def _write_memmove(arr, at):
    ctypes.memmove(arr.ctypes.data + at, b"\x7f", 1)


def _write_thread(arr, at):
    t = threading.Thread(target=_write_item, args=(arr, at))
    t.start()
    t.join()


def _write_proc_mem(arr, at):
    fd = os.open("/proc/self/mem", os.O_RDWR)
    try:
        old = os.pread(fd, 1, arr.ctypes.data + at)
        os.pwrite(fd, bytes([old[0] ^ 0xFF]), arr.ctypes.data + at)
    finally:
        os.close(fd)


def _write_dontneed(arr, at):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    size = mmap.PAGESIZE
    page = -(-(arr.ctypes.data + at) // size) * size  # a page wholly the array's
    if page + size > arr.ctypes.data + arr.nbytes:
        page -= 2 * size
    arr.view("u1")[page - arr.ctypes.data] = 1  # (so that zeroing the page changes a byte)
    hex_digest(arr)
    assert libc.madvise(page, size, 4) == 0  # MADV_DONTNEED: the page reads as zeroes


WRITES = [_write_item, _write_view, _write_ufunc, _write_readinto, _write_memmove,
          _write_thread, _write_proc_mem, _write_dontneed]  # fmt: skip


@pytest.mark.parametrize("write", WRITES, ids=lambda w: w.__name__[len("_write_") :])
def test_a_write_by_any_route_is_seen(write):
    arr = _watched_array()
    before = hex_digest(arr)
    for at in (0, 3 * mmap.PAGESIZE + 8, arr.nbytes // 2, arr.nbytes - 8):
        write(arr, at)
        now = hex_digest(arr)
        assert now == _fresh(arr)
        assert now != before
        before = now


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.sampled_from(["write", "digest", "digest"]), st.integers(0, 4 * _MB - 1)),
        max_size=12,
    )
)
def test_random_writes_between_digests_are_always_seen(ops):
    """Writes anywhere (on the pages shared with neighbours, on protected pages, at the
    first and last byte) between digests taken at any point of the watch's life."""
    arr = np.arange(4 * _MB // 8, dtype=np.float64)
    for op, at in ops:
        if op == "write":
            arr.view("u1")[at] ^= 0x5A
        else:
            assert hex_digest(arr) == _fresh(arr)
    assert hex_digest(arr) == _fresh(arr)


def test_a_neighbour_on_a_shared_page_does_not_unwatch_the_array(monkeypatch):
    arr = _watched_array()
    neighbours = [np.ones(100_000) for _ in range(8)]  # allocated and freed around it
    del neighbours
    hashes = _Hashes(monkeypatch)
    assert hex_digest(arr) == _fresh(arr)
    assert hashes.count == 1  # only the copy's digest hashed


def test_a_view_protected_after_a_write_to_its_base_does_not_hide_the_write():
    arr = _watched_array()
    view = arr[:]  # another array on the same pages
    arr[100_000] += 1.0
    for _ in range(4):  # the view is found unchanged, then protected: its pages again
        assert hex_digest(view) == _fresh(view)
    assert hex_digest(arr) == _fresh(arr)
    view[200_000] += 1.0
    assert hex_digest(arr) == _fresh(arr)
    assert hex_digest(view) == _fresh(view)


def test_an_array_written_in_place_every_time_is_never_protected():
    before = unwritten.watched()
    arr = np.zeros(8 * _MB // 8)
    for _ in range(6):
        arr += 1.0
        assert hex_digest(arr) == _fresh(arr)
        assert unwritten.watched() == before  # hashed each time, never protected
    hex_digest(arr)
    hex_digest(arr)
    assert unwritten.watched() == before + 1  # found unchanged, then protected


@pytest.mark.parametrize("kind", ["file", "shared", "bytearray"])
def test_memory_numpy_did_not_allocate_is_always_hashed(kind, tmp_path, monkeypatch):
    if kind == "file":
        arr = np.memmap(tmp_path / "a.bin", dtype=np.float64, mode="w+", shape=(_MB,))
        arr = np.asarray(arr)
    elif kind == "shared":
        arr = np.frombuffer(mmap.mmap(-1, 8 * _MB), dtype=np.float64)
    else:
        arr = np.frombuffer(bytearray(8 * _MB), dtype=np.float64)
    for _ in range(4):
        hex_digest(arr)
    hashes = _Hashes(monkeypatch)
    hex_digest(arr)
    assert hashes.count == 1


def test_a_forked_child_hashes_and_sees_its_own_writes():
    arr = _watched_array()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the parent's watch names the parent's memory
        ok = hex_digest(arr) == _fresh(arr)
        arr[10] += 1
        ok = ok and hex_digest(arr) == _fresh(arr) and not unwritten.watching()
        os.write(write, b"1" if ok else b"0")
        os._exit(0)
    os.close(write)
    assert os.read(read, 1) == b"1"
    os.waitpid(pid, 0)
    assert hex_digest(arr) == _fresh(arr)  # the child's write was its own


BIG = "import numpy as np\na = np.random.default_rng(1).random(1_000_000)"  # 8 MB
STEP = "%%step total\ntotal = float(a.sum())"


def test_a_step_reading_a_large_array_sees_a_write_to_one_byte(kernel):
    kernel.ok(BIG)
    for _ in range(5):  # the array is watched from the third digest on
        kernel.ok(STEP)
    assert served(kernel.ok(STEP))
    assert kernel.value("__import__('resumable_cells').hashing.unwritten.watched()") >= 1
    for edit in ("a[-1] += 1.0", "a[0] += 1.0", "a.view('u1')[4_000_000] ^= 1"):
        kernel.ok(edit)
        reply = kernel.ok(STEP)
        assert not served(reply), (edit, reply.status_lines())
        assert kernel.value("total == float(a.sum())")
        assert served(kernel.ok(STEP))


def test_the_watch_can_be_turned_off():
    code = (
        "import numpy as np\n"
        "from resumable_cells.hashing import hex_digest, unwritten\n"
        "a = np.ones(1_000_000)\n"
        "for _ in range(5): hex_digest(a)\n"
        "print(unwritten.watching(), unwritten.watched())\n"
    )
    for value, expected in (("off", "False 0"), ("", "True 1")):
        env = {**os.environ, unwritten.ENV: value}
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        assert out.stdout.split() == expected.split(), (value, out.stdout, out.stderr)
