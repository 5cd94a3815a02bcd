"""The tripwire's mechanism, in this process: the calls a pure step makes are seen while
it is watched and only then, on its own thread only, and every function it wraps is
the original again when the watch ends, however it ends. No audit hook is added."""

from __future__ import annotations

import builtins
import importlib
import io
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tarfile
import textwrap
import threading

import pytest

from resumable_cells.engine.live import tripwire, watchpoints
from resumable_cells.engine.objects.identities import Identities

np = pytest.importorskip("numpy")
EVAL = builtins.eval  # (as it is outside any watch)


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """The notebook's folder, the current one (tmp_path is outside every ignored root)."""
    nb = tmp_path / "nb"
    nb.mkdir()
    monkeypatch.chdir(nb)
    return nb


def watched(folder, **kwargs):
    return tripwire.watching(folder.parent / "store", **kwargs)


def originals() -> dict[str, object]:
    """Every watched function where Python looks it up, and what a class has of its own."""
    out: dict[str, object] = {}
    for t in watchpoints.TARGETS:
        module, _, cls = t.owner.partition(":")
        owner = importlib.import_module(module)  # (pty: imported by the first watch)
        if cls:
            owner = getattr(owner, cls)
            out[f"{t.owner}.{t.name} own"] = t.name in vars(owner)
        out[f"{t.owner}.{t.name}"] = getattr(owner, t.name, None)
    for name in ("eval", "exec", "compile"):
        out[name] = getattr(builtins, name)
    out["tarfile.bltn_open"] = tarfile.bltn_open
    return out


# -- what is seen --------------------------------------------------------------------------
CALLS = {
    # call: (code run in the notebook's folder, what the step is found to have done)
    "open for writing": ("open('out.txt', 'w').write('x')", "wrote out.txt"),
    "pathlib": ("pathlib.Path('p.txt').write_text('x')", "wrote p.txt"),
    "os.open": ("os.close(os.open('fd.txt', os.O_WRONLY | os.O_CREAT))", "wrote fd.txt"),
    "touch": ("pathlib.Path('t.txt').touch()", "wrote t.txt"),
    "remove": ("os.remove('old.txt')", "deleted old.txt"),
    "unlink": ("pathlib.Path('old.txt').unlink()", "deleted old.txt"),
    "rename": ("os.rename('old.txt', 'new.txt')", "renamed old.txt"),
    "replace": ("os.replace('old.txt', 'new.txt')", "renamed old.txt"),
    "mkdir": ("os.makedirs('a/b')", "created a directory a"),
    "rmdir": ("os.mkdir('d0'); os.rmdir('d0'); os.rmdir('olddir')", "removed a directory olddir"),
    "rmtree": ("shutil.rmtree('olddir')", "removed a tree olddir"),
    "truncate": ("os.truncate('old.txt', 0)", "truncated old.txt"),
    "chmod": ("os.chmod('old.txt', 0o600)", "changed permissions of old.txt"),
    "link": ("os.link('old.txt', 'hard.txt')", "linked old.txt"),
    "symlink": ("os.symlink('old.txt', 'soft.txt')", "linked old.txt"),
    "subprocess": ("subprocess.run(['true'])", "started a subprocess (['true'])"),
    "os.popen": ("os.popen('true').read()", "started a subprocess (['/bin/sh', '-c', 'true'])"),
    "os.system": ("os.system('true')", "started a subprocess ((b'true',))"),
    "posix_spawn": (
        "os.waitpid(os.posix_spawn('/bin/true', ['true'], {}), 0)",
        "started a subprocess (['true'])",
    ),
    "fork": ("pid = os.fork()\nif pid == 0: os._exit(0)\nos.waitpid(pid, 0)", "(os.fork)"),
    "forkpty": (
        "pid, fd = os.forkpty()\nif pid == 0: os._exit(0)\nos.waitpid(pid, 0); os.close(fd)",
        "started a subprocess (in a pseudo-terminal)",
    ),
    "kill": ("os.kill(os.getpid(), 0)", "sent signal 0 to process"),
    "connect": ("socket.create_connection(('127.0.0.1', port)).close()", "network connection"),
    "sqlite": (
        "sqlite3.connect('made.db').execute('create table t (x)').connection.close()",
        "wrote made.db",
    ),
    "numpy's openers": ("np.savetxt('arr.txt', np.arange(3))", "wrote arr.txt"),
    "tarfile": ("tarfile.open('t.tar', 'w').close()", "wrote t.tar"),
    "bound in the namespace before": ("system('true')", "started a subprocess ((b'true',))"),
}


@pytest.mark.parametrize("call", list(CALLS))
def test_each_kind_of_call_a_pure_step_makes_is_seen(folder, call):
    code, found = CALLS[call]
    (folder / "old.txt").write_text("old")
    (folder / "olddir").mkdir()
    server = socket.create_server(("127.0.0.1", 0))
    ns = {"np": np, "system": os.system, "port": server.getsockname()[1]}
    ns.update({m.__name__: m for m in (os, shutil, subprocess, socket, sqlite3, tarfile)})
    ns["pathlib"] = importlib.import_module("pathlib")
    try:
        with watched(folder, namespace=ns) as findings:
            exec(code, ns)
    finally:
        server.close()
    assert any(found in e for e in findings.effects), findings.effects


