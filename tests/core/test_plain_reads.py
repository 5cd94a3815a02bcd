"""Which names a plain cell may read (`engine/code/plain_reads.py`): never fewer than it
reads, and None (every name) when it reads the namespace in ways that cannot be
followed."""

from __future__ import annotations

import ast
import functools

import pytest

from resumable_cells.engine.code import plain_reads


def _needs(source: str, ns: dict | None = None) -> set[str] | None:
    return plain_reads.needs(ast.parse(source), ns if ns is not None else {})


@pytest.mark.parametrize(
    ("source", "names"),
    [
        ("print(a.sum())", {"a"}),
        ("a += 1", {"a"}),
        ("del a", {"a"}),
        ("b = 2", set()),
        ("x = [a[i] for i in range(3)]", {"a"}),
        ("y = f'{a}'", {"a"}),
        ("class K:\n    z = a", {"a"}),
        ("def g():\n    return a\ng()", {"a"}),
    ],
)
def test_the_names_a_cell_reads_are_needed(source, names):
    got = _needs(source)
    assert got is not None and names <= got, got
    assert "b" not in got or "b" in names


@pytest.mark.parametrize(
    "source",
    [
        "globals()['a']",
        "eval('a')",
        "exec('print(a)')",
        "vars()",
        "dir()",
        "import __main__",
        "get_ipython().run_line_magic('who', '')",
        "get_ipython().run_cell_magic('time', '', 'a.sum()')",
    ],
)
def test_reads_that_cannot_be_followed_need_every_name(source):
    assert _needs(source) is None


def test_a_quiet_magic_and_the_step_cell_itself_need_nothing():
    assert _needs("get_ipython().run_line_magic('matplotlib', 'inline')") == set()
    assert _needs("get_ipython().run_cell_magic('step', 's1', 'b = a * 2')") == set()


def test_what_the_notebook_functions_a_cell_names_read_is_needed():
    ns: dict = {"__name__": "__main__"}  # as the notebook's namespace is
    exec("def inner():\n    return big\ndef outer():\n    return inner()", ns)
    exec(
        "class Model:\n    def fit(self):\n        return weights\n"
        "    @property\n    def size(self):\n        return table",
        ns,
    )
    ns["m"] = ns["Model"]()
    ns["p"] = functools.partial(ns["outer"])
    assert {"outer", "inner", "big"} <= (_needs("outer()", ns) or set())
    assert {"weights", "table"} <= (_needs("m.fit()", ns) or set())
    assert "big" in (_needs("p()", ns) or set())


def test_a_function_that_reads_the_namespace_dynamically_needs_every_name():
    ns: dict = {}
    exec("def pick(n):\n    return globals()[n]", ns)
    assert _needs("pick('a')", ns) is None


def test_the_code_containers_and_objects_hold_is_followed():
    ns: dict = {"__name__": "__main__"}
    exec(
        "import types\n"
        "ops = {'t': lambda: big}\n"
        "box = types.SimpleNamespace(cb=lambda: cfg)\n"
        "def outer():\n    inner = lambda: deep\n    return lambda: inner()\n"
        "later = outer()\n"
        "def with_default(f=lambda: dflt):\n    return f()\n",
        ns,
    )
    from sklearn.preprocessing import FunctionTransformer

    exec("def shift(x):\n    return x + offset", ns)
    ns["ft"] = FunctionTransformer(func=ns["shift"])
    assert "big" in (_needs("ops['t']()", ns) or set())
    assert "cfg" in (_needs("box.cb()", ns) or set())
    assert "deep" in (_needs("later()", ns) or set())
    assert "dflt" in (_needs("with_default()", ns) or set())
    assert "offset" in (_needs("ft.transform([[1.0]])", ns) or set())


def test_a_value_holding_too_much_to_look_through_needs_every_name():
    ns: dict = {"rows": [[i] for i in range(30_000)], "few": [[i] for i in range(100)]}
    assert _needs("len(rows)", ns) is None
    assert _needs("len(few)", ns) == {"len", "few"}


@pytest.mark.parametrize(
    ("source", "names"),
    [
        ("df.query('n in @ids')", {"df", "ids", "n"}),
        ("df.query(expr='n < @lim')", {"df", "lim"}),
        ("smf.ols('y ~ center(x)', data=df)", {"center", "x", "y"}),
        ("df.query(cond)", {"df", "cond", "lim"}),  # the string `cond` holds
        ("model.evaluate(X)", {"model", "X"}),  # not a string: spells nothing
    ],
)
def test_the_names_an_expression_or_a_formula_spells_are_needed(source, names):
    ns = {"cond": "n < @lim", "X": [1.0]}
    got = _needs(source, ns)
    assert got is not None and names <= got, got


def test_an_expression_that_cannot_be_known_before_the_cell_runs_needs_every_name():
    assert _needs("df.query('n < @' + which)") is None
    assert _needs("q = 'n < @lim'\ndf.query(q)") is None  # bound by the cell itself


def test_the_notebook_s_module_read_by_name_needs_every_name():
    assert _needs("import sys\nsys.modules['__main__'].a") is None
