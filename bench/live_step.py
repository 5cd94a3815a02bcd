"""A live run of a trivial step (`x = 1`), through a real kernel.

End to end: from the client's execute request to the kernel's idle status, a `%%step`
cell that runs live every time (`--force`: the key is computed, the body runs under the
tripwire and output capture, the sharing analysis and the process-state snapshot look at
what it did, and the entry is stored) against the same cell without the magic,
interleaved. In the kernel: `run_cell_magic("step", "trivial --force", ...)` against a
cell magic that does nothing; then the same in the same kernel after 5,000 more names
(IPython binds `_i<n>` for every cell it runs: a long session's namespace, which a live
step compares before and after it runs), and a step binding 40 names there.

Target (DESIGN.md): a live trivial step costs <= 1 ms more than the plain cell end to
end, with the sharing and process-state checks on.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import BenchKernel, Row, interleaved, main, private_env, scratch_dir  # noqa: E402

CELL = "x = 1"
STEP = "%%step trivial --force\nx = 1"
LONG = 5000  # names a long session adds (IPython's `_i<n>` for each cell run)
MANY = "\n".join(f"v{i} = [{i}]" for i in range(40))  # a step binding 40 names


def run(args) -> list[Row]:
    tmp = scratch_dir("live")
    k = BenchKernel(tmp, private_env(tmp))
    try:
        k.check("%load_ext resumable_cells\n%config StepMagics.quiet = False")
        k.check(
            "import numpy as np\nimport pandas as pd"
        )  # the usual imports: their state is watched
        k.check(STEP)
        n = 30 if args.quick else 200
        times = interleaved(
            {
                "%%step live run": lambda: k.run(STEP),
                "same cell without the magic": lambda: k.run(CELL),
            },
            n,
            warmup=5,
        )
        inside = k.time_magic("trivial --force", CELL, n)
        # A long session: IPython binds a name for every cell it runs (`_i42`), and a
        # live step compares the whole namespace before and after.
        k.check(f"for _k in range({LONG}): globals()[f'_i{{_k + 100000}}'] = f'x = {{_k}}'")
        long = k.time_magic("trivial --force", CELL, n)
        many = k.time_magic("many --force", MANY, n)
    finally:
        k.close()
    med = {name: sorted(ts)[len(ts) // 2] for name, ts in times.items()}
    overhead = med["%%step live run"] - med["same cell without the magic"]
    return [
        Row(
            "live run of a trivial step",
            "x = 1",
            "%%step live run (--force), end to end",
            times["%%step live run"],
            ours=True,
            target="<= 1 ms over the plain cell",
            met=overhead <= 1e-3,
            note=f"+{overhead * 1e3:.2f} ms over the plain cell",
        ),
        Row("live run of a trivial step", "x = 1", "same cell without the magic",
            times["same cell without the magic"]),
        Row("live run of a trivial step", "x = 1", "%%step live run, inside the kernel",
            inside["step"], ours=True, note="run_cell_magic, timed in the kernel"),
        Row("live run of a trivial step", "x = 1", "no-op cell magic (floor)", inside["noop"]),
        Row("live run of a trivial step", f"x = 1, {LONG:,} more names",
            "%%step live run, inside the kernel, in a long session", long["step"], ours=True,
            note=f"the namespace holds {LONG:,} more names, as after {LONG:,} cells"),
        Row("live run of a trivial step", f"x = 1, {LONG:,} more names",
            "%%step live run, inside the kernel, the same kernel before", inside["step"]),
        Row("live run of a trivial step", f"40 names bound, {LONG:,} more names",
            "%%step live run binding 40 names, inside the kernel, in a long session",
            many["step"], ours=True, note="v0 = [0] ... v39 = [39]"),
    ]  # fmt: skip


if __name__ == "__main__":
    main(run)
