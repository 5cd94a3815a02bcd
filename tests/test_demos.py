"""The demo notebooks, executed headless in real kernels: each runs top to bottom in a
clean store, then again in a new kernel (and, for 05, after each announced edit), and
the tests assert what the notebook teaches. Execution is `scripts/run_demos.py`'s (`make demo`)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import run_demos as demo  # noqa: E402
from kernels import kernel_processes, no_kernels_left  # noqa: E402

NOTEBOOKS = ROOT / "demo_notebooks"
ALL = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    ws = demo.Workspace(tmp_path_factory.mktemp("demos"))
    yield ws
    ws.close()  # the stores hold hundreds of MB (01's frames): not kept for later runs


@pytest.fixture(scope="module")
def ran(workspace):
    """run(name) -> NotebookDemo, each notebook executed once per test module."""
    done: dict[str, demo.NotebookDemo] = {}

    def run(name: str) -> demo.NotebookDemo:
        if name not in done:
            kernels = kernel_processes()
            done[name] = demo.run_notebook(NOTEBOOKS / name, workspace)
            no_kernels_left(kernels)  # each execution's kernel is shut down after it
        return done[name]

    return run


def cell_starting(run: demo.Execution, prefix: str, nth: int = 0):
    cells = [c for c in run.nb.cells if c.cell_type == "code" and c.source.startswith(prefix)]
    assert len(cells) > nth, f"no cell #{nth} starting with {prefix!r}"
    return cells[nth]


def status_lines(run: demo.Execution) -> list[str]:
    """The text of every step's one-line status output, in order."""
    return [
        o["data"]["text/plain"]
        for c in run.nb.cells
        for o in c.get("outputs", [])
        if "resumable_cells" in (o.get("metadata") or {})
    ]


def user_outputs(cell) -> list[dict]:
    """A cell's outputs without the extension's status lines and warnings."""
    out = []
    for o in cell.get("outputs", []):
        if "resumable_cells" in (o.get("metadata") or {}):
            continue
        if o.get("output_type") == "stream" and o.get("name") == "stderr":
            continue
        out.append({k: v for k, v in o.items() if k in ("output_type", "name", "text", "data")})
    return out


# -- every notebook --------------------------------------------------------------------
@pytest.mark.parametrize("name", ALL)
def test_notebooks_are_committed_without_outputs_and_load_the_extension_first(name):
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code[0].source.splitlines()[0] == "%load_ext resumable_cells"
    for c in code:
        assert c.outputs == [] and c.execution_count is None, f"{name}: {c.source[:40]!r}"
    assert len(ALL) == 6


# -- 01: restart and resume ------------------------------------------------------------
PIPELINE = ["generate", "clean", "features", "split", "fit", "bootstrap", "evaluate", "report"]


def test_01_resume_serves_every_step_with_the_same_outputs_in_a_fraction_of_the_time(ran):
    d = ran("01_quickstart.ipynb")
    assert d.first.statuses[:8] == [(n, "live") for n in PIPELINE]
    assert d.resume.ran == 0
    assert d.resume.served == len(d.first.statuses) == 12
    for first, again in zip(d.first.nb.cells, d.resume.nb.cells):
        if first.cell_type == "code" and first.source.startswith("%%step"):
            assert user_outputs(again) == user_outputs(first), first.source.splitlines()[0]
    assert d.resume.wall_s < 0.5 * d.first.wall_s


def test_01_a_changed_input_reruns_exactly_its_readers_and_going_back_is_served(ran):
    d = ran("01_quickstart.ipynb")
    assert d.first.statuses[8:] == [
        ("fit", "live"), ("evaluate", "live"), ("fit", "hit"), ("evaluate", "hit"),
    ]  # fmt: skip
    lines = status_lines(d.first)
    assert "step fit: ran in" in lines[8] and lines[8].endswith("(input ridge changed)")
    assert lines[9].endswith("(input coef changed)")
    why = d.first.text(cell_starting(d.first, "%step why fit").id)
    assert re.search(r"changed\s+input ridge", why)
    assert re.search(r"same\s+input X_train", why)


def test_01_editing_ridge_at_the_top_reruns_what_depends_on_it_and_nothing_else(ran):
    d = ran("01_quickstart.ipynb")
    title, run = d.edits[0]
    assert "ridge = 10.0" in title
    assert run.statuses[:8] == [(n, "hit") for n in PIPELINE[:4]] + [
        (n, "live") for n in PIPELINE[4:]
    ]
    # ridge = 100.0 and back to 1.0 further down: both were cached by the first run.
    assert run.statuses[8:] == [("fit", "hit"), ("evaluate", "hit")] * 2
    lines = status_lines(run)
    assert lines[4].endswith("(input ridge changed)") and lines[5].endswith("(input ridge changed)")


