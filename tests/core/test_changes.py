"""What a live run changed (`engine/keep/changes.py`): the names it bound and deleted,
the inputs whose objects it changed (by their digests against the key's), each value
digested once (`Digests`)."""

from __future__ import annotations

import copy
import io
import threading
from collections import defaultdict, deque
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from resumable_cells.engine.keep import changes
from resumable_cells.engine.objects import identities
from resumable_cells.engine.objects.identities import Identities
from resumable_cells.hashing.values import Hasher


def digest(ns: dict, name: str) -> str:
    return Hasher(ns).value_digest(ns[name], name)


def of_run(ns: dict, inputs: list[str], cell: str, assigned: tuple = ()) -> changes.Changes:
    key = {n: digest(ns, n) for n in inputs}
    objects = {n: ns[n] for n in inputs}
    before = Identities(ns)
    exec(cell, ns)
    return changes.of_run(ns, before, assigned, objects, key, changes.Digests(ns))


def test_names_rebound_or_new_are_bound_names_deleted_are_deleted():
    ns = {"a": [1], "b": 2, "gone": 3, "same": [4]}
    got = of_run(ns, ["a"], "b = 5\nc = a\ndel gone\nsame = same", assigned=("b", "c", "same"))
    assert got.bound == ["b", "same", "c"]
    assert got.deleted == ["gone"]
    assert got.inputs == {}


def test_a_name_assigned_its_own_object_again_is_bound_only_when_the_cell_assigns_it():
    ns = {"same": [4]}
    assert of_run(ns, [], "same = same").bound == []
    assert of_run(ns, [], "same = same", assigned=("same",)).bound == ["same"]


def test_ipython_names_and_closed_files_are_not_bound(tmp_path):
    path = tmp_path / "f.txt"
    path.write_text("x")
    ns = {"path": path}
    got = of_run(
        ns, [], "_ = 1\n_5 = 2\nOut = {}\n__x = 3\nwith open(path) as f:\n    t = f.read()"
    )
    assert got.bound == ["t"]


def test_an_input_changed_in_place_is_changed_and_bound():
    ns = {"a": [1], "b": [2]}
    a = ns["a"]
    got = of_run(ns, ["a", "b"], "a.append(2)")
    assert got.inputs == {"a": a} and got.inputs["a"] is a
    assert got.bound == ["a"]


def test_an_input_changed_then_rebound_is_changed_as_the_object_it_was():
    ns = {"a": [1]}
    a = ns["a"]
    got = of_run(ns, ["a"], "a.append(1)\na = a + [2]")
    assert got.inputs["a"] is a and a == [1, 1]
    assert got.bound == ["a"] and ns["a"] == [1, 1, 2]


def test_an_input_rebound_but_not_changed_is_not_changed():
    ns = {"a": [1]}
    got = of_run(ns, ["a"], "a = [9]")
    assert got.inputs == {} and got.bound == ["a"]


def test_an_atomic_input_is_never_changed_a_deleted_one_when_its_object_changed():
    ns = {"n": 1, "d": [1], "e": [2]}
    e = ns["e"]
    got = of_run(ns, ["n", "d", "e"], "n = 2\ndel d\ne.append(3)\ndel e")
    assert got.inputs == {"e": e} and got.inputs["e"] is e
    assert got.bound == ["n"] and got.deleted == ["d", "e"]


def test_each_value_is_digested_once():
    ns = {"a": [1]}
    digests = changes.Digests(ns)
    first = digests.of("a")
    ns["a"].append(2)
    assert digests.of("a") == first  # the first digest, not a second one
    assert changes.Digests(ns).of("a") != first


def test_the_record_of_names_says_none_for_a_value_that_cannot_be_digested():
    ns = {"lock": threading.Lock(), "buf": io.StringIO("x"), "n": 3}
    rows = changes.Digests(ns).describe(["lock", "n"])
    assert rows[0]["name"] == "lock" and rows[0]["digest"] is None
    assert rows[1]["name"] == "n" and rows[1]["type"] == "int"
    assert rows[1]["digest"] == digest(ns, "n")


_OPS = st.lists(
    st.tuples(st.sampled_from(["rebind", "delete", "add", "same"]), st.integers(0, 15)),
    max_size=8,
)


