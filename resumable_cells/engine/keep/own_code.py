"""Objects a hit builds through their class's own code, and the inputs' objects that code
is handed.

A hit loads a unit before it gives any object its new state in place (`units/stream.py`):
whatever code pickle runs while it builds the unit's objects sees the inputs' objects
as they were before the step, where the live run (and the load back, whose references
lead to the live objects) saw them after. Pickle runs a class's own code when it
rebuilds an object through a `__reduce__` or `__reduce_ex__` written in Python (its
constructor), a `__setstate__` written in Python, a `__new__` written in Python given
the arguments of `__getnewargs__`, or the `append`/`extend`/`__setitem__` of a list or
dict subclass given its items. `Keeper(items)` that keeps `items or []` then holds a
list of its own when `items` was still empty, and the state the hit gives `items`
reaches nobody's `Keeper`.

Such code is harmless when what it is handed is the same before the step as after. So
each object a hit gives a state in place and such code is handed is either known to
have changed (it is the object of an input whose digest changed, or it holds an object
the step made: it cannot have held it before), and the step is refused when written;
or it is recorded with its digest after the live run (`units.layout.Handed`), and the
hit compares it with the object it finds (`restore/load.py: check_handed`): the same,
the hit is served; another, it is a miss that says so. (A plotly figure's reduction
hands its constructor its `_grid_ref` list, the same before as after a change of the
figure: served.)
"""

from __future__ import annotations

import copyreg
import logging
import types
from collections.abc import Callable
from typing import Any

from ...errors import Unfaithful, Unhashable
from ...hashing.values import Hasher
from ..objects import objgraph
from ..units import byvalue
from ..units.layout import Handed, StoragePlan

log = logging.getLogger(__name__)
# copyreg's constructors of `__reduce_ex__`'s protocol 2 (missing from typeshed's copyreg)
_NEWOBJ = copyreg.__newobj__  # type: ignore[attr-defined]
_NEWOBJ_EX = copyreg.__newobj_ex__  # type: ignore[attr-defined]
_GIVEN_ITEMS = 10_000  # items of what a class's own code is given, looked at most
_ARGUMENTS = frozenset({tuple, list, dict, set, frozenset})  # what arguments are made of
_OWN_CODE: dict[type, bool] = {}
_BUILT_KINDS = frozenset({objgraph.OBJ, objgraph.SEQ, objgraph.MAP, objgraph.SET})


def handed(plan: StoragePlan, whole: frozenset[str] = frozenset()) -> list[Handed]:
    """The objects the unit gives a state in place that code of a class of its own is
    handed while the hit builds the unit (see the module docstring), each with its
    digest after the live run and its index in `byvalue.inplace_of(plan, whole)`. `whole`: the
    changed inputs the unit's by-value copy holds whole (`units/byvalue.py`), whose
    objects it builds rather than refers to. Raises Unfaithful where such an object
    certainly changed."""
    inplace = byvalue.inplace_of(plan, whole)
    if not inplace:
        return []
    old, post = plan.graphs()  # a plan with a unit: made by the sharing analysis

    def built(oid: int) -> bool:
        return oid not in old.nodes or oid in plan.replaced or old.root[oid] in whole

    objs = [obj for oid, (obj, _, _) in post.nodes.items() if built(oid)]
    objs += [old.nodes[oid][0] for oid in plan.replaced]
    objs += [obj for oid, (obj, _, _) in old.nodes.items() if old.root[oid] in whole]
    # (the types at C speed first: most units hold no object of such a class)
    own = {t for t in set(map(type, objs)) if _own_code(t)}
    if not own:
        return []
    targets = {id(o): i for i, o in enumerate(inplace)}
    changed: set[int] | None = None  # (walked when some such object is handed one)
    out: dict[int, Handed] = {}
    for obj in objs:
        if type(obj) not in own:
            continue
        given = _given(code_input(obj), targets, built)
        if not given:
            continue
        changed = _changed(plan) if changed is None else changed
        path = post.path(id(obj)) if id(obj) in post.nodes else old.path(id(obj))
        label = objgraph.root_name(path[0])
        for t in given:
            target = inplace[targets[t]]
            why = (
                f"{objgraph.describe(path)} is a {type(obj).__name__} its class's own code "
                f"builds from a {type(target).__name__} the step changed in place, which a "
                "hit changes only after building it"
            )
            if t in changed:
                raise Unfaithful(label, why, "mark the step `--effect`")
            if t not in out:
                out[t] = (targets[t], _digest(target, old.main_ns, label), label, why)
    return sorted(out.values())


def _digest(target: Any, ns: dict[str, Any] | None, label: str) -> str:
    try:
        return Hasher(ns).value_digest(target, label)
    except Unhashable as err:  # (it cannot be compared on a hit: not served)
        why = f"what its class's own code is given cannot be hashed ({err.why})"
        raise Unfaithful(label, why) from None


