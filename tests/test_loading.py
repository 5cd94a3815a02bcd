"""Loading the extension: `%load_ext` registers the magics and hooks and has a thread
import the engine's modules; the engine (the store) starts at the first step or command,
a resume that only serves imports nothing of a live run, plain cells run before the engine started are
seen by the staleness watcher, and a store that cannot be opened never stops a cell."""

from __future__ import annotations

import re

from kernels import Kernel

LOADED = "sorted(m for m in __import__('sys').modules if m.startswith('resumable_cells.'))"
ENGINE = "__import__('resumable_cells').ipython.magics.current_engine()"
STARTED_BY_A_STEP = {"resumable_cells.engine.kernel", "resumable_cells.storage.store"}
LIVE_ONLY = {"resumable_cells.engine.keep.build", "resumable_cells.engine.live.tripwire"}


def fresh(tmp_path, launch: dict | None = None, **env) -> Kernel:
    tmp = tmp_path / ".tmp"
    tmp.mkdir(exist_ok=True)
    env = {"JPY_SESSION_NAME": "nb.ipynb", "TMPDIR": str(tmp), **env}
    return Kernel(tmp_path, env=env, **(launch or {}))


def test_loading_starts_no_engine_and_a_resume_imports_no_live_run(tmp_path):
    k = fresh(tmp_path)
    try:
        threshold = k.value("__import__('gc').get_threshold()")
        k.ok("%load_ext resumable_cells")
        # The thread loading started imports the engine's modules, and with no store
        # yet (a first run: its first step runs live) what a live run needs.
        k.ok("__import__('resumable_cells').ipython.warmup.wait()")
        assert STARTED_BY_A_STEP | LIVE_ONLY <= set(k.value(LOADED))
        assert k.value("__import__('gc').get_threshold()") == threshold
        assert not (tmp_path / ".resumable_cells").exists()
        k.ok("v = 2")
        assert "ran" in k.ok("%%step double\nw = v * 2").status_lines()[0]
        assert STARTED_BY_A_STEP | LIVE_ONLY <= set(k.value(LOADED))
        k.restart()
        k.ok("%load_ext resumable_cells\nv = 2")
        assert "served" in k.ok("%%step double\nw = v * 2").status_lines()[0]
        assert k.value("w") == 4
        modules = set(k.value(LOADED))
        assert STARTED_BY_A_STEP <= modules and not LIVE_ONLY & modules
        assert "ran" in k.ok("%%step triple\nt = v * 3").status_lines()[0]
        assert k.value("t") == 6
    finally:
        k.shutdown()


DOUBLE = "%%step double\nw = 2 * 2"


def _double(k: Kernel) -> str:
    """The status line of the step `double`."""
    return k.ok(DOUBLE).status_lines()[0]


def _reloaded(k: Kernel) -> Kernel:
    k.restart()
    k.ok("%load_ext resumable_cells")
    return k


def test_the_first_step_imports_nothing_the_thread_at_load_did_not(tmp_path):
    # What the first step of a first run, or of a resume, needs was imported while the
    # kernel was idle: a module added to a step's path and not to `warmup.py` shows here.
    k = fresh(tmp_path)
    try:
        k.ok("%load_ext resumable_cells")
        loaded = set(k.value(LOADED))
        assert "ran" in _double(k)
        assert set(k.value(LOADED)) == loaded
        loaded = set(_reloaded(k).value(LOADED))
        assert STARTED_BY_A_STEP <= loaded and not LIVE_ONLY & loaded  # (a store: a resume)
        assert "served" in _double(k)
        assert set(k.value(LOADED)) == loaded
    finally:
        k.shutdown()


CONFIGURED = "--InteractiveShellApp.extensions=resumable_cells"


def test_loaded_as_the_kernel_starts_the_engine_is_ready_before_the_first_cell(tmp_path):
    # With the extension in the kernel's configuration the thread starts at once, while
    # the kernel starts: the first request's cell finds the engine's modules imported
    # (it waits for what is left), and a `%load_ext` in the notebook changes nothing.
    k = fresh(tmp_path, launch={"extra_arguments": [CONFIGURED]})
    try:
        assert STARTED_BY_A_STEP | LIVE_ONLY <= set(k.value(LOADED))  # (no store: a first run)
        assert not (tmp_path / ".resumable_cells").exists()
        k.ok("v = 2")
        assert "ran" in k.ok("%%step double\nw = v * 2").status_lines()[0]
        k.restart()
        modules = set(k.value(LOADED))  # (a store: a resume)
        assert STARTED_BY_A_STEP <= modules and not LIVE_ONLY & modules
        k.ok("%load_ext resumable_cells\nv = 2")  # (already loaded: nothing happens)
        assert "served" in k.ok("%%step double\nw = v * 2").status_lines()[0]
        assert k.value("w") == 4 and set(k.value(LOADED)) == modules
    finally:
        k.shutdown()


def test_startup_code_the_kernel_runs_waits_for_the_thread(tmp_path):
    # The code a kernel runs as it starts (`exec_lines`, a startup file) runs as a cell:
    # after the thread, with the collector as the kernel had it.
    lines = "['v = 2', 'at_start = __import__(\"gc\").get_threshold()']"
    startup = f"--InteractiveShellApp.exec_lines={lines}"
    k = fresh(tmp_path, launch={"extra_arguments": [CONFIGURED, startup]})
    try:
        assert STARTED_BY_A_STEP | LIVE_ONLY <= set(k.value(LOADED))
        assert k.value("at_start") == k.value("__import__('gc').get_threshold()")
        assert k.value("at_start")[0] < 1 << 30  # (not the thread's hold)
        assert "ran" in k.ok("%%step double\nw = v * 2").status_lines()[0]
    finally:
        k.shutdown()