@given(
    st.integers(0, 12), _OPS, st.sets(st.integers(0, 15), max_size=3), st.sampled_from([1, 3, 512])
)
def test_rebound_and_deleted_names_are_those_a_name_by_name_comparison_finds(
    size, ops, also, chunk
):
    """`Identities` compares in C while the names keep their order (a slice of `chunk`
    names at a time), name by name after a deletion: either way, the names and their
    order are the plain loop's."""
    ns: dict = {f"n{i}": object() for i in range(size)}
    ids = {k: id(v) for k, v in ns.items()}
    before = Identities(ns)
    with mock.patch.object(identities, "_CHUNK", chunk):
        check_rebound(before, ns, ids, ops, also)


def check_rebound(before: Identities, ns: dict, ids: dict, ops: list, also: set) -> None:
    kept = []  # (no object freed during the run: its id could be reused)
    for op, i in ops:
        names = list(ns)
        name = names[i % len(names)] if names else None
        if op == "rebind" and name:
            kept.append(ns[name])
            ns[name] = object()
        elif op == "delete" and name:
            kept.append(ns.pop(name))
        elif op == "add":
            ns[f"m{i}"] = object()
        elif op == "same" and name:
            ns[name] = ns[name]
    assigned = {f"n{i}" for i in also} | {f"m{i}" for i in also}
    assert before.rebound(ns, assigned) == [
        k for k, v in ns.items() if ids.get(k) != id(v) or k in assigned
    ]
    assert before.deleted(ns) == [k for k in ids if k not in ns]


def _table(kind: str, n: int = 80):
    rows = [{"a": i} if i % 3 else [i] for i in range(n)]
    if kind == "list":
        return rows
    if kind == "deque":  # (read by index, a deque walks its blocks: listed once instead)
        return deque(rows)
    table = {} if kind == "dict" else defaultdict(list)
    table.update({f"k{i}": r for i, r in enumerate(rows)})
    return table


def _walked(ns):
    from resumable_cells.engine.objects.objgraph import Graph

    g = Graph(ns)
    for name, value in ns.items():
        g.add(name, value)
    return g


MUTATIONS = ["none", "copy", "delete", "append", "swap", "edit", "insert"]


def _mutate(table, how: str, at: int) -> None:
    keys = list(table) if isinstance(table, dict) else list(range(len(table)))
    k, k2 = keys[at % len(keys)], keys[(at * 7 + 1) % len(keys)]
    if how == "copy":  # an equal row in its place: the digest is the same, the object not
        table[k] = copy.copy(table[k])
    elif how == "delete":
        del table[k]
    elif how == "append":
        table.append([0]) if isinstance(table, (list, deque)) else table.__setitem__("new", [0])
    elif how == "swap":
        table[k], table[k2] = table[k2], table[k]
    elif how == "edit":  # in place: every row still where it was
        table[k].append(1) if isinstance(table[k], list) else table[k].update(a=-1)
    elif how == "insert" and isinstance(table, (list, deque)):
        table.insert(0, {"a": 0})


@given(
    kinds=st.lists(
        st.sampled_from(["list", "deque", "dict", "defaultdict"]), min_size=1, max_size=3
    ),
    how=st.sampled_from(MUTATIONS),
    at=st.integers(0, 200),
    which=st.integers(0, 2),
)
@settings(max_examples=200, deadline=None, database=None)
def test_rows_checked_at_once_move_as_rows_checked_one_by_one(kinds, how, at, which):
    """The rows of a table the walk recorded at once are checked at once after the step
    (`Graph.rows`): the same tables found moved as when each row is checked in turn."""
    from resumable_cells.engine.objects import objgraph

    ns = {f"t{i}": _table(kind) for i, kind in enumerate(kinds)}
    at_once = _walked(ns)
    with mock.patch.object(objgraph, "_ROWS", 1 << 40):
        one_by_one = _walked(ns)
    assert at_once.rows and not one_by_one.rows
    _mutate(ns[f"t{which % len(kinds)}"], how, at)
    assert changes._moved(at_once) == changes._moved(one_by_one)


def test_a_row_replaced_by_an_equal_one_moves_its_table_a_missing_key_adds_none():
    table = _table("defaultdict")
    g = _walked({"t": table})
    assert changes._moved(g) == set()
    table["k5"] = copy.copy(table["k5"])
    assert changes._moved(g) == {"t"}
    table = _table("defaultdict")
    g = _walked({"t": table})
    del table["k5"]
    assert changes._moved(g) == {"t"}
    assert "k5" not in table  # (read without the defaultdict's __missing__)
