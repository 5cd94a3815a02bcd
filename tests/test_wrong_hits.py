"""Hits that left the namespace otherwise than the live run, each found in a real kernel:
the cells run live, then after a restart again, and what the probe prints must be the
same both times. A step that cannot be served right runs live again, saying why.

- Code a hit runs while it loads a unit (a class's own `__reduce__`, `__setstate__`,
  `__new__`, a container's own `__setitem__`) saw the inputs as they were before the
  step, where the live run built the object from them after: `Keeper(a)` keeping
  `items or []` made a list of its own (`engine/keep/own_code.py`,
  `engine/restore/load.py`); an input restored in place through its own `__setstate__`
  could count a list before the list had its new state (`engine/units/stream.py`).
- A hit served through a unit's by-value copy dropped what the step changed in place in
  its other inputs, and a valid unit was refused when its entry had such a copy
  (`engine/units/byvalue.py`, `engine/restore/load.py`).
- Attributes set on a notebook function (`f.cache = 5`, `f.__doc__`) were no part of its
  digest: lost on a hit, and a later step reading them was served the old ones
  (`hashing/code.py`); a default a call fills (`def f(x, acc=[])`) came back as a copy
  (`engine/objects/objgraph.py`);
  a notebook class a step changed was bound to a copy of it on a hit, leaving its
  instances with the old class (`engine/objects/objgraph.py`, `engine/objects/inplace.py`).
- An object a hit replaces rather than changes in place (`next(counter)`: a count is
  rebound to a new one) was looked for among the objects the unit's stream refers to,
  where it is not: whoever else held the old one kept it (`engine/units/stream.py`).
- A served result was a copy apart from the names: `_` and `Out[n]` no longer the
  object `h` holds (`engine/units/result_refs.py`); an iterator over an array or a tuple
  that a hit replaces ran over a copy of it (`engine/objects/objgraph.py`); an input
  given an object equal to the one it held (`h['j'] = e`) kept its digest, so was taken
  as unchanged and left holding the old one (`engine/keep/changes.py`); a name that held
  the object a hit replaces when the step ran live was rebound by every hit, whatever
  it held by then (`engine/units/stream.py: unalias`); a name a step made and deleted
  (`a = 5; del a`) was not among the names it deleted (`engine/keep/changes.py`).
"""

from __future__ import annotations

import pytest
from boards import BOARD, MAKE, MAKE_FULL
from keepers import CASES, KEEP, KEEPS, PROBE, REDUCE
from replay import replay


def twice(kernel, cells: list[str], probe: str) -> tuple[str, str, list[str], str]:
    """(what `print(repr(probe))` prints after `cells` run live, the same after a restart
    and the cells again, the status line of each step of the second pass, what the
    first pass wrote to stderr)."""
    warned = "".join(kernel.ok(c).stderr for c in cells)
    live = kernel.ok(f"print(repr({probe}))").stdout
    kernel.restart()
    kernel.ok("%load_ext resumable_cells")
    lines = []
    for c in cells:
        r = kernel.ok(c)
        if c.startswith("%%step"):
            lines.append(r.status_lines()[0])
    return live, kernel.ok(f"print(repr({probe}))").stdout, lines, warned


# -- code that a hit runs while it builds an object from an input the step changed --------
@pytest.mark.parametrize("kind", list(CASES))
def test_an_object_its_own_code_builds_from_an_input_the_step_changed_is_not_served(kernel, kind):
    cls, step, probe = CASES[kind]
    # A hit builds `k` before it gives `a` its new state: `Keeper([])` kept a list of
    # its own, and `a` got [5] where nobody's `k.items` was it.
    live, again, lines, warned = twice(kernel, [cls, "a = []", step], probe)
    assert live == again
    assert "served" not in lines[0]
    assert "k is a Keeper its class's own code builds from a list the step changed" in warned


