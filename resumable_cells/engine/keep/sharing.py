"""Sharing between names, kept across a hit: what a step's entry stores as one unit,
what by reference to an input, and what it restores in place.

Before a live step runs (`before`), the objects its inputs hold are walked
(`objgraph`) and kept alive: their identity is what the step's results may share with
the rest of the kernel. After it ran, `analyse` looks at the values it bound and at the
inputs it changed (an input is changed when its digest is, `a.append(1)`) and plans
how the entry stores each name:

- **Alone.** A bound value that shares no object with another name is stored by
  itself, by its digest, as any value (most values: a frame, an array, a number).
- **One unit.** Values that share objects with each other (`a = [1]; b = a`; two
  closures over one cell; `x2` and its view `sub`) or with the inputs (`b = a`,
  `lst = d['k']`, a view of an input array), and the new state of the objects a step
  changed inside its inputs, are pickled together, as one stream (Kishu's co-variables:
  names whose object graphs meet are stored as one), so that one object stays one
  object. In it, an object the inputs held before the step is a *reference*, its path
  from an input (`d['k']`): the key guarantees the input's value, so in the kernel that
  serves the hit the path leads to the corresponding object, which is then used itself,
  never a copy. An array viewing an input's memory is stored as its offset, shape and
  strides over it; arrays viewing one new buffer are stored with the part of it they
  view, once (`unit.py` writes and reads the stream).
- **In place.** An object the step changed in place (`b.append(2)`, `sub[0, 0] = 99`,
  `df['c'] = ...`, `model.fit(X)`) is given its new state in place on a hit (`inplace`)
  rather than replaced: every holder of it then sees the change as it did live, names
  the step does not read (`a` when `a is b`, the base of a view) and holders the engine
  does not know about. Such names are recorded among the step's outputs (`seen`): their
  value changed with it. An input changed in place that holds no other object is stored
  alone (by digest) and restored in place; otherwise its state goes in the unit.
- **Replaced.** An object that cannot be restored in place (`inplace.restorable`) is
  stored as a new object, and each name bound to it is rebound to that one new object;
  a name the step neither reads nor binds only while, on the hit, it still holds the
  object replaced (`aliases`: the step's key says nothing of such a name).

What it cannot make faithful it refuses (`Unfaithful`: the step runs and is not cached,
and the message names the value and the way out): a value sharing an object with a name
the step does not read (the engine cannot know that name's value when serving), an
object it cannot restore in place that something else also holds, an input holding
more objects than the walk's limit when the step changed it or bound something inside
it.

Cost: only the step's inputs (before) and what it bound or changed (after) are walked;
the rest of the namespace is looked at one level deep (is a name's value one of those
objects, an array over one of that memory), and only when the step bound or changed an
object at all. Arrays and frames are leaves: no buffer is read or copied. The rows of a
table an input holds (a list of a million records) are recorded as the graph's nodes
only when this analysis asks about them: a step that binds only atomic values and
changed nothing never does (`changes.of_run` checks them in place without asking).
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Collection, Iterable
from itertools import compress, repeat
from operator import and_, attrgetter, is_, is_not, itemgetter
from typing import Any

import msgspec

from ...errors import Unfaithful
from ..objects import inplace, objgraph, user_names
from ..objects.objgraph import RootKind
from ..state import module_attrs
from ..units.layout import StoragePlan

log = logging.getLogger(__name__)
WALK_LIMIT = 2_000_000  # objects walked per step, before and after (about a second)


class InputSnapshot(msgspec.Struct):
    """The step's inputs before it ran: their objects, the graph they hold, and the
    attributes of the notebook's modules it reads or imports (`module_attrs`)."""

    graph: objgraph.Graph
    values: dict[str, Any]
    modules: module_attrs.Snapshot = msgspec.field(default_factory=dict)


def before(
    ns: dict[str, Any],
    inputs: Iterable[str],
    imports: Iterable[str] = (),
    limit: int | None = None,
) -> InputSnapshot:
    """Walk the inputs of a step that is about to run live: names of the namespace, or
    attribute chains from one (`settings.THRESHOLD`); `imports` are the modules the
    step imports."""
    graph = objgraph.Graph(ns, limit or WALK_LIMIT)
    values = {}
    for name in inputs:
        try:
            values[name] = objgraph.lookup(ns, name)
        except (KeyError, AttributeError):
            continue
        graph.add(name, values[name])
    return InputSnapshot(graph, values, module_attrs.snapshot(ns, values, imports))


_MISSING = object()


