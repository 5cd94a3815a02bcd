"""IPython's shell escapes and magics inside a step. Every way IPython starts a process
(`!cmd`, `!!cmd`, `%sx`, `%system`, `getoutput`, `%%bash`-style cell magics) makes a pure
step uncached with a message suggesting `--effect`; magics that run code (`%time`,
`%timeit`, `%%time`, `%prun`, `%%capture`, `%run -i`, `%run` of a notebook) keep working
and their code's reads are inputs of the step. Real kernels."""

from __future__ import annotations

import json

import pytest

SHELL_ESCAPES = {
    "bang": "!echo hi",
    "bang-assign": "out = !echo hi",
    "double-bang": "!!echo hi",
    "sx": "out = %sx echo hi",
    "system": "%system echo hi",
    "getoutput": "out = get_ipython().getoutput('echo hi')",
    "system-call": "get_ipython().system('echo hi')",
    "bash": "%%bash\necho hi",
    "sh": "%%sh\necho hi",
    "script": "%%script bash\necho hi",
    "os.popen": "import os\nout = os.popen('echo hi').read()",
    "in-a-function": "def shell():\n    get_ipython().system('echo hi')\n\nshell()",
}


@pytest.mark.parametrize("route", list(SHELL_ESCAPES))
def test_every_shell_escape_is_a_subprocess(kernel, route):
    cell = f"%%step esc\n{SHELL_ESCAPES[route]}"
    r = kernel.ok(cell)
    shown = r.stdout + (r.result() or "")
    assert "hi" in shown or kernel.value("'hi' in str(out)")
    assert "not cached: it started a subprocess" in r.stderr
    assert "--effect" in r.stderr
    r = kernel.ok(cell)
    assert "ran" in r.status_lines()[0]  # never served


def test_touch_in_a_pure_step_makes_the_file_again_after_a_restart(kernel):
    made = kernel.cwd / "made.txt"
    r = kernel.ok("%%step touch\n!touch made.txt")
    assert made.exists()
    assert "started a subprocess (touch made.txt)" in r.stderr
    made.unlink()
    kernel.restart()
    kernel.ok("%load_ext resumable_cells")
    r = kernel.ok("%%step touch\n!touch made.txt")
    assert made.exists() and "ran" in r.status_lines()[0]


def test_an_effect_step_may_shell_out_without_a_warning(kernel):
    r = kernel.ok("%%step touch --effect\n!touch made.txt")
    assert r.stderr == "" and (kernel.cwd / "made.txt").exists()


MEASURED = {
    "time": ("%time y = v * 2", "y", 10),
    "time-expression": ("y = %time v * 2", "y", 10),
    "cell-time": ("%%time\ny = v * 2\nprint('done')", "y", 10),
    "timeit": ("%timeit -n1 -r1 v * 2\ny = 0", "y", 0),
    "cell-timeit": ("%%timeit -n1 -r1 base = v\nbase * 2", None, None),
    "prun": ("%prun -q y = v * 2", "y", 10),
    "capture": ("%%capture cap\ny = v * 2\nprint(y)", "y", 10),
    # `%run` in the notebook's namespace: a script with -i, a notebook whatever the options
    # (`twice.py` and `twice.ipynb` compute `y = v * 2`; served 10 after `v = 6`, before)
    "run-i": ("%run -i twice.py", "y", 10),
    "run-notebook": ("%run twice.ipynb", "y", 10),
}


@pytest.mark.parametrize("case", list(MEASURED))
def test_code_run_by_a_magic_is_read_by_the_key(kernel, case):
    body, name, value = MEASURED[case]
    cell = f"%%step measured\n{body}"
    (kernel.cwd / "twice.py").write_text("y = v * 2\n")
    code = {"cell_type": "code", "source": ["y = v * 2"], "metadata": {}, "outputs": []}
    code["execution_count"] = None
    notebook = {"cells": [code], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (kernel.cwd / "twice.ipynb").write_text(json.dumps(notebook))
    kernel.ok("v = 5")
    live = kernel.ok(cell)
    assert "not cached" not in live.stderr
    if name:
        assert kernel.value(name) == value
    assert "served" in kernel.ok(cell).status_lines()[0]
    kernel.ok("v = 6")
    r = kernel.ok(cell)
    assert "ran" in r.status_lines()[0] and "input v changed" in r.status_lines()[0]
    if name and value:
        assert kernel.value(name) == 12
    if case == "run-i":  # the script edited to read another name: that name is the input
        (kernel.cwd / "twice.py").write_text("y = w * 2\n")
        kernel.ok("w = 7")
        assert "ran" in kernel.ok(cell).status_lines()[0] and kernel.value("y") == 14
        kernel.ok("w = 8")
        r = kernel.ok(cell)
        assert "input w changed" in r.status_lines()[0] and kernel.value("y") == 16


def test_measuring_magics_still_measure_inside_a_step(kernel):
    kernel.ok("v = 5")
    r = kernel.ok("%%step timed\n%time y = v * 2")
    assert "Wall time" in r.stdout
    r = kernel.ok("%%step timed2\n%timeit -n1 -r2 v * 2")
    assert "per loop" in r.stdout
