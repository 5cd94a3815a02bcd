"""A hit leaves the kernel as the live run did: shared objects, views, closures.

Each case runs its cells live, restarts the kernel and runs the same cells again (a new
user's Run All): every step must be served, and a probe cell must print what it printed
after the live run, identities between names included."""

from __future__ import annotations

import importlib.util

import pytest
from replay import replay


def test_two_names_of_one_list_stay_one_list(kernel):
    cells = ["%%step make\na = [1]\nb = a", "%%step grow\nb.append(2)"]
    live, again = replay(kernel, cells, "(a, b, a is b)")
    assert live == again == "([1, 2], [1, 2], True)\n"


def test_a_container_member_stays_the_member(kernel):
    cells = [
        "%%step make\nd = {'k': [1, 2], 'j': 'x'}",
        "%%step take\nlst = d['k']",
        "%%step grow\nlst.append(3)",
    ]
    live, again = replay(kernel, cells, "(d, lst, lst is d['k'])")
    assert live == again == "({'k': [1, 2, 3], 'j': 'x'}, [1, 2, 3], True)\n"


def test_a_member_taken_and_mutated_in_one_step(kernel):
    cells = ["%%step make\nd = {'k': [1, 2]}", "%%step take\nlst = d['k']\nlst.append(3)"]
    live, again = replay(kernel, cells, "(d, lst, lst is d['k'])")
    assert live == again == "({'k': [1, 2, 3]}, [1, 2, 3], True)\n"


def test_an_alias_from_a_plain_cell_sees_a_mutation_in_a_step(kernel):
    cells = [
        "rows = [[1], [2]]",
        "first = rows[0]",
        "%%step grow\nrows[0].append(10)\nrows.append([3])",
    ]
    live, again = replay(kernel, cells, "(rows, first, first is rows[0])")
    assert live == again == "([[1, 10], [2], [3]], [1, 10], True)\n"


def test_b_equals_a_from_a_plain_cell_is_that_object(kernel):
    cells = ["a = [1, 2]", "%%step alias\nb = a", "a.append(3)"]
    live, again = replay(kernel, cells, "(a, b, a is b)")
    assert live == again == "([1, 2, 3], [1, 2, 3], True)\n"


def test_closures_sharing_a_nonlocal_keep_sharing_it(kernel):
    cells = [
        "%%step make\ndef make():\n    n = 0\n    def inc():\n        nonlocal n\n"
        "        n += 1\n        return n\n    def get():\n        return n\n"
        "    return inc, get\ninc, get = make()",
        "%%step bump\nfirst = inc()",
    ]
    live, again = replay(kernel, cells, "(first, get(), inc(), get())")
    assert live == again == "(1, 1, 2, 2)\n"


NP = "import numpy as np"


def test_a_view_bound_with_its_base_stays_a_view_and_a_write_through_it_is_seen(kernel):
    cells = [
        NP,
        "%%step grid\nx2 = np.arange(12).reshape(3, 4)\nsub = x2[:2, :2]",
        "%%step poke\nsub[0, 0] = 99",
    ]
    probe = "(x2.tolist(), sub.tolist(), np.shares_memory(x2, sub))"
    live, again = replay(kernel, cells, probe)
    assert live == again
    assert live.startswith("([[99, 1, 2, 3]") and "True)" in live


def test_a_view_with_offset_and_strides_of_an_input_is_rebuilt_on_it(kernel):
    cells = [
        NP,
        "%%step grid\nx2 = np.arange(20.0).reshape(4, 5)",
        "%%step corner\nsub = x2[1:, 1::2]",
        "%%step poke\nsub[0, 0] = -1\nsub[2, 1] = -2",
    ]
    probe = "(x2.tolist(), sub.strides, sub.base is not None, np.shares_memory(x2, sub))"
    live, again = replay(kernel, cells, probe)
    assert live == again
    assert "-1.0" in live and "-2.0" in live


def test_a_one_dimensional_view_of_a_plain_array(kernel):
    cells = [
        NP,
        "base = np.zeros(10)",
        "%%step half\nhalf = base[3::2]",
        "%%step fill\nhalf += 7",
    ]
    live, again = replay(kernel, cells, "(base.tolist(), half.tolist())")
    assert live == again
    assert "7.0" in live


def test_an_alias_of_a_frame_sees_an_inplace_change(kernel):
    cells = [
        "import pandas as pd",
        "df = pd.DataFrame({'a': [1, 2, 3]})",
        "alias = df",
        "%%step widen\ndf['c'] = df['a'] * 2",
    ]
    live, again = replay(kernel, cells, "(list(alias.columns), alias is df, df['c'].tolist())")
    assert live == again == "(['a', 'c'], True, [2, 4, 6])\n"


