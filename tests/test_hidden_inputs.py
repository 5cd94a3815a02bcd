"""Hidden inputs become inputs, through real kernels: local modules by their source,
module attributes by value, the globals of the notebook functions a step reaches, and
dynamic reads of the namespace (resolved, or the step runs uncached and says why).

Each case is a live run, a restart and the same cells: every step served with the
namespace the live run left, or the step runs again and says why."""

from __future__ import annotations

import pytest
from steps import restart, served, status, write


def runs_again_once_changed(kernel, cell: str, change: str, said: str, probe: str, was, now):
    """`cell` runs, is served, and runs again saying `said` once `change` ran, with
    `probe` `was` before and `now` after."""
    kernel.ok(cell)
    assert kernel.value(probe) == was
    assert served(kernel.ok(cell))
    kernel.ok(change)
    line = status(kernel.ok(cell))
    assert "ran" in line and said in line, line
    assert kernel.value(probe) == now


# -- local modules ---------------------------------------------------------------------
def test_a_local_module_edited_between_runs_reruns_the_step_and_why_names_it(kernel, tmp_path):
    write(tmp_path / "helpers.py", "def f(x):\n    return x * 2\n")
    cell = "%%step use\ny = helpers.f(3)"
    kernel.ok("import helpers")
    kernel.ok(cell)
    restart(kernel, "import helpers")
    assert served(kernel.ok(cell)) and kernel.value("y") == 6
    write(tmp_path / "helpers.py", "def f(x):\n    return x * 50\n")
    restart(kernel, "import helpers")
    line = status(kernel.ok(cell))
    assert "ran" in line and "helpers.py changed" in line
    assert kernel.value("y") == 150
    why = kernel.ok("%step why use").stdout
    assert "changed  source helpers.py" in why


def test_from_imports_and_what_a_local_module_imports_from_beside_it_are_inputs(kernel, tmp_path):
    write(tmp_path / "helpers.py", "from helpers2 import scale\n\ndef f(x):\n    return scale(x)\n")
    write(tmp_path / "helpers2.py", "def scale(x):\n    return x + 1\n")
    cell = "%%step use\ny = f(3)"
    kernel.ok("from helpers import f")
    kernel.ok(cell)
    restart(kernel, "from helpers import f")
    assert served(kernel.ok(cell))
    write(tmp_path / "helpers2.py", "def scale(x):\n    return x + 100\n")
    restart(kernel, "from helpers import f")
    line = status(kernel.ok(cell))
    assert "ran" in line and "helpers2.py changed" in line
    assert kernel.value("y") == 103


def test_a_module_imported_inside_the_step_and_a_local_package_are_inputs(kernel, tmp_path):
    write(tmp_path / "pkg" / "__init__.py", "")
    write(tmp_path / "pkg" / "sub.py", "def g():\n    return 'one'\n")
    cell = "%%step use\nfrom pkg.sub import g\nout = g()"
    kernel.ok(cell)
    restart(kernel)
    assert served(kernel.ok(cell)) and kernel.value("out") == "one"
    write(tmp_path / "pkg" / "sub.py", "def g():\n    return 'three'\n")
    restart(kernel)
    line = status(kernel.ok(cell))
    assert "ran" in line and "pkg/sub.py changed" in line
    assert kernel.value("out") == "three"


def test_a_module_edited_after_its_import_is_not_cached_until_reloaded(kernel, tmp_path):
    write(tmp_path / "helpers.py", "def f(x):\n    return x * 2\n")
    cell = "%%step use\ny = helpers.f(3)"
    kernel.ok("import helpers")
    kernel.ok(cell)
    write(tmp_path / "helpers.py", "def f(x):\n    return x * 50\n")
    r = kernel.ok(cell)  # the kernel still runs the old code: its result is not cached
    assert "ran" in status(r) and kernel.value("y") == 6
    assert "not cached" in r.stderr and "helpers.py changed after it was imported" in r.stderr
    assert "importlib.reload(helpers)" in r.stderr
    kernel.ok("import importlib\nimportlib.reload(helpers)")
    assert "ran" in status(kernel.ok(cell)) and kernel.value("y") == 150
    restart(kernel, "import helpers")
    assert served(kernel.ok(cell)) and kernel.value("y") == 150


def test_a_module_edited_after_its_import_before_any_step_saw_it_is_not_cached(kernel, tmp_path):
    write(tmp_path / "helpers.py", "def f(x):\n    return x * 2\n")
    kernel.ok("import helpers")
    write(tmp_path / "helpers.py", "def f(x):\n    return x * 50\n")
    r = kernel.ok("%%step use\ny = helpers.f(3)")
    assert "not cached" in r.stderr and "helpers.py changed after it was imported" in r.stderr
    assert kernel.value("y") == 6


