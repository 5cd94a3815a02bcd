"""Process state is part of a step's result: what a pure step changes outside its
namespace (environment, working directory, sys.path, print options, random states,
matplotlib and pandas settings, warning filters, and what `register_state` adds) is
recorded in its entry and set again on a hit."""

from __future__ import annotations

import pytest
from replay import replay


@pytest.mark.parametrize(
    ("cells", "probe"),
    [
        (
            ["%%step flag\nimport os\nos.environ['RC_FLAG'] = 'on'"],
            "__import__('os').environ.get('RC_FLAG')",
        ),
        (
            [
                "import numpy as np",
                "%%step prec\nnp.set_printoptions(precision=2)\nv = np.array([1.23456])",
            ],
            "repr(v)",
        ),
        (
            ["import pandas as pd", "%%step rows\npd.set_option('display.max_rows', 7)"],
            "pd.get_option('display.max_rows')",
        ),
        (
            ["import numpy as np", "%%step seeded\nnp.random.seed(3)\nfirst = np.random.rand()"],
            "(first, np.random.rand())",
        ),
        (
            ["import random", "%%step seeded\nrandom.seed(5)\nfirst = random.random()"],
            "(first, random.random())",
        ),
        (
            ["import numpy as np", "%%step quiet\nold = np.seterr(all='ignore')"],
            "np.geterr()['divide']",
        ),
        (
            ["%%step filters\nimport warnings\nwarnings.simplefilter('error', UserWarning)"],
            "__import__('warnings').filters[0][:1]",
        ),
        (["%%step path\nimport sys\nsys.path.insert(0, 'src-extra')"], "__import__('sys').path[0]"),
        (
            ["%%step front\nimport sys\nsys.path[:0] = ['src-front']"],
            "__import__('sys').path[0]",
        ),
        (
            ["import os\nos.environ['RC_GONE'] = '1'", "%%step unset\ndel os.environ['RC_GONE']"],
            "'RC_GONE' in __import__('os').environ",
        ),
        (
            [
                "import sys\nsys.set_int_max_str_digits(5000)",
                "%%step nolimit\nimport sys\nsys.set_int_max_str_digits(0)",
            ],
            "__import__('sys').get_int_max_str_digits()",
        ),
        (
            [
                "import socket\nsocket.setdefaulttimeout(3.0)",
                "%%step untimed\nimport socket\nsocket.setdefaulttimeout(None)",
            ],
            "__import__('socket').getdefaulttimeout()",
        ),
        (
            [
                "import os\nos.makedirs('sub', exist_ok=True)",
                "%%step into\nimport os\nos.chdir('sub')",
            ],
            "__import__('os').path.basename(__import__('os').getcwd())",
        ),
        (
            [
                "%%step show\nfrom IPython.core.interactiveshell import InteractiveShell\n"
                "InteractiveShell.ast_node_interactivity = 'all'"
            ],
            "get_ipython().ast_node_interactivity",
        ),
    ],
    ids=[
        "environ",
        "printoptions",
        "pandas-option",
        "numpy-rng",
        "random-rng",
        "seterr",
        "filters",
        "sys.path",
        "sys.path-item",
        "environ-deleted-item",
        "int-max-str-digits-to-0",
        "socket-timeout-to-none",
        "cwd",
        "interactivity",
    ],
)
def test_process_state_a_step_changes_is_set_again_on_a_hit(kernel, cells, probe):
    live, again = replay(kernel, cells, probe)
    assert live == again


