"""The team cache: a Redis tier behind the local store (see `tiers.Tier`, and
`teamtier.TeamTier` for what every team cache does alike).

Everything sent is sealed under the team key and everything read is opened with it or
the previous one (`storage.seal`). A lookup copies a hit's blobs into the local store,
opened and verified on the way (`transfer`); new entries are pushed from a background
thread (`pushqueue`); a server that is down, slow or refusing is skipped for a back-off
(`health`). Runs, budgets and records never leave the machine: only entries and the
blobs they name, laid out as `wire` says. Redis Cluster is not supported (a push commits
with a multi-key script).
"""

from __future__ import annotations

import logging
from pathlib import Path

from ... import settings
from ...errors import TeamCacheError
from ..entries import Entry
from ..seal import Sealer
from ..store import Store
from ..teamtier import TeamTier
from . import connect, transfer, wire

log = logging.getLogger(__name__)


class RedisTier(TeamTier):
    """The team cache at `url`.

    >>> tier = RedisTier("redis://127.0.0.1:6379/0")  # nothing connects until it is used
    """

    def __init__(self, url: str, sealer: Sealer | None = None, store_dir: Path | None = None):
        """`sealer`: the team keys' (default: from the environment, refusing a key file
        inside `store_dir`). Raises TeamCacheError."""
        clients = (
            connect.client(url, connect.SOCKET_TIMEOUT),
            connect.client(url, connect.BULK_TIMEOUT),
        )
        super().__init__(url, sealer, store_dir, connect.server_errors, clients)

    def get_entry(self, key: str) -> Entry | None:
        raw = self.fast.get(wire.entry_key(key))
        return None if raw is None else wire.opened_entry(raw, key, self._sealer())

    def has_entry(self, key: str) -> bool:
        return bool(self.bulk.exists(wire.entry_key(key)))

    def set_entry(self, key: str, entry: Entry) -> None:
        sealed = wire.sealed_entry(entry, key, self._sealer())
        self.bulk.set(wire.entry_key(key), sealed, nx=True)

    def pull_blob(self, local: Store, name: str, deadline: float) -> int:
        return transfer.pull_blob(self.fast, local, name, self._sealer(), deadline)

    def push_blob(self, local: Store, name: str) -> int:
        return transfer.push_blob(self.bulk, local, name, self._sealer())

    def forget(self, key: str, blob: str | None) -> None:
        try:
            self.fast.delete(wire.entry_key(key), *([wire.blob_key(blob)] if blob else []))
        except connect.server_errors():
            log.debug("a damaged team cache entry could not be dropped", exc_info=True)


def from_setting(url: str | None, store_dir: Path | None = None) -> RedisTier | None:
    """A RedisTier for `url`, or None for "", "none" or "off"; a team key file inside
    `store_dir` is refused. Raises TeamCacheError."""
    if url is None or settings.team_cache_off(url):
        return None
    url = url.strip()
    if not url.startswith(("redis://", "rediss://", "unix://")):
        raise TeamCacheError(
            f"{url!r} is not a Redis URL or a bucket; use redis://HOST:PORT/DB, "
            "s3://BUCKET/PREFIX (gs://, az://, file:///DIR) or none"
        )
    return RedisTier(url, store_dir=store_dir)
