"""What a bucket team cache holds at a glance, for `%step status`, the sidebar and
`resumable-cells ls`: its entries and the bytes of its objects, counted from a listing
(no object is read)."""

from __future__ import annotations

from typing import Any

import obstore

from . import layout


def figures(store: Any) -> dict:
    """{"entries", "bytes", "limit"} (a bucket has no limit to report: None). Raises the
    bucket's errors."""
    entries, size = 0, 0
    for batch in obstore.list(store, layout.ROOT):
        for meta in batch:
            size += meta["size"]
            entries += meta["path"].startswith(layout.ENTRIES)
    return {"entries": entries, "bytes": size, "limit": None}
