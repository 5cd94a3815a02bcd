"""An entry lists every blob it uses, and the store goes by that list: eviction keeps
what a kept entry uses, discarding an entry takes its blobs with it, a replaced entry
(`--force`, an expired one) releases the blobs nobody else uses, and the team cache
copies all of them. The unit's by-value copy (`engine/units/byvalue.py`) is the blob
that was once left out of the list."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from entries import binding, entry

from resumable_cells import formatting
from resumable_cells.errors import StoreError
from resumable_cells.storage.entries import Entry, Stream, Unit
from resumable_cells.storage.store import Store

MIB = np.zeros(1 << 17)  # 1 MiB: a blob file of its own


def _with_unit(store: Store, step: str, unit_blob: str, copy_blob: str) -> Entry:
    """An entry whose unit and whose by-value copy are blob files."""
    e = entry(store, step, [])
    unit = store.put_value(unit_blob, MIB + 1)
    copy = store.put_value(copy_blob, MIB + 2)
    e.unit = Unit(Stream(unit, ["board"], inner=["board"]), Stream(copy, [], names=["board"]))
    return e


def _on_disk(store: Store) -> set[str]:
    return {p.name for p in store.blob_dir.glob("*/*") if p.is_file()}


def test_an_entry_lists_its_units_by_value_copy_among_its_blobs(tmp_path):
    store = Store(tmp_path / "s")
    e = _with_unit(store, "grow", "a1" * 16, "b1" * 16)
    assert "a1" * 16 in e.blobs() and "b1" * 16 in e.blobs()
    assert Entry.from_json(json.loads(json.dumps(e.to_json()))).blobs() == e.blobs()


def test_eviction_keeps_the_by_value_copy_of_an_entry_it_keeps(tmp_path):
    store = Store(tmp_path / "s")
    store.put_entry("k", _with_unit(store, "grow", "a1" * 16, "b1" * 16))
    store.evict(store.used_bytes() + 1)  # nothing to evict: only leftovers of failed writes
    assert {"a1" * 16, "b1" * 16} <= _on_disk(store)
    kept = store.get_entry("k")
    assert kept is not None and kept.unit is not None and kept.unit.byvalue is not None
    assert float(store.get_value(kept.unit.byvalue.value)[0]) == 2.0


def test_discarding_an_entry_takes_its_by_value_copy_with_it(tmp_path):
    store = Store(tmp_path / "s")
    e = _with_unit(store, "grow", "a1" * 16, "b1" * 16)
    store.put_entry("k", e)
    store.discard_entry("k", store.get_entry("k"))
    assert "b1" * 16 not in _on_disk(store) and "a1" * 16 not in _on_disk(store)
    assert store.used_bytes() == sum(p.stat().st_size for p in store.blob_dir.glob("*/*"))


def test_a_replaced_entry_releases_the_blobs_no_other_entry_uses(tmp_path):
    store = Store(tmp_path / "s")
    shared = store.put_value("cc" * 16, MIB + 3)
    first = store.put_value("d1" * 16, MIB + 4)
    store.put_entry("k", entry(store, "x", [binding("x", first), binding("y", shared)]))
    store.put_entry("other", entry(store, "other", [binding("y", shared)]))
    second = store.put_value("d2" * 16, MIB + 5)
    store.put_entry("k", entry(store, "x", [binding("x", second), binding("y", shared)]))
    assert _on_disk(store) == {"cc" * 16, "d2" * 16}  # the old x went, y stays (shared)
    assert store.used_bytes() == sum(p.stat().st_size for p in store.blob_dir.glob("*/*"))
    assert store.entry_count() == 2


def test_a_row_of_another_layout_is_not_an_entry(tmp_path):
    store = Store(tmp_path / "s")
    store.put_entry("k", entry(store, "x", []))
    row = json.loads(store.index.get("entry:k"))
    del row["outputs"]
    from resumable_cells.storage import auth

    row.pop("mac")
    row["mac"] = auth.sign(auth.canonical(row))
    store.index.set("entry:k", json.dumps(row))
    assert store.entries() == []  # listed as nothing, never an error


def test_a_row_in_the_layout_of_earlier_versions_is_read_and_checked(tmp_path):
    """Rows are written as the JSON they are signed over with the mac last; a row an
    earlier version wrote (keys sorted, the mac among them, spaces) reads the same, and
    a change to either fails authentication."""
    store = Store(tmp_path / "s")
    store.put_entry("k", entry(store, "x", [binding("x", store.put_value("ab" * 16, [1]))]))
    row = json.loads(store.index.get("entry:k"))
    earlier = json.dumps(row, sort_keys=True)
    store.index.set("entry:k", earlier)
    served = Store(tmp_path / "s").get_entry("k")  # (a store that has not parsed it yet)
    assert served is not None and served.step == "x"
    assert [b.name for b in served.bindings] == ["x"]
    store.index.set("entry:k", earlier.replace('"step": "x"', '"step": "y"'))
    with pytest.raises(StoreError):
        Store(tmp_path / "s").get_entry("k")


def test_a_small_array_lives_in_its_entry_row_and_comes_back_as_it_was(tmp_path):
    """An array of a few KB is stored in the entry row with its data (no blob file to
    write, nor to open on a hit): it comes back equal, writable (a read-only one stays
    read-only), and a change to its bytes in the row fails the entry's authentication."""
    store = Store(tmp_path / "s")
    small, frozen = np.arange(100, dtype=np.int32), np.linspace(0, 1, 50)
    frozen.flags.writeable = False
    refs = [store.put_value(name, v) for name, v in (("aa" * 16, small), ("bb" * 16, frozen))]
    assert all(r.inline is not None and r.files() == [] for r in refs)
    big = store.put_value("cc" * 16, np.arange(1000.0))  # 8 KB: a blob file of its own
    assert big.inline is None and _on_disk(store) == {"cc" * 16}
    store.put_entry("k", entry(store, "x", [binding("s", refs[0]), binding("f", refs[1])]))
    served = Store(tmp_path / "s").get_entry("k")
    assert served is not None
    back = [store.get_value(b.value) for b in served.bindings if b.value is not None]
    assert back[0].tolist() == small.tolist() and back[1].tolist() == frozen.tolist()
    assert back[0].flags.writeable and not back[1].flags.writeable
    back[0][0] = 7  # its own memory: the stored row is untouched
    assert store.get_value(refs[0]).tolist() == small.tolist()
    row = store.index.get("entry:k")
    data = refs[0].inline  # the array's bytes are in its pickle (`serialize.IN_BAND_MAX`)
    assert data is not None
    forged = data[:-8] + ("B" if data[-8] != "B" else "C") + data[-7:]
    store.index.set("entry:k", row.replace(data, forged))
    with pytest.raises(StoreError):
        Store(tmp_path / "s").get_entry("k")