@pytest.mark.parametrize(
    ("cells", "probe"),
    [
        (
            [
                "%%step cfg\nimport sklearn\nsklearn.set_config(transform_output='pandas', display='text')"
            ],
            "[__import__('sklearn').get_config()[k] for k in ('transform_output', 'display')]",
        ),
        (
            ["%%step ctx\nfrom decimal import getcontext\ngetcontext().prec = 6"],
            "str(__import__('decimal').Decimal(1) / 7)",
        ),
        (
            ["%%step loc\nimport locale\nlocale.setlocale(locale.LC_NUMERIC, 'C.UTF-8')"],
            "__import__('locale').setlocale(__import__('locale').LC_NUMERIC)",
        ),
        (
            ["%%step quiet\nimport logging\nlogging.getLogger('rc.noisy').setLevel(logging.ERROR)"],
            "__import__('logging').getLogger('rc.noisy').level",
        ),
        (
            ["%%step digits\nimport sys\nsys.set_int_max_str_digits(100000)"],
            "__import__('sys').get_int_max_str_digits()",
        ),
        (
            ["%%step timeout\nimport socket\nsocket.setdefaulttimeout(3.0)"],
            "__import__('socket').getdefaulttimeout()",
        ),
        (
            ["%%step gc\nimport gc\ngc.set_threshold(5000, 20, 20)"],
            "__import__('gc').get_threshold()",
        ),
        (
            ["%%step errcall\nimport numpy as np\nold = np.seterrcall(print)"],
            "__import__('numpy').geterrcall()",
        ),
        (
            ["%%step scerr\nimport scipy.special as sc\nold = sc.seterr(all='raise')"],
            "__import__('scipy.special').special.geterr()['singular']",
        ),
        (
            [
                "%%step xr\nimport xarray as xr\nxr.set_options(display_style='text', display_width=60)"
            ],
            "[__import__('xarray').get_options()[k] for k in ('display_style', 'display_width')]",
        ),
        (
            [
                "%%step pio\nimport plotly.io as pio\npio.renderers.default = 'png'\n"
                "pio.templates.default = 'plotly_white'"
            ],
            "(__import__('plotly.io').io.renderers.default, __import__('plotly.io').io.templates.default)",
        ),
    ],
    ids=[
        "sklearn-config",
        "decimal-context",
        "locale",
        "logger-level",
        "int-max-str-digits",
        "socket-timeout",
        "gc-thresholds",
        "numpy-errcall",
        "scipy-special-errors",
        "xarray-options",
        "plotly-defaults",
    ],
)
def test_a_setting_changed_by_a_call_is_set_again_on_a_hit(kernel, cells, probe):
    # what a library's function sets (or, for plotly, an attribute a part records)
    default = kernel.ok(f"print(repr({probe}))").stdout
    live, again = replay(kernel, cells, probe)
    assert live != default  # the step did change it
    assert live == again


LOGS = (
    "%%step logs\nimport logging\n"
    "logging.basicConfig(level=logging.INFO, format='%(levelname)s|%(name)s|%(message)s')\n"
    "logging.getLogger('rc.quiet').setLevel(logging.ERROR)"
)
SAY = (
    "import logging\nlogging.info('shown')\nlogging.getLogger('rc.quiet').warning('hidden')\n"
    "logging.getLogger('rc.quiet').error('loud')"
)


def test_a_logging_configuration_is_set_again_on_a_hit(kernel):
    kernel.ok(LOGS)
    live = kernel.ok(SAY).stderr
    assert live == "INFO|root|shown\nERROR|rc.quiet|loud\n"
    kernel.restart()
    kernel.ok("%load_ext resumable_cells")
    assert "served from cache" in kernel.ok(LOGS).status_lines()[0]
    assert kernel.ok(SAY).stderr == live


def test_a_logging_handler_a_hit_cannot_build_is_not_cached(kernel):
    cell = (
        "%%step tofile\nimport logging\n"
        "logging.root.addHandler(logging.FileHandler('run.log', delay=True))"
    )
    r = kernel.ok(cell)
    assert "not cached: logging: the step changed it and the change cannot be recorded" in r.stderr
    assert "the root logger got a FileHandler the step made" in r.stderr
    assert "ran in" in kernel.ok(cell).status_lines()[0]


@pytest.mark.parametrize(
    ("step", "probe", "shown"),
    [
        (
            "plt.style.use('ggplot')",
            "(plt.rcParams['axes.facecolor'], plt.rcParams['axes.grid'])",
            "('#E5E5E5', True)",
        ),
        # An item assigned in an object the process state watches is set again, not
        # refused as a change to an installed module's object.
        ("plt.rcParams['lines.linewidth'] = 3.5", "plt.rcParams['lines.linewidth']", "3.5"),
    ],
    ids=["style", "item"],
)
def test_a_matplotlib_style_or_setting_is_set_again_on_a_hit(kernel, step, probe, shown):
    cells = [
        "import matplotlib\nmatplotlib.use('agg')\nimport matplotlib.pyplot as plt",
        f"%%step style\n{step}",
    ]
    live, again = replay(kernel, cells, probe)
    assert live == again == shown + "\n"


