"""`make demo`: execute each demo notebook headless, restart its kernel, execute it again.

    python scripts/run_demos.py demo_notebooks [--only NAME ...] [--keep]

For each notebook: copy it (and `data/`) into a fresh work directory, so it starts with
a clean store; execute it top to bottom in a real kernel (nbclient, cwd = the work
directory, `JPY_SESSION_NAME` = the notebook's file name, a key file of its own); then
start a new kernel process with the same environment and directory and execute it again.
Each step's one-line status output carries `{"resumable_cells": {"status", "step"}}` in
its metadata: that is how served (`hit`) and ran (`live`, `effect`) steps are counted.

A notebook says in its metadata, under `resumable_cells_demo`, what its first run does
and which edits to try after the resume:

- `"first_run": "crashes"`: the first execution must end with the kernel dying (the
  notebook simulates a crash); the resume must then complete.
- `"edits": [{"title", "cell", "old", "new"}, ...]`: after the resume, replace `old` with
  `new` in the cell with that id, save, and execute again in a new kernel, one edit after
  the other, as a person editing the notebook and pressing Restart and Run All would.
- `"resume_note"`: one line printed under the table, saying why its resume runs steps.
- `"session": {"order": [...], "resume": [...]}`: a session out of order (06). The first
  run executes the cells of `order` in that order, as a person did (an entry
  `{"cell", "old", "new"}` edits that cell and runs it, `"run": false` only edits it;
  the edit stays, as in an editor);
  the notebook is saved as edited; the resume executes only the cells of `resume` in a
  new kernel (the load and `%step restore`). Such a notebook is counted from its record:
  each execution of a session, served or ran, whether or not it shows a status line (in
  auto mode a trivial cell shows none).

The exit status is non-zero when a notebook fails in a way it does not announce.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

META = "resumable_cells_demo"
CELL_TIMEOUT = 300  # seconds for one cell
KERNEL = "resumable-cells-demo"  # a kernelspec of this interpreter, in the workspace

__all__ = [
    "Execution",
    "NotebookDemo",
    "DemoFailed",
    "Workspace",
    "apply_edit",
    "budget",
    "execute",
    "record",
    "restore_said",
    "run_notebook",
    "main",
]


class DemoFailed(Exception):
    """A notebook did not do what it announces (an unexpected error, or no crash)."""


@dataclass
class Execution:
    """One top-to-bottom execution of a notebook in one kernel process."""

    notebook: str
    nb: nbformat.NotebookNode  # with the outputs of this execution
    wall_s: float  # from the first cell to the last one's reply: start-up and shutdown excluded
    crashed: bool = False  # the kernel died
    error: str | None = None  # `ename: evalue` of the cell that stopped the execution
    error_cell: int | None = None
    recorded: list[dict] | None = None  # a session demo's executions, from its record

    @property
    def statuses(self) -> list[tuple[str, str]]:
        """(step, status) of every status line, in order: hit, live or effect (of a
        session demo: of every execution its record holds)."""
        if self.recorded is not None:
            return [(e["step"], e["status"]) for e in self.recorded
                    if e["status"] in ("hit", "live", "effect")]  # fmt: skip
        out = []
        for cell in self.nb.cells:
            for o in cell.get("outputs", []):
                meta = (o.get("metadata") or {}).get("resumable_cells")
                if o.get("output_type") == "display_data" and meta:
                    out.append((meta["step"], meta["status"]))
        return out

    @property
    def served(self) -> int:
        return sum(1 for _, s in self.statuses if s == "hit")

    @property
    def ran(self) -> int:
        return sum(1 for _, s in self.statuses if s in ("live", "effect"))

    def steps(self, status: str | None = None) -> list[str]:
        """Names of the steps that ended with `status` (all, when None), in order."""
        return [n for n, s in self.statuses if status is None or s == status]

    def cell(self, cell_id: str) -> nbformat.NotebookNode:
        for c in self.nb.cells:
            if c.get("id") == cell_id:
                return c
        raise KeyError(f"{self.notebook} has no cell with id {cell_id!r}")

    def text(self, cell_id: str | None = None, *, streams=("stdout", "stderr")) -> str:
        """The text a cell (or the whole notebook) printed or displayed, status lines
        included (as text/plain)."""
        cells = [self.cell(cell_id)] if cell_id else self.nb.cells
        parts = []
        for c in cells:
            for o in c.get("outputs", []):
                kind = o.get("output_type")
                if kind == "stream" and o.get("name") in streams:
                    parts.append(o["text"])
                elif kind in ("display_data", "execute_result"):
                    parts.append(o.get("data", {}).get("text/plain", "") + "\n")
                elif kind == "error":
                    parts.append(f"{o['ename']}: {o['evalue']}\n")
        return "".join(parts)


@dataclass
class NotebookDemo:
    """What `make demo` did with one notebook."""

    notebook: str
    workdir: Path
    first: Execution
    resume: Execution
    edits: list[tuple[str, Execution]] = field(default_factory=list)
    note: str = ""  # the notebook's own word on its resume (metadata "resume_note")

    @property
    def step_names(self) -> list[str]:
        names = self.first.steps() + self.resume.steps()
        return list(dict.fromkeys(names))


class Workspace:
    """A directory holding one work directory per notebook, each with a clean store, a
    key file of its own and a temp directory apart (the tripwire ignores writes under
    the temp directory, so the work directories must not be inside it)."""

    def __init__(self, root: Path | None = None, keep: bool = False):
        self.root = Path(root or tempfile.mkdtemp(prefix="rc-demo-")).resolve()
        self.keep = keep
        (self.root / "tmp").mkdir(parents=True, exist_ok=True)
        self.kernels = self.root / "kernels"
        if not (self.kernels / KERNEL / "kernel.json").exists():
            from ipykernel.kernelspec import write_kernel_spec

            # This interpreter (the one with the package), not whatever `python3`
            # kernelspec the user's Jupyter paths would find first.
            write_kernel_spec(self.kernels / KERNEL)

    def prepare(self, notebook: Path) -> Path:
        """A fresh work directory holding a copy of the notebook and its `data/`."""
        work = self.root / notebook.stem
        if work.exists():
            shutil.rmtree(work)
        work.mkdir(parents=True)
        shutil.copy2(notebook, work / notebook.name)
        data = notebook.parent / "data"
        if data.is_dir():
            shutil.copytree(data, work / "data", ignore=shutil.ignore_patterns("__pycache__"))
        return work

    def env(self, notebook: Path) -> dict[str, str]:
        """The kernel's environment: this process's, minus a store override, plus the
        notebook's session name, a per-notebook key file and the temp directory."""
        env = {k: v for k, v in os.environ.items() if k != "RESUMABLE_CELLS_DIR"}
        env.update(
            JPY_SESSION_NAME=notebook.name,
            RESUMABLE_CELLS_KEY_FILE=str(self.root / "keys" / f"{notebook.stem}.key"),
            TMPDIR=str(self.root / "tmp"),
            PYTHONUNBUFFERED="1",
        )
        return env

    def close(self) -> None:
        if not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def execute(
    nb: nbformat.NotebookNode,
    workdir: Path,
    env: dict[str, str],
    *,
    name: str,
    kernels: Path | None = None,
    order: list[tuple[int, str | None]] | None = None,
) -> Execution:
    """Execute `nb` top to bottom in a new kernel process started in `workdir` with `env`
    (the kernelspec `KERNEL` from the directory `kernels`, else the default `python3`);
    with `order`, the cells at those indices in that order (a source given: the cell's
    new code from then on).

    The execution stops at the first cell that raises (recorded in `error`) or when the
    kernel dies (`crashed`); it never raises for either, so callers decide what was
    expected. The kernel's own log goes to `workdir/kernel.log`.
    """
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    nb = nbformat.from_dict(nb)  # a copy: outputs land here, not in the caller's object
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    km = None
    if kernels is not None:
        from jupyter_client.kernelspec import KernelSpecManager
        from jupyter_client.manager import AsyncKernelManager

        specs = KernelSpecManager(kernel_dirs=[str(kernels)], ensure_native_kernel=False)
        km = AsyncKernelManager(kernel_name=KERNEL, kernel_spec_manager=specs)
    client = NotebookClient(
        nb,
        km=km,
        timeout=CELL_TIMEOUT,
        kernel_name=KERNEL if km is not None else "python3",
        resources={"metadata": {"path": str(workdir)}},
        allow_errors=False,
    )
    result = Execution(notebook=name, nb=nb, wall_s=0.0)
    t0 = t1 = None
    with open(workdir / "kernel.log", "ab") as log:
        try:
            # cleanup_kc: nbclient shuts down only kernels of managers it made itself,
            # and `km` is ours (the workspace's kernelspec); without it each one lives on.
            with client.setup_kernel(env=env, stdout=log, stderr=log, cleanup_kc=True):
                t0 = time.perf_counter()
                steps = order if order is not None else [(i, None) for i in range(len(nb.cells))]
                for index, source in steps:
                    cell = nb.cells[index]
                    if source is not None:
                        cell.source = source
                    try:
                        client.execute_cell(cell, index)
                    except CellExecutionError as err:
                        result.error, result.error_cell = _first_line(err), index
                        break
                    except CellTimeoutError:
                        result.error = f"no reply within {CELL_TIMEOUT} s"
                        result.error_cell = index
                        break
                # (before the kernel's shutdown, which waits for its writes to finish)
                t1 = time.perf_counter()
        except DeadKernelError:
            result.crashed = True
    if t0 is not None:
        result.wall_s = (t1 or time.perf_counter()) - t0
    return result


