"""`%step plan` (resumable_cells.ipython.plan) against a real engine in this process:
steps are run with `run_step` in IPython's own in-process shell, then the plan of a
list of cells is compared with what running them does. No kernel; the plan's agreement
with a real Run All through a kernel is tested in test_record.py."""

from __future__ import annotations

import json
import tempfile

import inprocess
import pytest
from inprocess import step
from IPython.core.error import UsageError

from resumable_cells.ipython import notebookfile, plan


@pytest.fixture
def engine(tmp_path, monkeypatch):
    # The test's files beside the notebook, the temp directory apart from them.
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    monkeypatch.chdir(tmp_path)
    eng = inprocess.engine(tmp_path / "store")
    yield eng
    inprocess.close(eng)


def cells_of(*sources: str) -> list[tuple[str, str, None]]:
    out = []
    for s in sources:
        line, _, body = s.partition("\n")
        out.append((line.removeprefix("%%step").strip(), body, None))
    return out


def actions(rows) -> list[tuple[str, str, str]]:
    return [(r.step, r.action, r.reason) for r in rows]


A = "%%step a\nbase = list(range(5))"
B = "%%step b\ntotal = sum(base)"
C = "%%step c\ndoubled = total * 2"


def test_steps_that_ran_with_the_same_code_and_inputs_are_served(engine):
    for s in (A, B, C):
        step(engine, s)
    assert actions(plan.make(engine, cells_of(A, B, C))) == [
        ("a", "serve", ""),
        ("b", "serve", ""),
        ("c", "serve", ""),
    ]


def test_a_changed_step_runs_and_so_does_what_reads_it(engine):
    for s in (A, B, C):
        step(engine, s)
    edited = "%%step a\nbase = list(range(6))"
    rows = plan.make(engine, cells_of(edited, B, C))
    assert actions(rows) == [
        ("a", "run", "code changed"),
        ("b", "run", "input base comes from step a, which runs"),
        ("c", "run", "input total comes from step b, which runs"),
    ]
    assert repr(plan.Plan(rows)).splitlines()[-1] == "0 served, 3 run"


def test_a_changed_input_from_the_namespace_is_named(engine):
    engine.ns["n"] = 1
    step(engine, "%%step t\ny = n + 1")
    engine.ns["n"] = 5
    assert actions(plan.make(engine, cells_of("%%step t\ny = n + 1"))) == [
        ("t", "run", "input n changed")
    ]


def test_ignored_inputs_and_effects(engine):
    engine.ns["client"] = object()
    step(engine, "%%step q --ignore client\nanswer = 42")
    engine.ns["client"] = object()
    rows = plan.make(
        engine, cells_of("%%step q --ignore client\nanswer = 42", "%%step e --effect\nx = 1")
    )
    assert actions(rows) == [("q", "serve", ""), ("e", "effect", "effects always run")]


def test_a_new_step_and_an_input_that_cannot_be_hashed(engine):
    import threading

    engine.ns["lock"] = threading.Lock()
    rows = plan.make(engine, cells_of("%%step fresh\nv = 1", "%%step locked\nw = lock"))
    assert actions(rows) == [
        ("fresh", "run", "new step"),
        ("locked", "run", "input lock cannot be hashed"),
    ]


def test_an_entry_of_another_run_epoch_is_not_served_to_a_step_that_used_it(engine):
    step(engine, "%%step clock\nwhen = str(step.now())")
    step(engine, "%%step plain\nk = 1")
    engine.new_run()
    assert actions(
        plan.make(engine, cells_of("%%step clock\nwhen = str(step.now())", "%%step plain\nk = 1"))
    ) == [
        ("clock", "run", "run epoch changed"),  # the words the run's own miss says
        ("plain", "serve", ""),
    ]


def test_an_expired_entry_is_planned_to_run_with_the_reason_the_run_gives(engine):
    fetch = "%%step fetch --ttl 1h\nprice = 42"
    step(engine, fetch)
    assert actions(plan.make(engine, cells_of(fetch))) == [("fetch", "serve", "")]
    key = engine.store.history("fetch")[-1]
    entry = engine.store.get_entry(key)
    entry.created -= 3 * 3600
    engine.store.put_entry(key, entry)
    assert actions(plan.make(engine, cells_of(fetch))) == [
        ("fetch", "run", "expired (computed 3 h ago, ttl 60 min)")
    ]
    assert actions(plan.make(engine, cells_of("%%step fetch\nprice = 42"))) == [
        ("fetch", "serve", "")  # without --ttl the same entry (the same key) is served
    ]


def test_a_file_the_step_read_that_changed_makes_it_run(engine, tmp_path):
    (tmp_path / "data.txt").write_text("one")
    reader = "%%step reader\ntext = open('data.txt').read()"
    step(engine, reader)
    assert actions(plan.make(engine, cells_of(reader))) == [("reader", "serve", "")]
    (tmp_path / "data.txt").write_text("two!")
    assert actions(plan.make(engine, cells_of(reader)))[0][1] == "run"


