"""The changed inputs of a unit stored whole: a second way to serve its entry.

A unit refers to the objects inside a changed input by their paths (`stream.py`), and
gives them their new state in place. Some libraries pickle a value so that it comes
back laid out otherwise than it was (plotly rebuilds a figure from its dict, without
the parts that were empty): in a kernel whose input came from a hit, those paths lead
nowhere and the entry could not be served. Beside such a unit the entry keeps the same
values with the changed inputs whole, by value, as the library pickles them; when the
unit's paths fail on a hit, each of those names is bound to its stored value instead.

What the step changed in its other inputs the copy gives them in place, as the unit
does; it is written and loaded back, and checked as the unit is (`keep/unit_check.py:
put_whole`). Binding the names anew is faithful only when nothing else in the kernel
holds the object a name held or any part of it: they would keep the old one, where live
they saw the change. The objects are checked as any object a hit replaces
(`replaced.py`): any other holder keeps the hit a miss. Kept whole up to `MAX_BYTES`;
above that, such a unit is a miss.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from ...storage.entries import Stream
from ...storage.store import Store
from ..objects import inplace, objgraph
from . import replaced, stream
from .layout import Handed, Payload, StoragePlan

log = logging.getLogger(__name__)
MAX_BYTES = 64 << 20  # a unit's changed inputs kept whole up to this size


def needed(plan: StoragePlan, ref: Stream) -> list[str]:
    """The changed inputs that the unit `ref` refers inside of (a name, not an
    attribute chain) and whose inner layout a library's pickling may change: they hold
    an object pickled through its constructor (a plotly figure), not by its state. An
    estimator or a frame comes back laid out as it was, and is not kept twice."""
    inner = set(ref.inner)
    names = {
        r
        for r, obj in plan.changed_roots.items()
        if r in inner and r.isidentifier() and not isinstance(obj, type)  # (in place)
    }
    if not names:
        return []
    graph = plan.graphs()[0]  # a plan with a unit: made by the sharing analysis
    rebuilt = {
        graph.root[o]
        for o, (obj, _, _) in graph.nodes.items()
        if graph.root[o] in names and _rebuilt(obj)
    }
    return sorted(rebuilt)


def _rebuilt(obj: object) -> bool:
    kind = objgraph.kind_of(type(obj))
    return kind in (objgraph.OBJ, objgraph.FRAME) and not inplace.by_state(type(obj))


def inplace_of(plan: StoragePlan, whole: frozenset[str] = frozenset()) -> list[Any]:
    """The objects the unit gives a state in place, in its order, but those of the
    changed inputs `whole` (which the by-value copy binds to their stored values)."""
    if not whole:
        return plan.unit_inplace
    graph = plan.graphs()[0]  # a plan with a unit: made by the sharing analysis
    return [o for o in plan.unit_inplace if graph.root[id(o)] not in whole]


def payload_of(
    plan: StoragePlan, whole: frozenset[str], raw: bool = False, handed: list[Handed] | None = None
) -> Payload:
    """The by-value copy's payload: the unit's, with the changed inputs `whole` bound to
    their values (a name the step rebound, to its new value) rather than given their
    states in place; what the step changed in its other inputs is given in place as by
    the unit (`stream.payload_of` says what each key holds)."""
    values = {n: plan.changed_roots[n] for n in sorted(whole)}
    inplace = inplace_of(plan, whole)
    graph = plan.graphs()[0]
    return {
        "bind": {**values, **plan.unit_bind},
        "inplace": [(obj, stream.StateOf(obj, raw)) for obj in inplace],
        "raw": raw,
        "rooted": [i for i, o in enumerate(inplace) if graph.nodes[id(o)][1] is None],
        "modules": plan.modules,
        "orphans": stream.orphans(plan, whole),
        "handed": list(handed or []),
        "aliases": dict(plan.aliases),
    }


def writer(plan: StoragePlan, whole: frozenset[str]) -> stream.Writer:
    """The writer of the by-value copy: the objects first reached from `whole` are held
    by value, not by reference, and no reference carries a fallback."""
    return stream.Writer(plan, _without(plan.graphs()[0], whole), fallbacks=0)


# (the values a by-value stream's references start from, the objects its names hold now)
Roots = tuple[dict[str, Any], dict[str, Any]]


def roots_of(ref: Stream, ns: dict[str, Any]) -> Roots:
    """(the values the stream's references start from, the objects its names hold now):
    taken before anything is bound."""
    targets = {n: ns[n] for n in ref.names if n in ns}
    return stream.roots_of(ref, ns), targets


def load(
    ref: Stream,
    store: Store,
    roots: Roots,
    ns: dict[str, Any],
    hidden: dict[str, Any],
    ours: tuple[dict[str, Any], ...] = (),
    was: Mapping[str, Any] | None = None,
) -> Payload:
    """The payload that binds the changed inputs to their stored values. Raises
    Unfaithful when anything else holds a part of what they hold now (but `ours`, the
    caller's dicts of them). `was`: the namespace before the hit bound anything (`ns`
    when nothing was)."""
    refs, targets = roots
    payload = stream.load(ref, store, refs)
    before = ns if was is None else was
    stream.unalias(payload, refs, before)
    old = {**stream.replaced_by(payload, refs, before), **targets}
    replaced.check(old, payload, ns, hidden, (refs, targets, *ours))
    return payload


def _without(graph: objgraph.Graph, names: frozenset[str]) -> objgraph.Graph:
    """`graph` without the objects first reached from `names`: the stream holds them by
    value, not by reference."""
    out = objgraph.Graph(graph.main_ns, graph.limit)
    out.nodes = {o: v for o, v in graph.nodes.items() if graph.root[o] not in names}
    out.root = {o: graph.root[o] for o in out.nodes}
    for owner, arrays in graph.owners.items():
        kept = [a for a in arrays if a in out.nodes]
        if kept:
            out.owners[owner] = kept
    return out
