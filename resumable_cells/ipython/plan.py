"""`%step plan`: what Run All would serve and what it would run, without running.

Walks the notebook's step cells in order. A step is served when an entry of it matches
its code, its inputs' digests (selected as the engine selects them: `engine.inputs`,
`hashing.reach`), its --deps files, the package versions, the source of the local
modules and the run parameters it used; the names a served step binds take the digests
stored in its entry.
Names bound by a step that runs are unknown until it has run, so the plan is
conservative: a step after one that runs is listed as running, although it may still
be served if the re-run produces the same values (early cutoff).
"""

from __future__ import annotations

import html
import logging

import msgspec
from IPython.core.error import UsageError

from ..engine.code import inputs, step_code
from ..engine.restore import validity
from ..errors import KeyComponentError, StoreError, Unhashable
from ..hashing import key as step_key
from ..hashing import reach
from ..hashing.values import Hasher
from ..records import why
from ..storage.entries import Entry
from . import auto, notebookfile, stepargs
from . import plan_plain as plain

log = logging.getLogger(__name__)


class PlanRow(msgspec.Struct):
    step: str
    action: str  # serve | run | effect
    reason: str
    cell_id: str | None = None
    stale: str | None = None  # why this cell's last result is out of date (staleness)
    keyed: bool = True  # False: it has no key (an input cannot be hashed), so it always runs
    reads: frozenset[str] = frozenset()  # the names its key reads (through functions too)

    def why(self) -> str:
        if self.stale:  # the panel's and `%step status`'s words, from the same function
            if self.action == "serve":
                return f"stale: {self.stale}; an entry for the current inputs exists"
            return f"stale: {self.stale}" + (f"; {self.reason}" if self.reason else "")
        return self.reason

    def line(self) -> str:
        why = self.why()
        return f"{self.action:6s} {self.step}" + (f"  ({why})" if why else "")


class Plan:
    """`%step plan`: plain text in any frontend, a table where HTML renders (an
    nbconvert export, VS Code, JupyterLab)."""

    def __init__(self, rows: list[PlanRow], note: str = ""):
        self.rows = rows
        self.note = note

    def summary(self) -> str:
        serve = sum(r.action == "serve" for r in self.rows)
        return f"{serve} served, {len(self.rows) - serve} run"

    def __repr__(self) -> str:
        lines = [f"({self.note})"] if self.note else []
        lines += [r.line() for r in self.rows]
        lines.append(self.summary())
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        esc = html.escape
        note = f"<div>({esc(self.note)})</div>" if self.note else ""
        td = '<td style="text-align: left">'
        body = "".join(
            f'<tr data-action="{esc(r.action)}">{td}{esc(r.action)}</td>{td}{esc(r.step)}</td>'
            f"{td}{esc(r.why())}</td></tr>"
            for r in self.rows
        )
        th = "".join(f'<th style="text-align: left">{c}</th>' for c in ("action", "step", "why"))
        return (
            f'<div class="rc-plan">{note}<table><thead><tr>{th}</tr></thead>'
            f"<tbody>{body}</tbody></table><div>{esc(self.summary())}</div></div>"
        )


def plan_cells(engine, cells: list[dict]) -> list[tuple[str | None, str, str | None]]:
    """(the `%%step` line, None for a plain cell; the body; the cell id) of each code
    cell, in notebook order. In auto mode a cell it would wrap is a step."""
    mode = auto.of(engine)
    out: list[tuple[str | None, str, str | None]] = []
    for cell in cells:
        source = cell["source"]
        first, _, body = source.partition("\n")
        if first.startswith("%%step"):
            out.append((first[len("%%step") :].strip(), body, cell.get("id")))
        elif mode is not None and mode.on and auto.wraps(source):
            out.append(("--auto", source, cell.get("id")))
        elif source.strip():
            out.append((None, source, cell.get("id")))
    return out


class Walk(msgspec.Struct):
    """The plan of a notebook's cells, and the plain cells Run All's result depends on
    that this kernel has not run with their code (a parameter cell edited since)."""

    rows: list[PlanRow]
    plain_needed: set[str]  # cell ids
    ran: set[str]  # the cells this kernel ran, as typed (stripped)


def show(engine, explicit: str | None) -> Plan:
    sent = None if explicit else notebookfile.sent_cells(engine.shell)
    cells: list[dict] | None
    if sent is not None:
        cells, note = sent, ""
    else:
        found = notebookfile.locate(engine.shell, explicit)
        cells = found.cells if found.path is None else notebookfile.code_cells(found.path)
        note = found.note
    assert cells is not None  # `locate` gives the cells whenever it gives no file
    rows = make(engine, plan_cells(engine, cells))
    _mark_stale(engine, rows)
    return Plan(rows, note)


