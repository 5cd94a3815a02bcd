"""The static analysis of a step's code (resumable_cells.engine.code.analysis): what a cell
reads before it binds it (its inputs), what it binds, deletes, imports and calls, its
normalised form and its default name. Pure functions: no kernel."""

from __future__ import annotations

import pytest

from resumable_cells.engine.code.analysis import analyse


def test_a_name_assigned_before_it_is_read_is_not_an_input():
    info = analyse("x = y + 1\nz = x")
    assert info.reads == ("y",)
    assert info.binds == ("x", "z")


def test_an_augmented_assignment_reads_its_target():
    assert analyse("n += 1").reads == ("n",)


def test_after_an_if_a_name_counts_as_assigned_only_when_both_branches_assign_it():
    assert analyse("if c:\n    a = 1\nelse:\n    a = 2\nb = a").reads == ("c",)
    assert analyse("if c:\n    a = 1\nb = a").reads == ("c", "a")


def test_a_loop_body_reading_what_it_rebinds_reads_it():
    info = analyse("for i in rng:\n    acc = acc + i")
    assert info.reads == ("rng", "acc")
    assert info.binds == ("i", "acc")


def test_functions_read_their_globals_and_defaults_not_their_parameters_or_locals():
    info = analyse("def f(p, q=d):\n    loc = p + g\n    return loc\nr = f(1)")
    assert info.reads == ("d", "g")
    assert info.binds == ("f", "r")


def test_lambdas_and_comprehensions_read_what_they_close_over_only():
    assert analyse("lam = lambda a, b=dflt: a + b + cap").reads == ("dflt", "cap")
    assert analyse("[i * k for i in items]").reads == ("items", "k")


def test_a_walrus_at_the_top_level_binds_its_name():
    info = analyse("(w := v + 1)\nu = w")
    assert info.reads == ("v",)
    assert info.binds == ("w", "u")


def test_class_bodies_read_their_bases_and_what_their_methods_use():
    info = analyse("class K(Base):\n    attr = val\n    def m(self):\n        return helper(self)")
    assert info.reads == ("Base", "val", "helper")
    assert info.binds == ("K",)


def test_a_global_statement_in_a_function_binds_the_name():
    assert analyse("def g():\n    global G\n    G = 1").binds == ("G", "g")


def test_with_targets_are_bound():
    info = analyse("with open(p) as fh:\n    t = fh.read()")
    assert info.reads == ("open", "p")
    assert info.binds == ("fh", "t")


def test_imports_bind_their_alias_and_remember_the_module():
    info = analyse("import numpy as np\nfrom os import path as P\nimport a.b.c")
    assert info.binds == ("np", "P", "a")
    assert info.imports == {"np": "numpy", "P": "os.path", "a": "a"}
    assert info.reads == ()


def test_del_reads_and_deletes_the_name():
    info = analyse("del old")
    assert info.reads == ("old",)
    assert info.deletes == ("old",)
    assert info.binds == ()


def test_dotted_call_targets_are_collected_in_order():
    calls = analyse("time.time()\nnp.random.rand(3)\nf(x)").calls
    assert calls == (("time", "time"), ("np", "random", "rand"), ("f",))


@pytest.mark.parametrize(
    "src",
    [
        "import __main__\nx = vars(__main__)",
        "x = __main__.__dict__",
        "import sys\nx = sys.modules['__main__'].__dict__",
        "import __main__ as m\nx = dir(m)",
        "x = get_ipython().run_line_magic('who_ls', '')",
    ],
)
def test_the_notebook_s_module_read_whole_is_a_dynamic_read(src):
    assert analyse(src).dynamic


def test_calls_with_no_argument_at_all_are_told_apart():
    info = analyse("a = np.random.default_rng()\nb = np.random.default_rng(0)\nc = g(seed=1)")
    assert info.bare_calls == (("np", "random", "default_rng"),)


def test_comments_and_formatting_do_not_reach_the_normalised_form():
    a, b = analyse("x = 1  # one\n"), analyse("x=1")
    assert a.normalised == b.normalised and a.code_hash == b.code_hash
    assert analyse("x = 2").normalised != a.normalised


def test_the_default_name_is_the_first_two_names_bound_else_a_code_hash():
    assert analyse("a = 1\nb = 2\nc = 3").default_name() == "a,b"
    assert analyse("df = load()").default_name() == "df"
    name = analyse("print(1)").default_name()
    assert name.startswith("cell-") and len(name) == len("cell-") + 8
    assert analyse("print(1)").default_name() == name
    assert analyse("print(2)").default_name() != name


