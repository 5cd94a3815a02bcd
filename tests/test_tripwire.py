"""The tripwire wherever the notebook lives, through real kernels: under the temp
directory (files read are inputs, files written are effects, temporary files the step
creates and removes are not) and inside the package's own checkout."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from kernels import Kernel
from steps import LOAD, restart, served, status, write

import resumable_cells


@pytest.fixture
def temp_kernel(tmp_path):
    """A kernel whose notebook folder is under its temp directory."""
    nb = tmp_path / "notebook"
    nb.mkdir()
    k = Kernel(nb, env={"JPY_SESSION_NAME": "test.ipynb", "TMPDIR": str(tmp_path)})
    assert k.value("__import__('tempfile').gettempdir()") == str(tmp_path)
    k.ok(LOAD)
    yield k
    k.shutdown()


def test_files_a_step_reads_under_the_temp_directory_are_inputs(temp_kernel):
    k = temp_kernel
    write(k.cwd / "data.csv", "1\n2\n")
    cell = "%%step load\nrows = open('data.csv').read().split()"
    k.ok(cell)
    restart(k)
    assert served(k.ok(cell))
    write(k.cwd / "data.csv", "1\n2\n3\n")
    line = status(k.ok(cell))
    assert "ran" in line and "data.csv changed" in line
    assert k.value("rows") == ["1", "2", "3"]


def test_writes_under_the_temp_directory_are_effects(temp_kernel):
    k = temp_kernel
    r = k.ok("%%step save\nopen('out.txt', 'w').write('x')")
    assert "not cached" in r.stderr and "wrote out.txt" in r.stderr


def test_temporary_files_a_step_creates_and_removes_are_exempt(temp_kernel):
    k = temp_kernel
    cell = (
        "%%step scratch\nimport tempfile, os\n"
        "with tempfile.TemporaryDirectory() as d:\n"
        "    p = os.path.join(d, 'part.txt')\n"
        "    open(p, 'w').write('abc')\n"
        "    n = len(open(p).read())\n"
        "with tempfile.NamedTemporaryFile('w+') as f:\n"
        "    f.write('hello')\n"
        "    f.flush()\n"
        "    m = len(open(f.name).read())\n"
        "del p, f, d"
    )
    r = k.ok(cell)
    assert "not cached" not in r.stderr, r.stderr
    restart(k)
    assert served(k.ok(cell)) and k.value("(n, m)") == (3, 5)


def test_a_temporary_file_a_step_leaves_behind_is_an_effect(temp_kernel):
    k = temp_kernel
    r = k.ok(
        "%%step leave\nimport tempfile\nfd, path = tempfile.mkstemp()\nimport os\nos.close(fd)"
    )
    assert "not cached" in r.stderr and "wrote" in r.stderr


def test_a_notebook_inside_the_package_checkout_is_watched(tmp_path):
    # An editable install: the package's parent folder is the repository, where
    # `make lab` keeps its demo notebooks.
    root = Path(resumable_cells.__file__).resolve().parent.parent
    nb = Path(tempfile.mkdtemp(prefix=".test-nb-", dir=root))
    k = Kernel(nb, env={"JPY_SESSION_NAME": "t.ipynb", "TMPDIR": str(tmp_path)})
    try:
        k.ok(LOAD)
        r = k.ok("%%step save\nopen('out.txt', 'w').write('x')")
        assert "not cached" in r.stderr and "wrote out.txt" in r.stderr
    finally:
        k.shutdown()
        shutil.rmtree(nb)


def test_a_database_a_step_reads_is_an_input_and_one_it_writes_makes_it_uncached(kernel):
    import sqlite3

    db = kernel.cwd / "data.db"
    with sqlite3.connect(db) as con:
        con.execute("create table t (x)")
        con.execute("insert into t values (1)")
    con.close()
    reader = (
        "%%step query\nimport sqlite3\ncon = sqlite3.connect('data.db')\n"
        "rows = con.execute('select x from t').fetchall()\ncon.close()\ndel con"
    )
    kernel.ok(reader)
    assert served(kernel.ok(reader))
    with sqlite3.connect(db) as con:
        con.execute("insert into t values (2)")
    con.close()
    line = status(kernel.ok(reader))
    assert "ran" in line and "data.db changed" in line
    assert kernel.value("rows") == [(1,), (2,)]
    writer = (
        "%%step insert\nimport sqlite3\ncon = sqlite3.connect('data.db')\n"
        "con.execute('insert into t values (3)')\ncon.commit()\ncon.close()\ndel con"
    )
    r = kernel.ok(writer)
    assert "not cached" in r.stderr and "changed data.db" in r.stderr


def test_a_shell_command_is_an_effect(kernel):
    # IPython runs `!cmd` through pexpect, whose pty.fork() raises `os.forkpty`.
    cell = "%%step shell\n!echo ran >> shell.log"
    r = kernel.ok(cell)
    assert "not cached" in r.stderr and "started a subprocess" in r.stderr
    assert "ran" in status(kernel.ok(cell))
    assert (kernel.cwd / "shell.log").read_text() == "ran\nran\n"