REGISTER = (
    "import sys, types\nimport resumable_cells\n"
    "mod = sys.modules.setdefault('rcstate', types.ModuleType('rcstate'))\nmod.value = 0\n"
    "mod.set_value = lambda v: setattr(mod, 'value', v)\n"
    "resumable_cells.register_state('rcstate', lambda: mod.value, lambda v: setattr(mod, 'value', v))"
)


def test_registered_state_is_recorded_and_set_again(kernel):
    cells = [REGISTER, "%%step setit\nimport rcstate\nrcstate.set_value(5)"]
    live, again = replay(kernel, cells, "mod.value")
    assert live == again == "5\n"


NOISY = (
    "import sys, types\nimport resumable_cells\n"
    "mod = sys.modules.setdefault('rcnoisy', types.ModuleType('rcnoisy'))\nmod.value = 0\n"
    "def put(v):\n    print('setter ran')\n    mod.value = v\n"
    "mod.set_value = lambda v: setattr(mod, 'value', v)\n"
    "resumable_cells.register_state('rcnoisy', lambda: mod.value, put)"
)


def test_setting_the_state_again_shows_only_what_the_live_run_showed(kernel):
    # A setter that writes (a library's warning as an option is set) writes on a hit
    # only: what shows is the replay of the live run's output.
    kernel.ok(NOISY)
    cell = "%%step setit\nimport rcnoisy\nrcnoisy.set_value(6)\nprint('from the step')"
    live = kernel.ok(cell)
    assert live.stdout == "from the step\n"
    kernel.ok("mod.value = 0")
    served = kernel.ok(cell)
    assert "served from cache" in served.status_lines()[0]
    assert served.stdout == live.stdout
    assert kernel.value("mod.value") == 6  # set again, by the setter


def test_a_change_that_cannot_be_recorded_is_not_cached(kernel):
    kernel.ok(REGISTER)
    cell = "%%step lock\nimport threading, rcstate\nrcstate.set_value(threading.Lock())"
    r = kernel.ok(cell)
    assert "not cached: rcstate: the step changed it and the change cannot be recorded" in r.stderr
    assert "mark the step `--effect`" in r.stderr
    assert "ran in" in kernel.ok(cell).status_lines()[0]


def test_a_step_that_changes_no_process_state_stores_none(kernel):
    kernel.ok("import numpy as np, pandas as pd")
    kernel.ok("%%step plain\nx = int(np.arange(3).sum())")
    engine = "__import__('resumable_cells').ipython.magics.current_engine()"
    assert kernel.value(f"[e.state for _, e in {engine}.store.entries()]") == [None]


def test_magics_that_configure_the_kernel_are_called_again(kernel):
    cells = [
        "%%step setup\n%matplotlib inline\nimport matplotlib.pyplot as plt\n"
        "plt.style.use('seaborn-v0_8-white')\n%config InlineBackend.figure_format = 'svg'\n"
        "%xmode Minimal\n%precision 2"
    ]
    ip = "get_ipython()"
    probe = (
        f"(plt.rcParams['axes.facecolor'], {ip}.config.InlineBackend.figure_format, "
        f"{ip}.InteractiveTB.mode, {ip}.display_formatter.formatters['text/plain'].float_precision)"
    )
    live, again = replay(kernel, cells, probe)
    assert live == again == "('white', 'svg', 'Minimal', '2')\n"


def test_a_step_binding_the_shell_or_its_methods_binds_ipythons_own(kernel):
    # Recording the magics a step calls leaves the shell's methods alone: a step that
    # binds `run_line_magic` binds IPython's method, which a new kernel's shell stands
    # for, and a magic called through it, its `$var` as written, is called again.
    cells = [
        "digits = 3",
        "%%step shell\nip = get_ipython()\nrun = ip.run_line_magic\nrun('precision', '$digits')",
    ]
    # IPython's own `open` and `exit`, bound or held as a default, are the kernel's too.
    cells.append("%%step own\nopener = open\nbye = exit\ndef load(p, _open=open):\n    return p")
    probe = (
        "(ip is get_ipython(), run.__self__ is ip, run.__func__ is type(ip).run_line_magic, "
        "ip.display_formatter.formatters['text/plain'].float_precision, "
        "opener is open, bye is exit, load.__defaults__[0] is open)"
    )
    live, again = replay(kernel, cells, probe)
    assert live == again == "(True, True, True, '3', True, True, True)\n"
    kernel.ok("digits = 5")  # (the magic's line is read as it was written: `$digits`)
    kernel.ok(
        "%%step shell\nip = get_ipython()\nrun = ip.run_line_magic\nrun('precision', '$digits')"
    )
    assert kernel.value("ip.display_formatter.formatters['text/plain'].float_precision") == "5"


