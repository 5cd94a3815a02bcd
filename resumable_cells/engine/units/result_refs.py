"""The cell's result by reference to the names that hold it, so that after a hit `_` and
`Out[n]` are the very objects the names hold, as they are after the live run.

A plain cell ending in `h` gives `_` the object `h` holds: a later `h.append(2)` shows
in `_`. An entry stores the result apart from the names, so a hit would hand `_` a copy
of its own, which later changes to `h` do not reach. Instead, where the result, or an
object inside it, is an object a name holds when the step ends, it is pickled as a
persistent id:

    ("n", name)                 the value of a name (or of an attribute chain from one)
    ("p", path, type)           the object at a path from a name (`h[0]`, `m.coef_`)
    ("v", path, offset, shape, strides, dtype, writeable, layout)
                                an array viewing the memory of the array at `path`
                                (`a[1:]`, `x.T`), at that byte offset from it; `layout`
                                is that array's (shape, strides, dtype)

The names are those whose values a hit gives as the live run left them: the names the
step bound, and its inputs (the key vouches for them, and the hit restores what the
step changed in them). A path comes from the sharing analysis's graphs and is followed
once while the entry is built: it must lead to the object then. A hit resolves the ids
after it has bound the names, from the namespace, reading a name it left unread
(`restore/pending.py`) first.

A view is referred to only when the array it views has no gaps (C or F contiguous) and
holds every byte the view reaches, and is served only where that array is laid out as
it was live: then each byte the view reads is one the hit restored.

A result that refers to a name is kept so only while its pickle is small enough to sit
in the entry (a name, a part of one, a tuple of names); a larger one (a new array in a
tuple with a name) is stored by value, as any other: a hit gives `_` its own copy.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeAlias

from ..objects import objgraph
from . import stream

NAME = "n"  # the value of a name
PATH = "p"  # the object at a path from a name
VIEW = "v"  # an array over the memory of an array at a path from a name
# A persistent id of the result's pickle: one of the tuples above.
PersistentId: TypeAlias = tuple[Any, ...]
# Containers that pickling gives back as they were, around the references they hold.
_PLAIN = frozenset({tuple, list, dict, set, frozenset})


class Referrer:
    """The persistent ids of a result's pickle (`pid`), over the objects of `ns` that
    `names` hold and the nodes of `graphs` reached from them; `used` says whether any
    was written."""

    def __init__(
        self, ns: dict[str, Any], names: Iterable[str], graphs: Sequence[objgraph.Graph] = ()
    ) -> None:
        self.ns = ns
        self.graphs = graphs
        self.allowed: set[str] = set()
        self.by_id: dict[int, str] = {}  # id -> the first name (in `names`' order) holding it
        for name in names:
            try:
                value = objgraph.lookup(ns, name)
            except (KeyError, AttributeError):
                continue  # (deleted by the step)
            self.allowed.add(name)
            if type(value) not in objgraph.NO_IDENTITY:
                self.by_id.setdefault(id(value), name)
        self.used = False  # a reference was written
        self.plain = True  # and besides them only tuples, lists, dicts, sets and atoms

    @property
    def pid(self) -> Callable[[Any], PersistentId | None]:
        """The persistent id of an object (None: pickle it); a closure, as pickle asks
        it of every object of the result. Made anew for each pickle, never kept: kept,
        it would hold this object in a cycle, and with it the graphs and the objects
        they reach (values the step replaced) until the garbage collector ran."""
        atomic, by_id, graphs = objgraph.NO_IDENTITY, self.by_id, self.graphs
        found: dict[int, PersistentId | None] = {}
        np = sys.modules.get("numpy")
        ndarray = np.ndarray if np is not None else None

        def pid(obj: Any) -> PersistentId | None:
            if type(obj) in atomic:
                return None
            oid = id(obj)
            name = by_id.get(oid)
            if name is not None:
                self.used = True
                return (NAME, name)
            node = any(oid in g.nodes for g in graphs)
            if not node and type(obj) is not ndarray:
                if type(obj) not in _PLAIN:
                    self.plain = False
                return None
            if oid not in found:
                found[oid] = self._path(obj, oid) if node else self._view(obj)
            if found[oid] is not None:
                self.used = True
            elif type(obj) not in _PLAIN:
                self.plain = False
            return found[oid]

        return pid

    def _path(self, obj: Any, oid: int) -> PersistentId | None:
        """A path from an allowed name that leads to `obj` now, or None."""
        for graph in self.graphs:
            if oid not in graph.nodes:
                continue
            for path in graph.paths(oid):
                name = _name_of(path[0])
                if name is None or name not in self.allowed:
                    continue
                path = (name, *path[1:])
                try:
                    if resolve(path, self.ns) is obj:
                        return (PATH, path, type(obj).__qualname__)
                except objgraph.PATH_ERRORS:
                    continue
        return None

    def _view(self, arr: Any) -> PersistentId | None:
        """A reference to `arr` as a view of an array a name holds, or None."""
        owner = objgraph.memory_owner(arr)
        if owner is arr:
            return None
        lo, hi = objgraph.span([arr])
        for graph in self.graphs:
            for aid in graph.owners.get(id(owner), ()):
                over = graph.nodes[aid][0]
                if not (over.flags.c_contiguous or over.flags.f_contiguous):
                    continue  # (a gap in it is memory a hit need not restore)
                start = objgraph.address(over)
                if not (start <= lo and hi <= start + over.nbytes):
                    continue
                ref = self._path(over, aid)
                if ref is None:
                    continue
                layout = (over.shape, over.strides, over.dtype)
                spec = (arr.shape, arr.strides, arr.dtype, bool(arr.flags.writeable))
                return (VIEW, ref[1], objgraph.address(arr) - start, *spec, layout)
        return None


def _name_of(root: str) -> str | None:
    """The name a root of a graph stands for: a bound name or an input, or an input the
    step changed (its object as the step left it); None for a module's attribute."""
    if root.startswith(objgraph.RootKind.CHANGED.value):
        return root[1:]
    if root.startswith((objgraph.RootKind.MODULE_ATTRIBUTE.value, objgraph.RootKind.HELD.value)):
        return None
    return root