def apply_edit(nb: nbformat.NotebookNode, edit: dict) -> nbformat.NotebookNode:
    """A copy of `nb` where the cell `edit["cell"]` has `edit["old"]` replaced by
    `edit["new"]` (exactly once: an edit that does not apply is a bug in the notebook)."""
    nb = nbformat.from_dict(nb)
    for cell in nb.cells:
        if cell.get("id") == edit["cell"]:
            if cell.source.count(edit["old"]) != 1:
                raise DemoFailed(f"edit {edit['title']!r}: {edit['old']!r} is not in the cell once")
            cell.source = cell.source.replace(edit["old"], edit["new"])
            return nb
    raise DemoFailed(f"edit {edit['title']!r}: no cell with id {edit['cell']!r}")


def run_notebook(path: Path, ws: Workspace, *, with_edits: bool = True) -> NotebookDemo:
    """First run, resume in a new kernel, then each announced edit in a new kernel.
    Raises DemoFailed when the notebook does not behave as it announces."""
    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    meta = nb.metadata.get(META, {})
    expect_crash = meta.get("first_run") == "crashes"
    work = ws.prepare(path)
    env = ws.env(path)

    session = meta.get("session")
    if session:
        first, resume = _run_session(nb, path, work, env, ws, session, expect_crash)
        return NotebookDemo(path.name, work, first, resume, note=meta.get("resume_note", ""))
    first = execute(nb, work, env, name=path.name, kernels=ws.kernels)
    if expect_crash and not first.crashed:
        raise DemoFailed(f"{path.name}: the first run should crash, and it did not")
    _check(first, path.name, "first run", allow_crash=expect_crash)

    resume = execute(nb, work, env, name=path.name, kernels=ws.kernels)
    _check(resume, path.name, "resume")

    demo = NotebookDemo(path.name, work, first, resume, note=meta.get("resume_note", ""))
    if with_edits:
        current = nb
        for edit in meta.get("edits", []):
            current = apply_edit(current, edit)
            nbformat.write(
                current, work / path.name
            )  # saved, as an editor would: `%step plan` reads it
            run = execute(current, work, env, name=path.name, kernels=ws.kernels)
            _check(run, path.name, f"after edit {edit['title']!r}")
            demo.edits.append((edit["title"], run))
    return demo


