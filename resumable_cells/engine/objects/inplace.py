"""Restoring an object in place: the object a name held before a step is given the state
the step left it in, so that every holder of it sees the change, as it did live: other
names, containers, views of an array, closures sharing a cell, and holders the engine
does not know about. Rebinding a name to a restored copy would leave all of those with
the old object, so in place is the rule wherever it can be exact.

`restorable(obj, before)` says whether it can be exact for `obj`; `restore(target,
fresh)` gives `target` the state of `fresh` (the live object after the step, restored
from the store). What is restored, per type:

- list, dict, set, bytearray, deque (and subclasses): the items, through the base
  type's own methods (an OrderedDict through its own), and the instance attributes;
- numpy arrays (`ndarray` and subclasses written in Python that pickle as numpy does,
  with the shape and dtype they had before the step): the data, copied into the same
  memory, so views of it see it too, and a subclass's instance attributes;
- closure cells: the contents; notebook functions: defaults, attributes, code, name
  and docstring;
  notebook classes: their attributes (set, or deleted);
- `random.Random`, numpy `Generator`, `RandomState` and bit generators: their state;
- instances of pure-Python classes (every class of the MRO but `object` written in
  Python, pandas objects among them) that pickle by their state (no `__reduce__` of
  their own) and `SimpleNamespace`s: the instance dict and slots, set the way pickle
  sets them (`__setstate__` when the class has one).

Anything else (a C extension object, an array whose shape changed) is not restorable:
the sharing analysis stores it as a new object and rebinds what holds it, or refuses.
"""

from __future__ import annotations

import copyreg
import sys
import types
from collections import OrderedDict, defaultdict, deque
from typing import Any, TypeAlias

from . import objgraph

# copyreg's constructor of `__reduce_ex__`'s protocol 2 (missing from typeshed's copyreg)
_NEWOBJ = copyreg.__newobj__  # type: ignore[attr-defined]

_HEAPTYPE = 1 << 9
_PURE: dict[type, bool] = {}


_CONTAINER_BASES = frozenset({object, list, dict, set, bytearray, deque, OrderedDict, defaultdict})


def pure_python(t: type) -> bool:
    """Whether all the state of a `t` is its instance dict and slots (and, for a
    container, its items): every class of its MRO but `object` and the builtin
    containers is written in Python, where a C base or a binding could hold more."""
    ok = _PURE.get(t)
    if ok is None:
        ok = all(b in _CONTAINER_BASES or b.__flags__ & _HEAPTYPE for b in t.__mro__)
        if objgraph.kind_of(t) not in _CONTAINERS:
            slots = len(objgraph.slot_names(t))
            ok = ok and t.__basicsize__ <= object.__basicsize__ + 8 * (slots + 2)
        _PURE[t] = ok
    return ok


def _random_kind(obj: Any) -> str | None:
    """'random', 'generator', 'randomstate' or 'bitgen' for the random number
    generators restored by their state; None for anything else."""
    import random

    if isinstance(obj, random.Random):
        return "random"
    rnd = sys.modules.get("numpy.random")  # (not `np.random`: it imports it, 26 ms)
    if rnd is None:
        return None  # (no generator of numpy's exists before numpy.random is imported)
    for cls, name in ((rnd.Generator, "generator"), (rnd.RandomState, "randomstate")):
        if type(obj) is cls:
            return name
    if isinstance(obj, rnd.BitGenerator):
        return "bitgen"
    return None


_NAMESPACES = (types.SimpleNamespace,)  # only their attributes, though written in C