def test_one_built_from_a_part_of_an_input_the_step_changed_is_not_served(kernel):
    # Which object inside `d` the step changed is not known when the entry is written:
    # the hit compares the list with the state the live run left it in, and runs the
    # step when they differ.
    cells = [REDUCE, "d = {'x': []}", "%%step keep\nd['x'].append(5)\nk = Keeper(d['x'])"]
    live, again, lines, _ = twice(kernel, cells, "(d, k.items, k.items is d['x'])")
    assert live == again == "({'x': [5]}, [5], True)\n"
    assert "served" not in lines[0]
    assert "Keeper" in kernel.ok("%step why keep").stdout


def test_one_built_from_a_part_of_a_changed_input_the_step_left_alone_is_served(kernel):
    cells = [REDUCE, "d = {'x': [1], 'y': []}", "%%step keep\nd['y'].append(5)\nk = Keeper(d['x'])"]
    live, again = replay(kernel, cells, "(d, k.items, k.items is d['x'])")
    assert live == again == "({'x': [1], 'y': [5]}, [1], True)\n"


@pytest.mark.parametrize(
    "cls",
    [
        "class Keeper:\n" + KEEPS,
        "from dataclasses import dataclass, field\n@dataclass\nclass Keeper:\n"
        "    items: list = field(default_factory=list)",
        "class Keeper:\n    def __init__(self, items=None):\n        self.items = list(items or [])",
    ],
    ids=["keeps", "dataclass", "copies"],
)
@pytest.mark.parametrize("setup", ["a = []", "a = [1]"])
def test_an_object_pickled_by_its_state_from_an_input_the_step_changed_is_served(
    kernel, cls, setup
):
    cells = [cls, setup, KEEP]
    live, again = replay(kernel, cells, PROBE)
    assert live == again


def test_an_input_whose_setstate_reads_another_is_given_its_state_after_it(kernel):
    # `k` is restored in place through its `__setstate__`, which counts its list: the
    # list must have its new state by then, whichever the step changed first.
    counted = (
        "class Counted:\n    def __init__(self, items):\n        self.items = items\n"
        "        self.n = len(items)\n    def __setstate__(self, state):\n"
        "        self.__dict__.update(state)\n        self.n = len(self.items)"
    )
    cells = [
        counted,
        "b = [1]\nk = Counted(b)",
        "%%step grow\nk.tag = 1\nb.append(5)\nk.n = len(b)",
    ]
    live, again = replay(kernel, cells, "(b, k.items is b, k.n, k.tag)")
    assert live == again == "([1, 5], True, 2, 1)\n"


# -- a unit served through its changed inputs kept whole -------------------------------------
GROW_TWO = "%%step grow\nboard.part('x').items.append(2)\nrows[0].append(10)"


@pytest.mark.parametrize("make", [MAKE, MAKE_FULL], ids=["whole", "replaced"])
def test_a_hit_served_whole_keeps_what_the_step_changed_in_its_other_inputs(kernel, make):
    # Served from the copy with `board` whole (its paths lead nowhere after `make`'s
    # hit), `rows[0]` stayed [0].
    cells = [BOARD, "rows = [[0], [1]]", make, GROW_TWO]
    live, again = replay(kernel, cells, "(board.spec(), rows)")
    assert live == again == "({'x': [1, 2]}, [[0, 10], [1]])\n"


def test_a_unit_whose_paths_all_lead_somewhere_is_served_without_its_copy(kernel):
    # The unit alone serves it (the board, which pickles by its constructor, is made
    # anew); its copy's own lookups of the inputs counted as holders of the board, so
    # the unit was refused and the copy read instead.
    cells = [BOARD, MAKE_FULL, "%%step grow\nboard.part('x').items.append(2)"]
    for c in cells:
        kernel.ok(c)
    kernel.restart()
    kernel.ok("%load_ext resumable_cells")
    kernel.ok(
        "import resumable_cells.engine.units.byvalue as _bv\n"
        "def _refuse(*args, **kwargs):\n    raise RuntimeError('the copy was read')\n"
        "_bv.load = _refuse"
    )
    for c in cells:
        r = kernel.ok(c)
    assert "served from cache" in r.status_lines()[0], (r.status_lines(), r.stderr)
    assert kernel.ok("print(board.spec())").stdout == "{'x': [1, 2]}\n"


