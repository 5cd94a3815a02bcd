"""Applying a loaded entry: the namespace, the process and the frontend left as the
live run left them.

Objects are restored in place and the unit's names bound (`units/stream.py`), then the
values stored alone bound (or given in place), the deleted names deleted, the process
state set again (`state/process_state.py`) and the outputs replayed in order, with the
figures after the cell, as the inline backend shows them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from ...display import capture, figures
from ...display import result as shown_result
from ...storage.entries import Entry
from ..objects import inplace
from ..state import process_state, warned
from ..units import result_refs, stream
from .load import Loaded
from .pending import Pending

log = logging.getLogger(__name__)


def apply(
    entry: Entry,
    loaded: Loaded,
    ns: dict[str, Any],
    shell: Any,
    warn: Callable[[str], None] = print,
    pending: Pending | None = None,
    key: str = "",
) -> tuple[Any, bool]:
    """Restore objects in place and bind the values (those `load` left unread become
    `pending` names: not in `ns` until something reads them), delete the names the run
    deleted, set the process state it changed (`warn` says what could not be), replay
    the outputs. Returns (the result to display, whether a stream was written); the
    displayhook shows the result as the live run showed it. `key`: the entry's."""
    outputs = loaded.outputs
    if "warned" in entry.params:  # without those the filters in effect ignore, as they
        # are before the step's own process state is set again (as a live run finds them)
        outputs = warned.replayed(outputs, warned.decode(entry.params))
    if loaded.unit is not None:
        stream.apply(loaded.unit, ns)
    if entry.inline_backend:  # restored figures show as images, as they did
        figures.activate(shell)
    for b in entry.stored_bindings():
        if b.inplace:
            inplace.restore(ns[b.name], loaded.values[b.name])
        elif b.name in loaded.values:
            ns[b.name] = loaded.values[b.name]
        elif pending is not None:  # left unread: the name holds nothing until read
            ns.pop(b.name, None)
            pending.defer(b, entry.step, key)
            continue
        if pending is not None:
            pending.drop(b.name)
    if pending is not None:
        left = _left_alone(loaded)
        for b in entry.bindings:
            if b.unit and b.name not in left:
                pending.drop(b.name)
    for n in entry.deleted:
        ns.pop(n, None)
        if pending is not None:
            pending.drop(n)
    with capture.unshown("a hit set the process state again"):  # (the replay shows it)
        problems = process_state.apply(loaded.state)
    for problem in problems:
        warn(problem)
    capture.replay(shell, outputs)
    figures.show_after_cell(shell, outputs)
    wrote = any(o[0] == "stream" for o in outputs)
    if entry.result is None:
        return None, wrote
    value = loaded.result
    if loaded.result_later is not None:
        value = _referring(loaded.result_later, ns, pending, warn)
    if entry.result.bundle:
        return Replayed(value), wrote
    if loaded.shown is not None and value is not None:
        shown_result.show_as(shell, value, loaded.shown)
    return value, wrote


def _left_alone(loaded: Loaded) -> set[str]:
    """The names the unit left alone: bound live only as holders of an object it
    replaces, which they no longer hold here (`stream.unalias`)."""
    if loaded.unit is None:
        return set()
    return set(loaded.unit.get("aliases", {})).difference(loaded.unit["bind"])


def _referring(
    read: Callable[[Callable[[Any], Any]], Any],
    ns: dict[str, Any],
    pending: Pending | None,
    warn: Callable[[str], None],
) -> Any:
    """The result, its references to the names' objects resolved now that they are
    bound (`units/result_refs.py`); None, said, where one leads nowhere (the entry was
    built only once each led to its object: a namespace the hit did not set as the live
    run left it)."""

    def materialise(names: list[str]) -> None:
        if pending is not None:
            pending.materialise(names, ns)

    try:
        return read(result_refs.resolver(ns, materialise))
    except Exception as err:
        log.debug("a served result's references did not resolve", exc_info=True)
        warn(f"its result is not where the live run left it ({err}): `_` is None")
        return None


class Replayed:
    """The display of a result that could not be stored as a value."""

    def __init__(self, bundle: dict[str, Any]):
        self._bundle = bundle

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return self._bundle
