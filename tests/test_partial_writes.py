"""Blob files being written: where their temp files are, and how those a dead writer
left are found and removed (`storage/blobs.py`, `Store.__init__`)."""

from __future__ import annotations

import os
import subprocess
import sys

from resumable_cells.storage import blobs
from resumable_cells.storage.store import Store


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_blob_being_written_is_in_the_one_folder_of_partial_writes(tmp_path):
    root = tmp_path / "blobs"
    name = "ab" * 16
    with blobs.BlobWriter(root, name, 2) as writer:
        writer.start_part()
        writer.write(b"x" * 100)
        (temp,) = list((root / blobs.PARTIAL).iterdir())
        assert temp.name.startswith(f".{name}.{os.getpid()}.") and temp.suffix == ".tmp"
        writer.finish(b"{}")
    assert blobs.blob_path(root, name).is_file()
    assert list((root / blobs.PARTIAL).iterdir()) == []


def test_what_a_dead_writer_left_is_removed_when_the_store_opens(tmp_path):
    Store(tmp_path / "s").close()
    root = tmp_path / "s" / "blobs"
    dead = root / blobs.PARTIAL / f".{'cd' * 16}.{_dead_pid()}.0a1b2c3d.tmp"
    alive = root / blobs.PARTIAL / f".{'ef' * 16}.{os.getpid()}.0a1b2c3d.tmp"
    dead.write_bytes(b"partial")
    alive.write_bytes(b"still being written")
    Store(tmp_path / "s").close()
    assert not dead.exists() and alive.exists()


def test_a_store_written_before_the_folder_existed_is_looked_through_once(tmp_path):
    # Earlier versions wrote a blob's temp file beside it, in its own blob folder.
    Store(tmp_path / "s").close()
    root = tmp_path / "s" / "blobs"
    (root / blobs.PARTIAL).rmdir()
    (root / "cd").mkdir(exist_ok=True)
    left = root / "cd" / f".{'cd' * 16}.{_dead_pid()}.0a1b2c3d.tmp"
    left.write_bytes(b"partial")
    Store(tmp_path / "s").close()
    assert not left.exists()
    assert (root / blobs.PARTIAL).is_dir()  # from now on, one listing


def test_a_large_buffer_whose_write_fails_leaves_nothing_and_no_thread(tmp_path, monkeypatch):
    import threading

    import numpy as np

    root = tmp_path / "blobs"
    big = np.arange(6 << 20, dtype=np.float64)  # 48 MB: hashed by a thread as it is written
    blobs.write_blob(root, "12" * 16, big)
    assert (blobs.read_blob(root, "12" * 16) == big).all()

    calls = []
    real_write = blobs.BlobWriter.write

    def failing(self, data):
        calls.append(len(data))
        if len(calls) == 5:
            raise OSError(28, "No space left on device")
        real_write(self, data)

    monkeypatch.setattr(blobs.BlobWriter, "write", failing)
    try:
        blobs.write_blob(root, "34" * 16, big)
    except OSError as e:
        assert e.errno == 28
    else:
        raise AssertionError("the failed write was not raised")
    assert len(calls) == 5 and not blobs.blob_path(root, "34" * 16).exists()
    assert list((root / blobs.PARTIAL).iterdir()) == []
    assert not [t for t in threading.enumerate() if t.name == "resumable-cells-check"]