def test_a_syntax_error_is_raised_as_python_would():
    with pytest.raises(SyntaxError):
        analyse("x = (1,")


def test_annotated_assignments_bind_only_with_a_value():
    info = analyse("x: int = y\nz: int")
    assert info.reads == ("y",)
    assert info.binds == ("x",)


def test_a_star_import_binds_nothing_it_can_name():
    assert analyse("from m import *\nq = 1").binds == ("q",)


def test_deleting_an_attribute_or_item_reads_the_object_and_deletes_no_name():
    info = analyse("del obj.attr, d[k]")
    assert info.reads == ("obj", "d", "k")
    assert info.deletes == ()


def test_unpacking_binds_every_target_and_an_attribute_target_reads_its_object():
    assert analyse("a, (b, *c) = pair").binds == ("a", "b", "c")
    info = analyse("obj.field = val")
    assert info.reads == ("val", "obj")
    assert info.binds == ()


def test_names_local_to_a_function_are_not_inputs():
    body = (
        "@deco\ndef f(*args, **kw):\n    import os\n    class Inner: pass\n"
        "    try:\n        pass\n    except E as e:\n        pass\n"
        "    def h(): return z\n    return os, Inner, h, args, kw, e"
    )
    info = analyse(body)
    assert info.reads == ("deco", "E", "z")
    assert info.binds == ("f",)
    assert analyse("def f(a, /, b, *, c=kd): return a").reads == ("kd",)
    nested = "def outer():\n    n = 0\n    def inner():\n        nonlocal n\n        n += 1\n    return inner"
    assert analyse(nested).reads == ()


def test_try_statements_and_async_definitions():
    info = analyse(
        "try:\n    r = risky()\nexcept ValueError:\n    r = None\nfinally:\n    done = True"
    )
    assert info.reads == ("risky", "ValueError")
    assert info.binds == ("r", "done")
    assert analyse("async def co():\n    await thing").reads == ("thing",)


def test_comprehension_targets_are_local_and_a_walrus_inside_binds_outside():
    assert analyse("{k: v for k, v in items if k in keep}").reads == ("items", "keep")
    assert analyse("[x for xs in rows for x in xs if x > lim]").reads == ("rows", "lim")
    info = analyse("[(y := i) for i in seq]\nafter = y")
    assert info.reads == ("seq",)
    assert info.binds == ("y", "after")


def test_an_exception_name_is_bound_before_its_handler_reads_it():
    info = analyse("try:\n    go()\nexcept ValueError as err:\n    msg = str(err)")
    assert info.reads == ("go", "ValueError", "str")
    assert info.binds == ("err", "msg")


def test_match_captures_are_bound_and_pattern_values_read():
    src = (
        "match cmd:\n"
        "    case Point(x=px) if px > lim:\n        out = px\n"
        "    case [first, *rest]:\n        out = rest\n"
        "    case {'k': v, **others}:\n        out = others\n"
        "    case Color.RED:\n        out = 0"
    )
    info = analyse(src)
    assert info.reads == ("cmd", "Point", "lim", "Color")
    assert {"px", "first", "rest", "v", "others", "out"} <= set(info.binds)
    inside = analyse("def f(p):\n    match p:\n        case [a]:\n            return a")
    assert inside.reads == ()


def test_attribute_chains_read_and_assigned_are_collected():
    info = analyse("y = settings.THRESHOLD * np.pi\nsettings.LIMIT = 3\ndel settings.OLD")
    assert info.chains == (("settings", "THRESHOLD"), ("np", "pi"))
    assert info.attr_writes == (("settings", "LIMIT"), ("settings", "OLD"))
    inner = analyse("def f(settings):\n    return settings.X + cfg.Y")
    assert inner.chains == (("cfg", "Y"),)


def test_attributes_written_by_setattr_or_through_the_attribute_dict_are_writes():
    info = analyse(
        "setattr(json, 'A', 1)\ndelattr(json, 'B')\njson.__dict__['C'] = 2\n"
        "vars(json)['D'] = 3\nsetattr(json, name, 4)\ndef f(json):\n    setattr(json, 'E', 5)"
    )
    assert info.attr_writes == (("json", "A"), ("json", "B"), ("json", "C"), ("json", "D"))


def test_chains_whose_items_the_top_level_assigns_or_deletes_are_collected():
    info = analyse(
        "mimetypes.types_map['.x'] = 'a'\ndel os.environ['K']\ntable[k] += 1\n"
        "v = cfg.items['k']\nrows[0][1] = 2\ndef f():\n    mod.d['k'] = 1"
    )
    assert info.item_writes == (("mimetypes", "types_map"), ("os", "environ"), ("table",))


