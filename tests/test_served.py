"""Cells that can be served are served: cases from public notebooks that were refused
although their values store and restore faithfully."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


def test_a_fitted_meta_estimator_over_an_unfitted_input_is_served(kernel):
    # The unit refers to `rf` (an input); asking its size for a fallback called the
    # forest's own __len__, which raises AttributeError until it is fitted: that was
    # taken for a value that cannot be pickled.
    kernel.ok(
        "from sklearn.datasets import make_classification\n"
        "from sklearn.feature_selection import SelectFromModel\n"
        "from sklearn.ensemble import RandomForestClassifier\n"
        "X, y = make_classification(n_samples=200, random_state=0)"
    )
    kernel.ok("%%step rf\nrf = RandomForestClassifier(n_estimators=5, random_state=0)")
    cell = "%%step sel\nselect = SelectFromModel(rf)\nselect.fit(X, y)\nn = select.transform(X).shape[1]"
    first = kernel.ok(cell)
    assert "not cached" not in " ".join(first.status_lines()), first.status_lines()
    live = kernel.value("(n, select.estimator is rf, hasattr(select, 'estimator_'))")
    second = kernel.ok(cell)
    assert "served from cache" in second.status_lines()[0], second.status_lines()
    assert kernel.value("(n, select.estimator is rf, hasattr(select, 'estimator_'))") == live


@pytest.mark.parametrize(
    "cell",
    [
        "from concurrent.futures import ThreadPoolExecutor\nwith ThreadPoolExecutor(2) as ex:\n"
        "    out = list(ex.map(abs, [-1, -2]))",
        "from multiprocessing.pool import ThreadPool\nwith ThreadPool(2) as ex:\n"
        "    out = ex.map(abs, [-1, -2])",
        "import zipfile\nwith zipfile.ZipFile('a.zip') as ex:\n    out = [len(ex.read('x.txt'))]",
        "with open('a.zip', 'rb') as ex:\n    out = [len(ex.read()) > 0]",
        "from tqdm import tqdm\nex = tqdm([-1, -2])\nout = [abs(v) for v in ex]",  # a bar done
    ],
)
def test_a_spent_executor_pool_archive_or_bar_is_not_kept_and_the_step_is_served(kernel, cell):
    # `ex` is a shut-down executor, a closed pool or archive, a finished progress bar:
    # none can be stored (a queue, a lock inside), and the step ran every time, "not
    # cached". Like a closed file, it is no binding of the step's: its values are served.
    import zipfile

    with zipfile.ZipFile(kernel.cwd / "a.zip", "w") as z:
        z.writestr("x.txt", "hello")
    first = kernel.ok("%%step pooled\n" + cell)
    assert "not cached" not in first.stderr, first.stderr
    live = kernel.value("out")
    assert "served from cache" in kernel.ok("%%step pooled\n" + cell).status_lines()[0]
    assert kernel.value("out") == live


def test_a_cell_sharing_a_default_name_with_a_cached_one_says_why_it_is_not_cached(
    kernel, tmp_path
):
    cached = "%%step\nx = 1"
    effect = f"%%step\nx = open({str(tmp_path / 'out.txt')!r}, 'w').write('a')"
    kernel.ok(cached)
    kernel.ok(effect)
    kernel.ok(cached)
    again = kernel.ok(effect).status_lines()[0]
    assert "not cached: it wrote" in again and "last time" in again, again
    assert "code changed" not in again


def _streams(reply) -> list[tuple[str, str]]:
    return [(o["name"], o["text"]) for o in reply.user_outputs() if "name" in o]


def test_stderr_written_before_stdout_replays_in_the_order_the_frontend_received(kernel):
    body = "import sys\nsys.stderr.write('w\\n')\nprint('r')"
    plain = _streams(kernel.ok(body))
    live = kernel.ok(f"%%step order\n{body}")
    served = kernel.ok(f"%%step order\n{body}")
    assert "served from cache" in served.status_lines()[0]
    assert _streams(live) == _streams(served) == plain == [("stdout", "r\n"), ("stderr", "w\n")]


def test_streams_around_a_display_keep_their_places(kernel):
    body = (
        "import sys\nfrom IPython.display import display\n"
        "print('a')\nsys.stderr.write('b\\n')\ndisplay('shown')\nsys.stderr.write('c\\n')\nprint('d')"
    )
    plain = kernel.ok(body).user_outputs()
    live = kernel.ok(f"%%step around\n{body}").user_outputs()
    served = kernel.ok(f"%%step around\n{body}").user_outputs()

    def shape(outputs):
        return [o.get("name") or o["output_type"] for o in outputs]

    assert shape(live) == shape(served) == shape(plain), (shape(plain), shape(live))


def test_results_of_steps_one_cell_runs_are_not_shown_for_a_later_cell(kernel):
    # A step's result is shown as the bundle it formatted (`display/result.show_as`).
    # Two steps in one cell each wrapped the displayhook over the other's; after the
    # cell the first one's wrapper was left in place, and a later cell showing the same
    # object, changed since, showed its old formatting.
    kernel.ok("lst = [1]")
    cell = (
        "first = get_ipython().run_cell_magic('step', 'a', 'lst')\n"
        "get_ipython().run_cell_magic('step', 'b', '2')\n"
        "first"
    )
    assert kernel.ok(cell).result() == "[1]"
    kernel.ok("lst.append(5)")
    assert kernel.ok("lst").result() == "[1, 5]"
    assert kernel.ok(cell).result() == "[1, 5]"  # (a live run again: its input changed)


def test_a_result_is_formatted_before_the_figure_is_drawn_as_in_a_plain_cell(kernel):
    kernel.ok("%matplotlib inline\nimport matplotlib.pyplot as plt")
    body = "plt.plot([1, 2, 3])\nplt.xlabel('Input feature')"
    plain = kernel.ok(body).result()
    live = kernel.ok(f"%%step label\n{body}").result()
    served = kernel.ok(f"%%step label\n{body}")
    assert "served from cache" in served.status_lines()[0]
    assert plain == live == served.result() == "Text(0.5, 0, 'Input feature')"


def _kinds(reply) -> list[list[str]]:
    return [sorted(o.get("data", {})) for o in reply.user_outputs()]


def test_sympy_printing_set_by_a_step_is_set_again_and_results_show_as_they_did(kernel):
    cells = [
        "%%step imports\nfrom sympy import symbols, pi, init_printing\nx = symbols('x')",
        "%%step printing\ninit_printing()",
        "%%step expr\n(pi + x)**2",
    ]
    live = [kernel.ok(c) for c in cells]
    probe = "(pi + x)**3"
    probe_live = kernel.ok(probe)
    kernel.restart()
    kernel.ok("%load_ext resumable_cells")
    served = [kernel.ok(c) for c in cells]
    assert all("served from cache" in r.status_lines()[0] for r in served), [
        r.status_lines() for r in served
    ]
    assert [_kinds(r) for r in served] == [_kinds(r) for r in live]
    assert "image/png" in _kinds(live[2])[0]
    assert served[2].user_outputs()[0]["data"] == live[2].user_outputs()[0]["data"]
    assert kernel.value("type(_).__name__") == "Pow"  # `_` holds the value, not its display
    assert _kinds(kernel.ok(probe)) == _kinds(probe_live)  # a later plain cell, too


# -- keys that do not depend on the step's own outputs -------------------------------------
# Statements a cell may hold; each needs the names of the ones before it in its group.
IMPORTS = [
    ("import numpy as np", "a = np.pi * 2"),
    ("from numpy import pi, e", "b = pi + e"),
    ("import math", "c = math.tau"),
    ("import os.path", "d = os.path.sep"),
    ("import statistics as st", "f = st.mean([1, 2, 4])"),
    ("from collections import OrderedDict as OD", "g = OD(k=1)"),
    ("import fractions", "h = fractions.Fraction(1, 3)"),
]


def _key_of(kernel, step: str) -> str:
    return kernel.value(
        f"[r['key'] for r in __import__('resumable_cells').record() if r['step'] == {step!r}][-1]"
    )


@given(st.lists(st.sampled_from(IMPORTS), min_size=1, max_size=4, unique=True))
@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
def test_a_step_run_twice_is_served_with_the_key_a_fresh_kernel_computes(kernel, pairs):
    kernel.restart()  # each example starts in a fresh kernel, as after a restart
    kernel.ok("%load_ext resumable_cells")
    body = "\n".join(line for pair in pairs for line in pair)
    cell = f"%%step imports_{abs(hash(body)) % 10**8}\n{body}"
    first = kernel.ok(cell)
    key = _key_of(kernel, cell.split()[1])
    second = kernel.ok(cell)
    assert "served from cache" in second.status_lines()[0], (body, second.status_lines())
    kernel.restart()
    kernel.ok("%load_ext resumable_cells")
    third = kernel.ok(cell)
    assert "served from cache" in third.status_lines()[0], (body, third.status_lines())
    assert _key_of(kernel, cell.split()[1]) == key, first.status_lines()


GAUSSIAN = """%%step features
class GaussianFeatures(BaseEstimator, TransformerMixin):
    def __init__(self, N, width_factor=2.0):
        self.N = N
        self.width_factor = width_factor

    @staticmethod
    def _gauss_basis(x, y, width, axis=None):
        arg = (x - y) / width
        return np.exp(-0.5 * np.sum(arg ** 2, axis))

    def fit(self, X, y=None):
        self.centers_ = np.linspace(X.min(), X.max(), self.N)
        self.width_ = self.width_factor * (self.centers_[1] - self.centers_[0])
        return self

    def transform(self, X):
        return self._gauss_basis(X[:, :, np.newaxis], self.centers_, self.width_, axis=1)"""


def test_a_notebook_subclass_of_a_library_class_is_served_by_value(kernel):
    # TransformerMixin's __init_subclass__ wraps `transform` when the class is made: it
    # is stored as written, and wrapped again (once) when it is rebuilt.
    setup = "import numpy as np\nfrom sklearn.base import BaseEstimator, TransformerMixin"
    use = (
        "%%step use\nmodel = GaussianFeatures(5).fit(np.arange(10.0)[:, None])\n"
        "out = model.transform(np.arange(3.0)[:, None]).round(3).tolist()"
    )
    probe = "(out, GaussianFeatures.transform.__wrapped__.__name__, model.get_params())"
    kernel.ok(setup)
    first = kernel.ok(GAUSSIAN)
    assert "not cached" not in " ".join(first.status_lines()), first.status_lines()
    kernel.ok(use)
    live = kernel.value(probe)
    kernel.restart()
    kernel.ok(f"%load_ext resumable_cells\n{setup}")
    for cell in (GAUSSIAN, use):
        r = kernel.ok(cell)
        assert "served from cache" in r.status_lines()[0], r.status_lines()
    assert kernel.value(probe) == live
    assert kernel.value("hasattr(GaussianFeatures.transform.__wrapped__, '__wrapped__')") is False
    fresh = "GaussianFeatures(3).fit(np.arange(4.0)[:, None]).transform(np.ones((1, 1))).shape"
    assert kernel.value(fresh) == (1, 3)


@pytest.mark.parametrize(
    ("before", "body", "probe", "printed"),
    [
        # `from sympy import *` binds `test`, an object of a class made inside a
        # function, which pickle cannot find by name: stored as the attribute `sympy.test`.
        (
            "",
            "from sympy import *\nx = symbols('x')",
            "import sympy\nprint(test is sympy.test, pi is sympy.pi, str(x + pi))",
            "True True x + pi",
        ),
        # Bound again as those very objects (a dict too, which pickle would copy): not
        # walked for what they share, so a name the step does not read may hold one.
        (
            "import json.decoder\nknown = json.decoder.BACKSLASH",
            "from numpy.random import *\nfrom json.decoder import BACKSLASH",
            "import numpy, json.decoder\nprint(rand is numpy.random.rand and seed is "
            "numpy.random.seed, BACKSLASH is json.decoder.BACKSLASH)",
            "True True",
        ),
    ],
    ids=["sympy", "shared-and-held"],
)
def test_names_imported_from_a_module_are_served_as_its_attributes(
    kernel, before, body, probe, printed
):
    if before:
        kernel.ok(before)
    cell = f"%%step star\n{body}"
    first = kernel.ok(cell)
    assert "not cached" not in " ".join(first.status_lines()), first.status_lines()
    kernel.restart()
    kernel.ok("%load_ext resumable_cells")
    again = kernel.ok(cell)
    assert "served from cache" in again.status_lines()[0], again.status_lines()
    assert kernel.ok(probe).stdout == printed + "\n"


# -- keys that verify what a step read dynamically ------------------------------------------
# The helper of the pandas chapters of a public handbook: shows frames side by side,
# evaluating each name it is given in `_repr_html_`.
SIDE_BY_SIDE = '''class display(object):
    """Display HTML representation of multiple objects"""
    template = """<div style="float: left; padding: 10px;">
    <p style='font-family:"Courier New", Courier, monospace'>{0}</p>{1}
    </div>"""
    def __init__(self, *args):
        self.args = args

    def _repr_html_(self):
        return '\\n'.join(self.template.format(a, eval(a)._repr_html_())
                         for a in self.args)

    def __repr__(self):
        return '\\n\\n'.join(a + '\\n' + repr(eval(a))
                           for a in self.args)'''
MAKE = (
    "%%step make\ndf1 = pd.DataFrame({'a': [1, 2]})\ndf2 = pd.DataFrame({'b': [3, 4]})\n"
    "display('df1', 'df2')"
)
JOIN = "%%step join\ndf3 = pd.concat([df2, df2], axis=1)\ndisplay('df1', 'df3')"


def _shown(reply) -> list[dict]:
    return [o.get("data") or o.get("text") for o in reply.user_outputs()]


def test_cells_that_read_frames_through_eval_are_served_while_the_frames_are_unchanged(kernel):
    kernel.ok("import pandas as pd")
    kernel.ok(SIDE_BY_SIDE)
    live = [kernel.ok(MAKE), kernel.ok(JOIN)]
    for r in live:
        assert "not cached" not in " ".join(r.status_lines()), r.status_lines()
    kernel.restart()
    kernel.ok("%load_ext resumable_cells\nimport pandas as pd")
    kernel.ok(SIDE_BY_SIDE)
    served = [kernel.ok(MAKE), kernel.ok(JOIN)]
    for a, b in zip(live, served):
        assert "served from cache" in b.status_lines()[0], b.status_lines()
        assert _shown(a) == _shown(b)
    # df1 is read by `join` through eval only: changing it must not serve `join`.
    kernel.ok("df1 = pd.DataFrame({'a': [9, 9]})")
    again = kernel.ok(JOIN)
    assert "ran in" in again.status_lines()[0], again.status_lines()
    assert "input df1 (read through eval or exec) changed" in again.status_lines()[0]
    assert "9" in again.user_outputs()[0]["data"]["text/html"]


# -- no silent wrong value ---------------------------------------------------------------------
FITS = """from astropy.io import fits
import numpy as np
h = fits.PrimaryHDU(np.zeros((10, 10)))
cards = dict(CTYPE1='RA---TAN-SIP', CTYPE2='DEC--TAN-SIP', CRPIX1=5.0, CRPIX2=5.0, CRVAL1=1.0,
             CRVAL2=2.0, CD1_1=-0.001, CD1_2=1e-4, CD2_1=1e-4, CD2_2=0.001, A_ORDER=2,
             B_ORDER=2, A_0_2=1e-5, B_2_0=2e-5)
