"""Versions of the modules a step reaches: part of the key, shown on a miss."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from functools import lru_cache
from importlib import metadata

_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ())) | {"__main__", "builtins"}


@lru_cache(maxsize=1)
def _distributions() -> Mapping[str, list[str]]:
    return metadata.packages_distributions()


def _top_level(dist: metadata.Distribution) -> set[str]:
    """The modules a distribution installs at the top, from its own small files (without
    them, its name is taken for its module)."""
    text = dist.read_text("top_level.txt")
    if text:
        return set(text.split())
    return {dist.metadata["Name"].replace("-", "_").lower()}


@lru_cache(maxsize=1024)
def module_version(top: str) -> str | None:
    """`numpy` -> "2.4.6"; None for the standard library (the Python version covers it)."""
    if top in _STDLIB or not top:
        return None
    mod = sys.modules.get(top)
    v = getattr(mod, "__version__", None)
    if isinstance(v, str):
        return v
    try:  # most distributions are named as their module: no need to read them all
        dist = metadata.distribution(top)
        if top in _top_level(dist):
            return dist.version
    except metadata.PackageNotFoundError:
        pass
    for name in _distributions().get(top, [top]):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None
