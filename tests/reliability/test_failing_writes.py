"""Writes that fail (a file-size limit, as on a full disk): the step still runs, its
values are in the namespace, a warning says it was not cached, no partial entry or
file remains, and the store works again once writes succeed."""

from __future__ import annotations

from conftest import fresh_kernel

from resumable_cells.storage.store import Store

LIMIT = (
    "import resource, signal\nsignal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
    "resource.setrlimit(resource.RLIMIT_FSIZE, ({soft}, resource.RLIM_INFINITY))"
)
CELL = "%%step big\nimport numpy as np\narr = np.arange(200_000)"


def test_failing_writes_lose_nothing_and_leave_nothing(tmp_path):
    k = fresh_kernel(tmp_path)
    try:
        k.ok(LIMIT.format(soft=64 * 1024))
        r = k.ok(CELL)
        assert "not cached" in r.stderr and "store failed" in r.stderr
        assert k.value("int(arr.sum())") == sum(range(200_000))
        store = Store(tmp_path / ".resumable_cells")
        try:
            assert store.history("big") == []
            assert not list(store.blob_dir.glob("*/.*.tmp"))
        finally:
            store.close()
        k.ok(LIMIT.format(soft="resource.RLIM_INFINITY"))
        assert "ran" in k.ok(CELL).status_lines()[0]
        assert "served" in k.ok(CELL).status_lines()[0]
    finally:
        k.shutdown()