def add_inputs(snapshot: InputSnapshot, ns: dict[str, Any], names: Iterable[str]) -> None:
    """Inputs found while the step ran (names it read through `eval`, unchanged by it:
    `live/trace.py`), walked now as if before: the same objects in the same state."""
    for name in names:
        if name in ns and name not in snapshot.values:
            snapshot.values[name] = ns[name]
            snapshot.graph.add(name, ns[name])


def analyse(
    pre: InputSnapshot,
    ns: dict[str, Any],
    bound: list[str],
    changed: dict[str, Any],
    hidden: dict[str, Any],
    by_reference: Collection[str] = (),
) -> StoragePlan:
    """StoragePlan the entry of a live run that bound `bound` and changed the input objects
    `changed` (`changes.of_run`). Raises Unfaithful. `by_reference`: bound names stored
    as the attributes of installed modules they are (`from sympy import *`): a hit binds
    those very objects, so they are stored alone and not walked: another name holding
    one of them (`known = json.decoder.BACKSLASH`) shares it on a hit as it did live."""
    old = pre.graph
    kept = [n for n in bound if n not in by_reference and not _changed_itself(n, ns, pre, changed)]
    post = objgraph.Graph(ns, old.limit)
    post.old = old
    post.open = {oid for oid, root in old.root.items() if root in changed} if changed else set()
    post.new_classes = False
    for name in kept:
        post.add(name, ns[name])
    for name, obj in changed.items():
        post.add(objgraph.root(RootKind.CHANGED, name), obj)
    plan = StoragePlan(graph=old, post=post, modules=module_attrs.changes(pre.modules))
    for name, value in module_attrs.values(plan.modules).items():
        post.add(objgraph.root(RootKind.MODULE_ATTRIBUTE, name), value)
    if post.empty():  # only atomic values bound, nothing changed: the usual step
        plan.alone = list(bound)
        return plan
    plan.alone = [n for n in bound if n in by_reference]
    _check_walk_limit(old, post, changed)
    region = {oid for oid in post.open if old.is_node(oid)}
    movable = {oid for oid in region if inplace.restorable(old.nodes[oid][0], old.shape.get(oid))}
    plan.replaced = {oid for oid in region - movable if not _pinned(old, oid, changed)}
    shared = _sharing_roots(post, old)
    _place_changed(plan, ns, changed, region, movable)
    for name in kept:
        if name in shared:
            plan.unit_bind[name] = ns[name]
        else:
            plan.alone.append(name)
    _look_around(plan, ns, pre, bound, hidden, region)
    _drawings(plan, ns, hidden)
    return plan


def _changed_itself(
    name: str, ns: dict[str, Any], pre: InputSnapshot, changed: dict[str, Any]
) -> bool:
    """A bound name that still holds its own input's object, which the step changed:
    restored in place, not bound."""
    return name in changed and ns[name] is pre.values[name]


_PYTHON_KINDS = frozenset(
    {objgraph.SEQ, objgraph.MAP, objgraph.SET, objgraph.OBJ, objgraph.CELL, objgraph.DRAWING}
)


def _check_walk_limit(old: objgraph.Graph, post: objgraph.Graph, changed: dict[str, Any]) -> None:
    """Refuse when an input was too large to walk and the step could have taken an
    object from the part not walked: it changed that input, or it bound Python
    containers or objects, or views of arrays (a new frame or array of its own is fine)."""
    if old.truncated and (old.truncated.intersection(changed) or _could_share(old, post)):
        name = sorted(old.truncated)[0]
        raise Unfaithful(
            name,
            f"it holds more than {old.limit:,} objects, too many to follow what the step "
            "shares with it or changes in it",
            "split it into smaller values, or mark the step `--effect`",
        )
    if post.truncated:
        name = objgraph.root_name(sorted(post.truncated)[0])
        raise Unfaithful(
            name, f"it holds more than {post.limit:,} objects", "mark the step `--effect`"
        )


def _could_share(old: objgraph.Graph, post: objgraph.Graph) -> bool:
    for oid, (obj, _, _) in post.nodes.items():
        if oid in old.nodes:
            continue
        kind = objgraph.kind_of(type(obj))
        if kind in _PYTHON_KINDS or (kind == objgraph.ARRAY and obj.base is not None):
            return True
    return False


