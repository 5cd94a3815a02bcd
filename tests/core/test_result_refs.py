"""A step's result pickled with references to the objects the names hold
(`engine/units/result_refs.py`) and read back in another namespace, as a hit does once
it has bound the names."""

from __future__ import annotations

import numpy as np
import pytest
from nokernel import plan_of

from resumable_cells.engine.units import result_refs
from resumable_cells.storage import serialize


def pickled(ns: dict, reads: list[str], cell: str, result: str):
    """(the referrer, the pickle) of `result` after `cell` ran as a step reading `reads`."""
    changed, plan = plan_of(ns, reads, cell)
    referrer = result_refs.Referrer(ns, [*changed.bound, *reads], (plan.post, plan.graph))
    value = eval(result, ns)
    return referrer, serialize.dumps(value, "result", persistent_id=referrer.pid)


def served(pickle: tuple, ns: dict, read: list | None = None):
    def remember(names: list[str]) -> None:
        if read is not None:
            read.extend(names)

    return serialize.loads(*pickle, result_refs.resolver(ns, remember))


def test_a_result_a_bound_name_holds_is_that_name_s_object_when_served():
    referrer, p = pickled({}, [], "h = [8, 1]", "h")
    assert referrer.used and referrer.plain
    ns2, read = {"h": [8, 1]}, []
    assert served(p, ns2, read) is ns2["h"]
    assert read == ["h"]  # (a name a hit left unread is read first)


def test_a_part_of_a_name_and_a_tuple_of_names_refer_to_the_objects():
    referrer, p = pickled({}, [], "h = [[8], [1]]\ng = {'k': 1}", "(h[1], g)")
    assert referrer.used and referrer.plain
    ns2 = {"h": [[8], [1]], "g": {"k": 1}}
    got = served(p, ns2)
    assert got[0] is ns2["h"][1] and got[1] is ns2["g"]


def test_a_part_of_an_input_the_step_left_alone_is_found_from_the_input():
    referrer, p = pickled({"d": {"k": [1]}}, ["d"], "z = 1", "d['k']")
    assert referrer.used
    ns2 = {"d": {"k": [1]}, "z": 1}
    assert served(p, ns2) is ns2["d"]["k"]


def test_a_name_the_step_neither_bound_nor_read_is_not_referred_to():
    referrer, p = pickled({"g": [1]}, [], "z = 1", "g")
    assert not referrer.used
    assert served(p, {}) == [1]


def test_a_view_of_a_name_s_array_views_that_array_s_memory_when_served():
    referrer, p = pickled({"np": np}, ["np"], "a = np.arange(6)", "a[1:4]")
    assert referrer.used and not referrer.plain  # (so the entry's builder checks it)
    ns2 = {"a": np.arange(6)}
    got = served(p, ns2)
    assert got.tolist() == [1, 2, 3] and np.shares_memory(got, ns2["a"])
    ns2["a"][1] = 9
    assert got[0] == 9


def test_a_view_served_over_an_array_laid_out_otherwise_is_refused():
    _, p = pickled({"np": np}, ["np"], "a = np.arange(6)", "a[1:4]")
    with pytest.raises(TypeError, match="laid out otherwise"):
        served(p, {"a": np.arange(12)[::2]})


def test_a_view_of_an_array_with_gaps_is_pickled_by_value():
    # `a` views every other item of a hidden array: the bytes between are nobody's,
    # and a hit restores `a` without them
    referrer, p = pickled({"np": np}, ["np"], "a = np.arange(12)[::2]", "a[1:]")
    assert not referrer.used
    assert served(p, {}).tolist() == [2, 4, 6, 8, 10]


def test_a_path_that_leads_nowhere_when_served_raises():
    _, p = pickled({}, [], "h = [[8], [1]]", "h[1]")
    with pytest.raises(IndexError):
        served(p, {"h": [[8]]})