# -- 02: the agent loop ----------------------------------------------------------------
def _tokens(text: str) -> list[int]:
    return [int(t) for t in re.findall(r"tokens (\d+) of", text)]


def test_02_crash_then_resume_serves_every_turn_before_the_crash(ran):
    d = ran("02_agent_loop.ipynb")
    assert d.first.crashed
    turns = [f"turn-{i:02d}" for i in range(1, 51)]
    assert d.first.statuses == [(t, "live") for t in turns[:30]]
    loop = [(n, s) for n, s in d.resume.statuses if n.startswith("turn-")]
    assert loop == [(t, "hit") for t in turns[:30]] + [(t, "live") for t in turns[30:]]
    # The record keeps the turn the crash cut short, in the crashed kernel's session.
    assert re.search(r"cut short: \[\('turn-31', 'k-\w+'\)\]", d.resume.text())


def test_02_the_budget_left_after_the_restart_is_the_budget_left_at_the_crash(ran, workspace):
    d = ran("02_agent_loop.ipynb")
    # The store as the crash left it is what the resume started from: the spend of the
    # resume's live turns, added to it, gives the spend after the loop.
    first_loop = cell_starting(d.resume, 'state = {"turn": 0')
    printed = d.resume.text(first_loop.id)
    at_start = _tokens(printed)[0]
    turn_tokens = {
        int(m[1]): int(m[2].replace(",", ""))
        for m in re.finditer(r"^turn\s+(\d+)\s.*\(([\d,]+) tokens", printed, re.M)
    }
    after_loop = _tokens(d.resume.text(cell_starting(d.resume, "%step budget", 1).id))[0]
    assert len(turn_tokens) == 50
    assert after_loop == at_start + sum(turn_tokens[i] for i in range(31, 51))
    # What the crashed kernel had spent: turns 1-30 and turn 31's first model call.
    assert (
        sum(turn_tokens[i] for i in range(1, 31))
        < at_start
        < sum(turn_tokens[i] for i in range(1, 32))
    )


def test_02_the_follow_up_is_refused_when_the_tokens_run_out(ran, workspace):
    d = ran("02_agent_loop.ipynb")
    followup = d.resume.text(cell_starting(d.resume, 'state = {"turn": 0', 1).id)
    m = re.search(r"stopped before (followup-\d+): .*tokens budget exhausted: spent (\d+) of 300000", followup)  # fmt: skip
    assert m, followup[-500:]
    refused, spent = m[1], int(m[2])
    assert spent >= 300000
    assert refused not in d.resume.steps()
    assert d.resume.steps("live")[-1] == f"followup-{int(refused[-2:]) - 1:02d}"
    stored = demo.budget(d.workdir, "02_agent_loop.ipynb")
    assert stored["spent"]["tokens"] == spent and stored["limits"]["tokens"] == 300000


# -- 03: effects -----------------------------------------------------------------------
def test_03_effects_run_on_every_resume_and_nothing_happens_twice(ran):
    d = ran("03_effects.ipynb")
    effects = ["export", "notify", "charge", "write_summary"]
    for run in (d.first, d.resume):
        assert [n for n, s in run.statuses if s == "effect"] == effects
    assert ("invoices", "hit") in d.resume.statuses and ("total", "hit") in d.resume.statuses
    # a live source read under --ttl: cached (its connection is a read), served within its hour
    assert ("rates", "live") in d.first.statuses and ("rates", "hit") in d.resume.statuses
    rates = d.first.text(cell_starting(d.first, "%%step rates").id)
    assert "invoiced in EUR at today's rate" in rates and "not cached" not in rates
    charge_first = d.first.text(cell_starting(d.first, "%%step charge").id)
    charge_again = d.resume.text(cell_starting(d.resume, "%%step charge").id)
    assert "8 charges made, 0 already made" in charge_first
    assert "0 charges made, 8 already made" in charge_again
    ledger = json.loads((d.workdir / "output" / "payments-ledger.json").read_text())
    assert len(ledger) == 8 and len({c["customer"] for c in ledger.values()}) == 8
    assert (d.workdir / "output" / "outbox.log").read_text().count("\n") == 1
    assert "already sent" in d.resume.text(cell_starting(d.resume, "%%step notify").id)
    assert (d.workdir / "output" / "invoices.csv").read_text().count("\n") == 9
    assert not list((d.workdir / "output").glob(".*.tmp"))


