"""The team cache in a bucket: an object-storage tier behind the local store, the same
to its callers as the Redis one (`teamtier.TeamTier` does what both do alike).

Entries and blobs are read and written as `layout` lays them out, every byte sealed or
opened under the team keys by `crossing`, blobs by `transfer`. Without a team key the
tier is off, said once, as the Redis tier is. Credentials that may read but not write make the tier
read-only for this kernel, said once: lookups go on, entries stay in the local store.
"""

from __future__ import annotations

import logging
from pathlib import Path

import obstore

from ... import logs
from ..entries import Entry
from ..redis.health import describe_error
from ..seal import Sealer
from ..store import Store
from ..teamtier import TeamTier
from . import connect, crossing, layout, transfer

log = logging.getLogger(__name__)


class ObjectTier(TeamTier):
    """The team cache at `url` (s3://, gs://, az://, file://).

    >>> tier = ObjectTier("s3://team-bucket/cache")  # nothing connects until it is used
    """

    lazy_blobs = True  # a value's bytes come from the bucket only when it is read

    def __init__(self, url: str, sealer: Sealer | None = None, store_dir: Path | None = None):
        """`sealer`: the team keys' (default: from the environment, refusing a key file
        inside `store_dir`). Raises TeamCacheError."""
        clients = connect.client(url, connect.FAST), connect.client(url, connect.BULK)
        super().__init__(url, sealer, store_dir, connect.server_errors, clients)
        self._said_read_only = False

    def say_warnings(self) -> None:
        super().say_warnings()
        if self.read_only and not self._said_read_only:
            self._said_read_only = True
            logs.warn(self.read_only)

    def get_entry(self, key: str) -> Entry | None:
        raw = transfer.get(self.fast, layout.entry_path(key))
        return None if raw is None else crossing.entry_in(raw, key, self._sealer())

    def has_entry(self, key: str) -> bool:
        return transfer.exists(self.bulk, layout.entry_path(key))

    def set_entry(self, key: str, entry: Entry) -> None:
        data = crossing.entry_out(entry, key, self._sealer())
        transfer.put(self.bulk, layout.entry_path(key), data)

    def pull_blob(self, local: Store, name: str, deadline: float) -> int:
        return transfer.pull_blob(self.bulk, local, name, self._sealer(), deadline)

    def push_blob(self, local: Store, name: str) -> int:
        return transfer.push_blob(self.bulk, local, name, self._sealer())

    def forget(self, key: str, blob: str | None) -> None:
        paths = [layout.entry_path(key)] + ([layout.head_path(blob)] if blob else [])
        try:
            obstore.delete(self.fast, paths)
        except Exception:  # read-only or unreachable: it stays a miss here
            log.debug("an incomplete team cache entry could not be dropped", exc_info=True)

    def push_entry(self, local: Store, key: str) -> bool:
        """As `TeamTier.push_entry`; False too when the bucket refuses writes, which
        makes the tier read-only (the entry stays in the local store)."""
        if self.read_only:
            return False
        try:
            return super().push_entry(local, key)
        except connect.server_errors() as err:
            if not connect.refused_write(err):
                raise
            log.debug("the team cache refused a write", exc_info=True)
            self.read_only = (
                f"the team cache {self.url} is read-only for these credentials "
                f"({describe_error(err)}); hits are still served from it, and new "
                "entries stay in the local store"
            )
            return False

    def flush(self, timeout: float = 600.0) -> dict:
        res = super().flush(timeout)
        self._said_read_only = self._said_read_only or bool(self.read_only)  # the report says it
        return res


def from_setting(url: str, store_dir: Path | None = None) -> ObjectTier:
    """An ObjectTier for a bucket URL (`connect.is_bucket_url`); a team key file inside
    `store_dir` is refused. Raises TeamCacheError."""
    return ObjectTier(url.strip(), store_dir=store_dir)
