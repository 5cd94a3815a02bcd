"""Every demo notebook under `jupyter nbconvert --execute` and papermill, as a user runs
them headless: no `JPY_SESSION_NAME`, no frontend. Every `%step` command works (the
plan says which notebook it used), and no "No handler found for comm target" warning
is printed. A demo whose first run is meant to crash (the agent loop kills its own kernel
at turn 31) is run again and must complete; a session demo (06) is resumed the way a
person resumes it after the crash: the cells its metadata names for the resume, run
headless as a notebook of their own beside it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import run_demos as demo  # noqa: E402

NOTEBOOKS = ROOT / "demo_notebooks"
ALL = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))
COMM_WARNING = "No handler found for comm target"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    ws = demo.Workspace(tmp_path_factory.mktemp("headless"))
    yield ws
    ws.close()


def headless_env(ws: demo.Workspace, name: str) -> dict[str, str]:
    env = ws.env(Path(name))
    env.pop("JPY_SESSION_NAME")  # nbconvert and papermill do not name the notebook
    env["JUPYTER_PATH"] = str(ws.root)  # finds the workspace's kernelspec (this interpreter)
    return env


def resume_cells(work: Path, name: str) -> str:
    """A session demo's resume as its own notebook (the crash cell would crash again under
    Run All); the notebook's file stays beside it, unchanged, for the restore to read."""
    nb = nbformat.read(work / name, as_version=4)
    wanted = nb.metadata[demo.META]["session"]["resume"]
    by_id = {c.get("id"): c for c in nb.cells}
    nb.cells = [by_id[i] for i in wanted]
    resume = "resume.ipynb"  # sorts after the demo's name: the kernel's guess is the demo
    nbformat.write(nb, work / resume)
    return resume


def nbconvert(
    ws: demo.Workspace, work: Path, name: str, run: str | None = None
) -> subprocess.CompletedProcess:
    """Execute `run` (default: the demo itself) in the demo's environment (its key file)."""
    cmd = [sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute",
           f"--ExecutePreprocessor.kernel_name={demo.KERNEL}",
           "--ExecutePreprocessor.timeout=600", "--output", "out.ipynb", run or name]  # fmt: skip
    return subprocess.run(
        cmd, cwd=work, env=headless_env(ws, name), capture_output=True, text=True, timeout=900
    )


@pytest.mark.parametrize("name", ALL)
def test_nbconvert_executes_every_demo_notebook(workspace, name):
    work = workspace.prepare(NOTEBOOKS / name)
    first = nbconvert(workspace, work, name)
    meta = nbformat.read(NOTEBOOKS / name, as_version=4).metadata.get(demo.META, {})
    if meta.get("first_run") == "crashes":
        assert first.returncode != 0 and "DeadKernelError" in first.stderr, first.stderr[-2000:]
        resume = resume_cells(work, name) if "session" in meta else None
        again = nbconvert(workspace, work, name, resume)  # the resume
    else:
        again = first
    assert again.returncode == 0, again.stderr[-3000:]
    for run in (first, again):
        assert COMM_WARNING not in run.stderr
    outputs = output_text(work / "out.ipynb")
    assert "UsageError" not in outputs and "Traceback" not in outputs
    if "session" in meta:  # served what the crashed kernel ran, in notebook order here
        assert "restored" in outputs and "turns restored: True" in outputs, outputs
    if name == "05_explain.ipynb":
        assert "this kernel was not told its notebook file; using 05_explain.ipynb" in outputs
        assert "run    s01_signal" in outputs


def output_text(path: Path) -> str:
    """Everything the cells output (not their source, which may name UsageError)."""
    nb = json.loads(path.read_text())
    return json.dumps([c.get("outputs", []) for c in nb["cells"]])


