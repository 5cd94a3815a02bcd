"""The object graph behind names (`engine/objects/objgraph.py`): which values are nodes,
the paths from a name to each object and back (`resolve`, `describe`), the holders and
links a shared object makes, array owners, the walk limit, and the roots' kinds."""

from __future__ import annotations

import copy
import datetime
import types
import weakref
from collections import OrderedDict, defaultdict, deque

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from resumable_cells.engine.objects import objgraph
from resumable_cells.engine.objects.objgraph import Graph, RootKind


class Obj:
    def method(self):
        return self


class Slotted:
    __slots__ = ("a", "__hidden", "unset")


def _library_function():
    box = [1]

    def get():
        return box

    return get


NOTEBOOK = """
def outer():
    box = [1]
    def get():
        return box
    return get
get = outer()
"""


@pytest.mark.parametrize(
    "value, kind",
    [
        ([1], objgraph.SEQ),
        (deque([1]), objgraph.SEQ),
        ((1, [2]), objgraph.TUPLE),
        ({"a": 1}, objgraph.MAP),
        (OrderedDict(), objgraph.MAP),
        ({1}, objgraph.SET),
        (frozenset({1}), objgraph.SKIP),
        (bytearray(b"x"), objgraph.BYTES),
        (np.zeros(2), objgraph.ARRAY),
        (lambda: 1, objgraph.FUNC),
        (types.CellType(1), objgraph.CELL),
        (Obj().method, objgraph.METHOD),
        (Obj(), objgraph.OBJ),
        (types.SimpleNamespace(), objgraph.OBJ),
        (1, objgraph.SKIP),
        ("s", objgraph.SKIP),
        (None, objgraph.SKIP),
        (Obj, objgraph.CLASS),  # walked when it is the notebook's
        (staticmethod(len), objgraph.WRAPPER),  # walked through
        (np, objgraph.SKIP),  # a module
        (len, objgraph.SKIP),  # a builtin function
        (RootKind.BOUND, objgraph.SKIP),  # an enum member
        (np.float64(1.0), objgraph.SKIP),  # a library's immutable value
        (datetime.date(2020, 1, 1), objgraph.SKIP),
    ],
    ids=lambda v: str(v) if type(v) is int else type(v).__name__,
)
def test_kind_of_each_type(value, kind):
    assert objgraph.kind_of(type(value)) == kind


def test_immutable_library_values_join_the_values_without_identity():
    assert objgraph.kind_of(datetime.time) == objgraph.SKIP
    assert datetime.time in objgraph.NO_IDENTITY


def _namespace():
    """One value of each kind of step, with objects shared between names."""
    shared = [10, 20]
    o = Obj()
    o.items = shared
    s = Slotted()
    s.a = {"x": [1]}
    s._Slotted__hidden = [2]
    weak_target = Obj()
    weak_target.data = [3]
    objs = np.empty(2, dtype=object)
    objs[0], objs[1] = [4], 5
    ns = {"__name__": "__main__"}
    exec(NOTEBOOK, ns)  # a notebook function: its globals are the namespace
    ns.update(
        {
            "lst": [shared, (shared, [5])],
            "d": {"k": [1], 3: [2], (1, 2): [3]},  # the tuple key is not atomic: `p`
            "o": o,
            "s": s,
            "bound": o.method,
            "w": weakref.ref(weak_target),
            "keep": weak_target,
            "objs": objs,
            "dq": deque([[6]]),
            "n": 1,
        }
    )
    return ns


def _graph(ns):
    g = Graph(ns)
    for name, value in ns.items():
        if not name.startswith("__"):
            g.add(name, value)
    return g


def test_every_path_the_walk_records_leads_back_to_its_object():
    ns = _namespace()
    g = _graph(ns)
    for oid, (obj, _, _) in g.nodes.items():
        for path in g.paths(oid):
            assert objgraph.resolve(path, ns) is obj, objgraph.describe(path)
    # (the walk went through each step kind)
    kinds = {step[0] for oid in g.nodes for path in g.paths(oid) for step in path[1:]}
    assert kinds == {"i", "k", "p", "a", "s", "c", "x", "m", "w", "e"}


def test_a_path_resolves_in_another_namespace_with_equal_values():
    # `resolve` follows a path in the serving kernel, where the names hold equal values
    ns, other = _namespace(), _namespace()
    g = _graph(ns)
    for oid, (obj, _, _) in g.nodes.items():
        there = objgraph.resolve(g.path(oid), other)
        assert type(there) is type(obj) and there is not obj


