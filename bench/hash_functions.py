"""Hash functions that hold state: mpmath's `sqrt` (a closure over its context, which
holds the context's other functions and its two sibling contexts), each of the names
`from mpmath import *` binds (a step binding them digests each alone), and 150 notebook
closures whose defaults hold one dict of them all. A step reading such a function pays
its digest in its key; a step binding them pays one digest per name.

joblib.hash cannot hash mpmath's functions at all (pickle cannot find a closure by its
name), so the anchor here is the project's own digest of the same objects' plain data:
the mpmath context's `__dict__` (what any instance's digest walks) and the dict of 150
plain values.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import Row, interleaved, main  # noqa: E402

from resumable_cells.hashing.values import Hasher  # noqa: E402

CLOSURES = """
ops = {}
def make(i, ops=ops):
    def op(x, ops=ops):
        return ops[(i + 1) % 150](x - 1) if x else i
    return op
for i in range(150):
    ops[i] = make(i)
values = {i: [i, str(i)] for i in range(150)}
"""


def run(args) -> list[Row]:
    import mpmath

    names: dict = {}
    exec("from mpmath import *", names)
    names.pop("__builtins__", None)
    ns: dict = {"__name__": "__main__"}
    exec(CLOSURES, ns)

    def each_name() -> None:
        for name, value in names.items():
            Hasher().value_digest(value, name)

    repeat = 3 if args.quick else 9
    times = interleaved(
        {
            "sqrt": lambda: Hasher().value_digest(mpmath.sqrt, "sqrt"),
            "context": lambda: Hasher().value_digest(vars(mpmath.mp), "mp"),
            "star": each_name,
            "closures": lambda: Hasher(ns).value_digest(ns["ops"], "ops"),
            "values": lambda: Hasher(ns).value_digest(ns["values"], "values"),
        },
        repeat,
    )
    figure = "hash functions that hold state"
    return [
        Row(figure, "mpmath.sqrt", "resumable-cells digest", times["sqrt"], ours=True,
            note="a step reading `sqrt` digests it in its key"),
        Row(figure, "mpmath.sqrt", "digest of its context's __dict__", times["context"]),
        Row(figure, f"{len(names)} names", "resumable-cells digest, each name alone",
            times["star"], ours=True, note="a step running `from mpmath import *`"),
        Row(figure, "150 closures", "resumable-cells digest", times["closures"], ours=True,
            note="defaults holding one dict of them all"),
        Row(figure, "150 closures", "digest of a dict of 150 small lists", times["values"]),
    ]  # fmt: skip


if __name__ == "__main__":
    main(run)
