"""Objects a hit replaces: nothing else may hold them or their parts.

A hit gives most objects their new state in place (`inplace`), so that every holder
sees it. Some it replaces by a new object instead: one whose class pickles it through
its constructor (a plotly figure, rebuilt from its dict: every part of it is new), one
that cannot be restored in place, and the changed inputs an entry keeps whole
(`byvalue.py`). Whatever else holds the old object or one of its parts then keeps the
old one, where live it saw the change: a silent difference. So before such a hit is
applied, each replaced object's graph is walked in the serving kernel and every
reference to it and its parts is accounted for: the parts' own references, the
entry's objects restored in place (about to be overwritten), the namespace's bindings
of names the entry binds again, IPython's history (`Out`, `_`) and the caller's own
dicts. The references are counted (`sys.getrefcount`), not searched, so that a holder
the garbage collector does not see (a C object, a running frame) counts as well. Any
other holder keeps the hit a miss, and the message names it when it is a name.
Parts the entry's new values hold too (a library's shared objects, which its pickling
finds again) stay, and are left out.
"""

from __future__ import annotations

import gc
import sys
import weakref
from collections import Counter
from itertools import compress
from typing import Any

from ...errors import Unfaithful
from ..objects import objgraph, user_names
from ..objects.objgraph import RootKind
from .layout import Payload

WALK_LIMIT = 2_000_000  # objects walked per replaced object
_OWN = 2  # `sys.getrefcount`'s argument and the loop's variable


def check(
    old_objects: dict[str, Any],
    payload: Payload,
    ns: dict[str, Any],
    hidden: dict[str, Any],
    ours: tuple[dict[str, Any], ...],
) -> None:
    """Raise Unfaithful unless nothing but the accounted holders (see the module
    docstring) holds an object of `old_objects` (label -> object) or a part of one.
    `payload` is what the hit binds (`bind`) and restores in place (`inplace`, of which
    `rooted` are the values of names); `ours` are the caller's containers of them."""
    if not old_objects:
        return
    kept = _kept(payload, ns)
    targets = [pair[0] for pair in payload["inplace"]]
    places = [ns, *ours, *(v for v in hidden.values() if isinstance(v, dict))]
    for label in list(old_objects):  # (an items() iterator would hold its last pair)
        _check_one(label, old_objects, ns, hidden, kept, (targets, places, payload))


def _kept(payload: Payload, ns: dict[str, Any]) -> set[int]:
    """The objects the kernel's names hold after the hit: the new values, the names'
    objects restored in place, and what their new states hold, in turn."""
    fresh = {id(t): state for t, state in payload["inplace"]}
    graph = objgraph.Graph(ns, WALK_LIMIT)
    graph.weak = False
    graph.classes = False  # (a class is restored in place, never replaced: not a part)
    graph.add(objgraph.root(RootKind.HELD, "bind"), list(payload["bind"].values()))
    graph.add(
        objgraph.root(RootKind.HELD, "rooted"),
        [payload["inplace"][i][1] for i in payload.get("rooted", ())],
    )
    done: set[int] = set()
    while True:
        todo = [o for o in graph.nodes if o in fresh and o not in done]
        if not todo:
            return set(graph.nodes)
        done.update(todo)
        graph.add(objgraph.root(RootKind.HELD, "states"), [fresh[o] for o in todo])