# -- attributes of notebook functions and classes --------------------------------------------
@pytest.mark.parametrize(
    "setup, step, probe",
    [
        ("def f(x): return x", "%%step s\nf.cache = 5", "f.cache"),
        ("def f(x): return x", "%%step s\nf.calls = []\nf.calls.append(1)", "f.calls"),
        (
            "def f(x): return x\nf.calls = []\nseen = f.calls",
            "%%step s\nf.calls.append(1)",
            "(f.calls, seen is f.calls)",
        ),
        (
            "def f(x):\n    f.calls += 1\n    return x\nf.calls = 0",
            "%%step s\ny = f(2)",
            "(y, f.calls)",
        ),
        (
            "def f(x, acc=[]):\n    acc.append(x)\n    return acc\nkeep = f.__defaults__[0]",
            "%%step s\ny = f(1)",
            "(y, y is f.__defaults__[0], keep is y)",
        ),
        (
            "def f(x, *, acc={}):\n    acc[x] = 1\n    return acc",
            "%%step s\ny = f(1)",
            "(y, y is f.__kwdefaults__['acc'])",
        ),
        (
            "def f(x): return x",
            "%%step s\nf.__doc__ = 'doc'\nf.__name__ = 'g'",
            "(f.__doc__, f.__name__)",
        ),
    ],
    ids=["set", "set-and-append", "append", "counted-by-itself", "default", "kwdefault", "doc"],
)
def test_attributes_a_step_sets_on_a_notebook_function_are_served(kernel, setup, step, probe):
    live, again = replay(kernel, [setup, step], probe)
    assert live == again


def test_a_step_reading_a_function_attribute_is_keyed_on_it(kernel):
    kernel.ok("def f(x): return x\nf.cache = 5")
    kernel.ok("%%step t\ny = f.cache")
    kernel.ok("f.cache = 6")
    r = kernel.ok("%%step t\ny = f.cache")
    assert "served" not in r.status_lines()[0]
    assert kernel.ok("print(y)").stdout == "6\n"


@pytest.mark.parametrize(
    "step, probe",
    [
        ("%%step s\nC.limit = 5", "(C.limit, c.limit, type(c) is C)"),
        ("%%step s\nC.seen.append(1)", "(C.seen, c.seen is C.seen, type(c) is C)"),
        ("%%step s\nC.twice = lambda self: 2 * self.n", "(c.twice(), type(c) is C)"),
        ("%%step s\nC.one = C()\nC.seen.append(C.one)", "(type(C.one) is C, C.seen[0] is C.one)"),
        ("%%step s\nseen = C.seen\nseen.append(2)", "(seen is C.seen, c.seen, c.size())"),
        ("%%step s\ndel C.seen", "(hasattr(c, 'seen'), type(c) is C)"),
    ],
    ids=["set", "append", "method", "instance", "alias", "delete"],
)
def test_a_notebook_class_a_step_changes_stays_the_class_of_its_instances(kernel, step, probe):
    # The hit bound `C` to a copy of the class: `c`, made before, was no longer a `C`.
    setup = (
        "class C:\n    seen = []\n    def __init__(self):\n        self.n = 1\n"
        "    def size(self):\n        return len(super().__dir__())\nc = C()"
    )
    live, again = replay(kernel, [setup, step], probe)
    assert live == again


def test_a_notebook_class_changed_through_its_subclass_is_changed_on_a_hit(kernel):
    setup = "class C:\n    seen = []\nclass D(C):\n    pass"
    step = "%%step s\nD.seen.append(1)\nD.own = 2"
    live, again = replay(kernel, [setup, step], "(C.seen, D.seen is C.seen, D.own)")
    assert live == again == "([1], True, 2)\n"


