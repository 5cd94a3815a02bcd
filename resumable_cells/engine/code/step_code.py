"""A step's code as the engine uses it: the analysis of its IPython-transformed body,
with what IPython itself decides about that code folded in.

- A trailing `;` suppresses the result, decided by the displayhook's own test on the
  source, as for a plain cell. A quiet step neither shows nor stores its result, so the
  decision is part of the code in its key (`normalised` ends with `;`).
- The code magics run (`%time y = f(df)`) is analysed as the cell's own (`magics`):
  its reads are inputs, its assignments bindings. The key's code stays the cell's.
- Script cell magics (`%%bash`) start a subprocess: the step has an effect.
- Top-level `await`: the body must be awaited, decided by IPython's own test (the code,
  compiled allowing top-level await, is a coroutine).

A pure function of the transformed source and the shell: computed once per source.
"""

from __future__ import annotations

import ast
import inspect
import io
import tokenize
from functools import lru_cache
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

from . import analysis, magics

__all__ = ["StepCode", "awaits", "of"]

_QUIET = ";"  # appended to the normalised code of a step whose result is suppressed


class StepCode(msgspec.Struct, frozen=True):
    info: analysis.CellInfo  # what the code reads and binds, and its normalised form
    quiet: bool  # a trailing `;`: the result is neither shown nor stored
    scripts: tuple[str, ...] = ()  # script cell magics it calls (`%%bash`): subprocesses
    awaits: bool = False  # top-level `await`: the body is awaited


def of(shell: InteractiveShell, transformed: str) -> StepCode:
    """The step code of a body that IPython transformed into `transformed`. Raises
    SyntaxError like Python would. Kept per source, but for a body calling `%run`: the
    code it runs is read from a file, which may have changed since."""
    if _RUNS_A_FILE in transformed:
        return _of.__wrapped__(shell, transformed)
    return _of(shell, transformed)


_RUNS_A_FILE = "run_line_magic('run', "  # (as IPython's transform spells `%run`)


@lru_cache(maxsize=512)
def _of(shell: InteractiveShell, transformed: str) -> StepCode:
    info = analysis.analyse(transformed)
    used = magics.read(shell, transformed)
    if used.expanded is not None:
        wide = analysis.analyse(used.expanded)
        binds = tuple(b for b in wide.binds if b != magics.SCOPE)
        info = msgspec.structs.replace(
            wide, normalised=info.normalised, code_hash=info.code_hash, binds=binds
        )
    quiet = _suppressed(shell, transformed)
    if quiet:
        info = msgspec.structs.replace(info, normalised=info.normalised + _QUIET)
    return StepCode(info=info, quiet=quiet, scripts=used.scripts, awaits=awaits(transformed))


@lru_cache(maxsize=512)
def awaits(transformed: str) -> bool:
    """Whether IPython would await a cell of this (transformed) source."""
    if "await" not in transformed and "async" not in transformed:
        return False
    try:
        code = compile(transformed, "<step>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    except (SyntaxError, ValueError):
        return False  # running it raises the error
    return bool(code.co_flags & inspect.CO_COROUTINE)


def _suppressed(shell: InteractiveShell, source: str) -> bool:
    """Whether IPython would not display the value of `source`'s last expression."""
    test = getattr(type(shell.displayhook), "semicolon_at_end_of_expression", None)
    return (test or _semicolon_at_end)(source)


def _semicolon_at_end(source: str) -> bool:
    # Older IPython has no static test: the same one as its DisplayHook.quiet.
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    for token in reversed(tokens):
        if token[0] in (tokenize.ENDMARKER, tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT):
            continue
        return token[0] == tokenize.OP and token[1] == ";"
    return False
