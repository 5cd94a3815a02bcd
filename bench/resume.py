"""Resume `demo_notebooks/01_quickstart.ipynb` after a kernel restart vs its first run.

Each round uses `scripts/run_demos.py` as `make demo` does: a fresh work directory with
a clean store, the notebook executed top to bottom in a new kernel (the first run), then
again in another new kernel (the resume). Times run from the first cell to the last
(kernel start-up excluded). Target: the resume takes <= 2% of the first run.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import ROOT, Row, main  # noqa: E402

NOTEBOOK = ROOT / "demo_notebooks" / "01_quickstart.ipynb"
FIGURE = "resume a notebook after restart"


def not_measured(why: str) -> list[Row]:
    return [Row(FIGURE, NOTEBOOK.name, "resume", [], ours=True, target="<= 2% of first run",
                note=f"not measured yet: {why}")]  # fmt: skip


def run(args) -> list[Row]:
    try:
        sys.path.insert(0, str(ROOT / "scripts"))
        import run_demos as demo
    except ImportError as err:
        return not_measured(f"scripts/run_demos.py cannot be imported ({err})")
    if not NOTEBOOK.exists() or not hasattr(demo, "run_notebook"):
        return not_measured("the demo notebook or scripts/run_demos.py's run_notebook is missing")
    first, resume, served, ran = [], [], 0, 0
    for _ in range(2 if args.quick else 5):
        with demo.Workspace() as ws:
            try:
                d = demo.run_notebook(NOTEBOOK, ws, with_edits=False)
            except Exception as err:  # the notebook is someone else's work in progress
                return not_measured(f"the demo failed: {str(err).splitlines()[0][:120]}")
        first.append(d.first.wall_s)
        resume.append(d.resume.wall_s)
        served, ran = d.resume.served, d.resume.ran
    med_first = sorted(first)[len(first) // 2]
    med_resume = sorted(resume)[len(resume) // 2]
    share = med_resume / med_first
    return [
        Row(FIGURE, NOTEBOOK.name, "resume (new kernel, Run All)", resume, ours=True,
            target="<= 2% of first run", met=share <= 0.02,
            note=f"{100 * share:.1f}% of the first run; {served} steps served, {ran} ran"),
        Row(FIGURE, NOTEBOOK.name, "first run (Run All)", first),
    ]  # fmt: skip


if __name__ == "__main__":
    main(run)
