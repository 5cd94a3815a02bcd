"""Values a hit bound without reading them: restored when something first reads them.

A hit defers a value stored alone whose digest reached no code (arrays, frames, plain
containers of them: `Binding.lazy`) instead of reading its blob. The name is then not in
the namespace at all, so user code never meets a stand-in: before anything reads it, the
reader asks for it (`materialise`) and gets the value itself, read and checked then. The
readers: a live step (the inputs its key names, or everything when it reads the
namespace in ways the analysis cannot follow), a hit whose entry refers to the value
(a view onto it, a state to give it in place), a plain cell (`code/plain_reads.py`
decides which names), the `%step` commands that show values.

Until it is read, a pending name counts as bound to its value: a key takes its stored
digest (`known`), so a chain of hits reads nothing but the entries. A name the notebook
binds again, or a hit binds or deletes, stops being pending (`drop`, `settle`).

A blob that fails its check when it is finally read is never used: the read raises
NotRestored naming the step to run again, the entry is dropped from the store (so that
the step runs live), and the name stays pending with that error until something binds
it. The blobs of pending values are kept from eviction while they are pending.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

import msgspec

from ...display import capture
from ...errors import BlobUnavailable, NotRestored
from ...hashing.reach import Known
from ...storage.entries import Binding, Value
from ...storage.store import Store

log = logging.getLogger(__name__)


class Deferred(msgspec.Struct, frozen=True):
    """A value a hit left unread: where it is stored and what its key knows of it."""

    name: str
    step: str  # the step whose hit bound it (for messages)
    key: str  # the entry it came from, dropped when its blob fails
    value: Value
    known: Known


class Pending:
    """The pending names of one kernel's namespace, and how to read them."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._deferred: dict[str, Deferred] = {}
        self._failed: dict[str, str] = {}  # name -> why it could not be read
        # told (name, digest) of each value read: the staleness watcher's identities
        self.on_read: list[Callable[[str, str], None]] = []

    def __contains__(self, name: object) -> bool:
        return name in self._deferred

    def __bool__(self) -> bool:
        return bool(self._deferred)

    def names(self) -> list[str]:
        return list(self._deferred)

    def known(self) -> dict[str, Known]:
        """What a key takes for each pending name, in place of its value."""
        return {n: d.known for n, d in self._deferred.items()}

    def digest(self, name: str) -> str | None:
        d = self._deferred.get(name)
        return d.known.digest if d is not None else None

    def bytes_pending(self) -> int:
        return sum(d.known.size for d in self._deferred.values())

    def pinned(self) -> set[str]:
        """The blob files pending values are read from: not to be evicted meanwhile."""
        return {f for d in self._deferred.values() for f in d.value.files()}

    # -- changes ----------------------------------------------------------------------
    def defer(self, binding: Binding, step: str, key: str) -> None:
        assert binding.value is not None and binding.lazy is not None
        known = Known(
            binding.digest or "", frozenset(binding.lazy), binding.type, binding.size or 0
        )
        self._deferred[binding.name] = Deferred(binding.name, step, key, binding.value, known)
        self._failed.pop(binding.name, None)

    def drop(self, name: str) -> None:
        """`name` was bound or deleted by something else: its stored value is not its."""
        self._deferred.pop(name, None)
        self._failed.pop(name, None)

    def settle(self, ns: dict[str, Any]) -> None:
        """Forget the pending names the namespace binds again (a cell assigned them)."""
        for name in [n for n in self._deferred if n in ns]:
            self.drop(name)

    # -- reads ------------------------------------------------------------------------
    def materialise(self, names: Iterable[str], ns: dict[str, Any]) -> list[str]:
        """Read the pending values among `names` into `ns`; returns the names read.
        Raises NotRestored (after reading every other one) when one cannot be read."""
        wanted = [n for n in dict.fromkeys(names) if n in self._deferred]
        if not wanted:
            return []
        read: list[tuple[str, str]] = []
        problems = []
        for name in wanted:
            try:
                ns[name] = self._read(self._deferred[name])
            except NotRestored as err:
                problems.append(str(err))
                continue
            read.append((name, self._deferred.pop(name).known.digest))
        for name, digest in read:
            for told in list(self.on_read):
                try:
                    told(name, digest)
                except Exception:  # a listener (the sidebar's) must never fail a read
                    log.debug("a listener failed on reading %s", name, exc_info=True)
        if problems:
            raise NotRestored("; ".join(problems))
        return [name for name, _ in read]

    def materialise_all(self, ns: dict[str, Any]) -> list[str]:
        return self.materialise(list(self._deferred), ns)

    def _read(self, d: Deferred) -> Any:
        failed = self._failed.get(d.name)
        if failed is not None:
            raise NotRestored(failed)
        try:
            with capture.unshown(f"the value of {d.name} was read"):
                return self.store.get_value(d.value)
        except Exception as err:  # a damaged or missing blob: never used
            log.debug("the value of %s could not be read", d.name, exc_info=True)
            why = (
                f"the value of {d.name}, restored lazily by a hit of step {d.step}, "
                f"could not be read ({err}); its entry was dropped: run step {d.step} "
                "again to compute it"
            )
            self._failed[d.name] = why
            self._drop_entry(d, suspect=not isinstance(err, BlobUnavailable))
            raise NotRestored(why) from None

    def _drop_entry(self, d: Deferred, suspect: bool) -> None:
        """Drop the entry of a value that could not be read; its blobs too when
        `suspect` (not when a team cache failed to give one: the others are sound)."""
        try:
            entry = self.store.get_entry(d.key)
            if entry is not None:
                self.store.discard_entry(d.key, entry, suspect)
            else:
                self.store.delete_entry(d.key)
        except Exception:  # the store failing too: the next run finds the blob bad anyway
            log.warning("the entry of step %s could not be dropped", d.step, exc_info=True)