# -- module attributes -----------------------------------------------------------------
def test_a_module_attribute_set_at_run_time_is_an_input_by_value(kernel, tmp_path):
    write(tmp_path / "settings.py", "THRESHOLD = 0.5\n")
    cell = "%%step flag\nabove = 0.6 > settings.THRESHOLD"
    kernel.ok("import settings")
    kernel.ok(cell)
    restart(kernel, "import settings")
    assert served(kernel.ok(cell)) and kernel.value("above") is True
    restart(kernel, "import settings\nsettings.THRESHOLD = 0.7")
    line = status(kernel.ok(cell))
    assert "ran" in line and "input settings.THRESHOLD changed" in line
    assert kernel.value("above") is False
    assert "changed  input settings.THRESHOLD" in kernel.ok("%step why flag").stdout


@pytest.mark.parametrize(
    "cell, said",
    [
        ("%%step cls\ny = helpers.Config.lr * 2", "input helpers.Config changed"),
        ("%%step cls\ny = Config.lr * 2", "input Config changed"),
        ("%%step cls\ny = Config().lr * 2", "input Config changed"),  # through an instance
        ("%%step cls\ny = rate() * 2", "input helpers.Config changed"),  # a module function
    ],
)
def test_an_attribute_set_at_run_time_on_a_local_module_s_class_is_an_input(
    kernel, tmp_path, cell, said
):
    # The class was its module's source and no more: `helpers.Config.lr = 0.5` in a
    # cell, and a step reading it was served what 0.1 made.
    write(
        tmp_path / "helpers.py",
        "import threading\n\nclass Config:\n    lr = 0.1\n    lock = threading.Lock()\n"
        "    cache = {}\n\ndef rate():\n    return Config.lr\n",
    )
    kernel.ok("import helpers\nfrom helpers import Config, rate")
    change = "helpers.Config.lr = 0.5"  # (the lock, which cannot be hashed, is left out)
    runs_again_once_changed(kernel, cell, change, said, "y", 0.2, 1.0)
    # what it holds that changes as it is used (a cache) is state, not a setting: a
    # resumed Run All, whose served steps do not fill it, would run every later step
    kernel.ok("helpers.Config.cache['seen'] = 1")
    assert served(kernel.ok(cell))


def test_the_module_globals_a_local_function_reads_are_inputs(kernel, tmp_path):
    write(
        tmp_path / "helpers.py",
        "SCALE = 2\n\ndef f(x):\n    return _g(x)\n\ndef _g(x):\n    return x * SCALE\n",
    )
    cell = "%%step use\nfrom helpers import f\ny = f(3)"
    kernel.ok("import helpers")
    kernel.ok(cell)
    restart(kernel, "import helpers")
    assert served(kernel.ok(cell)) and kernel.value("y") == 6
    restart(kernel, "import helpers\nhelpers.SCALE = 10")
    line = status(kernel.ok(cell))
    assert "ran" in line and "input helpers.SCALE changed" in line
    assert kernel.value("y") == 30


@pytest.mark.parametrize(
    "cell",
    [
        "%%step main\nimport __main__\nv = __main__.CONFIG['k'] * 2",
        "%%step mods\nimport sys\nv = sys.modules['__main__'].CONFIG['k'] * 2",
        "%%step helper\nfrom uses_main import doubled\nv = doubled()",
    ],
)
def test_the_notebook_s_names_read_through_its_module_are_inputs(kernel, tmp_path, cell):
    # The notebook's namespace is the dict of `sys.modules['__main__']`: a name read
    # through that module, by the cell or by a helper module, is the notebook's own and
    # an input like one the cell names (the old value was served before).
    write(
        tmp_path / "uses_main.py",
        "import __main__\n\ndef doubled():\n    return __main__.CONFIG['k'] * 2\n",
    )
    # (imported first: a helper the step imports first is read from its second run on)
    kernel.ok("import uses_main\nCONFIG = {'k': 3}")
    runs_again_once_changed(kernel, cell, "CONFIG = {'k': 5}", "CONFIG changed", "v", 6, 10)


BY_NAME = "input os.environ['MODE'] changed"  # (in the key)
AS_READ = "it read the environment variable MODE, which is different now"  # (seen running)


