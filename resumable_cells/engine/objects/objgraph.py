"""The object graph behind names: which objects a value holds that another name could
hold too, and the path from a name to each of them.

A node is an object whose identity can be seen through a mutation: lists, dicts, sets,
bytearrays and deques (and their subclasses), numpy arrays (with the memory they view:
their *owner*, the last array down their `.base` chain), pandas objects (whole: under
copy-on-write their parts are not shared), matplotlib artists (whole, with the figure
they belong to: their *drawing*), instances with attributes, notebook functions (with
their defaults) and their closure cells, the notebook's classes (their attributes and bases: a step may set
an attribute, or change one in place, `C.seen.append(1)`, through a subclass too), and any other object the walk does not know
(a leaf: a random generator, a connection). Tuples, bound methods and a class's
staticmethods, classmethods and properties are walked through but are not nodes (they
cannot be mutated, or are made anew on each access). A view of a dict (a mapping proxy,
`d.keys()`) and an iterator over a list are nodes whose child is the dict or list they
show. Not walked at all: atomic values,
other classes, modules, library functions and enum members, which are global (pickle
restores them by name, so their identity survives anyway).

A path is `(name, step, step, ...)`: `("i", 3)` an item of a sequence, `("k", key)` the
value of a dict under an atomic key, `("p", n)` the n-th value of a dict, `("a", name)`
an attribute in the instance dict (or a class's), `("s", name)` a slot, `("c", n)` a
closure cell, `("D", n)` and `("K", name)` a function's default and keyword default,
`("x",)` a cell's contents, `("m",)` a bound method's object, `("w",)` a
weak reference's referent, `("v",)` the dict a view shows (or the list an iterator runs over), `("e", n)` an element of an object array, `("d", "fget")`
what a staticmethod, classmethod or property wraps (or a `partial`'s function, arguments
and keywords: `("d", "args")`), `("b", n)` a class's base. `resolve` follows one
in another kernel, where the key guarantees that the same names hold equal values.

The walk is iterative, visits each object once, and stops after `limit` nodes (the
graph then says which names it did not finish).
"""

from __future__ import annotations

import enum
import functools
import gc
import itertools
import logging
import sys
import types
import weakref
from collections import deque
from collections.abc import Iterable, Mapping
from itertools import compress, repeat
from operator import is_, is_not, not_
from typing import Any, TypeAlias

from ...hashing.objects import VIEW_TYPES, viewed
from ...hashing.registry import PROCESS_TYPES, process_token

log = logging.getLogger(__name__)

# One step of a path (`("i", 3)`, `("a", "x")`, `("x",)`) and a path: the root's name,
# then steps. Tuples of varying shape, hence `tuple[Any, ...]`.
Step: TypeAlias = tuple[Any, ...]
Path: TypeAlias = tuple[Any, ...]
# What the graph records of a node, and what the walk stacks: (object, parent id, step).
Node: TypeAlias = tuple[Any, "int | None", Step]

# Values whose identity no mutation can show: never nodes. A set, not a frozenset: the
# immutable values of libraries (numpy scalars, dates, decimals) join it when first met,
# so that the checks of whole containers at C speed (`set(map(type, x)) <= NO_IDENTITY`) pass
# over them.
NO_IDENTITY = {str, bytes, int, float, complex, bool, type(None), range, slice, type(Ellipsis)}
NO_IDENTITY |= {type(NotImplemented), types.CodeType}
_IMMUTABLE_MODULES = frozenset({"datetime", "decimal", "fractions", "uuid", "ipaddress", "re"})
_KEYS = frozenset({str, bytes, int, bool, type(None)})

SKIP, SEQ, TUPLE, MAP, SET, BYTES, ARRAY, FRAME, FUNC, CELL, METHOD, OBJ, DRAWING = range(13)
CLASS, WRAPPER = 13, 14  # a class; a staticmethod, classmethod or property of one


class _Indexed:
    """A sequence known only by `__getitem__`: `iter()` of it is the iterator Python
    makes for any such sequence, numpy's arrays among them."""

    def __getitem__(self, i: int) -> Any:
        raise IndexError(i)


