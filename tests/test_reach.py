"""What a step reaches beyond its cell's names, without a kernel: the globals and
attribute chains a function's bytecode reads (`hashing.bytecode`), the local modules and
their sources (`hashing.sources`), and the closure of inputs the key takes
(`hashing.reach`)."""

from __future__ import annotations

import importlib
import subprocess
import sys
import types

import pytest

from resumable_cells import module_runs
from resumable_cells.errors import KeyComponentError
from resumable_cells.hashing import bytecode, reach, sources
from resumable_cells.hashing.key import describe


# -- bytecode -------------------------------------------------------------------------------
def _fn(src: str, ns: dict | None = None) -> types.FunctionType:
    ns = {} if ns is None else ns
    exec(src, ns)
    return next(v for k, v in ns.items() if isinstance(v, types.FunctionType))


def test_a_function_reads_its_globals_and_attribute_chains_not_its_attributes():
    fn = _fn(
        "def f(x):\n    y = x.data + settings.THRESHOLD\n    return helper(y) + np.random.rand()"
    )
    reads = bytecode.scan(fn.__code__)
    assert reads.names == {"settings", "helper", "np"}
    assert reads.chains == {("settings", "THRESHOLD"), ("np", "random", "rand")}
    assert reads.dynamic == ()


def test_nested_code_and_global_writes_are_read_too():
    fn = _fn("def f():\n    global count\n    count += 1\n    return [k * scale for k in keys]")
    assert bytecode.scan(fn.__code__).names == {"count", "scale", "keys"}


def test_literal_reads_of_the_namespace_are_names_and_the_rest_is_dynamic():
    literal = _fn("def f():\n    return globals()['cfg'], globals().get('b'), eval('c + d')")
    assert bytecode.scan(literal.__code__).names == {"cfg", "b", "c", "d"}
    assert bytecode.scan(literal.__code__).dynamic == ()
    dynamic = _fn("def f(n, src):\n    return globals()[n], eval(src), exec(src, {})")
    assert bytecode.scan(dynamic.__code__).dynamic == ("globals()", "eval()", "exec()")
    local = _fn("def f():\n    return vars(), locals()")
    assert bytecode.scan(local.__code__).dynamic == ()


# -- sources --------------------------------------------------------------------------------
@pytest.fixture
def beside(tmp_path, monkeypatch):
    """A folder on sys.path, as a notebook's own folder is; its modules forgotten after."""
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        if name.startswith("rc_"):
            del sys.modules[name]


