"""A notebook without a kernel: a namespace dict stands in for the kernel's, and each
`%%step` cell is keyed, run live and kept, or served from what was kept, through the
engine's object core, called as `engine/execution.py`, `keep/build.py` and
`restore/load.py` + `restore/apply.py` call it (less the record, the outputs, the
process state and the shell).

`Notebook.replay(cells, probe)` is the kernel tests' check (`tests/replay.py`) in this
process: the cells run live, then in a new namespace (a restarted kernel: the plain cells
run again, so the inputs are equal but new objects) where every step must be served;
it returns what `repr(probe)` gave after each pass."""

from __future__ import annotations

import sys
import types
from collections import ChainMap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from resumable_cells.engine.code import analysis, inputs
from resumable_cells.engine.keep import changes, sharing, unit_check, value_check
from resumable_cells.engine.objects import inplace, objgraph
from resumable_cells.engine.objects.identities import Identities
from resumable_cells.engine.restore import load
from resumable_cells.engine.units import byvalue, replaced, stream
from resumable_cells.engine.units.layout import StoragePlan
from resumable_cells.errors import Unfaithful, Unstorable
from resumable_cells.hashing import key as step_key
from resumable_cells.hashing.values import Hasher
from resumable_cells.storage import serialize
from resumable_cells.storage.entries import Stream, Value
from resumable_cells.storage.store import FORMAT_VERSION, Store

STEP = "%%step"


@dataclass
class Kept:
    """What a live run's entry holds, as `keep/build.py` stores it."""

    bound: list[str]
    deleted: list[str]
    values: dict[str, Value]  # stored alone, by name (classes and functions first)
    inplace: list[str]  # of those, the ones given to the name's object in place
    code: list[str] = field(default_factory=list)  # of the others, classes and functions
    unit: Stream | None = None
    whole: Stream | None = None  # the unit's changed inputs kept whole (`byvalue`)


@dataclass
class Live:
    """The last live run, for the tests that look at its plan (dropped before a hit is
    served: its graphs hold the inputs' objects, which would count as their holders)."""

    pre: sharing.InputSnapshot
    changed: changes.Changes
    plan: StoragePlan | None = None


