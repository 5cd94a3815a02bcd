"""What a team cache holds: step by step (for `resumable-cells ls --remote`), and at a
glance (for `%step status`, the sidebar and `resumable-cells ls`)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable

from ...errors import StoreError, TamperedError
from ..entries import Entry
from . import wire

log = logging.getLogger(__name__)


def listing(redis, team_key: bytes | None) -> dict:
    """{"steps": {step: {"entries", "bytes", "latest"}}, "entries", "blobs", "bytes",
    "chunks", "unverified"}; entries that fail `team_key` (all, without one) are
    counted as unverified. Raises the server's errors."""
    blob_meta = _blob_metas(redis)
    entry_keys = list(redis.scan_iter(match=wire.entry_key("*"), count=1000))
    raws = zip(
        (wire.last_part(k) for k in entry_keys), redis.mget(entry_keys) if entry_keys else []
    )
    sizes = {name: m["size"] for name, m in blob_meta.items()}
    return {
        **by_step(raws, team_key, sizes),
        "chunks": sum(m["chunks"] for m in blob_meta.values()),
    }


def by_step(raws: Iterable[tuple[str, bytes]], team_key: bytes | None, sizes: dict) -> dict:
    """{"steps", "entries", "blobs", "bytes", "unverified"} of the signed entries `raws`
    ((key, raw) pairs) whose blobs have `sizes` ({name: bytes})."""
    steps: dict[str, dict] = {}
    unverified = 0
    for key, raw in raws:
        try:
            if team_key is not None:
                e = wire.verified_entry(raw, key, team_key)
            else:
                e = Entry.from_json(json.loads(raw))
                unverified += 1
        except (TamperedError, StoreError, ValueError, TypeError):
            unverified += 1
            continue
        s = steps.setdefault(e.step, {"entries": 0, "blobs": set(), "latest": 0})
        s["entries"] += 1
        s["blobs"].update(e.blobs())
        s["latest"] = max(s["latest"], e.created)
    for s in steps.values():
        s["bytes"] = sum(sizes[b] for b in s.pop("blobs") if b in sizes)
    return {
        "steps": steps,
        "entries": sum(s["entries"] for s in steps.values()),
        "blobs": len(sizes),
        "bytes": sum(sizes.values()),
        "unverified": unverified,
    }


def figures(redis) -> dict:
    """{"entries", "bytes", "limit"}: the entries counted by their keys (no value is
    read), and the server's memory in use and its `maxmemory` (None: no limit), as its
    INFO reports them. Raises the server's errors."""
    entries = sum(1 for _ in redis.scan_iter(match=wire.entry_key("*"), count=1000))
    memory = redis.info("memory")
    return {
        "entries": entries,
        "bytes": memory.get("used_memory"),
        "limit": memory.get("maxmemory") or None,
    }


def _blob_metas(redis) -> dict[str, dict]:
    metas = list(redis.scan_iter(match=wire.blob_key("*"), count=1000))
    out: dict[str, dict] = {}
    for k, raw in zip(metas, redis.mget(metas) if metas else []):
        name = wire.last_part(k)
        try:
            out[name] = wire.parse_meta(raw, name)
        except TamperedError:
            log.debug("blob %s on the team cache has a damaged header", name[:12])
    return out
