"""`%step restore`: the state an earlier kernel session had, back after a restart or a
crash, without running anything.

The record knows what made that state: the executions of the session, in the order
they ran, each with its cell and the key it was served or stored under. The restore
serves them again in that order, each from its cell's code as it is now (the cells the
frontend sent, else the notebook file), under the rule any step has, with one more:
the key must be the one it had (`Engine.restoring`; the engine raises NotServed rather
than run anything). So a value comes back only as the step made it then, read lazily
like any hit. The restore stops at the first execution it cannot serve and says why: an
effect (it runs every time), a cell edited since it ran, an input that a cell outside
the record set (a plain cell, before auto mode), an entry evicted or expired, a cell
that is gone. Failed and interrupted executions left nothing to restore and are skipped,
and so is one that cannot be served when its cell ran again later in the session (a cell
edited and run again): the later run replaced what it left.

The session restored is the latest one before this kernel's, in the current run.
Outputs are not shown again (the notebook still shows them); the cells' badges and the
record say `served`.
"""

from __future__ import annotations

import time
from typing import Any

import msgspec
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

from .. import formatting
from ..engine.execution import run_step
from ..engine.kernel import Engine, Restoring
from ..errors import NotServed
from . import auto, notebookfile, stepargs
from . import plan_plain as plain

_RESTORED = ("hit", "live", "effect")  # what made state (an effect stops the restore)


class Planned(msgspec.Struct, frozen=True):
    """One execution of the earlier session, to serve again."""

    step: str
    cell_id: str | None
    execution_count: int | None
    key: str
    status: str
    duration_s: float
    nbytes: int


class Outcome(msgspec.Struct):
    session: str | None
    planned: list[Planned]
    served: list[Planned] = msgspec.field(default_factory=list)
    skipped: list[Planned] = msgspec.field(default_factory=list)  # its cell ran again later
    stopped: Planned | None = None
    why: str | None = None
    seconds: float = 0.0

    def text(self) -> str:
        if self.session is None:
            return "nothing to restore: no earlier kernel session of this run ran a step"
        done = (
            f"restored {len(self.served)} of {len(self.planned)} executions of session "
            f"{self.session[:12]} in {formatting.duration(self.seconds)}"
        )
        if self.skipped:
            n = len(self.skipped)
            done += f" ({n} superseded by a later run of {'its' if n == 1 else 'their'} cell)"
        if self.stopped is None:
            return done
        where = f" (In [{self.stopped.execution_count}])" if self.stopped.execution_count else ""
        return f"{done}; stopped at {self.stopped.step}{where}: {self.why}"


def plan(engine: Engine) -> tuple[str | None, list[Planned]]:
    """The session to restore and its executions, in the order they ran."""
    execs = [e for e in engine.record() if e.get("session") != engine.session]
    if not execs:
        return None, []
    session = max(execs, key=lambda e: e.get("start") or 0.0)["session"]
    rows = sorted(
        (e for e in execs if e.get("session") == session and e.get("status") in _RESTORED),
        key=lambda e: e.get("start") or 0.0,
    )
    return session, [
        Planned(
            step=e["step"],
            cell_id=e.get("cell_id"),
            execution_count=e.get("execution_count"),
            key=e.get("key") or "",
            status=e["status"],
            duration_s=float(e.get("duration_s") or 0.0),
            nbytes=sum(int(o.get("size") or 0) for o in e.get("outputs") or []),
        )
        for e in rows
    ]


def estimate(planned: list[Planned]) -> str:
    """`12 cells, 1.2 GiB, about 0.4 s` for the panel's button and the dry run."""
    cells = len({(p.cell_id, p.step) for p in planned})
    size = formatting.size(sum(p.nbytes for p in planned))
    # a hit costs its metadata and replay, not its bytes (read lazily): a few ms each
    return f"{cells} cells, {size}, about {formatting.duration(0.005 * len(planned))}"


