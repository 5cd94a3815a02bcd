"""Writing a unit and reading it back (`engine/units/stream.py`): references to the
inputs' objects by their paths, arrays over an input's memory or over one new buffer,
the fallbacks of references that lead nowhere, and what a reader refuses."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from nokernel import plan_of

from resumable_cells.engine.units import stream
from resumable_cells.errors import Unfaithful


def written(store, ns: dict, inputs: list[str], cell: str, fallbacks: int = stream.FALLBACKS):
    """The unit of a step, written as `keep/unit_check.put` writes it (without its
    check): (its stream, the writer)."""
    _, plan = plan_of(ns, inputs, cell)
    writer = stream.Writer(plan, fallbacks=fallbacks)
    main, buffers, roots, inner = stream.dump_payload(stream.payload_of(plan), writer, "unit")
    return stream.put_stream(store, main, buffers, roots, inner=sorted(inner)), writer


def served(store, ref, ns: dict) -> dict:
    """The unit read in `ns` and applied; returns its payload."""
    payload = stream.load(ref, store, stream.roots_of(ref, ns))
    stream.apply(payload, ns)
    return payload


def test_a_member_of_an_input_is_written_as_its_path_and_read_as_the_object_there(store):
    ref, writer = written(store, {"d": {"k": [1, 2], "j": "x"}}, ["d"], "lst = d['k']")
    assert ref.roots == ["d"] and ref.inner == ["d"] and ref.names == []
    assert list(writer.paths.values()) == [("d", ("k", "k"))]
    ns2 = {"d": {"k": [1, 2], "j": "x"}}  # another kernel: equal inputs, new objects
    served(store, ref, ns2)
    assert ns2["lst"] is ns2["d"]["k"]


def test_an_input_itself_is_a_root_not_an_inner_object(store):
    ref, _ = written(store, {"a": [1]}, ["a"], "b = [a, a]")
    assert ref.roots == ["a"] and ref.inner == []
    ns2 = {"a": [1]}
    served(store, ref, ns2)
    assert ns2["b"][0] is ns2["a"] and ns2["b"][1] is ns2["a"]


def test_the_inputs_must_be_defined_where_a_unit_is_read(store):
    ref, _ = written(store, {"a": [1]}, ["a"], "b = a")
    with pytest.raises(Unfaithful) as err:
        stream.roots_of(ref, {"x": 1})
    assert (err.value.name, err.value.why) == ("a", "it is not defined here")


def test_a_reference_that_leads_to_another_type_is_made_from_its_fallback(store):
    ref, _ = written(store, {"d": {"k": [1, 2]}}, ["d"], "lst = d['k']")
    ns2 = {"d": {"k": (1, 2)}}  # laid out otherwise (a library's own pickling)
    served(store, ref, ns2)
    assert ns2["lst"] == [1, 2] and type(ns2["lst"]) is list


def test_without_a_fallback_a_reference_that_leads_nowhere_is_refused(store):
    ref, _ = written(store, {"d": {"k": [1, 2]}}, ["d"], "lst = d['k']", fallbacks=0)
    with pytest.raises(Unfaithful) as err:
        stream.load(ref, store, stream.roots_of(ref, {"d": {"k": (1, 2)}}))
    assert err.value.name == "d"
    assert err.value.why == "an object it held is not where it was (tuple instead of list)"
    with pytest.raises(Unfaithful, match=r"not where it was \('k'\)"):
        stream.load(ref, store, stream.roots_of(ref, {"d": {}}))


def test_a_large_container_carries_no_fallback(store):
    big = list(range(stream.FALLBACK_ITEMS + 1))
    ref, _ = written(store, {"d": {"k": big}}, ["d"], "lst = d['k']")
    with pytest.raises(Unfaithful, match="not where it was"):
        stream.load(ref, store, stream.roots_of(ref, {"d": {}}))


def test_a_reference_through_a_defaultdict_without_the_key_uses_its_fallback(store):
    live = defaultdict(list, k=[1, 2])
    ref, _ = written(store, {"dd": live}, ["dd"], "lst = dd['k']")
    ns2 = {"dd": defaultdict(list)}
    served(store, ref, ns2)
    assert ns2["lst"] == [1, 2]
    assert dict(ns2["dd"]) == {}


def test_a_view_of_an_input_array_is_rebuilt_over_its_memory(store):
    ref, _ = written(store, {"x": np.arange(20.0).reshape(4, 5)}, ["x"], "sub = x[1:, 1::2]")
    x2 = np.arange(20.0).reshape(4, 5)
    ns2 = {"x": x2}
    served(store, ref, ns2)
    sub = ns2["sub"]
    assert sub.tolist() == x2[1:, 1::2].tolist() and sub.strides == (40, 16)
    x2[1, 1] = -1
    assert sub[0, 0] == -1


def test_views_of_one_new_buffer_share_the_bytes_they_view_stored_once(store):
    cell = "a, b = (lambda x: (x[10:20], x[15:25]))(np.arange(1000.0))"
    ref, _ = written(store, {"np": np}, [], cell)
    ns2 = {"np": np}
    served(store, ref, ns2)
    a, b = ns2["a"], ns2["b"]
    assert a.tolist() == list(np.arange(10.0, 20.0)) and b.tolist() == list(np.arange(15.0, 25.0))
    assert a.base is not None and np.shares_memory(a, b)
    assert a.base.nbytes == 15 * 8  # the bytes they view, not the whole buffer


def test_an_array_bound_with_its_views_is_their_memory(store):
    ref, _ = written(store, {"np": np}, [], "x = np.arange(6.0)\nv = x[::2]\nw = x[1:3]")
    ns2 = {"np": np}
    served(store, ref, ns2)
    x, v, w = ns2["x"], ns2["v"], ns2["w"]
    x[2] = -1
    assert v[1] == -1 and w[1] == -1


def test_array_of_rebuilds_a_view_over_an_inputs_memory():
    x = np.arange(10.0)
    spec = (stream.VIEW, 0, ("x",), 8, (3,), (16,), np.dtype(float), True)
    arr = stream.array_of(spec, lambda path: {"x": x}[path[0]])
    assert arr.tolist() == [1.0, 3.0, 5.0] and np.shares_memory(arr, x)
    frozen = (*spec[:-1], False)
    assert not stream.array_of(frozen, lambda path: x).flags.writeable


def test_array_of_a_shared_view_reads_its_buffer_at_its_offset():
    buffer = np.arange(4.0)
    spec = (stream.SHARED_VIEW, 0, buffer, 16, (2,), (8,), np.dtype(float), True)
    assert stream.array_of(spec, None).tolist() == [2.0, 3.0]


def test_array_of_refuses_writable_over_read_only_memory_and_unknown_ids():
    over_bytes = np.frombuffer(b"\x00" * 16)
    spec = (stream.VIEW, 0, ("x",), 0, (2,), (8,), np.dtype(float), True)
    with pytest.raises(ValueError, match="read-only here"):
        stream.array_of(spec, lambda path: over_bytes)
    with pytest.raises(ValueError, match="unknown reference"):
        stream.array_of(("?", 0), None)


def test_the_resolver_gives_one_array_per_number_and_read_only_views_when_asked():
    x = np.arange(4.0)
    refs = []
    decode = stream.resolver(refs.append, lambda path: x, read_only=True)
    spec = (stream.VIEW, 7, ("x",), 0, (2,), (8,), np.dtype(float), True)
    first = decode(spec)
    assert decode(spec) is first and not first.flags.writeable
    decode((stream.REF, ("x",), "ndarray"))
    assert refs == [(stream.REF, ("x",), "ndarray")]


def test_apply_restores_in_place_then_binds():
    target = [1]
    holder = [target]
    ns = {"t": target}
    stream.apply({"inplace": [(target, [2, 3])], "modules": {}, "bind": {"u": 5}}, ns)
    assert holder[0] is target and target == [2, 3] and ns == {"t": target, "u": 5}


def test_the_objects_a_unit_replaces_are_found_by_their_paths_where_they_still_are():
    inner = [1]
    roots = {"holder": {"a": inner}}
    payload = {"orphans": [("holder", ("k", "a")), ("holder", ("k", "gone"))]}
    assert stream.replaced_by(payload, roots, {}) == {"holder": inner}


def test_an_object_of_an_input_the_unit_does_not_refer_to_is_found_in_the_namespace():
    # (a count the step advanced: the unit binds a new one and refers to nothing of it)
    old, other = object(), object()
    payload = {"orphans": [("a",), ("gone",)]}
    assert stream.replaced_by(payload, {"b": other}, {"a": old}) == {"a": old}
