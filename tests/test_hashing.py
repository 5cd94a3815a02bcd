"""Digest properties: equal values agree, changes show, copies and round trips agree,
and nothing depends on the process or PYTHONHASHSEED."""

from __future__ import annotations

import copy
import importlib
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from resumable_cells.hashing import Unhashable, digest, register_hasher
from resumable_cells.hashing.values import Hasher, ReadAs, hex_digest
from resumable_cells.storage.store import Store

atoms = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(),
    st.binary(),
)
values = st.recursive(
    atoms,
    lambda inner: st.one_of(
        st.lists(inner),
        st.tuples(inner, inner),
        st.dictionaries(st.text(), inner),
        st.frozensets(st.one_of(st.integers(), st.text())),
        st.sets(st.one_of(st.integers(), st.text())),
    ),
    max_leaves=20,
)


@given(values)
@settings(max_examples=200, deadline=None)
def test_deep_copy_has_the_same_digest(v):
    assert digest(v) == digest(copy.deepcopy(v))


@pytest.fixture(scope="module")
def shared_store(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("store"))
    yield store
    store.close()


@given(v=values)
@settings(max_examples=100, deadline=None)
def test_store_round_trip_keeps_the_digest(v, shared_store):
    name = digest(v).hex()
    shared_store.put_blob(name, v)
    assert digest(shared_store.get_blob(name)) == digest(v)


@given(st.lists(st.integers(), min_size=1), st.integers())
@settings(max_examples=100, deadline=None)
def test_a_changed_element_changes_the_digest(xs, new):
    changed = list(xs)
    if changed[0] == new:
        new += 1
    changed[0] = new
    assert digest(xs) != digest(changed)


@given(st.sets(st.text(), min_size=2))
def test_set_digest_does_not_depend_on_insertion_order(s):
    items = list(s)
    assert digest(set(items)) == digest(set(reversed(items)))


def test_types_are_part_of_the_digest():
    assert len({digest(1), digest(1.0), digest(True), digest("1"), digest(b"1")}) == 5
    assert digest([1, 2]) != digest((1, 2))
    assert digest({"a": 1, "b": 2}) != digest({"b": 2, "a": 1})  # dicts keep order


def test_equal_strings_digest_equally_whether_shared_or_not():
    s = "".join(["ab", "c"])
    assert digest([s, s]) == digest(["abc", "".join(["a", "bc"])])


class _Box:
    def __init__(self, item):
        self.item = item


def test_a_read_as_digest_digests_a_stand_in_wherever_its_object_is_reached():
    # `n4` reaches itself through `n0`; a copy of it that holds `n0` itself reaches the
    # live `n4` instead, unless `n0` is read as the state that holds the copy.
    n0 = [0]
    n4 = {"m": n0}
    n0.append(n4)
    copy = {"m": n0}
    state = [0, copy]
    assert hex_digest(copy) != hex_digest(n4)
    assert ReadAs(None, {id(n0): state}).value_digest(copy) == hex_digest(n4)
    # in every part of the digest: a set's elements are digested in states of their own
    live = hex_digest(frozenset({_Box(n4)}))
    assert ReadAs(None, {id(n0): state}).value_digest(frozenset({_Box(copy)})) == live
    assert ReadAs(None).value_digest(copy) == hex_digest(copy)


_PROGRAM = """
import numpy as np, pandas as pd
from resumable_cells.hashing import digest
v = {"s": {"alpha", "beta", "gamma", "delta"}, "f": frozenset({("x", 1), ("y", 2)}),
     "a": np.arange(12, dtype="float32").reshape(3, 4).T,
     "df": pd.DataFrame({"k": ["a", "b", None], "v": [1.5, 2.5, 3.5]})}
print(digest(v).hex())
"""


