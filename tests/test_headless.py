"""Every demo notebook under `jupyter nbconvert --execute` and papermill, as a user runs
them headless: no `JPY_SESSION_NAME`, no frontend. Every `%step` command works (the
plan says which notebook it used), and no "No handler found for comm target" warning
is printed. The agent loop's first run is meant to crash (it kills its own kernel at
turn 31); its second run resumes and completes."""

from __future__ import annotations

import json
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


def nbconvert(ws: demo.Workspace, work: Path, name: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute",
           f"--ExecutePreprocessor.kernel_name={demo.KERNEL}",
           "--ExecutePreprocessor.timeout=600", "--output", "out.ipynb", name]  # fmt: skip
    return subprocess.run(
        cmd, cwd=work, env=headless_env(ws, name), capture_output=True, text=True, timeout=900
    )


@pytest.mark.parametrize("name", ALL)
def test_nbconvert_executes_every_demo_notebook(workspace, name):
    work = workspace.prepare(NOTEBOOKS / name)
    first = nbconvert(workspace, work, name)
    crashes = (
        nbformat.read(NOTEBOOKS / name, as_version=4).metadata.get(demo.META, {}).get("first_run")
        == "crashes"
    )
    if crashes:
        assert first.returncode != 0 and "DeadKernelError" in first.stderr, first.stderr[-2000:]
        again = nbconvert(workspace, work, name)  # the resume
    else:
        again = first
    assert again.returncode == 0, again.stderr[-3000:]
    for run in (first, again):
        assert COMM_WARNING not in run.stderr
    outputs = output_text(work / "out.ipynb")
    assert "UsageError" not in outputs and "Traceback" not in outputs
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
