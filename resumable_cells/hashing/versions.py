"""Versions of the modules a step reaches: part of the key, shown on a miss."""

from __future__ import annotations

import csv
import sys
from collections.abc import Mapping
from functools import lru_cache
from importlib import metadata

_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ())) | {"__main__", "builtins"}


@lru_cache(maxsize=1)
def _owners() -> Mapping[str, list[metadata.Distribution]]:
    """Top-level module -> the distributions that install it: what
    `metadata.packages_distributions()` finds, without what makes it take a third of a
    second in a kernel with the scientific stack: it parses every distribution's
    METADATA for its name (here only the owners of a module asked about are named,
    `_names`) and builds a path object for each line of every RECORD (here the lines are
    split as strings). Read once per process, like the versions themselves."""
    owners: dict[str, list[metadata.Distribution]] = {}
    for dist in metadata.distributions():
        declared = (dist.read_text("top_level.txt") or "").split()
        for top in declared or _inferred_top_level(dist):
            owners.setdefault(top, []).append(dist)
    return owners


def _inferred_top_level(dist: metadata.Distribution) -> set[str]:
    """The top-level modules of a distribution without `top_level.txt`: the first part of
    each Python file it installs (a file at the top: its own name), as
    `packages_distributions` infers them."""
    record = dist.read_text("RECORD")
    if record is None:  # an egg-info distribution: its own listing, read the slow way
        files = dist.files or []
        paths = [str(f) for f in files]
    else:
        paths = [_record_path(line) for line in record.splitlines() if line]
    tops = set()
    for path in paths:
        if path.endswith(".py"):
            head, sep, _ = path.partition("/")
            tops.add(head if sep else head[:-3])
    return tops


def _record_path(line: str) -> str:
    """The path of a RECORD line (CSV: quoted only when it holds a comma or a quote)."""
    if line.startswith('"'):
        return next(csv.reader([line]))[0]
    return line.partition(",")[0]


def _names(top: str) -> list[str]:
    """The names of the distributions that install `top` (`[top]` when none does)."""
    dists = _owners().get(top)
    if not dists:
        return [top]
    return [dist.metadata["Name"] for dist in dists]


def _top_level(dist: metadata.Distribution) -> set[str]:
    """The modules a distribution installs at the top, from its own small files (without
    them, its name is taken for its module)."""
    text = dist.read_text("top_level.txt")
    if text:
        return set(text.split())
    return {dist.metadata["Name"].replace("-", "_").lower()}


def _from_a_file(module: object) -> bool:
    """Whether a loaded module came from a file or folder (a package can install it)."""
    return getattr(module, "__file__", None) is not None or hasattr(module, "__path__")


@lru_cache(maxsize=1024)
def module_version(top: str) -> str | None:
    """`numpy` -> "2.4.6"; None for the standard library (the Python version covers it)."""
    if top in _STDLIB or not top:
        return None
    mod = sys.modules.get(top)
    v = getattr(mod, "__version__", None)
    if isinstance(v, str):
        return v
    own = getattr(mod, "__name__", top)
    if isinstance(own, str) and own.partition(".")[0] not in (top, ""):
        # Loaded under another name too: Cython's shared `_cyutility`, whose functions
        # pandas's objects name as theirs, is `pandas._libs._cyutility`. Its package's
        # version, not a search of every installed package's files (50 ms in a kernel).
        return module_version(own.partition(".")[0])
    if mod is not None and not _from_a_file(mod):
        # Made at run time, not installed: Cython's shared `_cython_3_2_4`, whose
        # functions scipy's and scikit-learn's objects hold. No distribution has it; asking
        # them all would read every installed package's file list (30 ms in a kernel).
        return None
    try:  # most distributions are named as their module: no need to read them all
        dist = metadata.distribution(top)
        if top in _top_level(dist):
            return dist.version
    except metadata.PackageNotFoundError:
        pass
    for name in _names(top):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None