def test_an_object_that_cannot_be_restored_in_place_is_rebound_everywhere(kernel):
    cells = [
        "import array\narr = array.array('i', [1, 2])\nholder = {'a': arr}\nalias = arr",
        "%%step grow\nholder['a'].append(3)",
    ]
    live, again = replay(
        kernel, cells, "(holder['a'].tolist(), alias.tolist(), alias is holder['a'])"
    )
    assert live == again == "([1, 2, 3], [1, 2, 3], True)\n"


def test_an_object_an_unchanged_input_holds_keeps_its_identity(kernel):
    cells = [
        "import array\narr = array.array('i', [1, 2])\nholder = {'a': arr}\nother = [arr]",
        "%%step grow\nholder['n'] = len(other)",
    ]
    live, again = replay(kernel, cells, "(holder['n'], holder['a'] is other[0])")
    assert live == again == "(1, True)\n"


def test_a_value_that_is_an_object_of_a_name_the_step_does_not_read_is_not_cached(kernel):
    # The keys of a dict are not followed: the step reaches `box` without reading it.
    kernel.ok("class Box:\n    pass\nbox = Box()\nregistry = {box: 'first'}")
    cell = "%%step take\nb = next(iter(registry))"
    first = kernel.ok(cell)
    assert (
        "not cached: b: it is the same object as box, which the step does not read" in first.stderr
    )
    assert "read box in the step too, or mark the step `--effect`" in first.stderr
    again = kernel.ok(cell)
    assert "ran in" in again.status_lines()[0]
    assert kernel.value("b is box") is True


def test_an_input_too_large_to_follow_is_not_cached_when_the_step_shares_it(kernel):
    kernel.ok(
        "import resumable_cells.engine.keep.sharing as sharing\nsharing.WALK_LIMIT = 50\n"
        "rows = [[i] for i in range(100)]"
    )
    r = kernel.ok("%%step last\nlast = rows[-1]")  # past what the walk followed
    assert "not cached: rows: it holds more than 50 objects" in r.stderr
    r = kernel.ok("%%step count\nn = len(rows)")  # reads it, shares nothing: cached
    assert "not cached" not in r.stderr
    assert "served from cache" in kernel.ok("%%step count\nn = len(rows)").status_lines()[0]
    frame = "%%step frame\nimport numpy as np\nsums = np.array([r[0] for r in rows])"
    assert "not cached" not in kernel.ok(frame).stderr  # a new array of its own: cached


def test_attributes_a_step_sets_on_a_notebook_module_are_set_again(kernel):
    (kernel.cwd / "settings.py").write_text("THRESHOLD = 0.5\n")
    cells = [
        "import settings",
        "%%step tune\nmodel = [1, 2]\nsettings.THRESHOLD = 0.7\nsettings.model = model",
    ]
    live, again = replay(kernel, cells, "(settings.THRESHOLD, settings.model is model)")
    assert live == again == "(0.7, True)\n"


def test_a_config_object_changed_in_a_step_is_changed_for_every_holder(kernel):
    cells = [
        "from types import SimpleNamespace\n"
        "class Opts:\n    def __init__(self):\n        self.lr = 0.1\n"
        "cfg = SimpleNamespace(lr=0.1)\nopts = Opts()\nholders = {'cfg': cfg, 'opts': opts}",
        "%%step tune\ncfg.lr = 0.2\nopts.lr = 0.3",
    ]
    probe = (
        "(holders['cfg'].lr, holders['opts'].lr, holders['cfg'] is cfg, holders['opts'] is opts)"
    )
    live, again = replay(kernel, cells, probe)
    assert live == again == "(0.2, 0.3, True, True)\n"


DRAWINGS = pytest.mark.skipif(
    importlib.util.find_spec("resumable_cells.hashing.opaque") is None,
    reason="figures are digested once the hasher treats drawings as such (hashing/opaque.py)",
)


@DRAWINGS
def test_a_figure_is_one_thing_its_names_come_back_as_parts_of_one_figure(kernel):
    cells = [
        "import matplotlib\nmatplotlib.use('agg')\nimport matplotlib.pyplot as plt",
        "%%step draw\nfig, ax = plt.subplots()\nline, = ax.plot([1, 2, 3])",
        "%%step more\nax.set_title('three points')\nsecond, = ax.plot([3, 2, 1])",
    ]
    probe = "(len(ax.lines), ax.get_title(), ax.figure is fig, line.axes is ax, second in ax.lines)"
    live, again = replay(kernel, cells, probe)
    assert live == again == "(2, 'three points', True, True, True)\n"