def _run_session(nb, path: Path, work: Path, env, ws, session: dict, expect_crash: bool):
    """A session out of order, then the resume its metadata names (`session`)."""
    index = {c.get("id"): i for i, c in enumerate(nb.cells)}
    edited = nbformat.from_dict(nb)
    order: list[tuple[int, str | None]] = []
    for item in session["order"]:
        if isinstance(item, str):
            order.append((index[item], None))
            continue
        edited = apply_edit(edited, {"title": f"edit of {item['cell']}", **item})
        if item.get("run", True):  # (an edit not run: the restore meets it)
            i = index[item["cell"]]
            order.append((i, edited.cells[i].source))
    first = execute(nb, work, env, name=path.name, kernels=ws.kernels, order=order)
    if expect_crash and not first.crashed:
        raise DemoFailed(f"{path.name}: the first run should crash, and it did not")
    _check(first, path.name, "first run", allow_crash=expect_crash)
    nbformat.write(edited, work / path.name)  # saved: `%step restore` reads the file
    again = [(index[c], None) for c in session["resume"]]
    resume = execute(edited, work, env, name=path.name, kernels=ws.kernels, order=again)
    _check(resume, path.name, "resume")
    sessions = _sessions(record(work, path.name))
    if len(sessions) != 2:
        raise DemoFailed(f"{path.name}: {len(sessions)} kernel sessions recorded, not 2")
    first.recorded, resume.recorded = sessions
    return first, resume