LIBRARY = (
    "with open('rc_lib.py', 'w') as f:\n"
    "    f.write('import logging\\nclass Own(logging.Handler):\\n    seen = []\\n"
    "    def emit(self, record):\\n        Own.seen.append(record.getMessage())\\n"
    'log = logging.getLogger("rc_lib")\\nlog.addHandler(Own())\\n\')'
)


def test_a_handler_a_library_adds_to_its_own_logger_is_left_to_its_import(kernel):
    # made as the module is imported, on a logger it creates: its import on a hit makes it
    kernel.ok(LIBRARY)
    step = "%%step lib\nimport rc_lib"
    assert "ran in" in kernel.ok(step).status_lines()[0]
    kernel.restart()
    kernel.ok("%load_ext resumable_cells")
    assert "served from cache" in kernel.ok(step).status_lines()[0]
    kernel.ok("rc_lib.log.warning('kept')")
    assert kernel.value("rc_lib.Own.seen") == ["kept"]


def test_a_notebook_handler_on_a_new_logger_is_not_cached(kernel):
    cell = (
        "%%step mine\nimport logging\nclass Keep(logging.Handler):\n"
        "    def emit(self, record):\n        pass\n"
        "logging.getLogger('rc.mine').addHandler(Keep())"
    )
    r = kernel.ok(cell)
    assert "logger 'rc.mine' got a Keep the step made, which a hit cannot build again" in r.stderr
    assert "ran in" in kernel.ok(cell).status_lines()[0]


COUNTING = (
    "import resumable_cells\nreads, level = [], [0]\n"
    "resumable_cells.register_state('rccount', lambda: (reads.append(1), level[0])[1], "
    "lambda v: level.__setitem__(0, v))"
)
ENGINE = "__import__('resumable_cells').ipython.magics.current_engine()"


@pytest.mark.parametrize("between", [[], ["pass"]], ids=["next", "a-cell-between"])
def test_a_step_right_after_a_live_step_starts_from_the_state_it_read(kernel, between):
    # The step before read the whole state at its end; nothing ran since: not read again.
    kernel.ok(COUNTING)
    kernel.ok("%%step first\nw = 0")  # (the engine starts, and sees the cells, from here)
    kernel.ok("reads.clear()")
    for cell in ["%%step a --force\nx = 1", *between, "%%step b --force\ny = 2"]:
        kernel.ok(cell)
    # a: before and after; b: after only, or before and after when a cell came between
    assert kernel.value("len(reads)") == (3 if not between else 4)


def test_state_a_cell_between_two_steps_changed_is_not_the_second_steps(kernel):
    kernel.ok(COUNTING)
    kernel.ok("%%step first\nw = 0")
    kernel.ok("%%step a --force\nx = 1")
    kernel.ok("level[0] = 5")
    kernel.ok("%%step b --force\ny = 2")
    states = kernel.value(f"sorted([e.step, e.state is None] for _, e in {ENGINE}.store.entries())")
    assert states == [["a", True], ["b", True], ["first", True]]


# -- the settings outputs were shown with -------------------------------------------------
SHOWN = [
    "%matplotlib inline\nimport numpy as np, pandas as pd, xarray as xr\n"
    "import matplotlib.pyplot as plt"
]


