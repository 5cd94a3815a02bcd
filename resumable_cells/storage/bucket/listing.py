"""What a bucket team cache holds: step by step (for `resumable-cells ls --remote`),
and at a glance (for `%step status`, the sidebar and `resumable-cells ls`)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import obstore

from ..entries import Entry
from ..redis import listing as redis_listing
from ..seal import Sealer
from . import crossing, layout, transfer


def listing(store: Any, sealer: Sealer | None) -> dict:
    """As `redis.listing.listing` (with "chunks": the frames of the blobs' bodies, and
    their sizes as stored). Raises the bucket's errors."""
    keys, sizes = [], {}
    for path, size in objects(store):
        if path.startswith(layout.ENTRIES):
            keys.append(path.removeprefix(layout.ENTRIES))
        elif path.startswith(layout.BODIES):
            sizes[path.removeprefix(layout.BODIES).split("/")[0]] = size

    def entries() -> Iterator[Entry | None]:
        for key in keys:
            raw = transfer.get(store, layout.entry_path(key))
            if raw is not None:
                yield redis_listing.opened(key, raw, sealer, crossing.entry_in)

    info = redis_listing.by_step(entries(), sizes)
    frames = sum(max(1, math.ceil(n / layout.FRAME)) for n in sizes.values())
    return {**info, "chunks": frames}


def figures(store: Any) -> dict:
    """{"entries", "bytes", "limit"}: the entries and the bytes of every object, counted
    from a listing (no object is read); a bucket has no limit to report (None).
    Raises the bucket's errors."""
    entries, size = 0, 0
    for path, n in objects(store):
        size += n
        entries += path.startswith(layout.ENTRIES)
    return {"entries": entries, "bytes": size, "limit": None}


def objects(store: Any, prefix: str = layout.ROOT) -> Iterator[tuple[str, int]]:
    """(path, size) of every object under `prefix`."""
    for batch in obstore.list(store, prefix):
        for meta in batch:
            yield meta["path"], meta["size"]
