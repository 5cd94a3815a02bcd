"""What a unit cannot keep faithful is refused, when it is written or when it is served:
a class whose own pickling builds parts anew (`keep/unit_check.py`, the cases of
tests/test_loadback.py), a value sharing an object with a name the step does not read
or an input too large to follow (`keep/sharing.py`), and a hit that would leave another
holder with an object it replaces (`units/replaced.py`, `units/byvalue.py`, the cases
of tests/test_whole.py)."""

from __future__ import annotations

import types

import keepers
import pytest
from boards import BOARD, GROW, MAKE, MAKE_FULL

from resumable_cells.engine.keep import sharing, unit_check
from resumable_cells.engine.units import byvalue, replaced, stream
from resumable_cells.errors import Unfaithful

# A box whose `__setstate__` copies its list, as astropy's Table copies its columns.
BOX = """class Box:
    def __init__(self, items):
        self.items = list(items)
    def __getstate__(self):
        return {'items': self.items}
    def __setstate__(self, state):
        self.items = list(state['items'])"""


def test_a_class_whose_setstate_copies_is_restored_part_by_part(notebook):
    cells = [
        BOX,
        "%%step make\nbox = Box([1])",
        "keep = box.items",
        "%%step grow\nbox.items.append(2)",
    ]
    live, again = notebook.replay(cells, "(keep is box.items, box.items)")
    assert live == again == "(True, [1, 2])"
    # written with the raw states (the instance dict itself), not through __setstate__
    unit = [e.unit for e in notebook.entries.values() if e.unit is not None]
    assert len(unit) == 1
    payload = stream.load(unit[0], notebook.store, stream.roots_of(unit[0], notebook.ns))
    assert payload["raw"] is True


def test_a_new_value_whose_pickling_copies_a_part_another_name_holds_is_refused(notebook):
    notebook.run(BOX)
    cell = "%%step make\nbox = Box([1])\nfirst = box.items"
    assert notebook.run(cell) == "ran"
    assert notebook.notes["make"] == (
        "box: box.items and first are one list, and pickling makes two of them "
        "(its library's own pickling builds it or its holder anew)"
    )
    assert notebook.run(cell) == "ran"  # nothing was kept
    assert notebook.ns["first"] is notebook.ns["box"].items
    with pytest.raises(Unfaithful, match="pickling makes two of them"):
        unit_check.put(notebook.last.plan, notebook.store)


def test_the_same_value_without_a_second_name_is_kept(notebook):
    notebook.run(BOX)
    cells = [BOX, "%%step make\nbox = Box([1])\nn = len(box.items)"]
    live, again = notebook.replay(cells, "box.items")
    assert live == again == "[1]"


# A box that pickles by `__getnewargs_ex__` (no raw state: `inplace.raw_state`) and copies
# its list in `__setstate__`: a list it holds that the hit keeps cannot stay its own.
COPYING = """class Copying:
    def __init__(self, items):
        self.items = items
    def __getnewargs_ex__(self):
        return (), {}
    def __new__(cls, *args, **kwargs):
        return super().__new__(cls)
    def __setstate__(self, state):
        self.__dict__.update(state, items=list(state['items']))"""


def test_an_object_the_hit_keeps_that_pickling_puts_another_in_place_of_is_refused(notebook):
    notebook.run(COPYING + "\nkeep = [1]\nc = Copying(keep)")
    assert notebook.run("%%step grow\nc.items.append(2)\nc.n = 1") == "ran"
    why = notebook.notes["grow"]
    assert "is a list the hit keeps, and pickling puts another in its place" in why


# A class whose own constructor, which its pickling calls, looks at the list it is given.
KEEPER = """class Keeper:
    def __init__(self, items):
        self.items = items or []
    def __reduce__(self):
        return Keeper, (self.items,), {k: v for k, v in vars(self).items() if k != 'items'}"""


