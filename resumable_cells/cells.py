"""What the extension reads in a notebook cell's source before IPython does: whether it
starts with a cell magic. Auto mode and `resumable-cells verify` decide by it which cells
go under `%%step` (one cell magic cannot wrap another), so they agree."""

from __future__ import annotations


def cell_magic(source: str) -> str | None:
    """`%%name` when the cell starts with a cell magic (blank lines before it do not
    count, as in IPython), else None."""
    for line in source.splitlines():
        if line.strip():
            return line.split()[0] if line.startswith("%%") else None
    return None
