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
import types
from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any

from ...errors import Unfaithful, Unhashable
from ...hashing.values import Hasher
from ...storage import serialize
from ...storage.deferred import Batch
from ...storage.entries import Stream
from ...storage.store import Store
from ..objects import inplace, objgraph
from ..objects.objgraph import RootKind
from ..state import module_attrs
from ..units import stream
from ..units.layout import Payload, StoragePlan
from . import value_check

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
    instead (`inplace.raw_state`). Raises Unfaithful or Unstorable."""
    _built_from_changed(plan)
    try:
        return _put(plan, store, False, digest_of, later)
    except Unfaithful:
        if not any(inplace.raw_state(type(o)) for o in plan.unit_inplace):
            raise
        log.debug("the unit is written again with raw states", exc_info=True)
    return _put(plan, store, True, digest_of, later)


def _put(
    plan: StoragePlan,
    store: Store,
    raw: bool,
    digest_of: DigestOf | None,
    later: Batch | None,
) -> Stream:
    writer = stream.Writer(plan)
    payload = stream.payload_of(plan, raw)
    main, buffers, roots, inner = stream.dump_payload(payload, writer, "shared values")
    check(plan, writer, main, buffers, digest_of)
    return stream.put_stream(store, main, buffers, roots, inner=sorted(inner), later=later)


def check(
    plan: StoragePlan,
    writer: stream.Writer,
    main: bytes,
    buffers: list[pickle.PickleBuffer],
    digest_of: DigestOf | None = None,
) -> None:
    """Raise Unfaithful when the copy of the stream `writer` made does not reach one
    object along every path along which the live values reach one, or when an object
    the hit keeps (restored in place, or referred to) is not itself at its place in
    the copy (a `__setstate__` that copies: the holder would get a copy of it)."""
    copy = _load(writer, main, buffers)
    if not copy.get("raw", False):
        _bound_digest_as_live(plan, copy, digest_of)
    roots = _roots(plan, copy)
    fresh = {id(target): state for target, state in copy["inplace"]}
    found = _kept(plan, roots, fresh)
    post = plan.graphs()[1]  # a plan with a unit: made by the sharing analysis
    for oid, holders in post.parents.items():
        seen = [(post.path(oid), found[oid])]
        for parent, s in holders:
            path = (s[1],) if parent is None else (*post.path(parent), s)
            seen.append((path, roots[s[1]] if parent is None else _step(found[parent], s, fresh)))
        seen = [(p, f) for p, f in seen if f is not _NOWHERE]
        if len({id(f) for _, f in seen}) > 1:
            _refuse(post.nodes[oid][0], seen)


def _bound_digest_as_live(plan: StoragePlan, copy: Payload, digest_of: DigestOf | None) -> None:
    """Raise Unstorable when a value the unit binds (a changed input it replaces by a new
    object, a value sharing parts with others) would not be what the live run left:
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
    fresh = {id(target): state for target, state in copy["inplace"]}
    pairs = [(plan.unit_bind[n], v, n) for n, v in copy["bind"].items() if n in plan.unit_bind]
    for target, state, name in pairs:
        if value_check.exact(target):
            continue
        try:
            own = digest_of is not None and ns.get(name) is target
            live = digest_of(name) if own and digest_of else Hasher(ns).value_digest(target, name)
        except Unhashable:
            continue  # the key already says what it cannot hash
        value_check.compare(target, state, live, ns, name, fresh)


_GIVEN_ITEMS = 10_000  # items of the arguments a class's own code is given, looked at most
_ARGUMENTS = frozenset({tuple, list, dict, set, frozenset})  # what arguments are made of
_OWN_CODE: dict[type, bool] = {}
_BUILT_KINDS = frozenset({objgraph.OBJ, objgraph.SEQ, objgraph.MAP, objgraph.SET})


def _built_from_changed(plan: StoragePlan) -> None:
    """Raise Unfaithful where the unit builds an object anew through its class's own
    reduction (a `__reduce__` written in Python: its constructor is the class's code)
    and hands that code an object the step certainly changed, one the hit gives a new
    state in place that holds an object the step made. A hit loads the unit before it
    gives any object its state, so that code sees the object as it was before the step,
    where the live run (and the load back, whose references lead to the live objects)
    saw it after: `R(items)` that keeps `items or []` holds a list of its own when
    `items` was still empty, and the state the hit gives `items` then reaches nobody's
    `R`. (Every object of a changed input is restored in place, changed or not, and
    which ones changed is not known: a plotly figure's reduction hands its constructor
    its `_grid_ref` list, the same before as after. An object whose new state holds one
    the step made cannot have held it before. Objects pickled by their state are left to
    the checks of the copy: a `__setstate__` that copies what it is given breaks a
    sharing they compare, and one that only sets it, as attrs' and pydantic's do, is
    faithful.)"""
    if not plan.unit_inplace:
        return
    old, post = plan.graphs()  # a plan with a unit: made by the sharing analysis
    objs = list(map(itemgetter(0), post.nodes.values()))
    objs += [old.nodes[oid][0] for oid in plan.replaced]
    # (the types at C speed first: most units hold no object of such a class)
    own = {t for t in set(map(type, objs)) if _own_code(t)}
    if not own:
        return
    targets = {id(o): o for o in plan.unit_inplace}
    changed: set[int] | None = None  # (walked when some such object is handed one)
    for obj in objs:
        if type(obj) not in own or (id(obj) in old.nodes and id(obj) not in plan.replaced):
            continue  # (an object of the inputs is referred to, not built)
        given = _given(_code_input(obj), targets)
        if not given:
            continue
        changed = _holding_new(old, post) if changed is None else changed
        target = next((targets[t] for t in given if t in changed), None)
        if target is None:
            continue
        oid = id(obj)
        where = post.path(oid) if oid in post.nodes else old.path(oid)
        raise Unfaithful(
            objgraph.root_name(where[0]),
            f"{objgraph.describe(where)} is a {type(obj).__name__} its class's own code "
            f"builds from a {type(target).__name__} the step changed in place, which a hit "
            "changes only after building it",
            "mark the step `--effect`",
        )