def _changed(plan: StoragePlan) -> set[int]:
    """The objects of the inputs the step certainly changed (ids): those of the changed
    inputs themselves (their digests changed), and those through which the step's values
    reach an object the step made (each of them, or one it holds, was changed)."""
    old, post = plan.graphs()
    stack = [oid for oid in post.nodes if oid not in old.nodes]
    seen = set(stack)
    while stack:
        oid = stack.pop()
        holders = [post.nodes[oid][1], *(p for p, _ in post.parents.get(oid, ()))]
        for parent in holders:
            if parent is not None and parent not in seen:
                seen.add(parent)
                stack.append(parent)
    seen.update(map(id, plan.changed_roots.values()))
    return {oid for oid in seen if oid in old.nodes}


def _own_code(t: type) -> bool:
    """Whether pickle runs code of `t`'s own, written in Python, while it rebuilds a `t`
    (see the module docstring; cached per type). Objects and containers only: an array
    or a frame is rebuilt from its data, which its reduction would copy to be looked at."""
    known = _OWN_CODE.get(t)
    if known is None:
        kind = objgraph.kind_of(t)
        names = ["__reduce__", "__reduce_ex__", "__new__"]
        names += {
            objgraph.SEQ: ["append", "extend"],
            objgraph.MAP: ["__setitem__"],
            objgraph.SET: ["__init__"],
        }.get(kind, [])
        known = kind in _BUILT_KINDS and (
            any(_python(getattr(t, m, None)) for m in names) or _own_setstate(t)
        )
        _OWN_CODE[t] = known
    return known


def _python(method: Any) -> bool:
    return isinstance(method, types.FunctionType)


# `__setstate__`s that only set what they are given, as pickle's default does.
_SETTERS = frozenset(
    {
        ("attr._make", "_ClassBuilder._make_getstate_setstate.<locals>.slots_setstate"),
        ("pydantic.main", "BaseModel.__setstate__"),
    }
)


def _own_setstate(t: type) -> bool:
    """Whether a `t` is given its state by a `__setstate__` written in Python that may
    look at it (not attrs' or pydantic's, which only set it)."""
    fn = getattr(t, "__setstate__", None)
    return isinstance(fn, types.FunctionType) and (fn.__module__, fn.__qualname__) not in _SETTERS


def code_input(obj: Any) -> list[Any]:
    """What pickle hands `obj`'s class's own code when it rebuilds `obj`: the arguments
    of a constructor of its own (or of its `__new__`), its state when its class sets
    that itself (a `__setstate__`), the items a list or dict subclass adds itself."""
    try:
        rv = obj.__reduce_ex__(5)
    except Exception:  # (then pickling it failed, and the unit with it)
        log.debug("no reduction of a %s", type(obj).__name__, exc_info=True)
        return []
    if not isinstance(rv, tuple):
        return []  # (a global, by name)
    t = type(obj)
    rv = (*rv, None, None, None, None)[:5]
    func, args, state, items, pairs = rv
    given: list[Any] = []
    if func is _NEWOBJ or func is _NEWOBJ_EX:
        if _python(getattr(t, "__new__", None)):
            given.append(args[1:])
    elif _python(func) or (isinstance(func, type) and _constructed_in_python(func)):
        given.append(args)
    if state is not None and _own_setstate(t):
        given.append(state)
    if items is not None and any(_python(getattr(t, m, None)) for m in ("append", "extend")):
        given.append(list(items))
    if pairs is not None and _python(getattr(t, "__setitem__", None)):
        given.append(list(pairs))
    return given


def _constructed_in_python(cls: type) -> bool:
    return _python(getattr(cls, "__init__", None)) or _python(getattr(cls, "__new__", None))


def _given(value: Any, targets: dict[int, int], built: Callable[[int], bool]) -> list[int]:
    """The ids of `targets` that `value` holds through tuples, lists, dicts and sets (what
    arguments are made of) and through objects the hit builds (`built(id)`: from the
    states it loads, references to the inputs' objects included)."""
    stack, seen, budget, found = [value], set(), _GIVEN_ITEMS, []
    while stack and budget > 0:
        v = stack.pop()
        budget -= 1
        oid = id(v)
        if oid in targets:
            found.append(oid)
            continue
        t = type(v)
        if oid in seen or t in objgraph.NO_IDENTITY:
            continue
        seen.add(oid)
        if t in _ARGUMENTS:
            stack.extend(v.items() if t is dict else v)
        elif built(oid):
            stack.extend(_parts(v))
    return found


def _parts(v: Any) -> list[Any]:
    """The items and attributes of an object the step made."""
    kind = objgraph.kind_of(type(v))
    try:
        if kind in (objgraph.SEQ, objgraph.SET, objgraph.TUPLE):
            parts = list(v)
        elif kind == objgraph.MAP:
            parts = list(dict.items(v))
        else:
            parts = []
        if kind in (objgraph.OBJ, objgraph.SEQ, objgraph.MAP, objgraph.SET):
            attrs = getattr(v, "__dict__", None)
            parts += list(attrs.values()) if type(attrs) is dict else []
        return parts
    except Exception:  # an object whose parts cannot be listed holds none we know of
        log.debug("the parts of a %s cannot be listed", type(v).__name__, exc_info=True)
        return []
