"""Calls that make a cached step's result depend on when or where it ran (`time.time`,
`datetime.now`, `random.*`, `np.random.*`, `uuid.uuid4`), and what to use instead: the
run's clock and seeded generators (`step.now()`, `step.rng()`, `step.random`). A pure
step that makes one directly is warned, naming the call and the replacement."""

from __future__ import annotations

import types
from collections.abc import Iterator
from typing import Any

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
}
NONDETERMINISTIC_MODULES: dict[tuple[str, ...], str] = {
    ("random",): "step.random",
    ("numpy", "random"): "step.rng()",
}
# What replaces a draw from a module's global generator (the warning says what a hit does).
GENERATOR_REPLACEMENTS = tuple(NONDETERMINISTIC_MODULES.values())
# Names in those modules that make or seed a generator rather than draw from the global one.
_SEEDED_OK = {"Random", "default_rng", "Generator", "RandomState", "seed", "SeedSequence", "PCG64"}


def calls(info: CellInfo, ns: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(the call as written out, its replacement) for each such call the cell makes
    directly, resolved through the namespace and the cell's imports; once each."""
    seen = set()
    for dotted in info.calls:
        root = dotted[0]
        value = ns.get(root)
        if isinstance(value, types.ModuleType):
            full = tuple(value.__name__.split(".")) + dotted[1:]
        elif root in info.imports:
            full = tuple(info.imports[root].split(".")) + dotted[1:]
        elif value is not None and hasattr(value, "__module__") and hasattr(value, "__name__"):
            full = (value.__module__, value.__name__) + dotted[1:]
        else:
            continue
        replacement = NONDETERMINISTIC.get(full)
        if replacement is None:
            for prefix, repl in NONDETERMINISTIC_MODULES.items():
                if full[: len(prefix)] == prefix and len(full) > len(prefix):
                    if full[len(prefix)] in _SEEDED_OK and len(full) == len(prefix) + 1:
                        continue
                    replacement = (
                        f"{repl}.{full[len(prefix)]}(...)" if repl == "step.random" else repl
                    )
                    break
        if replacement and full not in seen:
            seen.add(full)
            yield ".".join(full), replacement
