"""The store's size limit: least recently used entries go first, shared blobs stay
while an entry uses them, and an evicted entry is a miss."""

from __future__ import annotations

import time

import numpy as np
from entries import binding, entry

from resumable_cells.storage.store import Store


def _put(store: Store, key: str, blob: str, value) -> None:
    ref = store.put_value(blob, value)
    store.put_entry(key, entry(store, key, [binding("v", ref)]))


def test_eviction_drops_least_recently_used_first(tmp_path):
    store = Store(tmp_path / "s")
    mb = np.zeros(1 << 17)  # 1 MiB each, so each is a blob file
    _put(store, "new", "b3" * 16, mb + 3)  # made first, used last
    _put(store, "mid", "b2" * 16, mb + 2)
    _put(store, "old", "b1" * 16, mb + 1)
    now = time.time()
    for key, t in (("old", now + 1), ("mid", now + 2), ("new", now + 3)):
        store.index.set("used:" + key, t)  # a known order of last use
    store._touched.clear()
    freed = store.evict(int(1.5 * (1 << 20)))
    assert freed >= 2 << 20
    assert store.get_entry("old") is None and store.get_entry("mid") is None
    assert store.get_entry("new") is not None
    assert float(store.get_value(store.get_entry("new").bindings[0].value)[0]) == 3.0


def test_an_entry_never_served_counts_from_when_it_was_made(tmp_path):
    store = Store(tmp_path / "s")
    mb = np.zeros(1 << 17)
    _put(store, "served", "e1" * 16, mb + 1)
    _put(store, "unserved", "e2" * 16, mb + 2)
    assert "used:unserved" not in store.index  # a live step's entry writes no use
    store.index.set("used:served", time.time() + 1)  # served after the other was made
    store._touched.clear()
    store.evict(int(1.5 * (1 << 20)))
    assert store.get_entry("unserved") is None and store.get_entry("served") is not None


def test_a_blob_shared_by_two_entries_stays_while_one_uses_it(tmp_path):
    store = Store(tmp_path / "s")
    shared, other = np.ones(1 << 17), np.zeros(1 << 17)
    _put(store, "a", "cc" * 16, shared)
    _put(store, "c", "dd" * 16, other)
    _put(store, "b", "cc" * 16, shared)  # the same value: the same blob as "a"
    now = time.time()
    for key, t in (("a", now + 1), ("c", now + 2), ("b", now + 3)):
        store.index.set("used:" + key, t)
    one_blob = max(p.stat().st_size for p in store.blob_dir.glob("*/*"))
    # Over by a byte: dropping "a" frees nothing (b still uses its blob), so "c" goes too.
    store.evict(2 * one_blob - 1)
    assert store.get_entry("a") is None and store.get_entry("c") is None
    kept = store.get_entry("b")
    assert kept is not None
    assert float(store.get_value(kept.bindings[0].value).sum()) == float(1 << 17)


def test_clear_all_and_clear_one_step_from_the_magic(kernel):
    kernel.ok("%%step one\nx = 1")
    kernel.ok("%%step two\ny = 2")
    assert "cleared 1 entry of one" in kernel.ok("%step clear one").stdout
    assert "ran" in kernel.ok("%%step one\nx = 1").status_lines()[0]
    assert "served" in kernel.ok("%%step two\ny = 2").status_lines()[0]
    assert "cleared every entry" in kernel.ok("%step clear --all").stdout
    assert "ran" in kernel.ok("%%step two\ny = 2").status_lines()[0]


def test_size_limit_is_set_from_the_magic_and_kept(kernel):
    out = kernel.ok("%step config --size-limit 2GiB").stdout
    assert "of 2.0 GiB" in out
    kernel.restart()
    kernel.ok("%load_ext resumable_cells")
    assert "of 2.0 GiB" in kernel.ok("%step config").stdout
