"""Giving an object its new state in place (`engine/objects/inplace.py`), per kind: the
object stays the object its holders hold (aliases, containers, views of an array,
closures sharing a cell) and takes the state of `fresh`, the live object after the step
as a hit restores it; `restorable` and `problem` say when it cannot."""

from __future__ import annotations

import array
import copy
import pickle
import random
import types
from collections import OrderedDict, defaultdict, deque

import numpy as np
import pytest

from resumable_cells.engine.objects import inplace, objgraph


class Plain:
    def __init__(self, **kw):
        self.__dict__.update(kw)


class Slots:
    __slots__ = ("a", "b")


class WithSetstate:
    def __init__(self, items):
        self.items = items
        self.calls = 0

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.calls += 1


class Reduced:
    """Pickled through its constructor: a new object, not a state."""

    def __init__(self, n):
        self.n = n

    def __reduce__(self):
        return Reduced, (self.n,)


class Getstate:
    def __init__(self, parts):
        self.parts = parts

    def __getstate__(self):
        return {"parts": list(self.parts)}


class NewArgs(Getstate):
    def __getnewargs_ex__(self):
        return (), {}


class ListWithAttrs(list):
    pass


class Tagged(np.ndarray):
    pass


def _restored(target, fresh, **kw):
    """Restore `target` from `fresh`, after asking whether it can be."""
    assert inplace.restorable(target)
    assert inplace.problem(target, fresh) is None
    inplace.restore(target, fresh, **kw)
    return target


@pytest.mark.parametrize(
    "before, after",
    [
        ([1, [2]], [3]),
        ({"a": 1}, {"b": [2], "c": 3}),
        ({1, 2}, {3}),
        (bytearray(b"ab"), bytearray(b"xyz")),
        (deque([1, 2], maxlen=3), deque([3, 4, 5], maxlen=3)),
    ],
    ids=lambda v: type(v).__name__,
)
def test_a_container_takes_the_items_of_its_new_state_and_its_holders_see_them(before, after):
    holder = {"x": before}
    fresh = pickle.loads(pickle.dumps(after))
    target = _restored(before, fresh)
    assert holder["x"] is target
    assert target == after and type(target) is type(after)


def test_the_items_of_the_new_state_are_its_own_objects():
    target, fresh = [[0]], [[1], [2]]
    inplace.restore(target, fresh)
    assert target[0] is fresh[0] and target is not fresh


def test_an_ordered_dict_takes_the_order_and_a_defaultdict_its_factory():
    od = OrderedDict(a=1, b=2)
    fresh = OrderedDict(b=2, a=1)
    assert list(_restored(od, fresh)) == ["b", "a"]
    dd = defaultdict(list, k=[1])
    _restored(dd, defaultdict(set, j={2}))
    assert dict(dd) == {"j": {2}} and dd.default_factory is set
    dd["new"].add(1)  # the factory the step left


def test_a_container_subclass_takes_its_attributes_too():
    target = ListWithAttrs([1])
    target.tag, target.old = "a", True
    fresh = ListWithAttrs([2, 3])
    fresh.tag = "b"
    _restored(target, fresh)
    assert target == [2, 3] and target.__dict__ == {"tag": "b"}


def test_an_array_takes_its_data_in_its_memory_and_its_views_see_it():
    base = np.zeros((2, 3))
    view = base[:, 1]
    _restored(base, np.arange(6.0).reshape(2, 3))
    assert view.tolist() == [1.0, 4.0]
    assert objgraph.memory_owner(view) is base


def test_a_view_takes_its_data_in_the_memory_it_views():
    base = np.zeros(6)
    view = base[1::2]
    inplace.restore(view, np.array([7.0, 8.0, 9.0]))
    assert base.tolist() == [0.0, 7.0, 0.0, 8.0, 0.0, 9.0]


def test_an_array_takes_its_flags_a_read_only_one_is_written_and_made_read_only_again():
    target = np.zeros(3)
    target.flags.writeable = False
    fresh = np.ones(3)
    _restored(target, fresh)
    assert target.tolist() == [1.0, 1.0, 1.0] and target.flags.writeable
    frozen = np.full(3, 2.0)
    frozen.flags.writeable = False
    inplace.restore(target, frozen)
    assert target.tolist() == [2.0] * 3 and not target.flags.writeable


def test_an_array_subclass_takes_its_attributes_too():
    target = np.zeros(2).view(Tagged)
    target.unit = "m"
    fresh = np.ones(2).view(Tagged)
    fresh.unit = "s"
    _restored(target, fresh)
    assert target.tolist() == [1.0, 1.0] and target.unit == "s"


def test_an_array_of_another_shape_or_dtype_is_not_restorable_in_place():
    arr = np.zeros(3)
    assert inplace.restorable(arr, ((3,), np.dtype(float)))
    assert not inplace.restorable(arr, ((2,), np.dtype(float)))
    assert not inplace.restorable(arr, ((3,), np.dtype(int)))
    assert "shape (3,)" in inplace.problem(arr, np.zeros(4))
    assert inplace.problem(arr, np.zeros(3, dtype=int)) is not None


