"""What a live run changed: the names it bound and deleted, and the inputs whose
objects it changed, each decided once.

A name is bound when its value is another object than before the run, or the cell
assigns it; an input is changed when its digest after the run differs from the one in
the key (`df.dropna(inplace=True)`), whether or not the name still holds that object
(`a.append(1); a = a + [2]`), or when an object its walk met before the run is no
longer where it was in a list, dict, closure cell or notebook object (`h['j'] = e`
with an `e` equal to the one `h['j']` held: the digest is the same, but `h['j'] is e`
is now true, as a hit must leave it). `Digests` digests each value once: the change check, the
entry and the record all need them, and a frame is worth hashing once.
"""

from __future__ import annotations

import io
import sys
import types
from collections import deque
from concurrent.futures import Executor
from itertools import repeat
from typing import Any

import msgspec

from ...errors import Unhashable
from ...hashing import key as step_key
from ...hashing.reach import data_only
from ...hashing.values import Hasher
from ..objects import objgraph, user_names
from ..objects.identities import Identities


class Digests:
    """Digests of the namespace's values after a live run, each computed once."""

    def __init__(self, ns: dict[str, Any]) -> None:
        self.ns = ns
        self._done: dict[str, str] = {}
        self._reached: dict[str, tuple[str, ...] | None] = {}
        self._objects: dict[str, Any] = {}  # name -> the object digested

    def of(self, name: str) -> str:
        """The digest of `name`'s value. Raises Unhashable."""
        if name not in self._done:
            h = Hasher(self.ns)
            value = self.ns[name]
            self._done[name] = h.value_digest(value, name)
            self._reached[name] = data_only(h)
            self._objects[name] = value
        return self._done[name]

    def data_values(self) -> list[tuple[str, Any, str, tuple[str, ...]]]:
        """(name, the object digested, its digest, the packages it reached) of each value
        digested so far whose digest reached no code (`data_only`)."""
        return [
            (name, self._objects[name], digest, reached)
            for name, digest in self._done.items()
            if (reached := self._reached[name]) is not None
        ]

    def data_only(self, name: str) -> tuple[str, ...] | None:
        """The packages the digest of `name` reached, when it reached no code (no
        function, no class of the notebook or elsewhere, no drawing): a value a hit may
        leave unread until something reads it, keyed meanwhile by this digest. None
        otherwise. Raises Unhashable."""
        self.of(name)
        return self._reached[name]

    def describe(self, names: list[str]) -> list[dict[str, Any]]:
        """Name, type, size and digest (None when unhashable) of each, for the record."""
        out = []
        for n in names:
            tname, size = step_key.describe(self.ns[n])
            try:
                d: str | None = self.of(n)
            except Unhashable:
                d = None
            out.append({"name": n, "type": tname, "size": size, "digest": d})
        return out


class Changes(msgspec.Struct):
    """What a live run changed in the namespace."""

    bound: list[str]  # rebound, assigned by the cell, or an input changed in place
    deleted: list[str]
    inputs: dict[str, Any]  # inputs whose object the run changed: name -> that object


_MISSING = object()


def of_run(
    ns: dict[str, Any],
    before: Identities,
    assigned: tuple[str, ...],
    inputs_before: dict[str, Any],
    key_digests: dict[str, str],
    digests: Digests,
    graph: objgraph.Graph | None = None,
    dels: tuple[str, ...] = (),
) -> Changes:
    """The changes of a run that started with the identities `before`, whose cell
    assigns `assigned`; `inputs_before` are the input objects it started with (name ->
    object; empty when they were not kept), `key_digests` their digests in the key and
    `graph` the walk of them before the run (`sharing.before`), when it was made, and
    `dels` the names its top level deletes (deleted even where they were not there
    before it ran: it made them and deleted them, `tmp = f(); del tmp`)."""
    bound = [
        k
        for k in before.rebound(ns, set(assigned))
        if user_names.is_users(k) and not _spent_handle(ns[k])
    ]
    deleted = [k for k in before.deleted(ns) if user_names.is_users(k)]
    deleted += [k for k in dels if k not in ns and k not in deleted and user_names.is_users(k)]
    changed = {}
    moved = _moved(graph) if graph is not None else set()
    for name, old in key_digests.items():
        obj = inputs_before.get(name, ns.get(name, _MISSING))
        if obj is _MISSING or type(obj) in objgraph.NO_IDENTITY:
            continue
        try:
            if ns.get(name, _MISSING) is obj:
                now = digests.of(name)
            else:
                now = Hasher(ns).value_digest(obj, name)
        except Unhashable:
            continue  # the key already failed on it: nothing is stored
        if now == old and name not in moved:
            continue
        changed[name] = obj
        if name in ns and name not in bound and ns[name] is obj:
            bound.append(name)
    return Changes(bound, deleted, changed)