def record(workdir: Path, notebook: str) -> list[dict]:
    """The executions of the notebook's current run, from its store's record."""
    from resumable_cells.records.journal import Journal
    from resumable_cells.storage.store import Store

    store = Store(Path(workdir) / ".resumable_cells")
    try:
        run = store.ledger.run(notebook)
        return [] if run is None else Journal(store.dir, run["id"]).executions()
    finally:
        store.close()


def _sessions(execs: list[dict]) -> list[list[dict]]:
    """The executions grouped by kernel session, in the order the sessions began."""
    out: dict[str, list[dict]] = {}
    for e in sorted(execs, key=lambda e: e.get("start") or 0.0):
        out.setdefault(e["session"], []).append(e)
    return list(out.values())


def budget(workdir: Path, notebook: str) -> dict | None:
    """The budget of the notebook's current run in the store of `workdir`, as
    `{"limits": {...}, "spent": {...}}`, or None when the notebook has no run yet.
    Read while no kernel of it runs (after a crash, say)."""
    from resumable_cells.records.runs import Budget
    from resumable_cells.storage.store import Store

    store = Store(Path(workdir) / ".resumable_cells")
    try:
        run = store.ledger.run(notebook)
        return None if run is None else Budget(store, run["id"]).snapshot()
    finally:
        store.close()


def _check(run: Execution, name: str, phase: str, *, allow_crash: bool = False) -> None:
    if run.crashed and not allow_crash:
        raise DemoFailed(f"{name} ({phase}): the kernel died")
    if run.error is not None:
        raise DemoFailed(f"{name} ({phase}): cell {run.error_cell} failed: {run.error}")


def _first_line(err: Exception) -> str:
    """`ename: evalue` from nbclient's CellExecutionError."""
    ename, evalue = getattr(err, "ename", ""), getattr(err, "evalue", "")
    if ename:
        return f"{ename}: {evalue}".strip()
    return str(err).strip().splitlines()[-1] if str(err).strip() else repr(err)


# -- the table ------------------------------------------------------------------------
HEAD = ("notebook", "first run: steps", "served", "ran", "time",
        "resume: steps", "served", "ran", "time")  # fmt: skip
LEGEND = (
    "steps counts the %%step cells each execution ran (a cell run twice counts twice); "
    "each one was\nserved from the cache or ran (effects always run), so served + ran = steps. "
    "Times are cell\nexecution wall times (kernel start-up excluded)."
)


