"""Versions of the modules a step reaches: part of the key, shown on a miss."""

from __future__ import annotations

import sys
from functools import lru_cache
from importlib import metadata

_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ())) | {"__main__", "builtins"}


@lru_cache(maxsize=1)
def _distributions() -> dict[str, list[str]]:
    return metadata.packages_distributions()


@lru_cache(maxsize=1024)
def module_version(top: str) -> str | None:
    """`numpy` -> "2.4.6"; None for the standard library (the Python version covers it)."""
    if top in _STDLIB or not top:
        return None
    mod = sys.modules.get(top)
    v = getattr(mod, "__version__", None)
    if isinstance(v, str):
        return v
    for dist in _distributions().get(top, [top]):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return None