def test_paths_and_their_descriptions():
    ns = _namespace()
    g = _graph(ns)
    described = {objgraph.describe(p) for oid in g.nodes for p in g.paths(oid)}
    assert {
        "lst[0]",
        "lst[1][0]",  # (a tuple: walked through, the list in it a node)
        "o.items",
        "d['k']",
        "d[3]",
        "d.values()[2]",
        "s.a['x']",
        "s._Slotted__hidden",
        "get.__closure__[0].cell_contents",
        "bound.__self__",
        "w().data",
        "objs[0]",
        "dq[0]",
    } <= described
    assert objgraph.describe(("t", ("a", "columns"), ("k", "a"))) == "t.columns['a']"
    assert objgraph.describe((objgraph.root(RootKind.CHANGED, "t"), ("i", 0))) == "t[0]"


def test_tuples_and_bound_methods_are_walked_through_but_are_not_nodes():
    ns = _namespace()
    g = _graph(ns)
    tup = ns["lst"][1]
    assert id(tup) in g.nodes and not g.is_node(id(tup))
    assert not g.is_node(id(ns["bound"]))
    assert g.is_node(id(ns["o"])) and g.is_node(id(ns["lst"][1][1]))


def test_values_without_identity_and_globals_are_not_walked():
    ns = {"n": 1, "s": "x", "cls": Obj, "mod": np, "f": len, "t": (1, "a")}
    g = _graph(ns)
    assert [type(o) for o, _, _ in g.nodes.values()] == [tuple]


def test_a_function_of_another_module_is_not_walked_a_notebook_one_is():
    ns = {"__name__": "__main__"}
    exec(NOTEBOOK, ns)
    ns["theirs"] = _library_function()  # made in this module: a library's function
    g = Graph(ns)
    for name in ("get", "theirs"):
        g.add(name, ns[name])
    assert {g.root[oid] for oid in g.nodes} == {"get"}
    cell = ns["get"].__closure__[0]
    assert g.paths(id(cell.cell_contents)) == [("get", ("c", 0), ("x",))]


NOTEBOOK_CLASS = """
class C:
    seen = [1]
    limit = 5
    __slots__ = ('x',)
    def method(self):
        return super().__repr__()
    @staticmethod
    def helper():
        return 1
    @property
    def size(self):
        return 2
"""


def test_a_notebook_class_is_walked_through_its_attributes_another_is_not():
    ns = {"__name__": "__main__"}
    exec(NOTEBOOK_CLASS, ns)
    ns["theirs"] = Obj  # a class of this module: a library's
    g = Graph(ns)
    for name in ("C", "theirs"):
        g.add(name, ns[name])
    cls = ns["C"]
    assert {g.root[oid] for oid in g.nodes} == {"C"}
    assert g.is_node(id(cls)) and g.path(id(cls.seen)) == ("C", ("a", "seen"))
    helper = vars(cls)["helper"]
    assert not g.is_node(id(helper))  # a staticmethod: walked through
    assert g.path(id(helper.__func__)) == ("C", ("a", "helper"), ("d", "__func__"))
    assert objgraph.resolve(g.path(id(vars(cls)["size"].fget)), ns) is vars(cls)["size"].fget
    assert objgraph.describe(g.path(id(helper.__func__))) == "C.helper.__func__"
    # the method's `__class__` cell holds the class: another holder, not another node
    assert (id(cls) in g.parents) and ("x",) in [s for _, s in g.parents[id(cls)]]
    assert id(vars(cls)["x"]) not in g.nodes  # a slot's descriptor: made by type()
    exec("class D(C):\n    pass", ns)
    g.add("D", ns["D"])
    assert g.paths(id(cls))[-1] == ("D", ("b", 0))  # a base: what a subclass reads
    assert objgraph.describe(("D", ("b", 0), ("a", "seen"))) == "D.__bases__[0].seen"


def test_a_notebook_function_is_walked_through_its_defaults():
    ns = {"__name__": "__main__"}
    exec("def f(x, acc=[], *, seen={}):\n    return x", ns)
    g = Graph(ns)
    g.add("f", ns["f"])
    f = ns["f"]
    assert g.path(id(f.__defaults__[0])) == ("f", ("D", 0))
    assert g.path(id(f.__kwdefaults__["seen"])) == ("f", ("K", "seen"))
    assert objgraph.resolve(("f", ("K", "seen")), ns) is f.__kwdefaults__["seen"]
    assert objgraph.describe(("f", ("D", 0))) == "f.__defaults__[0]"


