"""The team cache: a Redis tier behind the local store (see `tiers.Tier`).

Everything sent is sealed under the team key and everything read is opened with it or
the previous one (`storage.seal`). A lookup copies a hit's blobs into the local store,
opened and verified on the way (`transfer`); new entries are pushed from a background thread (`pushqueue`); a server
that is down, slow or refusing is skipped for a back-off (`health`). Runs, budgets and
records never leave the machine: only entries and the blobs they name, laid out as
`wire` says. Redis Cluster is not supported (a push commits with a multi-key script).
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

from ... import logs, settings
from ...errors import TamperedError, TeamCacheError
from .. import seal, teamkey
from ..entries import Entry
from ..seal import Sealer
from ..store import Store
from ..tiers import Tier, without_credentials
from . import connect, transfer, wire
from .health import Health
from .pushqueue import PushQueue

log = logging.getLogger(__name__)
MIN_FETCH_S = 10.0  # a hit may take this long, or twice the step's own duration


class RedisTier(Tier):
    """The team cache at `url`. Calls from the user's thread (`lookup`, `put`, `flush`)
    never raise on a server problem; they warn once per kernel and carry on.

    >>> tier = RedisTier("redis://127.0.0.1:6379/0")  # nothing connects until it is used
    """

    source = "remote"

    def __init__(self, url: str, sealer: Sealer | None = None, store_dir: Path | None = None):
        """`sealer`: the team keys' (default: from the environment, refusing a key file
        inside `store_dir`). Raises TeamCacheError."""
        self.url = url
        self.fast = connect.client(url, connect.SOCKET_TIMEOUT)
        self.bulk = connect.client(url, connect.BULK_TIMEOUT)
        self.sealer = sealer if sealer is not None else seal.from_settings(store_dir)
        self.health = Health(url, threading.Condition(), self._missing_key_warning())
        self.queue = PushQueue(self.push_entry, self.health, connect.server_errors)
        self._known: set[str] = set()  # keys known to be on the server

    def location(self) -> str:
        return without_credentials(self.url)

    def _missing_key_warning(self) -> str | None:
        if self.sealer is not None:
            return None
        return (
            f"the team cache {self.url} is off: set {teamkey.KEY_ENV} (or "
            f"{teamkey.KEY_FILE_ENV}) to the key your team shares; without it nothing "
            "there can be read or written"
        )

    def _sealer(self) -> Sealer:
        """The team keys' sealer, on the paths that reach the server: a lookup asks
        `usable()` first and a push is queued only by `put`, both of which require one."""
        assert self.sealer is not None, "the team cache has no key"
        return self.sealer

    def usable(self) -> bool:
        return self.sealer is not None and not self.queue.closed and self.health.up_now()

    # -- lookup ----------------------------------------------------------------------------
    def lookup(self, key: str, local: Store) -> Entry | None:
        """The entry under `key`, its blobs copied into `local` (signed with the user
        key), or None. Raises TamperedError (a StoreError; SealError when it does not
        open under the team keys) when what is there fails the team key."""
        self.health.say_warning()
        if not self.usable():
            return None
        try:
            entry = self._pull(key, local)
        except TamperedError:
            raise
        except transfer.Incomplete as err:
            logs.warn(f"{err}; running the step")
            self._forget(key, err.blob)
            return None
        except transfer.TooSlow as err:
            logs.warn(f"{err}; running it")
            return None
        except connect.server_errors() as err:
            log.debug("the team cache failed a lookup", exc_info=True)
            self.health.down(err)
            self.health.say_warning()
            return None
        except OSError as err:  # the local disk, not the server
            logs.warn(f"a team cache hit could not be copied here ({err})")
            return None
        if entry is not None:
            self._known.add(key)
        return entry

    def _pull(self, key: str, local: Store) -> Entry | None:
        raw = self.fast.get(wire.entry_key(key))
        if raw is None:
            self.health.up()
            return None
        entry = wire.opened_entry(raw, key, self._sealer())
        # Give up when copying would take longer than running the step did.
        budget = max(MIN_FETCH_S, 2 * entry.duration_s)
        deadline = time.monotonic() + budget
        try:
            for name in entry.blobs():
                if not local.has_blob(name):
                    transfer.pull_blob(self.fast, local, name, self._sealer(), deadline)
        except transfer.TooSlow:
            raise transfer.TooSlow(
                f"the team cache is too slow to beat running the step (over {budget:.1f} s)"
            ) from None
        self.health.up()
        return entry

    def _forget(self, key: str, blob: str | None) -> None:
        """Drop an entry whose blob lost chunks (and that blob's header), so that the
        next push of either uploads them again instead of finding them there."""
        try:
            self.fast.delete(wire.entry_key(key), *([wire.blob_key(blob)] if blob else []))
        except connect.server_errors():
            log.debug("a damaged team cache entry could not be dropped", exc_info=True)

    # -- push ------------------------------------------------------------------------------
    def put(self, key: str, local: Store) -> None:
        """Queue `local`'s entry `key` for the background pusher; returns at once."""
        self.health.say_warning()
        if self.sealer is None or key in self._known or self.queue.closed:
            return
        self.queue.later(local, key)

    def push_entry(self, local: Store, key: str) -> bool:
        """Push one local entry now, in this thread. Returns False if it was already
        there or is gone locally. Raises on a server problem."""
        if key in self._known:
            return False
        entry = local.get_entry(key)  # checked with the user key: only trusted data leaves
        if entry is None:
            return False
        if self.bulk.exists(wire.entry_key(key)):
            self._known.add(key)
            return False
        for name in entry.blobs():
            sent = transfer.push_blob(self.bulk, local, name, self._sealer())
            if sent:
                self.queue.count(blobs=1, nbytes=sent)
        sealed = wire.sealed_entry(entry, key, self._sealer())
        self.bulk.set(wire.entry_key(key), sealed, nx=True)
        self._known.add(key)
        self.queue.count(entries=1)
        return True

    def pending(self) -> int:
        return self.queue.pending()

    def flush(self, timeout: float = 600.0) -> dict[str, Any]:
        """Retry failed pushes now and wait until none is queued or running (see
        `PushQueue.flush`)."""
        self.health.say_warning()
        return self.queue.flush(timeout)

    def close(self) -> None:
        """No more lookups or new pushes; what is queued is still pushed."""
        self.queue.close()


def from_setting(url: str | None, store_dir: Path | None = None) -> RedisTier | None:
    """A RedisTier for `url`, or None for "", "none" or "off"; a team key file inside
    `store_dir` is refused. Raises TeamCacheError."""
    if url is None or settings.team_cache_off(url):
        return None
    url = url.strip()
    if not url.startswith(("redis://", "rediss://", "unix://")):
        raise TeamCacheError(f"{url!r} is not a Redis URL; use redis://HOST:PORT/DB (or none)")
    return RedisTier(url, store_dir=store_dir)