for name, value in cards.items():
    h.header[name] = value
h.writeto('img.fits', overwrite=True)"""


def test_a_wcs_read_from_a_fits_header_and_changed_is_never_served_otherwise(kernel):
    # The reading step holds an open file (not cached); the changing step's WCS would come
    # back from its pickle with PC and CDELT for its CD matrix: another value.
    cells = [
        "%%step read\nfrom astropy.wcs import WCS\nhdul = fits.open('img.fits')\n"
        "w = WCS(hdul[0].header)",
        "%%step change\nw.wcs.crval = [10, 20]",
    ]
    probe = "(Hasher(globals()).value_digest(w, 'w'), bool(w.wcs.has_cd()))"
    hasher = "from resumable_cells.hashing.values import Hasher"
    kernel.ok(FITS)
    for c in cells:
        kernel.ok(c)
    kernel.ok(hasher)
    live = kernel.value(probe)
    kernel.restart()
    kernel.ok(f"%load_ext resumable_cells\nfrom astropy.io import fits\n{hasher}")
    for c in cells:
        kernel.ok(c)
    assert kernel.value(probe) == live


def test_a_submodule_imported_under_a_name_is_served_after_a_restart(kernel):
    # `import a.b as c` binds a module the step imports: by its name, never as the
    # attribute `b` of `a` (which a fresh kernel has only once `a.b` is imported).
    cell = "%%step sub\nimport xml.dom.minidom as md\ndoc = md.parseString('<a/>').documentElement.tagName"
    kernel.ok(cell)
    kernel.restart()
    kernel.ok("%load_ext resumable_cells")
    r = kernel.ok(cell)
    assert "served from cache" in r.status_lines()[0], (r.status_lines(), r.stderr)
    assert kernel.value("(doc, md.__name__)") == ("a", "xml.dom.minidom")


def test_a_function_with_a_namespace_of_its_own_is_stored_by_code(kernel):
    # sympy's lambdify execs the code it writes in a dict it builds: no module's, not the
    # notebook's. The function is stored by code, with the names it reads from that dict.
    cell = (
        "%%step lam\nfrom sympy import Symbol, pi, lambdify\nx = Symbol('x')\n"
        "f = lambdify([x], (x + pi)**2, 'numpy')"
    )
    first = kernel.ok(cell)
    assert "not cached" not in " ".join(first.status_lines()), first.status_lines()
    live = kernel.value("round(float(f(1.0)), 9)")
    kernel.restart()
    kernel.ok("%load_ext resumable_cells")
    again = kernel.ok(cell)
    assert "served from cache" in again.status_lines()[0], again.status_lines()
    assert kernel.value("round(float(f(1.0)), 9)") == live


# -- a traceback shown without the cell failing -------------------------------------------
def _kinds_in_order(reply) -> list[str]:
    out = []
    for o in reply.user_outputs():
        kind = o["output_type"]
        out.append(
            f"error {o['ename']}: {o['evalue']}" if kind == "error" else o.get("name") or kind
        )
    return out


@pytest.mark.parametrize(
    "setup, body",
    [
        (
            "class R:\n    def _repr_html_(self):\n        raise AttributeError('boom')\n"
            "    def __repr__(self):\n        return 'R()'",
            "R()",
        ),
        (
            "",
            "try:\n    1 / 0\nexcept ZeroDivisionError:\n    get_ipython().showtraceback()\nv = 1",
        ),
    ],
    ids=["a repr that raises", "showtraceback in an except"],
)
def test_a_traceback_shown_without_the_cell_failing_is_replayed(kernel, setup, body):
    if setup:
        kernel.ok(setup)
    plain = kernel.run(body)
    live = kernel.run(f"%%step tb\n{body}")
    served = kernel.run(f"%%step tb\n{body}")
    assert "served from cache" in served.status_lines()[0], served.status_lines()
    assert _kinds_in_order(served) == _kinds_in_order(live) == _kinds_in_order(plain)
    assert any(k.startswith("error ") for k in _kinds_in_order(plain))
    assert served.status == live.status == plain.status  # as the kernel reports the cell


# -- names a library reads from a string ---------------------------------------------------
@pytest.mark.parametrize(
    "cell, knob",
    [
        ("%%step q\nn = len(df.query('A < @lim'))", "lim"),
        ("%%step e\nn = float(pd.eval('df.A * lim').sum())", "lim"),
        ("%%step m\nn = float(df.eval('A * @lim').sum())", "lim"),
        ("%%step f\nn = len(df.query(f'A < {0} + @lim'))", "lim"),
        ("%%step g\nn = len(below())", "lim"),  # a notebook function that queries
        ("%%step k\nn = len(df.query(expr='A < @lim'))", "lim"),  # by keyword
        ("%%step v\nn = len(df.query(cond))", "lim"),  # a string a variable holds
    ],
)
def test_names_a_pandas_expression_reads_are_inputs(kernel, cell, knob):
    # pandas reads `@lim` (and in pd.eval any name) from the caller's frame: the step's
    # key must see it, or a changed `lim` would be served the old answer.
    kernel.ok("import pandas as pd\ndf = pd.DataFrame({'A': [0.1, 0.6, 0.8]})")
    kernel.ok("def below():\n    return df.query('A < @lim')\ncond = 'A < @lim'")
    kernel.ok(f"{knob} = 0.5")
    kernel.ok(cell)
    first = kernel.value("n")
    assert "served from cache" in kernel.ok(cell).status_lines()[0]
    kernel.ok(f"{knob} = 0.9")
    again = kernel.ok(cell)
    assert (
        "ran in" in again.status_lines()[0] and f"input {knob} changed" in again.status_lines()[0]
    )
    assert kernel.value("n") != first


@pytest.mark.parametrize(
    "cell",
    [
        "%%step lit\nfit = smf.ols('y ~ center(x)', data=df).fit()",
        "%%step kw\nfit = smf.ols(formula='y ~ center(x)', data=df).fit()",
        "%%step var\nfit = smf.ols(formula, data=df).fit()",
        "%%step here\nf = 'y ~ center(x)'\nfit = smf.ols(f, data=df).fit()",
        "%%step fn\nfit = fitted()",  # a notebook function that fits
        "%%step pat\nimport patsy\nfit = np.asarray(patsy.dmatrix('center(x)', df))",
    ],
)
def test_names_a_model_formula_reads_are_inputs(kernel, cell):
    # statsmodels (through patsy) looks up the names a formula spells in the frame that
    # calls it: a notebook function a formula calls is an input of the step, or the old
    # fit would be served after the function changed.
    kernel.ok(
        "import numpy as np, pandas as pd\nimport statsmodels.formula.api as smf\n"
        "df = pd.DataFrame({'x': np.arange(20.0), 'y': np.arange(20.0) * 2 + 1})\n"
        "formula = 'y ~ center(x)'\n"
        "def fitted():\n    return smf.ols('y ~ center(x)', data=df).fit()"
    )
    answer = "float(np.asarray(fit.params if hasattr(fit, 'params') else fit).sum())"
    kernel.ok("def center(v):\n    return v - 5")
    kernel.ok(cell)
    first = kernel.value(answer)
    assert "served from cache" in kernel.ok(cell).status_lines()[0]
    kernel.ok("def center(v):\n    return v - 10")
    again = kernel.ok(cell)
    assert "input center changed" in again.status_lines()[0], again.status_lines()
    assert kernel.value(answer) != first


def _sequence(reply) -> list[tuple[str, str]]:
    """The outputs as the frontend shows them: a stream's consecutive texts joined, the
    extension's status lines as ("status", "")."""
    out: list[tuple[str, str]] = []
    for o in reply.outputs:
        if "resumable_cells" in (o.get("metadata") or {}):
            out.append(("status", ""))
        elif "name" in o and out and out[-1][0] == o["name"]:
            out[-1] = (o["name"], out[-1][1] + o["text"])
        else:
            out.append((o.get("name") or o["output_type"], o.get("text", "")))
    return out