def test_a_class_is_walked_after_a_step_only_when_it_was_an_input():
    ns = {"__name__": "__main__"}
    exec(NOTEBOOK_CLASS, ns)
    before = Graph(ns)
    before.add("C", ns["C"])
    exec(NOTEBOOK_CLASS.replace("class C", "class D"), ns)
    after = Graph(ns)
    after.old, after.open = before, {id(ns["C"])}
    after.new_classes = False
    for name in ("C", "D"):
        after.add(name, ns[name])
    assert {after.root[oid] for oid in after.nodes} == {"C"}


def test_an_object_reached_twice_records_its_other_holders_and_links_the_roots():
    shared = [1]
    ns = {"a": {"k": shared}, "b": [shared], "c": shared}
    g = _graph(ns)
    assert g.root[id(shared)] == "a"
    assert sorted(g.paths(id(shared))) == [("a", ("k", "k")), ("b", ("i", 0)), ("c",)]
    assert g.links == [("a", "b"), ("a", "c")]


def test_an_object_holding_itself_is_walked_once():
    loop = []
    loop.append(loop)
    g = _graph({"loop": loop})
    assert list(g.nodes) == [id(loop)]
    assert g.paths(id(loop)) == [("loop",), ("loop", ("i", 0))]
    assert g.links == []


def test_arrays_record_the_memory_they_view_and_their_shape():
    base = np.zeros((3, 4))
    view = base[1:, ::2]
    of_view = view[0]
    ns = {"base": base, "view": view, "of_view": of_view, "other": np.zeros(2)}
    g = _graph(ns)
    assert objgraph.memory_owner(of_view) is base
    assert objgraph.memory_owner(base) is base
    assert sorted(g.owners[id(base)]) == sorted(map(id, (base, view, of_view)))
    assert g.owners[id(ns["other"])] == [id(ns["other"])]
    assert g.owner_obj[id(base)] is base
    assert g.shape[id(view)] == ((2, 2), np.dtype(float))
    assert objgraph.address(of_view) - objgraph.address(base) == 4 * 8  # row 1


def test_an_array_subclass_attributes_are_walked():
    class Tagged(np.ndarray):
        pass

    t = np.zeros(3).view(Tagged)
    t.meta = {"unit": [1]}
    g = _graph({"t": t})
    assert objgraph.describe(g.path(id(t.meta["unit"]))) == "t.meta['unit']"


def test_the_walk_stops_at_its_limit_and_says_which_name_it_did_not_finish():
    rows = [[i] for i in range(100)]
    g = Graph({}, limit=50)
    g.add("small", [[1]])
    g.add("rows", rows)
    assert g.truncated == {"rows"}
    assert len(g.nodes) == 50
    whole = Graph({}, limit=1000)
    whole.add("rows", rows)
    assert not whole.truncated and len(whole.nodes) == 101


def test_nodes_of_an_earlier_graph_are_not_walked_into_unless_open():
    inner = [1]
    outer = [inner]
    before = _graph({"outer": outer})
    after = Graph({})
    after.old = before
    after.add("again", outer)
    assert list(after.nodes) == [id(outer)]
    opened = Graph({})
    opened.old, opened.open = before, {id(outer)}
    opened.add("again", outer)
    assert set(opened.nodes) == {id(outer), id(inner)}


def test_a_weak_reference_is_not_followed_when_told_not_to():
    target = Obj()
    target.data = [1]
    g = Graph({})
    g.weak = False
    g.add("w", weakref.ref(target))
    assert id(target) not in g.nodes


def test_lookup_follows_attribute_chains():
    ns = {"settings": types.SimpleNamespace(inner=types.SimpleNamespace(x=3))}
    assert objgraph.lookup(ns, "settings.inner.x") == 3
    with pytest.raises(KeyError):
        objgraph.lookup(ns, "missing")
    with pytest.raises(AttributeError):
        objgraph.lookup(ns, "settings.nope")