@pytest.mark.parametrize(
    ("step", "change", "what", "probe"),
    [
        (
            "a = np.array([1 / 3])\nprint(a)",
            "np.set_printoptions(precision=6)",
            "numpy's print options",
            "0.333333",
        ),
        (
            "df = pd.DataFrame({'x': [1 / 3]})\ndf",
            "pd.set_option('display.precision', 2)",
            "pandas' display options",
            "0  0.33",
        ),
        (
            "fig, ax = plt.subplots()\nax.plot([1, 2]);",  # drawn by the inline backend
            "plt.rcParams['lines.linewidth'] = 9",
            "matplotlib's rcParams",
            None,
        ),
        ("x = 1 / 3\nx", "%precision 2", "IPython's plain-text display", "0.33"),
        (
            "da = xr.DataArray([1, 2], name='v')\nda",
            "xr.set_options(display_style='text', display_width=40)",
            "xarray's display options",
            None,
        ),
    ],
    ids=["numpy", "pandas", "figure", "precision", "xarray"],
)
def test_a_hit_whose_outputs_were_shown_with_other_settings_runs_again(
    kernel, step, change, what, probe
):
    # A plain cell changed how values print since the step showed its outputs: a hit
    # would replay the old text (or figure); the step runs and shows it as a plain
    # cell would, then is served again while the settings stay.
    from steps import served, status

    kernel.ok(SHOWN[0])
    kernel.ok(f"%%step shown\n{step}")
    assert served(kernel.ok(f"%%step shown\n{step}"))
    kernel.ok(change)
    again = kernel.ok(f"%%step shown\n{step}")
    line = status(again)
    assert "ran" in line and what in line and "changed since it ran" in line, line
    if probe is not None:
        assert probe in again.stdout + str(again.result()), again.outputs
    assert served(kernel.ok(f"%%step shown\n{step}"))


@pytest.mark.parametrize(
    ("setting", "what"),
    [
        ("pd.options.display.float_format = '{:.%df}'.format", "pandas' display options"),
        (
            "np.set_printoptions(formatter={'float': lambda v: f'{v:.%df}'})",
            "numpy's print options",
        ),
    ],
    ids=["bound method", "lambda"],
)
def test_a_formatter_setting_is_told_by_what_it_does(kernel, setting, what):
    # Two formatters of one name (`str.format`, `<lambda>`) print otherwise: the second
    # runs the step; the same formatter made again in a new kernel serves it.
    from steps import restart, served, status

    cells = ["import numpy as np, pandas as pd\ndf = pd.DataFrame({'x': [1 / 3]})"]
    step = "%%step shown\nprint(df.to_string(), np.array([1 / 3]))"
    kernel.ok(cells[0])
    kernel.ok(setting % 2)
    kernel.ok(step)
    kernel.ok(setting % 4)
    again = kernel.ok(step)
    assert what in status(again) and "0.3333" in again.stdout, again.outputs
    restart(kernel, cells[0], setting % 4)
    assert served(kernel.ok(step))


MONEY = (
    "class Money:\n    def __init__(self, v):\n        self.v = v\n"
    "plain = get_ipython().display_formatter.formatters['text/plain']\n"
    "plain.for_type(Money, lambda o, p, cycle: p.text(f'{SIGN}{o.v:.2f}'))"
)


def test_a_hit_whose_result_a_printer_of_the_notebooks_drew_otherwise_runs_again(kernel):
    # The notebook's own printer for its class, made again with other code: the result
    # is drawn by the new one; made again alike in a new kernel, the step is served.
    from steps import restart, served, status

    step = "%%step m\nprice = Money(3)\nprice"
    kernel.ok(MONEY.replace("{SIGN}", "$"))
    assert kernel.ok(step).result() == "$3.00"
    assert served(kernel.ok(step))
    kernel.ok(MONEY.replace("{SIGN}", "EUR "))
    again = kernel.ok(step)
    assert "the notebook's display printers changed" in status(again)
    assert again.result() == "EUR 3.00"
    restart(kernel, MONEY.replace("{SIGN}", "EUR "))
    hit = kernel.ok(step)
    assert served(hit) and hit.result() == "EUR 3.00"