@pytest.mark.parametrize(
    "cell, said",
    [
        ("%%step item\nimport os\nmode = os.environ['MODE'] * 2", BY_NAME),
        ("%%step getenv\nimport os\nmode = os.getenv('MODE', '?') * 2", BY_NAME),
        ("%%step get\nfrom os import environ\nmode = environ.get('MODE', '?') * 2", BY_NAME),
        (
            "%%step isin\nimport os\nmode = ('MODE' in os.environ) and os.environ['MODE'] * 2",
            BY_NAME,
        ),
        ("%%step fn\nmode = doubled_mode()", BY_NAME),  # a notebook function that reads it
        # the key holds only those read by a literal name: these were served 'aa' after
        # `%env MODE=b`; the tripwire sees each read while the step runs
        ("%%step envs\nmode = dict(os.environ).get('MODE') * 2", AS_READ),
        ("%%step envs\nmode = os.environ.copy()['MODE'] * 2", AS_READ),
        ("%%step envs\nname = 'MODE'\nmode = os.getenv(name) * 2", AS_READ),
        ("%%step envs\nmode = [v for k, v in os.environ.items() if k == 'MODE'][0] * 2", AS_READ),
        ("%%step envs\ne = %env\nmode = e['MODE'] * 2", AS_READ),
        ("%%step envs\nmode = read_env('MODE') * 2", AS_READ),  # a helper given the name
    ],
)
def test_an_environment_variable_a_step_reads_is_an_input(kernel, cell, said):
    # `%env MODE=b` between two runs: the step must run again, not serve `aa`.
    kernel.ok(
        "import os\ndef doubled_mode():\n    return os.environ.get('MODE', '?') * 2\n"
        "def read_env(n):\n    return os.environ.get(n)"
    )
    kernel.ok("%env MODE=a")
    runs_again_once_changed(kernel, cell, "%env MODE=b", said, "mode", "aa", "bb")
    assert served(kernel.ok(cell))


def test_a_variable_the_step_sets_or_a_library_reads_as_it_is_imported_is_not_kept(
    kernel, tmp_path
):
    # Set by the step before it reads it: its own, which a hit sets again. Read by a
    # module as it is imported: that module's configuration (`MPLCONFIGDIR`, `HOME`).
    write(tmp_path / "configured.py", "import os\nLEVEL = os.environ.get('LEVEL_X', '0')\n")
    cell = "%%step own\nos.environ['OWN_X'] = '1'\nown = os.environ['OWN_X']\nimport configured"
    kernel.ok("import os")
    kernel.ok(cell)
    engine = "__import__('resumable_cells').ipython.magics.current_engine()"
    kernel.wait_for_writes()
    params = kernel.value(
        f"[{engine}.store.get_entry(k).params for k in {engine}.store.entry_keys()]"
    )
    assert len(params) == 1 and "environ" not in params[0], params
    kernel.ok("os.environ['OWN_X'] = '2'\nos.environ['LEVEL_X'] = '5'")
    assert served(kernel.ok(cell)) and kernel.value("own") == "1"


# -- IPython's history ----------------------------------------------------------------
@pytest.mark.parametrize(
    "cell",
    [
        "y = _",  # the last result
        "y = __",  # the one before
        "y = Out[{n}]",
        "y = _{n}",
        "y = _i{n}",  # a cell's source
        "show = lambda: _\ny = show()",  # read through a function
    ],
)
def test_ipython_s_history_a_step_reads_is_an_input(kernel, cell):
    # IPython keeps `_`, `Out` and the rest among its own names (`user_ns_hidden`): read
    # by a step, they were no input, and a step computing from the last result was
    # served the one it computed from a result since replaced. Each pass is a new
    # session, so that `{n}` is the same cell in each.
    def run(first: str) -> tuple[object, object]:
        restart(kernel)
        n = kernel.ok(first).execution_count
        kernel.ok("'between'" if "__" in cell else "None")
        r = kernel.ok("%%step hist\n" + cell.format(n=n))
        return status(r), kernel.value("y")

    line, y = run("20 + 1")
    assert "ran" in line and y == ("20 + 1" if "_i" in cell else 21), (line, y)
    line, y = run("20 + 1")
    assert "served" in line and y == ("20 + 1" if "_i" in cell else 21), (line, y)
    line, y = run("30 + 3")
    assert "ran" in line and "changed" in line and "code" not in line, line
    assert y == ("30 + 3" if "_i" in cell else 33)


def test_a_step_reading_one_cell_s_result_is_served_while_others_are_shown(kernel):
    # `Out[n]` is read as `_n`: all of `Out` changes with every result shown, and a
    # step reading it ran again after any cell that showed one.
    n = kernel.ok("20 + 1").execution_count
    cell = f"%%step one\ny = Out[{n}] * 2\nsource = In[{n}]"
    kernel.ok(cell)
    kernel.ok("'another result'")
    assert served(kernel.ok(cell)) and kernel.value("(y, source)") == (42, "20 + 1")