def test_the_store_the_steps_use_is_the_one_there_when_they_run(tmp_path):
    # With a store in place, the thread loading started opens it ahead of the first
    # step. Deleted by a cell before that step, or set elsewhere, the steps use the
    # store that is there, or the one they are told, not the one opened at load.
    k = fresh(tmp_path)
    try:
        k.ok("%load_ext resumable_cells")
        assert "ran" in _double(k)
        _reloaded(k).ok("import shutil\nshutil.rmtree('.resumable_cells')")
        assert "ran" in _double(k)  # (no store left: made again)
        assert "served" in _double(_reloaded(k))
        other = tmp_path / "other-store"
        _reloaded(k).ok(f"%config StepMagics.store_dir = {str(other)!r}")
        assert "ran" in _double(k)  # (a new store)
        assert (other / "index").exists()
        assert "served" in _double(_reloaded(k))  # (the first store, as configured)
    finally:
        k.shutdown()


def test_plain_cells_before_the_first_step_are_seen_by_staleness(tmp_path):
    k = fresh(tmp_path)
    try:
        k.ok("%load_ext resumable_cells\nridge = 1.0\nother = 0", cell_id="p")
        k.ok("%%step fit\ncoef = ridge * 2 + other", cell_id="fit")
        k.restart()
        k.ok("%load_ext resumable_cells", cell_id="load")
        k.ok("ridge = 10.0", cell_id="p")  # In [2]
        k.ok("other = 0\nunrelated = 1", cell_id="q")  # In [3]: `other` has its value
        got = k.value(f"{ENGINE}.staleness()")  # the engine starts here
        assert list(got) == [("fit", "fit")]
        assert re.fullmatch(r"ridge changed \(In \[2\]\)", got[("fit", "fit")])
        k.ok("ridge = 1.0", cell_id="p")
        assert k.value(f"{ENGINE}.staleness()") == {}
    finally:
        k.shutdown()


def test_a_store_that_cannot_be_opened_leaves_the_cell_running(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the store's folder would be")
    k = fresh(tmp_path, RESUMABLE_CELLS_DIR=str(blocker / "store"))
    try:
        k.ok("%load_ext resumable_cells")  # opens nothing
        r = k.ok("%%step a\nx = 40 + 2\nprint('ran it')\nx")
        assert "not cached: the store failed" in r.stderr and "ran it" in r.stdout
        assert r.result() == "42" and k.value("x") == 42
        r = k.ok("%%step b\nimport asyncio\nawait asyncio.sleep(0)\ny = x + 1")
        assert "not cached" in r.stderr and k.value("y") == 43
        r = k.run("%%step c\nz = 1 / 0")
        assert r.status == "error" and r.error["ename"] == "ZeroDivisionError"
        blocker.unlink()  # the next step opens it
        assert "ran" in k.ok("%%step a\nx = 40 + 2").status_lines()[0]
        assert "served" in k.ok("%%step a\nx = 40 + 2").status_lines()[0]
    finally:
        k.shutdown()


NUMPY_PARTS = "sorted(m for m in ('numpy.ma', 'numpy.random') if m in __import__('sys').modules)"


def test_steps_over_arrays_import_no_part_of_numpy_the_notebook_did_not(tmp_path):
    """numpy loads `np.ma` and `np.random` on first use (18 and 26 ms): the steps that
    hash, keep and serve arrays must not be that first use. And once the notebook made a
    masked array or a generator, they are still told apart by what numpy.ma and
    numpy.random hold."""
    k = fresh(tmp_path)
    try:
        k.ok("%load_ext resumable_cells")
        k.ok("import numpy as np")
        assert k.value(NUMPY_PARTS) == []  # (numpy itself loads neither)
        k.ok("%%step make\na = np.arange(6.0)\nb = a[::2]\nc = {'a': a}")
        k.ok("%%step total\nt = a.sum() + b.sum()")
        assert "served" in k.ok("%%step total\nt = a.sum() + b.sum()").status_lines()[0]
        k.ok("%%step grow\na += 1")
        assert k.value("float(t)") == 21.0 and k.value("float(c['a'][0])") == 1.0
        assert k.value(NUMPY_PARTS) == []
        k.ok("%%step mask\nm = np.ma.masked_array([1.0, 2.0], mask=[0, 1])\nm_sum = m.sum()")
        k.ok("%%step gen\ng = np.random.default_rng(3)\nfirst = g.random()")
        assert k.value(NUMPY_PARTS) == ["numpy.ma", "numpy.random"]
        k.ok("m.mask[1] = False")  # a masked array's mask is part of its digest
        assert "ran" in k.ok("%%step msum\nms = float(m.sum())").status_lines()[0]
        assert k.value("ms") == 3.0
        k.ok("m.mask[1] = True")
        assert "ran" in k.ok("%%step msum\nms = float(m.sum())").status_lines()[0]
        assert k.value("ms") == 1.0
    finally:
        k.shutdown()


def test_a_step_with_a_magic_loads_only_that_magics_module(tmp_path):
    """IPython loads a magic's module as the magic is first looked up; a step reading
    the code a magic runs (`%time`'s, `%timeit`'s) must not load the execution magics
    (6 ms) for a cell whose magic is another's."""
    loaded = "'IPython.core.magics.execution' in __import__('sys').modules"
    k = fresh(tmp_path)
    try:
        k.ok("%load_ext resumable_cells")
        assert k.value(loaded) is False
        k.ok("%%step\nx = 1\n%precision 3\ny = x + 1")
        assert k.value("y") == 2 and k.value(loaded) is False
        r = k.ok("%%step\n%time z = y * 21")
        assert k.value("z") == 42 and k.value(loaded) is True
        assert "ran" in r.status_lines()[0]
    finally:
        k.shutdown()
