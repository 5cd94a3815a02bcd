"""The cache at a glance, as `%step status`, the sidebar and `resumable-cells ls` show
it: a run's hit rate and the time its hits saved, and a store's size, size limit and
entries. The store's figures come from the counters it keeps as it writes (never from
walking its blob folder), so they are cheap enough for every message to the sidebar;
the team cache's come from `ipython/teamcache.py`."""

from __future__ import annotations

from .. import formatting
from ..storage.store import Store


def hit_rate(served: int, ran: int) -> float | None:
    """`served / (served + ran)`: effects always run, so they do not count."""
    return served / (served + ran) if served + ran else None


def hit_rate_text(counts: dict) -> str | None:
    """`80% served (12 of 15 pure executions), 41.2 s saved`; None before any."""
    rate = hit_rate(counts["served"], counts["ran"])
    if rate is None:
        return None
    pure = counts["served"] + counts["ran"]
    return (
        f"{formatting.percent(rate)} served ({counts['served']} of {pure} pure executions), "
        f"{formatting.duration(counts['saved_s'])} saved"
    )


def store_figures(store: Store) -> dict:
    """{"dir", "bytes", "limit", "entries"}: two reads of the store's counters."""
    return {
        "dir": str(store.dir),
        "bytes": store.used_bytes(),
        "limit": store.size_limit,
        "entries": store.entry_count(),
    }


def entries_text(n: int) -> str:
    return f"{n} {'entry' if n == 1 else 'entries'}"


def store_text(f: dict) -> str:
    """`store DIR: 1.2 GiB of 10.0 GiB, 34 entries`."""
    return (
        f"store {f['dir']}: {formatting.size(f['bytes'])} of {formatting.size(f['limit'])}, "
        f"{entries_text(f['entries'])}"
    )


def writing_text(f: dict) -> str:
    """`writing 3 entries (1.2 GiB) in the background: fit, score, plot`."""
    return (
        f"writing {entries_text(f['entries'])} ({formatting.size(f['bytes'])}) in the "
        f"background: {', '.join(f['steps'])}"
    )


def team_text(f: dict) -> str:
    """`team cache URL: 2.1 GiB of 4.0 GiB (server memory), 340 entries`, or its error."""
    if f.get("error"):
        return f"team cache {f['url']}: {f['error']}"
    parts = []
    if f.get("bytes") is not None:
        limit = f" of {formatting.size(f['limit'])}" if f.get("limit") else " (no limit)"
        # Redis reports its memory in use; a bucket, the bytes of its objects
        counted = "server memory" if f["url"].startswith(("redis", "unix")) else "objects"
        parts.append(f"{formatting.size(f['bytes'])}{limit} ({counted})")
    if f.get("entries") is not None:
        parts.append(entries_text(f["entries"]))
    return f"team cache {f['url']}: " + (", ".join(parts) or "no figures")
