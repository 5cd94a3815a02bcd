"""Python's cyclic garbage collector during a step (engine/collector.py): off while the
engine digests, pickles, checks and restores, as the notebook left it while the
notebook's own code runs, and never turned on where the notebook turned it off.

In process: the pause itself. Through a real kernel: a live step's work on a dict of
100,000 tuples (digested, pickled, its pickle loaded back to check it) starts no more
collections than the plain cell that makes the same value, and what a body does to the
collector stays. The engine's modules, imported by the first step, are kept out of the
count that starts a collection of the whole heap (none of their functions is left in a
young generation), unless the notebook froze objects of its own. The thread that
imports them after the cell that loads the extension holds the young threshold instead
of pausing the collector (`held_off`): no collection while it imports, the next cell
waits for it, and what the notebook set (a threshold, the collector off) is what it
finds.
"""

from __future__ import annotations

import gc

from kernels import Kernel

from resumable_cells.engine.collector import HELD, Paused, held_off

COUNTER = """
import gc
_collections = []
def _count(phase, info):
    if phase == "stop":
        _collections.append(info["generation"])
gc.callbacks.append(_count)
"""
MAKE = "y = {i: (i, [i]) for i in range(100_000)}"


def _collections_during(kernel, code: str) -> int:
    kernel.ok("_collections.clear()")
    kernel.ok(code)
    return kernel.value("len(_collections)")


def test_a_pause_stops_collections_and_lifts_to_the_state_it_found():
    seen: list[int] = []

    def count(phase, info):
        if phase == "stop":
            seen.append(info["generation"])

    gc.callbacks.append(count)
    try:
        assert gc.isenabled()
        with Paused() as pause:
            assert not gc.isenabled()
            cycles = []
            for _ in range(20_000):
                x: list = []
                x.append(x)  # a cycle: only the collector frees it
                cycles.append(x)
            assert seen == []  # 20,000 new containers and not one collection
            with pause.lifted():
                assert gc.isenabled()
                more = [[i] for i in range(20_000)]
            assert not gc.isenabled()
            assert seen  # lifted, the same allocations collect as usual
            del cycles, more
        assert gc.isenabled()
    finally:
        gc.callbacks.remove(count)
        gc.enable()


def test_held_off_starts_no_collection_and_puts_the_threshold_back():
    seen: list[int] = []

    def count(phase, info):
        if phase == "stop":
            seen.append(info["generation"])

    before = gc.get_threshold()
    gc.callbacks.append(count)
    try:
        with held_off():
            assert gc.isenabled() and gc.get_threshold()[0] == HELD
            made = [[i] for i in range(20_000)]
            assert seen == []  # 20,000 new containers and not one collection
        assert gc.get_threshold() == before
        more = [[i] for i in range(20_000)]
        assert seen  # held no more: the same allocations collect as usual
        del made, more
    finally:
        gc.callbacks.remove(count)
        gc.set_threshold(*before)


def test_held_off_keeps_a_threshold_the_notebook_set_meanwhile():
    before = gc.get_threshold()
    try:
        with held_off():
            gc.set_threshold(5000, 20, 30)  # the notebook's own, while a thread held it
        assert gc.get_threshold() == (5000, 20, 30)
        with held_off():
            gc.set_threshold(HELD, 5, 5)  # (the young one untouched: only the older move)
        assert gc.get_threshold() == (5000, 5, 5)
        gc.set_threshold(0)  # a collector turned off by its threshold stays off
        with held_off():
            assert gc.get_threshold()[0] == 0
        assert gc.get_threshold()[0] == 0
    finally:
        gc.set_threshold(*before)


def test_the_collector_as_the_notebook_sets_it_around_the_engines_import(tmp_path):
    # Once the cell that loads the extension has run, a thread imports the engine's
    # modules, holding the young threshold; the next cell waits for it. What the
    # notebook set before, in the load cell and after, is what it finds.
    k = Kernel(tmp_path, env={"JPY_SESSION_NAME": "test.ipynb"})
    try:
        k.ok(COUNTER)
        k.ok("%load_ext resumable_cells\ngc.set_threshold(5000, 20, 30)\ngc.disable()")
        assert k.value("gc.get_threshold()") == (5000, 20, 30)
        assert k.value(
            "__import__('resumable_cells').ipython.warmup.MODULES[0] in __import__('sys').modules"
        )
        assert k.value("gc.isenabled()") is False
        _collections_during(k, "%%step first\nx = [[i] for i in range(20_000)]")
        assert k.value("_collections") == []  # (off: no collection of ours either)
        assert k.value("gc.get_threshold()") == (5000, 20, 30)
    finally:
        k.shutdown()


def test_a_pause_keeps_what_the_code_inside_did_to_the_collector():
    try:
        with Paused() as pause:
            with pause.lifted():
                gc.disable()  # the notebook's own choice, inside a step
        assert not gc.isenabled()
        with Paused() as pause:  # off before the step: the body finds it off
            with pause.lifted():
                assert not gc.isenabled()
                gc.enable()
        assert gc.isenabled()
    finally:
        gc.enable()