def _mark_stale(engine, rows: list[PlanRow]) -> None:
    stale = engine.staleness()
    for row in rows:
        row.stale = stale.get((row.step, row.cell_id)) or stale.get((row.step, None))


def stale_cells(engine, cells: list[dict]) -> list[str]:
    """The panel's "Run stale": the ids of the cells to run, in notebook order. The
    plan's own answer to "what will Run All do", kept to what
    is out of date: a step the plan runs (a cell whose key cannot be taken only when
    this kernel has not run its code), a step whose last result is stale (an entry for
    its current inputs may serve it), and a plain cell this kernel has not run with its
    code that binds a name such a step reads (`ridge = 20.0` edited, not run yet)."""
    walked = walk(engine, plan_cells(engine, cells))
    _mark_stale(engine, walked.rows)
    ran = walked.ran
    source = {c.get("id"): c["source"].strip() for c in cells}
    chosen = set(walked.plain_needed)
    for row in walked.rows:
        if row.cell_id is None:
            continue
        if row.stale or (row.action == "run" and (row.keyed or source.get(row.cell_id) not in ran)):
            chosen.add(row.cell_id)
    return [c["id"] for c in cells if c.get("id") in chosen]


def make(engine, cells: list[tuple[str | None, str, str | None]]) -> list[PlanRow]:
    """The plan of `cells` ((the %%step line or None for a plain cell, body, cell id)):
    a row per step cell."""
    return walk(engine, cells).rows


def walk(engine, cells: list[tuple[str | None, str, str | None]]) -> Walk:
    """`make`, and which plain cells not run here bind what a running step reads."""
    # name -> digest from earlier cells (None: unknown); a value a hit left unread
    # counts as bound, with its stored digest
    known: dict[str, str | None] = {n: k.digest for n, k in engine.pending.known().items()}
    producer: dict[str, str] = {}  # name -> "step NAME" / "a plain cell" that binds it
    names = plain.Bound(known)  # what IPython's automagic takes as bound, cell by cell
    modules: dict[str, str] = {}  # alias -> module path, imported by a cell before
    ran = plain.ran_here(engine.shell)
    said = plain.Commands(engine.run)  # what `%step clear` / `%step run --new` cells do
    rows = []
    unran: dict[str, str] = {}  # name -> id of the plain cell not run here that binds it
    needed: set[str] = set()
    for line, body, cell_id in cells:
        if line is None:
            said.read(body)
            for name in plain.simulate(engine, body, ran, names, producer, modules):
                if body.strip() in ran or cell_id is None:
                    unran.pop(name, None)
                else:
                    unran[name] = cell_id
            continue
        try:
            args = stepargs.parse(line)
        except UsageError as err:
            raise UsageError(
                f"%step plan: a cell has a bad %%step line {line!r} ({err})."
            ) from None
        # transformed as Run All will: what earlier cells bind is bound by then
        info = step_code.of(engine.shell, engine.transform(body, names)).info
        names.stars.extend(info.star_imports)
        name = args.name or info.default_name()
        if said.cleared(name):
            row = PlanRow(name, "run", "a cell before it clears its entries")
            bound: dict[str, str | None] = {n: None for n in info.binds}
            said.runs(name)
        else:
            row, bound = _plan_step(engine, name, args, info, known, producer, modules, said.run)
        modules.update(info.imports)
        row.cell_id = cell_id
        rows.append(row)
        if row.action == "run":
            needed.update(unran[n] for n in row.reads | set(info.reads) if n in unran)
        for n in info.binds:
            unran.pop(n, None)
        if row.action != "serve":  # its body runs: a `%step clear` in it too
            said.read(body)
        for n, d in bound.items():
            known[n] = d
            producer[n] = f"step {name}"
    return Walk(rows, needed, ran)


def _plan_step(engine, name, args, info, known, producer, modules, run):
    unknown_bound = {n: None for n in info.binds}
    if args.effect:
        return PlanRow(name, "effect", "effects always run"), unknown_bound
    try:
        digests = _input_digests(engine, info, args, known)
    except KeyComponentError as err:
        reason = f"input {err.path} cannot be hashed" if err.path else str(err).split(",")[0]
        return PlanRow(name, "run", reason, keyed=False), unknown_bound
    for n, d in digests.items():
        if d is None:
            reads = frozenset(n.split(".")[0] for n in digests)
            return PlanRow(
                name, "run", f"input {n} comes from {producer[n]}, which runs", reads=reads
            ), unknown_bound
    current = _Current(engine, known, digests, modules)
    found, invalid = _matching_entry(engine, name, info, args, current, run)
    if found is None:
        reason = invalid or _why_not(engine, name, info, args, current, producer)
        reads = frozenset(n.split(".")[0] for n in current.digests)
        return PlanRow(name, "run", reason, reads=reads), unknown_bound
    return PlanRow(name, "serve", ""), {b.name: b.digest for b in found.bindings}