def test_reads_are_inputs_and_what_other_threads_do_is_not_the_step_s(folder):
    (folder / "data.csv").write_text("1\n2\n")
    elsewhere = threading.Event()

    def other_thread():
        open("log.txt", "w").write("from another thread")
        os.system("true")
        elsewhere.set()

    with watched(folder) as findings:
        rows = np.loadtxt("data.csv")
        thread = threading.Thread(target=other_thread)
        thread.start()
        thread.join()
    assert elsewhere.is_set() and list(rows) == [1, 2]
    assert findings.reads == {os.path.realpath("data.csv")} and findings.effects == []
    with watched(folder) as findings:
        open("log.txt", "w").write("from the step")
    assert findings.effects == ["wrote log.txt"]


def test_a_reference_bound_before_the_step_in_a_module_is_watched(folder, monkeypatch):
    (folder / "rc_remover.py").write_text("from os import remove\n\ndef clean(p):\n    remove(p)\n")
    monkeypatch.syspath_prepend(str(folder))
    module = importlib.import_module("rc_remover")
    try:
        (folder / "old.txt").write_text("old")
        with watched(folder) as findings:
            module.clean("old.txt")
        assert findings.effects == ["deleted old.txt"]
        assert module.remove is os.remove  # the original again
    finally:
        del sys.modules["rc_remover"]


def test_a_module_imported_after_the_sweep_ahead_of_the_first_watch_is_watched(folder, monkeypatch):
    # `prepare` sweeps the loaded modules while the kernel is idle after `%load_ext`; a
    # module imported between it and the watch (a plain cell's import) is swept by the
    # watch, and one swept ahead is watched without a sweep of its own.
    (folder / "rc_early_remover.py").write_text(
        "from os import remove\n\ndef clean(p):\n    remove(p)\n"
    )
    (folder / "rc_later_remover.py").write_text(
        "from os import unlink\n\ndef clean(p):\n    unlink(p)\n"
    )
    monkeypatch.syspath_prepend(str(folder))
    try:
        early = importlib.import_module("rc_early_remover")
        watchpoints.prepare()
        later = importlib.import_module("rc_later_remover")
        (folder / "a.txt").write_text("a")
        (folder / "b.txt").write_text("b")
        with watched(folder) as findings:
            early.clean("a.txt")
            later.clean("b.txt")
        assert findings.effects == ["deleted a.txt", "deleted b.txt"]
        assert early.remove is os.remove and later.unlink is os.unlink
    finally:
        sys.modules.pop("rc_early_remover", None)
        sys.modules.pop("rc_later_remover", None)


def test_a_module_imported_in_one_step_is_watched_through_its_references_in_the_next(
    folder, monkeypatch
):
    # The first watch puts the original back in the module it imported, and sweeps it for
    # the references it holds then: the second watch wraps them without a sweep of its own.
    (folder / "rc_late_remover.py").write_text(
        "from os import remove\n\ndef clean(p):\n    remove(p)\n"
    )
    monkeypatch.syspath_prepend(str(folder))
    try:
        with watched(folder):
            module = importlib.import_module("rc_late_remover")
        assert module.remove is os.remove  # the original, once the first watch ended
        (folder / "old.txt").write_text("old")
        with watched(folder) as findings:
            module.clean("old.txt")
        assert findings.effects == ["deleted old.txt"]
        assert module.remove is os.remove
    finally:
        sys.modules.pop("rc_late_remover", None)


def test_what_the_step_binds_to_a_watched_function_is_the_original_after(folder):
    ns: dict = {}
    remove = os.remove
    with watched(folder, namespace=ns):
        exec("from os import remove, system", ns)
        assert ns["remove"] is os.remove is not remove  # the wrapper, meanwhile
    assert ns["remove"] is os.remove is remove and ns["system"] is os.system


def test_a_long_namespace_is_read_from_the_identities_the_step_took(folder):
    """A long session's namespace (a string for each cell run): the names bound to a
    watched function are found from the ids the step took of it, and a name the step
    binds to one holds the original after, among thousands that hold none."""
    ns: dict = {f"_i{k}": f"x = {k}" for k in range(3000)}
    ns["system"] = os.system
    ns.update({f"_i{k}": f"y = {k}" for k in range(3000, 4000)})
    ns["helper"] = lambda: None  # a function, not a wrapper
    remove, system = os.remove, os.system
    with watched(folder, namespace=ns, names=Identities(ns)) as findings:
        assert ns["system"] is not system  # the wrapper, meanwhile
        exec("system('true')\nfrom os import remove", ns)
    assert any(e.startswith("started a subprocess") for e in findings.effects), findings.effects
    assert ns["system"] is system and ns["remove"] is remove and os.remove is remove