@pytest.mark.parametrize(
    "holder, member",
    [("{'k': a}", "e['k']"), ("[a]", "e[0]"), ("types.SimpleNamespace(k=a)", "e.k")],
)
@pytest.mark.parametrize("restart", [False, True], ids=["same-kernel", "after-restart"])
def test_an_object_a_hit_replaces_is_not_served_while_another_name_holds_it(
    kernel, holder, member, restart
):
    # `next(a)` changes a count, which no hit can change in place: it binds a new one.
    # The unit's stream refers to nothing of `a`, so the check that nothing else holds
    # the old one looked for it among the stream's references, found no `a` there, and
    # served: `e` kept the old count. Found by `test_sequences_random.py`.
    make = f"%%step make\nimport itertools, types\na = itertools.count(5)\ne = {holder}"
    advance = "%%step advance\nnext(a, None)"
    probe = f"print(repr(a), a is {member})"
    kernel.ok(make)
    kernel.ok(advance)
    live = kernel.ok(probe).stdout
    if restart:
        kernel.restart()
        kernel.ok("%load_ext resumable_cells")
    assert "served" in kernel.ok(make).status_lines()[0]
    line = kernel.ok(advance).status_lines()[0]
    assert live == kernel.ok(probe).stdout == "count(6) True\n"
    assert "a is not as it was (e holds it, and a hit gives it a new one)" in line, line


@pytest.mark.parametrize(
    "cells, change, probe, expected",
    [
        (["h = [8, 1]\nh"], "h.append(2)", "_, _ is h", "([8, 1, 2], True)"),
        (["h = [[8], [1]]\nh[0]"], "h[0].append(2)", "_, _ is h[0]", "([8, 2], True)"),
        (["!a = [1]", "a.append(2); a"], "a.append(3)", "_, _ is a", "([1, 2, 3], True)"),
        (
            ["x = [1]\ny = {'k': 2}\nx, y"],
            "x.append(5)",
            "_, _[0] is x, _[1] is y",
            "(([1, 5], {'k': 2}), True, True)",
        ),
        (
            ["q = [[1], 2]\n[q[0], 'new']"],
            "q[0].append(7)",
            "_, _[0] is q[0]",
            "([[1, 7], 'new'], True)",
        ),
        (
            ["import numpy as np\na = np.arange(4)\na[1:]"],
            "a[1] = 9",
            "_.tolist(), np.shares_memory(_, a)",
            "([9, 2, 3], True)",
        ),
    ],
    ids=["name", "part", "changed-input", "tuple-of-names", "new-holding-a-part", "view"],
)
@pytest.mark.parametrize("restart", [False, True], ids=["same-kernel", "after-restart"])
def test_a_served_result_is_the_object_the_names_hold(
    kernel, cells, change, probe, expected, restart
):
    # The entry stored the result by value, apart from the names: after a hit `_` and
    # `Out[n]` were a copy, and a later change to the name did not show in them as it
    # does live. Found by `test_sequences_random.py`. (`!`: a plain cell.)
    source = [c[1:] if c.startswith("!") else f"%%step\n{c}" for c in cells]
    for c in source:
        kernel.ok(c)
    kernel.ok(change)
    live = kernel.ok(f"print(repr(({probe})))").stdout
    if restart:
        kernel.restart()
        kernel.ok("%load_ext resumable_cells")
    for c in source:
        r = kernel.ok(c)
        if c.startswith("%%step"):
            assert "served" in r.status_lines()[0], r.status_lines()
    kernel.ok(change)
    assert live == kernel.ok(f"print(repr(({probe})))").stdout == expected + "\n"


@pytest.mark.parametrize(
    "make, change, expected",
    [
        ("import numpy as np\nc = np.arange(4.0)", "c[1] = 9", "9.0"),
        ("c = ([1], [2])", "c[1].append(5)", "[2, 5]"),
    ],
    ids=["array", "tuple"],
)
@pytest.mark.parametrize("restart", [False, True], ids=["same-kernel", "after-restart"])
def test_an_iterator_a_hit_advances_runs_over_the_object_it_ran_over(
    kernel, make, change, expected, restart
):
    # `next(b)` on an iterator over an array: a hit replaces the iterator, and the walk
    # saw through iterators over lists only, so the new one ran over a copy of `c`: a
    # later change to `c` did not reach it. Found by `test_sequences_random.py`.
    cells = [f"%%step make\n{make}", "%%step it\nb = iter(c)", "%%step advance\nnext(b, None)"]
    for c in cells:
        kernel.ok(c)
    kernel.ok(change)
    live = kernel.ok("print(next(b))").stdout
    if restart:
        kernel.restart()
        kernel.ok("%load_ext resumable_cells")
    for c in cells:
        assert "served" in kernel.ok(c).status_lines()[0]
    kernel.ok(change)
    assert live == kernel.ok("print(next(b))").stdout == expected + "\n"


