"""Putting every code cell of a notebook under `%%step`, as a user trying it would.

A `%load_ext resumable_cells` cell goes first; each non-empty code cell gets a bare
`%%step` line (no name: the engine derives one from what the cell assigns, as it does
for a user), except a cell that starts with another cell magic (`%%timeit`, `%%bash`,
`%%writefile`, ...): one cell magic cannot wrap another, so it stays plain and is
reported as not wrapped. Empty cells stay as they are.

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
PLAN_ID = "resumable-cells-verify-plan"
PLAN_AT = 1  # the replay's plan cell: after the load cell, before the notebook's


class Wrapped(msgspec.Struct):
    nb: nbformat.NotebookNode  # the notebook with the load cell first
    offset: int  # cell i of the original is cell i + offset here
    not_wrapped: dict[int, str] = msgspec.field(default_factory=dict)  # index -> its cell magic


def code_cells(nb: nbformat.NotebookNode) -> list[int]:
    """Indices of the cells a pass executes: code cells with some code."""
    return [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and c.source.strip()]


def wrap(nb: nbformat.NotebookNode, auto: bool = False) -> Wrapped:
    wrapped = nbformat.from_dict(nb)
    out = Wrapped(wrapped, offset=1)
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
    return out


def plan_cell(planned: Path) -> nbformat.NotebookNode:
    """The cell that asks `%step plan` of the notebook at `planned` before the replay
    runs it. A cell of its own, so that the replay's time is Run All's alone: the plan
    is verify's question, not part of a resume."""
    cell = nbformat.v4.new_code_cell(f"%step plan --notebook {planned}")
    cell["id"] = PLAN_ID
    return cell
