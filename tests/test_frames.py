"""A frame's columns read from its blocks are the columns pandas gives one by one."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from resumable_cells.hashing import frames


def _one_block():
    return pd.DataFrame(np.random.default_rng(0).random((1000, 6)), columns=list("abcdef"))


def _added_one_by_one():
    df = pd.DataFrame(index=range(500))
    for i in range(8):
        df[f"c{i}"] = np.arange(500, dtype=float) + i
    return df


def _mixed():
    return pd.DataFrame(
        {
            "f": np.arange(300, dtype=float),
            "i": np.arange(300),
            "b": np.arange(300) % 2 == 0,
            "f32": np.arange(300, dtype=np.float32),
            "i2": np.arange(300) * 2,
            "o": ["x"] * 300,
        }
    )


def _deleted():
    df = _one_block()
    del df["c"]
    return df


def _inserted():
    df = _one_block()
    df.insert(2, "new", np.arange(len(df)))
    return df


def _fortran():
    data = np.asfortranarray(np.random.default_rng(1).random((400, 5)))
    return pd.DataFrame(data, copy=False)


LAYOUTS = {
    "one block": _one_block,
    "columns added one by one": _added_one_by_one,
    "dtypes mixed": _mixed,
    "a column deleted": _deleted,
    "a column inserted": _inserted,
    "columns reordered": lambda: _mixed()[["i2", "f", "b", "i", "f32"]],
    "columns of one name": lambda: _one_block()[["a", "a", "b"]],
    "rows sliced": lambda: _one_block().iloc[::3],
    "from a Fortran-ordered array": _fortran,
    "from a C-ordered array, not copied": lambda: pd.DataFrame(
        np.random.default_rng(2).random((400, 5)), copy=False
    ),
    "transposed": lambda: _one_block().iloc[:50].T,
    "no rows": lambda: _one_block().iloc[:0],
    "multi-level columns": lambda: _one_block().set_axis(
        pd.MultiIndex.from_product([["x", "y"], [1, 2, 3]]), axis=1
    ),
    "datetimes and categories": lambda: pd.DataFrame(
        {
            "t": pd.date_range("2020-01-01", periods=50),
            "c": pd.Categorical(["a", "b"] * 25),
            "n": np.arange(50.0),
        }
    ),
}


@pytest.mark.parametrize("layout", list(LAYOUTS), ids=list(LAYOUTS))
def test_columns_from_blocks_are_the_columns(layout):
    df = LAYOUTS[layout]()
    got = frames.column_arrays(df)
    public = [np.asarray(column.array) for _, column in df.items()]
    if got is not None:  # None: a column not in a numpy block, the public way is taken
        assert len(got) == len(public)
        for mine, theirs in zip(got, public):
            assert mine.__array_interface__["data"][0] == theirs.__array_interface__["data"][0]
            assert (mine.shape, mine.strides, mine.dtype) == (
                theirs.shape,
                theirs.strides,
                theirs.dtype,
            )
    size = frames.nbytes(df)
    if size is not None:
        assert size == sum(column.nbytes for _, column in df.items())


def test_numeric_frames_are_read_from_their_blocks():
    # The fast path is taken where it matters (else the test above would pass on None).
    for layout in ("one block", "columns added one by one", "a column inserted", "transposed"):
        assert frames.column_arrays(LAYOUTS[layout]()) is not None, layout
    assert frames.nbytes(_mixed()) is not None


def test_a_frame_whose_layout_cannot_be_read_goes_the_public_way():
    class NotAFrame:
        shape = (3, 2)

    assert frames.column_arrays(NotAFrame()) is None
    assert frames.nbytes(NotAFrame()) is None


@pytest.mark.parametrize("layout", list(LAYOUTS), ids=list(LAYOUTS))
def test_a_frame_read_from_its_blocks_has_the_digest_of_its_columns(layout, monkeypatch):
    from resumable_cells.hashing import hex_digest

    df = LAYOUTS[layout]()
    fast = hex_digest(df)
    monkeypatch.setattr(frames, "column_arrays", lambda df: None)  # the public way only
    assert hex_digest(df) == fast


BLOCK_READ = [
    "one block",
    "columns added one by one",
    "a column deleted",
    "a column inserted",
    "columns reordered",
    "columns of one name",
    "rows sliced",
    "from a Fortran-ordered array",
    "transposed",
]


@pytest.mark.parametrize("layout", BLOCK_READ)
def test_the_memory_a_frame_is_watched_by_is_its_columns_memory(layout):
    from resumable_cells.hashing import arrays

    df = LAYOUTS[layout]()
    rows = frames.column_rows(df)
    assert rows is not None
    by_column = [
        (arrays._values_memory(np.asarray(column.array)), column.dtype) for _, column in df.items()
    ]
    assert arrays._rows_memory(rows) == by_column


def test_the_blocks_map_is_checked_against_the_public_way_until_it_reads_right(monkeypatch):
    """The map's meaning is the loaded pandas': while the first column it gives is not
    the one the public way gives, no frame is read from its blocks; once it is, later
    frames are not checked again (a Series built per frame, 20 µs)."""
    seen = []
    real = frames._same_memory

    def wrong(values, column):
        seen.append(column.name)
        return False

    monkeypatch.setattr(frames, "_checked", False)
    monkeypatch.setattr(frames, "_same_memory", wrong)
    assert frames.column_arrays(_one_block()) is None
    assert frames.column_arrays(_added_one_by_one()) is None and seen == ["a", "c0"]
    assert frames._checked is False

    def right(values, column):
        seen.append(column.name)
        return real(values, column)

    monkeypatch.setattr(frames, "_same_memory", right)
    assert frames.column_arrays(_added_one_by_one()) is not None
    assert frames.column_arrays(_one_block()) is not None and frames._checked is True
    assert seen == ["a", "c0", "c0"]


def test_a_columns_dtype_reads_as_numpy_writes_it():
    """The dtype's text kept for numpy's builtin dtypes is the one `str` gives, for them
    and for the dtypes equal to one of them that are not builtin (metadata, the other
    byte order), looked up after the builtins were kept."""
    from resumable_cells.hashing import arrays

    dtypes = [np.dtype("f8"), np.dtype("i4"), np.dtype("O"), np.dtype("c16"), np.dtype("?")]
    others = [
        np.dtype(float, metadata={"unit": "m"}),
        np.dtype(">f8"),
        np.dtype("M8[ns]"),
        np.dtype([("a", "<f8")]),
        pd.CategoricalDtype(["a", "b"]),
        pd.Int64Dtype(),
    ]
    for dtype in dtypes + others + dtypes:
        assert arrays._dtype_text(dtype) == str(dtype), dtype
