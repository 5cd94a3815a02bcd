"""The walk of a table of records (`engine/objects/objgraph.py`): its rows go into the
graph's nodes only when something asks about the nodes, where the walk met them; and a
step's check of its inputs (`keep/changes.py`) finds a row it replaced or moved without
asking for them. A step that reads a million records and binds a number made two million
dict entries nobody read."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from resumable_cells.engine.keep import changes, sharing
from resumable_cells.engine.objects import objgraph

N = 3000  # past the size a container is taken for a table at (`objgraph._ROWS`)


def _rows(n: int = N, key: str = "a") -> list[dict[str, Any]]:
    return [{key: i, "b": str(i)} for i in range(n)]


def _held_twice() -> list[dict[str, Any]]:
    row = {"a": -1}
    return [row, *_rows(), row]


def _table_and_a_row() -> list[Any]:
    table = _rows()
    return [table, table[5]]


def _row_and_its_table() -> list[Any]:
    table = _rows()
    return [table[5], table]


SHAPES: dict[str, Callable[[], Any]] = {
    "a table": _rows,
    "a row held twice": _held_twice,
    "a table, then more to walk": lambda: {"t": _rows(), "more": [[1, 2], [3, [4]]]},
    "two tables": lambda: [_rows(key="a"), _rows(key="c")],
    "a table, then one of its rows": _table_and_a_row,
    "a row, then its table": _row_and_its_table,
    "a dict of rows": lambda: {f"k{i}": {"a": i} for i in range(N)},
    "rows among atoms": lambda: [1, "x", *_rows(), None],
}


def _walked_asking_at_once(value: Any) -> objgraph.Graph:
    """The graph of `value` as the walk made it before a table's rows waited: each table
    asked about as soon as it is recorded."""
    graph = objgraph.Graph({}, 10**7)
    record = graph._rows

    def asked_at_once(*args: Any) -> bool:
        done = record(*args)
        graph.nodes  # noqa: B018  (asking is the point)
        return done

    graph._rows = asked_at_once  # type: ignore[method-assign]
    graph.add("v", value)
    return graph


@pytest.mark.parametrize("shape", SHAPES)
def test_the_nodes_asked_for_are_those_the_walk_met_in_its_order(shape):
    value = SHAPES[shape]()
    graph, at_once = objgraph.Graph({}, 10**7), _walked_asking_at_once(value)
    graph.add("v", value)
    assert not graph.empty()
    assert list(graph.nodes.items()) == list(at_once.nodes.items())
    assert list(graph.root.items()) == list(at_once.root.items())
    assert graph.parents == at_once.parents and graph.links == at_once.links
    assert graph.rows == at_once.rows and graph.singly == at_once.singly
    if shape == "a row held twice":  # recorded one by one, as the walk would have
        assert graph.parents and not graph.rows


def test_a_step_that_reads_a_table_and_binds_a_number_never_asks_for_its_rows():
    records = _rows()
    ns = {"records": records}
    before = sharing.before(ns, ["records"])
    assert before.graph._waiting, "the rows were recorded as the walk met them"
    ns["n"] = len(records)
    assert changes._moved(before.graph) == set()
    plan = sharing.analyse(before, ns, ["n"], {}, {})
    assert plan.alone == ["n"]
    assert before.graph._waiting, "the check of the step's inputs asked for the rows"
    # asked now, they are all there
    assert set(map(id, records)) <= before.graph.nodes.keys()


def _replace_a_row_by_an_equal_one(t: list[Any]) -> None:
    t[5] = dict(t[5])


def _swap_two_rows(t: list[Any]) -> None:
    t[1], t[2] = t[2], t[1]


def _shift_the_rows(t: list[Any]) -> None:
    t.insert(0, t.pop())


MOVES: dict[str, tuple[Callable[[list[Any]], Any], bool]] = {
    "nothing": (lambda t: None, False),
    "a row replaced by an equal one": (_replace_a_row_by_an_equal_one, True),
    "two rows swapped": (_swap_two_rows, True),
    "the rows shifted": (_shift_the_rows, True),
    "the rows reversed": (list.reverse, True),
    "a row appended (a change of value, the digest's)": (lambda t: t.append({"z": 1}), False),
}


@pytest.mark.parametrize("move", MOVES)
@pytest.mark.parametrize("shape", ["a table", "rows among atoms"])
def test_a_row_a_step_replaced_or_moved_is_found_without_asking_for_the_rows(move, shape):
    change, moved = MOVES[move]
    table = SHAPES[shape]()
    before = sharing.before({"t": table}, ["t"])
    change(table)
    assert changes._moved(before.graph) == ({"t"} if moved else set())
    assert before.graph._waiting