# Iterators over any sequence, whose one referent is that sequence (until exhausted).
_SEQUENCE_ITERATORS = frozenset({type(iter(_Indexed())), type(iter(()))})
# Objects that show another (their one referent): a mapping proxy and a dict's keys,
# values and items show the dict; an iterator over a list runs over the list, which a
# later cell may extend, and one over an array or a tuple over that object, which a
# later cell may change. Each is a node of its own (an iterator's position changes),
# and the object it shows is walked as its child.
_SHOWS: frozenset[type] = VIEW_TYPES | {type(iter([])), type(reversed([]))} | _SEQUENCE_ITERATORS
NODE_KINDS = frozenset({SEQ, MAP, SET, BYTES, ARRAY, FRAME, FUNC, CELL, OBJ, DRAWING, CLASS})
_GLOBAL_TYPES: tuple[type, ...] = (type, types.ModuleType, types.BuiltinFunctionType, enum.Enum)
_GLOBAL_TYPES += (types.MethodDescriptorType, types.WrapperDescriptorType)
_KINDS: dict[type, int] = {}
_PLAIN = frozenset({list, dict, tuple, set, bytearray})  # no attributes, no slots
# What a class holds beside its attributes (made again by `type()`, or caches): not walked.
CLASS_SKIP = frozenset(
    {"__dict__", "__weakref__", "__module__", "__qualname__", "__slotnames__", "_abc_impl"}
)
_SLOT_DESCRIPTORS = (types.MemberDescriptorType, types.GetSetDescriptorType)
_WRAPPERS = (staticmethod, classmethod, property, functools.cached_property)
_WRAPPED = ("__func__", "fget", "fset", "fdel", "func")  # what a wrapper holds
# Objects whose parts are not attributes (C slots) but that hold the notebook's objects:
# type -> the attributes that give them. A `partial(train, data)` holds `data`.
_HOLDS: dict[type, tuple[str, ...]] = {functools.partial: ("func", "args", "keywords")}
_HELD = frozenset(_WRAPPED).union(*_HOLDS.values())
_OBJECT_ARRAY_MAX = 100_000  # elements of an object array walked one by one
_ROWS = 64  # children of a container from which leaves are recorded at once (`_rows`)
_ROW_TYPES = frozenset({dict, list, tuple})


def kind_of(t: type) -> int:
    """How the walk treats values of type `t` (cached per type)."""
    k = _KINDS.get(t)
    if k is None:
        k = _KINDS[t] = _classify(t)
    return k


def _classify(t: type) -> int:
    if issubclass(t, type):
        return CLASS
    if issubclass(t, _WRAPPERS):
        return WRAPPER
    if t in NO_IDENTITY or issubclass(t, _GLOBAL_TYPES):
        return SKIP
    if _immutable(t):
        NO_IDENTITY.add(t)
        return SKIP
    for base, kind in ((tuple, TUPLE), (list, SEQ), (dict, MAP), (set, SET), (frozenset, SKIP)):
        if issubclass(t, base):
            return kind
    if issubclass(t, bytearray):
        return BYTES
    if t is types.FunctionType:
        return FUNC
    if t is types.CellType:
        return CELL
    if t is types.MethodType:
        return METHOD
    np = sys.modules.get("numpy")
    if np is not None and issubclass(t, np.ndarray):
        return ARRAY
    pd = sys.modules.get("pandas")
    if pd is not None and issubclass(t, (pd.DataFrame, pd.Series, pd.Index)):
        return FRAME
    artist = sys.modules.get("matplotlib.artist")
    if artist is not None and issubclass(t, artist.Artist):
        return DRAWING
    if issubclass(t, deque):
        return SEQ
    return OBJ


def _immutable(t: type) -> bool:
    """Library values that cannot change: numpy scalars and dtypes, dates and times,
    decimals, fractions, UUIDs, IP addresses, compiled patterns."""
    if t.__module__ in _IMMUTABLE_MODULES:  # their own types (a subclass has another module)
        return t.__module__ != "re" or t.__name__ == "Pattern"
    np = sys.modules.get("numpy")
    return np is not None and issubclass(t, (np.generic, np.dtype))


def drawing_root(artist: Any) -> Any:
    """The figure a matplotlib artist (an axes, a line, a subfigure) belongs to: the
    whole drawing is one thing, restored together (the artist itself when it is in no
    figure)."""
    get = getattr(artist, "get_figure", None)
    try:
        root = get(root=True) if get is not None else None
    except TypeError:  # matplotlib before 3.10: `figure` is already the root
        root = getattr(artist, "figure", None)
    return artist if root is None else root