def test_digest_is_identical_across_processes_and_hash_seeds():
    seen = set()
    for seed in ("0", "1", "12345", "random"):
        out = subprocess.run(
            [sys.executable, "-c", _PROGRAM],
            env={"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            check=True,
        )
        seen.add(out.stdout.strip())
    assert len(seen) == 1


def test_numpy_digest_covers_dtype_shape_and_order():
    a = np.arange(6, dtype="int64")
    assert digest(a) != digest(a.astype("int32"))
    assert digest(a) != digest(a.reshape(2, 3))
    # C order: a transposed (non-contiguous) view equals its contiguous copy
    b = np.arange(6.0).reshape(2, 3).T
    assert digest(b) == digest(np.ascontiguousarray(b))
    assert digest(np.datetime64("2024-01-01")) != digest(np.datetime64("2024-01-02"))


def _frame():
    return pd.DataFrame(
        {
            "f": np.linspace(0, 1, 50),
            "i": np.arange(50),
            "s": [f"row{i}" for i in range(50)],
            "c": pd.Categorical(["a", "b"] * 25),
            "t": pd.date_range("2024-01-01", periods=50, freq="h"),
        }
    )


def test_dataframe_digest_stable_across_copy_and_round_trip(tmp_path):
    df = _frame()
    d = digest(df)
    assert digest(df.copy(deep=True)) == d
    assert digest(copy.deepcopy(df)) == d
    store = Store(tmp_path / "s")
    store.put_blob(d.hex(), df)
    assert digest(store.get_blob(d.hex())) == d


def test_dataframe_digest_sees_index_columns_dtypes_and_data():
    df = _frame()
    d = digest(df)
    assert digest(df.rename(columns={"f": "g"})) != d
    assert digest(df.set_index("i")) != d
    changed = df.copy()
    changed.loc[3, "s"] = "other"
    assert digest(changed) != d
    assert digest(df.astype({"i": "int32"})) != d


def test_a_frame_with_repeated_labels_is_digested_column_by_column_in_order():
    df = pd.DataFrame([[1, 2, "x"], [3, 4, "y"]], columns=["a", "a", "b"])
    d = digest(df)
    assert digest(df.copy()) == d
    assert digest(df.iloc[:, [1, 0, 2]]) != d  # the two "a" columns swapped
    changed = df.copy()
    changed.iloc[0, 1] = 5  # the second "a" only
    assert digest(changed) != d


def test_register_hasher_for_a_custom_type():
    class Client:
        def __init__(self, url):
            self.url = url
            self.sock = object()

    register_hasher(Client, lambda c: c.url)
    assert digest(Client("a")) == digest(Client("a"))
    assert digest(Client("a")) != digest(Client("b"))


def test_unhashable_value_names_its_path():
    import threading

    with pytest.raises(Unhashable) as err:
        digest({"cfg": {"client": threading.Lock()}}, name="cfg")
    assert "['client']" in err.value.path


class _Node:
    pass


def test_a_weak_reference_digests_as_its_referent_and_survives_the_store(tmp_path):
    import weakref

    tree, other = _Node(), _Node()
    tree.items, other.items = [1], [2]
    tree.me = weakref.ref(tree)
    assert digest(weakref.ref(tree)) != digest(weakref.ref(other))
    gone = weakref.ref(_Node())
    assert digest(gone) != digest(weakref.ref(other))
    store = Store(tmp_path)
    store.put_blob("tree", tree)
    back = store.get_blob("tree")
    assert back.me() is back and digest(back) == digest(tree)
    with pytest.raises(Unhashable, match="callback"):
        digest(weakref.ref(other, print))
    store.close()


def test_an_array_subclass_digests_with_its_attributes(tmp_path):
    class Tagged(np.ndarray):
        pass

    a, b = np.arange(3.0).view(Tagged), np.arange(3.0).view(Tagged)
    a.tag, b.tag = "m", "cm"
    assert digest(a) != digest(b)
    b.tag = "m"
    assert digest(a) == digest(b)


def test_a_quantity_digests_with_its_unit():
    u = pytest.importorskip("astropy.units")
    assert digest([1.0, 2.0] * u.m) != digest([1.0, 2.0] * u.cm)
    assert digest([1.0, 2.0] * u.m) == digest([1.0, 2.0] * u.m)


# -- instances of plain classes: the first writes the class's bytes, the rest reuse them --
class _Plain:
    pass


class _Other:
    pass


def _no_reuse(monkeypatch) -> None:
    """Digest every instance by its class's whole route (as before the reuse)."""
    from resumable_cells.hashing import memo

    class Forgetful(dict):
        def __setitem__(self, key, value):
            pass

    init = memo.Shared.__init__

    def forgetting(self, main_ns):
        init(self, main_ns)
        self.plain = Forgetful()

    monkeypatch.setattr(memo.Shared, "__init__", forgetting)


def _by_whole_routes(value, ns: dict) -> bytes:
    """The digest of `value` with every instance by its class's whole route."""
    with pytest.MonkeyPatch.context() as mp:
        _no_reuse(mp)
        return digest(value, main_ns=ns)


@st.composite
def object_graphs(draw):
    """Instances of two plain classes (one the notebook's, hashed by code) holding
    atoms, lists and each other: shared members, repeats and cycles included."""
    ns: dict = {"__name__": "__main__"}
    exec("class Note:\n    def total(self):\n        return 1\n", ns)
    kinds = [_Plain, _Other, ns["Note"]]
    made = []
    for _ in range(draw(st.integers(1, 12))):
        obj = draw(st.sampled_from(kinds))()
        for attr in draw(st.lists(st.sampled_from("abcd"), max_size=3, unique=True)):
            choice = draw(st.integers(0, 3))
            if choice == 0 or not made:
                setattr(obj, attr, draw(atoms))
            elif choice == 1:
                setattr(obj, attr, draw(st.sampled_from(made)))  # shared, or a cycle later
            elif choice == 2:
                setattr(obj, attr, [draw(atoms), draw(st.sampled_from(made))])
            else:
                setattr(obj, attr, [draw(atoms), draw(atoms)])
        made.append(obj)
    if draw(st.booleans()) and len(made) > 1:
        made[0].back = made[-1]  # a cycle through the first
    order = draw(st.lists(st.sampled_from(made), min_size=1, max_size=20))
    return order, ns


@settings(max_examples=300, deadline=None)
@given(object_graphs())
def test_reusing_a_plain_class_s_bytes_leaves_every_digest_as_it_was(graph):
    order, ns = graph
    assert digest(order, main_ns=ns) == _by_whole_routes(order, ns)


def test_a_change_in_one_of_many_records_shows_after_the_reuse():
    records = []
    for i in range(50):
        r = _Plain()
        r.name, r.tags = f"r{i}", [i, "x"]
        records.append(r)
    before = digest(records)
    records[37].tags[1] = "y"
    assert digest(records) != before
    records[37].tags[1] = "x"
    assert digest(records) == before
    records[37].__class__ = _Other  # same state, another class
    assert digest(records) != before


flat_atoms = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text()
)


