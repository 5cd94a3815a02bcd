"""Damaged stores: a truncated blob, a deleted blob, a corrupted SQLite index. Each is
a warning and a miss (or a rebuilt index), never a crash of the cell."""

from __future__ import annotations

from conftest import LOAD, fresh_kernel
from kernels import Kernel

CELL = "%%step v\nimport numpy as np\nvalues = np.arange(50_000)"


def _blobs(tmp_path):
    return [p for p in (tmp_path / ".resumable_cells" / "blobs").glob("*/*") if p.is_file()]


def test_truncated_blob_is_a_miss(tmp_path):
    k = fresh_kernel(tmp_path)
    try:
        k.ok(CELL)
        for p in _blobs(tmp_path):
            p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])
        r = k.ok(CELL)
        assert "could not be restored" in r.stderr and "ran" in r.status_lines()[0]
        assert k.value("int(values.sum())") == sum(range(50_000))
    finally:
        k.shutdown()


def test_deleted_blob_is_a_miss(tmp_path):
    k = fresh_kernel(tmp_path)
    try:
        k.ok(CELL)
        for p in _blobs(tmp_path):
            p.unlink()
        r = k.ok(CELL)
        assert "missing" in r.stderr and "ran" in r.status_lines()[0]
        assert "served" in k.ok(CELL).status_lines()[0]
    finally:
        k.shutdown()


def test_corrupted_index_is_set_aside_and_rebuilt(tmp_path):
    k = fresh_kernel(tmp_path)
    try:
        k.ok(CELL)
    finally:
        k.shutdown()
    db = tmp_path / ".resumable_cells" / "index" / "cache.db"
    data = bytearray(db.read_bytes())
    data[0:4096] = b"\x00garbage" * 512
    db.write_bytes(bytes(data))
    k = Kernel(tmp_path, env={"JPY_SESSION_NAME": "nb.ipynb", "TMPDIR": str(tmp_path / ".tmp")})
    try:
        k.ok(LOAD)
        r = k.ok(CELL)  # the store opens with the first step
        assert "index was damaged" in r.stderr
        assert list((tmp_path / ".resumable_cells").glob("index.damaged-*"))
        assert "ran" in r.status_lines()[0]
        assert "served" in k.ok(CELL).status_lines()[0]
    finally:
        k.shutdown()


def test_corrupted_record_does_not_break_status(tmp_path):
    k = fresh_kernel(tmp_path)
    try:
        k.ok(CELL)
        journal = next((tmp_path / ".resumable_cells" / "record").glob("*.jsonl"))
        journal.write_bytes(b"not a journal row" * 100)
        k.ok(
            "import resumable_cells as rc\neng = rc.ipython.magics.current_engine()\neng.journal.close()"
        )
        r = k.ok("%step status")
        assert "could not be read" in r.stderr
        assert "ran" in k.ok(CELL.replace("50_000", "50_001")).status_lines()[0]
    finally:
        k.shutdown()