def _write(path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_local_modules_are_found_with_what_they_import_from_beside_them(beside):
    _write(
        beside / "rc_top.py",
        "import json\nfrom rc_pkg import sub\n\ndef f():\n    import rc_lazy\n",
    )
    _write(beside / "rc_pkg" / "__init__.py", "")
    _write(beside / "rc_pkg" / "sub.py", "from . import other\n")
    _write(beside / "rc_pkg" / "other.py", "import numpy\n")
    _write(beside / "rc_lazy.py", "")
    found = sources.reached(["rc_top"])  # nothing imported yet: found on disk
    assert set(found.files) == {
        "rc_top.py", "rc_pkg/__init__.py", "rc_pkg/sub.py", "rc_pkg/other.py", "rc_lazy.py",
    }  # fmt: skip
    assert {"json", "numpy"} <= found.packages
    assert not any(m.startswith("rc_") for m in sys.modules)
    importlib.import_module("rc_top")
    assert sources.reached(["rc_top"]).files == found.files  # the same once imported


def test_installed_and_standard_modules_are_not_local(beside):
    import json

    import numpy

    assert not sources.is_local_file(numpy.__file__)
    assert not sources.is_local_file(json.__file__)
    _write(beside / "rc_mine.py", "")
    assert sources.is_local_file(str(beside / "rc_mine.py"))
    assert sources.reached(["numpy", "json"]).files == {}


def test_labels_name_modules_wherever_the_folder_is():
    assert sources.label("pkg.sub", "/x/pkg/sub.py") == "pkg/sub.py"
    assert sources.label("pkg", "/y/pkg/__init__.py") == "pkg/__init__.py"
    for label in ("pkg/sub.py", "pkg/__init__.py", "helpers.py"):
        assert sources.label(sources.module_name(label), "/z/" + label) == label


def test_an_edit_changes_the_digest_and_an_edit_after_the_import_is_refused(beside):
    path = beside / "rc_edit.py"
    _write(path, "X = 1\n")
    before = sources.reached(["rc_edit"]).files["rc_edit.py"]
    _write(path, "X = 22\n")
    assert sources.reached(["rc_edit"]).files["rc_edit.py"] != before
    module = importlib.import_module("rc_edit")
    sources.reached(["rc_edit"])  # seen once imported
    _write(path, "X = 333\n")
    with pytest.raises(KeyComponentError, match=r"rc_edit.py changed after it was imported") as e:
        sources.reached(["rc_edit"])
    assert "importlib.reload(rc_edit)" in e.value.ways_out
    importlib.reload(module)
    assert module.X == 333 and "rc_edit.py" in sources.reached(["rc_edit"]).files


def test_an_edit_before_the_module_is_first_seen_is_caught_by_when_it_ran(beside):
    module_runs.watch_imports()  # as loading the extension does: note when a module's code runs
    path = beside / "rc_early.py"
    _write(path, "X = 1\n")
    importlib.import_module("rc_early")
    _write(path, "X = 4444\n")
    with pytest.raises(KeyComponentError, match="changed after it was imported"):
        sources.reached(["rc_early"])
    importlib.reload(sys.modules["rc_early"])
    assert "rc_early.py" in sources.reached(["rc_early"]).files


_WHEN_IT_RAN = """
import os, sys, time, traceback
sys.dont_write_bytecode = True  # no bytecode cache to tell the edit by
sys.path.insert(0, '.')
from resumable_cells import module_runs
from resumable_cells.hashing import sources
from resumable_cells import module_runs
from resumable_cells.errors import KeyComponentError
if sys.argv[1] == 'watch':
    module_runs.watch_imports()
from importlib import reload  # bound before, as IPython's autoreload binds it

def told():
    try:
        sources.reached(['rc_ran'])
    except KeyComponentError:
        return 'stale'
    return 'current'

def edit(text):
    time.sleep(0.05)
    open('rc_ran.py', 'w').write(text)
    now = time.time()
    os.utime('rc_ran.py', (now, now))

import rc_ran
edit('X = 2\\n')
first = told()
reload(rc_ran)
try:
    import rc_raises
except ValueError as e:
    frames = [f.filename for f in traceback.extract_tb(e.__traceback__)]
print(first, told(), any(f.endswith('sources.py') for f in frames))
"""


@pytest.mark.parametrize("watched", [True, False])
def test_imports_and_reloads_are_noted_without_an_audit_hook(tmp_path, watched):
    # A process of its own without a bytecode cache: only `watch_imports` can tell that
    # the module was imported before its edit, and a reload (however it is bound) after.
    (tmp_path / "rc_ran.py").write_text("X = 1\n")
    (tmp_path / "rc_raises.py").write_text("raise ValueError('at import')\n")
    argv = [sys.executable, "-c", _WHEN_IT_RAN, "watch" if watched else "not"]
    out = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, check=True)
    first, after_reload, frame_shown = out.stdout.split()
    assert first == ("stale" if watched else "current"), out.stderr
    assert after_reload == "current" and frame_shown == "False"