@st.composite
def record_lists(draw):
    """A list (or tuple) of instances of one plain class whose attributes hold atoms and
    lists or tuples of atoms, as a notebook's records do: what the digest writes in one
    pass; sometimes with a repeat, a record met before the list, or one that holds more."""
    ns: dict = {"__name__": "__main__"}
    exec("class Note:\n    def total(self):\n        return 1\n", ns)
    cls = draw(st.sampled_from([_Plain, ns["Note"]]))
    attrs = draw(st.lists(st.sampled_from("abcd"), max_size=4, unique=True))
    made = []
    for _ in range(draw(st.integers(2, 30))):
        obj = cls()
        for attr in attrs:
            shape = draw(st.integers(0, 2))
            atom = draw(flat_atoms)
            setattr(obj, attr, atom if shape == 0 else [atom] if shape == 1 else (atom, 1))
        made.append(obj)
    twist = draw(st.integers(0, 4))
    if twist == 1:
        made[-1] = made[0]  # a repeat: a reference
    elif twist == 2:
        made[-1].more = [_Other()]  # a record that holds more than plain data
    value = tuple(made) if draw(st.booleans()) else made
    if twist == 3:
        value = {"head": made[0], "all": value}  # the first met before the list
    return value, ns


@settings(max_examples=300, deadline=None)
@given(record_lists())
def test_a_list_of_records_digests_as_each_of_them_would(graph):
    value, ns = graph
    at_once = digest(value, main_ns=ns)
    assert digest(copy.deepcopy(value), main_ns=ns) == at_once == _by_whole_routes(value, ns)