def memory_owner(arr: Any) -> Any:
    """The array at the end of `arr`'s `.base` chain: the one whose memory it views."""
    np = sys.modules["numpy"]
    while isinstance(arr.base, np.ndarray):
        arr = arr.base
    return arr


def address(arr: Any) -> int:
    data: int = arr.__array_interface__["data"][0]
    return data


def span(arrays: list[Any]) -> tuple[int, int]:
    """The lowest and one past the highest byte address the arrays touch (of at least
    one array)."""
    lo: int | None = None
    hi: int | None = None
    for a in arrays:
        start = address(a)
        low = high = start
        if a.size:
            for n, stride in zip(a.shape, a.strides):
                if stride < 0:
                    low += stride * (n - 1)
                else:
                    high += stride * (n - 1)
            high += a.itemsize
        lo = low if lo is None else min(lo, low)
        hi = high if hi is None else max(hi, high)
    assert lo is not None and hi is not None  # every caller passes an array or more
    return lo, hi


# A table's rows recorded at once, waiting to go into `Graph.nodes`: their ids, the rows,
# the table's id, the op of their steps, where each is in the table, and the root they
# were met from
_Table: TypeAlias = tuple[list[int], list[Any], int, str, list[Any], str]


class Graph:
    """Nodes reached from named roots: `nodes[id] = (obj, parent id, step)`, the root
    of each node (`root[id]`), the other holders of the nodes reached again (`parents`), and
    for arrays their owners (`owners[id(owner)] = [array ids]`). Objects are kept alive,
    so that an id seen later denotes the same object.

    The rows of a table recorded at once (`_rows`: a list of a million records) go into
    `nodes` and `root` only when something asks about the nodes (`_add_waiting`): a step
    that reads a table and binds a number never does, and making those two million dict
    entries was most of its walk. Anything else walked or recorded in the graph asks
    first, so at most one table waits, and its rows go after every node. `node` and
    `root_of` of a node that is no table's row, and `empty`, do not ask."""

    def __init__(self, main_ns: dict[str, Any] | None, limit: int = 1_000_000) -> None:
        self.main_ns = main_ns
        self.limit = limit  # objects walked at most
        self._nodes: dict[int, Node] = {}
        self._root: dict[int, str] = {}
        self._waiting: _Table | None = None
        # more holders of a node: (their id, None for a root, step)
        self._parents: dict[int, list[tuple[int | None, Step]]] = {}
        self.owners: dict[int, list[int]] = {}
        self.owner_obj: dict[int, Any] = {}
        self.shape: dict[int, tuple[Any, Any]] = {}  # array id -> (shape, dtype) when walked
        self.drawings: dict[int, list[int]] = {}  # id(figure) -> ids of its artists met
        # containers whose leaf children were recorded at once (`_rows`): id -> (the op
        # of their steps, the index or key of each, the ids of the children)
        self._at_once: dict[int, tuple[str, list[Any], list[int]]] = {}
        # the nodes recorded one at a time, every node but a table's rows: what is still
        # where the walk met it is asked of these one by one, and of the rows at once
        # (`keep/changes.py`), not by a trip through a million rows' nodes
        self.singly: list[int] = []
        self.truncated: set[str] = set()
        self.links: list[tuple[str, str]] = []  # (root, root) pairs that reach one node
        self.old: Graph | None = None  # an earlier graph, whose nodes are not walked into...
        self.open: set[int] = set()  # ...but for these
        self.weak = True  # whether a weak reference's referent is walked
        self.classes = True  # whether the notebook's classes of the walk are walked...
        self.new_classes = True  # ...those not in `old` too

    @property
    def nodes(self) -> dict[int, Node]:
        """Every node, the rows of tables included."""
        if self._waiting:
            self._add_waiting()
        return self._nodes

    @nodes.setter
    def nodes(self, nodes: dict[int, Node]) -> None:
        self._add_waiting()
        self._nodes = nodes
        self.singly = list(nodes)  # (none recorded at once that this graph knows of)

    @property
    def parents(self) -> dict[int, list[tuple[int | None, Step]]]:
        """The other holders of each node reached again, the rows of tables included."""
        if self._waiting:
            self._add_waiting()
        return self._parents

    @property
    def rows(self) -> dict[int, tuple[str, list[Any], list[int]]]:
        """The containers whose children were recorded at once, the rows of tables
        included (a table found then to hold a row twice was recorded one by one)."""
        if self._waiting:
            self._add_waiting()
        return self._at_once

    def walked_rows(self) -> dict[int, tuple[str, list[Any], list[int]]]:
        """`rows` as the walk recorded them, without asking for the nodes: a table that
        holds a row twice is among them until the nodes are asked for (its rows then go
        to `singly`). With `singly`, every node is one or the other, a root is singly."""
        return self._at_once

    @property
    def root(self) -> dict[int, str]:
        """The root of every node, the rows of tables included."""
        if self._waiting:
            self._add_waiting()
        return self._root

    @root.setter
    def root(self, root: dict[int, str]) -> None:
        self._add_waiting()
        self._root = root

    def node(self, oid: int) -> Node:
        """`nodes[oid]`: KeyError when it is none."""
        found = self._nodes.get(oid)
        return found if found is not None else self.nodes[oid]

    def root_of(self, oid: int) -> str:
        """`root[oid]`: KeyError when it is no node."""
        found = self._root.get(oid)
        return found if found is not None else self.root[oid]

    def empty(self) -> bool:
        """`not nodes`."""
        return not self._nodes and not self._waiting

    def _add_waiting(self) -> None:
        """Put the rows of the table recorded at once in `nodes` and `root`, after every
        node, where the walk met them: which references of a unit carry fallbacks, and a
        stream's bytes, follow the walk's order (`keep/sharing.py`)."""
        table, self._waiting = self._waiting, None
        if table is None:
            return
        ids, rows, oid, op, where, name = table
        enabled = gc.isenabled()
        gc.disable()  # (as `add`: a tuple per row and no garbage)
        try:
            before = len(self._nodes)
            self._nodes.update(zip(ids, zip(rows, repeat(oid), zip(repeat(op), where))))
            if len(self._nodes) == before + len(ids):
                self._root.update(zip(ids, repeat(name)))
                return
            # A row held twice (nothing was walked since the table was recorded): as
            # `_items` would have recorded them, one by one.
            for i in ids:
                self._nodes.pop(i, None)
            del self._at_once[oid]
            for row, w in zip(rows, where):
                self._one_of(row, oid, (op, w), name)
        finally:
            if enabled:
                gc.enable()

    def _one_of(self, x: Any, oid: int, step: Step, name: str) -> None:
        """A leaf child of node `oid`, recorded (or met again) by itself."""
        if id(x) in self._nodes:
            self._again(id(x), oid, step, name)
        else:
            self._nodes[id(x)] = (x, oid, step)
            self._root[id(x)] = name
            self.singly.append(id(x))

    def is_node(self, oid: int) -> bool:
        entry = self.nodes.get(oid)
        return entry is not None and kind_of(type(entry[0])) in NODE_KINDS

    def add(self, name: str, value: Any) -> None:
        """Walk `value`, the value of root `name`."""
        if type(value) in NO_IDENTITY:
            return
        enabled = gc.isenabled()
        gc.disable()  # the walk makes a tuple per node and no garbage: collecting halves it
        try:
            self._walk(name, value)
        finally:
            if enabled:
                gc.enable()

    def _walk(self, name: str, value: Any) -> None:
        stack: list[Node] = [(value, None, ("n", name))]
        nodes = self._nodes
        old = self.old.nodes if self.old is not None else {}
        while stack:
            obj, parent, step = stack.pop()
            oid = id(obj)
            if self._waiting:  # (a table recorded at once, then more to walk)
                self._add_waiting()
            if oid in nodes:
                self._again(oid, parent, step, name)
                continue
            kind = kind_of(type(obj))
            if kind == SKIP or (kind == FUNC and obj.__globals__ is not self.main_ns):
                continue
            if type(obj) in PROCESS_TYPES and process_token(obj) is not None:
                continue  # the kernel's own (its shell): global
            if kind == CLASS and not self._walks(obj, oid):
                continue
            if len(nodes) >= self.limit:
                self.truncated.add(name)
                return
            nodes[oid] = (obj, parent, step)
            self._root[oid] = name
            self.singly.append(oid)
            if kind == DRAWING:  # a leaf: matplotlib's graph is the figure's business
                self.drawings.setdefault(id(drawing_root(obj)), []).append(oid)
                continue
            if oid in old and oid not in self.open:
                if kind == ARRAY:
                    self._array(obj, oid, [])
                continue
            try:
                self._children(obj, oid, kind, stack, name)
            except Exception:  # an object whose parts cannot be listed: a leaf
                log.debug("the walk treats a %s as a leaf", type(obj).__name__, exc_info=True)

    def _walks(self, cls: type, oid: int) -> bool:
        """Whether a class is walked: one of the notebook's (others are global), but in
        a graph after a step (`new_classes` off) only one of the inputs' (a class the
        step made is stored whole, by its code and attributes)."""
        return (
            self.classes
            and getattr(cls, "__module__", None) == "__main__"
            and (self.new_classes or (self.old is not None and oid in self.old.nodes))
        )

    def _again(self, oid: int, parent: int | None, step: Step, name: str) -> None:
        """A node reached once more: another holder (None: a root), perhaps from
        another root, and the step from it."""
        self._parents.setdefault(oid, []).append((parent, step))
        first = self.root_of(oid)
        if first != name:
            self.links.append((first, name))

    def _children(self, obj: Any, oid: int, kind: int, stack: list[Node], name: str) -> None:
        if kind == SEQ or kind == TUPLE:
            if not set(map(type, obj)) <= NO_IDENTITY:
                if len(obj) < _ROWS or not self._table(obj, list(obj), range(len(obj)), "i", name):
                    steps = ((x, ("i", i)) for i, x in enumerate(obj))
                    self._items(steps, oid, stack, name)
        elif kind == MAP:
            if not set(map(type, dict.values(obj))) <= NO_IDENTITY:
                if (
                    len(obj) < _ROWS
                    or not set(map(type, dict.keys(obj))) <= _KEYS
                    or not self._table(obj, list(dict.values(obj)), list(dict.keys(obj)), "k", name)
                ):
                    pairs = enumerate(dict.items(obj))
                    steps = ((v, ("k", k) if type(k) in _KEYS else ("p", i)) for i, (k, v) in pairs)
                    self._items(steps, oid, stack, name)
        elif kind == ARRAY:
            self._array(obj, oid, stack)
        elif kind == FUNC:  # its closure, and its defaults (a call may fill a list one)
            for i, cell in enumerate(obj.__closure__ or ()):
                stack.append((cell, oid, ("c", i)))
            for i, v in enumerate(obj.__defaults__ or ()):
                if type(v) not in NO_IDENTITY:
                    stack.append((v, oid, ("D", i)))
            for k, v in (obj.__kwdefaults__ or {}).items():
                if type(v) not in NO_IDENTITY:
                    stack.append((v, oid, ("K", k)))
        elif kind == CELL:
            try:
                stack.append((obj.cell_contents, oid, ("x",)))
            except ValueError:  # an empty cell
                pass
        elif kind == METHOD:
            stack.append((obj.__self__, oid, ("m",)))
        elif kind == CLASS:  # its attributes, and its bases' (a subclass reads them)
            for k, v in list(vars(obj).items()):
                if k not in CLASS_SKIP and type(v) not in NO_IDENTITY:
                    if not isinstance(v, _SLOT_DESCRIPTORS):
                        stack.append((v, oid, ("a", k)))
            stack.extend((b, oid, ("b", i)) for i, b in enumerate(obj.__bases__))
        elif kind == WRAPPER:
            for attr in _WRAPPED:
                v = getattr(obj, attr, None)
                if v is not None and type(v) not in NO_IDENTITY:
                    stack.append((v, oid, ("d", attr)))
        elif type(obj) is weakref.ReferenceType and self.weak:
            referent = obj()
            if referent is not None:
                stack.append((referent, oid, ("w",)))
        if kind == OBJ and type(obj) in _SHOWS:
            shown = _shown(obj)
            if shown is not None:
                stack.append((shown, oid, ("v",)))
        if kind == OBJ and type(obj) in _HOLDS:
            for attr in _HOLDS[type(obj)]:
                v = getattr(obj, attr)
                if type(v) not in NO_IDENTITY:
                    stack.append((v, oid, ("d", attr)))
        if kind in (OBJ, SEQ, MAP, SET, BYTES, FUNC) and type(obj) not in _PLAIN:
            _attributes(obj, oid, stack)
        elif kind == ARRAY and type(obj).__dictoffset__:  # a subclass's own attributes
            _attributes(obj, oid, stack)

    def _items(
        self, items: Iterable[tuple[Any, Step]], oid: int, stack: list[Node], name: str
    ) -> None:
        """Children of a container. The common leaves (a list, tuple or dict of atomic
        values: the rows of a table) are recorded here rather than stacked: a million
        records cost a pass, not a million trips round the walk."""
        nodes, root, singly = self._nodes, self._root, self.singly
        for x, step in items:
            t = type(x)
            if t in NO_IDENTITY:
                continue
            leaf = (t is dict and set(map(type, dict.values(x))) <= NO_IDENTITY) or (
                (t is list or t is tuple) and set(map(type, x)) <= NO_IDENTITY
            )
            if not leaf:
                stack.append((x, oid, step))
            elif id(x) in nodes:
                self._again(id(x), oid, step, name)
            elif len(nodes) < self.limit:
                nodes[id(x)] = (x, oid, step)
                root[id(x)] = name
                singly.append(id(x))
            else:
                self.truncated.add(name)
                return

    def _table(
        self, table: Any, items: list[Any], where: Iterable[Any], op: str, name: str
    ) -> bool:
        """Record the children of a container of `_ROWS` or more at once when it is a
        table (`_rows`, `_object_rows`); False, having recorded nothing, otherwise. Its
        atomic children are no nodes: only the others (`rows`) and their places count."""
        mask = list(map(not_, map(NO_IDENTITY.__contains__, map(type, items))))
        rows, at = list(compress(items, mask)), list(compress(where, mask))
        return self._rows(rows, at, op, id(table), name) or (
            type(table) in _PLAIN and self._object_rows(rows, at, op, id(table), name)
        )

    def _rows(self, rows: list[Any], where: list[Any], op: str, oid: int, name: str) -> bool:
        """Record the children of a container at once (`rows`, each at `(op, where[i])`)
        when every one is a leaf (a dict, list or tuple of atomic values: the rows of a
        table) met for the first time, and all fit under the limit: what `_items` would
        record, in its order, in passes at C speed. False, having recorded nothing,
        otherwise (`_items` then takes them one by one)."""
        if not _leaves(rows):
            return False
        ids = list(map(id, rows))
        nodes = self.nodes
        if len(nodes) + len(ids) > self.limit or not nodes.keys().isdisjoint(ids):
            return False
        # Recorded in `nodes` and `root` when they are asked about (`_add_waiting`: a
        # table recorded before went in at `nodes` above); a row held twice is found then.
        self._waiting = (ids, rows, oid, op, where, name)
        self._at_once[oid] = (op, where, ids)
        return True

    def _object_rows(self, objs: list[Any], where: list[Any], op: str, oid: int, name: str) -> bool:
        """Record at once a table of instances of plain classes (a list of a notebook's
        dataclass records) whose attributes are atomic values or leaf rows, in the order
        the walk would record them one by one: it stacks the instances and meets them
        last first, each followed by its attributes, last first. Only for a list, tuple
        or dict, which has no attributes of its own to stack after its items. False,
        having recorded nothing, when an instance or a leaf is met again, was walked
        before the step (`old`), or does not fit under the limit."""
        if not objs or not all(map(_plain_instances, set(map(type, objs)))):
            return False
        dicts = list(map(object.__getattribute__, objs, repeat("__dict__")))
        if set(map(type, dicts)) != {dict}:
            return False
        values = list(itertools.chain.from_iterable(map(dict.values, dicts)))
        held = list(map(not_, map(NO_IDENTITY.__contains__, map(type, values))))
        leaves = list(compress(values, held))
        if not _leaves(leaves):
            return False
        obj_ids, leaf_ids = list(map(id, objs)), list(map(id, leaves))
        nodes = self.nodes
        old = self.old.nodes if self.old is not None else {}
        if (
            len(nodes) + len(obj_ids) + len(leaf_ids) > self.limit
            or not nodes.keys().isdisjoint(obj_ids)
            or not nodes.keys().isdisjoint(leaf_ids)
            or not old.keys().isdisjoint(obj_ids)
            or len({*obj_ids, *leaf_ids}) != len(obj_ids) + len(leaf_ids)
        ):
            return False
        keys = list(compress(itertools.chain.from_iterable(map(dict.keys, dicts)), held))
        owners = list(compress(itertools.chain.from_iterable(map(repeat, range(len(objs)), map(len, dicts))), held))  # fmt: skip
        ids: list[int] = []
        met: list[Node] = []
        k = len(leaves) - 1
        for i in range(len(objs) - 1, -1, -1):
            ids.append(obj_ids[i])
            met.append((objs[i], oid, (op, where[i])))
            while k >= 0 and owners[k] == i:
                ids.append(leaf_ids[k])
                met.append((leaves[k], obj_ids[i], ("a", keys[k])))
                k -= 1
        nodes.update(zip(ids, met))
        self._root.update(zip(ids, repeat(name)))
        self._at_once[oid] = (op, where, obj_ids)
        self.singly += leaf_ids  # (held by the instances, not by the table)
        return True

    def _array(self, arr: Any, oid: int, stack: list[Node]) -> None:
        owner = memory_owner(arr)
        self.owners.setdefault(id(owner), []).append(oid)
        self.owner_obj[id(owner)] = owner
        self.shape[oid] = (arr.shape, arr.dtype)
        if arr.dtype.hasobject and arr.size <= _OBJECT_ARRAY_MAX:
            stack.extend(
                (x, oid, ("e", i)) for i, x in enumerate(arr.flat) if type(x) not in NO_IDENTITY
            )

    def path(self, oid: int) -> Path:
        """The path from a root to node `oid`: (root name, step, ...)."""
        steps = []
        at: int | None = oid
        while at is not None:
            _, parent, step = self.node(at)
            steps.append(step)
            at = parent
        steps.reverse()
        return (steps[0][1], *steps[1:])

    def paths(self, oid: int) -> list[Path]:
        """Every path the walk reached node `oid` by: `path(oid)` and one per other
        holder."""
        out = [self.path(oid)]
        for parent, step in self.parents.get(oid, ()):
            out.append((step[1],) if parent is None else (*self.path(parent), step))
        return out