def test_papermill_runs_a_demo_notebook_with_every_command(workspace, tmp_path):
    name = "05_explain.ipynb"
    work = workspace.prepare(NOTEBOOKS / name)
    out = tmp_path / "out.ipynb"
    cmd = [sys.executable, "-m", "papermill", name, str(out), "-k", demo.KERNEL,
           "--cwd", str(work), "--log-output"]  # fmt: skip
    run = subprocess.run(
        cmd, cwd=work, env=headless_env(workspace, name), capture_output=True, text=True,
        timeout=900,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert COMM_WARNING not in run.stderr
    text = output_text(out)
    assert "UsageError" not in text
    assert "using 05_explain.ipynb" in text  # the plan found its notebook by its cells
    assert "20 steps, 0 stale" in text  # %step status
    assert "step s12_outliers: one entry only" in text  # %step why


REPORT = ROOT / "tests" / "shared" / "report.ipynb"


def jupyter(ws: demo.Workspace, work: Path, *args: str) -> subprocess.CompletedProcess:
    env = headless_env(ws, REPORT.name)
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=work, env=env, capture_output=True, text=True,
        timeout=900,
    )  # fmt: skip


def execute_report(ws: demo.Workspace, work: Path) -> None:
    run = jupyter(ws, work, "jupyter", "nbconvert", "--to", "notebook", "--execute",
                  f"--ExecutePreprocessor.kernel_name={demo.KERNEL}", "--output", "run.ipynb",
                  REPORT.name)  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]


def test_an_executed_notebook_exported_to_html_shows_every_report(workspace):
    work = workspace.prepare(REPORT)
    execute_report(workspace, work)
    execute_report(workspace, work)  # a new kernel: the steps are served
    export = jupyter(workspace, work, "jupyter", "nbconvert", "--to", "html", "run.ipynb")
    assert export.returncode == 0, export.stderr[-3000:]
    page = (work / "run.html").read_text()

    lines = re.findall(r'<div class="rc-status"[^>]*>(.*?)</div>', page)
    assert [ln.split(":")[0] for ln in lines] == ["step data", "step fit", "step report"]
    assert all("served from cache in" in ln for ln in lines), lines
    table = re.search(r'<div class="rc-status-table">.*?</table>(.*?)</div></div>', page, re.S)
    assert table, "no %step status table"
    assert re.search(r">fit</td><td[^>]*>In \[\d+\]</td><td[^>]*>served</td>", table.group(0))
    assert "hit rate of the run: 50% served (3 of 6 pure executions)" in table.group(1)
    plan = re.search(r'<div class="rc-plan">.*?</table>', page, re.S)
    assert plan and plan.group(0).count('data-action="serve"') == 3
    assert "using run.ipynb" in plan.group(0) or "using report.ipynb" in plan.group(0)
    assert "step fit: one entry only" in page  # %step why
    svg = re.search(r'<svg[^>]* class="rc-timeline".*?</svg>', page, re.S)
    assert svg and svg.group(0).count('class="rc-lane"') == 2
    assert "UsageError" not in page and "Traceback" not in page and " object at 0x" not in page

    # Every rich output carries its text too: a terminal, or nbconvert --to markdown.
    nb = nbformat.read(work / "run.ipynb", as_version=4)
    rich = [o for c in nb.cells for o in c.get("outputs", []) if "text/html" in o.get("data", {})]
    assert len(rich) == 3 + 3  # the status lines; status, plan and timeline
    assert all(o["data"]["text/plain"].strip() for o in rich)


def statuses(path: Path) -> dict[str, str]:
    nb = nbformat.read(path, as_version=4)
    out = {}
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            meta = (o.get("metadata") or {}).get("resumable_cells")
            if meta:
                out[meta["step"]] = meta["status"]
    return out


def test_papermill_parameters_rerun_exactly_the_steps_that_read_them(workspace, tmp_path):
    work = workspace.prepare(REPORT)

    def run(ridge: str) -> dict[str, str]:
        out = tmp_path / f"out-{ridge}.ipynb"
        done = jupyter(workspace, work, "papermill", REPORT.name, str(out), "-k", demo.KERNEL,
                       "-p", "ridge", ridge, "--cwd", str(work))  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        return statuses(out)

    assert run("1.0") == {"data": "live", "fit": "live", "report": "live"}
    assert run("2.0") == {"data": "hit", "fit": "live", "report": "live"}
    assert run("1.0") == {"data": "hit", "fit": "hit", "report": "hit"}
