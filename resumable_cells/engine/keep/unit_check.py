"""A unit is loaded back when it is written: the sharing its values had live must
survive its pickling.

One stream keeps one object one object through pickle's memo, as long as every class
in it is rebuilt from the objects its state holds. A class's own pickling may build
parts anew instead: astropy's Table makes copies of its columns in `__setstate__`, so
`c = t['a']`, stored in one unit with `t`, came back as another column than `t['a']`,
silently. So the stream is loaded back as soon as it is made, its references resolved
to the live objects they stand for (its buffers read-only, never copied), and every
object the live values reach along more than one path (`objgraph.Graph.paths`) must be
one object along all of them in the copy, where an object the hit restores in place is
read through the state it is given. A difference keeps the step from being cached,
with a message naming the paths.
"""

from __future__ import annotations

import logging
import pickle
from collections.abc import Callable, Sequence
from typing import Any

from ...errors import Unfaithful, Unhashable, Unstorable
from ...hashing.values import Hasher
from ...storage import serialize
from ...storage.deferred import Batch
from ...storage.entries import Stream
from ...storage.store import Store
from ..objects import inplace, objgraph
from ..objects.objgraph import RootKind
from ..state import module_attrs
from ..units import byvalue, stream
from ..units.layout import Handed, Payload, StoragePlan
from . import own_code, value_check

log = logging.getLogger(__name__)
DigestOf = Callable[[str], str]  # a bound name's live digest (`keep/changes.Digests.of`)
_NOWHERE = object()


def put(
    plan: StoragePlan,
    store: Store,
    digest_of: DigestOf | None = None,
    later: Batch | None = None,
) -> Stream:
    """Store the unit (as `stream.put_stream`, `later` too), after checking that its
    copy keeps the sharing of the live values and that the values it binds come back as
    they were (`digest_of(name)`: the digest a bound name's live value has, when the
    caller has it already); where the sharing is not kept and the objects it restores in
    place include some whose class has a pickled state of its own, with their raw states
    instead (`inplace.raw_state`). Refused too where a class's own code would build an
    object from one the hit changes only after (`own_code`). Raises Unfaithful or
    Unstorable."""
    main, buffers, roots, inner = _checked(plan, frozenset(), digest_of)
    return stream.put_stream(store, main, buffers, roots, inner=sorted(inner), later=later)


def put_whole(
    plan: StoragePlan,
    store: Store,
    names: list[str],
    digest_of: DigestOf | None = None,
    later: Batch | None = None,
) -> Stream | None:
    """Store the unit's by-value copy with the changed inputs `names` whole
    (`units/byvalue.py`), checked as the unit is: loaded back, the sharing of the live
    values kept, its values as they were, the states it gives the other changed inputs
    with it. None when it cannot be kept so, or is larger than `byvalue.MAX_BYTES` (the
    unit alone then serves, where it can)."""
    try:
        main, buffers, roots, _ = _checked(plan, frozenset(names), digest_of)
    except (Unfaithful, Unstorable):
        log.debug("the changed inputs %s cannot be kept whole", names, exc_info=True)
        return None
    if len(main) + sum(b.raw().nbytes for b in buffers) > byvalue.MAX_BYTES:
        return None
    return stream.put_stream(store, main, buffers, roots, names=names, later=later)


Dumped = tuple[bytes, list[pickle.PickleBuffer], list[str], set[str]]  # `stream.dump_payload`


def _checked(plan: StoragePlan, whole: frozenset[str], digest_of: DigestOf | None) -> Dumped:
    """The unit's stream (or its by-value copy's, with the changed inputs `whole`),
    checked (`check`); written again with raw states where the first fails and may be
    kept so. Raises Unfaithful or Unstorable."""
    handed = own_code.handed(plan, whole)
    try:
        return _dumped(plan, whole, False, handed, digest_of)
    except Unfaithful:
        if not any(inplace.raw_state(type(o)) for o in byvalue.inplace_of(plan, whole)):
            raise
        log.debug("the unit is written again with raw states", exc_info=True)
    return _dumped(plan, whole, True, handed, digest_of)


