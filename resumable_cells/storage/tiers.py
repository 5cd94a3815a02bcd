"""Tiers behind the local store, and the tiered store that looks through them in order.

A `Tier` is a cache of entries kept elsewhere (the team's Redis). `lookup` finds an
entry there and copies the blobs it names into the local store, so that its values are
then read from the local store like any other's; `put` sends a local entry there (it
may queue it). `TieredStore` asks the local store first, then each tier, and keeps a
tier's hit in the local store (as marimo's tiered store and Bazel's remote cache do);
it puts a new entry into the local store and hands it to every tier. A tier may leave
the blobs of values restored lazily behind until they are read: the local store then
asks the tiers for a blob it lacks (`fetch_blob`).
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from urllib.parse import urlsplit, urlunsplit

from .. import logs
from .entries import Entry
from .store import Store

log = logging.getLogger(__name__)


class Tier(ABC):
    """A cache of entries behind the local store."""

    #: What a hit from here says about where it came from (the record's `source`).
    source: str

    def location(self) -> str:
        """Where a hit from here was served from, as its provenance shows it: a URL
        without credentials. Tiers without an address of their own say their source."""
        return self.source

    @abstractmethod
    def lookup(self, key: str, local: Store) -> Entry | None:
        """The entry under `key`, with its blobs copied into `local`; None on a miss.
        Raises StoreError when what is there cannot be trusted."""

    @abstractmethod
    def put(self, key: str, local: Store) -> None:
        """Send `local`'s entry `key` here (perhaps later: it returns at once)."""

    @abstractmethod
    def close(self) -> None:
        """Stop taking lookups and new entries."""

    def fetch_blob(self, name: str, local: Store) -> bool:
        """Copy blob `name` into `local` when this tier has it (an entry it served
        left the blobs of values restored lazily here until they are read). False when
        it does not serve blobs that way; raises why a copy failed."""
        return False


class TieredStore:
    """The local store, then each tier."""

    def __init__(self, local: Store, tiers: list[Tier] | None = None) -> None:
        self.local = local
        self.tiers = list(tiers or [])
        local.set_blob_source(self._fetch if self.tiers else None)

    def _fetch(self, name: str) -> None:
        """A blob the local store lacks, from the first tier that has it (if none
        does, the read that asked fails as for any missing blob)."""
        for tier in self.tiers:
            if tier.fetch_blob(name, self.local):
                return

    def lookup(self, key: str) -> tuple[Entry | None, str, str | None]:
        """(entry, where it came from: "local" or a tier's `source`, and that tier's
        `location()`, None for the local store); (None, "local", None) on a miss. Raises
        StoreError (an entry that fails authentication) and whatever the local index
        raises."""
        entry = self.local.get_entry(key)
        if entry is not None:
            return entry, "local", None
        for tier in self.tiers:
            entry = tier.lookup(key, self.local)
            if entry is not None:
                self._keep(key, entry)
                return entry, tier.source, tier.location()
        return None, "local", None

    def _keep(self, key: str, entry: Entry) -> None:
        try:
            self.local.put_entry(key, entry)
        except Exception as err:  # a full or locked local store: serve the hit anyway
            log.debug("a hit from a tier was not kept locally", exc_info=True)
            logs.warn(f"the team cache hit was not kept locally ({err})")

    def put(self, key: str, entry: Entry) -> None:
        """Store `entry` locally (raises if that fails), then hand it to every tier
        (a tier that fails is logged: the entry is kept locally either way)."""
        self.local.put_entry(key, entry)
        for tier in self.tiers:
            try:
                tier.put(key, self.local)
            except Exception:
                log.debug("a tier did not take entry %s", key[:12], exc_info=True)


def without_credentials(url: str) -> str:
    """`url` as it may be shown: a user name or password in it is left out."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
