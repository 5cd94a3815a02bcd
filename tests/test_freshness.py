"""Staleness in a live kernel (`resumable_cells.ipython.freshness`): a plain cell, a parameter
cell or another step changing an input makes the steps that read it stale, with the
reason; rows are per cell; `%step status`, `%step plan` and the sidebar's rows agree."""

from __future__ import annotations

import re

from kernels import Kernel

ENGINE = "__import__('resumable_cells').ipython.magics.current_engine()"

PIPELINE = [
    ("p", "ridge = 1.0"),
    ("fit1", "%%step fit\ncoef = ridge * 2"),
    ("boot", "%%step bootstrap\nboots = [ridge] * 3"),
    ("ev1", "%%step evaluate\nscores = coef + 1"),
    ("rep", "%%step report\nworst = scores * 10"),
]


def run_pipeline(kernel: Kernel) -> None:
    for cell, code in PIPELINE:
        kernel.ok(code, cell_id=cell)


def stale(kernel: Kernel) -> dict:
    return kernel.value(f"{ENGINE}.staleness()")


def sidebar_rows(kernel: Kernel) -> list[dict]:
    """The rows the sidebar gets after an execution (no deep look)."""
    return kernel.value(f"{ENGINE}.freshness.rows()")


def test_a_plain_cell_changing_an_input_makes_readers_stale_with_the_reason(kernel):
    run_pipeline(kernel)
    assert stale(kernel) == {}
    kernel.ok("ridge = 10.0", cell_id="p")
    got = stale(kernel)
    assert re.fullmatch(r"ridge changed \(In \[\d+\]\)", got[("fit", "fit1")])
    assert got[("bootstrap", "boot")] == got[("fit", "fit1")]
    assert got[("evaluate", "ev1")] == "coef comes from stale step fit"
    assert got[("report", "rep")] == "scores comes from stale step evaluate"
    rows = {(r["step"], r["cell_id"]): r for r in sidebar_rows(kernel)}
    assert {k for k, r in rows.items() if r["stale"]} == set(got)
    table = kernel.ok("%step status").result()
    assert table.count("yes: ") == 4 and "ridge changed (In [" in table

    # re-running one reader: the other still says why, and what follows fit is stale now
    kernel.ok(PIPELINE[1][1], cell_id="fit1")
    got = stale(kernel)
    assert ("fit", "fit1") not in got
    assert got[("bootstrap", "boot")].startswith("ridge changed (In [")
    assert got[("evaluate", "ev1")].startswith("coef changed by step fit (In [")


def test_rebinding_an_equal_value_is_not_a_change(kernel):
    run_pipeline(kernel)
    kernel.ok("ridge = 1.0", cell_id="p")
    kernel.ok("ridge = float('1')", cell_id="p2")
    assert stale(kernel) == {}


def test_a_change_in_place_is_found_by_a_deep_look(kernel):
    kernel.ok("data = [1, 2, 3]")
    kernel.ok("%%step total\nt = sum(data)", cell_id="t")
    kernel.ok("data.append(4)")  # same object: the cheap check after the cell cannot see it
    assert not any(r["stale"] for r in sidebar_rows(kernel))
    assert stale(kernel) == {("total", "t"): "data changed in place"}  # %step status looks deep
    assert any(r["stale"] for r in sidebar_rows(kernel))  # and then the sidebar agrees


def test_a_deleted_input_and_a_function_reaching_a_changed_global(kernel):
    kernel.ok("k = 3\nfactor = 2\ndef scale(x):\n    return x * factor")
    kernel.ok("%%step a\nout = scale(k)", cell_id="a")
    kernel.ok("del k")
    assert re.fullmatch(r"k was deleted \(In \[\d+\]\)", stale(kernel)[("a", "a")])
    kernel.ok("k = 3")
    assert stale(kernel) == {}
    kernel.ok("factor = 5")  # a global scale reads is an input of the step itself
    assert re.fullmatch(r"factor changed \(In \[\d+\]\)", stale(kernel)[("a", "a")])


def test_each_cell_keeps_its_own_row_and_going_back_is_free(kernel):
    kernel.ok("ridge = 1.0", cell_id="p")
    kernel.ok("%%step fit\ncoef = ridge * 2", cell_id="f1")
    kernel.ok("ridge = 100.0", cell_id="p100")
    kernel.ok("%%step fit\ncoef = ridge * 2", cell_id="f2")
    kernel.ok("ridge = 1.0", cell_id="p1")
    served = kernel.ok("%%step fit\ncoef = ridge * 2", cell_id="f3")
    assert "served from cache" in served.status_lines()[0]
    rows = {r["cell_id"]: r for r in sidebar_rows(kernel)}
    assert [rows[c]["status"] for c in ("f1", "f2", "f3")] == ["live", "live", "hit"]
    assert [rows[c]["stale"] for c in ("f1", "f2", "f3")] == [False, True, False]
    assert rows["f2"]["stale_cause"].startswith("ridge changed (In [")
    # the status line's saving is the record's, written by the one formatter
    saved = re.search(r"\(saved (.+)\)$", served.status_lines()[0]).group(1)
    from resumable_cells import formatting

    assert saved == formatting.duration(rows["f3"]["saved_s"])


