"""The names among the builtins when the extension was loaded: one the notebook put
there since (`builtins.LIMIT = 5`) is a global of its own that a step may read, where
the interpreter's and IPython's are not (`print`, `display`, or ipykernel's `input`,
bound anew every cell). A module of its own, with no import of the package, so that
loading the extension notes them without importing the hashing that asks."""

from __future__ import annotations

import builtins

_FOUND: frozenset[str] | None = None


def note() -> None:
    """Note the builtins' names now (once per process: the first call counts)."""
    global _FOUND
    if _FOUND is None:
        _FOUND = frozenset(vars(builtins))


def added(name: str) -> bool:
    """Whether `name` is among the builtins and was not when they were noted (an engine
    made without loading the extension notes them at its first question)."""
    note()
    return name in vars(builtins) and name not in (_FOUND or ())
