"""Auto mode in real kernels: with `%step auto on`, every code cell the user runs is a
step without `%%step` in it; cells that start with another cell magic, our own commands
and executions that are not the user's stay plain; a trivial cell shows no status line;
a cell the tripwire catches runs and is not cached; the choice is kept for the notebook
across a restart; `%step auto off` ends it."""

from __future__ import annotations

STEPS = "[(e['step'], e['status']) for e in __import__('resumable_cells').record()]"


def _steps(kernel) -> list[tuple[str, str]]:
    # (this probe is a cell too: under auto mode it is a step of its own, named `cell-...`)
    return [s for s in kernel.value(STEPS) if not s[0].startswith("cell-")]


def test_every_cell_is_a_step_and_a_cell_run_again_is_served(kernel):
    kernel.ok("%step auto on")
    first = kernel.ok("data = list(range(5))")
    assert first.status_lines() == []  # trivial: the badge says it, not a line
    kernel.ok("total = sum(data)")
    again = kernel.ok("total = sum(data)")
    assert again.status_lines() == []
    assert _steps(kernel) == [("data", "live"), ("total", "live"), ("total", "hit")]
    slow = kernel.ok("import time\ntime.sleep(1.2)\nwaited = True")
    assert "ran in" in slow.status_lines()[0], slow.status_lines()
    assert kernel.value("total") == 10


def test_cell_magics_commands_and_silent_executions_stay_plain(kernel):
    kernel.ok("%step auto on")
    timed = kernel.ok("%%time\nt = 1")
    assert "Wall time" in timed.stdout
    status = kernel.ok("%step status")
    assert status.status_lines() == []
    kernel.kc.execute("hidden = 2", silent=True, store_history=False)
    kernel.ok("seen = hidden + t")
    assert _steps(kernel) == [("seen", "live")]


def test_a_cell_that_writes_a_file_runs_and_is_not_cached(kernel, tmp_path):
    kernel.ok("%step auto on")
    wrote = kernel.ok("open('out.txt', 'w').write('x')\nwritten = 1")
    assert "--effect" in wrote.stderr, wrote.stderr
    again = kernel.ok("open('out.txt', 'w').write('x')\nwritten = 1")
    assert [s for s in _steps(kernel) if s[0] == "written"] == [
        ("written", "live"),
        ("written", "live"),
    ], again.stderr
    assert (tmp_path / "out.txt").read_text() == "x"


def test_auto_mode_is_kept_for_the_notebook_across_a_restart(kernel):
    kernel.ok("%step auto on")
    kernel.ok("import time\ntime.sleep(0.3)\nresult = 42")
    kernel.wait_for_writes()
    kernel.restart()
    kernel.ok("%load_ext resumable_cells")
    assert "auto mode on" in kernel.ok("%step auto").stdout
    kernel.ok("import time\ntime.sleep(0.3)\nresult = 42")
    assert _steps(kernel)[-1] == ("time,result", "hit")
    kernel.ok("%step auto off")
    kernel.ok("plain = 1")
    assert _steps(kernel)[-1] == ("time,result", "hit")
    kernel.restart()
    kernel.ok("%load_ext resumable_cells")
    assert "auto mode off" in kernel.ok("%step auto").stdout


def test_a_configured_auto_mode_and_a_quiet_threshold_of_zero(tmp_path):
    from kernels import Kernel

    k = Kernel(tmp_path, env={"JPY_SESSION_NAME": "conf.ipynb"})
    try:
        k.ok("%config StepMagics.auto = True\n%config StepMagics.auto_quiet = 0.0")
        k.ok("%load_ext resumable_cells")
        r = k.ok("x = 1")
        assert "ran in" in r.status_lines()[0], r.status_lines()
        assert "auto mode on" in k.ok("%step auto").stdout
    finally:
        k.shutdown()


def test_a_failing_cell_shows_the_traceback_a_plain_cell_shows(kernel):
    """The user wrote no `%%step`: no frame of the traceback calls it (the cell as IPython
    transformed it), and only that cell's traceback is cut; a `%%step` cell keeps its."""
    import re

    def frames(reply) -> str:
        text = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(reply.error["traceback"]))
        return re.sub(r"In\[\d+\]", "In[n]", text)

    plain = kernel.run("def boom():\n    return 1 / 0\nboom()")
    kernel.ok("%step auto on")
    auto_ = kernel.run("def boom():\n    return 1 / 0\nboom()")
    assert auto_.error["ename"] == "ZeroDivisionError"
    assert frames(auto_) == frames(plain), frames(auto_)  # no wrapper, no hidden frames
    stepped = kernel.run("%%step explicit\nboom()")  # a magic the user wrote: as before
    assert "run_cell_magic" in frames(stepped)
    kernel.ok("%step auto off")
    again = kernel.run("boom()")
    assert "boom()" in frames(again) and "return 1 / 0" in frames(again)