def test_a_bad_step_line_is_a_usage_error_naming_the_line(engine):
    with pytest.raises(UsageError, match=r"%step plan: a cell has a bad %%step line '--nosuch'"):
        plan.make(engine, [("--nosuch", "x = 1", None)])


def test_cells_are_read_from_the_notebook_in_order(engine, tmp_path):
    nb = {
        "cells": [
            {"cell_type": "markdown", "source": "%%step not code"},
            {"cell_type": "code", "source": ["%%step one --effect\n", "x = 1\n"]},
            {"cell_type": "code", "source": "y = 2"},
            {"cell_type": "code", "id": "c-z", "source": "%%step\nz = 3"},
        ]
    }
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(nb))
    cells = notebookfile.code_cells(str(path))
    assert plan.plan_cells(engine, cells) == [
        ("one --effect", "x = 1\n", None),
        (None, "y = 2", None),  # a plain cell: simulated, not planned
        ("", "z = 3", "c-z"),
    ]
    path.write_text("{not json")
    with pytest.raises(UsageError, match="cannot read"):
        notebookfile.code_cells(str(path))


def test_the_notebook_is_explicit_the_kernels_own_or_recognised(engine, tmp_path, monkeypatch):
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    with pytest.raises(UsageError, match="no notebook at"):
        notebookfile.locate(engine.shell, "missing.ipynb")
    found = notebookfile.locate(engine.shell, None)  # no session, no notebook here
    assert found.path is None and "was not told its notebook file" in found.note
    (tmp_path / "mine.ipynb").write_text("{}")
    monkeypatch.setenv("JPY_SESSION_NAME", "mine.ipynb")
    assert notebookfile.locate(engine.shell, None).path == "mine.ipynb"
    assert notebookfile.locate(engine.shell, None).note == ""


def test_the_globals_a_function_reads_are_inputs_in_the_plan_too(engine):
    engine.ns["factor"] = 3
    engine.shell.run_cell("def scaled(x):\n    return x * factor")
    use = "%%step use\ny = scaled(2)"
    step(engine, use)
    assert actions(plan.make(engine, cells_of(use))) == [("use", "serve", "")]
    engine.ns["factor"] = 4
    assert actions(plan.make(engine, cells_of(use))) == [("use", "run", "input factor changed")]


def test_a_function_an_earlier_step_binds_is_followed_through_its_entry(engine):
    define = "%%step define\ndef scaled(x):\n    return x * factor"
    setf = "%%step setf\nfactor = 3"
    use = "%%step use\ny = scaled(2)"
    for s in (setf, define, use):
        step(engine, s)
    assert actions(plan.make(engine, cells_of(setf, define, use))) == [
        ("setf", "serve", ""),
        ("define", "serve", ""),
        ("use", "serve", ""),
    ]
    # `use` reads factor only through scaled, which the plan knows by its digest.
    assert actions(plan.make(engine, cells_of("%%step setf\nfactor = 4", define, use))) == [
        ("setf", "run", "code changed"),
        ("define", "run", "input factor comes from step setf, which runs"),
        ("use", "run", "input scaled comes from step define, which runs"),
    ]


def test_a_local_module_edited_makes_the_steps_that_reach_it_run(engine, tmp_path):
    (tmp_path / "plan_helpers.py").write_text("def f():\n    return 1\n")
    sh = engine.shell
    sh.run_cell("import sys\nsys.path.insert(0, '.')\nimport plan_helpers")
    use = "%%step use\nv = plan_helpers.f()"
    try:
        step(engine, use)
        assert actions(plan.make(engine, cells_of(use))) == [("use", "serve", "")]
        (tmp_path / "plan_helpers.py").write_text("def f():\n    return 22\n")
        sh.run_cell("import importlib\nimportlib.reload(plan_helpers)")
        assert actions(plan.make(engine, cells_of(use))) == [
            ("use", "run", "plan_helpers.py changed")
        ]
    finally:
        sh.run_cell("sys.path.remove('.')\nsys.modules.pop('plan_helpers', None)")


def test_a_dynamic_read_runs_in_the_plan(engine):
    engine.ns["key"] = "x"
    rows = plan.make(engine, cells_of("%%step dyn\nv = globals()[key]"))
    assert rows[0].action == "run" and "reads the namespace dynamically" in rows[0].reason