# -- in a kernel ----------------------------------------------------------------------------
BIG = "%%step big --force\nimport numpy as np\nx = np.random.default_rng().random(1 << 20)"


def test_a_step_run_twice_with_force_leaves_one_blob_and_ls_says_so(kernel):
    kernel.ok(BIG)
    kernel.ok(BIG)
    kernel.wait_for_writes()  # (8 MB: written behind)
    engine = "__import__('resumable_cells').ipython.magics.current_engine()"
    store_dir = Path(kernel.value(f"str({engine}.store.dir)"))
    blobs = [p for p in (store_dir / "blobs").glob("*/*") if p.is_file()]
    assert len([p for p in blobs if p.stat().st_size > (1 << 20)]) == 1
    out = subprocess.run(
        [sys.executable, "-m", "resumable_cells", "--dir", str(store_dir), "ls"],
        capture_output=True, text=True, check=True, env=kernel.env,
    ).stdout  # fmt: skip
    on_disk = formatting.size(sum(p.stat().st_size for p in blobs))
    row = next(line for line in out.splitlines() if line.split()[:1] == ["big"])
    assert row.split()[-2:] == on_disk.split(), (row, on_disk)
    assert f"blob files on disk: {on_disk}" in out
    assert kernel.value(f"{engine}.store.used_bytes()") == sum(p.stat().st_size for p in blobs)