def _dumped(
    plan: StoragePlan,
    whole: frozenset[str],
    raw: bool,
    handed: list[Handed],
    digest_of: DigestOf | None,
) -> Dumped:
    if whole:
        writer = byvalue.writer(plan, whole)
        payload = byvalue.payload_of(plan, whole, raw, handed)
    else:
        writer = stream.Writer(plan)
        payload = stream.payload_of(plan, raw, handed)
    dumped = stream.dump_payload(payload, writer, "shared values")
    check(plan, writer, dumped[0], dumped[1], digest_of, whole)
    return dumped


def check(
    plan: StoragePlan,
    writer: stream.Writer,
    main: bytes,
    buffers: list[pickle.PickleBuffer],
    digest_of: DigestOf | None = None,
    whole: frozenset[str] = frozenset(),
) -> None:
    """Raise Unfaithful when the copy of the stream `writer` made does not reach one
    object along every path along which the live values reach one, or when an object
    the hit keeps (restored in place, or referred to) is not itself at its place in
    the copy (a `__setstate__` that copies: the holder would get a copy of it).
    `whole`: the changed inputs the stream binds whole (a by-value copy)."""
    copy = _load(writer, main, buffers)
    anew = plan.replaced | {id(plan.changed_roots[n]) for n in whole}
    if not copy.get("raw", False):
        _bound_digest_as_live(plan, copy, digest_of, whole)
    roots = _roots(plan, copy, anew, whole)
    fresh = {id(target): state for target, state in copy["inplace"]}
    found = _kept(plan, roots, fresh, anew)
    post = plan.graphs()[1]  # a plan with a unit: made by the sharing analysis
    for oid, holders in post.parents.items():
        seen = [(post.path(oid), found[oid])]
        for parent, s in holders:
            path = (s[1],) if parent is None else (*post.path(parent), s)
            seen.append((path, roots[s[1]] if parent is None else _step(found[parent], s, fresh)))
        seen = [(p, f) for p, f in seen if f is not _NOWHERE]
        if len({id(f) for _, f in seen}) > 1:
            _refuse(post.nodes[oid][0], seen)


def _bound_digest_as_live(
    plan: StoragePlan, copy: Payload, digest_of: DigestOf | None, whole: frozenset[str]
) -> None:
    """Raise Unstorable when a value the unit binds (a changed input it replaces by a new
    object or keeps `whole`, a value sharing parts with others) would not be what the
    live run left:
    loaded back, it must digest as the live one does (an astropy `WCS` with a CD matrix
    comes back with PC and CDELT: equal in use, another value). Exact kinds (arrays,
    frames) are not read. (An object given its state in place is not compared: its state
    refers to the live objects, itself included, that the hit changes too.)

    The copy is digested as the hit leaves it: its references lead to the live objects,
    and where the hit gives one of those its new state in place, that state is read in
    its place (`ReadAs`). Read as they are, they would hold the live values rather than
    their copies: after `n4 = {'m': n0}; n0.append(n4)`, the copy of `n4` would reach
    the live `n4` through `n0`, another object than itself, where the live `n4` reaches
    itself."""
    old = plan.graphs()[0]
    ns = old.main_ns or {}
    # (a class is read as it is: a stand-in is an object of its type, and a class's
    # state is not a class; its live attributes are those the hit gives it)
    fresh = {id(t): state for t, state in copy["inplace"] if not isinstance(t, type)}
    live_values = {**{n: plan.changed_roots[n] for n in whole}, **plan.unit_bind}
    pairs = [(live_values[n], v, n) for n, v in copy["bind"].items() if n in live_values]
    for target, state, name in pairs:
        if value_check.exact(target):
            continue
        try:
            own = digest_of is not None and ns.get(name) is target
            live = digest_of(name) if own and digest_of else Hasher(ns).value_digest(target, name)
        except Unhashable:
            continue  # the key already says what it cannot hash
        value_check.compare(target, state, live, ns, name, fresh)