def _sharing_roots(post: objgraph.Graph, old: objgraph.Graph) -> set[str]:
    """The roots of `post` that share an object with another root or with the inputs
    (an input's object, or memory an input array views)."""
    parent: dict[str, str] = {}

    def find(r: str) -> str:
        while parent.get(r, r) != r:
            r = parent[r]
        return r

    def union(a: str, b: str) -> None:
        parent[find(a)] = find(b)

    for a, b in post.links:
        union(a, b)
    touching: set[str] = set()
    for owned, old_owners in ((post.owners, old.owners), (post.drawings, old.drawings)):
        for owner, members in owned.items():  # arrays over one memory, parts of one figure
            roots = [post.root[a] for a in members]
            for r in roots[1:]:
                union(roots[0], r)
            if owner in old_owners:
                touching.update(roots)
    touching.update(post.root[oid] for oid in post.nodes if oid in old.nodes)
    groups: dict[str, list[str]] = {}
    for r in set(post.root.values()).union(*post.links):
        groups.setdefault(find(r), []).append(r)
    out: set[str] = set()
    for group in groups.values():
        if len(group) > 1 or touching.intersection(group):
            out.update(group)
    return out


def _place_changed(
    plan: StoragePlan,
    ns: dict[str, Any],
    changed: dict[str, Any],
    region: set[int],
    movable: set[int],
) -> None:
    """Changed inputs: alone and in place when the input still holds its object, which
    holds nothing else that could have changed and shares nothing; otherwise each object
    of theirs goes in the unit, restored in place, or anew when it cannot be."""
    old, post = plan.graphs()
    linked = {r for pair in post.links for r in pair}
    under_root: dict[str, int] = {}
    for oid, root in post.root.items():
        if oid in old.nodes:
            under_root[root] = under_root.get(root, 0) + 1
    # In the walk's order, not a set's: which references carry fallbacks, and the
    # stream's bytes, must not change from one run to the next.
    order = {oid: i for i, oid in enumerate(old.nodes)} if changed or plan.replaced else {}
    for name, obj in changed.items():
        own = sorted((oid for oid in region if old.root[oid] == name), key=order.__getitem__)
        root = objgraph.root(RootKind.CHANGED, name)
        if (
            own == [id(obj)]
            and id(obj) in movable
            and root not in linked
            and under_root.get(root, 0) == 1
            and id(obj) not in post.parents  # it does not hold itself
            and ns.get(name, _MISSING) is obj
        ):
            plan.alone_inplace.append(name)
            continue
        plan.changed_roots[name] = obj
        plan.unit_inplace.extend(old.nodes[oid][0] for oid in own if oid in movable)
    for oid in sorted(plan.replaced, key=lambda o: order.get(o, -1)):
        _replace(plan, ns, changed, oid)


def _pinned(old: objgraph.Graph, oid: int, changed: dict[str, Any]) -> bool:
    """Whether an input the step did not change holds this object of a changed one too,
    or it is a weak reference (astropy's column info holds its table by one: it cannot
    change, it can only die): then it did not change, and is stored by reference (not a
    drawing: see `_drawings`)."""
    if isinstance(old.nodes[oid][0], weakref.ref):
        return True
    if objgraph.kind_of(type(old.nodes[oid][0])) == objgraph.DRAWING:
        return False
    return any(p is not None and old.root[p] not in changed for p, _ in old.parents.get(oid, []))


def _drawings(plan: StoragePlan, ns: dict[str, Any], hidden: dict[str, Any]) -> None:
    """A matplotlib figure is one thing: its parts hold each other (an axes its figure,
    a figure its axes), none can be restored in place, and the analysis does not walk
    inside them. When a step binds or changes part of one, the figure is stored whole in
    the unit and every name holding a part of it (an input, a bound name or another) is
    bound to the restored figure's part, so that `ax.figure is fig` still holds."""
    old, post = plan.graphs()
    touched = set(post.drawings)
    if not touched:
        return
    for root in touched:
        plan.replaced.update(old.drawings.get(root, ()))
    for name, value in _of_kinds(ns, {objgraph.DRAWING}):
        if name.startswith("_"):
            continue
        if hidden.get(name, _MISSING) is not value and id(objgraph.drawing_root(value)) in touched:
            plan.unit_bind[name] = value
    plan.alone = [n for n in plan.alone if n not in plan.unit_bind]


def _replace(plan: StoragePlan, ns: dict[str, Any], changed: dict[str, Any], oid: int) -> None:
    """An object that cannot be restored in place is stored anew; the changed inputs
    bound to it are rebound to that (their containers, restored in place, hold it)."""
    obj = plan.graphs()[0].nodes[oid][0]
    for name in changed:
        if ns.get(name, _MISSING) is obj:
            plan.unit_bind[name] = obj