@pytest.mark.parametrize(
    "setup, cell",
    [
        ("a = []", "a.append([5])\nk = Keeper(a)"),  # a new object
        ("k = Keeper([])", "k.items.append([5])\nk.n = 1"),  # a changed input, replaced
        ("a = []", "a.append(0)\nk = Keeper(a)\nback = [k]\na.append(back)"),  # in a cycle
    ],
    ids=["new", "replaced", "cycle"],
)
def test_an_object_built_by_its_own_code_from_an_object_changed_in_place_is_refused(
    notebook, setup, cell
):
    # A hit builds `k` before it gives the list its new state: `Keeper([])` would make
    # a list of its own, and the list the hit fills would be nobody's `k.items`. (The
    # list holds an object the step made: it cannot have held it before the step.)
    notebook.run(KEEPER + "\n" + setup)
    assert notebook.run("%%step keep\n" + cell) == "ran"
    assert notebook.notes["keep"].startswith(
        "k: k is a Keeper its class's own code builds from a list the step changed in place"
    )


@pytest.mark.parametrize("kind", list(keepers.CASES))
def test_an_object_pickle_builds_by_code_of_its_own_from_an_input_the_step_changed_is_refused(
    notebook, kind
):
    # (a `__setstate__`, a `__new__`, a dict subclass's `__setitem__`: as `__reduce__`)
    cls, step, _ = keepers.CASES[kind]
    notebook.run(cls + "\na = []")
    assert notebook.run(step) == "ran"
    assert notebook.notes["keep"].startswith(
        "k: k is a Keeper its class's own code builds from a list the step changed in place"
    )


def test_one_built_from_a_part_of_a_changed_input_is_served_only_when_the_part_is_unchanged(
    notebook,
):
    # Which part of `d` the step changed is not known when the entry is written: the hit
    # compares the part the constructor is given with its state after the live run.
    setup = KEEPER + "\nd = {'x': [1], 'y': []}"
    for part in ("x", "y"):
        cell = f"%%step keep\nd['y'].append(5)\nk = Keeper(d['{part}'])"
        notebook.run(setup)
        assert notebook.run(cell) == "ran"
        notebook.restart()
        notebook.run(setup)
        assert notebook.run(cell) == ("served" if part == "x" else "ran")
        assert notebook.ns["k"].items is notebook.ns["d"][part]
    assert notebook.misses["keep"].startswith("k: k is a Keeper its class's own code builds")


def test_an_object_built_by_its_own_code_from_an_unchanged_input_is_served(notebook):
    cells = [KEEPER + "\na = [5]", "%%step keep\nk = Keeper(a)\nboth = [k, a]"]
    live, again = notebook.replay(cells, "(k.items is a, both[0] is k, a)")
    assert live == again == "(True, True, [5])"


# As a plotly figure: its reduction hands its constructor a list of its own (its grid),
# which a change to the figure leaves as it was, but restores in place all the same.
GRID = """class Grid:
    def __init__(self, data, ref):
        self.data, self.ref = dict(data), ref
    def __reduce__(self):
        return Grid, (dict(self.data), self.ref)"""


def test_a_changed_object_built_by_its_own_code_from_a_part_it_left_alone_is_served(notebook):
    cells = [GRID + "\ng = Grid({}, [[0]])", "%%step grow\ng.data['x'] = [1]"]
    live, again = notebook.replay(cells, "(g.data, g.ref)")
    assert live == again == "({'x': [1]}, [[0]])"


# A unit whose `__getstate__` drops its cache, as astropy's units drop their hash.
UNIT = """class Unit:
    def __init__(self, parts):
        self.parts = parts
    def key(self):
        if '_key' not in self.__dict__:
            self._key = tuple(self.parts)
        return self._key
    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop('_key', None)
        return state
    def times(self, p):
        return Unit(self.parts + [p])"""


def test_a_changed_input_rebound_whose_state_drops_a_cache_is_served(notebook):
    cells = [
        UNIT,
        "%%step make\nu1 = Unit(['km'])\nu1.key()",
        "keep = [u1]",
        "%%step more\nu1.used = True\nu1 = u1.times('s')",
    ]
    probe = "(u1.parts, keep[0].parts, keep[0].used, keep[0] is not u1)"
    live, again = notebook.replay(cells, probe)
    assert live == again == "(['km', 's'], ['km'], True, True)"