def _kept(
    plan: StoragePlan, roots: dict[str, Any], fresh: dict[int, Any], replaced: set[int]
) -> dict[int, Any]:
    """The object at each live node's path in the copy (id -> object, or `_NOWHERE`);
    raises Unfaithful where an object the hit keeps is not there itself, below an
    instance restored by its state. A state that leaves the object out (a cache its
    `__getstate__` drops) keeps nobody from it: its holders still hold it. `replaced`:
    the objects of the inputs the copy makes anew."""
    old, post = plan.graphs()
    found: dict[int, Any] = {}
    anew: set[int] = set()  # nodes inside an object the hit replaces: its pickling's own
    for oid, (obj, parent, s) in post.nodes.items():
        if parent is None:
            found[oid] = roots[s[1]]
            continue
        found[oid] = there = _step(found[parent], s, fresh)
        if parent in anew or parent in replaced:
            anew.add(oid)
            continue
        if there is obj or there is _NOWHERE or oid not in old.nodes or oid in replaced:
            continue
        if _by_state(parent, post, fresh):
            _refuse(obj, [(post.path(oid), there), (None, obj)])
    return found


def _by_state(parent: int | None, post: objgraph.Graph, fresh: dict[int, Any]) -> bool:
    """Whether the holder is an instance restored in place by its pickled state, which
    its class's `__setstate__` may build anew."""
    return (
        parent is not None
        and parent in fresh
        and objgraph.kind_of(type(post.nodes[parent][0])) == objgraph.OBJ
    )


def _step(obj: Any, s: objgraph.Step, fresh: dict[int, Any]) -> Any:
    """The object one step leads to from `obj` in the copy: an object restored in place
    is read through its new state. A path that leads nowhere gives `_NOWHERE`: a
    library's pickling may leave out the parts it makes when asked for them (a plotly
    figure's property objects), which then share nothing."""
    if obj is _NOWHERE:
        return obj
    try:
        return objgraph.step(fresh.get(id(obj), obj), s)
    except objgraph.PATH_ERRORS:
        return _NOWHERE


def _roots(
    plan: StoragePlan, copy: Payload, replaced: set[int], whole: frozenset[str]
) -> dict[str, Any]:
    """The roots as the hit leaves them: the copy's values of the names and module
    attributes it binds; the changed inputs' own objects (the copy holds their new
    states), or the copy's object where the hit rebinds the input and replaces its
    old object (`replaced`); for the inputs a by-value copy holds `whole`, its value,
    or nothing where the step rebound the input (the copy holds only the new value)."""
    post = plan.graphs()[1]
    roots = {step[1]: obj for obj, parent, step in post.nodes.values() if parent is None}
    for oid, holders in post.parents.items():
        roots.update((step[1], post.nodes[oid][0]) for parent, step in holders if parent is None)
    for name, value in copy["bind"].items():
        roots[name] = value
        changed = objgraph.root(RootKind.CHANGED, name)
        if name in whole:
            roots[changed] = _NOWHERE if name in plan.unit_bind else value
        elif id(roots.get(changed)) in replaced:
            roots[changed] = value
    for name, value in module_attrs.values(copy["modules"]).items():
        roots[objgraph.root(RootKind.MODULE_ATTRIBUTE, name)] = value
    return roots


def _load(writer: stream.Writer, main: bytes, buffers: list[pickle.PickleBuffer]) -> Payload:
    objects = {path: writer.old.nodes[oid][0] for oid, path in writer.paths.items()}
    # A reference is the live object itself (its fallback is for a kernel without it);
    # arrays are read-only, over the read-only buffers, never written.
    resolve = stream.resolver(lambda pid: objects[pid[1]], objects.__getitem__, read_only=True)
    copy: Payload = serialize.load_back(main, buffers, "shared values", persistent_load=resolve)
    return copy


def _refuse(obj: Any, seen: Sequence[tuple[objgraph.Path | None, Any]]) -> None:
    """`seen`: (path, the object there in the copy) pairs that differ; a path of None
    stands for the live object itself."""
    first = seen[0][0]
    assert first is not None  # the live object (None) is never listed first
    other = next(p for p, f in seen if f is not seen[0][1])
    kind, here = type(obj).__name__, objgraph.describe(first)
    if other is None:
        why = f"{here} is a {kind} the hit keeps, and pickling puts another in its place"
    else:
        why = (
            f"{here} and {objgraph.describe(other)} are one {kind}, and pickling makes two of them"
        )
    raise Unfaithful(
        objgraph.root_name(first[0]),
        f"{why} (its library's own pickling builds it or its holder anew)",
        "mark the step `--effect`",
    )
