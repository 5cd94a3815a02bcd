"""Files a step names: those it may read where Python does not see it.

The tripwire sees a file a step opens through Python (`open`, pandas' `read_csv`,
`np.load`). A library that opens the file in its own compiled code does not go through
Python: polars' `read_csv`/`read_parquet`/`scan_*`, pyarrow's readers (pandas'
`read_parquet` and `read_feather` among them), h5py, netCDF, OpenCV's `imread`, DuckDB.
Without more, a step reading `data.csv` with polars was served after the file changed:
the old frame, silently.

So a live step's entry also holds the files its code names: each string constant of the
cell and of the notebook's and local modules' functions it reaches (their default
arguments too), and each path its inputs hold (a `str` or `Path`, or one among the items
of a list, tuple, set or dict, or the attributes of a `SimpleNamespace`, a dataclass or
an instance of a notebook class) that names an existing regular file when the step ends,
relative to the working folder; a name joined to a folder another one names (`DATA /
'x.parquet'`, `os.path.join(root, 'x.csv')`); and a glob pattern that matches files
(`'data/*.parquet'`), kept as the names and contents of those files. They are read as
the tripwire's reads are: their digests are the entry's, and a hit whose file changed
runs again. A file named that the step did not read only makes it run again when that
file changes. A path built at run time from parts none of these hold is not seen, nor a
folder read whole (a partitioned dataset): declare them with `--deps 'folder/**'`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Iterator
from pathlib import PurePath
from types import SimpleNamespace
from typing import Any

from ...hashing.files import could_name, is_pattern, matches

MAX_NAMES = 512  # names looked up, at most
MAX_FOLDERS = 16  # folders the other names are joined to, at most
MAX_ITEMS = 256  # items of one input looked into, at most


def candidates(strings: Iterable[str], values: Iterable[Any]) -> list[str]:
    """The existing regular files the strings and the values name, and the glob
    patterns they name that match one or more (see the module's docstring), as paths
    the caller resolves; in no particular order."""
    names = list(dict.fromkeys(_bounded(_names(strings, values))))
    folders = [n for n in names if not is_pattern(n) and os.path.isdir(n)][:MAX_FOLDERS]
    found: dict[str, None] = {}
    for name in names:
        if is_pattern(name) and not _pattern(name):
            continue  # (`'*' * 40`: no name of files)
        for path in (name, *(os.path.join(f, name.lstrip("/")) for f in folders if f != name)):
            if path in found:
                continue
            if is_pattern(path) and not os.path.lexists(path):
                if matches(path, limit=1):
                    found[path] = None
            elif os.path.isfile(path):
                found[path] = None
    return list(found)


def _names(strings: Iterable[str], values: Iterable[Any]) -> Iterator[str]:
    yield from strings
    for value in values:
        for item in _paths_in(value):
            if could_name(item):
                yield item


def _paths_in(value: Any) -> Iterator[str]:
    """The paths a value holds: itself, or its items one level down."""
    t = type(value)
    if t is str or isinstance(value, PurePath):
        yield str(value)
        return
    if t in (list, tuple, set, frozenset):
        items: Iterable[Any] = value
    elif t is dict:
        items = value.values()
    elif t is SimpleNamespace or dataclasses.is_dataclass(t) or t.__module__ == "__main__":
        try:  # (the instance's own dict, not a `__dict__` a class may compute)
            items = dict.values(object.__getattribute__(value, "__dict__"))
        except (AttributeError, TypeError):
            return
    else:
        return
    for i, item in enumerate(items):
        if i >= MAX_ITEMS:
            return
        if type(item) is str or isinstance(item, PurePath):
            yield str(item)


def _bounded(names: Iterator[str]) -> Iterator[str]:
    for i, name in enumerate(names):
        if i >= MAX_NAMES:
            return
        yield name


def _pattern(text: str) -> bool:
    """A glob pattern that names files (`data/*.csv`, `*.parquet`), not a string that
    happens to hold a star (`'*' * 40`, `'**'`)."""
    return ("/" in text or "." in text) and any(c.isalnum() for c in text)
