"""The changed inputs of a unit stored whole: a second way to serve its entry.

A unit refers to the objects inside a changed input by their paths (`stream.py`), and
gives them their new state in place. Some libraries pickle a value so that it comes
back laid out otherwise than it was (plotly rebuilds a figure from its dict, without
the parts that were empty): in a kernel whose input came from a hit, those paths lead
nowhere and the entry could not be served. Beside such a unit the entry keeps the same
values with the changed inputs whole, by value, as the library pickles them; when the
unit's paths fail on a hit, each of those names is bound to its stored value instead.

That is faithful only when nothing else in the kernel holds the object the name held or
any part of it: they would keep the old one, where live they saw the change. The
objects are checked as any object a hit replaces (`replaced.py`): any other holder keeps
the hit a miss. Kept whole up to `MAX_BYTES`; above that, such a unit is a miss.
"""

from __future__ import annotations

import logging
from typing import Any

from ...errors import Unstorable
from ...storage.deferred import Batch
from ...storage.entries import Stream
from ...storage.store import Store
from ..objects import inplace, objgraph
from . import replaced, stream
from .layout import Payload, StoragePlan

log = logging.getLogger(__name__)
MAX_BYTES = 64 << 20  # a unit's changed inputs kept whole up to this size


def needed(plan: StoragePlan, ref: Stream) -> list[str]:
    """The changed inputs that the unit `ref` refers inside of (a name, not an
    attribute chain) and whose inner layout a library's pickling may change: they hold
    an object pickled through its constructor (a plotly figure), not by its state. An
    estimator or a frame comes back laid out as it was, and is not kept twice."""
    inner = set(ref.inner)
    names = {r for r in plan.changed_roots if r in inner and r.isidentifier()}
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


def put(
    plan: StoragePlan, store: Store, names: list[str], later: Batch | None = None
) -> Stream | None:
    """Store the unit's values with `names` whole; None when they are too large to keep
    twice or cannot be stored (the unit alone then serves, where it can). `later`: see
    `stream.put_stream`."""
    graph = _without(plan.graphs()[0], set(names))
    values = {n: plan.changed_roots[n] for n in names}  # (a name rebound binds its new value)
    payload: Payload = {
        "bind": {**values, **plan.unit_bind},
        "inplace": [],
        "modules": plan.modules,
    }
    writer = stream.Writer(plan, graph, fallbacks=0)
    try:
        main, buffers, roots, _ = stream.dump_payload(payload, writer, "shared values")
    except Unstorable:
        log.debug("the changed inputs %s cannot be kept whole", names, exc_info=True)
        return None
    if len(main) + sum(b.raw().nbytes for b in buffers) > MAX_BYTES:
        return None
    return stream.put_stream(store, main, buffers, roots, names=names, later=later)


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
) -> Payload:
    """The payload that binds the changed inputs to their stored values. Raises
    Unfaithful when anything else holds a part of what they hold now (but `ours`, the
    caller's dicts of them)."""
    refs, targets = roots
    payload = stream.load(ref, store, refs)
    replaced.check(targets, payload, ns, hidden, (refs, *ours))
    return payload


def _without(graph: objgraph.Graph, names: set[str]) -> objgraph.Graph:
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