@pytest.mark.parametrize(
    "path",
    [
        ("a", ("i", 5)),
        ("a", ("k", "nope")),
        ("a", ("p", 3)),
        ("a", ("a", "x")),
        ("o", ("s", "nope")),
        ("a", ("c", 0)),
        ("dead", ("w",)),
        ("a", ("z", 1)),
        ("gone",),
    ],
    ids=objgraph.describe,
)
def test_a_path_that_leads_nowhere_raises_one_of_the_path_errors(path):
    ns = {"a": [1], "o": Obj(), "dead": weakref.ref(Obj())}
    with pytest.raises(objgraph.PATH_ERRORS):
        objgraph.resolve(path, ns)


def test_a_path_through_a_defaultdict_without_the_key_leads_nowhere_and_adds_nothing():
    ns = {"d": defaultdict(list)}
    with pytest.raises(KeyError):
        objgraph.resolve(("d", ("k", "nope")), ns)
    assert ns["d"] == {}


@pytest.mark.parametrize("kind", list(RootKind))
def test_a_root_of_each_kind_reads_back_as_its_name(kind):
    r = objgraph.root(kind, "df")
    assert objgraph.root_name(r) == "df"
    assert (r == "df") == (kind is RootKind.BOUND)
    assert not r[0].isidentifier() or kind is RootKind.BOUND


def test_slot_names_are_mangled_as_python_mangles_them():
    class Child(Slotted):
        __slots__ = ("b",)

    assert objgraph.slot_names(Child) == ("b", "a", "_Slotted__hidden", "unset")


# -- a property: random nested lists and dicts with aliasing -------------------------
def _values(draw_leaf):
    return st.recursive(
        draw_leaf,
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner, max_size=3)
        ),
        max_leaves=8,
    )


@st.composite
def aliased_namespaces(draw):
    """A namespace of nested lists and dicts, where some containers are put in several
    places (the same object)."""
    pool: list = []

    def place(value):
        if isinstance(value, (list, dict)) and pool and draw(st.booleans()):
            return draw(st.sampled_from(pool))
        if isinstance(value, (list, dict)):
            pool.append(value)
        return value

    def build(value):
        if isinstance(value, list):
            return place([build(v) for v in value])
        if isinstance(value, dict):
            return place({k: build(v) for k, v in value.items()})
        return value

    shapes = draw(st.lists(_values(st.integers(0, 3)), min_size=1, max_size=4))
    return {f"n{i}": build(s) for i, s in enumerate(shapes)}


@given(ns=aliased_namespaces())
@settings(max_examples=40, deadline=None, database=None)
def test_every_container_reached_is_one_node_whose_paths_all_lead_to_it(ns):
    g = _graph(ns)
    reached = {}

    def visit(v):
        if isinstance(v, (list, dict)) and id(v) not in reached:
            reached[id(v)] = v
            for x in v.values() if isinstance(v, dict) else v:
                visit(x)

    for v in ns.values():
        visit(v)
    assert set(g.nodes) == set(reached)
    for oid, obj in reached.items():
        for path in g.paths(oid):
            assert objgraph.resolve(path, ns) is obj


def _record(g: Graph) -> tuple:
    """What a graph recorded: nodes (in order, objects by identity), roots, holders,
    links and the names it did not finish."""
    nodes = [(oid, id(obj), parent, step) for oid, (obj, parent, step) in g.nodes.items()]
    return nodes, dict(g.root), dict(g.parents), list(g.links), set(g.truncated)


def _walked_both_ways(ns: dict, limit: int, old: Graph | None = None) -> tuple[Graph, Graph]:
    """The graph of `ns` walked as it is, and walked taking each row in turn."""
    from unittest import mock

    def walk():
        g = Graph(ns, limit)
        g.old = old
        for name, value in ns.items():
            g.add(name, value)
        return g

    at_once = walk()
    with mock.patch.object(objgraph, "_ROWS", 1 << 40):
        return at_once, walk()


