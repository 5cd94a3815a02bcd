"""The store never trusts what it did not write: tampered or planted blobs and index
rows are misses, and a planted pickle is never loaded."""

from __future__ import annotations

import os
import pickle
import stat

import pytest
from entries import entry

from resumable_cells.storage import blobs
from resumable_cells.storage.store import Store, StoreError


class _Boom:
    """Unpickling this creates a file: the proof that a pickle was loaded."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_store_dir_is_private_and_key_file_is_0600(tmp_path):
    store = Store(tmp_path / "s")
    store.put_blob("ab" * 16, [1, 2, 3])
    assert stat.S_IMODE(os.stat(store.dir).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(os.environ["RESUMABLE_CELLS_KEY_FILE"]).st_mode) == 0o600


def test_a_modified_blob_fails_and_is_never_unpickled(tmp_path):
    store = Store(tmp_path / "s")
    name = "cd" * 16
    store.put_blob(name, {"x": 1})
    path = blobs.blob_path(store.blob_dir, name)
    marker = tmp_path / "pwned"
    raw = bytearray(path.read_bytes())
    evil = pickle.dumps(_Boom(str(marker)), protocol=5)
    header_end = raw.index(b"}") + 1
    start = (header_end + 63) // 64 * 64
    raw[start : start + len(evil)] = evil  # overwrite the pickle stream in place
    path.write_bytes(bytes(raw))
    with pytest.raises(blobs.BlobError):
        store.get_blob(name)
    assert not marker.exists()


def test_a_blob_from_another_users_store_fails(tmp_path, monkeypatch):
    store = Store(tmp_path / "s")
    name = "ef" * 16
    store.put_blob(name, "secret data")
    monkeypatch.setenv("RESUMABLE_CELLS_KEY_FILE", str(tmp_path / "other.key"))
    with pytest.raises(blobs.BlobError):
        store.get_blob(name)


@pytest.mark.parametrize("cut", [10, 100, -5])
def test_truncated_blobs_fail_cleanly(tmp_path, cut):
    import numpy as np

    store = Store(tmp_path / "s")
    name = "12" * 16
    store.put_blob(name, np.arange(10_000))
    path = blobs.blob_path(store.blob_dir, name)
    data = path.read_bytes()
    path.write_bytes(data[:cut])
    with pytest.raises(blobs.BlobError):
        store.get_blob(name)


@pytest.mark.parametrize("damage", ["intact", "a byte changed near its end", "cut in its middle"])
def test_a_large_buffer_checked_while_it_is_read_fails_when_damaged(tmp_path, damage):
    # 40 MB: past the size whose chunks a thread hashes while the next ones are read
    import numpy as np

    store = Store(tmp_path / "s")
    name = "34" * 16
    value = np.random.default_rng(1).random(5 << 20)
    store.put_blob(name, value)
    path = blobs.blob_path(store.blob_dir, name)
    if damage == "intact":
        assert np.array_equal(store.get_blob(name), value)
        return
    with open(path, "r+b") as f:
        if damage == "cut in its middle":
            f.truncate(os.path.getsize(path) // 2)
        else:
            f.seek(-1000, os.SEEK_END)
            byte = f.read(1)
            f.seek(-1000, os.SEEK_END)
            f.write(bytes([byte[0] ^ 1]))
    with pytest.raises(blobs.BlobError):
        store.get_blob(name)


def test_a_tampered_entry_row_fails_authentication(tmp_path):
    store = Store(tmp_path / "s")
    store.put_entry("k1", entry(store, "s", []))
    raw = store.index.get("entry:k1").replace('"step":"s"', '"step":"t"')
    raw = raw.replace('"step": "s"', '"step": "t"')
    store.index.set("entry:k1", raw)
    with pytest.raises(StoreError):
        store.get_entry("k1")


def test_a_pickled_index_row_is_refused_not_loaded(tmp_path):
    import diskcache

    marker = tmp_path / "pwned"
    store = Store(tmp_path / "s")
    store.close()
    plain = diskcache.Cache(str(tmp_path / "s" / "index"))  # an attacker's writer
    plain.set("entry:k2", _Boom(str(marker)))
    plain.close()
    store = Store(tmp_path / "s")
    with pytest.raises(StoreError):
        store.get_entry("k2")
    assert not marker.exists()


def test_a_tampered_blob_is_a_miss_with_a_warning_in_a_kernel(kernel, tmp_path):
    cell = (
        "%%step t\nimport numpy as np\nvalue = np.arange(100_000)"  # large enough for a blob file
    )
    kernel.ok(cell)
    for path in (tmp_path / ".resumable_cells" / "blobs").glob("*/*"):
        data = bytearray(path.read_bytes())
        data[-1] ^= 0xFF
        path.write_bytes(bytes(data))
    r = kernel.ok(cell)
    assert "could not be restored" in r.stderr
    assert "ran" in r.status_lines()[0]
    assert kernel.value("len(value)") == 100_000
    assert "served" in kernel.ok(cell).status_lines()[0]  # the bad blob was replaced