@pytest.mark.parametrize(
    "setup, step, probe",
    [
        ("h = {'k': 4, 'j': [1, 2]}", "e = [1, 2]\nh['j'] = e", "h['j'] is e, h"),
        ("import types\no = types.SimpleNamespace(v=[1])", "e = [1]\no.v = e", "o.v is e, o.v"),
        ("l = [[1], [1]]\nfirst = l[0]", "l.reverse()", "l[1] is first, l"),
    ],
    ids=["dict-item", "attribute", "equal-items-reordered"],
)
@pytest.mark.parametrize("restart", [False, True], ids=["same-kernel", "after-restart"])
def test_an_input_given_an_equal_object_in_place_of_its_own_is_changed(
    kernel, setup, step, probe, restart
):
    # `h['j'] = e` with an `e` equal to what `h['j']` held leaves `h`'s digest as it was:
    # the step was taken not to change `h`, and a hit bound `e` alone, leaving `h['j']`
    # the old list (`h['j'] is e` False). Found by `test_sequences_random.py`.
    kernel.ok(setup)
    kernel.ok(f"%%step change\n{step}")
    live = kernel.ok(f"print(repr(({probe})))").stdout
    if restart:
        kernel.restart()
        kernel.ok("%load_ext resumable_cells")
    kernel.ok(setup)
    assert "served" in kernel.ok(f"%%step change\n{step}").status_lines()[0]
    assert kernel.ok(f"print(repr(({probe})))").stdout == live
    assert live.startswith("(True, ")


@pytest.mark.parametrize(
    "then, expected",
    [
        ("b = 2\nc = itertools.count(9)", "2 count(10) False"),
        ("c = itertools.count(9)\nb = c", "count(10) count(10) True"),
    ],
    ids=["moved-on", "still-the-same"],
)
@pytest.mark.parametrize("restart", [False, True], ids=["same-kernel", "after-restart"])
def test_a_name_that_held_what_a_hit_replaces_is_rebound_only_while_it_holds_it(
    kernel, then, expected, restart
):
    # Live, `b` held the count the step advanced, so the entry rebinds `b` to the new
    # count as well; a hit did so whatever `b` held by then, though the step never
    # reads `b`: `b = 2` became a count. Found by `test_sequences_random.py`.
    kernel.ok("import itertools\nc = itertools.count(9)\nb = c")
    kernel.ok("%%step advance\nx = next(c, None)")
    if restart:
        kernel.restart()
        kernel.ok("%load_ext resumable_cells\nimport itertools")
    kernel.ok(then)
    assert "served" in kernel.ok("%%step advance\nx = next(c, None)").status_lines()[0]
    assert kernel.ok("print(b, c, b is c)").stdout == expected + "\n"


@pytest.mark.parametrize("restart", [False, True], ids=["same-kernel", "after-restart"])
def test_a_name_a_step_makes_and_deletes_is_deleted_by_its_hit_too(kernel, restart):
    # `a` was not there when the step first ran: the names it deleted were read as
    # those there before and gone after, so `del a` was not recorded, and a hit in a
    # namespace where `a` held something left it there. Found by `test_sequences_random.py`.
    step = "%%step tidy\na = 5\ndel a\nprint('done')"
    kernel.ok(step)
    if restart:
        kernel.restart()
        kernel.ok("%load_ext resumable_cells")
    kernel.ok("a = bytearray(b'ab6')")
    assert "served" in kernel.ok(step).status_lines()[0]
    assert kernel.ok("print('a' in globals())").stdout == "False\n"