def _holding_new(old: objgraph.Graph, post: objgraph.Graph) -> set[int]:
    """The objects of the inputs through which the step's values reach an object the step
    made (ids): each of them, or one it holds, was changed by the step."""
    stack = [oid for oid in post.nodes if oid not in old.nodes]
    seen = set(stack)
    while stack:
        oid = stack.pop()
        holders = [post.nodes[oid][1], *(p for p, _ in post.parents.get(oid, ()))]
        for parent in holders:
            if parent is not None and parent not in seen:
                seen.add(parent)
                stack.append(parent)
    return {oid for oid in seen if oid in old.nodes}


def _own_code(t: type) -> bool:
    """Whether pickle rebuilds a `t` through a reduction its class wrote in Python, a
    `__reduce__` or `__reduce_ex__` of its own (cached per type). Objects and containers
    only: an array or a frame is rebuilt from its data, which its reduction would copy
    to be looked at."""
    known = _OWN_CODE.get(t)
    if known is None:
        methods = (getattr(t, m, None) for m in ("__reduce__", "__reduce_ex__"))
        known = objgraph.kind_of(t) in _BUILT_KINDS and any(
            isinstance(m, types.FunctionType) for m in methods
        )
        _OWN_CODE[t] = known
    return known


def _code_input(obj: Any) -> list[Any]:
    """What pickle hands `obj`'s class's own code when it rebuilds it by its own
    reduction: the arguments of its constructor, and its state when the class also sets
    that itself (a `__setstate__`)."""
    try:
        rv = obj.__reduce_ex__(5)
    except Exception:  # (then pickling it failed, and the unit with it)
        log.debug("no reduction of a %s", type(obj).__name__, exc_info=True)
        return []
    if not isinstance(rv, tuple):
        return []  # (a global, by name)
    given = [rv[1]] if len(rv) > 1 else []
    if len(rv) > 2 and isinstance(getattr(type(obj), "__setstate__", None), types.FunctionType):
        given.append(rv[2])
    return given


def _given(value: Any, targets: dict[int, Any]) -> list[int]:
    """The ids of `targets` that `value` holds through tuples, lists, dicts and sets
    (what a constructor's arguments are made of)."""
    stack, seen, budget, found = [value], set(), _GIVEN_ITEMS, []
    while stack and budget > 0:
        v = stack.pop()
        budget -= 1
        if id(v) in targets:
            found.append(id(v))
            continue
        t = type(v)
        if t not in _ARGUMENTS or id(v) in seen:
            continue
        seen.add(id(v))
        stack.extend(v.items() if t is dict else v)
    return found


def _kept(plan: StoragePlan, roots: dict[str, Any], fresh: dict[int, Any]) -> dict[int, Any]:
    """The object at each live node's path in the copy (id -> object, or `_NOWHERE`);
    raises Unfaithful where an object the hit keeps is not there itself, below an
    instance restored by its state. A state that leaves the object out (a cache its
    `__getstate__` drops) keeps nobody from it: its holders still hold it."""
    old, post = plan.graphs()
    found: dict[int, Any] = {}
    anew: set[int] = set()  # nodes inside an object the hit replaces: its pickling's own
    for oid, (obj, parent, s) in post.nodes.items():
        if parent is None:
            found[oid] = roots[s[1]]
            continue
        found[oid] = there = _step(found[parent], s, fresh)
        if parent in anew or parent in plan.replaced:
            anew.add(oid)
            continue
        if there is obj or there is _NOWHERE or oid not in old.nodes or oid in plan.replaced:
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


def _roots(plan: StoragePlan, copy: Payload) -> dict[str, Any]:
    """The roots as the hit leaves them: the copy's values of the names and module
    attributes it binds; the changed inputs' own objects (the copy holds their new
    states), or the copy's object where the hit rebinds the input and replaces its
    old object."""
    post = plan.graphs()[1]
    roots = {step[1]: obj for obj, parent, step in post.nodes.values() if parent is None}
    for oid, holders in post.parents.items():
        roots.update((step[1], post.nodes[oid][0]) for parent, step in holders if parent is None)
    for name, value in copy["bind"].items():
        roots[name] = value
        changed = objgraph.root(RootKind.CHANGED, name)
        if id(roots.get(changed)) in plan.replaced:
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
