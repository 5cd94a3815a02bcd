"""Hash a float64 array of 1 MB, 100 MB and 1 GB.

This project's value digest against raw xxh3_128 over the buffer, memcpy (`np.copyto`
into a preallocated array: the speed of touching the memory once), joblib.hash and
marimo's hasher. Target: the digest at least as fast as memcpy.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from statistics import median

sys.path.insert(0, str(Path(__file__).resolve().parent))
# What hashing costs: a digest that an unwritten array reuses (`hashing/unwritten.py`,
# which step_100mb.py shows) would not measure it.
os.environ["RESUMABLE_CELLS_WATCH_WRITES"] = "off"

import numpy as np  # noqa: E402
import xxhash  # noqa: E402
from anchors import joblib_hash, marimo_available, marimo_hash  # noqa: E402
from common import GB, MB, Row, each_size, interleaved, main  # noqa: E402

from resumable_cells.hashing import digest  # noqa: E402

SIZES = [(MB, "1 MB", 21), (100 * MB, "100 MB", 9), (GB, "1 GB", 5)]
QUICK = [(MB, "1 MB", 7), (16 * MB, "16 MB", 5)]
OURS = "resumable-cells digest"
MEMCPY = "memcpy (np.copyto)"


def one_size(nbytes: int, label: str, repeat: int) -> list[Row]:
    a = np.random.default_rng(0).random(nbytes // 8)
    dst = np.empty_like(a)
    np.copyto(dst, a)  # touch the destination once: memcpy, not page faults
    mv = memoryview(a).cast("B")
    methods = {
        OURS: lambda: digest(a),
        "raw xxh3_128 over the buffer": lambda: xxhash.xxh3_128_digest(mv),
        MEMCPY: lambda: np.copyto(dst, a),
        "joblib.hash": lambda: joblib_hash(a),
    }
    if marimo_available():
        methods["marimo hasher (sha256)"] = lambda: marimo_hash(a)
    times = interleaved(methods, repeat, inner=20 if nbytes <= MB else 1)
    ours, memcpy = median(times[OURS]), median(times[MEMCPY])
    rows = []
    for name, ts in times.items():
        row = Row(
            "hash a float64 array", label, name, ts, note=f"{nbytes / median(ts) / GB:.1f} GB/s"
        )
        if name == OURS:
            row.ours = True
            row.target = ">= memcpy speed"
            row.met = ours <= memcpy
        rows.append(row)
    return rows


if __name__ == "__main__":
    main(each_size(one_size, SIZES, QUICK))