def test_the_namespace_read_by_a_literal_name_is_a_read():
    info = analyse("a = globals()['cfg']\nb = globals().get('other', 0)\nc = eval('x + y')")
    assert info.reads == ("cfg", "other", "x", "y")
    assert info.dynamic == ()
    assert analyse("exec('z = w * 2')").reads == ("w",)
    assert analyse("globals()['new'] = 1\nglobals().update(more=val)").reads == ("val",)
    assert analyse("eval(src, {'a': 1})").dynamic == ()  # a namespace of its own


def test_the_names_an_expression_or_a_formula_spells_are_reads():
    assert analyse("fit = smf.ols('y ~ center(x)', data=df)").reads == (
        "y", "center", "x", "smf", "df",
    )  # fmt: skip
    assert analyse("r = ne.evaluate('a * b')").reads == ("a", "b", "ne")
    assert analyse("r = df.query(expr='A < @lim')").reads == ("A", "lim", "df")
    assert analyse("m = dmatrix('center(x)', df)").reads == ("center", "x", "dmatrix", "df")
    # a string a variable holds: read from the namespace as the key is made
    info = analyse("fit = smf.glm(formula, data=df)")
    assert info.expression_vars == ("formula",) and info.dynamic == ()
    assert analyse("r = df.query(cond)").expression_vars == ("cond",)
    # one the cell binds: every string it holds; a pandas one it builds: dynamic
    assert analyse("f = 'y ~ g(x)'\nfit = smf.ols(f, data=d)").reads == ("smf", "d", "y", "g", "x")
    assert analyse("q = 'A < @' + v\nr = df.query(q)").dynamic == ("df.query(q)",)
    # not a string: nothing spelled, nothing dynamic
    info = analyse("score = model.evaluate(X, y)\nmodel.eval()")
    assert info.reads == ("model", "X", "y") and info.dynamic == ()


def test_names_read_through_the_notebook_s_module_are_reads():
    info = analyse("import sys\nv = sys.modules['__main__'].cfg\nsys.modules['__main__'].w = 1")
    assert info.reads == ("cfg",) and info.dynamic == ()
    info = analyse("import sys\nns = vars(sys.modules['__main__'])")
    assert info.dynamic == ("sys.modules['__main__']",)
    assert analyse("import __main__\nv = __main__.cfg").chains == (("__main__", "cfg"),)


def test_environment_variables_read_by_a_literal_name_are_collected():
    info = analyse(
        "a = os.environ['A'] + os.getenv('B', '')\nc = 'C' in os.environ\n"
        "from os import environ, getenv\nd = environ.get('D') or getenv('E')\n"
        "os.environ['W'] = '1'\nv = os.environ[name] + os.environ['W']"
    )
    assert info.environ == ("A", "B", "C", "D", "E")  # not W (set first), nor a variable's


def test_reads_of_the_namespace_that_cannot_be_resolved_are_dynamic():
    assert analyse("v = globals()[name]").dynamic == ("globals()[name]",)
    assert analyse("v = vars().get(key)").dynamic == ("vars().get(key)",)
    assert analyse("names = dir()").dynamic == ("dir()",)
    assert analyse("v = eval(src)").dynamic == ("eval(src)",)
    assert analyse("exec(code, globals())").dynamic == ("exec(code, globals())",)
    assert analyse("ns = get_ipython().user_ns").dynamic == ("get_ipython().user_ns",)
    assert analyse("def f():\n    return globals()[k]").dynamic == ("globals()[k]",)
    assert analyse("def f():\n    return vars(), locals()").dynamic == ()


@pytest.mark.parametrize(
    ("src", "reads", "binds"),
    [
        ("exec('g = g')", ("g",), ("g",)),  # read, then bound: an input
        ("exec('g += 1')", ("g",), ("g",)),
        ("exec('h = 1\\nk = h + g')", ("g",), ("h", "k")),  # h is its own before it is read
        ("exec('for x in g: y = x')", ("g",), ("x", "y")),
        ("exec('(g := g)')", ("g",), ("g",)),
    ],
)
def test_a_literal_given_to_exec_is_read_in_the_order_it_runs(src, reads, binds):
    """Code exec'd in the notebook's namespace is read as the cell's own statements:
    a name it reads before binding it is an input (it was dropped as bound, and a step
    whose exec read a changed name was served the old value)."""
    info = analyse(src)
    assert info.reads == reads
    assert tuple(sorted(info.binds)) == binds
