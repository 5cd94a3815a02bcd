"""What the tripwire's audit hook costs the notebook's own code once a step has run.

The hook (`engine/live/tripwire.py`) is added to the process on the first step and cannot
be removed; Python then calls it for every audited event, watched or not, and `id()` is
one: `copy.deepcopy` asks it of every object it copies. Each method runs in its own
interpreter (a hook, once added, stays): without the hook, with the tripwire's hook,
and with a hook that does nothing (the floor any Python audit hook costs).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import Row, main  # noqa: E402

CHILD = """
import copy, json, sys, timeit
hook = sys.argv[1]
if hook == "tripwire":
    from resumable_cells.engine.live import tripwire
    tripwire.install()
elif hook == "empty":
    sys.addaudithook(lambda event, args: None)
n = int(sys.argv[2])
x = [[i] for i in range(n)]
deep = timeit.repeat(lambda: copy.deepcopy(x), number=1, repeat=int(sys.argv[3]))
ids = timeit.repeat("id(x)", globals={"x": x}, number=10**6, repeat=int(sys.argv[3]))
print(json.dumps({"deepcopy": deep, "id": ids}))
"""
METHODS = {
    "tripwire": "with the tripwire's hook",
    "none": "no audit hook",
    "empty": "an empty hook",
}


def run(args) -> list[Row]:
    n, repeat = (10**4, 3) if args.quick else (10**5, 9)
    out = {}
    for hook in METHODS:
        proc = subprocess.run(
            [sys.executable, "-c", CHILD, hook, str(n), str(repeat)],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        out[hook] = json.loads(proc.stdout)
    rows = []
    for what, size in (("deepcopy", f"{n:,} lists"), ("id", "1e6 calls")):
        for hook, label in METHODS.items():
            ours = hook == "tripwire"
            rows.append(
                Row(f"user code after a step: {what}", size, label, out[hook][what], ours=ours)
            )
    return rows


if __name__ == "__main__":
    main(run)
