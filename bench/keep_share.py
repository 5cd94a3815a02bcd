"""What a live `%%step` adds to a cell of the kinds notebooks are made of: a figure, a
figure of 64 images, a model fit, a group-by, a list of notebook dataclass records, a
plotly figure.

Each cell runs on IPython's in-process shell through the engine, as a plain cell and as a
live step (`--force`), one after the other in each round (the order swapped every
round, a full collection of the garbage collector before each, untimed), so that the
machine's drift slows both alike. What the step adds is, round by round, its time minus
the plain cell's: keeping the values it binds (their digests, pickles, the round-trip
check, the entry) and the step's fixed cost. The engine's own
collector pause applies, as in a kernel. The rule docs/hashing.md states: keeping a
step's values costs at most a quarter of the step, or 50 ms when the step is shorter than
0.2 s.
"""

from __future__ import annotations

import gc
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import inprocess  # noqa: E402
from common import Row, main, scratch_dir  # noqa: E402

from resumable_cells.ipython import plan

PLOT = (
    "import matplotlib\nmatplotlib.use('agg')\nimport matplotlib.pyplot as plt\nimport numpy as np"
)

# label: (setup, cell, size, size with --quick); the cells draw as the inline backend
# would (`fig.canvas.draw()`) and close the figure after.
CELLS = {
    "a line plot (fig, ax)": (
        PLOT,
        "fig, ax = plt.subplots()\nx = np.linspace(0, 10, {n})\nax.plot(x, np.sin(x))\n"
        "ax.set_title('a sine')\nfig.canvas.draw()\nplt.close(fig)",
        1000, 1000,
    ),
    "64 images (fig, ax, digits)": (
        PLOT + "\nfrom sklearn.datasets import load_digits",
        "digits = load_digits(n_class=6)\nfig, ax = plt.subplots(8, 8, figsize=(6, 6))\n"
        "for i, axi in enumerate(ax.flat):\n"
        "    axi.imshow(digits.images[i], cmap='binary')\n"
        "    axi.set(xticks=[], yticks=[])\n"
        "fig.canvas.draw()\nplt.close(fig)",
        0, 0,
    ),
    "a random forest fit": (
        "from sklearn.datasets import make_classification\n"
        "from sklearn.ensemble import RandomForestClassifier",
        "X, y = make_classification(n_samples={n}, n_features=20, random_state=0)\n"
        "model = RandomForestClassifier(n_estimators=50, random_state=0).fit(X, y)",
        2000, 500,
    ),
    "a group-by of 1e6 rows": (
        "import numpy as np\nimport pandas as pd",
        "rng = np.random.default_rng(0)\n"
        "df = pd.DataFrame({{'k': rng.integers(0, 1000, {n}), 'v': rng.random({n})}})\n"
        "summary = df.groupby('k')['v'].agg(['mean', 'std', 'count'])",
        10**6, 10**5,
    ),
    "1e4 dataclass records": (
        "import dataclasses\n@dataclasses.dataclass\nclass Record:\n"
        "    name: str\n    score: float\n    tags: list",
        "records = [Record(f'r{{i}}', i / 3, [i, 'x']) for i in range({n})]",
        10**4, 10**3,
    ),
    "a plotly figure of 1e4 points": (
        "import numpy as np\nimport plotly.graph_objects as go",
        "x = np.arange({n})\npfig = go.Figure(go.Scatter(x=x, y=np.sin(x / 100)))",
        10**4, 10**3,
    ),
}  # fmt: skip


def _round(sh, eng, body: str, step_first: bool) -> tuple[float, float]:
    """(the plain cell's time, the live step's), run in the order asked."""
    cells = {
        "plain": lambda: sh.run_cell(body),
        "step": lambda: inprocess.step(eng, f"%%step keep --force\n{body}"),
    }
    times = {}
    for which in sorted(cells, reverse=step_first):
        gc.collect()  # (a full collection falls in neither cell: its cost is the heap's)
        t0 = time.perf_counter()
        cells[which]()
        times[which] = time.perf_counter() - t0
    return times["plain"], times["step"]


def run(args) -> list[Row]:
    sh = inprocess.shell()
    eng = inprocess.engine(scratch_dir("keep") / "store", sh)
    rows = []
    for label, (setup, cell, n, quick_n) in CELLS.items():
        body = cell.format(n=quick_n if args.quick else n)
        if not sh.run_cell(setup).success:
            raise SystemExit(f"{label}: the setup cell failed")
        warm = sum(_round(sh, eng, body, step_first=False))
        # seven rounds, or as many as fit in two seconds up to 31: a short cell's
        # difference is a few milliseconds, as noisy as the cell itself
        rounds = 3 if args.quick else max(7, min(31, int(2.0 / warm)))
        plain, stepped = [], []
        for r in range(rounds):
            p, s = _round(sh, eng, body, step_first=bool(r % 2))
            plain.append(p)
            stepped.append(s)
        eng.wait_for_writes()
        if [r.action for r in plan.make(eng, [("keep", body, None)])] != ["serve"]:
            raise SystemExit(f"{label}: the step stored no entry to serve")
        added = [s - p for s, p in zip(stepped, plain)]
        cost, step = sorted(added)[len(added) // 2], sorted(plain)[len(plain) // 2]
        allowed = max(0.25 * step, 0.05 if step < 0.2 else 0.0)
        rows += [
            Row("keep a step's values", label, "a live %%step over the plain cell", added,
                ours=True, target="<= 25% of the step (50 ms under 0.2 s)",
                met=cost <= allowed, note=f"{100 * cost / step:.0f}% of the step"),
            Row("keep a step's values", label, "the same cell without the magic", plain),
        ]  # fmt: skip
    inprocess.close(eng)
    return rows


if __name__ == "__main__":
    main(run)