def test_each_of_many_records_is_in_the_digest():
    records = []
    for i in range(40):
        r = _Plain()
        r.name, r.score, r.tags = f"r{i}", i * 3, [i, "x"]
        records.append(r)
    seen = {digest(records)}
    for r in records:
        r.score += 1
        seen.add(digest(records))
        r.score -= 1
    assert len(seen) == 41 and digest(records) in seen
    assert digest(records[:20] + [records[0]] + records[21:]) not in seen  # a repeat


def test_a_function_a_library_made_is_digested_with_what_it_closes_over():
    # json's scanner is a closure `py_make_scanner` makes: by name alone, two made from
    # other decoders digested alike, and a step reading one would be served the other's
    import json
    from json import scanner

    plain = scanner.py_make_scanner(json.JSONDecoder())
    again = scanner.py_make_scanner(json.JSONDecoder())
    floats_as_text = scanner.py_make_scanner(json.JSONDecoder(parse_float=str))
    assert digest(plain) == digest(again)
    assert digest(plain) != digest(floats_as_text)


# A library whose functions each close over one context that holds them all, as
# mpmath's `sqrt`, `exp`, ... close over its `mp` (and through it its other contexts).
_CONTEXT_LIBRARY = """
READS = [0]

class Context:
    def __init__(self, n):
        self.prec = 53
        for i in range(n):
            setattr(self, f"f{i}", self._make(i))
        # a class of its numbers made for it (no module attribute names it), as mpmath's
        self.number = type("number", (), {"context": self})

    def _make(self, i):
        ctx = self
        def f(x):
            return x * i + ctx.prec
        return f

    def __getstate__(self):
        READS[0] += 1
        return self.__dict__
"""


def test_functions_a_library_made_over_one_context_walk_it_once(tmp_path, monkeypatch):
    (tmp_path / "contextual_library.py").write_text(_CONTEXT_LIBRARY)
    monkeypatch.syspath_prepend(str(tmp_path))
    lib = importlib.import_module("contextual_library")
    monkeypatch.setitem(sys.modules, "contextual_library", lib)  # (gone after the test)
    ctx = lib.Context(40)
    before = lib.READS[0]
    first = digest(ctx.f0)
    # once, not once for each of the 40 functions the context holds (and again for
    # each function those reach): mpmath's `sqrt` took 100 ms so, the names of
    # `from mpmath import *` 24 s
    assert lib.READS[0] - before == 1
    assert digest(ctx.f0) == first
    before = lib.READS[0]
    assert digest([ctx.number(), ctx.number]) != digest([ctx.number(), ctx.f0])
    assert lib.READS[0] - before == 2  # (once for each of the two digests)
    assert digest(ctx.f1) != first  # (closes over another `i`)
    ctx.prec = 113  # what it was made with changed: another function (`mp.dps = 30`)
    assert digest(ctx.f0) != first
    ctx.prec = 53
    assert digest(ctx.f0) == first
    assert digest({"a": ctx.f0, "b": ctx.f0, "c": ctx.f2}) != digest(
        {"a": ctx.f0, "b": ctx.f2, "c": ctx.f2}
    )


set_atoms = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.text(alphabet=st.characters())
)


@given(x=set_atoms)
@settings(max_examples=300, deadline=None, database=None)
def test_a_set_element_is_digested_without_a_hasher_as_a_hasher_would(x):
    """A set's atomic elements skip the Hasher made for each (a vocabulary holds a
    million): the same 16 bytes as `Hasher.part`, lone surrogates and NaN included."""
    from resumable_cells.hashing import values

    assert values._element_digest(x) == values.Hasher().part(x, "x", "chained")