def _plain_instances(t: type) -> bool:
    """Whether the walk takes an instance of `t` as its instance dict alone: an object
    of its own (no view, weak reference or holder of C slots, not the kernel's) with a
    dict and no slots."""
    plain = _PLAIN_INSTANCES.get(t)
    if plain is None:
        plain = _PLAIN_INSTANCES[t] = (
            kind_of(t) == OBJ
            and t not in _SHOWS
            and t not in _HOLDS
            and t not in PROCESS_TYPES
            and not issubclass(t, weakref.ReferenceType)
            and bool(t.__dictoffset__)
            and not slot_names(t)
        )
    return plain


_PLAIN_INSTANCES: dict[type, bool] = {}


def _leaves(rows: list[Any]) -> bool:
    """Whether each of `rows` is a leaf: a dict, list or tuple of atomic values."""
    kinds = list(map(type, rows))
    present = set(kinds)
    if not present <= _ROW_TYPES:
        return False
    if dict in present:
        dicts = compress(rows, map(is_, kinds, repeat(dict)))
        if not set(map(type, itertools.chain.from_iterable(map(dict.values, dicts)))) <= (
            NO_IDENTITY
        ):
            return False
    if present - {dict}:
        seqs = compress(rows, map(is_not, kinds, repeat(dict)))
        if not set(map(type, itertools.chain.from_iterable(seqs))) <= NO_IDENTITY:
            return False
    return True


