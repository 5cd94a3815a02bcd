"""`%step plan`: what Run All would serve and what it would run, without running.

Walks the notebook's step cells in order. A step is served when an entry of it matches
its code, its inputs' digests, its --deps files, the package versions and the run
parameters it used; the names a served step binds take the digests stored in its entry.
Names bound by a step that runs are unknown until it has run, so the plan is
conservative: a step after one that runs is listed as running, although it may still
be served if the re-run produces the same values (early cutoff).
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass

from IPython.core.error import UsageError

from ..engine import entry, inputs, runs, stepcode
from ..errors import KeyComponentError, MissingDeps, StoreError, Unhashable
from ..hashing import key as step_key
from ..hashing import versions
from ..hashing.values import Hasher
from ..records import why
from . import stepargs

log = logging.getLogger(__name__)


@dataclass
class PlanRow:
    step: str
    action: str  # serve | run | effect
    reason: str

    def line(self) -> str:
        return f"{self.action:6s} {self.step}" + (f"  ({self.reason})" if self.reason else "")


class Plan:
    def __init__(self, rows: list[PlanRow]):
        self.rows = rows

    def __repr__(self) -> str:
        serve = sum(r.action == "serve" for r in self.rows)
        lines = [r.line() for r in self.rows]
        lines.append(f"{serve} served, {len(self.rows) - serve} run")
        return "\n".join(lines)


def notebook_path(engine, explicit: str | None) -> str:
    candidates = [explicit] if explicit else []
    session = runs.session_path(engine.ns)
    if not explicit and session:
        candidates += [session, os.path.join(os.getcwd(), os.path.basename(session))]
    for c in candidates:
        if c and os.path.isfile(c):
            return c
    if explicit:
        raise UsageError(f"%step plan: no notebook at {explicit!r}.")
    raise UsageError(
        "%step plan: this kernel does not know its notebook file; "
        "give it with `%step plan --notebook PATH`."
    )


def step_cells(path: str) -> list[tuple[str, str]]:
    """(magic line, body) of each `%%step` cell, in notebook order."""
    try:
        with open(path, encoding="utf-8") as f:
            nb = json.load(f)
    except (OSError, ValueError) as err:
        raise UsageError(f"%step plan: cannot read {path} ({err}).") from None
    out = []
    for cell in nb.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        src = cell.get("source", "")
        src = "".join(src) if isinstance(src, list) else src
        first, _, body = src.partition("\n")
        if first.startswith("%%step"):
            out.append((first[len("%%step") :].strip(), body))
    return out


def show(engine, explicit: str | None) -> Plan:
    return Plan(make(engine, step_cells(notebook_path(engine, explicit))))


def make(engine, cells: list[tuple[str, str]]) -> list[PlanRow]:
    known: dict[str, str | None] = {}  # name -> digest from earlier steps (None: unknown)
    producer: dict[str, str] = {}
    rows = []
    for line, body in cells:
        try:
            args = stepargs.parse(line)
        except UsageError as err:
            raise UsageError(
                f"%step plan: a cell has a bad %%step line {line!r} ({err})."
            ) from None
        info = stepcode.of(engine.shell, engine.transform(body)).info
        name = args.name or info.default_name()
        row, bound = _plan_step(engine, name, args, info, known, producer)
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
                    name, "run", f"input {n} comes from {producer[n]}, which runs"
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
