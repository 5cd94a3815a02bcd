"""The tripwire wherever the notebook lives, through real kernels: under the temp
directory (files read are inputs, files written are effects, temporary files the step
creates and removes are not) and inside the package's own checkout."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from kernels import Kernel, wait_until
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


READ_IN_A_THREAD = (
    "%%step load\n"
    "import threading\n"
    "rows = []\n"
    "def _read():\n"
    "    rows.extend(open('data' + '.csv').read().split())\n"  # (no file named in the code)
    "_t = threading.Thread(target=_read)\n"
    "_t.start()\n"
    "_t.join()\n"
    "del _t"
)


@pytest.mark.parametrize(
    "cell",
    ["%%step load\nrows = open('data.csv').read().split()", READ_IN_A_THREAD],
    ids=["in-the-step", "in-a-thread-it-starts"],
)
def test_files_a_step_reads_under_the_temp_directory_are_inputs(temp_kernel, cell):
    k = temp_kernel
    write(k.cwd / "data.csv", "1\n2\n")
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


def test_files_reached_through_symlinks_are_told_by_their_real_paths(temp_kernel):
    """The tripwire keeps a folder's real path for the rest of the step: a file named
    through a linked folder, or a link itself, is still the file it resolves to."""
    k = temp_kernel
    (k.cwd / "data").mkdir()
    (k.cwd / "linked").symlink_to(k.cwd / "data", target_is_directory=True)
    (k.cwd / "alias.txt").symlink_to(k.cwd / "data" / "real.txt")
    write(k.cwd / "data" / "in.txt", "1\n")
    cell = "%%step read_linked\nrows = open('linked/in.txt').read().split()"
    k.ok(cell)
    write(k.cwd / "data" / "in.txt", "1\n2\n")
    line = status(k.ok(cell))
    assert "ran" in line and "data/in.txt changed" in line, line
    # the folder's path kept from the read above; the file's name a link into it
    r = k.ok(f"%%step write_alias\nopen({str(k.cwd / 'alias.txt')!r}, 'w').write('x')")
    assert "wrote data/real.txt" in r.stderr, r.stderr
    r = k.ok(f"%%step write_linked\nopen({str(k.cwd / 'linked' / 'out.txt')!r}, 'w').write('x')")
    assert "not cached" in r.stderr and "wrote data/out.txt" in r.stderr, r.stderr


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


def test_a_function_the_notebook_bound_before_the_step_is_watched(kernel):
    # `from os import system` in an earlier cell: the step's `system` is watched too,
    # and the notebook's name is the original again after it.
    kernel.ok("from os import system\nimport os\nbefore = system")
    r = kernel.ok("%%step call\nsystem('true')")
    assert "not cached: it started a subprocess" in r.stderr
    assert kernel.value("system is os.system is before")


WATCHED = (
    "import builtins, io, os, shutil, socket, subprocess\n"
    "def watched():\n"
    "    return (builtins.open, io.open, builtins.eval, os.open, os.remove, os.system,\n"
    "            os.forkpty, shutil.rmtree, subprocess.Popen._execute_child,\n"
    "            'connect' in vars(socket.socket))\n"
    "before = watched()"
)


def test_an_interrupted_step_leaves_every_function_as_it_was(kernel):
    # Ctrl-C while a pure step runs (one that reads through eval: eval is wrapped too).
    kernel.ok(WATCHED)
    kernel.ok("import os, tempfile, time\nMARK = os.path.join(tempfile.gettempdir(), 'stalled')")
    cell = (
        "%%step stall\nsrc = ''.join(['Tr', 'ue'])\n"
        "open(MARK, 'w').write(str([a is b for a, b in zip(watched(), before)]))\n"
        "while eval(src):\n    time.sleep(0.01)"
    )
    msg_id = kernel.submit(cell)
    mark = kernel.cwd / ".tmp" / "stalled"
    wait_until(lambda: mark.exists() and mark.read_text(), timeout=60, what="the step to stall")
    kernel.km.interrupt_kernel()
    r = kernel.collect(msg_id, timeout=60)
    assert r.status == "error" and r.error["ename"] == "KeyboardInterrupt"
    # Meanwhile every function was wrapped (socket.socket's connect its own).
    assert mark.read_text() == str([False] * 10), mark.read_text()
    assert kernel.value("all(a is b for a, b in zip(watched(), before))")
    r = kernel.ok("%%step after\nopen('after.txt', 'w').write('x')")  # and still watching
    assert "not cached: it wrote after.txt" in r.stderr


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ("name = input('name? ')", "asked the user for input"),
        ("import getpass\nkey = getpass.getpass('key? ')", "asked the user for a password"),
        (
            "import threading\n_box = []\n"
            "_t = threading.Thread(target=lambda: _box.append(input('name? ')))\n"
            "_t.start()\n_t.join()\ndel _t\nname = _box[0]",
            "asked the user for input",
        ),
    ],
    ids=["input", "getpass", "input-in-a-thread-it-starts"],
)
def test_a_step_that_asks_the_user_is_not_cached(kernel, body, said):
    # What the user typed is theirs to type again (a password never reaches the store):
    # the second run asks again.
    cell = f"%%step asks\n{body}"
    for _ in range(2):
        sent = kernel.submit(cell)
        asked = kernel.kc.get_stdin_msg(timeout=60)
        assert asked["msg_type"] == "input_request"
        kernel.kc.input("s3cret-typed")
        r = kernel.collect(sent)
        assert r.status == "ok", r.error
        assert f"not cached: it {said}" in r.stderr
    assert kernel.value("'_input_request' in vars(get_ipython().kernel)") is False  # put back
    engine = "__import__('resumable_cells').ipython.magics.current_engine()"
    assert kernel.value(f"len(list({engine}.store.entries()))") == 0  # nothing it typed kept


def test_ipython_s_store_is_read_and_written_as_the_notebook_s_files(tmp_path):
    # `%store -r shared` reads a value another notebook stored, in IPython's profile
    # folder under the home folder, whose files the tripwire ignored (and IPython keeps
    # what it read while the file's mtime stays): the step was served 14 after the other
    # notebook stored 9. And a step's `%store z` wrote there unseen, cached as pure.
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "IPYTHONDIR": str(home / ".ipython")}
    nb = tmp_path / "nb"
    nb.mkdir()
    other, k = Kernel(nb, env=env), Kernel(nb, env=env)
    try:
        k.ok(LOAD)
        other.ok("shared = 5\n%store shared")
        cell = "%%step use\n%store -r shared\ny = shared * 2"
        k.ok(cell)
        k.ok(cell)  # (`shared` is bound now: an input from here on)
        assert served(k.ok(cell)) and k.value("y") == 10
        other.ok("shared = 9\n%store shared")
        line = status(k.ok(cell))
        assert "ran" in line and "autorestore/shared changed" in line, line
        assert k.value("y") == 18
        r = k.ok("%%step put\nz = 3\n%store z")
        assert "not cached: it wrote" in r.stderr and "autorestore/z" in r.stderr, r.stderr
        assert other.ok("%store -r z\nprint(z)").stdout.strip() == "3"
    finally:
        other.shutdown()
        k.shutdown()


def test_a_file_read_by_a_relative_path_is_read_again_in_another_working_folder(kernel):
    # `open('d.csv')` after `%cd ../e2` is another file: the entry of the step that read
    # e1's is not served there; a file named by its absolute path is served anywhere
    for folder, value in (("e1", "5"), ("e2", "7")):
        write(kernel.cwd / folder / "d.csv", value)
    kernel.ok("%cd e1")
    cell = "%%step rel\nv = int(open('d.csv').read())"
    kernel.ok(cell)
    absolute = f"%%step abs\nw = int(open({str(kernel.cwd / 'e1' / 'd.csv')!r}).read())"
    kernel.ok(absolute)
    assert served(kernel.ok(cell)) and kernel.value("v") == 5
    kernel.ok("%cd ../e2")
    line = status(kernel.ok(cell))
    assert "ran" in line and "relative to another working folder" in line, line
    assert kernel.value("v") == 7
    assert served(kernel.ok(absolute)) and kernel.value("w") == 5


@pytest.mark.parametrize(
    "asks",
    [
        "os.getcwd()",
        "str(pathlib.Path.cwd())",
        "os.path.dirname(os.path.abspath('d.csv'))",
        "str(pathlib.Path('d.csv').resolve().parent)",
    ],
)
def test_a_step_that_asks_for_the_working_folder_runs_again_in_another(kernel, asks):
    # `here = Path.cwd()` in e1, then `%cd ../e2`: the live run gives e2, and a hit gave
    # e1, a path later steps would have read from. In the same folder it is served.
    for folder in ("e1", "e2"):
        (kernel.cwd / folder).mkdir()
    kernel.ok("import os, pathlib\n%cd e1")
    cell = f"%%step where\nhere = {asks}"
    kernel.ok(cell)
    assert served(kernel.ok(cell)) and kernel.value("here").endswith("e1")
    kernel.ok("%cd ../e2")
    line = status(kernel.ok(cell))
    assert "ran" in line and "asked for the working folder's path" in line, line
    assert kernel.value("here") == os.path.realpath(kernel.cwd / "e2")
    assert served(kernel.ok(cell))


@pytest.mark.parametrize(
    "listing",
    [
        "sorted(os.listdir('data'))",
        "sorted(p.name for p in pathlib.Path('data').iterdir())",
        "sorted(os.path.basename(p) for p in glob.glob(os.path.join(where, '*')))",
        "sorted(f for _, _, fs in os.walk('data') for f in fs)",
    ],
)
def test_a_folder_a_step_lists_is_an_input(kernel, listing):
    # a file added to it runs the step again: the old list was served before
    write(kernel.cwd / "data" / "a.csv", "1")
    kernel.ok("import os, glob, pathlib\nwhere = 'data'")
    cell = f"%%step listing\nnames = {listing}"
    kernel.ok(cell)
    restart(kernel, "import os, glob, pathlib\nwhere = 'data'")
    assert served(kernel.ok(cell)) and kernel.value("names") == ["a.csv"]
    write(kernel.cwd / "data" / "b.csv", "2")
    line = status(kernel.ok(cell))
    assert "ran" in line and "data/ changed" in line, line
    assert kernel.value("names") == ["a.csv", "b.csv"]


def test_the_import_system_listing_the_working_folder_is_no_input(kernel):
    # a package asking its own version lists every folder on sys.path, the working
    # folder among them: not data the step reads, so a file added there runs nothing
    cell = "%%step version\nimport importlib.metadata as md\nv = md.version('msgspec')"
    kernel.ok(cell)
    restart(kernel)
    write(kernel.cwd / "new-output.csv", "1")
    assert served(kernel.ok(cell))


def test_a_file_read_through_a_link_pointed_elsewhere_since_is_read_again(kernel):
    # `latest` -> v1, then -> v2: the real file the entry read is unchanged, but the
    # name the step reads now names another
    for folder, value in (("v1", "5"), ("v2", "7")):
        write(kernel.cwd / folder / "d.csv", value)
    (kernel.cwd / "latest").symlink_to("v1", target_is_directory=True)
    cell = "%%step linked\nv = int(open('latest/d.csv').read())"
    kernel.ok(cell)
    assert served(kernel.ok(cell)) and kernel.value("v") == 5
    (kernel.cwd / "latest").unlink()
    (kernel.cwd / "latest").symlink_to("v2", target_is_directory=True)
    line = status(kernel.ok(cell))
    assert "ran" in line and "latest/d.csv changed" in line, line
    assert kernel.value("v") == 7


def test_a_folder_under_an_ignored_root_listed_is_no_input(kernel):
    # plotly lists /proc as it renders a figure: an ignored root, itself included (a new
    # kernel is a new process there)
    cell = "%%step procs\nn = len(os.listdir('/proc')) > 0"
    kernel.ok("import os")
    kernel.ok(cell)
    restart(kernel, "import os")
    assert served(kernel.ok(cell))


SAVE_IN_A_POOL = (
    "%%step save_all\n"
    "from concurrent.futures import ThreadPoolExecutor\n"
    "def save(i):\n"
    "    with open(f'out{i}.txt', 'w') as f:\n"
    "        f.write(str(i))\n"
    "with ThreadPoolExecutor(2) as ex:\n"
    "    saved = list(ex.map(save, range(3)))"
)


def test_what_the_threads_a_step_starts_write_are_its_effects(temp_kernel):
    # A pool made in the step does its work in threads of its own: watched as the step.
    k = temp_kernel
    r = k.ok(SAVE_IN_A_POOL)
    assert "not cached" in r.stderr and "wrote out" in r.stderr
    (k.cwd / "out1.txt").unlink()
    assert not served(k.ok(SAVE_IN_A_POOL))
    assert (k.cwd / "out1.txt").read_text() == "1"


def test_a_thread_started_by_a_thread_the_step_started_is_watched_too(temp_kernel):
    k = temp_kernel
    r = k.ok(
        "%%step nested\n"
        "import threading\n"
        "def _inner():\n"
        "    open('inner.txt', 'w').write('x')\n"
        "def _outer():\n"
        "    t = threading.Thread(target=_inner)\n"
        "    t.start()\n"
        "    t.join()\n"
        "_t = threading.Thread(target=_outer)\n"
        "_t.start()\n"
        "_t.join()\n"
        "del _t"
    )
    assert "not cached" in r.stderr and "wrote inner.txt" in r.stderr


def test_a_worker_the_step_started_goes_on_unwatched_once_it_ends(temp_kernel):
    # The pool outlives the step: its worker's calls after the step tell it nothing, and
    # go through as they would without the extension.
    k = temp_kernel
    k.ok(
        "%%step make_pool --effect\n"
        "from concurrent.futures import ThreadPoolExecutor\n"
        "ex = ThreadPoolExecutor(1)\n"
        "first = ex.submit(sum, [1, 2]).result()"
    )
    k.ok("late = ex.submit(lambda: open('late.txt', 'w').write('late')).result()")
    assert k.value("late") == 4 and (k.cwd / "late.txt").read_text() == "late"
    cell = "%%step pure_after\nv = first + 1"
    k.ok(cell)
    assert served(k.ok(cell))


def test_work_a_step_submits_to_a_pool_an_earlier_cell_made_is_watched(temp_kernel):
    # The pool's workers ran before the step; the work the step hands them is its own.
    k = temp_kernel
    k.ok(
        "from concurrent.futures import ThreadPoolExecutor\n"
        "pool = ThreadPoolExecutor(2)\n"
        "list(pool.map(abs, range(4)))"  # (its workers are running before the step)
    )
    write(k.cwd / "data.csv", "1\n2\n")
    read = (
        "%%step read_in_the_pool --ignore pool\n"
        "rows = pool.submit(lambda: open('data' + '.csv').read().split()).result()"
    )
    k.ok(read)
    assert served(k.ok(read))
    write(k.cwd / "data.csv", "1\n2\n3\n")
    line = status(k.ok(read))
    assert "ran" in line and "data.csv changed" in line
    assert k.value("rows") == ["1", "2", "3"]
    r = k.ok(
        "%%step save_in_the_pool --ignore pool\n"
        "def save(i):\n"
        "    with open(f'pooled{i}.txt', 'w') as f:\n"
        "        f.write(str(i))\n"
        "saved = list(pool.map(save, range(3)))"
    )
    assert "not cached" in r.stderr and "wrote pooled" in r.stderr