def test_a_parameter_cell_edited_since_the_kernel_ran_it_is_simulated(engine):
    engine.shell.run_cell("ridge = 1.0", store_history=True)
    fit = "%%step fit\ncoef = ridge * 2"
    step(engine, fit)
    same = plan.make(engine, plan.plan_cells(engine, [{"source": "ridge = 1.0"}, {"source": fit}]))
    assert actions(same) == [("fit", "serve", "")]
    # the notebook now says 20.0 (not run): Run All would run fit, and the plan says so
    edited = plan.plan_cells(engine, [{"source": "ridge = 20.0"}, {"source": fit}])
    assert actions(plan.make(engine, edited)) == [("fit", "run", "input ridge changed")]
    # and back to a value an entry was made with: served again
    step(engine, "%%step seed\nridge = 20.0")
    step(engine, fit)
    engine.ns["ridge"] = 1.0
    assert actions(plan.make(engine, edited)) == [("fit", "serve", "")]


def test_a_plain_cell_the_plan_cannot_evaluate_makes_its_readers_run(engine):
    engine.ns["rows"] = [1, 2, 3]
    use = "%%step use\nn = len(rows)"
    step(engine, use)
    cells = [{"source": "import math\nrows = list(range(int(math.sqrt(16))))"}, {"source": use}]
    assert actions(plan.make(engine, plan.plan_cells(engine, cells))) == [
        ("use", "run", "input rows comes from a plain cell the plan cannot evaluate, which runs")
    ]


def test_clear_and_new_run_cells_before_a_step_are_planned(engine):
    a = "%%step a\nbase = list(range(5))"
    seeded = "%%step seeded\ndraw = int(step.rng().integers(1000))"
    step(engine, a)
    step(engine, seeded)
    cells = [{"source": a}, {"source": seeded}]
    assert [r.action for r in plan.make(engine, plan.plan_cells(engine, cells))] == ["serve"] * 2
    cleared = [{"source": "%step clear a"}, *cells]
    assert actions(plan.make(engine, plan.plan_cells(engine, cleared)))[0] == (
        "a",
        "run",
        "a cell before it clears its entries",
    )
    new_run = [{"source": "x = 1\n%step run --new"}, *cells]
    assert actions(plan.make(engine, plan.plan_cells(engine, new_run))) == [
        ("a", "serve", ""),
        ("seeded", "run", "run seed changed"),
    ]


def test_what_a_cell_magic_binds_is_unknown_until_it_runs(engine):
    engine.shell.run_cell("%%time\nx = 5")
    use = "%%step use\ny = x + 1"
    step(engine, use)
    del engine.ns["x"]  # a new kernel: the %%time cell has not run yet
    cells = [{"source": "%%time\nx = 5"}, {"source": use}]
    assert actions(plan.make(engine, plan.plan_cells(engine, cells))) == [
        ("use", "run", "input x comes from a plain cell the plan cannot evaluate, which runs")
    ]


def test_run_stale_is_what_the_plan_runs_kept_to_what_is_out_of_date(engine):
    """The panel's Run stale: `plan.stale_cells` over the cells the panel holds."""
    params, fit, report = (
        "ridge = 1.0",
        "%%step fit\ncoef = ridge * 2",
        "%%step report\nr = coef + 1",
    )
    engine.shell.run_cell(params, store_history=True)
    step(engine, fit)
    step(engine, report)

    def stale(*sources: str) -> list[str]:
        cells = [{"id": f"c{i}", "source": s} for i, s in enumerate(sources)]
        return plan.stale_cells(engine, cells)

    assert stale(params, fit, report) == []  # as the kernel ran them: nothing to do
    # edited, not run: the parameter cell runs first, then what reads it
    assert stale("ridge = 20.0", fit, report) == ["c0", "c1", "c2"]
    # a plain cell not run here that no running step reads is left alone
    assert stale(params, "unrelated = 3", fit, report) == []
    # run in the kernel (a plain cell runs outside any step): its readers are stale
    engine.shell.run_cell("ridge = 20.0", store_history=True)
    assert stale("ridge = 20.0", fit, report) == ["c1", "c2"]
    step(engine, fit)
    step(engine, report)
    assert stale("ridge = 20.0", fit, report) == []


def test_run_stale_leaves_a_step_without_a_key_that_ran_here_and_effects_alone(engine):
    engine.ns["handle"] = open(__file__)  # a file object: its step cannot be keyed
    uses = "%%step uses\nfirst = handle.name"
    effect = "%%step shout --effect\nprint('hi')"
    cells = [{"id": "u", "source": uses}, {"id": "e", "source": effect}]
    assert plan.stale_cells(engine, cells) == ["u"]  # never ran in this kernel
    for s in (uses, effect):
        step(engine, s)
        engine.shell.history_manager.input_hist_raw.append(s)  # as the kernel keeps it
    rows = plan.make(engine, plan.plan_cells(engine, cells))
    assert [(r.action, r.keyed) for r in rows] == [("run", False), ("effect", True)]
    assert plan.stale_cells(engine, cells) == []
    engine.ns["handle"].close()