def _moved(graph: objgraph.Graph) -> set[str]:
    """The roots of `graph` under which an object is no longer where the walk met it:
    its holder, a container or an object of the notebook's, now holds another object
    there, or nothing. A library's object is left alone: its own caches come and go
    (sympy replaces an expression's assumptions as it learns them), and what it holds
    is its business, as the digest says. One step from each holder, no walk: a fraction
    of the walk before the run. A table's rows (`Graph.walked_rows`) are looked at in one
    pass each, and only the other nodes one by one (`Graph.singly`): a row's holder is
    either still holding each of them where it was, or its root has moved."""
    out: set[str] = set()
    node, root_of = graph.node, graph.root_of  # (not `nodes`: the rows are not asked for)
    in_place = set()
    for holder_id, (op, where, ids) in graph.walked_rows().items():
        root = root_of(holder_id)
        if root in out or _rows_in_place(node(holder_id)[0], op, where, ids):
            in_place.add(holder_id)
        else:
            out.add(root)
    for oid in graph.singly:
        obj, parent, step = node(oid)
        if parent is None or parent in in_place or root_of(oid) in out:
            continue
        holder = node(parent)[0]
        if not _users(holder):
            continue
        try:
            if objgraph.step(holder, step) is obj:
                continue
        except objgraph.PATH_ERRORS:
            pass
        out.add(root_of(oid))
    return out


def _rows_in_place(holder: Any, op: str, where: list[Any], ids: list[int]) -> bool:
    """Whether a container's children that the walk recorded at once (`Graph.rows`) are
    each still where it met them: one pass at C speed over a table's million rows (a
    key no longer there reads as a missing object, never through `__missing__`)."""
    if not _users(holder):
        return True
    try:
        if op == "i":
            # A deque finds an index by walking its blocks: listed once, it is read in
            # one pass, in the order the walk met its rows (it iterated it too).
            seq = list(holder) if isinstance(holder, deque) else holder
            if type(seq) in _LIST_OR_TUPLE and len(where) == len(seq):
                # (increasing indices from 0 as many as it holds: every one, in order)
                if not where or where[-1] == len(where) - 1:
                    return list(map(id, seq)) == ids
            at = map(seq.__getitem__, where)
        else:
            at = map(dict.get, repeat(holder), where, repeat(_MISSING))
        return list(map(id, at)) == ids
    except objgraph.PATH_ERRORS:
        return False


_USERS_KINDS = frozenset({objgraph.SEQ, objgraph.MAP, objgraph.CELL})
_LIST_OR_TUPLE = frozenset({list, tuple})


def _users(holder: Any) -> bool:
    """A holder whose parts are the user's to place: a list, dict or closure cell, an
    instance of a notebook class or a namespace."""
    t = type(holder)
    kind = objgraph.kind_of(t)
    if kind in _USERS_KINDS:
        return True
    return kind == objgraph.OBJ and (t.__module__ == "__main__" or t is types.SimpleNamespace)


def _spent_handle(value: Any) -> bool:
    """What a `with` block leaves spent, nothing to restore: a closed file (the `f` of
    `with open(...) as f`), an executor shut down (`with ThreadPoolExecutor() as ex`),
    a pool closed (`with Pool(4) as p`), a closed archive (`with ZipFile(...) as z`),
    and a progress bar done (`bar = tqdm(rows)` iterated to its end, or closed). None
    can be stored (a lock, a queue, a process inside), so a step that made one ran
    every time, not cached."""
    if isinstance(value, io.IOBase):
        return value.closed
    if isinstance(value, Executor):  # (`_shutdown`: a thread pool's; a process pool's)
        return bool(getattr(value, "_shutdown", False) or getattr(value, "_shutdown_thread", False))
    pool = sys.modules.get("multiprocessing.pool")
    if pool is not None and isinstance(value, pool.Pool):
        return getattr(value, "_state", None) != "RUN"
    archives = sys.modules.get("zipfile"), sys.modules.get("tarfile")
    if archives[0] is not None and isinstance(value, archives[0].ZipFile):
        return value.fp is None
    if archives[1] is not None and isinstance(value, archives[1].TarFile):
        return bool(value.closed)
    bars = sys.modules.get("tqdm.std")  # (closing a bar disables it: it shows no more)
    return bars is not None and isinstance(value, bars.tqdm) and bool(value.disable)
