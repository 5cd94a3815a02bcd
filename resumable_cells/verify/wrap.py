"""Putting every code cell of a notebook under `%%step`, as a user trying it would.

A `%load_ext resumable_cells` cell goes first; each non-empty code cell gets a bare
`%%step` line (no name: the engine derives one from what the cell assigns, as it does
for a user), except a cell that starts with another cell magic (`%%timeit`, `%%bash`,
`%%writefile`, ...): one cell magic cannot wrap another, so it stays plain and is
reported as not wrapped. Empty cells stay as they are.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import nbformat

LOAD = "%load_ext resumable_cells"
LOAD_ID = "resumable-cells-verify-load"


@dataclass
class Wrapped:
    nb: nbformat.NotebookNode  # the notebook with the load cell first
    offset: int  # cell i of the original is cell i + offset here
    not_wrapped: dict[int, str] = field(default_factory=dict)  # index -> its cell magic


def code_cells(nb: nbformat.NotebookNode) -> list[int]:
    """Indices of the cells a pass executes: code cells with some code."""
    return [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and c.source.strip()]


def cell_magic(source: str) -> str | None:
    """`%%name` when the cell starts with a cell magic (blank lines before it do not
    count, as in IPython), else None."""
    for line in source.splitlines():
        if line.strip():
            return line.split()[0] if line.startswith("%%") else None
    return None


def wrap(nb: nbformat.NotebookNode) -> Wrapped:
    wrapped = nbformat.from_dict(nb)
    out = Wrapped(wrapped, offset=1)
    for index in code_cells(nb):
        cell = wrapped.cells[index]
        magic = cell_magic(cell.source)
        if magic is not None:
            out.not_wrapped[index] = magic
        else:
            cell.source = "%%step\n" + cell.source
    load = nbformat.v4.new_code_cell(LOAD)
    load["id"] = LOAD_ID
    wrapped.cells.insert(0, load)
    return out