def _shown(view: Any) -> Any:
    """The dict a view shows, or the sequence an iterator runs over (None once
    exhausted)."""
    if type(view) in VIEW_TYPES:
        return viewed(view)
    referents = gc.get_referents(view)
    if len(referents) != 1:
        return None
    shown = referents[0]
    return shown if type(view) in _SEQUENCE_ITERATORS or isinstance(shown, list) else None


def _attributes(obj: Any, oid: int, stack: list[Node]) -> None:
    t = type(obj)
    if t.__dictoffset__:
        attrs = object.__getattribute__(obj, "__dict__")
        if type(attrs) is dict:
            stack.extend((v, oid, ("a", k)) for k, v in attrs.items() if type(v) not in NO_IDENTITY)
    for name in slot_names(t):
        try:
            v = object.__getattribute__(obj, name)
        except AttributeError:  # an unset slot
            continue
        if type(v) not in NO_IDENTITY:
            stack.append((v, oid, ("s", name)))


_SLOTS: dict[type, tuple[str, ...]] = {}


def slot_names(t: type) -> tuple[str, ...]:
    """The names of the slots instances of `t` have (from every class of its MRO)."""
    names = _SLOTS.get(t)
    if names is None:
        found = []
        for base in t.__mro__:
            slots = base.__dict__.get("__slots__", ())
            for s in (slots,) if isinstance(slots, str) else slots:
                if s not in ("__dict__", "__weakref__"):
                    found.append(f"_{base.__name__.lstrip('_')}{s}" if s.startswith("__") else s)
        names = _SLOTS[t] = tuple(found)
    return names


