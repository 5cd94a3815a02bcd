"""The store's index: a diskcache of small JSON rows (and integer counters) that never
unpickles anything.

Its Disk refuses to load a pickled key or value, so a tampered row is at worst a bad
JSON row: an entry then fails its HMAC and is a miss. The rows and their prefixes are
listed where they are owned: `store.py` (entries, the cache's bookkeeping) and
`ledger.py` (runs, budgets, once-keys, intents).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import diskcache
from diskcache.core import DBNAME, MODE_PICKLE

from ..errors import StoreError


class _SafeDisk(diskcache.Disk):
    """diskcache's Disk without unpickling: rows are str, bytes or numbers only."""

    def get(self, key, raw):
        if not raw:
            raise StoreError("the index holds a pickled key; refusing to load it")
        return super().get(key, raw)

    def fetch(self, mode, filename, value, read):
        if mode == MODE_PICKLE:
            raise StoreError("the index holds a pickled value; refusing to load it")
        return super().fetch(mode, filename, value, read)


def open_cache(directory: Path) -> diskcache.Cache:
    """A diskcache at `directory` that holds JSON rows only (the index, a journal)."""
    return diskcache.Cache(
        str(directory),
        disk=_SafeDisk,
        eviction_policy="none",
        size_limit=1 << 62,
        statistics=False,
        # No row expires: without this every write also looks for expired rows (a
        # SELECT per set, add and incr, three in a live step's entry transaction).
        cull_limit=0,
    )


def identity(directory: Path) -> tuple[int, int] | None:
    """The device and inode of the database of the diskcache at `directory`; None without
    one (a cache never opened there, or deleted since)."""
    try:
        st = (directory / DBNAME).stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino


def get_json(index: diskcache.Cache, key: str, default: Any = None) -> Any:
    raw = index.get(key)
    return default if raw is None else json.loads(raw)


def set_json(index: diskcache.Cache, key: str, value: Any) -> None:
    index.set(key, json.dumps(value, sort_keys=True))
