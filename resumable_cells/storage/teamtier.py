"""What every team cache does the same way, whatever holds it (a Redis server,
`redis/tier.py`; a bucket, `bucket/tier.py`): the team key, the server's health, the
background pusher, and the order of a lookup and of a push.

Everything a team cache holds is sealed under the team key (`seal.Sealer`); without a
team key the tier is off, said once. A lookup reads the entry, opens it with the team
keys and copies every blob it names that the local store lacks, giving up when that would take longer than running the
step did; a push sends the blobs first and the entry last, so that a reader that finds
an entry finds everything it names. What differs is how an entry and a blob are read
and written: the methods a subclass gives.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from abc import abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import logs
from ..errors import TamperedError
from . import seal, teamkey
from .entries import Entry
from .redis.health import Health
from .redis.pushqueue import PushQueue
from .redis.transfer import Incomplete, TooSlow
from .seal import Sealer
from .store import Store
from .tiers import Tier, without_credentials

log = logging.getLogger(__name__)
MIN_FETCH_S = 10.0  # a hit may take this long, or twice the step's own duration


class TeamTier(Tier):
    """A team cache at `url`. Calls from the user's thread (`lookup`, `put`, `flush`)
    never raise on a server problem; they warn once per kernel and carry on."""

    source = "remote"
    #: Whether a hit leaves the blobs of values restored lazily here until they are read.
    lazy_blobs = False
    #: Why this kernel may not write here (a subclass finds out); None: it may.
    read_only: str | None = None

    def __init__(
        self,
        url: str,
        sealer: Sealer | None,
        store_dir: Path | None,
        server_errors: Callable[[], tuple[type[BaseException], ...]],
        clients: tuple[Any, Any],
    ):
        """`sealer`: the team keys' (default: from the environment, refusing a key file
        inside `store_dir`). Raises TeamCacheError."""
        self.url = url
        # (fast, bulk): for lookups in the user's cell, and for uploads and blobs
        self.fast, self.bulk = clients
        self.sealer = sealer if sealer is not None else seal.from_settings(store_dir)
        self.server_errors = server_errors
        self.health = Health(url, threading.Condition(), self._missing_key_warning())
        self.queue = PushQueue(self.push_entry, self.health, server_errors)
        self._known: set[str] = set()  # keys known to be on the server
        # Blobs that failed the team keys when a value restored lazily was read: an
        # entry naming one is not served again, or the step would be refused forever.
        self._refused: set[str] = set()

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

    def say_warnings(self) -> None:
        """Print what the user must know, once per kernel (call from the user's thread)."""
        self.health.say_warning()

    # -- what a subclass gives ------------------------------------------------------------
    @abstractmethod
    def get_entry(self, key: str) -> Entry | None:
        """The entry stored under `key`, opened with the team keys; None when there is
        none. Raises TamperedError (SealError among them) when it does not open."""

    @abstractmethod
    def has_entry(self, key: str) -> bool: ...

    @abstractmethod
    def set_entry(self, key: str, entry: Entry) -> None:
        """Store the entry, sealed (after all its blobs)."""

    @abstractmethod
    def pull_blob(self, local: Store, name: str, deadline: float) -> int:
        """Copy blob `name` into `local` (see `redis.transfer.pull_blob`)."""

    @abstractmethod
    def push_blob(self, local: Store, name: str) -> int:
        """Send blob `name` unless it is there; the body bytes sent."""

    @abstractmethod
    def forget(self, key: str, blob: str | None) -> None:
        """Drop an entry whose blob is gone (and that blob's record), so that the next
        push of either uploads them again instead of finding them there."""

    # -- lookup ----------------------------------------------------------------------------
    def lookup(self, key: str, local: Store) -> Entry | None:
        """The entry under `key`, its blobs copied into `local` (signed with the user
        key), or None. Raises TamperedError (a StoreError; SealError when it does not
        open under the team keys) when what is there fails the team key."""
        self.say_warnings()
        if not self.usable():
            return None
        try:
            entry = self._pull(key, local)
        except TamperedError:
            raise
        except Incomplete as err:
            logs.warn(f"{err}; running the step")
            self.forget(key, err.blob)
            return None
        except TooSlow as err:
            logs.warn(f"{err}; running it")
            return None
        except self.server_errors() as err:
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
        entry = self.get_entry(key)
        if entry is None:
            self.health.up()
            return None
        refused = self._refused.intersection(entry.blobs())
        if refused:
            raise TamperedError(
                f"the team cache entry {key[:12]} names blob {min(refused)[:12]}, which "
                "failed the team key when it was read; ignoring it"
            )
        # Give up when copying would take longer than running the step did.
        budget = max(MIN_FETCH_S, 2 * entry.duration_s)
        deadline = time.monotonic() + budget
        try:
            for name in entry.eager_blobs() if self.lazy_blobs else entry.blobs():
                if not local.has_blob(name):
                    self.pull_blob(local, name, deadline)
        except TooSlow:
            raise TooSlow(
                f"the team cache is too slow to beat running the step (over {budget:.1f} s)"
            ) from None
        self.health.up()
        return entry

    def fetch_blob(self, name: str, local: Store) -> bool:
        """Copy blob `name` into `local` now that a value restored lazily is read (no
        deadline: the value is wanted). False when this tier is off or closed; raises
        why the copy failed (the server's error marks it down)."""
        if not self.lazy_blobs or not self.usable():
            return False
        try:
            self.pull_blob(local, name, math.inf)
        except self.server_errors() as err:
            self.health.down(err)
            raise
        except TamperedError:
            self._refused.add(name)
            raise
        return True

    # -- push ------------------------------------------------------------------------------
    def put(self, key: str, local: Store) -> None:
        """Queue `local`'s entry `key` for the background pusher; returns at once."""
        self.say_warnings()
        if self.sealer is None or self.read_only or key in self._known or self.queue.closed:
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
        if self.has_entry(key):
            self._known.add(key)
            return False
        for name in entry.blobs():
            sent = self.push_blob(local, name)
            if sent:
                self.queue.count(blobs=1, nbytes=sent)
        self.set_entry(key, entry)
        self._known.add(key)
        self.queue.count(entries=1)
        return True

    def pending(self) -> int:
        return self.queue.pending()

    def flush(self, timeout: float = 600.0) -> dict[str, Any]:
        """Retry failed pushes now and wait until none is queued or running (see
        `PushQueue.flush`)."""
        self.say_warnings()
        return self.queue.flush(timeout)

    def close(self) -> None:
        """No more lookups or new pushes; what is queued is still pushed."""
        self.queue.close()