def test_a_value_that_is_an_object_of_a_name_the_step_does_not_read_is_not_cached(notebook):
    # The keys of a dict are not followed: the step reaches `box` without reading it.
    notebook.run("class Box:\n    pass\nbox = Box()\nregistry = {box: 'first'}")
    cell = "%%step take\nb = next(iter(registry))"
    assert notebook.run(cell) == "ran"
    assert notebook.notes["take"] == (
        "b: it is the same object as box, which the step does not read"
    )
    assert notebook.run(cell) == "ran"
    assert notebook.ns["b"] is notebook.ns["box"]


def test_the_same_object_reached_through_a_function_is_an_input_and_kept(notebook):
    # What a function the step calls reads is an input of its key: `box` is read.
    setup = "class Box:\n    pass\nbox = Box()\ndef grab():\n    return box"
    live, again = notebook.replay([setup, "%%step take\nb = grab()"], "b is box")
    assert live == again == "True"


def test_an_input_too_large_to_follow_is_not_cached_when_the_step_shares_it(notebook, monkeypatch):
    monkeypatch.setattr(sharing, "WALK_LIMIT", 50)
    notebook.run("import numpy as np\nrows = [[i] for i in range(100)]")
    assert notebook.run("%%step last\nlast = rows[-1]") == "ran"
    assert notebook.notes["last"] == (
        "rows: it holds more than 50 objects, too many to follow what the step shares "
        "with it or changes in it"
    )
    assert notebook.run("%%step count\nn = len(rows)") == "ran"
    assert notebook.run("%%step count\nn = len(rows)") == "served"
    assert notebook.run("%%step sums\nsums = np.array([r[0] for r in rows])") == "ran"
    assert notebook.run("%%step sums\nsums = np.array([r[0] for r in rows])") == "served"
    assert notebook.run("%%step grow\nrows.append([100])") == "ran"
    assert notebook.notes["grow"].startswith("rows: it holds more than 50 objects")


@pytest.mark.parametrize("make", [MAKE, MAKE_FULL], ids=["whole", "replaced"])
def test_a_changed_input_laid_out_otherwise_after_a_hit_is_served(notebook, make):
    live, again = notebook.replay([BOARD, make, GROW], "(board.spec(), board.part('x').items)")
    assert live == again == "({'x': [1, 2]}, [1, 2])"


@pytest.mark.parametrize("make", [MAKE, MAKE_FULL], ids=["whole", "replaced"])
def test_a_hit_served_whole_gives_the_other_changed_inputs_their_states(notebook, make):
    grow = "%%step grow\nboard.part('x').items.append(2)\nrows[0].append(10)"
    live, again = notebook.replay([BOARD, "rows = [[0], [1]]", make, grow], "(board.spec(), rows)")
    assert live == again == "({'x': [1, 2]}, [[0, 10], [1]])"
    (kept,) = [e for e in notebook.entries.values() if e.whole is not None]
    payload = byvalue.load(
        kept.whole, notebook.store, byvalue.roots_of(kept.whole, notebook.ns), notebook.ns, {}
    )
    rows = notebook.ns["rows"]  # (each of its objects, as the unit gives them)
    assert {id(target) for target, _ in payload["inplace"]} == {id(rows), *map(id, rows)}


def test_a_changed_input_a_library_lays_out_anew_is_also_kept_whole(notebook):
    for c in (BOARD, MAKE, GROW):
        notebook.run(c)
    (grow,) = [e for e in notebook.entries.values() if "board" in e.bound and e.unit]
    assert grow.whole is not None and grow.whole.names == ["board"]
    assert byvalue.needed(notebook.last.plan, grow.unit) == ["board"]
    notebook.restart()
    notebook.run(BOARD)
    assert notebook.run(MAKE) == "served"
    ns = notebook.ns
    assert "empty" not in ns["board"].parts  # laid out otherwise after its hit
    old = id(ns["board"])  # (by id: a variable holding it would be one more holder)
    payload = byvalue.load(grow.whole, notebook.store, byvalue.roots_of(grow.whole, ns), ns, {})
    assert payload["inplace"] == []
    assert id(payload["bind"]["board"]) != old
    assert payload["bind"]["board"].spec() == {"x": [1, 2]}