def test_two_cells_with_one_name_and_different_code_get_a_warning(kernel):
    first = kernel.ok("%%step fit\ncoef = 1", cell_id="c1")
    assert "both named" not in first.stderr
    again = kernel.ok("%%step fit\ncoef = 1", cell_id="c2")  # same code: legitimate
    assert "both named" not in again.stderr
    edited = kernel.ok("%%step fit\ncoef = 2", cell_id="c2")  # the same cell edited: fine
    assert "both named" not in edited.stderr
    clash = kernel.ok("%%step fit\ncoef = 3", cell_id="c1")
    assert re.search(
        r"this cell \(In \[\d+\]\) and the cell that ran as In \[\d+\] are both named 'fit'",
        clash.stderr,
    ), clash.stderr


def test_the_plan_says_the_same_as_the_panel(kernel, tmp_path):
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("%load_ext resumable_cells", id="load")]
    nb.cells += [nbformat.v4.new_code_cell(code, id=cell) for cell, code in PIPELINE]
    nbformat.write(nb, tmp_path / "test.ipynb")
    run_pipeline(kernel)
    kernel.ok("ridge = 10.0", cell_id="p")
    plan = kernel.ok("%step plan").result()
    got = stale(kernel)
    for (step, _), cause in got.items():
        assert re.search(rf"{step}\b.*stale: {re.escape(cause)}", plan), plan


def test_the_rows_follow_each_execution_and_a_new_run_or_store(kernel, tmp_path):
    run_pipeline(kernel)
    assert {r["step"] for r in sidebar_rows(kernel)} == {"fit", "bootstrap", "evaluate", "report"}
    kernel.ok("ridge = 10.0", cell_id="p")
    kernel.ok(PIPELINE[1][1], cell_id="fit1")
    assert kernel.run("%%step boom\nraise ValueError('no')", cell_id="b").status == "error"
    kernel.ok("%%step fit\ncoef = ridge * 3", cell_id="fit2")
    # the rows the kernel keeps as it goes are the rows of the whole record read again
    assert sidebar_rows(kernel) == kernel.value(
        f"__import__('resumable_cells').records.staleness.step_rows({ENGINE}.record(), "
        f"{ENGINE}.staleness())"
    )
    rows = {(r["step"], r["cell_id"]): r for r in sidebar_rows(kernel)}
    assert rows[("fit", "fit1")]["executions"] == 2 and not rows[("fit", "fit1")]["stale"]
    assert rows[("bootstrap", "boot")]["stale"] and rows[("boom", "b")]["status"] == "error"

    kernel.ok("%step run --new")
    assert sidebar_rows(kernel) == [] and stale(kernel) == {}
    kernel.ok(PIPELINE[1][1], cell_id="fit1")
    assert [(r["step"], r["executions"]) for r in sidebar_rows(kernel)] == [("fit", 1)]

    kernel.ok(f"%step config --dir {tmp_path / 'other'}")
    assert sidebar_rows(kernel) == []


def test_a_step_writing_through_a_view_changes_the_names_that_own_its_memory(kernel):
    # The step reads `half` only; `base`, whose memory `half` views, and `view`, another
    # view of it, changed with it: the steps that read them are stale at once (no deep
    # look: the step's entry says so).
    kernel.ok("import numpy as np")
    kernel.ok("%%step make\nbase = np.zeros(4)\nview = base[::2]", cell_id="m")
    kernel.ok("%%step half\nhalf = base[1:3]", cell_id="h")
    kernel.ok("%%step total\ntotal = base.sum()", cell_id="t")
    kernel.ok("%%step first\nfirst = view.sum()", cell_id="f")
    kernel.ok("%%step poke\nhalf += 7", cell_id="p")
    readers = {("total", "t"), ("first", "f")}
    assert {(r["step"], r["cell_id"]) for r in sidebar_rows(kernel) if r["stale"]} == readers
    got = stale(kernel)
    assert set(got) == readers
    assert re.fullmatch(r"base changed by step poke \(In \[\d+\]\)", got[("total", "t")])
    assert re.fullmatch(r"view changed by step poke \(In \[\d+\]\)", got[("first", "f")])
