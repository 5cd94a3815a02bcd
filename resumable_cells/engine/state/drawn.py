"""The global random generators a step drew from, and where each stood when it began.

A step that calls `np.random.rand()` or `random.random()` reads the generator's state as
surely as it reads a variable, and its key does not hold that state. Where nothing
seeded the generator its numbers are new in every run, the served ones as good as any
(the step was warned: `code/nondeterminism.py`), and a hit sets the generator where the
live run left it (`process_state`), so the steps after it draw what they drew. But
once the notebook seeded it (`np.random.seed(0)`), a live run's numbers follow from the
draws before: an earlier cell edited to draw more, or a step run again in the same
kernel, and a live run draws other numbers where a hit served the old ones, silently.

So a live step that changed the state of numpy's global generator or the `random`
module's records a digest of the state it began from (`began`), unless its own code
seeds one (`np.random.seed(0)` at its top: what it drew does not depend on what came
before). A hit of it is served when the generator is where it stood then, or when
nothing in this kernel seeded it; else it runs (`moved`, asked by `restore/validity`).
"Seeded" is read from the code the kernel ran (`Seeding`): a cell whose source calls a
`seed(`, `set_state(` or `setstate(` (`np.random.seed`, `random.seed`, a helper's
`set_seed(42)`), the cells before the engine started included. A seed reached only
through a function of another name leaves the kernel unseeded as far as this module
knows: its steps are served as before. numpy's generator is compared by the raw state
of its bit generator (`parts.rng_token`), as the process state compares it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import xxhash

from . import parts

GENERATORS = {
    "numpy.random": "numpy's global random generator",
    "random": "the `random` module's generator",
}
# Code that puts a generator in a known state: `seed(0)`, `np.random.set_state(s)`,
# `random.setstate(s)`, `torch.manual_seed(0)` too (a harmless excess: it only makes a
# step whose generator moved run again).
_SEEDS = re.compile(r"seed\(|set_?state\(")


def seeds(source: str) -> bool:
    """Whether code, as written, seeds or sets a generator."""
    return _SEEDS.search(source) is not None


class Seeding:
    """Whether the code this kernel ran seeded a generator."""

    def __init__(self, history: Iterable[str] = ()) -> None:
        self.seeded = any(isinstance(cell, str) and seeds(cell) for cell in history)

    def cell_started(self, info: Any) -> None:
        """IPython's `pre_run_cell`: the cell about to run."""
        raw = getattr(info, "raw_cell", None)
        if not self.seeded and isinstance(raw, str) and seeds(raw):
            self.seeded = True


def began(before: Mapping[str, Any], source: str) -> dict[str, str]:
    """{generator: digest of its state as the step began} for each global generator
    the step moved (`before`: the process state's snapshot as it began), unless its
    code seeds one."""
    if seeds(source):
        return {}
    out = {}
    for name in GENERATORS:
        then = before.get(name)
        if then is not None and parts.rng_token(name) != then:
            out[name] = _digest(then)
    return out


def moved(drew: Mapping[str, str], seeding: Seeding) -> str | None:
    """Why an entry whose step drew from the generators `drew` (its `began`) cannot be
    served now: a generator this kernel seeded does not stand where it did; or None."""
    if not seeding.seeded:
        return None
    for name, digest in drew.items():
        now = parts.rng_token(name)
        if now is None or _digest(now) != digest:
            return f"{GENERATORS.get(name, name)} is not where it was when the step drew from it"
    return None


def _digest(token: Any) -> str:
    raw = token if isinstance(token, bytes) else repr(token).encode()
    return xxhash.xxh3_128_hexdigest(raw)