@st.composite
def tables(draw):
    """Namespaces of tables: a list, tuple, deque or dict of 60 to 90 rows (dicts, lists
    and tuples of atomic values, atomic values, now and then a row held twice, a deeper
    one, an object), some tables sharing rows."""
    shared: list = []

    def row():
        kind = draw(st.sampled_from(["dict", "dict", "list", "tuple", "atom", "deep", "again"]))
        if kind == "again" and shared:
            return draw(st.sampled_from(shared))
        if kind == "deep":
            return {"k": [1, [2]]} if draw(st.booleans()) else Obj()
        if kind == "atom":
            return draw(st.sampled_from([1, "s", None, 2.5]))
        items = draw(st.lists(st.sampled_from([1, "x", None]), max_size=3))
        made = (
            dict(zip("abc", items)) if kind == "dict" else items if kind == "list" else tuple(items)
        )
        if draw(st.integers(0, 9)) == 0:
            shared.append(made)
        return made

    def table():
        items = [row() for _ in range(draw(st.integers(60, 90)))]
        if draw(st.booleans()):  # (half the time: leaves and atomic values only, none shared)
            items = [r if type(r) in (dict, list, tuple, int, str) else [1] for r in items]
            items = [{"a": 1} if isinstance(r, dict) and "k" in r else copy.copy(r) for r in items]
            items = [(*r, 0) if type(r) is tuple else r for r in items]  # (`()` is one object)
        shape = draw(st.sampled_from(["list", "tuple", "deque", "dict", "defaultdict"]))
        if shape in ("dict", "defaultdict"):
            d = {} if shape == "dict" else defaultdict(list)
            d.update({f"k{i}": v for i, v in enumerate(items)})
            return d
        return {"list": list, "tuple": tuple, "deque": deque}[shape](items)

    return {f"t{i}": table() for i in range(draw(st.integers(1, 3)))}


@given(ns=tables(), limit=st.sampled_from([1_000_000, 120, 200]))
@settings(max_examples=150, deadline=None, database=None)
def test_rows_recorded_at_once_are_what_the_walk_records_one_by_one(ns, limit):
    """A table's leaf rows are recorded in passes over all of them (`Graph.rows`): the
    same nodes in the same order, the same holders and links, the same names left
    unfinished at the limit, as when each row is taken in turn."""
    at_once, one_by_one = _walked_both_ways(ns, limit)
    assert _record(at_once) == _record(one_by_one)
    assert not one_by_one.rows


def test_a_table_of_leaf_rows_is_recorded_at_once_and_one_held_twice_is_not():
    rows = [{"a": i, "b": str(i)} for i in range(100)]
    pairs = {f"k{i}": [i, i] for i in range(100)}
    g = _graph({"rows": rows, "pairs": pairs})
    assert set(g.rows) == {id(rows), id(pairs)}
    assert g.rows[id(pairs)][:2] == ("k", list(pairs))
    assert g.path(id(pairs["k7"])) == ("pairs", ("k", "k7"))
    op, where, ids = g.rows[id(rows)]
    assert (op, where, ids) == ("i", list(range(100)), [id(r) for r in rows])
    assert g.path(id(rows[7])) == ("rows", ("i", 7))
    twice = rows[:70] + [rows[3]]
    g = _graph({"twice": twice})
    assert id(twice) not in g.rows  # (taken one by one: the second holder is recorded)
    assert g.parents[id(rows[3])] == [(id(twice), ("i", 70))]


class Record:
    """A notebook's record class: its attributes in its instance dict."""

    def __init__(self, **attrs):
        self.__dict__.update(attrs)


class SlottedRecord:
    __slots__ = ("a", "__dict__")


class Rows(list):
    """A list with attributes of its own, stacked after its items."""


