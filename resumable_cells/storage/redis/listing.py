"""What a team cache holds: step by step (for `resumable-cells ls --remote`), and at a
glance (for `%step status`, the sidebar and `resumable-cells ls`)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from ...errors import StoreError, TamperedError
from ..entries import Entry
from ..seal import Sealer
from . import wire

log = logging.getLogger(__name__)


def listing(redis, sealer: Sealer | None) -> dict:
    """{"steps": {step: {"entries", "bytes", "latest"}}, "entries", "blobs", "bytes",
    "chunks", "unverified"}; entries that do not open under the team keys (all,
    without them) are counted as unverified, blobs as they are sealed. Raises the
    server's errors."""
    blob_meta = _blob_metas(redis, sealer)
    entry_keys = list(redis.scan_iter(match=wire.entry_key("*"), count=1000))
    raws = zip(
        (wire.last_part(k) for k in entry_keys), redis.mget(entry_keys) if entry_keys else []
    )
    entries = (opened(key, raw, sealer, wire.opened_entry) for key, raw in raws)
    sizes = {name: m.size for name, m in blob_meta.items()}
    return {**by_step(entries, sizes), "chunks": sum(m.chunks for m in blob_meta.values())}


def opened(
    key: str, raw: bytes, sealer: Sealer | None, open_entry: Callable[[bytes, str, Sealer], Entry]
) -> Entry | None:
    """The entry `raw` stored under `key`, opened by `open_entry`; None (unverified)
    without team keys or when it does not open."""
    if sealer is None:
        return None
    try:
        return open_entry(raw, key, sealer)
    except (StoreError, ValueError):
        log.debug("entry %s on the team cache does not open", key[:12], exc_info=True)
        return None


def by_step(entries: Iterable[Entry | None], sizes: dict[str, int]) -> dict:
    """{"steps", "entries", "blobs", "bytes", "unverified"} of `entries` (None: one that
    did not open) whose blobs have `sizes` ({name: bytes})."""
    steps: dict[str, dict] = {}
    unverified = 0
    for e in entries:
        if e is None:
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


def _blob_metas(redis, sealer: Sealer | None) -> dict[str, wire.BlobMeta]:
    if sealer is None:
        return {}
    metas = list(redis.scan_iter(match=wire.blob_key("*"), count=1000))
    out: dict[str, wire.BlobMeta] = {}
    for k, raw in zip(metas, redis.mget(metas) if metas else []):
        name = wire.last_part(k)
        try:
            out[name] = wire.opened_meta(raw, name, sealer)
        except TamperedError:
            log.debug("blob %s on the team cache does not open", name[:12], exc_info=True)
    return out
