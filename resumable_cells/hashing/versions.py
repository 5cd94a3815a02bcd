"""Versions of the modules a step reaches: part of the key, shown on a miss."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from functools import lru_cache
from importlib import metadata

_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ())) | {"__main__", "builtins"}


@lru_cache(maxsize=64)
def _owners(top: str) -> list[metadata.Distribution]:
    """The distributions that install the top-level module `top`: those whose
    `top_level.txt` names it, or, without one, whose RECORD lists a Python file in it (or
    `top.py`), as `metadata.packages_distributions()` finds them, without what makes it
    take a third of a second in a kernel with the scientific stack: it parses every
    distribution's METADATA for its name and builds a path object for each line of
    every RECORD, where here each file is searched for the one name, in C."""
    owners = []
    for dist in metadata.distributions():
        declared = dist.read_text("top_level.txt")
        if declared and declared.split():
            if top in declared.split():
                owners.append(dist)
        elif _installs(dist, top):
            owners.append(dist)
    return owners


def _installs(dist: metadata.Distribution, top: str) -> bool:
    """Whether a distribution without `top_level.txt` installs a Python file under `top`
    or as `top.py`, from its RECORD (CSV: a path is quoted when it holds a comma or a
    quote) or, for an egg-info one, its own listing."""
    record = dist.read_text("RECORD")
    if record is None:
        paths = [str(f) for f in dist.files or []]
        return any(
            p.endswith(".py") and (p.startswith(top + "/") or p == top + ".py") for p in paths
        )
    text = "\n" + record
    return any(
        line.partition(",")[0].strip('"').endswith(".py")
        for start in ("\n" + top + "/", '\n"' + top + "/")
        for line in _lines_from(text, start)
    ) or any(f"\n{q}{top}.py{q}," in text for q in ("", '"'))


def _lines_from(text: str, start: str) -> Iterator[str]:
    """The lines of `text` that begin with `start` (which begins with a newline)."""
    at = text.find(start)
    while at != -1:
        end = text.find("\n", at + 1)
        yield text[at + 1 : end if end != -1 else len(text)]
        at = text.find(start, at + 1)


def _header(dist: metadata.Distribution, field: str) -> str | None:
    """A field of a distribution's METADATA (`Name`, `Version`), read from its headers
    alone: `dist.metadata` parses the whole file as an e-mail, long description
    included (3-5 ms for matplotlib's, each time it is asked)."""
    text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or ""
    head = re.split(r"\r?\n\r?\n", text, maxsplit=1)[0]
    match = re.search(rf"^{field}:[ \t]*(.*?)[ \t]*\r?$", head, re.MULTILINE | re.IGNORECASE)
    return match.group(1) if match else None


def _top_level(dist: metadata.Distribution) -> set[str]:
    """The modules a distribution installs at the top, from its own small files (without
    them, its name is taken for its module)."""
    text = dist.read_text("top_level.txt")
    if text:
        return set(text.split())
    return {(_header(dist, "Name") or "").replace("-", "_").lower()}


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
        named: metadata.Distribution | None = metadata.distribution(top)
    except metadata.PackageNotFoundError:
        named = None
    if named is not None and top in _top_level(named):
        return _header(named, "Version")
    for dist in _owners(top) or ([named] if named is not None else []):
        version = _header(dist, "Version")
        if version:
            return version
    return None