def lookup(ns: Mapping[str, Any], name: str) -> Any:
    """The value of a name, or of an attribute chain from one (`settings.THRESHOLD`).
    Raises KeyError or AttributeError."""
    head, *attrs = name.split(".")
    value = ns[head]
    for a in attrs:
        value = getattr(value, a)
    return value


# what `resolve` and `step` raise where a path does not lead anywhere
PATH_ERRORS = (LookupError, AttributeError, TypeError, ValueError)


def resolve(path: Path, roots: dict[str, Any]) -> Any:
    """The object at `path` from `roots` (name -> value). Raises one of PATH_ERRORS
    when the path does not lead anywhere."""
    obj = roots[path[0]]
    for s in path[1:]:
        obj = step(obj, s)
    return obj


def step(obj: Any, s: Step) -> Any:
    """The object one step of a path leads to from `obj` (errors as `resolve`)."""
    op = s[0]
    if op == "i":
        return obj[s[1]]
    if op == "k":
        # dict.__getitem__ still calls a subclass's __missing__ (a defaultdict would add
        # the key to the user's object): a key that is not there is not there
        if not dict.__contains__(obj, s[1]):
            raise KeyError(s[1])
        return dict.__getitem__(obj, s[1])
    if op == "p":
        return next(itertools.islice(dict.values(obj), s[1], None))
    if op == "a":
        return object.__getattribute__(obj, "__dict__")[s[1]]
    if op == "s":
        return object.__getattribute__(obj, s[1])
    if op == "b":
        return obj.__bases__[s[1]]
    if op == "d":
        if s[1] not in _HELD:
            raise ValueError(f"unknown path step {s!r}")
        return getattr(obj, s[1])
    if op == "c":
        return obj.__closure__[s[1]]
    if op == "D":
        return obj.__defaults__[s[1]]
    if op == "K":
        return obj.__kwdefaults__[s[1]]
    if op == "x":
        return obj.cell_contents
    if op == "m":
        return obj.__self__
    if op == "w":
        referent = obj()
        if referent is None:
            raise LookupError("a weak reference is dead")
        return referent
    if op == "e":
        return obj.flat[s[1]]
    if op == "v":
        shown = _shown(obj) if type(obj) in _SHOWS else None
        if shown is None:
            raise TypeError(f"a {type(obj).__name__} shows no dict or list")
        return shown
    raise ValueError(f"unknown path step {s!r}")


