"""Loading an entry for a hit: every value it restores, read and checked before
anything in the namespace changes.

Values stored alone are read by digest (classes and functions first, bound as they
load: instances in later values refer to them by name). The unit is loaded with its
references resolved in this kernel (`units/stream.py`), and nothing else may hold what
it replaces (`units/replaced.py`); where that fails and the entry has its changed
inputs whole, those are loaded instead (`units/byvalue.py`). An object of the inputs that
a class's own code was handed while the unit was built must be as the live run left it
(`check_payload`). Every object to be given its state in place is asked first whether it
can take it (`objects/inplace.py`). A
failure raises Unfaithful (the hit becomes a miss, and nothing was changed), or what a
damaged or missing blob raises. A result that refers to the names' objects is read
once they are bound (`apply.py`): it sits in the entry itself, so no blob can fail then.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Callable
from functools import partial
from typing import Any

import msgspec

from ...display.result import Bundle
from ...errors import Unfaithful, Unhashable
from ...hashing.values import Hasher
from ...storage.entries import Entry, Unit
from ...storage.store import Store
from ..objects import inplace
from ..units import byvalue, replaced, stream
from ..units.layout import Payload
from .pending import Pending


class Loaded(msgspec.Struct):
    """An entry's values, read and checked, ready to be applied (`apply.py`)."""

    values: dict[str, Any]  # the values stored alone, by name
    unit: Payload | None  # the unit's payload (`units/stream.py`)
    state: list[Any] = msgspec.field(default_factory=list)  # the process state to set again
    outputs: list[Any] = msgspec.field(default_factory=list)
    result: Any = None
    shown: Bundle | None = None  # the result's MIME bundle as the run showed it
    # the result, given the `persistent_load` of its references to the names' objects
    # (`units/result_refs.py`): read once `apply` has bound them
    result_later: Callable[[Callable[[Any], Any]], Any] | None = None


def load(
    entry: Entry,
    store: Store,
    ns: dict[str, Any],
    hidden: dict[str, Any] | None = None,
    pending: Pending | None = None,
    history: tuple[dict[str, Any], ...] = (),
) -> Loaded:
    """The entry's values, but those it may leave unread (`Binding.lazy`) when `pending`
    is given: `apply` defers them. Classes and functions are bound into `ns` as they
    load. Raises Unfaithful when an object the entry refers to is not where it was, or
    cannot take its stored state in place (nothing else is changed then), NotRestored
    when a value not read yet that it refers to cannot be read, and whatever a damaged
    or missing blob raises."""
    unit = entry.unit
    if pending:  # the objects it refers to or changes in place, read first
        pending.materialise(referred(entry), ns)
    roots = stream.roots_of(unit.stream, ns) if unit else {}  # before anything is bound
    kept_roots = byvalue.roots_of(unit.byvalue, ns) if unit and unit.byvalue else None
    values = {}
    before: dict[str, Any] = {}  # what the callables bound below were bound to
    stored = [b for b in entry.stored_bindings() if pending is None or b.lazy is None]
    for b in sorted(stored, key=lambda b: not b.callable):
        assert b.value is not None  # `stored_bindings` are those with a value
        values[b.name] = store.get_value(b.value)
        if b.callable:
            if b.name in ns:
                before.setdefault(b.name, ns[b.name])
            ns[b.name] = values[b.name]
    starts = (roots, before)
    payload = _unit(unit, store, starts, ns, hidden or {}, kept_roots, history) if unit else None
    loaded = Loaded(values, payload)
    _check_inplace(entry, loaded, ns)
    if entry.state is not None:
        loaded.state = store.get_value(entry.state)
    loaded.outputs = store.get_value(entry.outputs)
    if entry.result is not None:
        if entry.result.refs:
            loaded.result_later = partial(store.get_value, entry.result.value)
        else:
            loaded.result = store.get_value(entry.result.value)
        if entry.result.shown is not None:
            data, metadata = store.get_value(entry.result.shown)
            loaded.shown = (data, metadata)
    return loaded


def referred(entry: Entry) -> list[str]:
    """The names whose objects an entry's hit refers to or changes in place: the unit's
    roots, the inputs it gives a state."""
    names = [b.name for b in entry.bindings if b.inplace or b.seen]
    if entry.unit is not None:
        names += entry.unit.stream.roots
        if entry.unit.byvalue is not None:
            names += entry.unit.byvalue.roots
    return names


def _unit(
    unit: Unit,
    store: Store,
    starts: tuple[dict[str, Any], dict[str, Any]],
    ns: dict[str, Any],
    hidden: dict[str, Any],
    kept_roots: byvalue.Roots | None,
    history: tuple[dict[str, Any], ...],
) -> Payload:
    """The unit's payload, checked (`check_payload`); where its references lead nowhere,
    what it replaces is held elsewhere or it cannot be given, the one with its changed
    inputs whole, when the entry has one and nothing else holds them. `starts`: the
    values its references start from, and what the callables bound so far replaced."""
    roots, before = starts
    was = ChainMap(before, ns)  # the namespace before the hit, for what the unit replaces
    payload: Payload | None = None  # (let go of below, once it failed)
    # (the copy's lookups hold the inputs too, and `before` what the callables replaced)
    # IPython's own holders of what it showed keep it (`history`): an accounted holder
    ours = (roots, before, *history, *(kept_roots or ()))
    try:
        payload = stream.load(unit.stream, store, roots)
        stream.unalias(payload, roots, was)
        replaced.check(stream.replaced_by(payload, roots, was), payload, ns, hidden, ours)
        check_payload(payload, ns)
        return payload
    except Unfaithful as err:
        if kept_roots is None or unit.byvalue is None:
            raise
        failed = Unfaithful(err.name, err.why, err.way_out)  # (without the traceback,
        # whose frames hold the failed load's objects: they would count as holders)
    payload = None  # (what it held, to be collected)
    try:  # outside the handler: the failed load's frames are garbage by now
        payload = byvalue.load(
            unit.byvalue, store, kept_roots, ns, hidden, (roots, before, *history), was
        )
        check_payload(payload, ns)
        return payload
    except Unfaithful as err:
        why = f"{failed.why}; nor whole, as {err.name} is not alone: {err.why}"
        raise Unfaithful(failed.name, why, err.way_out) from None


def check_payload(payload: Payload, ns: dict[str, Any]) -> None:
    """Raise Unfaithful unless every object the payload gives a state in place can take
    it, and each one a class's own code was handed while the payload was built
    (`keep/own_code.py`) is here as the live run left it: the step did not change it,
    so that code saw what it saw live, though the object gets its state only after."""
    _problems(payload["inplace"])
    for index, digest, name, why in payload.get("handed", ()):
        target = payload["inplace"][index][0]
        try:
            now: str | None = Hasher(ns).value_digest(target, name)
        except Unhashable:
            now = None
        if now != digest:
            raise Unfaithful(name, why)


def _check_inplace(entry: Entry, loaded: Loaded, ns: dict[str, Any]) -> None:
    """The values stored alone and given in place (the unit's: `check_payload`)."""
    _problems([(ns.get(b.name), loaded.values[b.name]) for b in entry.bindings if b.inplace])


def _problems(pairs: list[tuple[Any, Any]]) -> None:
    for target, fresh in pairs:
        problem = inplace.problem(target, fresh)
        if problem:
            raise Unfaithful(type(target).__name__, problem)
