"""`%step plan`: what Run All would serve and what it would run, without running.

Walks the notebook's step cells in order. A step is served when an entry of it matches
its code, its inputs' digests, its --deps files, the package versions and the run
parameters it used; the names a served step binds take the digests stored in its entry.
Names bound by a step that runs are unknown until it has run, so the plan is
conservative: a step after one that runs is listed as running, although it may still
be served if the re-run produces the same values (early cutoff).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from IPython.core.error import UsageError

from ..engine import entry, inputs, stepcode
from ..errors import KeyComponentError, MissingDeps, StoreError, Unhashable
from ..hashing import key as step_key
from ..hashing import versions
from ..hashing.values import Hasher
from ..records import why
from . import notebookfile, stepargs

log = logging.getLogger(__name__)


@dataclass
class PlanRow:
    step: str
    action: str  # serve | run | effect
    reason: str
    cell_id: str | None = None
    stale: str | None = None  # why this cell's last result is out of date (staleness)

    def line(self) -> str:
        why = self.reason
        if self.stale:  # the panel's and `%step status`'s words, from the same function
            why = f"stale: {self.stale}" + (
                "; an entry for the current inputs exists" if self.action == "serve" else ""
            )
        return f"{self.action:6s} {self.step}" + (f"  ({why})" if why else "")


class Plan:
    def __init__(self, rows: list[PlanRow], note: str = ""):
        self.rows = rows
        self.note = note

    def __repr__(self) -> str:
        serve = sum(r.action == "serve" for r in self.rows)
        lines = [f"({self.note})"] if self.note else []
        lines += [r.line() for r in self.rows]
        lines.append(f"{serve} served, {len(self.rows) - serve} run")
        return "\n".join(lines)


def step_cells(cells: list[dict]) -> list[tuple[str, str, str | None]]:
    """(magic line, body, cell id) of each `%%step` cell, in notebook order."""
    out = []
    for cell in cells:
        first, _, body = cell["source"].partition("\n")
        if first.startswith("%%step"):
            out.append((first[len("%%step") :].strip(), body, cell.get("id")))
    return out


def show(engine, explicit: str | None) -> Plan:
    found = notebookfile.locate(engine.shell, explicit)
    cells = found.cells if found.path is None else notebookfile.code_cells(found.path)
    rows = make(engine, step_cells(cells))
    stale = engine.staleness()
    for row in rows:
        row.stale = stale.get((row.step, row.cell_id)) or stale.get((row.step, None))
    return Plan(rows, found.note)


def make(engine, cells: list[tuple[str, str, str | None]]) -> list[PlanRow]:
    known: dict[str, str | None] = {}  # name -> digest from earlier steps (None: unknown)
    producer: dict[str, str] = {}
    rows = []
    for line, body, cell_id in cells:
        try:
            args = stepargs.parse(line)
        except UsageError as err:
            raise UsageError(
                f"%step plan: a cell has a bad %%step line {line!r} ({err})."
            ) from None
        info = stepcode.of(engine.shell, engine.transform(body)).info
        name = args.name or info.default_name()
        row, bound = _plan_step(engine, name, args, info, known, producer)
        row.cell_id = cell_id
        rows.append(row)
        for n, d in bound.items():
            known[n] = d
            producer[n] = name
    return rows


def _plan_step(engine, name, args, info, known, producer):
    unknown_bound = {n: None for n in info.binds}
    if args.effect:
        return PlanRow(name, "effect", "effects always run"), unknown_bound
    digests: dict[str, str] = {}
    for n in inputs.candidates(info.reads, args.ignore):
        if n in known:  # bound by an earlier step of the plan
            if known[n] is None:
                return PlanRow(
                    name, "run", f"input {n} comes from step {producer[n]}, which runs"
                ), unknown_bound
            digests[n] = known[n]
        elif inputs.is_input(n, engine.ns, engine.hidden):
            try:
                digests[n] = Hasher(engine.ns).value_digest(engine.ns[n], n)
            except Unhashable:
                return PlanRow(name, "run", f"input {n} cannot be hashed"), unknown_bound
    found = _matching_entry(engine, name, info, args, digests)
    if found is None:
        return PlanRow(name, "run", _why_not(engine, name, info, args, digests)), unknown_bound
    return PlanRow(name, "serve", ""), {b["name"]: b["digest"] for b in found["bindings"]}


def _matching_entry(engine, name, info, args, digests) -> dict | None:
    """The latest entry of `name` that Run All would serve: the same code, --version,
    input digests, package versions and --deps files, and valid in this run."""
    code = step_key.code_id(info.normalised)
    for k in reversed(engine.store.history(name)):
        try:
            e = engine.store.get_entry(k)
        except StoreError:  # an entry that fails authentication is never served
            log.debug("entry %s of %s skipped", k[:12], name, exc_info=True)
            continue
        if e is None:
            continue
        pre = e.get("preimage", {})
        if pre.get("code") != code or pre.get("version") != args.version:
            continue
        if pre.get("inputs") != digests or not _same_env(pre.get("env", {})):
            continue
        try:
            if args.deps and step_key.deps_digests(args.deps) != pre.get("deps"):
                continue
        except (OSError, KeyComponentError, MissingDeps):
            continue
        if entry.invalid_reason(e, engine.run) is None:
            return e
    return None


def _same_env(env: dict) -> bool:
    """Whether Python and the packages an entry's key reached have its versions still."""
    if env.get("python") != step_key.PYTHON:
        return False
    return all(versions.module_version(m) == v for m, v in env.items() if m != "python")


def _why_not(engine, name, info, args, digests) -> str:
    preimage = {
        "code": step_key.code_id(info.normalised),
        "version": args.version,
        "inputs": digests,
    }
    old = why.nearest_entry(engine.store, name)
    if old is None:
        return "new step"
    old_pre = {k: old.get("preimage", {}).get(k) for k in ("code", "version", "inputs")}
    reason = why.miss_reason_between(old_pre, preimage)
    return reason or "package, file or run parameter changed"