class RootKind(enum.Enum):
    """What a root of a graph after a step stands for. A root is a string, the first
    item of every path from it: a bound name as the user writes it, the others marked
    with a prefix no identifier has."""

    BOUND = ""  # a name the step bound
    CHANGED = "\0"  # an input the step changed, as its object was before the step
    MODULE_ATTRIBUTE = "\1"  # an attribute the step set on a notebook module
    HELD = "\2"  # what a check holds on its own (`units/replaced.py`), never a name


def root(kind: RootKind, name: str) -> str:
    """The root string of `name` as a root of `kind`."""
    return kind.value + name


def root_name(of: str) -> str:
    """A root as the user writes it."""
    return of.lstrip("\0\1\2")


def describe(path: Path) -> str:
    """A path as Python-like text: `t.columns['a']`, `t[0]`."""
    out = root_name(path[0])
    for s in path[1:]:
        op = s[0]
        if op in ("i", "k", "e"):
            out += f"[{s[1]!r}]"
        elif op == "p":
            out += f".values()[{s[1]}]"
        elif op in ("a", "s", "d"):
            out += f".{s[1]}"
        elif op == "c":
            out += f".__closure__[{s[1]}]"
        elif op == "b":
            out += f".__bases__[{s[1]}]"
        elif op == "D":
            out += f".__defaults__[{s[1]}]"
        elif op == "K":
            out += f".__kwdefaults__[{s[1]!r}]"
        elif op == "x":
            out += ".cell_contents"
        elif op == "m":
            out += ".__self__"
        elif op == "w":
            out += "()"
        elif op == "v":
            out += ".mapping"
    return out