@given(s=st.sets(set_atoms, max_size=40) | st.frozensets(st.text(), max_size=40))
@settings(max_examples=200, deadline=None, database=None)
def test_a_set_of_atomic_values_digests_as_the_general_route_does(s):
    from unittest import mock

    from resumable_cells.hashing import values

    with mock.patch.object(values, "_ELEMENT_TYPES", frozenset()):  # every element by `part`
        general = digest(s)
    assert digest(s) == general


row_atoms = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=3))
plain_rows = st.one_of(
    row_atoms,
    st.lists(row_atoms, max_size=3),
    st.lists(row_atoms, max_size=3).map(tuple),
    st.dictionaries(st.sampled_from(["a", "b", 1]), row_atoms | st.lists(row_atoms, max_size=2)),
)
other_rows = st.one_of(  # each makes a table that is not plain data
    st.dictionaries(
        st.sampled_from(["a", "b"]), st.dictionaries(st.just("c"), row_atoms), min_size=1
    ),
    st.dictionaries(st.tuples(st.integers()), row_atoms, min_size=1),
    st.lists(st.lists(row_atoms), min_size=1),
    st.sets(row_atoms, min_size=1),
    st.just(1j),
)


@st.composite
def tables(draw):
    """60 to 90 rows of plain data, and now and then one or two that are not."""
    items = draw(st.lists(plain_rows, min_size=60, max_size=90))
    for _ in range(draw(st.sampled_from([0, 0, 1, 2]))):
        items.insert(draw(st.integers(0, len(items))), draw(other_rows))
    return items


@given(items=tables())
@settings(max_examples=200, deadline=None, database=None)
def test_many_rows_are_plain_data_when_each_one_is(items):
    """`flat_items` asks of many items at once (in passes over all of them) what it
    asks of a few one by one: a table is plain data when each of its rows is."""
    from resumable_cells.hashing.plain import flat_items

    each = all(flat_items([x]) for x in items)
    assert flat_items(items) == each
    assert flat_items(tuple(items)) == each
    assert flat_items(dict(enumerate(items)).values()) == each


def _digest_elsewhere(setup: str, expression: str) -> bytes:
    """The digest of `expression` in a new interpreter after `setup`: a key computed
    after a restart is the key computed before it."""
    code = f"{setup}\nfrom resumable_cells.hashing import digest\nprint(digest({expression}).hex())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return bytes.fromhex(out.stdout.strip())


def test_mpmath_functions_are_what_their_context_computes_with():
    import mpmath

    sqrt = digest(mpmath.sqrt)
    mp = digest(mpmath.mp)
    try:
        mpmath.mp.dps = 30  # `sqrt(2)` now has 30 digits: a step reading `sqrt` runs again
        assert digest(mpmath.sqrt) != sqrt
        assert digest(mpmath.mp) != mp
    finally:
        mpmath.mp.dps = 15
    assert digest(mpmath.sqrt) == sqrt
    assert digest(mpmath.mp) == mp
    # the same in another process: a key after a restart is the key before it
    assert _digest_elsewhere("import mpmath", "mpmath.sqrt") == sqrt


_NOTEBOOK_CLOSURES = """
reads = [0]

class Data:
    def __init__(self):
        self.rows = list(range(1000))

    def __getstate__(self):
        reads[0] += 1
        return self.__dict__

data = Data()
ops = {}

def make(i, data=data, ops=ops):
    def op(x):
        return ops[(i + 1) % 150](x - 1) if x else data.rows[i]
    return op

for i in range(150):
    ops[i] = make(i)
"""