def _input_digests(engine, info, args, known) -> dict[str, str | None]:
    """The digests of the inputs the engine would select, names bound by earlier steps
    of the plan taking the digests those steps leave. Raises KeyComponentError."""
    untraceable = [f"`{d}`" for d in info.dynamic if not step_key.traceable(f"`{d}`")]
    if untraceable:
        raise step_key.dynamic_error(untraceable)
    ns = engine.ns
    sel = inputs.of_cell(info, args.ignore, ns, engine.hidden)
    names = sel["inputs"] + [
        n for n in inputs.candidates(info.reads, args.ignore) if n in known and n not in ns
    ]
    accept = sel["accept"]
    got = reach.collect(
        ns, names, sel["attributes"], lambda n: n in known or accept(n), step_key.describe,
        known, environ=sel["environ"],
    )  # fmt: skip
    if untraceable := [r for r in got.dynamic if not step_key.traceable(r)]:
        raise step_key.dynamic_error(untraceable)
    digests: dict[str, str | None] = dict(got.digests)  # (`known` ones may be None)
    return digests


class _Current:
    """The digest an input has now: computed for this plan, left by an earlier step of
    it, or read from the namespace (an input an entry lists that the plan did not reach,
    through a function an earlier step binds)."""

    def __init__(self, engine, known: dict, digests: dict, modules: dict[str, str]):
        self.engine, self.known, self.digests = engine, known, dict(digests)
        self.modules = modules
        self.selected = frozenset(digests)  # what the engine's key would hold

    def __call__(self, name: str) -> str | None:
        if name not in self.digests:
            self.digests[name] = self._now(name)
        return self.digests[name]

    def _now(self, name: str) -> str | None:
        ns = self.engine.ns
        if name in self.known:
            return self.known[name]
        value = ns.get(name, reach.MISSING)
        if "." in name:
            ref = reach.ref_of(ns, name) or plain.imported_ref(name, self.modules)
            resolved = ref.resolve() if ref is not None else None
            value = resolved[1] if resolved is not None else reach.MISSING
            if value is reach.MISSING:
                return "missing"
        elif not inputs.is_input(name, ns, self.engine.hidden):
            return None
        try:
            return Hasher(ns).value_digest(value, name)
        except (Unhashable, RecursionError):
            return None


def _matching_entry(
    engine, name, info, args, current: _Current, run
) -> tuple[Entry | None, str | None]:
    """(the latest entry of `name` that Run All would serve: the same code, --version,
    input digests, package versions, local sources and --deps files, and valid in this
    run, or None; why the latest one that matches is not valid (`expired (...)`), or
    None)."""
    invalid = None
    code = step_key.code_id(info.normalised)
    for k in reversed(engine.store.history(name)):
        try:
            e = engine.store.get_entry(k)
        except StoreError:  # an entry that fails authentication is never served
            log.debug("entry %s of %s skipped", k[:12], name, exc_info=True)
            continue
        if e is None:
            continue
        same = step_key.matches(
            e.preimage, code, args.version, current, current.selected, list(args.deps)
        )
        if not same:
            continue
        reason = validity.invalid_reason(e, run, args.ttl, current, settings=False)
        if reason is None:
            return e, None
        invalid = invalid or reason
    return None, invalid


def _why_not(engine, name, info, args, current: _Current, producer: dict) -> str:
    old = why.nearest_entry(engine.store, name)
    if old is None:
        return "new step"
    old_pre = old.preimage
    for n in old_pre.get("inputs", {}):
        if current(n) is None and n in producer:
            return f"input {n} comes from {producer[n]}, which runs"
    preimage = {
        "code": step_key.code_id(info.normalised),
        "version": args.version,
        "inputs": {
            n: d
            for n, d in current.digests.items()
            if d is not None and (n in current.selected or n in old_pre.get("inputs", {}))
        },
        "sources": step_key.sources_now(old_pre) or {},
    }
    old_pre = {k: old_pre.get(k) for k in ("code", "version", "inputs", "sources")}
    reason = why.miss_reason_between(old_pre, preimage)
    return reason or "package, file or run parameter changed"
