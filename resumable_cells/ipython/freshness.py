"""Staleness in a live kernel: which rows' inputs now hold other values, whatever
changed them (a step, a plain cell, a parameter cell), kept cheap.

After each cell, `Watcher.after_cell` only compares identities: for every name a step
read, does the namespace still hold the object last seen? A name rebound or deleted
becomes pending, labelled with the cell (`In [23]`); its digest (the one the step key
uses, `key.input_digests`) is taken when someone asks (`causes()`), and if the value is
really another one it becomes a `staleness.Change`. Objects that can change without
being rebound (arrays, frames, lists, functions whose globals changed) are digested again
only on a deep look: `%step status`, `%step plan`, the sidebar opening or refreshing.

The answer is the staleness of the record plus these changes, so the sidebar's rows and
badges, `%step status` and `%step plan` say the same thing. It comes from a
`staleness.Ledger` built from the record at the first question and then told of each
execution and change as it comes: the sidebar asks after every execution, and reading
a loop's whole record each time would make every step cost its history.
"""

from __future__ import annotations

import logging
import sys
import time
import weakref
from collections.abc import Callable
from typing import Any

from ..engine.code import analysis
from ..errors import KeyComponentError
from ..hashing import key as step_key
from ..records import staleness
from .engine_slot import CellRan, cell_ran

log = logging.getLogger(__name__)

_MISSING = object()
_ATOMS = (int, float, complex, bool, str, bytes, type(None), range, type(sys))
_ATOM_BYTES = 1 << 20  # a bigger str or bytes is watched by id, not kept alive


class _Seen:
    """What the namespace held under a name, without keeping big values alive: a strong
    reference to a small immutable value, a weak reference where the type allows one,
    else the id (then the object might be another one at the same address: mutable
    anyway, so a deep look digests it)."""

    __slots__ = ("kind", "ref", "digest")
    kind: str
    ref: Any  # the atom, a weak reference, an id, or None
    digest: str | None

    def __init__(self, obj: Any, digest: str | None):
        self.digest = digest
        if obj is _MISSING:
            self.kind, self.ref = "missing", None
        elif isinstance(obj, _ATOMS) and sys.getsizeof(obj) < _ATOM_BYTES:
            self.kind, self.ref = "atom", obj
        else:
            try:
                self.kind, self.ref = "weak", weakref.ref(obj)
            except TypeError:
                self.kind, self.ref = "id", id(obj)

    def holds(self, obj: Any) -> bool:
        kind = self.kind
        if kind == "atom":
            return obj is self.ref
        if kind == "weak":
            return self.ref() is obj
        if kind == "id":
            return id(obj) == self.ref and obj is not _MISSING
        return obj is _MISSING

    @property
    def mutable(self) -> bool:
        return self.kind in ("weak", "id")