def _check_one(
    label: str,
    old_objects: dict[str, Any],
    ns: dict[str, Any],
    hidden: dict[str, Any],
    kept: set[int],
    known: tuple[list[Any], list[dict[str, Any]], Payload],
) -> None:
    targets, places, payload = known
    graph = objgraph.Graph(ns, WALK_LIMIT)
    graph.weak = False  # a weak reference does not hold its referent
    graph.classes = False
    graph.add(label, old_objects[label])  # (not a variable here: one more reference)
    if graph.truncated:
        raise Unfaithful(label, f"it holds more than {WALK_LIMIT:,} objects to check")
    parts = [o for o, entry in graph.nodes.items() if o not in kept and _counted(entry[0])]
    _check_names(label, set(parts), ns, hidden, payload["bind"])
    # `targets` twice: the list, and the payload's (target, state) pairs
    holders = [*places, targets, targets, old_objects]
    held = _held(graph, parts, holders, targets)
    if held is not None:
        gc.collect()  # garbage not yet collected (a library's cycles) may be what holds it
        held = _held(graph, parts, holders, targets)
    if held is not None:
        holder = _holder_name(set(parts), ns, hidden, payload["bind"])
        if holder is not None:
            name, part = holder
            what = "it" if part is old_objects[label] else f"a {type(part).__name__} of it"
            raise Unfaithful(
                label,
                f"{name} holds {what}, and a hit gives it a new one",
                f"read {name} in the step too, or mark the step `--effect`",
            )
        raise Unfaithful(
            label,
            f"something outside it holds a {held} of it, and a hit gives it a new one",
            "mark the step `--effect`",
        )


def _check_names(
    label: str, parts: set[int], ns: dict[str, Any], hidden: dict[str, Any], bound: dict[str, Any]
) -> None:
    for other in list(compress(ns, map(parts.__contains__, map(id, ns.values())))):
        value = ns[other]  # (one of the few names holding a part: chosen at C speed)
        if other not in bound and user_names.is_users(other, value, hidden):
            raise Unfaithful(
                label,
                f"{other} holds a part of it, and a hit gives it a new one",
                f"read {other} in the step too, or mark the step `--effect`",
            )


def _holder_name(
    parts: set[int], ns: dict[str, Any], hidden: dict[str, Any], bound: dict[str, Any]
) -> tuple[str, Any] | None:
    """(a user's name, other than those the hit binds again and than the parts' own,
    whose value holds a part itself, as an item or an attribute; the part): what the
    refusal names. Looked for only once a hit is refused, one level deep."""
    for name, value in ns.items():
        if name in bound or id(value) in parts or not user_names.is_users(name, value, hidden):
            continue
        for holder in (value, _attributes(value)):
            for r in gc.get_referents(holder) if holder is not None else ():
                if id(r) in parts:
                    return name, r
    return None


def _held(
    graph: objgraph.Graph, parts: list[int], places: list[Any], targets: list[Any]
) -> str | None:
    """The type of a part something unaccounted for holds, or None."""
    explained = _inner_references(graph, set(parts), targets)
    for d in places:  # (no loop variable: it would hold the last value)
        explained.update(map(id, dict.values(d) if isinstance(d, dict) else d))
    for oid in parts:
        obj = graph.nodes[oid][0]
        if sys.getrefcount(obj) - _OWN - explained[oid] > 0:
            return type(obj).__name__
    return None


def _counted(obj: Any) -> bool:
    """The empty tuple is shared by everything, and a weak reference by all who made
    one to its referent without a callback (and it cannot change)."""
    return not ((type(obj) is tuple and not obj) or type(obj) is weakref.ReferenceType)


def _inner_references(graph: objgraph.Graph, parts: set[int], targets: list[Any]) -> Counter[int]:
    """References to each part held by the graph's objects (their attribute dicts and
    arrays' bases too), by the objects restored in place and by the walk's records."""
    counts: Counter[int] = Counter()
    counts.update(id(entry[0]) for entry in graph.nodes.values())  # the walk's records
    for entry in graph.nodes.values():
        _count_from(entry[0], parts, counts)
    for target in targets:
        _count_from(target, parts, counts)
    counts.update(map(id, graph.owner_obj.values()))
    return counts


def _count_from(obj: Any, parts: set[int], counts: Counter[int]) -> None:
    for holder in (obj, _attributes(obj)):
        if holder is not None:
            counts.update(id(r) for r in gc.get_referents(holder) if id(r) in parts)
    if objgraph.kind_of(type(obj)) == objgraph.ARRAY and id(obj.base) in parts:
        counts[id(obj.base)] += 1  # (arrays are not seen by the garbage collector)


def _attributes(obj: Any) -> dict[str, Any] | None:
    try:
        attrs: dict[str, Any] | None = (
            object.__getattribute__(obj, "__dict__") if type(obj).__dictoffset__ else None
        )
        return attrs
    except AttributeError:
        return None
