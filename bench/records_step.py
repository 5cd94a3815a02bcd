"""Steps over a list of a million records (dicts of an int and a string), in a real kernel.

Rows from a JSON API, a log, a scrape: a notebook's plain data as Python objects rather
than a frame. The step that makes them, a step that only reads them (`len(records)`)
run live and then served, and a step that binds one of them (`first = records[0]`:
it shares an object with its input, which the entry keeps as a reference to it). Each
against the same cell without the magic, end to end through jupyter_client. A live run
digests its inputs for the key and again after the body (did the step change them?),
walks them for the objects it could share, and checks each one is still where it was;
a hit digests its inputs. Each is a pass over every record, and what this figure
follows (issue 23: using the tool never costs more than it saves).

No target of DESIGN.md's: the medians and the ratios to the plain cells are the figure.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402
from common import Row  # noqa: E402

FIGURE = "steps over a list of records"


def cells(n: int) -> dict[str, tuple[str, str]]:
    """What is timed: (the %%step cell, the same cell without the magic)."""
    make = f"records = [{{'a': i, 'b': str(i)}} for i in range({n})]"
    return {
        "make": (f"%%step make --force\n{make}", make),
        "read": ("%%step count --force\ncount = len(records)", "count = len(records)"),
        "hit": ("%%step count\ncount = len(records)", "count = len(records)"),
        "share": ("%%step first --force\nfirst = records[0]", "first = records[0]"),
    }


def run(args) -> list[Row]:
    n = 100_000 if args.quick else 1_000_000
    size = f"{n:,} records"
    tmp = common.scratch_dir("records")
    k = common.BenchKernel(tmp, common.private_env(tmp))
    todo = cells(n)
    try:
        k.check("%load_ext resumable_cells")
        k.check(todo["make"][1])
        k.check(todo["hit"][0])  # stored, so that the hit rows are hits
        methods = {}
        for what, (step, plain) in todo.items():
            methods[f"{what}: step"] = lambda step=step: k.run(step)
            methods[f"{what}: plain"] = lambda plain=plain: k.run(plain)
        # (a plain cell runs between a hit and the step before it: no digest is carried)
        times = common.interleaved(methods, 2 if args.quick else 5, warmup=1)
        _, outputs, _ = k.run(todo["hit"][0])
        served = "served from cache" in common.status_text(outputs)
    finally:
        k.close()
    labels = {
        "make": "the step making them (live)",
        "read": "a step reading them, `len(records)` (live)",
        "hit": "that step served (hit)",
        "share": "a step binding one of them, `records[0]` (live)",
    }
    rows = []
    for what in todo:
        step, plain = times[f"{what}: step"], times[f"{what}: plain"]
        ratio = sorted(step)[len(step) // 2] / max(sorted(plain)[len(plain) // 2], 1e-9)
        note = f"{ratio:.1f}x the plain cell" + ("" if what != "hit" or served else "; NOT served")
        rows.append(Row(FIGURE, size, labels[what], step, ours=True, note=note))
        rows.append(Row(FIGURE, size, f"{labels[what].split(' (')[0]}: without the magic", plain))
    return rows


if __name__ == "__main__":
    common.main(run)
