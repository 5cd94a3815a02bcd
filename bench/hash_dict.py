"""Hash a dict of 1e5 entries: small lists and strings (a config, a vocabulary, a batch
of records). This project's digest against joblib.hash and marimo's hasher."""

from __future__ import annotations

import copy
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from anchors import joblib_hash, marimo_available, marimo_hash  # noqa: E402
from common import Row, interleaved, main  # noqa: E402

from resumable_cells.hashing import digest  # noqa: E402


def make_dict(n: int) -> dict:
    return {
        f"key-{i}": ([i, i * 0.5, f"tag-{i % 97}"] if i % 2 else f"a short string {i}")
        for i in range(n)
    }


def run(args) -> list[Row]:
    n = 10**4 if args.quick else 10**5
    value = make_dict(n)
    same = digest(copy.deepcopy(value)) == digest(value)
    methods = {
        "resumable-cells digest": lambda: digest(value),
        "joblib.hash": lambda: joblib_hash(value),
    }
    if marimo_available():
        methods["marimo hasher (sha256)"] = lambda: marimo_hash(value)
    times = interleaved(methods, 9)
    rows = []
    for name, ts in times.items():
        row = Row("hash a dict of lists/strings", f"{n:.0e}".replace("e+0", "e"), name, ts)
        if name == "resumable-cells digest":
            row.ours = True
            row.target = "faster than joblib.hash"
            row.met = sorted(ts)[4] < sorted(times["joblib.hash"])[4] and same
            row.note = "digest equal for deep copy" if same else "DIGEST DIFFERS after deep copy"
        rows.append(row)
    return rows


if __name__ == "__main__":
    main(run)