def test_notebook_functions_sharing_their_state_walk_it_once():
    # 150 closures over one object and over the dict that holds them all: each walked
    # the object, and the dict, afresh (the dict's digest was refused as nested too
    # deeply past 100 of them)
    ns: dict = {"__name__": "__main__"}
    exec(_NOTEBOOK_CLOSURES, ns)
    first = Hasher(ns).value_digest(ns["ops"], "ops")
    assert ns["reads"][0] == 1
    assert Hasher(ns).value_digest(ns["ops"], "ops") == first
    assert Hasher(ns).value_digest(ns["ops"][3], "op") != Hasher(ns).value_digest(
        ns["ops"][4], "op"
    )  # (another `i` in its closure)
    ns["data"].rows[7] = -1  # what they close over changed: other functions
    assert Hasher(ns).value_digest(ns["ops"], "ops") != first
    ns["data"].rows[7] = 7
    assert Hasher(ns).value_digest(ns["ops"], "ops") == first


def test_a_class_a_function_made_at_run_time_is_hashed_by_what_it_holds():
    # sympy's `Function('f')` is a class whose module is None and whose name is all
    # that two of them with other assumptions share: by name, a step reading `f`
    # would be served what it computed with the other
    from sympy import Function

    plain = digest(Function("f"))
    assert digest(Function("f")) == plain
    assert digest(Function("f", real=True)) != plain
    assert digest(Function("g")) != plain
    made = type("Made", (), {"scale": 2, "__module__": "no_such_module"})
    other = type("Made", (), {"scale": 3, "__module__": "no_such_module"})
    assert digest(made) != digest(other)
    assert digest(made) == digest(type("Made", (), {"scale": 2, "__module__": "no_such_module"}))
    assert _digest_elsewhere("from sympy import Function", "Function('f')") == plain


def test_instances_of_a_class_made_at_run_time_are_hashed_with_their_class():
    def made(scale):
        cls = type("Made", (), {"scale": scale, "__module__": "no_such_module"})
        obj = cls()
        obj.label = "same state"
        return obj

    assert digest(made(2)) == digest(made(2))
    assert digest(made(2)) != digest(made(3))  # (their state alike, their classes not)


def test_an_object_known_by_a_name_no_module_holds_is_refused():
    # numpy.frompyfunc's ufuncs reduce to their function's name, which all lambdas share
    import scipy.special

    one = np.frompyfunc(lambda x: x + 1, 1, 1)
    with pytest.raises(Unhashable, match="no module holds it"):
        digest(one)
    assert digest(np.add) != digest(scipy.special.gamma)
    assert digest([np.add, np.add]) == digest([np.add, np.add])


LAZY_PARTS = r"""
import sys
from resumable_cells.hashing import hex_digest, opaque, registry, libraries
import matplotlib, matplotlib.colors, astropy.units as u, numpy as np

# A library's first value hashed loads nothing the notebook did not: a colormap
# (matplotlib without pyplot), a quantity (astropy without its WCS).
hex_digest(matplotlib.colors.Normalize(0, 1)); hex_digest(3 * u.m); hex_digest(np.arange(3))
print(sorted(m for m in ("matplotlib.figure", "matplotlib.backend_bases", "astropy.wcs")
             if m in sys.modules))

# Loaded later, their classes are what they were: drawings, and a WCS by its handler.
import matplotlib.pyplot as plt
from astropy.wcs import WCS
fig, ax = plt.subplots()
print(opaque.is_drawing(fig), opaque.is_drawing(fig.canvas), opaque.is_drawing_type(type(ax)))
print(hex_digest(fig) == hex_digest(fig), registry.handler_for(WCS) is libraries._h_wcs)
w = WCS(naxis=2)
print(registry.handler_for(type(w)) is libraries._h_wcs, hex_digest(w) == hex_digest(w))
"""


def test_a_librarys_first_value_loads_no_part_of_it_the_notebook_did_not():
    """Registering a library's handlers at its first value hashed imported their
    modules: `matplotlib.figure` and the backends (300 ms) for a notebook that hashed a
    colormap, `astropy.wcs` (120 ms) for one of units. Each class is registered once its
    module is loaded, and is the same drawing or handled value then."""
    out = subprocess.run([sys.executable, "-c", LAZY_PARTS], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:4] == ["[]", "True True True", "True True", "True True"]
