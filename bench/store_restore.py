"""Store and restore a 1 GB float64 array (warm page cache), with peak memory.

This project (what a step does: digest the value, then `Store.put_blob`; on a hit
`Store.get_blob`) against diskcache `set`/`get` with its default pickling,
`joblib.dump`/`load`, `np.save`/`np.load`, and a raw `write` plus `readinto` into a
fresh array. Times are interleaved in one process. Peak memory is measured in a fresh
subprocess per method and direction (VmHWM from /proc/self/status, reset before the
operation), as a multiple of the value's size: the value itself counts 1.0.

Targets: store <= 0.4 s per GB with peak memory <= 1.1x the value; restore <= 1.2x the
raw readinto.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from statistics import median

sys.path.insert(0, str(Path(__file__).resolve().parent))
# What hashing costs: a digest that an unwritten array reuses (`hashing/unwritten.py`,
# which step_100mb.py shows) would not measure it.
os.environ["RESUMABLE_CELLS_WATCH_WRITES"] = "off"

import numpy as np  # noqa: E402
from common import GB, MB, Row, interleaved, main, private_env, scratch_dir  # noqa: E402

OURS = "resumable-cells"
METHODS = [OURS, "diskcache", "joblib", "numpy", "raw"]
LABELS = {
    "store": {
        OURS: "resumable-cells digest + put_blob",
        "diskcache": "diskcache set (pickle)",
        "joblib": "joblib.dump",
        "numpy": "np.save",
        "raw": "raw write",
    },
    "restore": {
        OURS: "resumable-cells get_blob",
        "diskcache": "diskcache get (pickle)",
        "joblib": "joblib.load",
        "numpy": "np.load",
        "raw": "raw readinto (fresh array)",
    },
}


class Targets:
    """Where each method keeps its copy, and how it stores and restores it."""

    def __init__(self, root: Path):
        import diskcache

        os.environ.update(private_env(root))
        from resumable_cells.storage.store import Store

        self.root = root
        self.store = Store(root / "store")
        # diskcache's default size limit is 1 GB: a 1 GB value would be evicted at once.
        self.cache = diskcache.Cache(str(root / "diskcache"), size_limit=1 << 40)
        self.paths = {
            "joblib": root / "a.joblib",
            "numpy": root / "a.npy",
            "raw": root / "a.raw",
        }
        self.name_file = root / "blob-name"

    def clear(self, method: str) -> None:
        """Remove the stored copy, so that a store writes a new file."""
        if method == OURS:
            if self.name_file.exists():
                from resumable_cells.storage import blobs

                name = self.name_file.read_text()
                blobs.blob_path(self.store.blob_dir, name).unlink(missing_ok=True)
        elif method == "diskcache":
            self.cache.delete("a")
        else:
            self.paths[method].unlink(missing_ok=True)

    def store_value(self, method: str, a) -> None:
        if method == OURS:
            from resumable_cells.hashing import digest

            name = digest(a).hex()
            self.store.put_blob(name, a)
            if not self.name_file.exists():
                self.name_file.write_text(name)
        elif method == "diskcache":
            self.cache.set("a", a)
        elif method == "joblib":
            import joblib

            joblib.dump(a, self.paths["joblib"])
        elif method == "numpy":
            np.save(self.paths["numpy"], a)
        else:
            with open(self.paths["raw"], "wb", buffering=0) as f:
                f.write(memoryview(a).cast("B"))

    def restore_value(self, method: str, nbytes: int):
        if method == OURS:
            return self.store.get_blob(self.name_file.read_text())
        if method == "diskcache":
            return self.cache.get("a")
        if method == "joblib":
            import joblib

            return joblib.load(self.paths["joblib"])
        if method == "numpy":
            return np.load(self.paths["numpy"])
        out = np.empty(nbytes // 8, dtype=np.float64)
        with open(self.paths["raw"], "rb", buffering=0) as f:
            f.readinto(memoryview(out).cast("B"))
        return out

    def close(self) -> None:
        self.store.close()
        self.cache.close()


def make_array(nbytes: int):
    return np.random.default_rng(0).random(nbytes // 8)


def peak(root: Path, method: str, op: str, nbytes: int) -> dict:
    """In this (fresh) process: peak memory of one store or restore, in value sizes."""
    from common import reset_peak, vm_status

    t = Targets(root)
    base = vm_status("VmRSS")
    a = make_array(nbytes) if op == "store" else None
    t.clear(method) if op == "store" else None
    reset_peak()
    before = vm_status("VmRSS")
    if op == "store":
        t.store_value(method, a)
    else:
        a = t.restore_value(method, nbytes)
    hwm = vm_status("VmHWM")
    t.close()
    # The value counts once; anything above it is what the method itself held.
    over = (hwm - base) if op == "store" else (hwm - before)
    return {"peak_x": over / nbytes, "extra_mb": (hwm - before) / MB}


def peak_in_subprocess(root: Path, method: str, op: str, nbytes: int) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--peak", method, "--op", op, "--dir", str(root)]
        + ["--nbytes", str(nbytes)],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1] if out.stderr else "failed"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def timings(t: Targets, nbytes: int) -> tuple[dict, dict, dict[str, bool]]:
    a = make_array(nbytes)

    def clear_all(_name: str) -> None:
        # Every method starts from an empty directory: no dirty pages of the others'
        # files left for the kernel to throttle its write against.
        for m in METHODS:
            t.clear(m)

    store_times = interleaved(
        {m: (lambda m=m: t.store_value(m, a)) for m in METHODS}, 5, before=clear_all
    )
    for m in METHODS:  # each method's copy, for the restores (warm page cache)
        t.clear(m)
        t.store_value(m, a)
    restore_times = interleaved({m: (lambda m=m: t.restore_value(m, nbytes)) for m in METHODS}, 5)
    equal = {}
    for m in METHODS:
        back = t.restore_value(m, nbytes)
        equal[m] = back is not None and bool(np.array_equal(back, a))
    return store_times, restore_times, equal


def run(args) -> list[Row]:
    if args.peak:
        print(json.dumps(peak(Path(args.dir), args.peak, args.op, args.nbytes)))
        sys.exit(0)
    nbytes = 64 * MB if args.quick else GB
    size = f"{nbytes // MB} MB" if nbytes < GB else f"{nbytes // GB} GB"
    root = scratch_dir("store")
    t = Targets(root)
    store_times, restore_times, equal = timings(t, nbytes)
    t.close()
    rows = []
    for op, times in (("store", store_times), ("restore", restore_times)):
        figure = "store an array" if op == "store" else "restore an array (warm cache)"
        raw = median(times["raw"])
        for m in METHODS:
            mem = peak_in_subprocess(root, m, op, nbytes)
            ts = times[m]
            note = (
                f"peak {mem['peak_x']:.2f}x value"
                if "peak_x" in mem
                else f"peak: {mem.get('error')}"
            )
            if op == "restore" and not equal[m]:
                note += "; RESTORED VALUE DIFFERS"
            row = Row(figure, size, LABELS[op][m], ts, note=note, extra=mem)
            if m == OURS:
                row.ours = True
                med = median(ts)
                if op == "store":
                    row.target = "<= 0.4 s/GB, peak <= 1.1x"
                    row.met = med / (nbytes / GB) <= 0.4 and mem.get("peak_x", 9) <= 1.1
                    row.note += f"; {med / raw:.2f}x raw write"
                else:
                    row.target = "<= 1.2x raw readinto"
                    row.met = med <= 1.2 * raw and equal[m]
                    row.note += f"; {med / raw:.2f}x raw readinto"
            rows.append(row)
    subprocess.run(["rm", "-rf", str(root)], check=False)
    return rows


def _args(ap) -> None:
    ap.add_argument("--peak", help=argparse_hidden())
    ap.add_argument("--op", choices=["store", "restore"])
    ap.add_argument("--dir")
    ap.add_argument("--nbytes", type=int)


def argparse_hidden():
    import argparse

    return argparse.SUPPRESS


if __name__ == "__main__":
    main(run, _args)
