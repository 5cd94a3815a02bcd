"""Putting every code cell of a notebook under `%%step`, as a user trying it would.

A `%load_ext resumable_cells` cell goes first; each non-empty code cell gets a bare
`%%step` line (no name: the engine derives one from what the cell assigns, as it does
for a user), except a cell that starts with another cell magic (`%%timeit`, `%%bash`,
`%%writefile`, ...): one cell magic cannot wrap another, so it stays plain and is
reported as not wrapped. Empty cells stay as they are.

The plain passes run the notebook with a cell that does nothing in the load cell's
place (`plain`): every cell then runs under the same execution count in every pass, so
a cell that reads `Out[5]`, `_5` or `In[5]` reads the same cell's result in each.

With `auto`, the cells stay as they are and the load cell turns auto mode on
(`%step auto on`), which puts the same cells under `%%step` as the kernel reads them:
the same rule (`cells.cell_magic`), so both ways can be compared on one notebook.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import nbformat

from ..cells import cell_magic

LOAD = "%load_ext resumable_cells"
AUTO_ON = "%step auto on"
LOAD_ID = "resumable-cells-verify-load"
COUNT_ID = "resumable-cells-verify-count"
PLAN_ID = "resumable-cells-verify-plan"
PLAN_AT = 1  # the plan pass: the load cell, then the plan cell


class Wrapped(msgspec.Struct):
    nb: nbformat.NotebookNode  # the notebook with the load cell first
    plain: nbformat.NotebookNode  # the notebook with a cell doing nothing first
    offset: int  # cell i of the original is cell i + offset in both
    not_wrapped: dict[int, str] = msgspec.field(default_factory=dict)  # index -> its cell magic


def code_cells(nb: nbformat.NotebookNode) -> list[int]:
    """Indices of the cells a pass executes: code cells with some code."""
    return [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and c.source.strip()]


def wrap(nb: nbformat.NotebookNode, auto: bool = False) -> Wrapped:
    wrapped = nbformat.from_dict(nb)
    plain = nbformat.from_dict(nb)
    out = Wrapped(wrapped, plain, offset=1)
    for index in code_cells(nb):
        cell = wrapped.cells[index]
        magic = cell_magic(cell.source)
        if magic is not None:
            out.not_wrapped[index] = magic
        elif not auto:
            cell.source = "%%step\n" + cell.source
    load = nbformat.v4.new_code_cell(f"{LOAD}\n{AUTO_ON}" if auto else LOAD)
    load["id"] = LOAD_ID
    wrapped.cells.insert(0, load)
    count = nbformat.v4.new_code_cell("pass")
    count["id"] = COUNT_ID
    plain.cells.insert(0, count)
    return out


def plan_notebook(wrapped: Wrapped, planned: Path) -> nbformat.NotebookNode:
    """The notebook of the plan pass: the load cell, then a cell that asks `%step plan`
    of the notebook at `planned`. A kernel of its own, before the replay's: asked in the
    replay's kernel, the plan started the engine (its imports, the store) that the
    replay's first step then found started, and left out of the resume's time, it hid
    what a resume costs."""
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell(f"%step plan --notebook {planned}")
    cell["id"] = PLAN_ID
    nb.cells = [nbformat.from_dict(wrapped.nb.cells[0]), cell]
    return nb