def restore(engine: Engine, cells: list[dict] | None = None) -> Outcome:
    """Serve the earlier session's executions again, in order, until one cannot be."""
    t0 = time.perf_counter()
    session, planned = plan(engine)
    out = Outcome(session, planned)
    if cells is None:
        cells = _notebook_cells(engine)
    by_id = {c["id"]: c["source"] for c in cells if c.get("id")}
    by_name = _by_name(engine, cells) if any(not p.cell_id for p in planned) else {}
    for i, p in enumerate(planned):
        source = by_id.get(p.cell_id) if p.cell_id else by_name.get(p.step)
        why = _serve(engine, p, source)
        if why is None:
            out.served.append(p)
        elif _runs_again(p, planned[i + 1 :]):
            # Its cell ran again later (edited and run, say): what it left was replaced
            # then. Skipping it is safe: a later execution that read what it left has
            # another key now, and the restore stops there.
            out.skipped.append(p)
        else:
            out.stopped, out.why = p, why
            break
    out.seconds = time.perf_counter() - t0
    return out


def _runs_again(p: Planned, later: list[Planned]) -> bool:
    return any((q.cell_id, q.step) == (p.cell_id, p.step) for q in later)


def _serve(engine: Engine, p: Planned, source: str | None) -> str | None:
    """Serve one execution; None when served, else why not."""
    if p.status == "effect":
        return "an effect: it runs every time, so it is not restored (run it yourself)"
    if source is None:
        return "its cell is not in the notebook any more"
    line, body = _step_of(source)
    try:
        args = stepargs.parse(line)
    except UsageError as err:
        return f"its %%step line does not parse ({err})"
    engine.restoring = Restoring(p.cell_id, p.execution_count, p.key)
    try:
        with capture_output():  # the notebook still shows the outputs
            run_step(engine, args, line, body)  # (a body that awaits: a UsageError)
    except NotServed as err:
        return err.why
    except Exception as err:  # anything else: say it and stop, never run on
        return f"{type(err).__name__}: {err}"
    finally:
        engine.restoring = None
    return None


def _step_of(source: str) -> tuple[str, str]:
    """(the %%step line's arguments, the body) of a cell, as auto mode would run it."""
    first, _, body = source.partition("\n")
    if first.startswith("%%step"):
        return first[len("%%step") :].strip(), body
    return "--auto", source


def _by_name(engine: Engine, cells: list[dict]) -> dict[str, str]:
    """Without cell ids (nbclient sends none): step name -> the source of the last cell
    whose step has that name (parsed once per restore, not once per execution)."""
    from ..engine.code import step_code

    found: dict[str, str] = {}
    # a cell is transformed as it ran: what the cells before it bind is bound by then
    names = plain.Bound({})
    for cell in cells:
        if not auto.wraps(cell["source"]) and not cell["source"].startswith("%%step"):
            continue
        line, body = _step_of(cell["source"])
        try:
            name = stepargs.parse(line).name
            info = step_code.of(engine.shell, engine.transform(body, names)).info
        except (UsageError, SyntaxError):
            continue
        names.known.update(dict.fromkeys(info.binds))
        names.stars.extend(info.star_imports)
        found[name or info.default_name()] = cell["source"]
    return found


def _notebook_cells(engine: Engine) -> list[dict]:
    found = notebookfile.locate(engine.shell)
    if found.path is None:
        raise UsageError(
            "%step restore: this kernel does not know its notebook file; open the "
            "notebook in JupyterLab (the panel sends its cells) or give `--notebook PATH`"
        )
    return notebookfile.code_cells(found.path)


def command(engine: Engine, cells: list[dict] | None, dry_run: bool) -> Any:
    """`%step restore [--dry-run]`: print what it would do, or do it and say how far."""
    if dry_run:
        session, planned = plan(engine)
        if session is None:
            print("nothing to restore: no earlier kernel session of this run ran a step")
        else:
            print(f"session {session[:12]}: {estimate(planned)}")
            for p in planned:
                where = f" In [{p.execution_count}]" if p.execution_count else ""
                print(f"  {p.status:6s} {p.step}{where}")
        return None
    outcome = restore(engine, cells)
    print(outcome.text())
    return None
