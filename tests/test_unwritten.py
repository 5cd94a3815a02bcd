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
import tempfile
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
    for _ in range(4):  # protected at the first digest, then served
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
    # The kernel writes the byte (a read(2) into the array's memory); the file holds the
    # byte's complement so that the write always changes it (a random byte would not,
    # one time in 256).
    fd, path = tempfile.mkstemp()
    try:
        os.write(fd, bytes([arr.view("u1")[at] ^ 0xFF]))
        os.close(fd)
        with open(path, "rb", buffering=0) as f:
            assert f.readinto(memoryview(arr).cast("B")[at : at + 1]) == 1
    finally:
        os.unlink(path)


def _write_memmove(arr, at):
    ctypes.memmove(arr.ctypes.data + at, bytes([arr.view("u1")[at] ^ 0x7F]), 1)


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
    for at in (arr.nbytes // 2, 3 * mmap.PAGESIZE + 8, 0, arr.nbytes - 8):
        for _ in range(4):  # watched again (a write stops the watch until unchanged)
            before = hex_digest(arr)
        assert unwritten.watched() >= 1
        write(arr, at)
        now = hex_digest(arr)
        assert now == _fresh(arr)
        assert now != before


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


def test_an_array_written_in_place_every_time_is_protected_once():
    before = unwritten.watched()
    arr = np.zeros(8 * _MB // 8)
    assert hex_digest(arr) == _fresh(arr)
    assert unwritten.watched() == before + 1  # protected at its first digest
    for _ in range(6):
        arr += 1.0
        assert hex_digest(arr) == _fresh(arr)
        assert unwritten.watched() == before  # found written: hashed, not protected again
    hex_digest(arr)
    hex_digest(arr)
    assert unwritten.watched() == before + 1  # found unchanged, then protected


def test_a_new_array_is_served_from_its_second_digest(monkeypatch):
    arr = np.random.default_rng(5).random(8 * _MB // 8)
    first = hex_digest(arr)
    hashes = _Hashes(monkeypatch)
    assert [hex_digest(arr) for _ in range(3)] == [first] * 3
    assert hashes.count == 0  # not hashed again after the digest that first saw it
    arr[123] += 1.0
    assert hex_digest(arr) == _fresh(arr) != first


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


KERNEL_CASES = {
    "array": (
        "import numpy as np\na = np.random.default_rng(1).random(1_000_000)",  # 8 MB
        "float(a.sum())",
        ["a[-1] += 1.0", "a[0] += 1.0", "a.view('u1')[4_000_000] ^= 1"],
    ),
    "frame": (
        "import numpy as np, pandas as pd\n"
        "a = pd.DataFrame(np.random.default_rng(1).random((200_000, 5)), columns=list('pqrst'))",
        "float(a.to_numpy().sum())",
        ["a.iat[100_000, 2] += 1.0", "a.columns = list('vwxyz')", "a['v'] = a['v'] * 2"],
    ),
}


def _each_edit_is_seen(kernel, step: str, total: str, edits: list[str]) -> None:
    for edit in edits:
        kernel.ok(edit)
        reply = kernel.ok(step)
        assert not served(reply), (edit, reply.status_lines())
        assert kernel.value(f"total == {total}")
        assert served(kernel.ok(step))


@pytest.mark.parametrize("case", list(KERNEL_CASES))
def test_a_step_reading_a_large_value_sees_a_change_to_it(kernel, case):
    setup, total, edits = KERNEL_CASES[case]
    step = f"%%step total\ntotal = {total}"
    kernel.ok(setup)
    for _ in range(5):  # watched from its first digest, served from then on
        kernel.ok(step)
    assert served(kernel.ok(step))
    assert kernel.value("__import__('resumable_cells').hashing.unwritten.watched()") >= 1
    _each_edit_is_seen(kernel, step, total, edits)


@pytest.mark.parametrize("case", list(KERNEL_CASES))
def test_a_value_restored_after_a_restart_is_watched_and_a_change_to_it_seen(kernel, case):
    setup, total, edits = KERNEL_CASES[case]
    step = f"%%step total\ntotal = {total}"
    kernel.ok(f"%%step make\n{setup}")
    kernel.ok("import resumable_cells; assert resumable_cells.wait_for_writes()")
    kernel.restart()
    kernel.ok("%load_ext resumable_cells")
    assert served(kernel.ok(f"%%step make\n{setup}"))
    kernel.ok(step)  # reads the restored value: its first digest, then it is watched
    assert served(kernel.ok(step))
    assert kernel.value("__import__('resumable_cells').hashing.unwritten.watched()") >= 1
    _each_edit_is_seen(kernel, step, total, edits)


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


# -- frames and series ------------------------------------------------------------------
def _frame(rows: int = 200_000, seed: int = 0):
    import pandas as pd

    return pd.DataFrame(np.random.default_rng(seed).random((rows, 5)), columns=list("abcde"))


def _fresh_frame(value) -> str:
    return hex_digest(value.copy(deep=True))


class _Digests:
    """Counts the digests of frames and series that read their columns."""

    def __init__(self, monkeypatch):
        self.count = 0
        real = unwritten.remembered

        def counted(value, shape, regions, compute):
            def digest():
                self.count += 1
                return compute()

            return real(value, shape, regions, digest)

        monkeypatch.setattr(unwritten, "remembered", counted)


def test_an_unchanged_frame_and_series_are_not_digested_again(monkeypatch):
    df = _frame()
    s = _frame(rows=600_000)["c"].copy()  # (4.8 MB: a series from 4 MB on is watched)
    for _ in range(4):
        hex_digest(df), hex_digest(s)
    digests = _Digests(monkeypatch)
    assert [hex_digest(df) for _ in range(3)] == [_fresh_frame(df)] * 3
    assert [hex_digest(s) for _ in range(3)] == [_fresh_frame(s)] * 3
    assert digests.count == 2  # the two copies'


def test_a_frame_of_one_block_is_one_region_and_a_fragmented_one_is_hashed(monkeypatch):
    import pandas as pd

    seen: dict[int, int] = {}
    real = unwritten.remembered

    def spy(value, shape, regions, compute):
        seen[id(value)] = len(regions)
        return real(value, shape, regions, compute)

    monkeypatch.setattr(unwritten, "remembered", spy)
    df = _frame()
    hex_digest(df)
    assert seen[id(df)] == 1  # five columns of one block: one piece of memory
    fragmented = pd.DataFrame(index=range(80_000))
    for i in range(100):  # a block each
        fragmented[f"c{i}"] = np.arange(80_000, dtype=float) + i
    for _ in range(4):
        assert hex_digest(fragmented) == _fresh_frame(fragmented)
    assert id(fragmented) not in seen  # more pieces than watching is worth: hashed


def test_a_frame_over_an_array_it_did_not_copy_is_watched(monkeypatch):
    # pandas' default before 3.0: each column strides through the array, whose whole
    # memory is watched; an int column in the middle makes a block between its columns.
    import pandas as pd

    data = np.random.default_rng(4).random((200_000, 6))
    df = pd.DataFrame(data, columns=list("abcdef"), copy=False)
    mixed = pd.DataFrame(data, columns=list("abcdef"), copy=False)
    mixed.insert(3, "n", np.arange(len(data)))
    for frame in (df, mixed):
        before = unwritten.watched()
        first = hex_digest(frame)
        assert unwritten.watched() == before + 1  # watched from this first digest
        with monkeypatch.context() as patched:
            digests = _Digests(patched)
            assert hex_digest(frame) == first and digests.count == 0  # served
    data[123_456, 4] += 1.0  # the array both frames stand on, written directly
    for frame in (df, mixed):
        assert hex_digest(frame) == _fresh_frame(frame)
    mixed.iat[7, 3] = -1  # the int column's own block
    assert hex_digest(mixed) == _fresh_frame(mixed)


def _add_and_drop(df):
    df["f"] = 1.0
    assert hex_digest(df) == _fresh_frame(df)
    del df["f"]


FRAME_CHANGES = {
    "iloc": lambda df: df.iloc.__setitem__((len(df) // 2, 2), 7.0),
    "iat, last cell": lambda df: df.iat.__setitem__((-1, -1), 3.0),
    "loc": lambda df: df.loc.__setitem__((len(df) // 3, "c"), 1.5),
    "a column replaced": lambda df: df.__setitem__("b", df["b"] + 1),
    "a column added, one dropped": _add_and_drop,
    "columns renamed": lambda df: setattr(df, "columns", list("vwxyz")),
    "columns' name": lambda df: setattr(df.columns, "name", "cols"),
    "index's name": lambda df: setattr(df.index, "name", "i"),
    "index moved": lambda df: setattr(df, "index", __import__("pandas").RangeIndex(5, 5 + len(df))),
    "attrs": lambda df: df.attrs.__setitem__("unit", "m"),
    "sorted": lambda df: df.sort_values("c").reset_index(drop=True),
}


@pytest.mark.parametrize("change", list(FRAME_CHANGES), ids=list(FRAME_CHANGES))
def test_a_change_to_a_watched_frame_is_seen(change):
    df = _frame()
    for _ in range(4):
        before = hex_digest(df)
    assert unwritten.watched() >= 1
    FRAME_CHANGES[change](df)
    now = hex_digest(df)
    assert now == _fresh_frame(df)
    if change not in ("sorted", "a column added, one dropped"):  # (as it was, then)
        assert now != before


def test_a_write_to_the_array_a_frame_was_made_from_is_seen():
    import pandas as pd

    a = np.random.default_rng(3).random(1_000_000)
    df = pd.DataFrame({"x": a}, copy=False)
    shares = np.shares_memory(np.asarray(df["x"].array), a)
    for _ in range(4):
        before = hex_digest(df)
    a[len(a) // 2] += 1.0
    assert hex_digest(df) == _fresh_frame(df)
    assert (hex_digest(df) != before) == shares


def test_a_change_to_a_watched_series_is_seen():
    import pandas as pd

    s = _frame(rows=600_000)["a"].copy()
    for change in (
        lambda: s.iloc.__setitem__(len(s) // 2, 5.0),
        lambda: setattr(s, "name", "z"),
        lambda: setattr(s, "index", pd.RangeIndex(1, len(s) + 1)),
    ):
        for _ in range(4):
            before = hex_digest(s)
        change()
        assert hex_digest(s) == _fresh_frame(s) != before


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["cell", "column", "label", "digest", "digest", "digest"]),
            st.integers(0, 10**9),
        ),
        max_size=12,
    )
)
def test_random_changes_to_a_frame_between_digests_are_always_seen(ops):
    df = _frame(rows=120_000)
    for op, n in ops:
        if op == "cell":
            df.iat[n % len(df), n % df.shape[1]] = float(n)
        elif op == "column":
            df[df.columns[n % df.shape[1]]] = df.iloc[:, n % df.shape[1]] * 2
        elif op == "label":
            df.columns = [f"{c}{n % 3}" for c in df.columns]
        else:
            assert hex_digest(df) == _fresh_frame(df)
    assert hex_digest(df) == _fresh_frame(df)


def test_the_first_frame_and_array_a_process_digests_are_watched():
    # The first value of a library registers its handlers: the digest that did so took
    # the long way, and its value was hashed again at its next two digests.
    code = (
        "import numpy as np, pandas as pd\n"
        "from resumable_cells.hashing import hex_digest, unwritten\n"
        "df = pd.DataFrame(np.random.default_rng(0).random((100_000, 10)))\n"
        "arr = np.random.default_rng(1).random(1_000_000)\n"
        "hex_digest(df), hex_digest(arr)\n"
        "print(unwritten.watched())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["2"], out.stderr


def test_a_value_restored_from_the_store_is_watched_and_its_writes_seen(tmp_path, monkeypatch):
    import pandas as pd

    from resumable_cells.engine.keep import value_check
    from resumable_cells.storage.store import Store

    store = Store(tmp_path / "s")
    stored = {
        "array": np.random.default_rng(7).random(8 * _MB // 8),
        "frame": _frame(rows=200_000, seed=8),
    }
    refs = {}
    for name, value in stored.items():
        d = hex_digest(value)
        refs[name] = store.put_value(d, value, name, value_check.checker(d, {}, name))
    for name, ref in refs.items():
        value = store.get_value(ref)
        assert unwritten.numpy_memory(value if name == "array" else np.asarray(value["a"].array)), (
            name
        )  # restored into memory only this process writes
        before = unwritten.watched()
        first = hex_digest(value)
        assert first == hex_digest(stored[name]) and unwritten.watched() == before + 1, name
        with monkeypatch.context() as patched:
            digests = _Digests(patched)
            assert hex_digest(value) == first and digests.count == 0, name  # served
        if name == "array":
            value[12345] += 1.0
        else:
            value.iat[777, 3] += 1.0
        fresh = _fresh(value) if name == "array" else _fresh_frame(value)
        assert hex_digest(value) == fresh != first, name
    assert isinstance(stored["frame"], pd.DataFrame)
