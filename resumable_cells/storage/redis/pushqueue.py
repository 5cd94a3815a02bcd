"""The entries waiting to go to the team cache, and the background thread that pushes
them, so a cell never waits for an upload.

A push that fails on the server parks its entry until the back-off (`health`) is over
and is retried then; one that fails locally (an entry evicted or damaged meanwhile) is
reported by the next `flush` and not retried. `flush` (`%step push`) retries now and
waits until nothing is queued or running.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from ..store import Store
from .health import Health, describe_error

log = logging.getLogger(__name__)


class PushQueue:
    """`push(store, key)` runs in the worker thread for each queued entry; it raises one
    of `server_errors` when the server failed."""

    def __init__(
        self,
        push: Callable[[Store, str], object],
        health: Health,
        server_errors: Callable[[], tuple[type[BaseException], ...]],
    ):
        self._push = push
        self.health = health
        self._server_errors = server_errors
        self._cv = health.cv
        self._todo: dict[str, Store] = {}
        self._failed: dict[str, Store] = {}
        self._busy: str | None = None
        self._worker: threading.Thread | None = None
        self.closed = False
        # counts, and "errors": a list of messages (a count of them in `_reported`)
        self.stats: dict[str, Any] = {"entries": 0, "blobs": 0, "bytes": 0, "errors": []}
        self._reported: dict[str, Any] = dict(self.stats, errors=0)  # what the last flush reported

    def count(self, entries: int = 0, blobs: int = 0, nbytes: int = 0) -> None:
        """Add to what was pushed (any thread)."""
        with self._cv:
            self.stats["entries"] += entries
            self.stats["blobs"] += blobs
            self.stats["bytes"] += nbytes

    def later(self, store: Store, key: str) -> None:
        """Queue the local entry `key`; returns at once."""
        with self._cv:
            self._todo[key] = store
            self._failed.pop(key, None)
            self._start_worker()
            self._cv.notify_all()

    def _start_worker(self) -> None:
        if self._worker is None or not self._worker.is_alive():
            self._worker = threading.Thread(
                target=self._work, name="resumable-cells-push", daemon=True
            )
            self._worker.start()

    def pending(self) -> int:
        with self._cv:
            return len(self._todo) + len(self._failed) + (self._busy is not None)

    def flush(self, timeout: float = 600.0) -> dict[str, Any]:
        """Retry failed pushes now and wait until none is queued or running. Returns what
        was pushed since the last flush: {"pushed": entries, "blobs", "bytes", "failed":
        entries left to push, "errors": [entries that cannot be pushed, and why]}."""
        deadline = time.monotonic() + timeout
        with self._cv:
            self._todo.update(self._failed)
            self._failed.clear()
            self.health.retry_now()
            if self._todo:
                self._start_worker()
            self._cv.notify_all()
            while self._todo or self._busy is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cv.wait(min(left, 0.5))
            before, now = self._reported, self.stats
            self._reported = dict(now, errors=len(now["errors"]))
            return {
                "pushed": now["entries"] - before["entries"],
                "blobs": now["blobs"] - before["blobs"],
                "bytes": now["bytes"] - before["bytes"],
                "failed": len(self._failed) + len(self._todo) + (self._busy is not None),
                "errors": now["errors"][before["errors"] :],
            }

    def close(self) -> None:
        """No new pushes; the worker finishes what is queued (not what failed: `%step
        push --all` on the next team cache sends those) and exits."""
        with self._cv:
            self.closed = True
            self._failed.clear()
            self._cv.notify_all()

    def _next(self) -> tuple[str, Store] | None:
        """The next entry to push, waiting for one (None once closed and empty)."""
        with self._cv:
            while True:
                now, until = time.monotonic(), self.health.down_until
                if self._failed and now >= until and not self.closed:
                    self._todo.update(self._failed)  # the back-off is over: retry
                    self._failed.clear()
                if self._todo and now < until:
                    self._failed.update(self._todo)  # down: park them until it is over
                    self._todo.clear()
                if self._todo:
                    break
                if self.closed:
                    return None
                self._cv.wait(until - now if self._failed else None)
            key = next(iter(self._todo))
            self._busy = key
            return key, self._todo.pop(key)

    def _work(self) -> None:
        while (job := self._next()) is not None:
            key, store = job
            try:
                self._push(store, key)
                self.health.up()
            except self._server_errors() as err:
                log.debug("pushing %s failed on the server; retried later", key[:12], exc_info=True)
                self.health.down(err)
                with self._cv:
                    self._failed[key] = store
            except Exception as err:  # a local problem (evicted, damaged): not retried
                log.debug("pushing %s failed here; not retried", key[:12], exc_info=True)
                with self._cv:
                    self.stats["errors"].append(f"{key[:12]}: {describe_error(err)}")
            finally:
                with self._cv:
                    self._busy = None
                    self._cv.notify_all()