def test_the_engines_work_starts_no_collection_and_the_body_keeps_its_own(kernel):
    kernel.ok(COUNTER)
    plain = _collections_during(kernel, MAKE)
    assert plain > 100  # (200,000 new containers: a young collection every 700)
    stepped = _collections_during(kernel, f"%%step pairs\n{MAKE}")
    # The step loads its pickle back to check it: another 200,000 containers made while
    # the live value is held. Without the pause, twice the plain cell's collections.
    assert kernel.value("len(y)") == 100_000
    assert stepped <= plain + plain // 4, (stepped, plain)
    assert kernel.value("gc.isenabled()") is True
    kernel.ok("%%step switch\nimport gc\nseen_in_body = gc.isenabled()\ngc.disable()")
    assert kernel.value("seen_in_body") is True
    assert kernel.value("gc.isenabled()") is False  # what the body did stays
    kernel.ok("%%step again\nseen_off = gc.isenabled()")
    assert kernel.value("seen_off") is False  # and the next body finds it so
    assert kernel.value("gc.isenabled()") is False
    kernel.ok("gc.enable()")


def test_what_a_step_replaced_or_showed_is_freed_by_reference_counting(kernel):
    # The engine's own objects made reference cycles, which only the collector frees:
    # with it off, a frame a step replaced stayed in memory (the persistent-id closure
    # of the result's pickle kept the inputs' graph, which holds it), and every step
    # that showed a value left the displayhook's wrapper behind.
    kernel.ok("%load_ext resumable_cells")
    kernel.ok("import gc, weakref\nimport pandas as pd\ngc.disable()\nn = 1")
    step = "%%step frame --force\ndf = pd.DataFrame({'a': range(1000)}) * n\ndf.shape"
    kernel.ok(step)
    kernel.ok("_old = weakref.ref(df)\nn = 2")
    kernel.ok(step)
    assert kernel.value("_old() is None") is True
    # No cycles of its own: what the collector finds after a live step and a hit that
    # show a value, and a step reading matplotlib's settings, holds no object, function
    # or method of the engine.
    kernel.ok("gc.collect()\ngc.set_debug(gc.DEBUG_SAVEALL)")
    kernel.ok("%%step shown\nz = [n] * 3\nz")
    kernel.ok("%%step shown\nz = [n] * 3\nz")
    kernel.ok("import matplotlib")  # (a step reading its settings is watched reading them)
    kernel.ok("%%step width\nwidth = matplotlib.rcParams['lines.linewidth'] * n")
    kernel.ok(
        "gc.collect()\n"
        "def _module(o):\n"
        "    o = getattr(o, '__func__', o)\n"
        "    own = getattr(o, '__module__', None) if callable(o) else None\n"
        "    return own if isinstance(own, str) else type(o).__module__\n"
        "_ours = sorted({_module(o) for o in gc.garbage} - {'builtins'})\n"
        "gc.set_debug(0)\n"
        "gc.garbage.clear()"
    )
    assert not [m for m in kernel.value("_ours") if m.startswith("resumable_cells")]
    assert kernel.value("gc.isenabled()") is False  # (as the notebook left it)


YOUNG_OF_OURS = (
    "import gc, sys, types\n"
    "_young = sorted(\n"
    "    f'{o.__module__}.{o.__name__}' for g in (0, 1) for o in gc.get_objects(g)\n"
    "    if isinstance(o, types.FunctionType) and (o.__module__ or '').startswith('resumable_cells')\n"
    "    and getattr(sys.modules.get(o.__module__), o.__name__, None) is o\n"
    ")"
)


def test_the_engines_modules_leave_the_young_generations_uncounted(kernel):
    # The first step imports about a hundred modules of the engine, and its first live
    # run those that keep a run: moved straight to the oldest generation, none of their
    # functions is young after the step, so none counts toward a whole-heap collection.
    kernel.ok("%%step first\nx = [1, 2]\nx")
    kernel.ok(YOUNG_OF_OURS)
    assert kernel.value("len(_young)") == 0, kernel.value("_young[:10]")
    assert kernel.value("gc.get_freeze_count()") == 0  # moved, not frozen
    kernel.ok("%%step first\nx = [1, 2]\nx")  # (a hit: nothing more imported)
    kernel.ok(YOUNG_OF_OURS)
    assert kernel.value("len(_young)") == 0, kernel.value("_young[:10]")


def test_objects_the_notebook_froze_stay_frozen(kernel):
    kernel.ok("import gc\n_kept = [[i] for i in range(1000)]\ngc.freeze()")
    frozen = kernel.value("gc.get_freeze_count()")
    assert frozen > 1000
    kernel.ok("%%step first\nx = 1")
    # (a few frozen objects are freed as cells run: IPython's history of them)
    assert kernel.value("gc.get_freeze_count()") > frozen - 1000


def test_a_notebook_that_turned_the_collector_off_sees_no_collection_of_ours(kernel):
    # Settling the engine's modules frees their garbage with a young collection, which
    # a notebook that turned the collector off (or asked it to print, or to keep what it
    # finds: `gc.set_debug`) would see where a plain cell runs none.
    kernel.ok(COUNTER)
    kernel.ok("gc.disable()")
    kernel.ok("%%step first\nx = [1, 2]\nx")
    assert kernel.value("_collections") == []
    assert kernel.value("gc.isenabled()") is False
    kernel.ok(YOUNG_OF_OURS)  # (settled all the same)
    assert kernel.value("len(_young)") == 0, kernel.value("_young[:10]")
