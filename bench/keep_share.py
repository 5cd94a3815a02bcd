"""What keeping a step's values costs next to the step itself, for steps of the kinds
notebooks are made of: a figure, a figure of 64 images, a model fit, a group-by, a list
of notebook dataclass records, a plotly figure.

For each step: its body (the cell's own work, a figure drawn as the inline backend
would), then what a live `%%step` adds for the values it binds: the digest of each,
its pickle written to a store, and the round-trip check. The rule docs/hashing.md states:
keeping a step's values costs at most a quarter of the step, or 50 ms when the step is
shorter than 0.2 s. Two kinds of value are known to break it, and their rows show by
how much: a figure bound under two names is pickled twice, and Python objects by the
thousand cost tens of microseconds each.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import Row, main, scratch_dir  # noqa: E402

from resumable_cells.engine.keep import value_check
from resumable_cells.hashing import Hasher  # noqa: E402
from resumable_cells.storage import serialize  # noqa: E402
from resumable_cells.storage.store import Store  # noqa: E402


@dataclasses.dataclass
class Record:
    name: str
    score: float
    tags: list


def _figure(n: int):
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots()
    x = np.linspace(0, 10, n)
    ax.plot(x, np.sin(x))
    ax.set_title("a sine")
    fig.canvas.draw()  # what the inline backend does to show it
    plt.close(fig)
    return {"fig": fig, "ax": ax}


def _grid(_: int):
    import matplotlib.pyplot as plt
    from sklearn.datasets import load_digits

    digits = load_digits(n_class=6)
    fig, ax = plt.subplots(8, 8, figsize=(6, 6))
    for i, axi in enumerate(ax.flat):
        axi.imshow(digits.images[i], cmap="binary")
        axi.set(xticks=[], yticks=[])
    fig.canvas.draw()
    plt.close(fig)
    return {"fig": fig, "ax": ax, "digits": digits}


def _forest(n: int):
    from sklearn.datasets import make_classification
    from sklearn.ensemble import RandomForestClassifier

    X, y = make_classification(n_samples=n, n_features=20, random_state=0)
    return {"model": RandomForestClassifier(n_estimators=50, random_state=0).fit(X, y)}


def _groupby(n: int):
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"k": rng.integers(0, 1000, n), "v": rng.random(n)})
    return {"summary": df.groupby("k")["v"].agg(["mean", "std", "count"])}


def _records(n: int):
    return {"records": [Record(f"r{i}", i / 3, [i, "x"]) for i in range(n)]}


def _plotly(n: int):
    import numpy as np
    import plotly.graph_objects as go

    x = np.arange(n)
    return {"pfig": go.Figure(go.Scatter(x=x, y=np.sin(x / 100)))}


STEPS = {
    "a line plot (fig, ax)": (_figure, 1000, 1000),
    "64 images (fig, ax, digits)": (_grid, 0, 0),
    "a random forest fit": (_forest, 2000, 500),
    "a group-by of 1e6 rows": (_groupby, 10**6, 10**5),
    "1e4 dataclass records": (_records, 10**4, 10**3),
    "a plotly figure of 1e4 points": (_plotly, 10**4, 10**3),
}


def _keep(values: dict, store: Store, ns: dict) -> None:
    for name, value in values.items():
        d = Hasher(ns).value_digest(value, name)
        store.put_value(d, value, name, value_check.checker(d, ns, name))


def run(args) -> list[Row]:
    import matplotlib

    matplotlib.use("agg")
    ns = {"Record": Record}
    serialize.set_main_namespace(ns)
    Record.__module__ = "__main__"  # as if the notebook defined it
    store = Store(scratch_dir("keep") / "store")
    rows = []
    for label, (make, n, quick_n) in STEPS.items():
        size = quick_n if args.quick else n
        steps, keeps = [], []
        for _ in range(3 if args.quick else 5):
            t0 = time.perf_counter()
            values = make(size)
            t1 = time.perf_counter()
            _keep(values, store, ns)
            t2 = time.perf_counter()
            steps.append(t1 - t0)
            keeps.append(t2 - t1)
        step, keep = sorted(steps)[len(steps) // 2], sorted(keeps)[len(keeps) // 2]
        allowed = max(0.25 * step, 0.05 if step < 0.2 else 0.0)
        rows.append(
            Row(
                "keep a step's values",
                label,
                "digest + store + round-trip check",
                keeps,
                ours=True,
                target="<= 25% of the step (50 ms under 0.2 s)",
                met=keep <= allowed,
                note=f"{100 * keep / step:.0f}% of the step",
            )  # fmt: skip
        )
        rows.append(Row("keep a step's values", label, "the step itself", steps))
    store.close()
    return rows


if __name__ == "__main__":
    main(run)
