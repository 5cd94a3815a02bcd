"""What loading a unit back costs when it is written (`engine/keep/unit_check.py`), for steps
whose names share objects, next to writing the unit and to the step itself.

Each step runs live (`--force`) through the engine on IPython's in-process shell; the
unit's write (`unit_check.put`: pickle, load back, check, store) and the check inside it
(`unit_check.check`: the load and the walk) are timed by wrapping them. The rule
docs/hashing.md states for keeping values applies to the whole write: at most a quarter of the
step, or 50 ms when the step is shorter than 0.2 s.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import inprocess  # noqa: E402
from common import Row, main, scratch_dir  # noqa: E402

from resumable_cells.engine.keep import build, unit_check

STEPS = {
    "a line plot (fig, ax)": (
        "import matplotlib\nmatplotlib.use('agg')\nimport matplotlib.pyplot as plt\n"
        "import numpy as np",
        "fig, ax = plt.subplots()\nax.plot(np.sin(np.linspace(0, 10, {n})))\n"
        "fig.canvas.draw()\nplt.close(fig)",
        1000,
    ),
    "a list and its alias": ("", "a = list(range({n}))\nb = a", 10**5),
    "an array and its view": ("import numpy as np", "x = np.zeros({n})\nv = x[::2]", 10**7),
    "records and the first one": (
        "import dataclasses\n@dataclasses.dataclass\nclass R:\n    name: str\n    score: float",
        "recs = [R(f'r{{i}}', i / 3) for i in range({n})]\nfirst = recs[0]",
        10**4,
    ),
    "an astropy Table's column changed": (
        "from astropy.table import Table\nimport numpy as np\n"
        "t = Table({{'a': np.arange({n}), 'b': np.ones({n})}})",
        "c = t['a']\nc[0] = 5",
        10**5,
    ),
}


class Timed:
    """Wraps a function, keeping the durations of its calls."""

    def __init__(self, fn):
        self.fn, self.times = fn, []

    def __call__(self, *args, **kwargs):
        t0 = time.perf_counter()
        try:
            return self.fn(*args, **kwargs)
        finally:
            self.times.append(time.perf_counter() - t0)


def run(args) -> list[Row]:
    sh = inprocess.shell()
    eng = inprocess.engine(scratch_dir("unit") / "store", sh)
    put, check = Timed(unit_check.put), Timed(unit_check.check)
    build.unit_check.put, unit_check.check = put, check  # (this process only)
    rows = []
    for label, (setup, body, n) in STEPS.items():
        size = max(n // 100, 10) if args.quick else n
        sh.run_cell(setup.format(n=size))
        cell = f"%%step u --force\n{body.format(n=size)}"
        put.times.clear(), check.times.clear()
        steps = []
        for _ in range(3 if args.quick else 7):
            t0 = time.perf_counter()
            inprocess.step(eng, cell)
            steps.append(time.perf_counter() - t0 - put.times[-1])
        if len(put.times) != len(steps):
            raise SystemExit(f"{label}: the step wrote no unit ({len(put.times)} writes)")
        step = sorted(steps)[len(steps) // 2]
        write = sorted(put.times)[len(put.times) // 2]
        allowed = max(0.25 * step, 0.05 if step < 0.2 else 0.0)
        note = f"{100 * write / step:.0f}% of the step"
        rows += [
            Row("write a unit", label, "unit_check.put (pickle, load back, check, store)",
                list(put.times), ours=True, target="<= 25% of the step (50 ms under 0.2 s)",
                met=write <= allowed, note=note),
            Row("write a unit", label, "of which the load back and check", list(check.times)),
            Row("write a unit", label, "the rest of the live step", steps),
        ]  # fmt: skip
    inprocess.close(eng)
    return rows


if __name__ == "__main__":
    main(run)