def _counts(run: Execution) -> tuple[str, str, str]:
    return str(len(run.statuses)), str(run.served), str(run.ran)


def table(demos: list[NotebookDemo]) -> str:
    """One row per notebook: its first run and its resume, each counted the same way."""
    head = HEAD
    rows = []
    for d in demos:
        first = f"{d.first.wall_s:.1f} s" + (" (crash)" if d.first.crashed else "")
        rows.append(
            (d.notebook, *_counts(d.first), first, *_counts(d.resume), f"{d.resume.wall_s:.1f} s")
        )
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    right = set(range(1, len(head)))

    def fmt(r):
        return "  ".join(
            c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))
        )

    lines = [fmt(head), "  ".join("-" * w for w in widths)] + [fmt(r) for r in rows]
    return "\n".join(lines)


def notes(demos: list[NotebookDemo]) -> str:
    out = []
    for d in demos:
        restored = restore_said(d.resume)
        if restored:
            out.append(f"{d.notebook}: after the crash, %step restore {restored}")
        elif d.first.crashed:
            live = d.resume.steps("live")
            out.append(
                f"{d.notebook}: the first run crashed, as the notebook teaches, after "
                f"{len(d.first.statuses)} steps; the resume served them and ran on from "
                f"{live[0] if live else 'nothing'}"
            )
        if d.note:
            out.append(f"{d.notebook}: {d.note}")
        for title, run in d.edits:
            out.append(
                f"{d.notebook}, after {title}: {len(run.statuses)} steps, served {run.served}, "
                f"ran {run.ran} ({_ranges(run.steps('live') + run.steps('effect'))}) "
                f"in {run.wall_s:.1f} s"
            )
    return "\n".join(out)


def restore_said(run: Execution) -> str | None:
    """What a `%step restore` cell of the run printed, without its leading `restored`."""
    for cell in run.nb.cells:
        if cell.cell_type == "code" and cell.source.strip().startswith("%step restore"):
            said = "".join(o.get("text", "") for o in cell.get("outputs", [])).strip()
            return said.removeprefix("restored ") or None
    return None


def _ranges(names: list[str]) -> str:
    if not names:
        return "none"
    if len(names) <= 3:
        return ", ".join(names)
    return f"{names[0]} .. {names[-1]}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python scripts/run_demos.py",
        description="Execute each demo notebook, restart its kernel, execute it again.",
    )
    p.add_argument("directory", type=Path, help="directory of the demo notebooks")
    p.add_argument("--only", nargs="+", default=[], metavar="NAME", help="notebooks to run")
    p.add_argument("--keep", action="store_true", help="keep the work directories")
    args = p.parse_args(argv)
    notebooks = sorted(args.directory.glob("*.ipynb"))
    if args.only:
        notebooks = [n for n in notebooks if any(o in n.name for o in args.only)]
    if not notebooks:
        print(f"no notebooks in {args.directory}", file=sys.stderr)
        return 2
    demos, failures = [], []
    t0 = time.perf_counter()
    with Workspace(keep=args.keep) as ws:
        for path in notebooks:
            print(f"running {path.name} ...", file=sys.stderr, flush=True)
            try:
                demos.append(run_notebook(path, ws))
            except DemoFailed as err:
                failures.append(str(err))
                print(f"  FAILED: {err}", file=sys.stderr, flush=True)
            except Exception as err:  # a kernel that would not start, say: still a failure
                failures.append(f"{path.name}: {type(err).__name__}: {err}")
                print(f"  FAILED: {failures[-1]}", file=sys.stderr, flush=True)
        if args.keep:
            print(f"work directories kept in {ws.root}", file=sys.stderr)
    print()
    print(table(demos))
    extra = notes(demos)
    if extra:
        print()
        print(extra)
    print(f"\n{LEGEND} Total {time.perf_counter() - t0:.0f} s.")
    for f in failures:
        print(f"FAILED: {f}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
