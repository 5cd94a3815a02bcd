"""The unit of an entry: the values of a step that share objects, as one pickle stream.

`dump_payload(payload_of(plan), Writer(plan))` pickles `{"bind": {name: value},
"inplace": [(object, its new state)]}` (see `StoragePlan`) in one stream, so that an object reached twice is one object when
loaded. Three kinds of objects are written as persistent ids instead of by value:

    ("r", path, type)                 an object the step's inputs held before it ran:
                                      in the serving kernel, the object at that path
    ("v", n, path, offset, shape, strides, dtype, writeable)
                                      an array viewing the memory of an input array (at
                                      `path`): rebuilt over that memory, at the same byte
                                      offset from it, with the same strides
    ("w", n, base, offset, shape, strides, dtype, writeable)
                                      an array viewing memory that several of the unit's
                                      arrays view: `base` is that memory (the owning
                                      array when the unit has it, else only the bytes
                                      they view), pickled once, out of band

An array met twice is one array: `n` numbers the arrays of the stream (persistent ids
bypass pickle's memo).

The payload also carries the attributes the step set on the notebook's modules
(`module_attrs`). `load` resolves the ids against the input names' values in the serving
kernel, taken before anything of the entry is bound; a path that leads nowhere, or to
an object of another type, raises Unfaithful (the hit becomes a miss). `apply` restores
the states in place, sets the module attributes, then binds the names.
"""

from __future__ import annotations

import copyreg
import logging
import pickle
import sys
import types
from collections.abc import Callable, Mapping
from typing import Any, SupportsIndex, TypeAlias

import xxhash

from ...errors import Unfaithful
from ...storage import serialize
from ...storage.deferred import Batch, Check
from ...storage.entries import Stream
from ...storage.store import Store
from ..objects import inplace, objgraph
from ..state import module_attrs
from .layout import Handed, Payload, StoragePlan

log = logging.getLogger(__name__)
# The kinds of persistent ids (the first item of each; see the module docstring).
REF = "r"  # an object of the inputs, by its path
VIEW = "v"  # an array over an input array's memory
SHARED_VIEW = "w"  # an array over memory several of the unit's arrays view
# A persistent id: one of the tuples above (their shapes differ by kind).
PersistentId: TypeAlias = tuple[Any, ...]
# copyreg's constructors of `__reduce_ex__`'s protocol 2 (missing from typeshed's copyreg)
_NEWOBJ = copyreg.__newobj__  # type: ignore[attr-defined]
_NEWOBJ_EX = copyreg.__newobj_ex__  # type: ignore[attr-defined]


class StateOf:
    """An object of the inputs, pickled as its state (a new object equal to it) rather
    than as a reference to it: the state `inplace.restore` gives it on a hit."""

    __slots__ = ("target", "raw")

    def __init__(self, target: Any, raw: bool = False) -> None:
        self.target = target
        self.raw = raw  # its instance dict itself, where `inplace.raw_state` allows

    def __reduce_ex__(self, protocol: SupportsIndex) -> str | tuple[Any, ...]:
        t = self.target
        if isinstance(t, types.FunctionType):
            return serialize.function_reduce(t)
        if isinstance(t, type):  # a notebook class: its attributes
            return inplace.ClassState, (inplace.class_attrs(t),)
        if isinstance(t, types.CellType):
            try:
                return _full_cell, (t.cell_contents,)
            except ValueError:  # an empty cell
                return _empty_cell, ()
        np = sys.modules.get("numpy")
        if np is not None and isinstance(t, np.ndarray) and type(t) is not np.ndarray:
            arr_rv: tuple[Any, ...] = serialize.array_subclass_reduce(t)  # (whole instance dict)
            if arr_rv is not NotImplemented:
                return arr_rv
        if self.raw and inplace.raw_state(type(t)):
            args = tuple(t.__getnewargs__()) if hasattr(t, "__getnewargs__") else ()
            return (_new_object, (type(t), *args), inplace.raw_of(t), None, None, inplace.set_raw)
        rv: str | tuple[Any, ...] = t.__reduce_ex__(protocol)
        if isinstance(rv, tuple) and rv[0] is _NEWOBJ:
            # pickle checks that __newobj__ makes an object of the pickled one's class,
            # which here is StateOf's: the same call, under another name
            return (_new_object, *rv[1:])
        if isinstance(rv, tuple) and rv[0] is _NEWOBJ_EX:
            return (_new_object_ex, *rv[1:])
        return rv


