"""The sharing analysis (`engine/keep/sharing.py`): after a live run, how each name is
stored (alone, in the unit, restored in place, replaced, seen) and what is refused, from
the inputs walked before the run (`before`) and what it changed (`changes.of_run`)."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from nokernel import plan_of as run

from resumable_cells.engine.objects import objgraph
from resumable_cells.errors import Unfaithful


def namespace(**values) -> dict:
    return {"__name__": "__main__", "np": np, **values}


def test_a_step_that_binds_atomic_values_stores_each_alone():
    _, plan = run(namespace(n=3), ["n"], "m = n + 1\ns = 'x'")
    assert plan.alone == ["m", "s"]
    assert not plan.has_unit and not plan.post.nodes


def test_a_new_value_that_shares_nothing_is_stored_alone():
    _, plan = run(namespace(a=[1]), ["a"], "b = list(a)\nc = {'k': [2]}\nz = np.zeros(3)")
    assert sorted(plan.alone) == ["b", "c", "z"]
    assert not plan.has_unit


def test_a_value_that_is_an_input_goes_in_the_unit():
    ns = namespace(a=[1])
    _, plan = run(ns, ["a"], "b = a\nc = {'a': a}")
    assert plan.unit_bind == {"b": ns["a"], "c": ns["c"]} and plan.alone == []


def test_new_values_that_share_an_object_go_in_the_unit_together():
    _, plan = run(namespace(), [], "a = [1]\nb = a\nc = [3]")
    assert sorted(plan.unit_bind) == ["a", "b"] and plan.alone == ["c"]


def test_an_input_changed_in_place_that_holds_nothing_else_is_alone_in_place():
    ns = namespace(a=[1])
    changed, plan = run(ns, ["a"], "a.append(2)")
    assert changed.inputs == {"a": ns["a"]} and changed.bound == ["a"]
    assert plan.alone_inplace == ["a"] and not plan.has_unit


def test_a_name_not_read_that_holds_a_changed_object_is_seen():
    ns = namespace(a=[1])
    ns["b"] = ns["a"]
    _, plan = run(ns, ["b"], "b.append(2)")
    assert plan.alone_inplace == ["b"] and plan.seen == ["a"]


def test_a_changed_input_holding_changed_objects_is_restored_in_place_in_the_unit():
    rows = [[1], [2]]
    ns = namespace(rows=rows, first=rows[0])
    _, plan = run(ns, ["rows"], "rows[0].append(10)\nrows.append([3])")
    assert plan.changed_roots == {"rows": rows}
    assert {id(o) for o in plan.unit_inplace} == {id(rows), id(rows[0]), id(rows[1])}
    assert plan.seen == ["first"] and plan.alone_inplace == []
    assert plan.has_unit


def test_an_object_that_cannot_be_restored_in_place_is_replaced_and_rebound():
    import array

    arr = array.array("i", [1, 2])
    ns = namespace(arr=arr, holder={"a": arr})
    ns["alias"] = arr
    _, plan = run(ns, ["holder"], "holder['a'].append(3)")
    assert plan.replaced == {id(arr)}
    assert plan.unit_bind == {"alias": arr, "arr": arr}


def test_an_object_an_unchanged_input_also_holds_is_not_replaced():
    import array

    arr = array.array("i", [1, 2])
    ns = namespace(holder={"a": arr}, other=[arr])
    _, plan = run(ns, ["holder", "other"], "holder['n'] = len(other)")
    assert plan.replaced == set()  # referred to, as it is: it did not change
    assert plan.changed_roots == {"holder": ns["holder"]}
    assert plan.unit_inplace == [ns["holder"]]


def test_a_view_of_an_input_array_goes_in_the_unit_a_new_array_alone():
    _, plan = run(namespace(x=np.arange(6.0)), ["x"], "y = x[1:]\nz = x * 2")
    assert list(plan.unit_bind) == ["y"] and plan.alone == ["z"]


def test_closures_over_one_cell_go_in_the_unit_and_a_function_over_a_changed_cell_is_seen():
    ns = namespace()
    exec(
        "def make():\n    n = [0]\n    def inc():\n        n[0] += 1\n    def get():\n"
        "        return n\n    return inc, get",
        ns,
    )
    _, plan = run(ns, ["make"], "inc, get = make()")
    assert sorted(plan.unit_bind) == ["get", "inc"]
    _, plan = run(ns, ["inc"], "inc.__closure__[0].cell_contents = [5]")
    assert plan.seen == ["get"]


def test_a_value_that_is_an_object_of_a_name_the_step_does_not_read_is_refused():
    class Box:
        pass

    Box.__module__ = "__main__"
    box = Box()
    ns = namespace(box=box, registry={box: "first"})
    with pytest.raises(Unfaithful) as err:
        run(ns, ["registry"], "b = next(iter(registry))")
    assert err.value.name == "b"
    assert err.value.why == "it is the same object as box, which the step does not read"
    assert err.value.way_out == "read box in the step too, or mark the step `--effect`"


def test_a_name_ipython_put_there_holding_the_object_is_not_a_reason_to_refuse():
    class Box:
        pass

    Box.__module__ = "__main__"
    box = Box()
    ns = namespace(box=box, registry={box: "first"}, _3=box)
    _, plan = run(ns, ["registry"], "b = next(iter(registry))", hidden={"box": box})
    assert plan.alone == ["b"]


def test_an_input_too_large_to_follow_is_refused_when_the_step_could_share_it():
    rows = [[i] for i in range(100)]
    with pytest.raises(Unfaithful, match="holds more than 50 objects, too many to follow"):
        run(namespace(rows=rows), ["rows"], "last = rows[-1]", limit=50)
    with pytest.raises(Unfaithful, match="holds more than 50 objects"):
        run(namespace(rows=rows), ["rows"], "rows.append([1])", limit=50)
    _, plan = run(namespace(rows=rows), ["rows"], "n = len(rows)", limit=50)
    assert plan.alone == ["n"]
    _, plan = run(namespace(rows=rows), ["rows"], "s = np.array([r[0] for r in rows])", limit=50)
    assert plan.alone == ["s"]


def test_attributes_set_on_a_notebook_module_go_in_the_unit(notebook_module):
    settings = importlib.import_module(notebook_module("core_plan_settings", "T = 0.5\nOLD = 1\n"))

    ns = namespace(settings=settings)
    cell = "model = [1]\nsettings.T = 0.7\nsettings.model = model\ndel settings.OLD"
    _, plan = run(ns, ["settings"], cell)
    assert plan.modules == {
        "core_plan_settings": {"set": {"T": 0.7, "model": ns["model"]}, "unset": ["OLD"]}
    }
    assert plan.unit_bind == {"model": ns["model"]} and plan.has_unit


@pytest.mark.parametrize("seed", range(12))
def test_the_names_seen_by_a_write_through_a_view_are_those_over_its_memory(seed):
    # Arrays that own their memory, views of them and views of views, under names in a
    # random order (with IPython's own cache names among them); a step reads one name and
    # writes through it. Every other user's name over the same memory saw the change.
    rng = np.random.default_rng(seed)
    owners = [np.zeros(12) for _ in range(4)]
    ns = namespace()
    for n in range(int(rng.integers(8, 40))):
        arr = owners[int(rng.integers(len(owners)))]
        for _ in range(int(rng.integers(0, 3))):  # a view, perhaps of a view
            arr = arr[int(rng.integers(0, 2)) :: int(rng.integers(1, 3))]
        ns[f"_{n}" if rng.random() < 0.2 else f"a{n}"] = arr
    name = next(k for k in ns if k.startswith("a"))
    _, plan = run(ns, [name], f"{name} += 1")
    base = objgraph.memory_owner(ns[name])
    over = [
        k
        for k, v in ns.items()
        if k.startswith("a") and k != name and objgraph.memory_owner(v) is base
    ]
    assert sorted(plan.seen) == sorted(over)