def test_an_array_over_read_only_memory_cannot_take_a_new_state():
    over_bytes = np.frombuffer(b"\x00" * 16)
    assert inplace.problem(over_bytes, np.ones(2)) == "an array the step changed is read-only here"


def test_closure_cells_take_their_contents_and_every_function_over_them_sees_it():
    def make():
        n = [0]

        def get():
            return n

        def other():
            return n

        return get, other

    get, other = make()
    cell = get.__closure__[0]
    _restored(cell, types.CellType([5]))
    assert get() == [5] and other() is get()
    inplace.restore(cell, types.CellType())  # emptied (`del` of the name)
    with pytest.raises(ValueError):
        cell.cell_contents  # noqa: B018


def test_a_function_takes_its_code_defaults_and_attributes():
    def f(x, k=1):
        return x * k

    def g(x, k=1, *, j=2):
        return x + k + j

    g.calls = 3
    holder = [f]
    _restored(f, g)
    assert holder[0] is f and f(1) == 4 and f(1, 2, j=0) == 3
    assert f.__defaults__ == (1,) and f.__kwdefaults__ == {"j": 2} and f.calls == 3


def test_random_generators_take_their_state():
    r, fresh = random.Random(1), random.Random(2)
    expected = copy.deepcopy(fresh).random()
    assert _restored(r, fresh).random() == expected
    gen, fresh_gen = np.random.default_rng(1), np.random.default_rng(2)
    expected = copy.deepcopy(fresh_gen).integers(1 << 30)
    assert _restored(gen, fresh_gen).integers(1 << 30) == expected
    rs, fresh_rs = np.random.RandomState(1), np.random.RandomState(2)
    expected = copy.deepcopy(fresh_rs).randint(1 << 30)
    assert _restored(rs, fresh_rs).randint(1 << 30) == expected


def test_a_generator_over_another_bit_generator_cannot_take_the_state():
    pcg = np.random.Generator(np.random.PCG64(1))
    mt = np.random.Generator(np.random.MT19937(1))
    assert inplace.problem(pcg, mt) == "a Generator over another bit generator is here"


def test_an_instance_takes_its_new_attributes_and_loses_the_ones_gone():
    target = Plain(a=[1], gone=True)
    holder = {"t": target}
    _restored(target, Plain(a=[2], b=3))
    assert holder["t"] is target and target.__dict__ == {"a": [2], "b": 3}


def test_a_slotted_instance_takes_its_slots_and_unsets_the_unset_ones():
    target, fresh = Slots(), Slots()
    target.a, target.b = 1, 2
    fresh.a = 10
    _restored(target, fresh)
    assert target.a == 10 and not hasattr(target, "b")


def test_a_simple_namespace_takes_its_attributes():
    target = types.SimpleNamespace(lr=0.1)
    _restored(target, types.SimpleNamespace(lr=0.2, epochs=3))
    assert vars(target) == {"lr": 0.2, "epochs": 3}


def test_an_instance_with_setstate_is_given_its_state_through_it():
    target = WithSetstate([1])
    fresh = WithSetstate([1, 2])
    _restored(target, fresh)
    assert target.items == [1, 2] and target.calls == 1  # the class's own setter ran


def test_raw_states_are_for_pure_classes_with_a_pickled_state_of_their_own():
    assert inplace.raw_state(Getstate) and inplace.raw_state(WithSetstate)
    assert not inplace.raw_state(Plain)  # its state is its dict anyway
    assert not inplace.raw_state(NewArgs)
    assert not inplace.raw_state(Reduced)
    assert not inplace.raw_state(list)


def test_a_raw_restore_gives_the_instance_dict_itself():
    parts = [1, 2]
    target, fresh = Getstate([0]), Getstate(parts)
    inplace.restore(target, fresh, raw=True)
    assert target.parts is parts  # not the copy `__getstate__` makes
    attrs, slots = inplace.raw_of(fresh)
    assert attrs == {"parts": [1, 2]} and slots == {}


def test_restoring_an_object_into_itself_changes_nothing():
    lst = [1, 2]
    inplace.restore(lst, lst)
    assert lst == [1, 2]


@pytest.mark.parametrize(
    "value",
    [array.array("i", [1]), Reduced(1), iter([1])],
    ids=["C-type", "own-reduce", "iterator"],
)
def test_objects_whose_state_is_not_theirs_to_give_are_not_restorable(value):
    assert not inplace.restorable(value)


def test_pure_python_classes_and_subclasses_of_c_types():
    class Sub(array.array):
        pass

    assert inplace.pure_python(Plain) and inplace.pure_python(ListWithAttrs)
    assert not inplace.pure_python(Sub)
    assert not inplace.restorable(Sub("i"))


def test_what_cannot_be_restored_says_why():
    assert inplace.problem([1], (1,)) == "a list is here where a tuple was"
    assert (
        inplace.problem(deque(maxlen=2), deque(maxlen=3)) == "a deque with another maxlen is here"
    )
    assert inplace.problem([1], [2]) is None