def test_a_hit_whose_figure_was_drawn_in_other_formats_runs_again(kernel):
    # `%config InlineBackend.figure_formats` in the first cell, then Run All: the
    # figures come as the live run draws them now (the step drew the kernel's first
    # figure, which set the backend up: its formats are those it was set up with).
    from steps import served, status

    step = "%%step drawn\nimport matplotlib.pyplot as plt\nplt.plot([1, 2]);"
    kernel.ok("%matplotlib inline")
    kernel.ok(step)
    assert served(kernel.ok(step))
    kernel.ok("%config InlineBackend.figure_formats = ['svg']")
    again = kernel.ok(step)
    assert "the inline backend's figure formats changed" in status(again)
    kinds = {k for o in again.outputs for k in (o.get("data") or {})}
    assert "image/svg+xml" in kinds and "image/png" not in kinds, kinds
    assert served(kernel.ok(step))


def test_a_hit_whose_sympy_output_was_printed_otherwise_runs_again(kernel):
    from steps import served, status

    kernel.ok("import sympy as sp\nsp.init_printing(use_latex=False)\nx = sp.Symbol('x')")
    step = "%%step expr\ne = x**2 / 3\ne"
    assert "──" in str(kernel.ok(step).result())  # drawn in unicode
    assert served(kernel.ok(step))
    kernel.ok("sp.init_printing(use_unicode=False, use_latex=False, pretty_print=False)")
    again = kernel.ok(step)
    assert "sympy's printing" in status(again)
    assert again.result() == "x**2/3"
    assert served(kernel.ok(step))


READ = [
    *SHOWN,
    "a = np.array([1 / 3])\ndf = pd.DataFrame({'x': [1 / 3]})\nplt.rcParams['figure.figsize'] = (4, 3)",
]


@pytest.mark.parametrize(
    ("step", "change", "what", "probe", "expected"),
    [
        (
            "text = str(a)",
            "np.set_printoptions(precision=2)",
            "numpy's print options",
            "text",
            "[0.33]",
        ),
        (
            "text = df.to_string()",
            "pd.set_option('display.precision', 2)",
            "pandas' display options",
            "text.split()[-1]",
            "0.33",
        ),
        (  # a figure kept and not shown: the inline backend draws nothing
            "fig = plt.figure()\nsize = [float(x) for x in fig.get_size_inches()]\nplt.close(fig)",
            "plt.rcParams['figure.figsize'] = (3, 2)",
            "matplotlib's rcParams",
            "size",
            [3.0, 2.0],
        ),
    ],
    ids=["numpy", "pandas", "figure"],
)
def test_a_hit_whose_values_were_made_with_other_settings_runs_again(
    kernel, step, change, what, probe, expected
):
    # The step shows nothing, but the value it binds was made with the settings: a hit
    # would bind the old text (or figure); the step runs and binds what a plain cell
    # would, then is served again while the settings stay.
    from steps import served, status

    for cell in READ:
        kernel.ok(cell)
    kernel.ok(f"%%step made\n{step}")
    assert served(kernel.ok(f"%%step made\n{step}"))
    kernel.ok(change)
    line = status(kernel.ok(f"%%step made\n{step}"))
    assert "ran" in line and f"{what} changed" in line, line
    assert kernel.value(probe) == expected
    assert served(kernel.ok(f"%%step made\n{step}"))


@pytest.mark.parametrize(
    ("step", "change"),
    [
        ("total = float(a.sum() + df['x'].sum())", "np.set_printoptions(precision=2)"),
        ("total = float(a.sum() + df['x'].sum())", "pd.set_option('display.precision', 2)"),
        ("total = float(a.sum() + df['x'].sum())", "plt.rcParams['lines.linewidth'] = 9"),
        # resampling by dates reads two display options (how to parse a date), only those
        (
            "days = pd.Series(range(4), index=pd.date_range('2020-01-01', periods=4))\n"
            "sums = days.resample('2D').sum().tolist()",
            "pd.set_option('display.max_rows', 7)",
        ),
    ],
    ids=["numpy", "pandas", "matplotlib", "dates"],
)
def test_a_step_whose_values_do_not_carry_the_settings_is_served_after_they_change(
    kernel, step, change
):
    from steps import served

    for cell in READ:
        kernel.ok(cell)
    kernel.ok(f"%%step made\n{step}")
    kernel.ok(change)
    reply = kernel.ok(f"%%step made\n{step}")
    assert served(reply), reply.status_lines()


