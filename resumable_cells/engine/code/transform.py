"""A cell as IPython transforms it before running it (`!cmd` and `%magic` lines become
calls), in the two parts of `InteractiveShell.transform_cell`:

- the static transforms (IPython's own and the cleanup transformers a notebook may add)
  are a function of the text and of those transformers: they are remembered;
- a cell they leave one line long then goes through IPython's prefilter, which reads
  the namespace: `load('m.npy')` is the `%load` magic while no `load` is bound
  (automagic) and numpy's `load` after `from numpy import *`. It runs each time, as
  IPython runs it, and so do the post transformers.

Remembering the whole transform served the `%load` magic to a step that ran after
`%step plan` had transformed the same cell in a kernel where nothing was bound yet.
`%step plan` transforms a cell as Run All will: the names earlier cells bind count as
bound (`shadowed`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from contextlib import contextmanager
from typing import Any

_KEPT = 512  # static transforms remembered


class Transforms:
    """The transforms of one shell's cells."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self._static: dict[tuple[Any, ...], str] = {}

    def __call__(self, cell: str, shadowed: Collection[str] = ()) -> str:
        """`cell` as IPython would transform it now; `shadowed`: names taken as bound
        (a magic's name among them is not called by automagic)."""
        shell = self.shell
        manager = getattr(shell, "input_transformer_manager", None)
        prefilter = getattr(shell, "prefilter_manager", None)
        if manager is None or prefilter is None:  # (not IPython's shell as we know it)
            return str(shell.transform_cell(cell))
        key = (cell, *map(id, manager.cleanup_transforms), *map(id, manager.line_transforms))
        static = self._static.get(key)
        if static is None:
            static = self._static[key] = manager.transform_cell(cell)
            if len(self._static) > _KEPT:
                del self._static[next(iter(self._static))]
        out = static
        if len(static.splitlines()) == 1:
            # Dynamic transformations, only for a single line (as IPython's `transform_cell`)
            with shell.builtin_trap, _no_automagic(shell, static, shadowed):
                # prefilter_lines handles the trailing newline; ast.parse wants one back
                out = prefilter.prefilter_lines(static) + "\n"
        lines = out.splitlines(keepends=True)
        for transformer in shell.input_transformers_post:
            lines = transformer(lines)
        return "".join(lines)


@contextmanager
def _no_automagic(shell: Any, line: str, shadowed: Collection[str]) -> Iterator[None]:
    """Automagic off while the line's first name is one of `shadowed` and not bound
    yet: IPython would not call a magic of that name once a cell before bound it."""
    off = False
    if shadowed and getattr(shell, "automagic", False):
        from IPython.core.splitinput import LineInfo

        head = LineInfo(line).ifun.split(".", 1)[0]
        off = head in shadowed and head not in shell.user_ns
    if not off:
        yield
        return
    shell.automagic = False
    try:
        yield
    finally:
        shell.automagic = True
