"""Attributes a step sets on modules (`settings.THRESHOLD = 0.7`, `config.model = m`):
part of its result, set again on a hit.

Watched: the modules a step reads (a name bound to a module) or imports that are
already imported before it runs, when they are the notebook's own (a file beside it or
on `sys.path`, not an installed package or the standard library), and their public
attributes (not `_x`, which libraries use for their own caches). `snapshot` copies their
attribute dicts before the step (a shallow copy: a few microseconds), `changes` compares
by identity after it. The values go in the entry's unit (`unit.py`), so that an
attribute set to an object the step also binds stays that object.
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
import types
from collections.abc import Iterable
from typing import Any, TypeAlias, TypedDict

# module name -> a copy of its attribute dict, before the step
Snapshot: TypeAlias = dict[str, dict[str, Any]]


class Change(TypedDict):
    """What a step did to one module's attributes (stored in the entry's unit)."""

    set: dict[str, Any]
    unset: list[str]


# module name -> what changed in it
Changes: TypeAlias = dict[str, Change]

_MISSING = object()


@functools.cache
def _installed() -> tuple[str, ...]:
    """The Python installation's and its site-packages' folders. Asked when a module is
    first judged, not at import: `sysconfig` costs a kernel's first step 2 ms to import
    and read, and a step that reaches no module file never needs it."""
    import sysconfig

    return tuple(
        os.path.realpath(p) + os.sep
        for key in ("stdlib", "platstdlib", "purelib", "platlib")
        if (p := sysconfig.get_paths().get(key))
    )


_OWN: dict[str, bool] = {}


def notebook_module(mod: types.ModuleType) -> bool:
    """Whether `mod` is the notebook's own module: a source file outside the Python
    installation and its site-packages (not a builtin or an installed package)."""
    name = mod.__name__
    own = _OWN.get(name)
    if own is None:
        path: str | None = getattr(mod, "__file__", None)
        own = bool(path) and not name.startswith("resumable_cells")
        if own and path:  # `own` implies a path; said again for the type checker
            own = not os.path.realpath(path).startswith(_installed())
        _OWN[name] = own
    return own


def snapshot(ns: dict[str, Any], inputs: Iterable[str], imports: Iterable[str]) -> Snapshot:
    """Module name -> a copy of its attributes, for the notebook's modules the step
    reads or imports."""
    mods = [ns[n] for n in inputs if isinstance(ns.get(n), types.ModuleType)]
    mods += [sys.modules[m] for m in imports if m in sys.modules]
    return {m.__name__: dict(vars(m)) for m in mods if notebook_module(m)}


def watched(before: Snapshot, module: types.ModuleType, attr: str) -> bool:
    """Whether `changes` sees what a step does to `module.attr` (so a hit sets it again)."""
    return module.__name__ in before and not attr.startswith("_")


def changes(before: Snapshot) -> Changes:
    """Module name -> {"set": {attr: value}, "unset": [attr]} of what changed."""
    out: Changes = {}
    for name, attrs in before.items():
        now = vars(sys.modules.get(name) or types.ModuleType(name))
        set_ = {
            k: v
            for k, v in now.items()
            if not k.startswith("_") and attrs.get(k, _MISSING) is not v
        }
        unset = [k for k in attrs if not k.startswith("_") and k not in now]
        if set_ or unset:
            out[name] = {"set": set_, "unset": unset}
    return out


def apply(changed: Changes) -> None:
    """Set the attributes again (importing a module first if it is not imported)."""
    for name, change in changed.items():
        mod = sys.modules.get(name) or importlib.import_module(name)
        for k, v in change["set"].items():
            setattr(mod, k, v)
        for k in change["unset"]:
            if hasattr(mod, k):
                delattr(mod, k)


def values(changed: Changes) -> dict[str, Any]:
    """`module.attr` -> the value set, for the sharing analysis and the record."""
    return {f"{m}.{k}": v for m, c in changed.items() for k, v in c["set"].items()}