def test_03_the_tripwire_keeps_a_pure_step_that_writes_a_file_out_of_the_cache(ran):
    d = ran("03_effects.ipynb")
    for run in (d.first, d.resume):
        assert ("summary", "live") in run.statuses
        text = run.text(cell_starting(run, "%%step summary").id)
        assert "not cached: it wrote output/summary.txt" in text
        assert "%%step summary --effect" in text


# -- 04: determinism -------------------------------------------------------------------
def test_04_clock_and_random_inside_a_step_are_named_and_a_rerun_diverges(ran):
    d = ran("04_determinism.ipynb")
    bad = d.first.text(cell_starting(d.first, "%%step sample_bad").id)
    assert "calls random.sample() directly" in bad and "step.random.sample(...)" in bad
    assert "calls datetime.datetime.now() directly" in bad and "Use step.now()" in bad
    good = d.first.text(cell_starting(d.first, "%%step sample_good").id)
    assert "directly" not in good
    checks = re.findall(r"same customers as before: (True|False)", d.first.text())
    assert checks == ["False", "True"]
    decide_bad, decide_good = (
        [s for n, s in d.first.statuses if n == name] for name in ("decide_bad", "decide_good")
    )
    assert decide_bad == ["live", "live"] and decide_good == ["live", "hit"]


def test_04_a_new_run_gets_a_new_seed_and_the_cache_freezes_one_draw(ran):
    d = ran("04_determinism.ipynb")
    after_new = d.first.text(cell_starting(d.first, "%%step sample_good", 2).id)
    assert re.search(r"ran in .*\(run (seed|epoch) changed\)", after_new)
    assert "same customers as the previous run: False" in d.first.text()
    # The resume serves the last draw of sample_bad that the first kernel cached.
    drawn = re.findall(r"reviewing customers (\[[\d, ]+\])", d.first.text())
    served = re.findall(r"reviewing customers (\[[\d, ]+\])", d.resume.text())
    assert served[0] == drawn[1] != drawn[0]
    assert d.resume.statuses[0] == ("sample_bad", "hit")


# -- 05: explain -----------------------------------------------------------------------
STEPS = [
    "s01_signal", "s02_detrend", "s03_despike", "s04_smooth", "s05_normalise", "s06_windows",
    "s07_spectrum", "s08_bands", "s09_log_power", "s10_ratios", "s11_features",
    "s12_outliers", "s13_scale", "s14_pca", "s15_kmeans", "s16_sizes", "s17_profiles",
    "s18_transitions", "s19_stability", "s20_report",
]  # fmt: skip


def test_05_resume_serves_all_twenty_and_the_plan_says_so_first(ran):
    d = ran("05_explain.ipynb")
    assert d.first.statuses == [(s, "live") for s in STEPS]
    assert d.resume.statuses == [(s, "hit") for s in STEPS]
    assert "20 served, 0 run" in d.resume.text("explain-plan")
    assert "0 served, 20 run" in d.first.text("explain-plan")


def test_05_editing_step_12_serves_1_to_11_and_runs_12_onwards(ran):
    d = ran("05_explain.ipynb")
    title, run = d.edits[0]
    assert "limit 3.0 -> 2.5" in title
    assert run.statuses == [(s, "hit") for s in STEPS[:11]] + [(s, "live") for s in STEPS[11:]]
    plan = run.text("explain-plan").splitlines()
    assert plan[:11] == [f"serve  {s}" for s in STEPS[:11]]
    assert plan[11] == "run    s12_outliers  (code changed)"
    assert plan[-1] == "11 served, 9 run"
    why = run.text("explain-why")
    assert re.search(r"changed\s+code", why) and "+limit = 2.5" in why
    assert re.search(r"same\s+input features", why)
    status = run.text("explain-status")
    assert re.search(r"s11_features\s+In \[\d+\]\s+served", status)
    assert re.search(r"s12_outliers\s+In \[\d+\]\s+ran", status)


def test_05_a_refactor_with_the_same_values_stops_at_step_12(ran):
    d = ran("05_explain.ipynb")
    _, before = d.edits[0]
    title, run = d.edits[1]
    assert "same values" in title
    assert run.steps("live") == ["s12_outliers"]
    assert run.steps("hit") == STEPS[:11] + STEPS[12:]
    # Step 12 kept the same windows as the edit before it, not as the original; the
    # steps after it replay the outputs of the edited pipeline.
    kept = [
        re.search(r"kept \d+ of \d+", r.text("explain-step-12"))[0] for r in (d.first, before, run)
    ]
    assert kept[0] != kept[1] == kept[2]
    for cell in ("explain-step-16", "explain-step-20"):
        assert user_outputs(run.cell(cell)) == user_outputs(before.cell(cell))
        assert user_outputs(run.cell(cell)) != user_outputs(d.first.cell(cell))