class Watcher:
    """One per engine: follows executions (engine listener) and cells (post_run_cell)."""

    def __init__(self, engine: Any):
        self.engine = engine
        self.seen: dict[str, _Seen] = {}
        self.watched: set[str] = set()
        self.pending: dict[str, CellRan] = {}
        self.changes: list[staleness.Change] = []
        # (the journal it was built from, the ledger): built at the first question
        self._built: tuple[Any, staleness.Ledger] | None = None
        self._known: dict[str, str] = {}  # digest a pending name had before it moved
        self.on_change: list[Callable[[], None]] = []  # the sidebar hub, to push rows
        self.run_id = engine.run.id
        # (not from `engine.record()`: a long record would be parsed before the first step)
        self.watched.update(engine.journal.input_names())

    # -- events -------------------------------------------------------------------------
    def on_execution(self, kind: str, payload: Any) -> None:
        if kind == "snapshot" and self.engine.run.id != self.run_id:  # a new run
            self.run_id = self.engine.run.id
            self.changes.clear()
            self.pending.clear()
            return
        if kind != "execution":
            return
        ledger = self._kept()
        if ledger is not None:
            # (this listener was added before the sidebar's: it answers with this one in)
            ledger.execution(payload)
        if payload.get("status") not in staleness.FINAL:
            return
        ns = self.engine.ns
        for value in payload.get("inputs") or []:
            name, digest = value["name"], value.get("digest")
            self.watched.add(name)
            if name in self.pending and digest:  # the step digested it: resolved for free
                self._resolve(name, digest)
            self.seen[name] = _Seen(ns.get(name, _MISSING), digest)
        for value in payload.get("outputs") or []:
            self.pending.pop(value["name"], None)  # the record has the step's binding
            self._known.pop(value["name"], None)
            self.seen[value["name"]] = _Seen(ns.get(value["name"], _MISSING), value.get("digest"))

    def on_read(self, name: str, digest: str) -> None:
        """A value a hit left unread was read: the name now holds the object the step
        bound (its digest the stored one), not a new value."""
        if name in self.seen:
            self.seen[name] = _Seen(self.engine.ns.get(name, _MISSING), digest)

    def after_cell(self, result: Any) -> None:
        """post_run_cell: identities only, a few microseconds for a few dozen names."""
        if not self.watched:
            return
        ns, seen = self.engine.ns, self.seen
        moved = []
        for name in self.watched:
            obj = ns.get(name, _MISSING)
            before = seen.get(name)
            if before is None and obj is _MISSING:
                continue
            if before is None or not before.holds(obj):
                moved.append((name, obj))
        if not moved:
            return
        pending = cell_ran(result)
        for name, obj in moved:
            previous = seen.get(name)
            if name not in self.pending and previous is not None and previous.digest:
                self._known[name] = previous.digest
            seen[name] = _Seen(obj, None)
            self.pending[name] = pending
        self.notify()

    def catch_up(self, cells: list[CellRan]) -> None:
        """The plain cells that ran before the engine started (at the first step or
        command), as `after_cell` would have seen them: each watched name the namespace
        holds is pending, labelled with the last of those cells that binds it, else the
        first (the one `after_cell` would have found it after); one that a cell deleted
        is pending with that cell."""
        if not cells or not self.watched:
            return
        last: dict[str, CellRan] = {}
        for cell in cells:  # oldest first: a later binding wins
            for name in _writes(self.engine, cell.source):
                last[name] = cell
        ns = self.engine.ns
        for name in sorted(self.watched):
            obj = ns.get(name, _MISSING)
            if obj is _MISSING and name not in last:
                continue
            self.seen[name] = _Seen(obj, None)
            self.pending[name] = last.get(name, cells[0])

    def notify(self) -> None:
        """Tell whoever shows staleness (the sidebar) that it may have changed."""
        for listener in list(self.on_change):
            try:
                listener()
            except Exception:  # a frontend that went away must never fail a cell
                log.debug("a staleness listener failed", exc_info=True)

    # -- answers ------------------------------------------------------------------------
    def causes(self, deep: bool = False) -> dict[staleness.RowKey, str]:
        for name in list(self.pending):
            self._resolve(name, None)
        if deep:
            self._look_deep()
        return self._ledger().causes()

    def rows(self, deep: bool = False) -> list[dict]:
        stale = self.causes(deep)
        return self._ledger().rows(stale)

    # -- internals ----------------------------------------------------------------------
    def _kept(self) -> staleness.Ledger | None:
        """The ledger, when it was built from the engine's journal now: a new run (`%step
        run --new`) or another store (`%step config --dir`) has a record of its own."""
        built = self._built
        return built[1] if built is not None and built[0] is self.engine.journal else None

    def _ledger(self) -> staleness.Ledger:
        ledger = self._kept()
        if ledger is None:
            ledger = staleness.Ledger(self.engine.record(), self.changes, self.engine.session)
            self._built = (self.engine.journal, ledger)
        return ledger

    def _changed(self, change: staleness.Change) -> None:
        self.changes.append(change)
        ledger = self._kept()
        if ledger is not None:
            ledger.change(change)

    def _resolve(self, name: str, digest: str | None) -> None:
        """Turn a pending rebinding into a Change when the value really differs."""
        pending = self.pending.pop(name)
        obj = self.engine.ns.get(name, _MISSING)
        how = "deleted" if obj is _MISSING else "changed"
        if digest is None and obj is not _MISSING:
            digest = self._digest(name)
        self.seen[name] = _Seen(obj, digest)
        before = self._known.pop(name, None)
        if digest is not None and digest == before:
            return  # rebound to an equal value (`ridge = 1.0` run again)
        self._changed(
            staleness.Change(
                name, digest, pending.time, pending.where, _reads(self.engine, pending.source), how
            )
        )

    def _look_deep(self) -> None:
        ns = self.engine.ns
        for name in sorted(self.watched):
            seen = self.seen.get(name)
            obj = ns.get(name, _MISSING)
            if seen is None or not seen.mutable or not seen.holds(obj) or seen.digest is None:
                continue
            digest = self._digest(name)
            if digest != seen.digest:
                seen.digest = digest
                self._changed(staleness.Change(name, digest, time.time(), how="changed in place"))

    def _digest(self, name: str) -> str | None:
        try:
            pending = self.engine.pending
            known = pending.known() if pending else None
            digests, _, _ = step_key.input_digests(self.engine.ns, [name], known)
        except (KeyComponentError, RecursionError) as err:
            log.debug("%s cannot be hashed for staleness (%s)", name, err)
            return None
        return digests[name]


def _reads(engine: Any, source: str) -> frozenset[str]:
    """The names a plain cell read: a change it made from them continues them."""
    info = _analysis(engine, source)
    return frozenset(info.reads) if info is not None else frozenset()


def _writes(engine: Any, source: str) -> frozenset[str]:
    """The names a plain cell bound or deleted."""
    info = _analysis(engine, source)
    return frozenset(info.binds + info.deletes) if info is not None else frozenset()


def _analysis(engine: Any, source: str) -> analysis.CellInfo | None:
    if not source:
        return None
    try:
        return analysis.analyse(engine.transform(source))
    except SyntaxError:  # the cell failed to run anyway: it read and bound nothing
        log.debug("a plain cell does not parse; its names are unknown", exc_info=True)
        return None


def attach(engine: Any, cells_before: list[CellRan] | None = None) -> Watcher:
    """Watch from now on; `cells_before`: the plain cells that ran since the extension
    was loaded, before the engine started."""
    watcher = Watcher(engine)
    watcher.catch_up(cells_before or [])
    engine.listeners.append(watcher.on_execution)
    engine.shell.events.register("post_run_cell", watcher.after_cell)
    engine.pending.on_read.append(watcher.on_read)
    engine.freshness = watcher
    return watcher


def detach(engine: Any) -> None:
    watcher = getattr(engine, "freshness", None)
    if watcher is None:
        return
    if watcher.on_read in engine.pending.on_read:
        engine.pending.on_read.remove(watcher.on_read)
    try:
        engine.shell.events.unregister("post_run_cell", watcher.after_cell)
    except ValueError:  # not registered: nothing to undo
        log.debug("the staleness watcher was not registered", exc_info=True)
    engine.freshness = None