def restorable(obj: Any, shape: tuple[Any, Any] | None = None) -> bool:
    """Whether `restore` can give `obj` any later state of itself exactly. `shape` is
    (shape, dtype) of an array before the step: an array restores in place only into
    the same shape and dtype."""
    t = type(obj)
    kind = objgraph.kind_of(t)
    if kind in _CONTAINERS:
        return pure_python(t)
    if kind == objgraph.ARRAY:
        same = shape is None or shape == (obj.shape, obj.dtype)
        return same and _array_type(t)
    if kind in (objgraph.CELL, objgraph.FUNC, objgraph.CLASS):
        return True  # (the walk makes nodes of the notebook's classes only)
    if _random_kind(obj) is not None:
        return True
    if t in _NAMESPACES:
        return True
    return kind in (objgraph.OBJ, objgraph.FRAME) and pure_python(t) and by_state(t)


def by_state(t: type) -> bool:
    """Whether pickle rebuilds a `t` as an empty instance given its state, which can be
    given to the object itself. A class with its own `__reduce__` (a plotly figure,
    made again from its dict) builds a new object whose parts are all new: giving the
    old one their state would leave its holders with parts no longer its own."""
    # (typeshed types a method got from a class and from object differently)
    return t.__reduce__ is object.__reduce__ and t.__reduce_ex__ is object.__reduce_ex__  # type: ignore[comparison-overlap]


def _array_type(t: type) -> bool:
    """ndarray, or a subclass written in Python (astropy's Column too: `serialize`
    pickles a subclass with its whole instance dict, whatever its own pickling keeps)."""
    np = sys.modules["numpy"]
    if t is np.ndarray:
        return True
    mro = t.__mro__
    return all(b.__flags__ & _HEAPTYPE for b in mro[: mro.index(np.ndarray)])


def raw_state(t: type) -> bool:
    """Whether an object of a `t` restored in place can be given its instance dict and
    slots themselves rather than its class's pickled state (`unit.StateOf` in raw
    mode): a pure-Python class with a `__getstate__` or `__setstate__` of its own (but
    frames, which are leaves). Such a `__setstate__` may build the object's parts anew
    (astropy's Table copies its columns), where the unit restores each part in place;
    but a `__getstate__` may also leave out what belongs to the process (astropy's
    units drop their hash), so the raw state is only the unit's second choice."""
    if objgraph.kind_of(t) != objgraph.OBJ or hasattr(t, "__getnewargs_ex__"):
        return False
    if not (pure_python(t) and by_state(t)):
        return False
    # (object.__getstate__ is new in Python 3.11: before it, neither attribute need exist)
    own = getattr(t, "__getstate__", None)
    return hasattr(t, "__setstate__") or own is not getattr(object, "__getstate__", None)


# An instance dict (None: instances have none) and the set slots (`raw_of`).
RawState: TypeAlias = tuple["dict[str, Any] | None", dict[str, Any]]


def raw_of(obj: Any) -> RawState:
    """The instance dict and the set slots of `obj` (see `raw_state`)."""
    t = type(obj)
    attrs = object.__getattribute__(obj, "__dict__") if t.__dictoffset__ else None
    slots = {}
    for name in objgraph.slot_names(t):
        try:
            slots[name] = object.__getattribute__(obj, name)
        except AttributeError:  # unset
            pass
    return attrs, slots


def set_raw(obj: Any, state: RawState) -> None:
    """Give `obj` the dict and slots of `raw_of` (a pickle state setter too)."""
    attrs, slots = state
    if attrs is not None:
        object.__getattribute__(obj, "__dict__").update(attrs)
    for name, value in slots.items():
        object.__setattr__(obj, name, value)


def problem(target: Any, fresh: Any) -> str | None:
    """Why `restore(target, fresh)` would fail, or None: asked of every object of a hit
    before any is restored, so that a hit restores all of them or none."""
    if isinstance(target, type):
        if isinstance(fresh, (type, ClassState)):
            return None
        return f"a class is here where a {type(fresh).__name__} was"
    if type(fresh) is not type(target):
        return f"a {type(target).__name__} is here where a {type(fresh).__name__} was"
    kind = objgraph.kind_of(type(target))
    if kind == objgraph.ARRAY:
        if target.shape != fresh.shape or target.dtype != fresh.dtype:
            return f"an array of shape {target.shape} is here where one of {fresh.shape} was"
        if not target.flags.writeable and not _can_write(target):
            return "an array the step changed is read-only here"
    elif isinstance(target, deque) and target.maxlen != fresh.maxlen:
        return "a deque with another maxlen is here"
    elif _random_kind(target) == "generator":
        if type(target.bit_generator) is not type(fresh.bit_generator):
            return "a Generator over another bit generator is here"
    return None