@st.composite
def object_tables(draw):
    """Namespaces of tables of objects: a list, tuple, deque, dict or list subclass of 60
    to 90 instances whose attributes are atomic values and dicts, lists and tuples of
    them, each table with at most one flaw, once or twice: a deeper attribute, a leaf or
    an instance held twice, an instance or a leaf of an earlier table, one with slots, an
    atomic value or a leaf row among the instances."""
    made: list = []  # every instance, for the next tables' flaws

    def leaf(kind):
        items = draw(st.lists(st.sampled_from([1, "x", None]), max_size=3))
        return {"dict": dict(zip("abc", items)), "list": items, "tuple": (*items, 0)}[kind]

    def record(cls=None):
        obj = (cls or Record)()
        for a in draw(st.lists(st.sampled_from("uvwxyz"), max_size=4, unique=True)):
            kind = draw(st.sampled_from(["atom", "list", "dict", "tuple"]))
            value = draw(st.sampled_from([1, "s", None, 2.5])) if kind == "atom" else leaf(kind)
            setattr(obj, a, value)
        return obj

    def table():
        rows = [record() for _ in range(draw(st.integers(60, 90)))]
        flaw = draw(st.sampled_from(["none", "deep", "leaf twice", "twice", "earlier", "earlier",
                                     "earlier leaf", "slotted", "atom", "leaf row"]))  # fmt: skip
        for _ in range(draw(st.integers(1, 2))):
            at = draw(st.integers(0, len(rows) - 1))
            other = rows[draw(st.integers(0, len(rows) - 1))]
            if flaw == "deep":
                rows[at].deep = [[1]]
            elif flaw == "leaf twice" and vars(other):
                rows[at].shared = next(iter(vars(other).values()))
            elif flaw == "twice":
                rows[at] = other
            elif flaw == "earlier" and made:
                rows[at] = draw(st.sampled_from(made))
            elif flaw == "earlier leaf" and made:
                rows[at].shared = [*vars(draw(st.sampled_from(made))).values(), [0]][0]
            elif flaw in ("slotted", "atom", "leaf row"):
                rows[at] = {"slotted": record(SlottedRecord), "atom": 7, "leaf row": [1]}[flaw]
        made.extend(r for r in rows if isinstance(r, Record))
        shape = draw(st.sampled_from(["list", "tuple", "deque", "dict", "defaultdict", "Rows"]))
        if shape in ("dict", "defaultdict"):
            d = {} if shape == "dict" else defaultdict(list)
            d.update({f"k{i}": v for i, v in enumerate(rows)})
            return d
        out = {"list": list, "tuple": tuple, "deque": deque, "Rows": Rows}[shape](rows)
        if shape == "Rows":
            out.meta = [1]
        return out

    return {f"t{i}": table() for i in range(draw(st.integers(1, 3)))}


@given(ns=object_tables(), limit=st.sampled_from([1_000_000, 150, 300]), after=st.booleans())
@settings(max_examples=150, deadline=None, database=None)
def test_tables_of_objects_recorded_at_once_are_what_the_walk_records_one_by_one(ns, limit, after):
    """A table of plain instances is recorded with their attributes in passes (`Graph.rows`):
    the same nodes in the same order, holders, links and unfinished names as when each
    instance is taken in turn; after a step too, where the inputs' objects are not walked
    into (`old`: here the first table's)."""
    inputs = _graph({"t0": ns["t0"]})
    at_once, one_by_one = _walked_both_ways(ns, limit, inputs if after else None)
    assert _record(at_once) == _record(one_by_one)
    assert not one_by_one.rows


def test_a_table_of_records_is_recorded_at_once_with_their_attributes():
    records = [Record(name=f"r{i}", score=i / 3, tags=[i, "x"], at={"k": i}) for i in range(80)]
    by_name = {r.name: r for r in records[:70]}
    g = _graph({"records": records, "by_name": by_name})
    assert g.rows[id(records)] == ("i", list(range(80)), list(map(id, records)))
    assert g.path(id(records[5].tags)) == ("records", ("i", 5), ("a", "tags"))
    assert id(by_name) not in g.rows  # (its records were met before: taken one by one)
    assert g.parents[id(records[3])] == [(id(by_name), ("k", "r3"))]
    slotted = [SlottedRecord() for _ in range(80)]
    g = _graph({"slotted": slotted})
    assert id(slotted) not in g.rows  # (a slot is stacked after the dict: one by one)
    assert len(g.nodes) == 81


SHARES = [
    "an earlier table's record",
    "an earlier table's record of atoms",
    "an earlier table's leaf",
]


@pytest.mark.parametrize("shares", SHARES)
@pytest.mark.parametrize("after", [False, True])
def test_a_table_of_records_sharing_an_object_met_before_is_taken_one_by_one(shares, after):
    t0 = [Record(a=[i]) if i != 3 or "atoms" not in shares else Record(a=i) for i in range(70)]
    t1 = [Record(a=[i]) for i in range(70)]
    if shares == "an earlier table's leaf":
        t1[5].shared = t0[3].a
    else:
        t1[5] = t0[3]
    ns = {"t0": t0, "t1": t1}
    inputs = _graph({"t0": t0})  # (after a step: the inputs' objects are not walked into)
    at_once, one_by_one = _walked_both_ways(ns, 1_000_000, inputs if after else None)
    # (a leaf of the inputs is recorded, not walked into, either way: no reason to stop)
    assert (id(t1) in at_once.rows) == (after and shares == "an earlier table's leaf")
    assert _record(at_once) == _record(one_by_one)
