"""The sharing analysis and the process-state check of one live step, per step.

What a live pure step adds to find what its values share (`engine/keep/sharing.py`: walk
the inputs before, what it bound or changed after, look one level deep at the other
names) and what it changed in the process (`engine/state/process_state.py`: a snapshot before,
a comparison after), timed in this process on two namespaces:

- 1,000 small names (ints, strings, short lists and dicts), a step that reads three of
  them and binds a list and a dict holding one of its inputs;
- a few large values (4 arrays of 100 MB, 2 frames of 1e6 rows x 5), a step that reads
  an array and a frame and binds a view of the array and a new frame; the peak memory
  the analysis allocates says whether it copied a buffer.

Anchor: the id graph of the whole namespace, every name walked on every step, as a
checkpointing tool that tracks sharing without knowing what a step read does (Kishu's
co-variables, ElasticNotebook's object-id graph), with the same walker.

Target (DESIGN.md): < 1 ms per step for 1,000 small names, no copy of large buffers.
"""

from __future__ import annotations

import sys
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import MB, Row, interleaved, main  # noqa: E402

from resumable_cells.engine.keep import sharing
from resumable_cells.engine.objects import objgraph
from resumable_cells.engine.state import process_state


def small_namespace() -> dict:
    ns: dict = {}
    for i in range(1000):
        kind = i % 4
        ns[f"v{i}"] = (i, f"name {i}", [i, i + 1, i + 2], {"a": i, "b": [i]})[kind]
    return ns


def large_namespace(quick: bool) -> dict:
    import numpy as np
    import pandas as pd

    n = (1 if quick else 100) * MB // 8
    rows = 10_000 if quick else 1_000_000
    ns: dict = {f"arr{i}": np.random.default_rng(i).random(n) for i in range(4)}
    for i in range(2):
        ns[f"df{i}"] = pd.DataFrame({c: np.arange(rows, dtype=float) for c in "abcde"})
    return ns


def step_small(ns: dict) -> tuple[list[str], list[str]]:
    """Reads v2, v3, v5; binds `out` (a list holding v2) and `summary` (a dict)."""
    ns["out"] = [ns["v2"], ns["v3"]]
    ns["summary"] = {"n": len(ns["v5"]), "first": ns["v2"][0]}
    return ["v2", "v3", "v5"], ["out", "summary"]


def step_large(ns: dict) -> tuple[list[str], list[str]]:
    """Reads arr0 and df0; binds a view of arr0 and a new frame."""
    ns["head"] = ns["arr0"][:1000]
    ns["df_sum"] = ns["df0"][["a", "b"]]
    return ["arr0", "df0"], ["head", "df_sum"]


def analysis(ns: dict, inputs: list[str], bound: list[str]):
    """What a live step does beside running the body: before, after, the plan."""
    held = sharing.before(ns, inputs)
    state = process_state.snapshot()
    changed = {}  # digests are computed for the key and the entry anyway: not timed here
    plan = sharing.analyse(held, ns, bound, changed, {})
    process_state.changes(state)
    return plan


def whole_namespace(ns: dict):
    graph = objgraph.Graph(ns)
    for name, value in ns.items():
        graph.add(name, value)
    return graph


def figure(label: str, ns: dict, step, repeat: int, inner: int) -> list[Row]:
    inputs, bound = step(ns)
    ours, anchor = "sharing analysis + process state", "id graph of the whole namespace"
    times = interleaved(
        {ours: lambda: analysis(ns, inputs, bound), anchor: lambda: whole_namespace(ns)},
        repeat,
        warmup=3,
        inner=inner,
    )
    tracemalloc.start()
    plan = analysis(ns, inputs, bound)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    med = sorted(times[ours])[len(times[ours]) // 2]
    stored = [f"alone: {', '.join(plan.alone)}", f"one unit: {', '.join(plan.unit_bind)}"]
    return [
        Row("sharing analysis per live step", label, ours, times[ours], ours=True,
            target="< 1 ms (1,000 names), no buffer copied", met=med < 1e-3 and peak < MB,
            note=f"peak allocation {peak / 1024:.0f} KiB; {'; '.join(stored)}"),
        Row("sharing analysis per live step", label, anchor, times[anchor]),
    ]  # fmt: skip


def run(args) -> list[Row]:
    n = 30 if args.quick else 300
    rows = figure("1,000 small names", small_namespace(), step_small, n, 10)
    rows += figure("4 x 100 MB arrays, 2 frames", large_namespace(args.quick), step_large, n, 10)
    return rows


if __name__ == "__main__":
    main(run)