def restore(target: Any, fresh: Any, raw: bool = False) -> None:
    """Give `target` the state of `fresh`, an object of the same type (`problem` says
    when it cannot); `raw`: fresh was made from the raw state of its class, where
    `raw_state` says so (the unit's objects)."""
    if fresh is target:  # restored by reference: it is already what it should be
        return
    kind = objgraph.kind_of(type(target))
    if kind in _CONTAINERS:
        _CONTAINERS[kind](target, fresh)
        if type(target).__dictoffset__:
            _replace_dict(target, fresh)
    elif kind == objgraph.ARRAY:
        _array(target, fresh)
    elif kind == objgraph.CELL:
        _cell(target, fresh)
    elif kind == objgraph.FUNC:
        _function(target, fresh)
    elif kind == objgraph.CLASS:
        _class(target, fresh)
    elif _random_kind(target) is not None:
        _generator(target, fresh)
    elif raw and raw_state(type(target)):
        _clear_instance(target)
        set_raw(target, raw_of(fresh))
    else:
        _instance(target, fresh)


def runs_code(target: Any, raw: bool = False) -> bool:
    """Whether `restore(target, ..., raw)` gives `target` its state through its class's
    own `__setstate__` (which may look at the objects the state holds)."""
    t = type(target)
    kind = objgraph.kind_of(t)
    if kind in _CONTAINERS or kind in (objgraph.ARRAY, objgraph.CELL, objgraph.FUNC):
        return False
    if kind == objgraph.CLASS:
        return False
    if _random_kind(target) is not None or (raw and raw_state(t)):
        return False
    return getattr(t, "__setstate__", None) is not None


def _seq(target: Any, fresh: Any) -> None:
    if isinstance(target, deque):
        target.clear()
        target.extend(fresh)
    else:
        list.__setitem__(target, slice(None), list.__getitem__(fresh, slice(None)))


def _map(target: Any, fresh: Any) -> None:
    if isinstance(target, OrderedDict):  # its order lives beside the dict: its own methods
        OrderedDict.clear(target)
        OrderedDict.update(target, dict.items(fresh))
    else:
        dict.clear(target)
        dict.update(target, dict.items(fresh))
    if isinstance(target, defaultdict):
        target.default_factory = fresh.default_factory


def _set(target: Any, fresh: Any) -> None:
    set.clear(target)
    set.update(target, fresh)


def _bytes(target: Any, fresh: Any) -> None:
    bytearray.__setitem__(target, slice(None), fresh)


_CONTAINERS = {objgraph.SEQ: _seq, objgraph.MAP: _map, objgraph.SET: _set, objgraph.BYTES: _bytes}


def _array(target: Any, fresh: Any) -> None:
    np = sys.modules["numpy"]
    target.flags.writeable = True  # (`problem` checked it can be) as the live run wrote it
    np.copyto(target.view(np.ndarray), fresh.view(np.ndarray), casting="no")
    if not fresh.flags.writeable:
        target.flags.writeable = False
    if type(target).__dictoffset__:  # a subclass's attributes (a Quantity's unit)
        _replace_dict(target, fresh)


def _can_write(arr: Any) -> bool:
    """Whether a read-only array can be made writable (its memory is writable: a value
    restored read-only by a library's own pickling, where the live one was not)."""
    try:
        arr.flags.writeable = True
    except ValueError:
        return False
    arr.flags.writeable = False
    return True