@pytest.mark.parametrize("name", ["__version__", "__vsc_ipynb_file__"])
def test_a_dunder_name_the_notebook_binds_is_an_input(kernel, name):
    # Every name spelled `__x__` was left out of the inputs, where Python's own
    # (`__name__`) are meant: `__version__ = '2.0'` served what '1.0' made, and so did
    # the notebook's path VS Code binds in the namespace, after the notebook moved.
    kernel.ok(f"{name} = '1.0'")
    cell = f"%%step dunder\nv = {name} + '!'\nn = __name__"
    said = f"input {name} changed"
    runs_again_once_changed(kernel, cell, f"{name} = '2.0'", said, "v", "1.0!", "2.0!")
    assert kernel.value("n") == "__main__"


@pytest.mark.parametrize(
    "cell",
    ["%%step lim\ny = LIMIT * 2", "%%step lim\ny = limited()"],  # by the cell, by a function
)
def test_a_global_the_notebook_put_among_the_builtins_is_an_input(kernel, cell):
    # `builtins.LIMIT = 5`: a read of `LIMIT` finds it there, not in the namespace, and
    # it was no input: the step was served 10 after `LIMIT` became 7.
    kernel.ok("import builtins\nbuiltins.LIMIT = 5\ndef limited():\n    return LIMIT * 2")
    said = "input builtins.LIMIT changed"
    runs_again_once_changed(kernel, cell, "builtins.LIMIT = 7", said, "y", 10, 14)
    restart(kernel, "import builtins\nbuiltins.LIMIT = 7\ndef limited():\n    return LIMIT * 2")
    assert served(kernel.ok(cell)) and kernel.value("y") == 14


def test_the_step_helper_the_extension_puts_among_the_builtins_is_no_input(kernel):
    # `step` is a builtin the extension adds as it loads: a helper calling `step.spend`
    # was taken for a global the notebook put there, whose digest walked into the
    # engine of the step running around it (a lock: "not cached"), on every turn of
    # the agent demo run under `verify`, where the cell driving the turns is a step.
    kernel.ok("def charge(n):\n    step.spend(tokens=n)\n    return n")
    inner = "get_ipython().run_cell_magic('step', 'charged', 'used = charge(3)')"
    first = kernel.ok("%%step outer --effect\n" + inner)
    assert "not cached" not in first.stderr, first.stderr
    lines = kernel.ok("%%step outer --effect\n" + inner).status_lines()
    assert any(line.startswith("step charged: served") for line in lines), lines
    assert kernel.value("used") == 3
    # nor is what the inner step's engine reads (`HOME`, the working folder) the outer's
    kernel.ok("%%step pure\n" + inner)
    kernel.wait_for_writes()
    engine = "__import__('resumable_cells').ipython.magics.current_engine()"
    params = f"[e.params for e in map({engine}.store.get_entry, {engine}.store.history('pure'))]"
    assert [set(p) & {"environ", "cwd"} for p in kernel.value(params)] == [set()]


def test_a_step_that_changes_a_module_attribute_sets_it_again_on_a_hit(kernel, tmp_path):
    write(tmp_path / "settings.py", "THRESHOLD = 0.5\n")
    kernel.ok("import settings")
    cell = "%%step tune\nsettings.THRESHOLD = settings.THRESHOLD + 0.4\nx = 1"
    assert "ran" in status(kernel.ok(cell))
    assert kernel.value("settings.THRESHOLD") == 0.9
    restart(kernel, "import settings")
    assert "served" in status(kernel.ok(cell))  # the module as it was before the live run
    assert kernel.value("settings.THRESHOLD") == 0.9
    # In the same kernel the attribute it read is now 0.9: another key, so it runs.
    assert "ran" in status(kernel.ok(cell))
    assert round(kernel.value("settings.THRESHOLD"), 6) == 1.3


def test_a_step_that_changes_an_attribute_of_an_installed_module_is_not_cached(kernel):
    kernel.ok("import json")
    kernel.ok("json.FLAG = 1")  # an attribute of a module the notebook does not own
    cell = "%%step tune\njson.FLAG = json.FLAG + 1\nx = 1"
    r = kernel.ok(cell)
    assert "not cached" in r.stderr and "json.FLAG" in r.stderr and "--effect" in r.stderr
    assert "ran" in status(kernel.ok(cell))


def test_an_installed_module_attribute_written_by_name_is_a_change_too(kernel):
    # each was served, and a later cell then found no such attribute after a restart
    kernel.ok("import json\njson.OLD = 0")
    for form, attr in [
        ("setattr(json, 'SET', 1)", "SET"),
        ("delattr(json, 'OLD')", "OLD"),
        ("json.__dict__['ITEM'] = 1", "ITEM"),
        ("vars(json)['VARS'] = 1", "VARS"),
    ]:
        r = kernel.ok(f"%%step tune\n{form}\nx = 1")
        assert f"not cached: it changed the module attribute json.{attr}" in r.stderr, form


