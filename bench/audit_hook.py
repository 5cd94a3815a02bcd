"""What the tripwire costs the notebook's own code, after a step and inside one.

The tripwire (`engine/live/tripwire.py`) watches a pure step while it runs. User code
after a step is timed in a process where the engine has started and a step has been
watched and finished; user code inside a step, within `tripwire.watching()`. Each
method runs in a process of its own (an audit hook, once added, stays): the tripwire
as the engine runs it, no tripwire at all, and a Python audit hook that does nothing
(the floor any audit hook costs every audited event, `id()` and `copy.deepcopy`
included, once it is added). The processes take turns, round after round, so that a
busy machine slows them alike.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import Row, main  # noqa: E402

CHILD = """
import copy, json, sys, tempfile, timeit
from pathlib import Path
method, n, repeat = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
x = [[i] for i in range(n)]
folder = Path(tempfile.mkdtemp())
small = folder / "small.txt"
small.write_text("x")

def measure():
    return {
        "deepcopy": timeit.repeat(lambda: copy.deepcopy(x), number=1, repeat=repeat),
        "id": timeit.repeat("id(x)", globals={"x": x}, number=10**6, repeat=repeat),
        "open": timeit.repeat(lambda: open(small).close(), number=1000, repeat=repeat),
    }

out = {}
if method == "tripwire":
    from resumable_cells.engine.live import tripwire
    from resumable_cells import module_runs
    module_runs.watch_imports()  # what loading the extension does
    with tripwire.watching(folder / "store"):  # a step, watched and finished
        pass
    out["after"] = measure()
    with tripwire.watching(folder / "store") as found:
        out["inside"] = measure()
    assert found.reads == {str(small.resolve())}, found.reads  # it was watching
elif method == "empty":
    sys.addaudithook(lambda event, args: None)
    out["after"] = measure()
else:
    out["after"] = out["inside"] = measure()
print(json.dumps(out))
"""
METHODS = {
    "tripwire": "with the tripwire",
    "none": "no tripwire",
    "empty": "an empty audit hook",
}
TARGET = 1.1  # the tripwire's rows within 10% of the process without it


def run(args) -> list[Row]:
    # Seven rounds of five: the rows compare medians of separate processes, which move by
    # 10% from run to run on a shared machine (a million `id()` calls take 25-30 ms
    # with no tripwire at all); three rounds of three left that noise in the ratios.
    n, repeat, rounds = (10**4, 3, 1) if args.quick else (10**5, 5, 7)
    times: dict[str, dict[str, dict[str, list[float]]]] = {m: {} for m in METHODS}
    for _ in range(rounds):
        for method in METHODS:
            proc = subprocess.run(
                [sys.executable, "-c", CHILD, method, str(n), str(repeat)],
                capture_output=True, text=True, check=True,
            )  # fmt: skip
            for where, got in json.loads(proc.stdout).items():
                for what, ts in got.items():
                    times[method].setdefault(where, {}).setdefault(what, []).extend(ts)
    rows = []
    sizes = {"deepcopy": f"{n:,} lists", "id": "1e6 calls", "open": "1e3 open+close"}
    for where in ("after", "inside"):
        for what, size in sizes.items():
            if where == "after" and what == "open":
                continue  # (a file opened outside a step meets no tripwire)
            figure = f"user code {'after' if where == 'after' else 'inside'} a step: {what}"
            base = _median(times["none"][where][what])
            for method, label in METHODS.items():
                got = times[method].get(where, {}).get(what)
                if got is None:
                    continue  # (a hook that does nothing is no step to be inside)
                ours = method == "tripwire"
                row = Row(figure, size, label, got, ours=ours)
                if ours and what != "open":
                    row.target = f"<= {TARGET:.1f}x no tripwire"
                    row.met = _median(got) <= TARGET * base
                    row.note = f"{_median(got) / base:.2f}x no tripwire"
                rows.append(row)
    return rows


def _median(ts: list[float]) -> float:
    return sorted(ts)[len(ts) // 2]


if __name__ == "__main__":
    main(run)