def _new_object(cls: type, *args: Any) -> Any:
    return cls.__new__(cls, *args)


def _new_object_ex(cls: type, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return cls.__new__(cls, *args, **kwargs)


def _full_cell(contents: Any) -> types.CellType:
    return types.CellType(contents)


def _empty_cell() -> types.CellType:
    return types.CellType()


FALLBACKS = 1000  # references with a fallback in one unit, at most
FALLBACK_ITEMS = 1000  # items of a container whose reference carries a fallback, at most
FALLBACK_BYTES = 64 << 10  # bytes of an array whose reference carries a fallback, at most
_SMALL_KINDS = frozenset({objgraph.SEQ, objgraph.MAP, objgraph.SET, objgraph.OBJ})


def _size(obj: Any) -> int | None:
    """How many items or attributes `obj` has, for the fallback's limit; None when its
    class's own `__len__` fails (an unfitted scikit-learn ensemble's raises
    AttributeError): that says nothing about pickling it, so no fallback, no refusal."""
    if isinstance(obj, type):
        return 0
    try:
        return len(obj)
    except TypeError:
        return len(getattr(obj, "__dict__", ()))
    except Exception:
        log.debug("len() of a %s failed", type(obj).__name__, exc_info=True)
        return None


class Writer:
    """The persistent ids of one unit's stream: references into `graph` (the inputs'
    graph by default), with at most `fallbacks` fallbacks."""

    def __init__(
        self, plan: StoragePlan, graph: objgraph.Graph | None = None, fallbacks: int = FALLBACKS
    ) -> None:
        old, post = plan.graphs()  # a unit's plan: made by the sharing analysis
        self.old = graph if graph is not None else old
        self.fallbacks = fallbacks  # objects that may carry a fallback
        self.post = post
        self.replaced = plan.replaced
        self.paths: dict[int, objgraph.Path] = {}
        self.roots: set[str] = set()
        self.plain: set[int] = set()  # arrays pickled as themselves
        self.bases: dict[int, tuple[Any, int]] = {}  # id(owner) -> (base, its address)
        self.numbers: dict[int, int] = {}  # id(array) -> its number in the stream
        self.np = sys.modules.get("numpy")
        self.fallen: set[int] = set()  # objects whose reference carries a fallback
        self.nested = False  # pickling a fallback: references inside it carry none

    @property
    def pid(self) -> Callable[[Any], PersistentId | None]:
        """The persistent id of an object (None: pickle it), as a closure over its
        lookups: pickle asks it of every object of the stream, each int and string
        included, and a closure's call costs half of an instance's `__call__`. Made
        anew for each stream, never kept: kept, it would hold this writer in a cycle,
        and with it the graphs and the objects they reach (values the step replaced)
        until the garbage collector ran."""
        nodes, replaced, plain = self.old.nodes, self.replaced, self.plain
        ref, array = self._ref, self._array
        ndarray = self.np.ndarray if self.np is not None else _NoArray
        atomic = objgraph.NO_IDENTITY  # never a node of a graph (nor an array): no id() asked

        def pid(obj: Any) -> PersistentId | None:
            if type(obj) in atomic:
                return None
            oid = id(obj)
            if oid in nodes and oid not in replaced:
                return ref(obj, oid)
            if type(obj) is ndarray and oid not in plain:
                return array(obj, oid)
            return None

        return pid

    def _ref(self, obj: Any, oid: int) -> PersistentId:
        return (REF, self._path(oid), type(obj).__qualname__, *self._fallback(obj, oid))

    def _fallback(self, obj: Any, oid: int) -> tuple[()] | tuple[bytes, list[bytes]]:
        """(the object's state, pickled) to make it anew where the serving kernel's
        inputs no longer hold it (a library's pickling that drops or converts internal
        objects: a value a hit restored is then not laid out as the live one was); or
        () for frames, arrays and containers that are not small, objects met before
        and ones inside a fallback (their own references carry none)."""
        if self.nested or oid in self.fallen or len(self.fallen) >= self.fallbacks:
            return ()
        kind = objgraph.kind_of(type(obj))
        if kind == objgraph.ARRAY:
            if obj.nbytes > FALLBACK_BYTES:
                return ()
        elif kind not in _SMALL_KINDS:
            return ()
        else:
            size = _size(obj)
            if size is None or size > FALLBACK_ITEMS:  # (an empty one has size 0)
                return ()
        self.fallen.add(oid)
        self.nested = True
        try:
            main, buffers = serialize.dumps(StateOf(obj), "a fallback", persistent_id=self.pid)
        except Exception:  # no fallback: the reference alone, as before
            log.debug("no fallback for a %s in a unit", type(obj).__name__, exc_info=True)
            return ()
        finally:
            self.nested = False
        return (main, [bytes(b.raw()) for b in buffers])

    def _path(self, oid: int) -> objgraph.Path:
        path = self.paths.get(oid)
        if path is None:
            path = self.paths[oid] = self.old.path(oid)
            self.roots.add(path[0])
        return path

    def _array(self, arr: Any, oid: int) -> PersistentId | None:
        owner = objgraph.memory_owner(arr)
        key = id(owner)
        spec = (arr.shape, arr.strides, arr.dtype, bool(arr.flags.writeable))
        n = self.numbers.setdefault(oid, len(self.numbers))
        if key in self.old.owners:
            over = _covering(self.old, self.old.owners[key], arr, self.replaced)
            if over is None:
                return None
            rel = objgraph.address(arr) - objgraph.address(over[0])
            return (VIEW, n, self._path(over[1]), rel, *spec)
        arrays = self.post.owners.get(key, [])
        if oid not in self.post.nodes or len(arrays) < 2:
            return None
        if arr is owner:
            self.plain.add(oid)
            return None
        base, start = self._base(owner, arrays)
        return (SHARED_VIEW, n, base, objgraph.address(arr) - start, *spec)

    def _base(self, owner: Any, arrays: list[int]) -> tuple[Any, int]:
        """The owner itself when the unit has it, else the bytes of it the unit's arrays
        view (one array, kept for the whole stream)."""
        key = id(owner)
        if key not in self.bases:
            if key in self.post.nodes:
                self.plain.add(key)
                self.bases[key] = (owner, objgraph.address(owner))
            else:
                lo, hi = objgraph.span([self.post.nodes[a][0] for a in arrays])
                region = _bytes_of(owner)[
                    lo - objgraph.address(owner) : hi - objgraph.address(owner)
                ]
                self.plain.add(id(region))
                self.bases[key] = (region, lo)
        return self.bases[key]


class _NoArray:
    """Stands for numpy's ndarray in a kernel without numpy: no object is one."""


def _covering(
    graph: objgraph.Graph, arrays: list[int], arr: Any, replaced: set[int]
) -> tuple[Any, int] | None:
    """(input array, its id) over the memory `arr` views, one containing `arr` if any."""
    lo, hi = objgraph.span([arr])
    best = None
    for a in arrays:
        if a in replaced:
            continue
        obj = graph.nodes[a][0]
        alo, ahi = objgraph.span([obj])
        if alo <= lo and hi <= ahi:
            return obj, a
        best = best or (obj, a)
    return best


def _bytes_of(owner: Any) -> Any:
    np = sys.modules["numpy"]
    if not (owner.flags.c_contiguous or owner.flags.f_contiguous):
        raise Unfaithful("an array", "it views memory laid out in a way that cannot be stored", "")
    return owner.reshape(-1, order="A").view(np.uint8)


def payload_of(plan: StoragePlan, raw: bool = False, handed: list[Handed] | None = None) -> Payload:
    """What the stream holds: the names it binds, the objects it restores in place with
    their states (`rooted`: those that are the values of names; `raw`: the states are
    the instance dicts themselves, see `StateOf`; `handed`: those a class's own code is
    given, `keep/own_code.py`), the module attributes set, and the paths of the objects
    it replaces (`replaced.py` checks them on a hit)."""
    graph = plan.graphs()[0]  # a unit's plan: made by the sharing analysis
    return {
        "bind": plan.unit_bind,
        "inplace": [(obj, StateOf(obj, raw)) for obj in plan.unit_inplace],
        "raw": raw,
        "rooted": [i for i, o in enumerate(plan.unit_inplace) if graph.nodes[id(o)][1] is None],
        "modules": plan.modules,
        "orphans": orphans(plan),
        "handed": list(handed or []),
        "aliases": dict(plan.aliases),
    }


def orphans(plan: StoragePlan, whole: frozenset[str] = frozenset()) -> list[objgraph.Path]:
    """The paths of the objects of the inputs a payload replaces (but drawings, whose
    parts are rebound whole, and the objects of the changed inputs `whole`, which a
    by-value copy checks as they are)."""
    graph = plan.graphs()[0]
    return [
        graph.path(oid)
        for oid in plan.replaced
        if objgraph.kind_of(type(graph.nodes[oid][0])) != objgraph.DRAWING
        and graph.root[oid] not in whole
    ]


def dump_payload(
    payload: Payload, writer: Writer, name: str
) -> tuple[bytes, list[pickle.PickleBuffer], list[str], set[str]]:
    """(pickle stream, out-of-band buffers, the input names its references start from,
    the roots whose inner objects (more than the root's own value) it refers to).
    Raises Unstorable."""
    main, buffers = serialize.dumps(payload, name, persistent_id=writer.pid)
    inner = {p[0] for p in writer.paths.values() if len(p) > 1}
    return main, buffers, sorted(writer.roots), inner


def put_stream(
    store: Store,
    main: bytes,
    buffers: list[pickle.PickleBuffer],
    roots: list[str],
    inner: list[str] | None = None,
    names: list[str] | None = None,
    later: Batch | None = None,
) -> Stream:
    """Store a stream under the digest of its bytes; `inner` or `names` say what it is
    (a unit, or a by-value copy: see `storage.entries.Stream`). With `later`, a large
    stream is written behind, its bytes checked against that digest."""
    h = xxhash.xxh3_128(main)
    for b in buffers:
        h.update(b.raw())
    name = h.hexdigest()
    written = Check(main, name)
    value = store.put_pickled(name, main, buffers, "shared values", later=later, written=written)
    return Stream(value, list(roots), list(inner or []), list(names or []))


def roots_of(ref: Stream, ns: dict[str, Any]) -> dict[str, Any]:
    """The values the unit's references start from (names, or attribute chains from
    one), taken before anything is bound."""
    roots = {}
    for r in ref.roots:
        try:
            roots[r] = objgraph.lookup(ns, r)
        except (KeyError, AttributeError):
            raise Unfaithful(r, "it is not defined here") from None
    return roots


def resolver(
    ref: Callable[[PersistentId], Any],
    find: Callable[[objgraph.Path], Any],
    read_only: bool = False,
) -> Callable[[PersistentId], Any]:
    """The one decoder of the stream's persistent ids: `ref(pid)` gives the object of a
    reference, `find(path)` the input's object at a path; an array met twice is one
    array. `read_only`: arrays over the inputs' memory are read-only views (a load back
    that must never write)."""
    arrays: dict[int, Any] = {}

    def resolve(pid: PersistentId) -> Any:
        if pid[0] == REF:
            return ref(pid)
        if pid[1] not in arrays:
            spec = (*pid[:-1], False) if read_only else pid
            arrays[pid[1]] = array_of(spec, find)
        return arrays[pid[1]]

    return resolve


def load(ref: Stream, store: Store, roots: dict[str, Any]) -> Payload:
    """The unit's payload, its references resolved against `roots`."""
    made: dict[objgraph.Path, Any] = {}  # path -> the object made from its fallback

    def reference(pid: PersistentId) -> Any:
        if pid[1] in made:
            return made[pid[1]]
        try:
            return _resolve_ref(pid[1], pid[2], roots)
        except objgraph.PATH_ERRORS:
            if len(pid) < 5:
                raise
        made[pid[1]] = serialize.loads(pid[3], pid[4], persistent_load=checked)
        return made[pid[1]]

    decode = resolver(reference, lambda path: objgraph.resolve(path, roots))

    def checked(pid: PersistentId) -> Any:
        try:
            return decode(pid)
        except objgraph.PATH_ERRORS as err:
            where = {REF: pid[1], VIEW: pid[2]}.get(pid[0], ["an array"])[0]
            raise Unfaithful(str(where), f"an object it held is not where it was ({err})") from None

    payload: Payload = store.get_value(ref.value, persistent_load=checked)
    return payload


def replaced_by(payload: Payload, roots: dict[str, Any], ns: Mapping[str, Any]) -> dict[str, Any]:
    """The objects the payload replaces, in this kernel (label -> object): those its
    paths still lead to, from the unit's roots or, for an input the stream does not
    refer to (a changed object it holds a new one of: `next(counter)`), from `ns` as it
    was before the hit bound anything."""
    out: dict[str, Any] = {}
    for path in payload.get("orphans", ()):
        try:
            label = path[0] if path[0] not in out else f"{path[0]} ({len(out)})"
            out[label] = _replaced(path, roots, ns)
        except objgraph.PATH_ERRORS:
            continue  # nothing there to be left holding the old one
    return out


def unalias(payload: Payload, roots: dict[str, Any], ns: Mapping[str, Any]) -> None:
    """Leave alone the names the payload binds only because, live, they held an object
    it replaces (`b = c` before `next(c)`), where they no longer hold that object here
    (`b = 2` since): the step's change would not have reached them. `ns`: the namespace
    as it was before the hit bound anything."""
    for name, path in payload.get("aliases", {}).items():
        try:
            old = _replaced(path, roots, ns)
        except objgraph.PATH_ERRORS:
            old = _NOTHING
        if ns.get(name, _NOTHING) is not old:
            payload["bind"].pop(name, None)


_NOTHING = object()


def _replaced(path: objgraph.Path, roots: dict[str, Any], ns: Mapping[str, Any]) -> Any:
    """The object at the path of one the payload replaces: from the unit's roots, or
    from `ns` for an input the stream does not refer to (errors as `objgraph.resolve`)."""
    start = roots if path[0] in roots else {path[0]: objgraph.lookup(ns, path[0])}
    return objgraph.resolve(path, start)


def _resolve_ref(path: objgraph.Path, type_name: str, roots: dict[str, Any]) -> Any:
    obj = objgraph.resolve(path, roots)
    if type(obj).__qualname__ != type_name:
        raise TypeError(f"{type(obj).__qualname__} instead of {type_name}")
    return obj


def array_of(pid: PersistentId, find: Callable[[objgraph.Path], Any]) -> Any:
    """The array of a persistent id `VIEW` or `SHARED_VIEW`; `find(path)` is the
    input's object at a path."""
    np = sys.modules["numpy"]
    if pid[0] == VIEW:
        over = find(pid[2])
        owner = objgraph.memory_owner(over)
        offset = objgraph.address(over) - objgraph.address(owner) + pid[3]
        buffer = owner
    elif pid[0] == SHARED_VIEW:
        buffer, offset = pid[2], pid[3]
    else:
        raise ValueError(f"unknown reference {pid[0]!r}")
    shape, strides, dtype, writeable = pid[4:]
    arr = np.ndarray(shape, dtype, buffer=buffer, offset=offset, strides=strides)
    if arr.flags.writeable != writeable:
        try:  # a library's own pickling may restore writable memory as read-only
            arr.flags.writeable = writeable
        except ValueError:
            raise ValueError("the memory it views is read-only here") from None
    return arr


def apply(payload: Payload, ns: dict[str, Any]) -> None:
    """Restore the unit's states in place, set the module attributes, bind its names.
    Objects whose class's own `__setstate__` gives them their state go last, the ones
    the walk met last first: such code may look at the objects it holds (a count of a
    list), which must have their new states by then, as they had live."""
    raw = payload.get("raw", False)
    later = []
    for target, fresh in payload["inplace"]:
        if inplace.runs_code(target, raw):
            later.append((target, fresh))
        else:
            inplace.restore(target, fresh, raw=raw)
    for target, fresh in reversed(later):
        inplace.restore(target, fresh, raw=raw)
    module_attrs.apply(payload["modules"])
    ns.update(payload["bind"])