def test_an_installed_module_attribute_holding_a_library_object_is_told_by_identity(kernel):
    # `sys.excepthook` holds IPython's hook (whose walk reaches the whole shell and
    # fails), `sys.stdout` the kernel's stream: the step that replaces one says so, and
    # one that puts it back is cached in this kernel.
    r = kernel.ok("%%step hook\nimport sys\ndef hook(*args):\n    pass\nsys.excepthook = hook")
    assert "not cached: it changed the module attribute sys.excepthook" in r.stderr, r.stderr
    cell = (
        "%%step quiet\nimport io, sys\nbuf, old = io.StringIO(), sys.stdout\n"
        "sys.stdout = buf\nprint('hidden')\nsys.stdout = old\ndel old\ntext = buf.getvalue()"
    )
    r = kernel.ok(cell)
    assert "not cached" not in r.stderr and "hidden" not in r.stdout, r.stderr
    assert served(kernel.ok(cell))
    assert kernel.value("text") == "hidden\n"


@pytest.mark.parametrize(
    ("setup", "body", "named"),
    [
        ("import mimetypes", "mimetypes.types_map['.rcz'] = 'x/rc'", "mimetypes.types_map"),
        (
            "",
            "import mimetypes\nmimetypes.types_map.setdefault('.rcd', 'x')\n"
            "del mimetypes.types_map['.rcd']",
            "mimetypes.types_map",
        ),
        ("", "from mimetypes import types_map\ntypes_map['.rcz'] = 'x/rc'", "types_map"),
        ("", "from mimetypes import *\ntypes_map['.rcs'] = 'x/rc'", "types_map"),
        ("", "import string\nstring.Template.rc_flag = 1", "string.Template.rc_flag"),
        ("", "from string import Template\nTemplate.rc_other = 1", "Template.rc_other"),
    ],
    ids=[
        "item-of-module-attribute",
        "deleted-item",
        "item-of-imported-object",
        "item-of-star-imported-object",
        "attribute-of-a-library-class",
        "attribute-of-an-imported-class",
    ],
)
def test_a_step_that_changes_an_installed_module_s_object_in_place_is_not_cached(
    kernel, setup, body, named
):
    # A hit binds the names and sets the process state again: the library's object
    # would keep the state it has in the serving kernel, not the one the live run left.
    if setup:
        kernel.ok(setup)
    cell = f"%%step table\n{body}\nx = 1"
    r = kernel.ok(cell)
    assert "not cached" in r.stderr and named in r.stderr and "--effect" in r.stderr
    assert "ran" in status(kernel.ok(cell))


def test_reading_an_installed_module_s_object_or_changing_a_notebook_value_stays_cached(kernel):
    kernel.ok("import mimetypes\ntable = {}")
    cells = [
        "%%step reads\nkind = mimetypes.types_map['.txt']",
        "%%step own\ntable['.rcz'] = kind",
    ]
    for cell in cells:
        assert "ran" in status(kernel.ok(cell))
    restart(kernel, "import mimetypes\ntable = {}")
    for cell in cells:
        assert served(kernel.ok(cell))
    assert kernel.value("table") == {".rcz": "text/plain"}


def test_a_function_a_library_made_is_read_with_the_context_it_closes_over(kernel):
    # mpmath's `sqrt` is a closure over its context `mp`: the precision set in a plain
    # cell is an input of the step that calls it (and digesting it stays cheap: the
    # names of `from mpmath import *` each walked the whole context, 24 s)
    names = "%%step names\nfrom mpmath import *"
    root = "%%step root\nr = str(sqrt(2))"
    assert "ran" in status(kernel.ok(names))
    assert "ran" in status(kernel.ok(root))
    restart(kernel)
    assert served(kernel.ok(names))
    assert served(kernel.ok(root)) and kernel.value("r") == "1.4142135623731"
    kernel.ok("mp.dps = 30")
    line = status(kernel.ok(root))
    assert "ran" in line and "input sqrt changed" in line
    assert kernel.value("r") == "1.41421356237309504880168872421"
    kernel.ok("mp.dps = 15")
    assert served(kernel.ok(root)) and kernel.value("r") == "1.4142135623731"


LAMBDIFY = "from sympy import symbols, sin, cos, lambdify\nx = symbols('x')\n"


