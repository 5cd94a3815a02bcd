"""Write-behind in the store, without a kernel: a large value is pickled when its step
ends but written later, through a bounce buffer whose copy is what is hashed and
written; a value changed before its bytes were copied is never stored under its old
digest, one changed after is stored as it was; the writer thread puts an entry only
once its blobs are written, keeps them from eviction meanwhile, and says what failed."""

from __future__ import annotations

import os
import sys
import threading

import numpy as np
import pytest
import xxhash
from entries import binding, entry
from hypothesis import given, settings
from hypothesis import strategies as st

from resumable_cells.errors import NotWritten
from resumable_cells.hashing import arrays
from resumable_cells.hashing.values import Hasher
from resumable_cells.storage import blobs
from resumable_cells.storage.behind import NICENESS, Job, WriteBehind
from resumable_cells.storage.deferred import BEHIND_MIN, Batch
from resumable_cells.storage.entries import Value
from resumable_cells.storage.store import Store

BIG = BEHIND_MIN // 8 * 3  # float64 elements: three bounce buffers' worth and more
BOUNCE = bytearray(blobs.BOUNCE)


def big(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).random(BIG)


def digest(value) -> str:
    return Hasher({}).value_digest(value, "x")


def deferred_value(store: Store, value) -> Batch:
    batch = Batch()
    ref = store.put_value(digest(value), value, "x", later=batch, by_value=True)
    assert ref.inline is None and batch.names() == {ref.blob}
    return batch


def files(store: Store) -> list[str]:
    return sorted(p.name for p in store.blob_dir.glob("*/*"))


def test_a_plain_arrays_digest_is_its_prefix_and_its_memory():
    for a in (big(), np.arange(12, dtype=np.int32).reshape(3, 4), np.zeros((0, 3))):
        h = xxhash.xxh3_128(arrays.data_prefix(a))
        h.update(a.tobytes())
        assert h.hexdigest() == digest(a)
    for other in (big()[::2], np.asfortranarray(np.ones((3, 4))), np.array([1, "a"], object)):
        assert arrays.data_prefix(other) is None


def test_small_values_are_written_at_once_large_ones_left_to_the_batch(tmp_path):
    store = Store(tmp_path / "s")
    batch = Batch()
    small = np.ones(1000)
    store.put_value(digest(small), small, "small", later=batch, by_value=True)
    assert batch.blobs == [] and len(files(store)) == 1
    a = big()
    batch = deferred_value(store, a)
    assert len(files(store)) == 1  # not written yet
    (blob,) = batch.blobs
    assert blob.check.digest == digest(a)  # a plain array: checked against its own digest
    frame_like = {"a": big(1), "b": big(2)}  # anything else: its buffers' digest, now
    batch = deferred_value(store, frame_like)
    assert batch.blobs[0].check.prefix == b"" and batch.blobs[0].check.digest != digest(frame_like)


def test_a_deferred_blob_is_written_whole_and_reads_back(tmp_path):
    store = Store(tmp_path / "s")
    for value in (big(), {"a": big(1), "b": [big(2), 3]}):
        (blob,) = deferred_value(store, value).blobs
        written = store.write_deferred(blob, BOUNCE)
        assert written > BIG * 8 and store.used_bytes() >= written
        again = store.get_blob(blob.name)
        assert digest(again) == digest(value)
        assert store.write_deferred(blob, BOUNCE) == 0  # there already


def test_a_value_changed_before_it_is_written_is_not_written(tmp_path):
    store = Store(tmp_path / "s")
    for value, change in ((big(), lambda v: v.__setitem__(-1, 7.0)),
                          ({"a": big(1)}, lambda v: v["a"].__setitem__(0, 7.0))):  # fmt: skip
        (blob,) = deferred_value(store, value).blobs
        change(value)
        with pytest.raises(NotWritten):
            store.write_deferred(blob, BOUNCE)
        assert files(store) == [] and not list(store.blob_dir.glob("*/.*"))


