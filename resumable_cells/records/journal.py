"""The completion record: an append-only journal of step events, one per run.

Each execution writes a `start` row when it begins and an `end` row when it finishes, in
the store, as it happens. Reading merges them into one dict per execution; an execution
that started in a kernel session that is no longer the current one and never ended is
`interrupted`.
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path

import diskcache

from .. import logs
from ..storage.index import open_cache
from ..storage.store import Store

log = logging.getLogger(__name__)
EXECUTION_FIELDS = (
    "id", "run", "session", "step", "cell_id", "execution_count", "key", "status", "start", "end",
    "duration_s", "saved_s", "computed", "reason", "source", "inputs", "outputs", "spend",
)  # fmt: skip


class Journal:
    def __init__(self, store_dir: Path, run_id: str):
        self.path = Path(store_dir) / "record" / run_id
        self._cache: diskcache.Cache | None = None
        self._deque: diskcache.Deque | None = None
        self._lock = threading.Lock()
        self._merged: dict[str, dict] | None = None  # in-memory view, kept as rows append

    @property
    def deque(self) -> diskcache.Deque:
        if self._deque is None:
            self._cache = open_cache(self.path)
            self._deque = diskcache.Deque.fromcache(self._cache)
        return self._deque

    def append(self, row: dict) -> dict:
        """Write `row`; returns the execution it belongs to, merged so far."""
        with self._lock:
            self.deque.append(json.dumps(row, sort_keys=True, default=str))
            return _merge(self._view(), row)

    def executions(self, current_session: str | None = None) -> list[dict]:
        """Like `executions(self.rows())`, without re-reading the store each time."""
        with self._lock:
            return _finish(self._view().values(), current_session)

    def _view(self) -> dict[str, dict]:
        if self._merged is None:
            self._merged = {}
            for row in self.rows():
                _merge(self._merged, row)
        return self._merged

    def rows(self) -> list[dict]:
        if self._deque is None and not self.path.exists():
            return []
        out = []
        try:
            raws = list(self.deque)
        except Exception as err:  # a damaged journal must not take the kernel down
            log.debug("the record at %s could not be read", self.path, exc_info=True)
            logs.warn(f"the record could not be read ({err})")
            return []
        for raw in raws:
            try:
                out.append(json.loads(raw))
            except (TypeError, ValueError):
                continue  # a damaged row is skipped, never fatal
        return out

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
            self._cache = self._deque = None
        self._merged = None


def executions(rows: list[dict], current_session: str | None = None) -> list[dict]:
    """One dict per execution (start merged with end), in start order."""
    by_id: dict[str, dict] = {}
    for row in rows:
        _merge(by_id, row)
    return _finish(by_id.values(), current_session)


def _merge(by_id: dict[str, dict], row: dict) -> dict:
    eid = row.get("id")
    merged = by_id.get(eid) if eid else None  # (rows without an id are never kept)
    if merged is None:
        merged = {f: None for f in EXECUTION_FIELDS}
        merged.update(status="running", saved_s=0.0, inputs=[], outputs=[],
                      spend={"steps": 0, "tokens": 0, "cost": 0.0})  # fmt: skip
        if eid:
            by_id[eid] = merged
    merged.update({k: v for k, v in row.items() if k in EXECUTION_FIELDS and v is not None})
    return merged


def _finish(merged, current_session: str | None) -> list[dict]:
    out = []
    for e in merged:
        e = dict(e)
        if e["status"] == "running" and e["session"] != current_session:
            e["status"] = "interrupted"
        out.append(e)
    return sorted(out, key=lambda e: e["start"] or 0)


def sessions(execs: list[dict]) -> list[str]:
    return list(dict.fromkeys(e["session"] for e in execs if e.get("session")))


def load(store: Store, run_id: str, current_session: str | None = None) -> list[dict]:
    journal = Journal(store.dir, run_id)
    try:
        return executions(journal.rows(), current_session)
    finally:
        journal.close()