@pytest.mark.parametrize(
    "made",
    [
        "lambdify(x, {e}(x))",  # sympy's: every one is `_lambdifygenerated`, module None
        "(lambda ns: exec('def f(v):\\n    return {e}(v)', ns) or ns['f'])({{'{e}': {e}}})",
    ],
    ids=["lambdify", "exec"],
)
def test_a_function_made_from_generated_source_is_read_by_its_code(kernel, made):
    # Its name is the same whatever source it was made from: by name alone, the step
    # below was served sin(1.0) after `f` became cos.
    step = "%%step use\ny = float(f(1.0))"
    kernel.ok(LAMBDIFY + "f = " + made.format(e="sin"))
    assert "ran" in status(kernel.ok(step))
    kernel.ok("f = " + made.format(e="cos"))
    line = status(kernel.ok(step))
    assert "ran" in line and "input f changed" in line, line
    assert kernel.value("y") == pytest.approx(0.5403023058681398)
    restart(kernel, LAMBDIFY + "f = " + made.format(e="sin"))
    assert served(kernel.ok(step)) and kernel.value("y") == pytest.approx(0.8414709848078965)
    # and a step binding one keeps it (its code stored with it)
    binds = "%%step binds\ng = " + made.format(e="cos") + "\nz = float(g(2.0))"
    assert "ran" in status(kernel.ok(binds))
    restart(kernel, LAMBDIFY)
    assert served(kernel.ok(binds)) and kernel.value("(float(g(0.0)), z)") == (
        1.0,
        pytest.approx(-0.4161468365471424),
    )


# -- globals of the functions a step reaches -------------------------------------------
HELPER = "log = []\ndef record(x):\n    log.append(x)\n    return len(log)"


def test_a_helper_mutating_a_global_list_leaves_it_as_live_after_a_hit(kernel):
    cells = ["%%step first\na = record('a')", "%%step second\nb = record('b')"]
    kernel.ok(HELPER)
    for c in cells:
        kernel.ok(c)
    live = kernel.value("(log, a, b)")
    assert live == (["a", "b"], 1, 2)
    restart(kernel, HELPER)
    assert all(served(kernel.ok(c)) for c in cells)
    assert kernel.value("(log, a, b)") == live
    assert kernel.value("record('c')") == 3  # the helper appends to the restored list


def test_a_global_a_helper_reads_is_an_input_named_in_the_miss(kernel):
    helper = "def scaled(x):\n    return x * factor"
    cell = "%%step use\ny = scaled(2)"
    kernel.ok("factor = 3\n" + helper)
    kernel.ok(cell)
    restart(kernel, "factor = 3\n" + helper)
    assert served(kernel.ok(cell))
    restart(kernel, "factor = 4\n" + helper)
    line = status(kernel.ok(cell))
    assert "ran" in line and "input factor changed" in line
    assert kernel.value("y") == 8


def test_a_global_rebound_by_a_helper_is_restored_by_a_hit(kernel):
    helper = "count = 0\ndef bump():\n    global count\n    count += 1"
    cell = "%%step bumped\nbump()\nbump()"
    kernel.ok(helper)
    kernel.ok(cell)
    restart(kernel, helper)
    assert served(kernel.ok(cell)) and kernel.value("count") == 2


def test_a_cached_notebook_function_is_hashed_by_the_code_it_wraps(kernel):
    helper = "import functools\n@functools.lru_cache\ndef f(x):\n    return x * {m} + offset"
    cell = "%%step use\ny = f(3)"
    kernel.ok("offset = 0\n" + helper.format(m=2))
    kernel.ok(cell)
    restart(kernel, "offset = 0\n" + helper.format(m=2))
    assert served(kernel.ok(cell))
    restart(kernel, "offset = 0\n" + helper.format(m=7))
    assert "ran" in status(kernel.ok(cell)) and kernel.value("y") == 21
    restart(kernel, "offset = 1\n" + helper.format(m=7))
    assert "input offset changed" in status(kernel.ok(cell)) and kernel.value("y") == 22


# -- dynamic reads ---------------------------------------------------------------------
def test_globals_with_a_literal_name_reads_that_name(kernel):
    cell = "%%step dyn\nv = globals()['cfg']['a'] + eval('offset')"
    kernel.ok("cfg = {'a': 1}\noffset = 10")
    kernel.ok(cell)
    restart(kernel, "cfg = {'a': 1}\noffset = 10")
    assert served(kernel.ok(cell)) and kernel.value("v") == 11
    restart(kernel, "cfg = {'a': 2}\noffset = 10")
    line = status(kernel.ok(cell))
    assert "ran" in line and "input cfg changed" in line
    assert kernel.value("v") == 12
    restart(kernel, "cfg = {'a': 2}\noffset = 20")
    assert "input offset changed" in status(kernel.ok(cell))


