"""Hash a DataFrame of 1e7 rows x 5 columns (float, int, string, category, datetime).

This project's digest against joblib.hash and marimo's hasher (a frame is no numeric
array to marimo, so it takes its deterministic-pickle route). The digest must be the
same for the frame, its deep copy, and its store/restore round trip: the row says so.
Target: <= 0.5 s.
"""

from __future__ import annotations

import copy
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from anchors import joblib_hash, marimo_available, marimo_hash  # noqa: E402
from common import Row, interleaved, main, private_env, scratch_dir  # noqa: E402


def make_frame(n: int) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        {
            "f": rng.random(n),
            "i": rng.integers(0, 1 << 40, n),
            "s": [f"item-{i % 100_003}" for i in range(n)],
            "c": pd.Categorical(rng.choice(["red", "green", "blue", "cyan"], n)),
            "d": pd.date_range("2020-01-01", periods=n, freq="s"),
        }
    )


def run(args) -> list[Row]:
    tmp = scratch_dir("frame")
    os.environ.update(private_env(tmp))
    from resumable_cells.hashing import digest
    from resumable_cells.storage.store import Store

    n = 10**5 if args.quick else 10**7
    size = f"{n:.0e} x 5".replace("e+0", "e")
    df = make_frame(n)
    deep = copy.deepcopy(df)
    store = Store(tmp / "store")
    d = digest(df)
    store.put_blob(d.hex(), df)
    restored = store.get_blob(d.hex())
    same = digest(deep) == d and digest(restored) == d
    equal = restored.equals(df)
    store.close()
    del restored

    methods = {
        "resumable-cells digest": lambda: digest(df),
        "resumable-cells digest, deep copy": lambda: digest(deep),
        "joblib.hash": lambda: joblib_hash(df),
    }
    if marimo_available():
        methods["marimo hasher (pickle, sha256)"] = lambda: marimo_hash(df)
    times = interleaved(methods, 5, warmup=0)  # the digests above warmed it; joblib takes 10+ s
    rows = []
    for name, ts in times.items():
        row = Row("hash a DataFrame", size, name, ts)
        if name == "resumable-cells digest":
            row.ours = True
            row.target = "<= 0.5 s, equal digests"
            row.met = sorted(ts)[2] <= 0.5 and same
            row.note = (
                "digest equal for copy and round trip"
                if same
                else "DIGESTS DIFFER after copy or round trip"
            ) + ("; restored frame equal" if equal else "; RESTORED FRAME DIFFERS")
        rows.append(row)
    return rows


if __name__ == "__main__":
    main(run)