def test_05_a_comment_only_edit_runs_nothing(ran):
    d = ran("05_explain.ipynb")
    title, run = d.edits[2]
    assert "comment-only" in title
    assert "# drop windows" in run.cell("explain-step-12").source
    assert run.statuses == [(s, "hit") for s in STEPS]
    assert run.text("explain-plan").splitlines()[-1] == "20 served, 0 run"


# -- the runner itself -----------------------------------------------------------------
def _tiny(path: Path, sources: list[str], meta: dict | None = None) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    if meta:
        nb.metadata[demo.META] = meta
    nbformat.write(nb, path)
    return path


def test_the_runner_exits_non_zero_when_a_notebook_fails_or_does_not_crash_as_announced(
    tmp_path, capsys
):
    nbs = tmp_path / "nbs"
    nbs.mkdir()
    _tiny(nbs / "a_fails.ipynb", ["%load_ext resumable_cells", "%%step boom\n1 / 0"])
    _tiny(nbs / "b_no_crash.ipynb", ["%load_ext resumable_cells"], {"first_run": "crashes"})
    _tiny(nbs / "c_fine.ipynb", ["%load_ext resumable_cells", "%%step one\nx = 1"])
    assert demo.main([str(nbs)]) == 1
    out, err = capsys.readouterr()
    assert "a_fails.ipynb (first run): cell 1 failed: ZeroDivisionError" in err
    assert "b_no_crash.ipynb: the first run should crash, and it did not" in err
    # first run: 1 step, served 0, ran 1; resume: 1 step, served 1, ran 0
    assert re.search(r"c_fine\.ipynb\s+1\s+0\s+1\s+[\d.]+ s\s+1\s+1\s+0\s+[\d.]+ s", out), out
    assert demo.main([str(nbs), "--only", "c_fine"]) == 0


def test_the_readme_section_links_every_notebook_and_shows_the_table_make_demo_prints():
    text = (NOTEBOOKS.parent / "docs" / "demos.md").read_text()
    linked = re.findall(r"\]\(\.\./demo_notebooks/([\w.]+\.ipynb)\)", text)
    assert linked == ALL
    head = list(demo.HEAD)
    shown = next(ln for ln in text.splitlines() if ln.startswith("notebook"))
    assert re.split(r"\s{2,}", shown.strip()) == head
    assert re.split(r"\s{2,}", demo.table([]).splitlines()[0].strip()) == head
    assert demo.LEGEND.replace("\n", " ") in " ".join(text.split("\n"))
    readme = (NOTEBOOKS.parent / "README.md").read_text()
    assert re.findall(r"\]\(demo_notebooks/([\w.]+\.ipynb)\)", readme) == ALL


def test_06_restore_serves_the_session_as_it_last_ran_and_stops_at_the_edit(ran):
    d = ran("06_carry_on.ipynb")
    assert d.first.crashed
    # nine cells of the session ran, each a step in auto mode (the crash cell is none)
    assert [s for _, s in d.first.statuses] == ["live"] * 9
    said = demo.restore_said(d.resume)
    assert said is not None and said.startswith("3 of 9 executions"), said
    assert "(4 superseded by a later run of their cell)" in said, said
    assert "stopped at trend,turns" in said and "edited since it ran" in said, said
    assert d.resume.served == 3  # the load, window = 200, its smoothing
    probe = d.resume.text("carry-13")
    assert "window 200: 1,999,801 points, turns restored: False" in probe, probe


def test_the_plan_says_what_run_all_does_on_every_demo(tmp_path):
    # `resumable-cells verify` asks `%step plan` before its replay (a Run All in a new
    # kernel) and compares each step's row with what the replay did; it may say `run`
    # where Run All served by early cutoff, and nothing else.
    import subprocess

    out = tmp_path / "demos.json"
    cmd = [sys.executable, "-m", "resumable_cells", "verify", *(str(NOTEBOOKS / n) for n in ALL),
           "--jobs", "2", "--json", str(out)]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert out.exists(), done.stderr[-3000:]
    report = json.loads(out.read_text())
    cells = [(nb["notebook"], c) for nb in report["notebooks"] for c in nb["cells"]]
    assert sum(1 for _, c in cells if c["plan"]) > 80
    wrong = [(nb, c["index"], c["line"], c["plan_differs"]) for nb, c in cells if c["plan_differs"]]
    assert not wrong, wrong