def test_served_steps_keep_their_places_among_a_cells_own_prints(kernel):
    kernel.ok("%%step p\nprint('hi')")
    cell = (
        "print('before')\n"
        "for _ in range(2):\n    get_ipython().run_cell_magic('step', 'p', \"print('hi')\")\n"
        "print('after')"
    )
    assert _sequence(kernel.ok(cell)) == [
        ("stdout", "before\nhi\n"), ("status", ""), ("stdout", "hi\n"), ("status", ""),
        ("stdout", "after\n"),
    ]  # fmt: skip


@pytest.mark.parametrize(
    "around, captured",
    [("from IPython.utils.capture import capture_output\nwith capture_output() as _c:", "_c.stdout"),
     ("import contextlib, io\n_c = io.StringIO()\nwith contextlib.redirect_stdout(_c):",
      "_c.getvalue()")],
    ids=["capture_output", "redirect_stdout"],
)  # fmt: skip
def test_a_served_steps_text_goes_where_the_cell_sends_stdout(kernel, around, captured):
    kernel.ok("%%step p\nprint('hi')")
    reply = kernel.ok(f"{around}\n    get_ipython().run_cell_magic('step', 'p', \"print('hi')\")")
    assert kernel.value(captured) == "hi\n"
    assert "hi" not in reply.stdout