def _look_around(
    plan: StoragePlan,
    ns: dict[str, Any],
    pre: InputSnapshot,
    bound: list[str],
    hidden: dict[str, Any],
    region: set[int],
) -> None:
    """Names the step neither read nor bound: those holding an object it changed saw the
    change (recorded, or rebound when the object is replaced); one holding an object it
    bound but did not read, or memory such an array views, cannot be served faithfully.
    Identities are compared for the whole namespace at C speed; a name is looked at in
    Python only when its object is one of those, or for arrays and closures when the
    step made or changed some."""
    old, post = plan.graphs()
    watched = region | (post.nodes.keys() - old.nodes.keys())  # (at C speed)
    skip = set(pre.values).union(bound)
    ids = list(map(id, ns.values()))
    held = watched.intersection(ids)
    for name in list(compress(ns, map(held.__contains__, ids))) if held else ():
        if name not in skip and user_names.is_users(name, ns[name], hidden):
            _look_at(plan, name, ns[name], region)
    arrays = {
        id(objgraph.memory_owner(old.nodes[o][0]))
        for o in region
        if objgraph.kind_of(type(old.nodes[o][0])) == objgraph.ARRAY
    }
    fresh = {o for o in post.owners if o not in old.owners}
    cells = {o for o in region if objgraph.kind_of(type(old.nodes[o][0])) == objgraph.CELL}
    if cells:
        for name, fn in _of_kinds(ns, {objgraph.FUNC}):
            if id(fn) in watched or not any(id(c) in cells for c in fn.__closure__ or ()):
                continue
            if name not in skip and user_names.is_users(name, fn, hidden):
                plan.seen.append(name)
    if not (arrays or fresh):
        return
    for name, arr in _viewing(_of_kinds(ns, {objgraph.ARRAY}), arrays | fresh):
        if id(arr) in watched or name in skip or not user_names.is_users(name, arr, hidden):
            continue
        _look_at_array(plan, name, arr, arrays, fresh)


def _of_kinds(ns: dict[str, Any], wanted: set[int]) -> list[tuple[str, Any]]:
    """The items of `ns` whose values are of the kinds `wanted`, chosen at C speed: in a
    namespace of `from numpy import *` and a long session's output cache, a few
    hundred arrays or functions among a few thousand names."""
    kinds = list(map(type, ns.values()))
    types_ = {t for t in set(kinds) if objgraph.kind_of(t) in wanted}
    if not types_:
        return []
    return [(k, ns[k]) for k in compress(ns, map(types_.__contains__, kinds))]


def _viewing(items: list[tuple[str, Any]], owners: set[int]) -> list[tuple[str, Any]]:
    """The (name, array) items whose memory is owned by one of the arrays `owners` (ids):
    an array that owns its memory is told by its id at C speed, a view by following its
    bases."""
    if not items:
        return []
    values = list(map(itemgetter(1), items))
    bases = list(map(attrgetter("base"), values))
    at = range(len(items))
    owning = map(is_, bases, repeat(None))
    picked = set(compress(at, map(and_, owning, map(owners.__contains__, map(id, values)))))
    for i in compress(at, map(is_not, bases, repeat(None))):
        if id(objgraph.memory_owner(values[i])) in owners:
            picked.add(i)
    return [items[i] for i in sorted(picked)]


def _look_at(plan: StoragePlan, name: str, value: Any, region: set[int]) -> None:
    oid = id(value)
    if oid in plan.replaced:
        plan.unit_bind[name] = value
        plan.aliases[name] = plan.graphs()[0].path(oid)
    elif oid in region:
        plan.seen.append(name)
    elif _data(value, objgraph.kind_of(type(value))):
        raise Unfaithful(
            objgraph.root_name(plan.graphs()[1].root[oid]),
            f"it is the same object as {name}, which the step does not read",
            f"read {name} in the step too, or mark the step `--effect`",
        )


def _look_at_array(
    plan: StoragePlan, name: str, arr: Any, changed: set[int], fresh: set[int]
) -> None:
    owner = id(objgraph.memory_owner(arr))
    if owner in changed:
        plan.seen.append(name)
    elif owner in fresh:
        post = plan.graphs()[1]
        root = objgraph.root_name(post.root[post.owners[owner][0]])
        raise Unfaithful(
            root,
            f"it views the memory of {name}, which the step does not read",
            f"read {name} in the step too, or mark the step `--effect`",
        )


def _data(value: Any, kind: int) -> bool:
    """Values whose sharing a user relies on (library singletons are left alone: pickle
    restores most of them by name; drawings are rebound whole, `_drawings`)."""
    if kind == objgraph.OBJ:
        return type(value).__module__ == "__main__"
    return kind not in (
        objgraph.FUNC,
        objgraph.CLASS,
        objgraph.WRAPPER,
        objgraph.SKIP,
        objgraph.TUPLE,
        objgraph.METHOD,
        objgraph.DRAWING,
    )