def test_a_changed_input_held_by_plain_containers_only_is_not_kept_whole(notebook):
    for c in ("rows = [[1], [2]]", "%%step grow\nrows[0].append(10)"):
        notebook.run(c)
    (grow,) = notebook.entries.values()
    assert grow.unit is not None and grow.whole is None
    assert byvalue.needed(notebook.last.plan, grow.unit) == []


@pytest.mark.parametrize("make", [MAKE, MAKE_FULL], ids=["whole", "replaced"])
@pytest.mark.parametrize(
    "holder, why",
    [("first = board.part('x')", "first holds a part of it"), ("keep = [board.parts]", "dict")],
)
def test_it_is_not_served_when_something_else_holds_a_part(notebook, make, holder, why):
    cells = [BOARD, make, holder, GROW]
    for c in cells:
        notebook.run(c)
    notebook.restart()
    for c in cells[:-1]:
        assert notebook.run(c) in (None, "served")
    assert notebook.run(GROW) == "ran"
    assert why in notebook.misses["grow"]
    probe = "board.spec(), board.part('x') is board.parts['x'], board.parts is keep[0]"
    probe = probe if "keep" in holder else probe.replace("keep[0]", "board.parts")
    assert eval(probe, notebook.ns) == ({"x": [1, 2]}, True, True)


def _payload(**bind) -> dict:
    return {"bind": bind, "inplace": [], "rooted": []}


def test_an_object_a_hit_replaces_that_nothing_else_holds_may_be_replaced():
    ns = {"board": {"x": [1]}}
    replaced.check({"board": ns["board"]}, _payload(board={"x": [1, 2]}), ns, {}, ())


def test_an_object_a_hit_replaces_whose_part_a_name_holds_is_refused_naming_it():
    ns = {"board": {"x": [1]}}
    ns["first"] = ns["board"]["x"]
    with pytest.raises(Unfaithful) as err:
        replaced.check({"board": ns["board"]}, _payload(board={"x": [1, 2]}), ns, {}, ())
    assert err.value.why == "first holds a part of it, and a hit gives it a new one"


@pytest.mark.parametrize(
    "held, why",
    [
        (lambda board: {"k": board["x"]}, "keep holds a list of it"),
        (lambda board: [board], "keep holds it"),
        (lambda board: types.SimpleNamespace(k=board), "keep holds it"),
    ],
    ids=["a part in a dict", "it in a list", "it as an attribute"],
)
def test_an_object_a_hit_replaces_that_a_names_value_holds_is_refused_naming_it(held, why):
    ns = {"board": {"x": [1]}}
    ns["keep"] = held(ns["board"])
    with pytest.raises(Unfaithful) as err:
        replaced.check({"board": ns["board"]}, _payload(board={"x": [1, 2]}), ns, {}, ())
    assert err.value.why == f"{why}, and a hit gives it a new one"
    assert err.value.way_out == "read keep in the step too, or mark the step `--effect`"


def test_ipythons_history_holding_a_part_is_not_a_holder_to_refuse_for():
    ns = {"board": {"x": [1]}, "Out": {}}
    ns["_5"] = ns["Out"][5] = ns["board"]["x"]  # a result shown, IPython keeps it
    hidden = {"Out": ns["Out"]}  # (the shell's `user_ns_hidden`)
    replaced.check({"board": ns["board"]}, _payload(board={"x": [1, 2]}), ns, hidden, ())


def test_an_object_a_hit_replaces_whose_part_something_unnamed_holds_is_refused():
    ns = {"board": {"x": [1]}}
    keep = [ns["board"]["x"]]  # a holder no name shows
    with pytest.raises(Unfaithful, match="something outside it holds a list of it"):
        replaced.check({"board": ns["board"]}, _payload(board={"x": [1, 2]}), ns, {}, ())
    assert keep  # (alive until here)


REBIND = """%%step rebind
board.part('x').items.append(2)
board = {'x': board.part('x'), 'e': board.part('empty')}"""


def test_a_changed_input_rebound_in_the_same_step_is_served_whole_with_its_new_value(notebook):
    probe = "{k: p.items for k, p in board.items()}"
    live, again = notebook.replay([BOARD, MAKE, REBIND], probe)
    assert live == again == "{'x': [1, 2], 'e': []}"