@pytest.mark.parametrize(
    "body",
    [
        "name = 'cfg'\nv = globals()[name]",
        "v = vars().get(key)",
        "def pick(n):\n    return globals()[n]\nv = pick(key)",
        # the notebook's module whole, and the magics that list the namespace: a step
        # listing the names was served the list from before a name was added
        "import __main__\nv = vars(__main__)[key]",
        "import sys\nv = sys.modules['__main__'].__dict__[key]",
        "names = %who_ls\nv = cfg if key in names else None",
    ],
)
def test_a_dynamic_read_runs_uncached_and_says_so(kernel, body):
    kernel.ok("cfg = {'a': 1}\nkey = 'cfg'")
    r = kernel.ok("%%step dyn\n" + body)
    assert "not cached" in r.stderr and "reads the namespace dynamically" in r.stderr
    assert "--effect" in r.stderr
    assert kernel.value("v") == {"a": 1}
    assert "ran" in status(kernel.ok("%%step dyn\n" + body))


def test_a_read_through_eval_of_a_string_built_at_run_time_is_traced(kernel):
    # Not knowable before it runs, but seen while it runs: the entry keeps what it read.
    body = "src = key\nv = eval(src)"
    kernel.ok("cfg = {'a': 1}\nkey = 'cfg'")
    r = kernel.ok("%%step dyn\n" + body)
    assert "not cached" not in r.stderr and kernel.value("v") == {"a": 1}
    assert served(kernel.ok("%%step dyn\n" + body))
    kernel.ok("cfg = {'a': 2}")
    line = status(kernel.ok("%%step dyn\n" + body))
    assert "ran" in line and "input cfg (read through eval or exec) changed" in line
    assert kernel.value("v") == {"a": 2}


@pytest.mark.parametrize(
    "source",
    ["''.join(['f', 'i + 1'])", "''.join(['\\ufb01', ' + 1'])"],
    ids=["ascii", "a ligature Python reads as fi"],
)
def test_a_name_read_through_eval_is_traced_however_its_string_spells_it(kernel, source):
    """Strings compiled during a step are parsed only when one of their words is a name
    the notebook holds: as Python reads identifiers (NFKC), so `\ufb01` is `fi`."""
    body = f"import collections\nPoint = collections.namedtuple('Point', 'a b')\nv = eval({source})"
    kernel.ok("fi = 1")
    kernel.ok("%%step traced\n" + body)
    assert served(kernel.ok("%%step traced\n" + body))
    kernel.ok("fi = 2")
    line = status(kernel.ok("%%step traced\n" + body))
    assert "ran" in line and "input fi (read through eval or exec) changed" in line, line


def test_a_helper_that_reads_the_namespace_dynamically_is_named(kernel):
    kernel.ok("cfg = 1\ndef pick(n):\n    return globals()[n]")
    r = kernel.ok("%%step dyn\nv = pick('cfg')")
    assert "not cached" in r.stderr and "pick" in r.stderr and "globals()" in r.stderr


def test_a_class_made_at_run_time_is_read_by_what_it_is(kernel):
    # sympy's undefined functions are classes named `f` whatever their assumptions
    setup = "from sympy import Function, Symbol\nx = Symbol('x')\n"
    step = "%%step use\nreal = f(x).is_real"
    kernel.ok(setup + "f = Function('f')")
    assert "ran" in status(kernel.ok(step)) and kernel.value("real") is None
    kernel.ok("f = Function('f', real=True)")
    line = status(kernel.ok(step))
    assert "ran" in line and "input f changed" in line, line
    assert kernel.value("real") is True
    restart(kernel, setup + "f = Function('f')")
    assert served(kernel.ok(step)) and kernel.value("real") is None


def test_a_ufunc_made_at_run_time_runs_the_step_uncached_and_says_why(kernel):
    kernel.ok("import numpy as np\nf = np.frompyfunc(lambda v: v + 1, 1, 1)")
    step = "%%step use\ny = int(f(1))"
    r = kernel.ok(step)
    assert "not cached" in r.stderr and "f" in r.stderr and "no module holds it" in r.stderr
    kernel.ok("f = np.frompyfunc(lambda v: v + 2, 1, 1)")
    assert "ran" in status(kernel.ok(step)) and kernel.value("y") == 3


