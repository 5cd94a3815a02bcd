"""Verifying one notebook: its four passes, then the comparison of each code cell.

1. `plain_1`, `plain_2`: the notebook as it is (after a cell doing nothing, where the
   other passes load the extension), each in a new kernel and a copy of its folder of
   its own. Where they differ, the cell is nondeterministic.
2. `stepped`: every code cell under `%%step` (`wrap`), in a new kernel, a fresh copy
   of the folder and a fresh store; `replay`: the same notebook again in a new kernel
   with the same folder and store, as a restart and Run All would do. Between them, a
   kernel of its own asks `%step plan` of the notebook (verify's question, not a pass).

Then, per cell: the stepped run against the plain run (deterministic cells only), the
replay against the stepped run (every cell: a replay must show what the live run showed),
whether the replay served the step and, when not, why.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import nbformat

from .compare import Step, difference, normalise, stderr_of, user_outputs
from .results import STEPPED, CellResult, NotebookResult, PassResult
from .runner import CellRun, PassRun, run_pass
from .workspace import Workspace
from .wrap import LOAD, PLAN_AT, Wrapped, code_cells, plan_notebook, wrap


def verify_notebook(
    path: Path, ws: Workspace, number: int, timeout: float, auto: bool = False
) -> NotebookResult:
    """Run the four passes of the notebook at `path` and compare them (`auto`: the
    stepped passes in auto mode rather than with `%%step` written on each cell)."""
    t0 = time.perf_counter()
    nb = nbformat.read(path, as_version=4)
    wrapped = wrap(nb, auto)
    scratch = ws.notebook_dir(path, number)
    common = {"kernels": ws.kernels, "timeout": timeout}
    runs: dict[str, PassRun] = {}
    try:
        for label in ("plain_1", "plain_2"):
            folder = ws.folder(path, scratch / label)
            runs[label] = run_pass(
                wrapped.plain, folder, ws.env(path), label=label,
                log_file=scratch / f"{label}.log", **common,
            )  # fmt: skip
        folder, store = ws.folder(path, scratch / "stepped"), scratch / "store"
        # `%step plan` of the notebook as the kernel runs it, asked before the replay.
        planned = scratch / "planned.ipynb"
        nbformat.write(wrapped.nb, planned)
        config = [
            f"--StepMagics.store_dir={store}",  # over a store_dir in the user's config
            "--StepMagics.remote=none",  # never a team cache
            "--StepMagics.quiet=False",  # the status lines say what was served
            "--StepMagics.auto_quiet=0",  # every one of them, in auto mode too
        ]
        passes = {  # in this order: the replay is a restart, then Run All
            "stepped": wrapped.nb,
            "plan": plan_notebook(wrapped, planned),
            "replay": wrapped.nb,
        }
        for label, ran in passes.items():
            runs[label] = run_pass(
                ran, folder, ws.env(path, store), label=label, extra_arguments=config,
                after_restart=LOAD, log_file=scratch / f"{label}.log", **common,
            )  # fmt: skip
        if ws.keep:  # for a look at what each pass showed
            for label, run in runs.items():
                nbformat.write(run.nb, scratch / f"{label}.ipynb")
    finally:
        ws.discard(scratch)
    plan = runs.pop("plan", None)
    result = compare_runs(str(path), nb, wrapped, runs, plan)
    result.wall_s = time.perf_counter() - t0
    return result


def verify_in(
    root: str, keep: bool, in_place: bool, path: Path, number: int, timeout: float, auto: bool
) -> NotebookResult:
    """`verify_notebook` in the workspace another process made (a `--jobs` worker)."""
    ws = Workspace(root=Path(root), keep=keep, in_place=in_place)
    return verify_notebook(path, ws, number, timeout, auto)


def compare_runs(
    name: str,
    nb: nbformat.NotebookNode,
    wrapped: Wrapped,
    runs: dict[str, PassRun],
    plan_run: PassRun | None = None,
) -> NotebookResult:
    result = NotebookResult(name)
    for label, run in runs.items():
        result.passes[label] = PassResult(
            round(_timed(label, run, wrapped), 3), run.restarts, run.failure
        )
        loaded = run.cells.get(0) if label in STEPPED else None  # the `%load_ext` cell
        if loaded is not None:
            result.passes[label].load_s = round(loaded.seconds, 3)
        if run.failure:
            result.problems.append(f"the {label} pass could not run: {run.failure}")
        for index, cell in run.cells.items():
            if cell.died:
                n = index - wrapped.offset + 1
                result.problems.append(f"the kernel died at cell {n} in the {label} pass")
    load = runs["stepped"].cells.get(0)
    if load is not None and _error(load.outputs):
        result.problems.append(f"`{LOAD}` failed: {_error(load.outputs)}")
    if plan_run is not None and plan_run.failure:
        result.problems.append(f"`%step plan` could not run: {plan_run.failure}")
    plan = plan_rows(plan_run.cells.get(PLAN_AT) if plan_run is not None else None)
    steps = [i for i in code_cells(nb) if wrapped.not_wrapped.get(i, "%%step") == "%%step"]
    planned = dict(zip(steps, plan, strict=False)) if len(plan) == len(steps) else {}
    if plan and not planned:
        result.problems.append(f"`%step plan` listed {len(plan)} steps, not {len(steps)}")
    for index in code_cells(nb):
        at = {label: run.cells.get(index + wrapped.offset) for label, run in runs.items()}
        res = _cell(nb.cells[index], index, wrapped, at)
        if index in planned:
            res.plan, res.plan_reason = planned[index]
            res.plan_differs = _plan_differs(res)
        result.cells.append(res)
    return result


def _timed(label: str, run: PassRun, wrapped: Wrapped) -> float:
    """The pass's time for its ratio to the plain run: its cells', less the cells no
    pass puts under `%%step` (another cell magic): those run alike in every pass, and
    `%%timeit`'s own choice of a loop count makes its time jump tenfold from one run to
    the next. A cell that runs the `%timeit` line magic is left out of every pass for
    the same reason (its step's hit, which replays the timing, too). A plain pass's
    first cell, which does nothing, is not the notebook's."""
    shift = wrapped.offset
    untimed = [index + shift for index in (*wrapped.not_wrapped, *_timing(wrapped))]
    if label not in STEPPED:
        untimed += range(shift)
    return run.wall_s - sum(run.cells[i].seconds for i in untimed if i in run.cells)


def _timing(wrapped: Wrapped) -> list[int]:
    """The notebook's cells (its indices) with a `%timeit` line, which run as long as
    timeit chooses."""
    cells = wrapped.nb.cells
    return [
        index
        for index in range(len(cells) - wrapped.offset)
        if cells[index + wrapped.offset].cell_type == "code"
        and index not in wrapped.not_wrapped
        and any(
            line.lstrip().startswith("%timeit")
            for line in cells[index + wrapped.offset].source.splitlines()
        )
    ]


_PLAN_ROW = re.compile(r"^(serve|run|effect) +(\S+)(?:  \((.*)\))?$")
_DOES = {"serve": "hit", "run": "live", "effect": "effect"}


def plan_rows(cell: CellRun | None) -> list[tuple[str, str | None]]:
    """(action, why) of each row of the plan the plan pass printed."""
    if cell is None:
        return []
    text = next(
        (o["data"].get("text/plain", "") for o in cell.outputs
         if o.get("output_type") == "execute_result"),
        "",
    )  # fmt: skip
    rows = []
    for line in text.splitlines():
        m = _PLAN_ROW.match(line)
        if m:
            rows.append((m.group(1), m.group(3)))
    return rows


def _plan_differs(res: CellResult) -> str | None:
    """The plan against what Run All did. A plan may say `run` where Run All served a
    step that read a value a step before it ran again and made the same (early cutoff:
    no plan can know it without running), or a cell that fails or is nondeterministic
    (what it binds is new each time); anything else is a wrong plan."""
    if res.plan is None or res.replay in ("hung", "died", "not run") or res.hung:
        return None
    if _DOES[res.plan] == res.replay or (res.plan == "run" and res.replay == "error"):
        return None
    if res.plan == "run" and res.replay == "hit" and "which runs" in (res.plan_reason or ""):
        return None  # early cutoff
    why = f" ({res.plan_reason})" if res.plan_reason else ""
    return f"said {res.plan}{why}, Run All: {res.replay}"


def _cell(cell, index: int, wrapped: Wrapped, at: dict[str, CellRun | None]) -> CellResult:
    p1, p2, s, r = (at.get(k) for k in ("plain_1", "plain_2", "stepped", "replay"))
    res = CellResult(
        index=index + 1,
        cell_id=cell.get("id"),
        line=next((ln for ln in cell.source.splitlines() if ln.strip()), "").strip(),
        wrapped=index not in wrapped.not_wrapped,
        magic=wrapped.not_wrapped.get(index),
        plain_error=_error(p1.outputs) if p1 else None,
        hung=[label for label, run in at.items() if run is not None and run.hung],
        seconds={label: round(run.seconds, 3) for label, run in at.items() if run is not None},
    )
    plain = normalise(p1.outputs) if p1 else None
    res.nondeterministic = p1 is None or p2 is None or plain != normalise(p2.outputs)
    own = "".join(stderr_of(p.outputs) for p in (p1, p2) if p is not None)
    live, live_step = _stepped(s, own)
    again, again_step = _stepped(r, own)
    if res.wrapped or res.magic == "%%step":  # (a step of the notebook's own too)
        res.stepped, res.replay = _status(s, live_step), _status(r, again_step)
        res.messages = list(dict.fromkeys(live_step.messages + again_step.messages))
        if res.replay != "hit":
            res.reason = again_step.reason or again_step.not_cached or _why_not(r, res.replay)
    if not res.hung:
        _compare(res, plain, live, again)
    return res


def _compare(res: CellResult, plain, live, again) -> None:
    """The stepped run against the plain run (deterministic cells), the replay against
    the stepped run: a served step must show what its live run showed, a step that ran
    again only when it is deterministic, and a cell left plain is no replay at all."""
    if not res.nondeterministic:
        res.differs = difference(plain, live) if live is not None else "not run when stepped"
    replayed = res.served or (res.wrapped and not res.nondeterministic)
    if live is not None and replayed:
        res.replay_compared = True
        res.replay_differs = (
            difference(live, again) if again is not None else "not run in the replay"
        )


def _stepped(run: CellRun | None, plain_stderr: str) -> tuple[list[dict] | None, Step]:
    if run is None:
        return None, Step()
    return user_outputs(run.outputs, plain_stderr)


def _status(run: CellRun | None, step: Step) -> str:
    if run is None:
        return "not run"
    if run.hung or run.died:
        return "hung" if run.hung else "died"
    if step.status:
        return step.status
    return "error" if _error(run.outputs) else "no status"


def _why_not(run: CellRun | None, status: str) -> str:
    if status == "error" and run is not None:
        error = _error(run.outputs)
        assert error is not None  # `_status` says "error" only when the cell has one
        return f"raised {error.split(':')[0]}"
    if status == "effect":
        return "an --effect step"
    return status


def _error(outputs: list[dict]) -> str | None:
    for o in outputs:
        if o.get("output_type") == "error":
            return f"{o.get('ename')}: {o.get('evalue')}"
    return None
