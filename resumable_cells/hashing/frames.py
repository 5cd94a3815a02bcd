"""A pandas frame's columns read from its blocks, without the Series `DataFrame.items()`
builds for each column (about 20 µs each): a step reads its large frames' layout
several times (the key, what the run changed, whether pickling gives them back
exactly), and a frame of a hundred columns took 2-6 ms each time.

pandas keeps a frame's columns in blocks, one two-dimensional array per dtype (or an
extension array per column), and maps each column to a block and a row of it. That map
is not public API, so it is read defensively: anything unexpected (another layout, a
newer pandas that changed it) answers None, and the caller goes the public way."""

from __future__ import annotations

from typing import Any

# The map's meaning is the loaded pandas' own: checked once in a process, on the first
# frame read, against the Series the public way builds (20 µs a frame otherwise).
_checked = False


def column_arrays(df: Any) -> list[Any] | None:
    """Each column's numpy values, in column order, as `np.asarray(column.array)` would
    give them (a view of its row of the block, not a copy); None when a column is not
    held in a numpy block or the frame's layout cannot be read."""
    rows = column_rows(df)
    return None if rows is None else [values[row] for values, row in rows]


def column_rows(df: Any) -> list[tuple[Any, int]] | None:
    """Each column as (its block's two-dimensional numpy values, its row there), in
    column order; None as for `column_arrays`."""
    import numpy as np

    layout = _layout(df)
    if layout is None:
        return None
    blocks, numbers, rows = layout
    out = []
    for number, row in zip(numbers, rows):
        values = blocks[number].values
        if type(values) is not np.ndarray or values.ndim != 2 or row >= len(values):
            return None
        out.append((values, row))
    if len(set(zip(numbers, rows))) != len(out):  # each column a row of its own
        return None
    global _checked
    if out and not _checked:
        if not _same_memory(out[0][0][out[0][1]], next(iter(df.items()))[1]):
            return None  # (the map does not read as we think)
        _checked = True
    return out


def nbytes(df: Any) -> int | None:
    """The bytes of a frame's column values, what the columns' `nbytes` add up to;
    None when its layout cannot be read."""
    layout = _layout(df)
    if layout is None:
        return None
    blocks, numbers, _ = layout
    if len(set(numbers)) != len(blocks):  # a block no column maps to: not our model
        return None
    return int(sum(block.values.nbytes for block in blocks))


def _layout(df: Any) -> tuple[Any, list[int], list[int]] | None:
    """(blocks, block number of each column, row of each column in its block)."""
    manager = getattr(df, "_mgr", None)
    blocks = getattr(manager, "blocks", None)
    try:
        numbers = getattr(manager, "blknos", None)
        rows = getattr(manager, "blklocs", None)
    except (AttributeError, TypeError, ValueError):  # (computed on first use)
        return None
    if not isinstance(blocks, tuple) or numbers is None or rows is None:
        return None
    numbers, rows = list(map(int, numbers)), list(map(int, rows))
    if len(numbers) != df.shape[1] or len(rows) != df.shape[1]:
        return None
    if any(n < 0 or n >= len(blocks) for n in numbers):
        return None
    return blocks, numbers, rows


def _same_memory(values: Any, column: Any) -> bool:
    import numpy as np

    other = np.asarray(column.array)
    return (
        values.__array_interface__["data"][0] == other.__array_interface__["data"][0]
        and values.shape == other.shape
        and values.strides == other.strides
        and values.dtype == other.dtype
    )