@dataclass
class Notebook:
    """A namespace and the entries of its steps (the store holds their values)."""

    store: Store
    ns: dict = field(default_factory=dict)
    entries: dict[str, Kept] = field(default_factory=dict)  # key address -> entry
    notes: dict[str, str] = field(default_factory=dict)  # step -> why it was not cached
    misses: dict[str, str] = field(default_factory=dict)  # step -> why a hit was refused
    last: Live | None = None
    modules: tuple[str, ...] = ()  # the notebook's own modules, forgotten on a restart

    def __post_init__(self) -> None:
        self.restart()

    def restart(self) -> None:
        """A new kernel: an empty namespace (the entries and the store stay)."""
        self.ns = {"__name__": "__main__"}
        serialize.set_main_namespace(self.ns)
        for m in self.modules:
            sys.modules.pop(m, None)

    def run(self, cell: str) -> str | None:
        """Run a plain cell, or a step ('served' or 'ran')."""
        if cell.startswith(STEP):
            return self.step(cell)
        exec(cell, self.ns)
        return None

    def replay(self, cells: list[str], probe: str | Callable[[dict], str]) -> tuple[str, str]:
        """(the repr of `probe`, an expression, after the cells ran live, the same
        after a restart and the same cells again); asserts that every step of the
        second pass was served. A callable probe is given the namespace."""
        look = probe if callable(probe) else lambda ns: repr(eval(probe, ns))
        for c in cells:
            self.run(c)
        live = look(self.ns)
        self.restart()
        for c in cells:
            status = self.run(c)
            assert status in (None, "served"), (c, self.notes, self.misses)
        return live, look(self.ns)

    # -- a step ------------------------------------------------------------------------
    def step(self, cell: str) -> str:
        head, _, body = cell.partition("\n")
        name = head.removeprefix(STEP).strip()
        info = analysis.analyse(body)
        key, _ = step_key.compute(
            format_version=FORMAT_VERSION,
            step=name,
            normalised=info.normalised,
            version_tag=None,
            ns=self.ns,
            deps=[],
            **inputs.of_cell(info, (), self.ns, {}),
        )
        kept = self.entries.get(key.address)
        self.last = None
        if kept is not None:
            try:
                self.serve(kept)
                return "served"
            except Unfaithful as err:  # the hit is a miss: the step runs live
                self.misses[name] = f"{err.name}: {err.why}"
        self.live(name, body, key, info)
        return "ran"

    def live(self, name: str, body: str, key: step_key.Key, info: analysis.CellInfo) -> None:
        ns = self.ns
        before = Identities(ns)
        pre = sharing.before(ns, key.digests, info.imports.values())
        exec(body, ns)
        digests = changes.Digests(ns)
        changed = changes.of_run(ns, before, info.binds, pre.values, key.digests, digests)
        self.last = Live(pre, changed)
        try:
            plan = sharing.analyse(pre, ns, changed.bound, changed.inputs, {})
            self.last.plan = plan
            kept = self.keep(plan, changed, digests)
        except (Unfaithful, Unstorable) as err:
            self.notes[name] = f"{err.name}: {err.why}"
            return
        self.notes.pop(name, None)
        self.entries[key.address] = kept

    def keep(self, plan: StoragePlan, changed: changes.Changes, digests: changes.Digests) -> Kept:
        """Store the run's values as `build.build` does."""
        ns, store = self.ns, self.store
        kept = Kept(list(changed.bound), list(changed.deleted), {}, [])
        for name in sorted(changed.bound, key=lambda n: not _code(ns[n])):
            if name in plan.alone or name in plan.alone_inplace:
                d = digests.of(name)
                check = value_check.checker(d, ns, name)
                kept.values[name] = store.put_value(d, ns[name], name, check)
                if name in plan.alone_inplace:
                    kept.inplace.append(name)
                elif _code(ns[name]):
                    kept.code.append(name)
        if plan.has_unit:
            kept.unit = unit_check.put(plan, store)
            names = byvalue.needed(plan, kept.unit)
            kept.whole = unit_check.put_whole(plan, store, names) if names else None
        return kept

    def serve(self, kept: Kept) -> None:
        """Load every value and check it, then apply them (`restore/load.py`,
        `restore/apply.py`). Raises Unfaithful with nothing changed but the classes and
        functions bound as they load."""
        ns, store = self.ns, self.store
        roots = stream.roots_of(kept.unit, ns) if kept.unit else {}
        whole_roots = byvalue.roots_of(kept.whole, ns) if kept.whole else None
        values, before = {}, {}
        for name, ref in kept.values.items():  # (classes and functions first)
            values[name] = store.get_value(ref)
            if name in kept.code:  # bound as they load: later values refer to them
                if name in ns:
                    before.setdefault(name, ns[name])
                ns[name] = values[name]
        payload = self._unit(kept, roots, whole_roots, before) if kept.unit else None
        for target, fresh in [(ns.get(n), values[n]) for n in kept.inplace]:
            problem = inplace.problem(target, fresh)
            if problem:
                raise Unfaithful(type(target).__name__, problem)
        if payload is not None:
            stream.apply(payload, ns)
        for name, value in values.items():
            if name in kept.inplace:
                inplace.restore(ns[name], value)
            else:
                ns[name] = value
        for name in kept.deleted:
            ns.pop(name, None)

    def _unit(self, kept: Kept, roots: dict, whole_roots: tuple | None, before: dict) -> dict:
        ns, store = self.ns, self.store
        was = ChainMap(before, ns)
        try:
            payload = stream.load(kept.unit, store, roots)
            stream.unalias(payload, roots, was)
            ours = (roots, before, *(whole_roots or ()))
            replaced.check(stream.replaced_by(payload, roots, was), payload, ns, {}, ours)
            load.check_payload(payload, ns)
            return payload
        except Unfaithful:
            if kept.whole is None:
                raise
        payload = None
        payload = byvalue.load(kept.whole, store, whole_roots, ns, {}, (roots, before), was)
        load.check_payload(payload, ns)
        return payload


def plan_of(
    ns: dict, reads: list[str], cell: str, hidden: dict | None = None, limit: int | None = None
) -> tuple[changes.Changes, StoragePlan]:
    """(changes, plan) of running `cell` in `ns` as a step whose inputs are `reads`
    (given, not found by the key): the inputs walked before, the run, its changes and
    the analysis."""
    key = {n: Hasher(ns).value_digest(objgraph.lookup(ns, n), n) for n in reads}
    before = Identities(ns)
    pre = sharing.before(ns, reads, limit=limit)
    exec(cell, ns)
    info = analysis.analyse(cell)
    changed = changes.of_run(
        ns, before, info.binds, pre.values, key, changes.Digests(ns), pre.graph
    )
    return changed, sharing.analyse(pre, ns, changed.bound, changed.inputs, hidden or {})


def _code(value: Any) -> bool:
    return isinstance(value, (type, types.FunctionType))
