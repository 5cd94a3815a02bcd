"""Whether code is the notebook's own: defined in a cell (its globals are the notebook's
namespace) or in a module of the notebook's folder. What a step leaves running
(`left_running`) or registers with a library (`registrations`) counts only when it is.
"""

from __future__ import annotations

import functools
from types import ModuleType
from typing import Any

from ...hashing import code, sources


def is_notebooks(fn: Any, ns: dict[str, Any]) -> bool:
    """Whether the callable is the notebook's code: defined in a cell or a module of the
    notebook's folder (through a partial, a bound method, a callable instance)."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    fn = getattr(fn, "__func__", fn)  # a bound method: its function
    if fn is None or isinstance(fn, ModuleType):
        return False
    if code.is_notebook_defined(fn, ns):
        return True
    home = getattr(fn, "__module__", None)
    return isinstance(home, str) and _local(home)


def notebook_globals(g: dict[str, Any], ns: dict[str, Any]) -> bool:
    """Whether code running against the globals `g` is the notebook's."""
    if g is ns:
        return True
    home = g.get("__name__")
    return isinstance(home, str) and home != "__main__" and _local(home)


_OWN = __name__.partition(".")[0]


def own_module(module: str) -> bool:
    """Whether `module` is this package's: its wrappers are on the stack of what they
    watch, and installed for editing it is a folder beside the notebook's too."""
    return module.partition(".")[0] == _OWN


def _local(module: str) -> bool:
    """A module of the notebook's folder, never this package's."""
    return not own_module(module) and sources.is_local_module(module)