WARNS = (
    "with open('rc_warns.py', 'w') as f:\n"
    '    f.write(\'import sys, warnings\\nwarnings.warn("rc_warns imported")\\n'
    "VALUE = 3\\nOUT = sys.stderr\\n')"
)


def test_a_warning_a_modules_import_gives_shows_once_on_a_hit(kernel):
    # The hit imports the module again as it binds it: that import's warning is the one
    # the replay shows, not a second.
    kernel.ok(WARNS)
    step = "%%step warned\nimport rc_warns\nv = rc_warns.VALUE"
    live = _streams(kernel.ok(step))
    assert [text.count("UserWarning") for _, text in live] == [1]
    kernel.restart()
    kernel.ok("%load_ext resumable_cells")
    served = kernel.ok(step)
    assert "served from cache" in served.status_lines()[0]
    assert _streams(served) == live
    # what the import took while the hit loaded (a library's log handler) writes on
    assert _streams(kernel.ok("rc_warns.OUT.write('after\\n')")) == [("stderr", "after\n")]


def test_a_stream_taken_while_a_step_ran_writes_through_after_it(kernel):
    # A handler made in a step holds the step's sys.stderr; later text goes to the cell
    # that writes it and is not kept for the step that ended.
    kernel.ok("%%step handler\nimport logging, sys\nheld = sys.stderr\nv = 1")
    for i in range(3):
        assert _streams(kernel.ok(f"held.write('later {i}\\n')")) == [("stderr", f"later {i}\n")]
    assert kernel.value("held._sink is None and held._sent is None") is True