def test_watching_the_settings_a_step_reads_leaves_the_libraries_as_they_were(kernel):
    # While the body runs, noting stand-ins take the settings' places: after it, each
    # library holds its own again, with what the step set in them.
    for cell in READ:
        kernel.ok(cell)
    kernel.ok(
        "%%step sets\ntext = str(a) + df.to_string()\nplt.figure()\nplt.close()\n"
        "pd.set_option('display.precision', 3)\nnp.set_printoptions(precision=4)"
    )
    held = (
        "(type(pd._config.config._global_config['display']).__name__,"
        " type(sys.modules['numpy._core.printoptions'].format_options.get()).__name__,"
        " plt.matplotlib.RcParams.__getitem__.__qualname__,"
        " pd.get_option('display.precision'), np.get_printoptions()['precision'])"
    )
    kernel.ok("import sys")
    assert kernel.value(held) == ("dict", "dict", "RcParams.__getitem__", 3, 4)


# -- the warnings a step showed, and the filters in effect at a hit ------------------------
WARNS = [
    "%%step w\nimport warnings\nwarnings.warn('careful')\nx = 1",
    # a library's warning, from its C code
    "%%step w\nimport numpy as np\nratio = float(np.float64(1.0) / np.float64(0.0))",
]


@pytest.mark.parametrize("step", WARNS, ids=["python", "numpy"])
def test_a_hit_replays_a_warning_as_the_filters_in_effect_would_show_it(kernel, step):
    # Silenced since (the notebook's first cell, then Run All): not replayed; the
    # filters back as they were: replayed; made an error: the step runs and raises, as a
    # plain cell does.
    from steps import served

    live = kernel.ok(step)
    assert "Warning" in live.stderr, live.outputs
    kernel.ok("import warnings\nwarnings.filterwarnings('ignore', message='careful|divide')")
    quiet = kernel.ok(step)
    assert served(quiet) and "Warning" not in quiet.stderr, quiet.outputs
    kernel.ok("warnings.resetwarnings()")
    again = kernel.ok(step)
    assert served(again) and "Warning" in again.stderr, again.outputs
    kernel.ok("warnings.simplefilter('error')")
    failed = kernel.run(step)
    assert failed.status == "error" and failed.error["ename"].endswith("Warning"), failed.error
    kernel.ok("warnings.resetwarnings()")
    assert served(kernel.ok(step))


def test_a_warning_the_steps_own_filter_shows_is_replayed_whatever_the_notebook_set(kernel):
    # Its own `always` decides, in a live run as in the first: the notebook's `ignore`
    # does not hide it.
    from steps import served

    step = (
        "%%step w\nimport warnings\nwith warnings.catch_warnings():\n"
        "    warnings.simplefilter('always')\n    warnings.warn('careful')"
    )
    assert "careful" in kernel.ok(step).stderr
    kernel.ok("import warnings\nwarnings.simplefilter('ignore')")
    hit = kernel.ok(step)
    assert served(hit) and "careful" in hit.stderr, hit.outputs


def test_a_warning_shown_before_the_step_silenced_warnings_is_replayed_after_a_restart(
    kernel,
):
    # The hit sets the step's filter again only after replaying: its warning shows, as
    # in a live run in a new kernel; in the same kernel its filter, set by the live run,
    # silences it, as it would a live run again.
    from steps import restart, served

    step = "%%step w\nimport warnings\nwarnings.warn('careful')\nwarnings.simplefilter('ignore')"
    assert "careful" in kernel.ok(step).stderr
    same = kernel.ok(step)
    assert served(same) and "careful" not in same.stderr, same.outputs
    restart(kernel)
    hit = kernel.ok(step)
    assert served(hit) and "careful" in hit.stderr, hit.outputs
    assert kernel.value("warnings.filters[0][0]") == "ignore"


def test_settings_a_step_set_before_another_printed_are_set_again_before_its_hit(kernel):
    # After a restart the first step's hit sets the print options again, so the second
    # step's outputs were shown with the settings in effect: served, not run.
    from steps import restart, served

    cells = [
        "%%step opts\nimport numpy as np\nnp.set_printoptions(precision=3)",
        "%%step show\nprint(np.array([1 / 3]))",
    ]
    for cell in cells:
        kernel.ok(cell)
    restart(kernel)
    replies = [kernel.ok(cell) for cell in cells]
    assert all(served(r) for r in replies), [r.status_lines() for r in replies]
    assert "0.333]" in replies[1].stdout