# -- compiled strings ------------------------------------------------------------------------
CODE = textwrap.dedent(
    """
    factor = 3
    def f():
        y = 5
        exec("z = y * factor")  # the function's locals, as eval and exec see them
        return eval(" y + 1"), locals()["z"], eval(b"factor")

    def g(x: int):
        pass

    exec("def h(x: int): pass")
    got = f()
    compiled = compile("factor", "<string>", "eval")
    compile("factor", "elsewhere.py", "eval")  # no string run as code
    """
)


def _run_code() -> dict:
    """CODE, run by code with no future statement (this module has one: annotations)."""
    ns: dict = {"__name__": "nb"}
    driver = compile("exec(code, ns)", "driver", "exec", dont_inherit=True)
    exec(driver, {"code": CODE, "ns": ns})
    return ns


def test_strings_compiled_as_code_are_told_and_run_as_without_the_tripwire(folder):
    plain = _run_code()
    told: list = []
    with watched(folder, on_compile=told.append):
        ns = _run_code()
    assert told == [CODE, "def h(x: int): pass", "z = y * factor", " y + 1", b"factor", "factor"]
    assert ns["got"] == plain["got"] == (6, 15, 3) and eval(ns["compiled"], ns) == 3
    # The caller's future statements, not the tripwire's own (annotations): as without it.
    for fn in ("g", "h"):
        assert ns[fn].__annotations__ == plain[fn].__annotations__ == {"x": int}
    assert builtins.eval is EVAL


def test_eval_is_wrapped_only_for_a_step_that_asks(folder):
    with watched(folder):
        assert builtins.eval is EVAL
    with watched(folder, on_compile=lambda source: None):
        assert builtins.eval is not EVAL
    assert builtins.eval is EVAL


# -- nothing is left behind ------------------------------------------------------------------
@pytest.mark.parametrize("ending", [ValueError, KeyboardInterrupt])
def test_every_original_is_back_after_a_step_that_raises_or_is_interrupted(folder, ending):
    before = originals()
    ns = {"system": os.system}
    with pytest.raises(ending):
        with watched(folder, on_compile=lambda source: None, namespace=ns):
            during = originals()
            assert builtins.open is io.open and ns["system"] is os.system  # (one wrapper each)
            raise ending
    kept = [k for k, v in before.items() if during[k] is v and v is not None and v is not True]
    assert kept == ["socket:socket.connect own", "socket:socket.connect_ex own"] or kept == []
    assert [k for k in before if not k.endswith(" own") and during[k] is before[k]] == [
        k for k in before if before[k] is None
    ]  # every function was wrapped while watched (but those this platform lacks)
    assert originals() == before and ns["system"] is os.system
    assert "connect" not in vars(socket.socket)  # (inherited from _socket.socket, as before)


class Interrupting(dict):
    """A namespace whose second write (the wrapper taken back) is interrupted."""

    writes = 0

    def __setitem__(self, key, value):
        self.writes += 1
        if self.writes == 2:
            raise KeyboardInterrupt
        super().__setitem__(key, value)


def test_a_watch_cut_short_while_its_wrappers_go_back_leaves_none_behind(folder):
    before = originals()
    ns = Interrupting(system=os.system)
    with pytest.raises(KeyboardInterrupt):
        with watched(folder, namespace=ns):
            assert ns["system"] is not os.system
    assert ns.writes == 3 and ns["system"] is os.system
    assert originals() == before


def test_nested_watches_keep_watching_the_outer_step(folder):
    with watched(folder) as outer:
        with watched(folder) as inner:
            open("inner.txt", "w").close()
        open("outer.txt", "w").close()
    assert inner.effects == ["wrote inner.txt"]
    assert outer.effects == ["wrote outer.txt"]


def test_a_watched_step_adds_no_audit_hook(tmp_path):
    # A process of its own, a hook of its own first: adding another raises
    # `sys.addaudithook` to it. The engine starts, a pure step writes a file.
    script = textwrap.dedent(
        """
        import sys
        added = []
        sys.addaudithook(lambda event, args: event == "sys.addaudithook" and added.append(1))
        from IPython.testing import globalipapp
        globalipapp.start_ipython()
        ip = globalipapp.get_ipython()
        ip.run_line_magic("load_ext", "resumable_cells")
        ip.run_cell_magic("step", "save", "open('out.txt', 'w').write('x')")
        ip.run_cell_magic("step", "save", "open('out.txt', 'w').write('x')")
        print("hooks added:", len(added))
        """
    )
    env = {**os.environ, "RESUMABLE_CELLS_DIR": str(tmp_path / "store")}
    argv = [sys.executable, "-c", script]
    out = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert "hooks added: 0" in out.stdout, out.stdout + out.stderr
    assert "not cached: it wrote out.txt" in out.stdout + out.stderr