def test_an_array_read_only_here_but_written_live_is_written_on_a_hit(kernel):
    # The plain cell leaves `a` read-only; the step makes it writable and writes it. On a
    # hit the array is given its new data and flags in place, as the live run left it.
    cells = [
        "import numpy as np\na = np.arange(3)\na.flags.writeable = False",
        "%%step thaw\na.flags.writeable = True\na[0] = 5",
    ]
    live, again = replay(kernel, cells, "(a.tolist(), a.flags.writeable)")
    assert live == again == "([5, 1, 2], True)\n"


def test_a_read_only_view_of_writable_memory_comes_back_over_writable_memory(kernel):
    # A library's read-only view (`np.asarray` of a pandas column): pickled as itself,
    # the memory it views came back read-only, and the view could no longer be made
    # writable, nor a later step's view of that memory be rebuilt over it.
    cells = [
        "%%step make\nimport numpy as np\nro = np.arange(6.0)[1:4]\nro.flags.writeable = False",
        "%%step view\nhead = ro[:2]",
    ]
    probe = "ro.base.flags.writeable, ro.flags.writeable, np.shares_memory(head, ro)"
    live, again = replay(kernel, cells, f"({probe}, ro.setflags(write=True), ro.flags.writeable)")
    assert live == again == "(True, False, True, None, True)\n"


def test_a_weak_reference_inside_a_changed_input_stays_the_inputs(kernel):
    # astropy's column info holds its table by a weak reference: a step changing the
    # table was not cached ("cannot pickle 'weakref.ReferenceType' object").
    cells = [
        "import weakref\nclass Tree:\n    pass",
        "%%step make\ntree = Tree()\ntree.items = [1]\ntree.me = weakref.ref(tree)",
        "%%step grow\ntree.items.append(2)",
    ]
    live, again = replay(kernel, cells, "(tree.items, tree.me() is tree)")
    assert live == again == "([1, 2], True)\n"


def test_a_weak_reference_to_an_input_refers_to_that_input(kernel):
    cells = [
        "import weakref\nclass Thing:\n    pass\nkeep = Thing()",
        "%%step refer\nr = weakref.ref(keep)\ngone = weakref.ref(Thing())",
    ]
    live, again = replay(kernel, cells, "(r() is keep, gone())")
    assert live == again == "(True, None)\n"


def test_an_array_subclass_changed_in_place_keeps_its_holders_and_attributes(kernel):
    # numpy pickles a subclass without its instance dict, and the digest left it out:
    # after a hit the tag was None (an astropy Quantity's unit is such an attribute).
    cells = [
        "import numpy as np\nclass Tagged(np.ndarray):\n"
        "    def __array_finalize__(self, obj):\n        self.tag = getattr(obj, 'tag', None)\n"
        "t = np.arange(3.0).view(Tagged)\nt.tag = 'a'\nalias = t",
        "%%step retag\nt[0] = 5\nt.tag = 'b'",
    ]
    live, again = replay(kernel, cells, "(alias is t, alias.tag, t.tolist())")
    assert live == again == "(True, 'b', [5.0, 1.0, 2.0])\n"


def test_views_of_a_dict_and_a_regex_match_are_served_and_show_the_dict(kernel):
    cells = [
        "%%step make\nimport re, types\nd = {'a': 1}",
        "%%step views\nks, its, mp = d.keys(), d.items(), types.MappingProxyType(d)",
        "%%step find\nm = re.search(r'(\\d+)', 'id 42')",
        "d['b'] = 2",
    ]
    live, again = replay(kernel, cells, "(list(ks), list(its), dict(mp), m.group(1), m.span())")
    assert live == again == "(['a', 'b'], [('a', 1), ('b', 2)], {'a': 1, 'b': 2}, '42', (3, 5))\n"


def test_a_partial_over_notebook_data_sees_that_data_after_a_restart(kernel):
    cells = [
        "%%step make\nimport functools\ndata = [1, 2]\ndef total(xs, k):\n    return sum(xs) * k",
        "%%step bind\nf = functools.partial(total, data)",
        "data.append(10)",
    ]
    live, again = replay(kernel, cells, "(f(2), f.args[0] is data)")
    assert live == again == "(26, True)\n"