def test_or_by_its_bytecode_cache_when_it_ran_before_imports_were_watched(tmp_path):
    # A process of its own: imports not watched, bytecode written.
    (tmp_path / "rc_cached.py").write_text("X = 1\n")
    script = (
        "import os, sys, importlib\n"
        "sys.dont_write_bytecode = False\n"
        "sys.path.insert(0, '.')\n"
        "import rc_cached\n"
        "open('rc_cached.py', 'w').write('X = 4444\\n')\n"
        "os.utime('rc_cached.py', (1, 1))\n"
        "from resumable_cells.hashing import sources\n"
        "from resumable_cells.errors import KeyComponentError\n"
        "try:\n"
        "    sources.reached(['rc_cached'])\n"
        "except KeyComponentError as e:\n"
        "    print(e)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert "rc_cached.py changed after it was imported" in out.stdout, out.stderr


# -- the closure of inputs ------------------------------------------------------------------
def _collect(ns, names, refs=()):
    return reach.collect(ns, names, refs, lambda n: "." in n or n in ns, describe)


def test_the_globals_a_notebook_function_reads_are_inputs_transitively():
    ns: dict = {"factor": 3, "unused": 1}
    _fn("def inner(x):\n    return x * factor", ns)
    _fn("def outer(x):\n    return inner(x) + 1", ns)
    ns.pop("__builtins__")
    got = _collect(ns, ["outer"])
    assert set(got.digests) == {"outer", "inner", "factor"}
    ns["factor"] = 4
    assert _collect(ns, ["outer"]).digests["factor"] != got.digests["factor"]
    assert _collect(ns, ["outer"]).digests["outer"] == got.digests["outer"]


def test_module_attributes_are_inputs_by_value_when_they_are_data(beside):
    _write(
        beside / "rc_settings.py",
        "THRESHOLD = 0.5\nTABLE = {'a': 1}\n\ndef f():\n    return TABLE\n",
    )
    mod = importlib.import_module("rc_settings")
    ns = {"rc_settings": mod}
    refs = [
        reach.AttrRef("rc_settings", mod, ("THRESHOLD",)),
        reach.AttrRef("rc_settings", mod, ("f",)),
    ]
    got = _collect(ns, ["rc_settings"], refs)
    assert {"rc_settings.THRESHOLD", "rc_settings.f", "rc_settings.TABLE"} <= set(got.digests)
    mod.TABLE["a"] = 2
    changed = reach.changed_attributes(ns, got.attributes, got.digests)
    assert changed == ["rc_settings.TABLE"]


def test_installed_modules_give_their_scalars_only():
    import numpy

    ns = {"np": numpy}
    refs = [reach.AttrRef("np", numpy, ("pi",)), reach.AttrRef("np", numpy, ("random", "rand"))]
    assert set(_collect(ns, [], refs).digests) == {"np.pi"}


def test_a_function_that_reads_the_namespace_dynamically_is_reported():
    ns: dict = {}
    _fn("def pick(n):\n    return globals()[n]", ns)
    ns.pop("__builtins__")
    assert _collect(ns, ["pick"]).dynamic == ["`globals()` in pick"]


def test_a_module_global_a_local_function_sets_is_an_input_even_when_unset(beside):
    _write(beside / "rc_state.py", "def configure():\n    global MODE\n    MODE = 'fast'\n")
    mod = importlib.import_module("rc_state")
    ns = {"rc_state": mod}
    got = _collect(ns, [], [reach.AttrRef("rc_state", mod, ("configure",))])
    assert got.digests["rc_state.MODE"] == "missing"
    mod.configure()
    assert reach.changed_attributes(ns, got.attributes, got.digests) == ["rc_state.MODE"]


def test_an_ignored_attribute_is_not_an_input(beside):
    _write(beside / "rc_db.py", "import threading\nlock = threading.Lock()\nN = 1\n")
    mod = importlib.import_module("rc_db")
    refs = [reach.AttrRef("rc_db", mod, ("lock",)), reach.AttrRef("rc_db", mod, ("N",))]
    with pytest.raises(KeyComponentError, match="input rc_db.lock cannot be hashed"):
        _collect({"rc_db": mod}, [], refs)
    got = reach.collect({"rc_db": mod}, [], refs, lambda n: n != "rc_db.lock", describe)
    assert set(got.digests) == {"rc_db.N"}


def test_a_module_attribute_a_notebook_function_sets_is_an_input(beside):
    _write(beside / "rc_conf.py", "")
    mod = importlib.import_module("rc_conf")
    ns: dict = {"rc_conf": mod}
    _fn("def tune():\n    rc_conf.LEVEL = 3", ns)
    ns.pop("__builtins__")
    assert bytecode.scan(ns["tune"].__code__).attr_writes == {("rc_conf", "LEVEL")}
    got = _collect(ns, ["tune"])
    assert got.digests["rc_conf.LEVEL"] == "missing"
    ns["tune"]()
    assert reach.changed_attributes(ns, got.attributes, got.digests) == ["rc_conf.LEVEL"]


def test_input_digests_are_the_keys_own_for_names_and_attribute_labels(beside):
    from resumable_cells.hashing.key import input_digests

    _write(beside / "rc_lab.py", "T = 0.5\n")
    mod = importlib.import_module("rc_lab")
    ns: dict = {"rc_lab": mod, "factor": 2}
    _fn("def f():\n    return factor", ns)
    ns.pop("__builtins__")
    got = _collect(ns, ["f"], [reach.AttrRef("rc_lab", mod, ("T",))])
    digests, _, _ = input_digests(ns, ["f", "factor", "rc_lab.T"])
    assert digests == {k: got.digests[k] for k in ("f", "factor", "rc_lab.T")}


def test_a_frame_is_described_by_its_shallow_size_as_pandas_counts_it():
    import numpy as np
    import pandas as pd

    frame = pd.DataFrame(
        {"n": np.arange(6), "s": list("abcdef"), "c": pd.Categorical(list("xyxyxy"))},
        index=pd.RangeIndex(10, 16),
    )
    for value in (frame, frame.set_index("s"), frame[["n", "n"]]):  # (columns of one name)
        assert describe(value) == (
            "pandas.DataFrame",
            int(value.memory_usage(deep=False).sum()),
        )
    assert describe(frame["n"]) == ("pandas.Series", frame["n"].nbytes)


def test_the_environment_variables_a_function_may_read_are_its_string_constants():
    import os

    def reads():
        return os.environ.get("DATA_DIR", "no such dir") + os.getenv("MODE", "")

    def none():
        return "DATA_DIR"

    assert bytecode.scan(reads.__code__).environ == {"DATA_DIR", "MODE"}
    assert bytecode.scan(none.__code__).environ == frozenset()