def resolve(path: objgraph.Path, ns: dict[str, Any]) -> Any:
    """The object at `path` from the name it starts at (errors as `objgraph.resolve`,
    and KeyError for a name not defined)."""
    return objgraph.resolve(path, {path[0]: objgraph.lookup(ns, path[0])})


def resolver(ns: dict[str, Any], read: Callable[[list[str]], Any]) -> Callable[[PersistentId], Any]:
    """The `persistent_load` of a result's pickle on a hit, once its names are bound:
    `read(names)` reads those a hit left unread (`Pending.materialise`). Raises
    LookupError (or one of `objgraph.PATH_ERRORS`) where an id leads nowhere."""

    def at(path: objgraph.Path) -> Any:
        read([path[0].split(".")[0]])
        return resolve(path, ns)

    def load(pid: PersistentId) -> Any:
        if pid[0] == NAME:
            read([pid[1].split(".")[0]])
            return objgraph.lookup(ns, pid[1])
        if pid[0] == PATH:
            obj = at(pid[1])
            if type(obj).__qualname__ != pid[2]:
                raise TypeError(f"{objgraph.describe(pid[1])} is a {type(obj).__qualname__}")
            return obj
        if pid[0] == VIEW:
            over = at(pid[1])
            if (over.shape, over.strides, over.dtype) != pid[7]:
                raise TypeError(f"{objgraph.describe(pid[1])} is laid out otherwise")
            return stream.array_of((stream.VIEW, 0, pid[1], *pid[2:7]), lambda _: over)
        raise ValueError(f"unknown reference {pid[0]!r}")

    return load