@settings(max_examples=30, deadline=None)
@given(chunk=st.integers(0, BIG * 8 // blobs.BOUNCE + 2), where=st.floats(0, 1, exclude_max=True))
def test_a_change_during_the_write_is_stored_as_it_was_or_not_at_all(
    tmp_path_factory, chunk, where
):
    """The user writes into the array while its chunks are copied (here: just before
    chunk `chunk` is): a change in a chunk not copied yet refuses the blob; a change in
    one already copied leaves the blob as the value was when its step ended. Never the
    changed bytes under the old digest."""
    store = Store(tmp_path_factory.mktemp("s"))
    a = big()
    before = a.copy()
    (blob,) = deferred_value(store, a).blobs
    at = int(where * a.size)
    asked = []

    def dropped() -> bool:  # asked before each chunk is copied: the user's moment
        asked.append(1)
        if len(asked) == chunk + 1:
            a[at] = -1.0
        return False

    chunks = -(-a.nbytes // len(BOUNCE))
    refused = chunk < chunks and at * 8 // len(BOUNCE) >= chunk
    if refused:
        with pytest.raises(NotWritten):
            store.write_deferred(blob, BOUNCE, dropped)
        assert files(store) == []
    else:
        store.write_deferred(blob, BOUNCE, dropped)
        np.testing.assert_array_equal(store.get_blob(blob.name), before)


def _job(store: Store, key: str, value, put) -> Job:
    batch = deferred_value(store, value)
    e = entry(store, key, [binding("x", Value(batch.blobs[0].name))])
    return Job(key, key, e, batch.blobs, store, put)


def test_the_writer_puts_an_entry_once_its_blobs_are_written(tmp_path):
    store = Store(tmp_path / "s")
    writes = WriteBehind()
    gate = threading.Event()
    order = []

    def put(key, e):
        gate.wait(30)
        assert set(e.blobs()) <= set(files(store))  # every blob is there first
        order.append(key)
        store.put_entry(key, e)

    writes.submit(_job(store, "k1", big(1), put))
    writes.submit(_job(store, "k2", big(2), put))
    pending = writes.pending()
    assert pending.entries == 2 and pending.steps == ["k1", "k2"] and pending.nbytes > 2 * BIG
    assert writes.is_pending("k1") and not writes.wait(0.2)
    store.evict(0)  # eviction meanwhile leaves the blobs being written alone
    gate.set()
    assert writes.wait(60) and order == ["k1", "k2"]
    assert store.get_entry("k2") is not None and writes.take_failures() == []
    assert writes.pending().entries == 0


def test_a_failed_write_is_told_and_leaves_no_entry_nor_blob(tmp_path):
    store = Store(tmp_path / "s")
    writes = WriteBehind()
    a = big()
    job = _job(store, "k", a, store.put_entry)
    a[-1] = 5.0  # changed before the writer got to it
    released = []
    job.after.append(lambda: released.append(True))
    writes.submit(job)
    assert writes.wait(60) and released == [True]
    (failure,) = writes.take_failures()
    assert failure.step == "k" and "x changed in place before its bytes were written" in failure.why
    assert store.get_entry("k") is None and files(store) == []


def test_dropping_pending_entries_stores_none_of_them(tmp_path):
    store = Store(tmp_path / "s")
    writes = WriteBehind()
    putting, gate = threading.Event(), threading.Event()

    def put(key, e):
        putting.set()
        gate.wait(30)
        store.put_entry(key, e)

    writes.submit(_job(store, "first", big(1), put))  # being put when dropped: stored
    writes.submit(_job(store, "second", big(2), put))
    assert writes.after("second", lambda: None) and not writes.after("none", lambda: None)
    assert putting.wait(60)
    assert writes.drop("the kernel ended") == ["second"]
    gate.set()
    assert writes.wait(60)
    assert store.get_entry("first") is not None and store.get_entry("second") is None
    assert [(f.step, f.why) for f in writes.take_failures()] == [("second", "the kernel ended")]
    assert {n for n in files(store)} == set(store.get_entry("first").blobs()) - {"00" * 16}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a thread's own nice value")
def test_the_writer_yields_to_the_kernels_thread(tmp_path):
    store = Store(tmp_path / "s")
    writes = WriteBehind()
    seen = []

    def put(key, e):  # (runs in the writer's thread)
        seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
        store.put_entry(key, e)

    writes.submit(_job(store, "k", big(), put))
    assert writes.wait(60)
    mine = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    assert seen == [min(19, mine + NICENESS)]  # (19: the lowest priority there is)


def test_an_entry_put_when_idle_waits_for_the_loop_and_is_never_left_pending(tmp_path):
    import asyncio

    store = Store(tmp_path / "s")
    writes = WriteBehind()
    put = []

    def interrupted(key, e):
        raise KeyboardInterrupt

    async def cell():
        small = entry(store, "k", [])
        assert writes.put_when_idle(Job("k", "k", small, [], store, lambda k, e: put.append(k)))
        assert put == [] and writes.pending().entries == 1  # (the cell has not ended)
        await asyncio.sleep(0)  # the loop's turn
        assert put == ["k"] and writes.pending().entries == 0
        # Ctrl-C while it is being put (the next step started): it is not left pending
        writes.put_when_idle(Job("i", "i", small, [], store, interrupted))
        with pytest.raises(KeyboardInterrupt):
            writes.put_idle()
        assert writes.pending().entries == 0

    asyncio.run(cell())
    assert writes.put_when_idle(Job("k", "k", entry(store, "k", []), [], store, print)) is False
    store.close()
