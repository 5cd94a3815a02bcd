"""The round-trip check of a value stored alone (`engine/keep/value_check.py`): its copy
must digest as the live value did, or the step is not cached; values exact by
construction are not loaded back."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from resumable_cells.engine.keep import value_check
from resumable_cells.errors import Unstorable
from resumable_cells.hashing.values import Hasher

LOSSY = """class Lossy:
    def __init__(self, data, cache=None):
        self.data, self.cache = data, {}
    def __reduce__(self):
        return Lossy, (self.data, self.cache)"""


def _put(store, ns: dict, name: str):
    d = Hasher(ns).value_digest(ns[name], name)
    return store.put_value(d, ns[name], name, value_check.checker(d, ns, name))


def test_a_value_whose_class_drops_state_when_pickled_is_refused_and_nothing_written(notebook):
    notebook.run(LOSSY + "\nv = Lossy([1, 2])\nv.cache['fit'] = 3\nok = Lossy([1, 2])")
    ns, store = notebook.ns, notebook.store
    with pytest.raises(Unstorable) as err:
        _put(store, ns, "v")
    assert err.value.name == "v"
    assert "Lossy does not survive pickling: its restored copy differs" in err.value.why
    assert store.used_bytes() == 0
    assert store.get_value(_put(store, ns, "ok")).data == [1, 2]  # its copy is the same


def test_a_step_binding_a_lossy_value_is_not_cached(notebook):
    notebook.run(LOSSY)
    cell = "%%step make\nv = Lossy([1, 2])\nv.cache['fit'] = 3"
    assert notebook.run(cell) == "ran"
    assert "does not survive pickling" in notebook.notes["make"]
    assert notebook.run(cell) == "ran"


def test_a_recursive_function_is_checked_against_its_own_copy(notebook):
    cells = ["%%step define\ndef fact(n):\n    return 1 if n < 2 else n * fact(n - 1)"]
    live, again = notebook.replay(cells, "fact(5)")
    assert live == again == "120"


class _Text(str):
    pass


@pytest.mark.parametrize(
    "value",
    [
        3,
        "s",
        [1, "a", None],
        (1.5, b"x"),
        {"a": 1, "b": [1, 2]},
        np.arange(3),
        pd.DataFrame({"a": [1, 2], "b": [0.5, 1.5]}),
        pd.Series([1.0, 2.0]),
        np.array(["a", None, 1.5, 7], dtype=object),
        pd.DataFrame({"a": ["x", None, float("nan")], "n": [1, 2, 3]}).set_index("a"),
        pd.Series(["x", "y"], index=["i", "j"], dtype=object),
    ],
    ids=[
        "int",
        "str",
        "list",
        "tuple",
        "dict",
        "array",
        "frame",
        "series",
        "object-array",
        "frame-of-strings",
        "series-of-strings",
    ],  # fmt: skip
)
def test_values_exact_by_construction_are_not_loaded_back(value):
    assert value_check.exact(value)


@pytest.mark.parametrize(
    "value",
    [
        np.array([object()], dtype=object),
        {(1, 2): 3},
        pd.DataFrame({"a": ["x", ["a list"]]}, dtype=object),
        pd.Series([_Text("a str of its own class")], dtype=object),
        pd.DataFrame({"n": [1]}, index=pd.Index([(1, 2)], tupleize_cols=False)),
        pd.Series(["x"], dtype="category"),
        [np.arange(2)],
    ],
    ids=[
        "object-array",
        "tuple-keys",
        "object-frame",
        "str-subclass",
        "tuple-index",
        "categorical",
        "list-of-arrays",
    ],  # fmt: skip
)
def test_other_values_are_loaded_back(value):
    assert not value_check.exact(value)


def test_an_exact_value_is_not_loaded_back_at_all(store, monkeypatch):
    from resumable_cells.storage import serialize

    def never(*args, **kwargs):
        raise AssertionError("loaded back")

    monkeypatch.setattr(serialize, "load_back", never)
    ns = {"x": np.arange(5)}
    assert store.get_value(_put(store, ns, "x")).tolist() == [0, 1, 2, 3, 4]


def test_a_module_attribute_stored_as_one_is_not_loaded_back(store, monkeypatch):
    import random

    from resumable_cells.storage import serialize

    ns = {"r": random._inst}  # `from random import _inst`: a Random, which loads back
    assert not value_check.exact(ns["r"])
    with serialize.importing({id(ns["r"]): (ns["r"], "random", "_inst")}):
        assert value_check.exact(ns["r"])  # stored as `random._inst`, read back as itself
        monkeypatch.setattr(serialize, "load_back", lambda *a, **k: pytest.fail("loaded back"))
        ref = _put(store, ns, "r")
    assert store.get_value(ref) is random._inst
    assert not value_check.exact(ns["r"])


@pytest.mark.parametrize(
    "column",
    [
        ["Bob", None, "Lisa", "x\u00e9"],
        ["a", float("nan")] * 3000,  # as strings of more than 4096 values travel
        pd.array(["a", None, "c"], dtype="string[python]"),
        pd.Series(["s"] * 5000, dtype="str"),
        pd.Series([1, None, 2.5, True, b"raw"], dtype=object),
    ],
    ids=["str", "str-long", "string-python", "str-long-dtype", "atoms"],
)
def test_strings_and_atoms_said_exact_do_come_back_with_their_digest(column):
    from resumable_cells.storage import serialize

    frame = pd.DataFrame({"c": column, "n": range(len(column))})
    for value in (frame, frame.set_index("c"), frame["c"]):
        assert value_check.exact(value)
        digest = Hasher({}).value_digest(value, "v")
        copy = serialize.load_back(*serialize.dumps(value, "v"), "v")
        assert Hasher({}).value_digest(copy, "v") == digest