def test_what_a_step_writes_through_a_stream_taken_before_it_is_replayed(kernel):
    # Logging configured once, in a plain cell: the handler holds the kernel's stderr
    # from then on, not the `sys.stderr` a step's capture puts in its place.
    setup = "import logging\nlogging.basicConfig(level=logging.INFO, format='%(levelname)s %(message)s')"
    step = "%%step logs\nimport logging\nlogging.info('from the step')\nv = 1"
    kernel.ok(setup)
    live = _streams(kernel.ok(step))
    assert live == [("stderr", "INFO from the step\n")]
    kernel.restart()
    kernel.ok("%load_ext resumable_cells")
    kernel.ok(setup)
    served = kernel.ok(step)
    assert "served from cache" in served.status_lines()[0]
    assert _streams(served) == live


def test_a_name_an_exec_literal_reads_then_binds_is_an_input(kernel):
    """`exec('g = g')` reads g: run again after g changed, the step runs, and g keeps
    its new value (a random notebook was served the list g held when the step first
    ran)."""
    kernel.ok("g = [5]")
    assert "ran" in kernel.ok("%%step s\nexec('g = g')").status_lines()[0]
    kernel.ok("g = bytearray(b'ab')")
    line = kernel.ok("%%step s\nexec('g = g')").status_lines()[0]
    assert "served" not in line and "ran" in line, line
    assert kernel.value("(type(g).__name__, bytes(g))") == ("bytearray", b"ab")
    assert "served" in kernel.ok("%%step s\nexec('g = g')").status_lines()[0]