def _cell(target: Any, fresh: Any) -> None:
    try:
        target.cell_contents = fresh.cell_contents
    except ValueError:  # the cell was emptied (`del` of the closed-over name)
        del target.cell_contents


def _function(target: types.FunctionType, fresh: types.FunctionType) -> None:
    if target.__code__ is not fresh.__code__ and target.__code__ != fresh.__code__:
        target.__code__ = fresh.__code__
    target.__defaults__ = fresh.__defaults__
    target.__kwdefaults__ = fresh.__kwdefaults__
    for name in _NAMES:  # (what a step may set beside the code: `f.__doc__ = ...`)
        setattr(target, name, getattr(fresh, name))
    _replace_dict(target, fresh)


_NAMES = ("__name__", "__qualname__", "__doc__", "__module__")


class ClassState:
    """The attributes a class had after a step (`class_attrs`), as its own attributes:
    the state a unit gives a notebook class in place (not a class of its own: making
    one would run its bases' `__init_subclass__` and add it to their subclasses)."""

    def __init__(self, attrs: dict[str, Any]) -> None:
        self.__dict__.update(attrs)


def class_attrs(cls: type) -> dict[str, Any]:
    """A class's attributes: its dict but what `type()` makes (the instance dict and
    weakref descriptors, the slots' descriptors) and the caches of copyreg and abc."""
    return {
        k: v
        for k, v in vars(cls).items()
        if k not in objgraph.CLASS_SKIP
        and not isinstance(v, (types.MemberDescriptorType, types.GetSetDescriptorType))
    }


def _class(target: type, fresh: Any) -> None:
    """Give a class the attributes of `fresh` (a `ClassState`, or a copy of the class):
    set those that are other objects, delete those it no longer has."""
    new = class_attrs(fresh) if isinstance(fresh, type) else dict(vars(fresh))
    own = class_attrs(target)
    for k in own.keys() - new.keys():
        delattr(target, k)
    for k, v in new.items():
        if own.get(k, _MISSING) is not v:
            setattr(target, k, v)


_MISSING = object()


def _generator(target: Any, fresh: Any) -> None:
    kind = _random_kind(target)
    if kind == "random":
        target.setstate(fresh.getstate())
        if type(target).__dictoffset__:
            _replace_dict(target, fresh)
    elif kind == "generator":
        target.bit_generator.state = fresh.bit_generator.state
    elif kind == "randomstate":
        target.set_state(fresh.get_state())
    else:
        target.state = fresh.state


def _instance(target: Any, fresh: Any) -> None:
    """As pickle builds an object: an empty instance, then its state, so that a class's
    `__setstate__` (pandas builds its flags there) runs on the object itself."""
    rv = fresh.__reduce_ex__(5)
    by_state = (
        isinstance(rv, tuple)
        and rv[0] is _NEWOBJ
        and rv[1] == (type(target),)
        and len(rv) > 2
        and getattr(type(target), "__setstate__", None) is not None
    )
    _clear_instance(target)
    if by_state:
        target.__setstate__(rv[2])
        return
    if type(target).__dictoffset__:
        object.__getattribute__(target, "__dict__").update(
            object.__getattribute__(fresh, "__dict__")
        )
    for name in objgraph.slot_names(type(target)):
        try:
            object.__setattr__(target, name, object.__getattribute__(fresh, name))
        except AttributeError:  # unset in fresh
            pass


def _clear_instance(target: Any) -> None:
    if type(target).__dictoffset__:
        object.__getattribute__(target, "__dict__").clear()
    for name in objgraph.slot_names(type(target)):
        try:
            object.__delattr__(target, name)
        except AttributeError:  # already unset
            pass


def _replace_dict(target: Any, fresh: Any) -> None:
    attrs = object.__getattribute__(target, "__dict__")
    attrs.clear()
    attrs.update(object.__getattribute__(fresh, "__dict__"))
