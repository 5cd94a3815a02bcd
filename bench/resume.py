"""Resume `demo_notebooks/01_quickstart.ipynb` after a kernel restart vs its first run.

Each round uses `scripts/run_demos.py` as `make demo` does: a fresh work directory with
a clean store, the notebook executed top to bottom in a new kernel (the first run), then
again in another new kernel (the resume). Times run from the first cell to the last
(kernel start-up excluded). Target: the resume takes <= 2% of the first run.

Then the same notebook in auto mode (`%step auto on` in its first cell: its plain cells
are steps too, so the record holds everything that made the state), run once, and a new
kernel restores that session (`%load_ext`, then `%step restore`: every execution served
again in the order it ran): target, the state back in well under a second after the
kernel's start. The restore imports the libraries the session imported (numpy and
pandas here: its values are their objects), as any way of getting the state back must;
a new kernel running only the notebook's import cells is measured as the floor, and the
target is checked on the restore beyond that floor.
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
    first, resume, restore, floor, served, ran, said = [], [], [], [], 0, 0, ""
    import nbformat

    def imports_only(cell) -> bool:
        lines = [x.strip() for x in cell.source.splitlines() if x.strip()]
        return bool(lines) and all(x.startswith(("import ", "from ")) for x in lines)

    importing = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell(c.source)
            for c in nbformat.read(NOTEBOOK, as_version=4).cells
            if c.cell_type == "code" and imports_only(c)
        ]
    )
    restoring = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(c) for c in ("%load_ext resumable_cells", "%step restore")]
    )
    auto = nbformat.read(NOTEBOOK, as_version=4)
    auto.cells[
        next(i for i, c in enumerate(auto.cells) if c.cell_type == "code")
    ].source += "\n%step auto on"
    for _ in range(2 if args.quick else 5):
        with demo.Workspace() as ws:
            try:
                d = demo.run_notebook(NOTEBOOK, ws, with_edits=False)
                work, env = ws.prepare(NOTEBOOK), ws.env(NOTEBOOK)
                demo.execute(auto, work, env, name=NOTEBOOK.name, kernels=ws.kernels)
                back = demo.execute(restoring, work, env, name=NOTEBOOK.name, kernels=ws.kernels)
                libs = demo.execute(importing, work, env, name=NOTEBOOK.name, kernels=ws.kernels)
            except Exception as err:  # the notebook is someone else's work in progress
                return not_measured(f"the demo failed: {str(err).splitlines()[0][:120]}")
        first.append(d.first.wall_s)
        resume.append(d.resume.wall_s)
        restore.append(back.wall_s)
        floor.append(libs.wall_s)
        served, ran = d.resume.served, d.resume.ran
        said = demo.restore_said(back) or back.error or "nothing said"
    med_first = sorted(first)[len(first) // 2]
    med_resume = sorted(resume)[len(resume) // 2]
    share = med_resume / med_first
    beyond = sorted(restore)[len(restore) // 2] - sorted(floor)[len(floor) // 2]
    return [
        Row(FIGURE, NOTEBOOK.name, "resume (new kernel, Run All)", resume, ours=True,
            target="<= 2% of first run", met=share <= 0.02,
            note=f"{100 * share:.1f}% of the first run; {served} steps served, {ran} ran"),
        Row(FIGURE, NOTEBOOK.name, "first run (Run All)", first),
        Row(FIGURE, NOTEBOOK.name, "restore session, auto mode (new kernel: %load_ext, %step restore)",
            restore, ours=True, target="well under 1 s after the kernel starts",
            met=beyond < 0.5, note=f"{1000 * beyond:.0f} ms beyond importing the notebook's "
            f"libraries; restored {said[:90]}"),
        Row(FIGURE, NOTEBOOK.name, "the notebook's import cells only (new kernel): the floor",
            floor),
    ]  # fmt: skip


if __name__ == "__main__":
    main(run)
