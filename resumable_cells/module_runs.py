"""When each module's code last ran (an import or a reload), from the moment the
extension is loaded: how `hashing/sources.py` tells a module file edited after its
import from one edited before. A module of its own, with no import of the package, so
that loading the extension installs it without importing the hashing it serves.
"""

from __future__ import annotations

import time
from importlib.machinery import SourceFileLoader
from types import CodeType

_EXECUTED: dict[str, float] = {}  # a module's file -> when its code last ran


def note_executed(path: str) -> None:
    """A module's code from `path` is being executed (imported or reloaded) now."""
    _EXECUTED[path] = time.time()


def executed_at(path: str) -> float | None:
    """When the code of the module file `path` last ran, if it ran since `watch_imports`."""
    return _EXECUTED.get(path)


def watch_imports() -> None:
    """From now on, note when each module's source is read and compiled to run (an
    import or a reload: `note_executed`). Once per process; nothing else pays for it.

    `SourceFileLoader` is given a `get_code` of its own that notes the file after the
    inherited one has read it. Every module loaded from a `.py` file goes through it,
    whichever finder made its loader (an editable install's, `spec_from_file_location`)
    and however the reload was called (`importlib.reload`, or autoreload's own binding
    of it); no loader object changes (their equality compares their `__dict__`); and
    its frame has returned before the module's code runs, so it is in no traceback of
    a module whose code raises. A module run from a bytecode file alone, or executed
    by hand (`exec` of its source), is not noted: `hashing/sources.py` then falls back
    on the bytecode cache, as for a module imported before this was called."""
    if "get_code" not in vars(SourceFileLoader):
        SourceFileLoader.get_code = _noting_get_code  # type: ignore[method-assign,assignment]


_get_code = SourceFileLoader.get_code  # the inherited one (`SourceLoader`'s)


def _noting_get_code(self: SourceFileLoader, fullname: str) -> CodeType | None:
    code = _get_code(self, fullname)
    if code is not None:
        note_executed(code.co_filename)  # the file the module says it runs (its `__file__`)
    return code
