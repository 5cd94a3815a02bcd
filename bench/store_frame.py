"""Store and restore the benchmark DataFrame (float, int, string, category, datetime).

Not a figure of the design's table: it shows what a frame with a string column costs,
the common case of a step's output. This project (`Store.put_blob`/`get_blob`) against
diskcache `set`/`get` (default pickling) and `joblib.dump`/`load`, warm page cache,
interleaved. The restored frames must equal the original.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from statistics import median

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import Row, interleaved, main, private_env, scratch_dir  # noqa: E402
from hash_frame import make_frame  # noqa: E402

OURS = "resumable-cells"


def run(args) -> list[Row]:
    import diskcache
    import joblib

    root = scratch_dir("frame-store")
    os.environ.update(private_env(root))
    from resumable_cells.hashing import digest
    from resumable_cells.storage import blobs
    from resumable_cells.storage.store import Store

    n = 10**5 if args.quick else 10**6
    size = f"{n:.0e} x 5".replace("e+0", "e")
    df = make_frame(n)
    store = Store(root / "store")
    cache = diskcache.Cache(str(root / "diskcache"), size_limit=1 << 40)
    name = digest(df).hex()
    jpath = root / "df.joblib"

    def clear(_m: str) -> None:
        blobs.blob_path(store.blob_dir, name).unlink(missing_ok=True)
        cache.delete("df")
        jpath.unlink(missing_ok=True)

    put = {
        OURS: lambda: store.put_blob(name, df),
        "diskcache": lambda: cache.set("df", df),
        "joblib": lambda: joblib.dump(df, jpath),
    }
    get = {
        OURS: lambda: store.get_blob(name),
        "diskcache": lambda: cache.get("df"),
        "joblib": lambda: joblib.load(jpath),
    }
    store_times = interleaved(put, 5, before=clear)
    for fn in put.values():
        fn()
    restore_times = interleaved(get, 5)
    equal = {m: bool(fn().equals(df)) for m, fn in get.items()}
    store.close()
    cache.close()
    shutil.rmtree(root, ignore_errors=True)
    labels = {
        "store": {OURS: "resumable-cells put_blob", "diskcache": "diskcache set (pickle)",
                  "joblib": "joblib.dump"},
        "restore": {OURS: "resumable-cells get_blob", "diskcache": "diskcache get (pickle)",
                    "joblib": "joblib.load"},
    }  # fmt: skip
    rows = []
    for op, times in (("store", store_times), ("restore", restore_times)):
        best_anchor = min(median(times[m]) for m in times if m != OURS)
        for m, ts in times.items():
            row = Row(f"{op} a DataFrame", size, labels[op][m], ts)
            if op == "restore" and not equal[m]:
                row.note = "RESTORED FRAME DIFFERS"
            if m == OURS:
                row.ours = True
                row.target = "faster than the anchors"
                row.met = median(ts) < best_anchor and all(equal.values())
            rows.append(row)
    return rows


if __name__ == "__main__":
    main(run)
