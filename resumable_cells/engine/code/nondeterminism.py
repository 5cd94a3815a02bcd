"""Calls that make a cached step's result depend on when or where it ran (`time.time`,
`datetime.now`, `random.*`, `np.random.*`, `uuid.uuid4`, `os.urandom`, a generator made
without a seed: `np.random.default_rng()`), and what to use instead: the run's clock and
seeded generators (`step.now()`, `step.rng()`, `step.random`). A pure step that makes
one directly is warned, naming the call and the replacement."""

from __future__ import annotations

import types
from collections.abc import Iterator
from typing import Any, NamedTuple

from .analysis import CellInfo

# Calls that make a cached step's result depend on when or where it ran.
NONDETERMINISTIC: dict[tuple[str, ...], str] = {
    ("time", "time"): "step.now()",
    ("time", "time_ns"): "step.now()",
    ("datetime", "datetime", "now"): "step.now()",
    ("datetime", "datetime", "utcnow"): "step.now()",
    ("datetime", "datetime", "today"): "step.now()",
    ("datetime", "date", "today"): "step.now().date()",
    ("uuid", "uuid4"): "uuid.UUID(int=step.random.getrandbits(128), version=4)",
    ("uuid", "uuid1"): "uuid.UUID(int=step.random.getrandbits(128), version=4)",
    ("os", "urandom"): "step.random.randbytes(n)",
}
NONDETERMINISTIC_MODULES: dict[tuple[str, ...], str] = {
    ("random",): "step.random",
    ("numpy", "random"): "step.rng()",
}
# Names in those modules that make or seed a generator rather than draw from the global one.
_SEEDED_OK = {"Random", "default_rng", "Generator", "RandomState", "seed", "SeedSequence", "PCG64"}
# Of those, the ones that, called with no argument at all, seed from the system's entropy.
UNSEEDED: dict[tuple[str, ...], str] = {
    ("numpy", "random", "default_rng"): "step.rng()",
    ("numpy", "random", "RandomState"): "step.rng()",
    ("numpy", "random", "PCG64"): "step.rng()",
    ("numpy", "random", "SeedSequence"): "step.rng()",
    ("random", "Random"): "step.random",
}


CHANGES, DRAWS, UNSEEDS = "changes", "draws", "unseeds"


class Call(NamedTuple):
    """A call a step makes directly whose result changes between runs: its result
    does (`CHANGES`: the clock, a new id), it draws from a module's global generator
    (`DRAWS`: `state/drawn.py`) or it makes a generator seeded from the system's
    entropy (`UNSEEDS`)."""

    call: str  # as written out, resolved: "numpy.random.rand"
    replacement: str  # what to use instead: "step.rng()"
    kind: str


def calls(info: CellInfo, ns: dict[str, Any]) -> Iterator[Call]:
    """Each such call the cell makes directly, resolved through the namespace and the
    cell's imports; once each."""
    seen = set()
    bare = set(info.bare_calls)
    for dotted in info.calls:
        full = _resolved(dotted, info, ns)
        if full is None or full in seen:
            continue
        replacement, kind = NONDETERMINISTIC.get(full), CHANGES
        if replacement is None and dotted in bare:
            replacement, kind = UNSEEDED.get(full), UNSEEDS
        if replacement is None:
            for prefix, repl in NONDETERMINISTIC_MODULES.items():
                if full[: len(prefix)] == prefix and len(full) > len(prefix):
                    if full[len(prefix)] in _SEEDED_OK and len(full) == len(prefix) + 1:
                        continue
                    replacement = (
                        f"{repl}.{full[len(prefix)]}(...)" if repl == "step.random" else repl
                    )
                    kind = DRAWS
                    break
        if replacement:
            seen.add(full)
            yield Call(".".join(full), replacement, kind)


def _resolved(
    dotted: tuple[str, ...], info: CellInfo, ns: dict[str, Any]
) -> tuple[str, ...] | None:
    root = dotted[0]
    value = ns.get(root)
    if isinstance(value, types.ModuleType):
        return tuple(value.__name__.split(".")) + dotted[1:]
    if root in info.imports:
        return tuple(info.imports[root].split(".")) + dotted[1:]
    if value is not None and hasattr(value, "__module__") and hasattr(value, "__name__"):
        return (value.__module__, value.__name__) + dotted[1:]
    return None