# -- library settings ------------------------------------------------------------------
@pytest.mark.parametrize(
    "setup, cell, change, before, after",
    [
        (
            "from sklearn.preprocessing import StandardScaler\nimport numpy as np\n"
            "X = np.arange(6.).reshape(3, 2)",
            "kind = type(StandardScaler().fit_transform(X)).__name__",
            "import sklearn; sklearn.set_config(transform_output='pandas')",
            "ndarray",
            "DataFrame",
        ),
        (
            "from decimal import Decimal",
            "kind = str(Decimal(1) / Decimal(3))",
            "import decimal; decimal.getcontext().prec = 5",
            "0.3333333333333333333333333333",
            "0.33333",
        ),
        (
            "import numpy as np\nbig = np.array([1e308])",
            "try:\n    kind = str(big * 10)\nexcept FloatingPointError:\n    kind = 'raised'",
            "np.seterr(over='raise')",
            "[inf]",
            "raised",
        ),
        (
            "import pandas as pd, warnings\nwarnings.simplefilter('ignore')",
            "kind = str(pd.DataFrame({'a': ['x']})['a'].dtype)",
            "pd.set_option('future.infer_string', False)",
            "str",
            "object",
        ),
        (
            "import xarray as xr\na = xr.DataArray([1.0, 2.0], attrs={'units': 'm'})",
            "kind = str(sorted((a * 2).attrs))",
            "xr.set_options(keep_attrs=False)",
            "['units']",
            "[]",
        ),
    ],
    ids=["sklearn", "decimal", "numpy", "pandas", "xarray"],
)
def test_a_library_s_settings_set_in_a_plain_cell_are_inputs(
    kernel, setup, cell, change, before, after
):
    # served under the old settings, the step gave the old kind of value, silently
    kernel.ok(setup)
    step = f"%%step configured\n{cell}"
    kernel.ok(step)
    assert served(kernel.ok(step)) and kernel.value("kind") == before
    kernel.ok(change)
    line = status(kernel.ok(step))
    assert "ran" in line and "settings of " in line and "changed" in line, line
    assert kernel.value("kind") == after
    restart(kernel, setup, change)
    assert served(kernel.ok(step)) and kernel.value("kind") == after


@pytest.mark.parametrize(
    ("setup", "cell", "change"),
    [
        (
            "import pandas as pd\ndf = pd.DataFrame({'a': [1, 2]})",
            "total = int(df['a'].sum())",
            "pd.set_option('display.max_rows', 5)",
        ),
        (
            "import xarray as xr\na = xr.DataArray([1, 2])",
            "total = int(a.sum())",
            "xr.set_options(display_style='text')",
        ),
    ],
    ids=["pandas", "xarray"],
)
def test_a_display_option_does_not_run_a_step_that_shows_nothing(kernel, setup, cell, change):
    kernel.ok(setup)
    step = f"%%step total\n{cell}"
    kernel.ok(step)
    kernel.ok(change)
    assert served(kernel.ok(step)) and kernel.value("total") == 3


_GEO = (
    "    def __init__(self, obj):\n        self._obj = obj\n"
    "    def total(self):\n        return int(self._obj['a'].sum()) * {factor}"
)
_REGISTERED = {
    # `df.geo.total()` runs the notebook's class, which the step never names: redefined
    # in a plain cell, the old class's result was served
    "pandas accessor": (
        "import pandas as pd, warnings\nwarnings.simplefilter('ignore')\n"
        "@pd.api.extensions.register_dataframe_accessor('geo')\nclass Geo:\n" + _GEO,
        "df = pd.DataFrame({'a': [1, 2]})",
        "t = df.geo.total()",
        "pandas",
    ),
    # (xarray keeps the accessor an object was first given: the step makes its own)
    "xarray accessor": (
        "import xarray as xr\n@xr.register_dataset_accessor('geo')\nclass Geo:\n" + _GEO,
        "vals = [1, 2]",
        "t = xr.Dataset({'a': ('x', vals)}).geo.total()",
        "xarray",
    ),
    # `pd.DataFrame.total = total`, then `df.total()`: the step never names `total`
    "function set on a class": (
        "import pandas as pd\ndef total(self):\n    return int(self['a'].sum()) * {factor}\n"
        "pd.DataFrame.total = total",
        "df = pd.DataFrame({'a': [1, 2]})",
        "t = df.total()",
        "pandas",
    ),
}


@pytest.mark.parametrize("case", list(_REGISTERED))
def test_code_the_notebook_registered_with_a_library_is_an_input(kernel, case):
    define, data, body, library = _REGISTERED[case]
    kernel.ok(define.format(factor=1) + "\n" + data)
    step = f"%%step registered\n{body}"
    kernel.ok(step)
    assert served(kernel.ok(step)) and kernel.value("t") == 3
    kernel.ok(define.format(factor=10))
    line = status(kernel.ok(step))
    assert "ran" in line and f"settings of {library} changed" in line, line
    assert kernel.value("t") == 30
