"""An entry: what a pure step's live run leaves under its key, and how a hit puts it back.

Built from a live run (`build`): each value the step bound, stored by its digest (small
ones inline) or, when values share objects, in the entry's unit (`sharing` plans which,
`unit` stores it), the names it deleted, the process state it changed
(`process_state`), its captured outputs, its result (or the result's display when the
value cannot be stored), the files it read with their digests, the run parameters it
used, the key's preimage and the cell's source. A binding is `inplace` when the value
is given to the object the name already holds, `unit` when the unit binds or changes
it, `seen` when the name was not bound but its object changed with the step. Valid
(`invalid_reason`, which `%step plan` asks too) while it is younger than the step's
`--ttl`, those files are unchanged and the run's epoch and seed are the ones it used.
Restored (`load`, then `apply`) by restoring objects in place, binding its values,
deleting its names, setting the process state again and replaying its outputs in order
(figures after the cell, as the inline backend shows them).
"""

from __future__ import annotations

import io
import re
import time
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import formatting
from ..errors import Unfaithful, Unhashable, Unstorable
from ..hashing import key as step_key
from ..hashing.values import Hasher
from ..ipython import capture, figures
from ..storage.store import Store
from . import inplace, loadback, modattrs, orphans, process_state, roundtrip, sharing, unit, whole
from .runs import Run

_IPYTHON_NAMES = re.compile(r"^(_+|_i+|_i?\d+|_ii+|In|Out|exit|quit|get_ipython|_oh|_ih|_dh)$")
_DESCRIBED = ("name", "type", "size", "digest")


# -- after a live run ---------------------------------------------------------------------
class Digests:
    """Digests of the namespace's values after a live run, each computed once: the
    mutation check, the entry and the record all need them, and a frame is worth
    hashing once."""

    def __init__(self, ns: dict):
        self.ns = ns
        self._done: dict[str, str] = {}

    def of(self, name: str) -> str:
        """The digest of `name`'s value. Raises Unhashable."""
        if name not in self._done:
            self._done[name] = Hasher(self.ns).value_digest(self.ns[name], name)
        return self._done[name]

    def describe(self, names: list[str]) -> list[dict]:
        """Name, type, size and digest (None when unhashable) of each, for the record."""
        out = []
        for n in names:
            tname, size = step_key.describe(self.ns[n])
            try:
                d = self.of(n)
            except Unhashable:
                d = None
            out.append({"name": n, "type": tname, "size": size, "digest": d})
        return out


def changes(
    ns: dict, before: dict[str, int], static_binds: tuple[str, ...], inputs: dict, digests: Digests
) -> tuple[list[str], list[str]]:
    """(names bound, names deleted) by a run that started with `before` (name -> id of
    its value): names rebound or statically bound, and the inputs (name -> digest before
    the run) it mutated in place (`df.dropna(inplace=True)`)."""
    static = set(static_binds)
    bound = [
        k
        for k, v in ns.items()
        if (before.get(k) != id(v) or k in static) and _user_name(k) and not _spent_handle(v)
    ]
    deleted = [k for k in before if k not in ns and _user_name(k)]
    for name, old in inputs.items():
        if name in ns and name not in bound:
            try:
                new = digests.of(name)
            except Unhashable:
                continue
            if new != old:
                bound.append(name)
    return bound, deleted


def _spent_handle(value: Any) -> bool:
    """A closed file (the `f` of `with open(...) as f`): nothing to restore."""
    return isinstance(value, io.IOBase) and value.closed


def _user_name(name: str) -> bool:
    return not name.startswith("__") and not _IPYTHON_NAMES.match(name)


# -- building -----------------------------------------------------------------------------
@dataclass
class LiveRun:
    """What a live run of a pure step left, for its entry."""

    name: str
    cell: str
    key: step_key.Key
    bound: list[str]
    deleted: list[str]
    outputs: list
    result: Any
    params: dict  # run parameters used: epoch, seed
    reads: set[str]  # files read
    duration: float
    inline_backend: bool = False  # matplotlib's inline backend was loaded after the run


def build(
    run: LiveRun,
    store: Store,
    digests: Digests,
    display: Callable[[Any], dict],
    plan: sharing.Plan | None = None,
    state: list | None = None,
) -> dict:
    """Store the run's values and return its entry (not yet put under its key). Raises
    Unstorable, Unhashable, KeyComponentError, Unfaithful, or the store's errors.
    `display(result)` gives the mime bundle of a result that cannot be stored as a
    value; `plan` says how names are stored (all alone without one); `state` is the
    process state the step changed (`process_state.changes`)."""
    ns = digests.ns
    plan = plan or sharing.Plan(alone=list(run.bound))
    bindings = [_binding(name, plan, store, digests) for name in run.bound]
    extra = [n for n in plan.unit_bind if n not in run.bound]
    bindings += [_binding(name, plan, store, digests) for name in extra]
    bindings += [{**_row(name, digests), "seen": True} for name in plan.seen]
    for name, value in modattrs.values(plan.modules).items():
        tname, size = step_key.describe(value)
        d = Hasher(ns).value_digest(value, name)
        bindings.append({"name": name, "digest": d, "type": tname, "size": size, "unit": True})
    out_list = list(run.outputs)
    out_ref = store.put_value(
        Hasher(ns).value_digest(repr(out_list), "outputs"), out_list, "outputs"
    )
    built = {
        "step": run.name,
        "created": time.time(),
        "duration_s": run.duration,
        "bindings": bindings,
        "deleted": run.deleted,
        "outputs": out_ref,
        "result": _result_ref(run.result, store, ns, display),
        "files": [{"path": p, "digest": step_key.file_digest(p)} for p in sorted(run.reads)],
        "params": run.params,
        "inline_backend": run.inline_backend,
        "preimage": run.key.preimage,
        "source": run.cell,
    }
    if plan.has_unit:
        built["shared"] = loadback.put(plan, store)
        names = whole.needed(plan, built["shared"])
        kept = whole.put(plan, store, names) if names else None
        if kept:
            built["shared"]["whole"] = kept
    if state:
        built["state"] = store.put_value(
            Hasher(ns).value_digest(repr(state), "state"), state, "process state"
        )
    return built


def _row(name: str, digests: Digests) -> dict:
    tname, size = step_key.describe(digests.ns[name])
    return {"name": name, "digest": digests.of(name), "type": tname, "size": size}


def _binding(name: str, plan: sharing.Plan, store: Store, digests: Digests) -> dict:
    """A bound name's row: its value stored alone (bound, or restored `inplace`), or
    in the unit."""
    row = _row(name, digests)
    if name in plan.alone:
        value = digests.ns[name]
        row["callable"] = callable(value) and isinstance(value, type | types.FunctionType)
    elif name in plan.alone_inplace:
        row["inplace"] = True
    else:
        return {**row, "unit": True}
    check = roundtrip.checker(row["digest"], digests.ns, name)
    return {**store.put_value(row["digest"], digests.ns[name], name, check), **row}


def _result_ref(result: Any, store: Store, ns: dict, display: Callable[[Any], dict]):
    if result is None:
        return None
    try:
        d = Hasher(ns).value_digest(result, "result")
        check = roundtrip.checker(d, ns, "the cell's result")
        return store.put_value(d, result, "the cell's result", check)
    except (Unstorable, Unhashable):
        bundle = display(result)
        d = Hasher(ns).value_digest(repr(bundle), "result")
        return {**store.put_value(d, bundle, "the cell's result"), "bundle": True}


def described(entry: dict) -> list[dict]:
    """Name, type, size and digest of each value the entry binds, for the record."""
    return [{k: b[k] for k in _DESCRIBED} for b in entry["bindings"]]


# -- validity -----------------------------------------------------------------------------
def invalid_reason(entry: dict, run: Run, ttl: float | None = None) -> str | None:
    """Why `entry` cannot be served in `run` (older than the step's `--ttl` in seconds,
    a file it read changed or is gone, the run's epoch or seed it used changed), or
    None when it can."""
    if ttl is not None:
        age = time.time() - entry.get("created", 0.0)
        if age > ttl:
            return f"expired (computed {formatting.age(age)} ago, ttl {formatting.age(ttl)})"
    for f in entry.get("files", []):
        try:
            if step_key.file_digest(f["path"]) != f["digest"]:
                return f"{f['path']} changed"
        except OSError:
            return f"{f['path']} is gone"
    params = entry.get("params", {})
    if "epoch" in params and params["epoch"] != run.epoch:
        return "run epoch changed"
    if "seed" in params and params["seed"] != run.seed:
        return "run seed changed"
    return None


# -- restoring ----------------------------------------------------------------------------
def load(entry: dict, store: Store, ns: dict, hidden: dict | None = None) -> dict:
    """The entry's values (and `__outputs__`, `__result__`, `__shared__`, `__state__`).
    Classes and functions are bound into `ns` as they load: instances in later blobs
    refer to them by name. Raises Unfaithful when an object the entry refers to is not
    where it was, or cannot take its stored state in place (nothing else is changed
    then), and whatever a damaged or missing blob raises."""
    shared = entry.get("shared")
    roots = unit.roots_of(shared, ns) if shared else {}  # before anything is bound
    kept = shared.get("whole") if shared else None
    kept_roots = whole.roots_of(kept, ns) if kept else None
    values = {}
    stored = [b for b in entry["bindings"] if "blob" in b]
    for b in sorted(stored, key=lambda b: not b.get("callable", False)):
        values[b["name"]] = store.get_value(b)
        if b.get("callable"):
            ns[b["name"]] = values[b["name"]]
    if shared:
        values["__shared__"] = _shared(shared, store, roots, ns, hidden or {}, kept_roots)
    _check_inplace(entry, values, ns)
    if entry.get("state"):
        values["__state__"] = store.get_value(entry["state"])
    values["__outputs__"] = store.get_value(entry["outputs"])
    if entry.get("result"):
        values["__result__"] = store.get_value(entry["result"])
    return values


def _shared(ref: dict, store: Store, roots: dict, ns: dict, hidden: dict, kept_roots) -> dict:
    """The unit's payload; where its references lead nowhere or what it replaces is held
    elsewhere, the one with its changed inputs whole (`whole.py`), when the entry has
    one and nothing else holds them."""
    try:
        payload = unit.load(ref, store, roots)
        orphans.check(unit.orphans_of(payload, roots), payload, ns, hidden, (roots,))
        return payload
    except Unfaithful as err:
        if kept_roots is None:
            raise
        failed = Unfaithful(err.name, err.why, err.way_out)  # (without the traceback,
        # whose frames hold the failed load's objects: they would count as holders)
    payload = None  # (what it held, to be collected)
    try:  # outside the handler: the failed load's frames are garbage by now
        return whole.load(ref["whole"], store, kept_roots, ns, hidden, (roots,))
    except Unfaithful as err:
        why = f"{failed.why}; nor whole, as {err.name} is not alone: {err.why}"
        raise Unfaithful(failed.name, why, err.way_out) from None


def _check_inplace(entry: dict, values: dict, ns: dict) -> None:
    pairs = [(ns.get(b["name"]), values[b["name"]]) for b in entry["bindings"] if b.get("inplace")]
    pairs += values["__shared__"]["inplace"] if "__shared__" in values else []
    for target, fresh in pairs:
        problem = inplace.problem(target, fresh)
        if problem:
            raise Unfaithful(type(target).__name__, problem)


def apply(
    entry: dict, values: dict, ns: dict, shell, warn: Callable[[str], None] = print
) -> tuple[Any, bool]:
    """Restore objects in place and bind the values, delete the names the run deleted,
    set the process state it changed (`warn` says what could not be), replay the
    outputs. Returns (the result to display, whether a stream was written)."""
    if "__shared__" in values:
        unit.apply(values["__shared__"], ns)
    if entry.get("inline_backend"):  # restored figures show as images, as they did
        figures.activate(shell)
    for b in entry["bindings"]:
        if "blob" not in b:
            continue
        if b.get("inplace"):
            inplace.restore(ns[b["name"]], values[b["name"]])
        else:
            ns[b["name"]] = values[b["name"]]
    for n in entry.get("deleted", []):
        ns.pop(n, None)
    for problem in process_state.apply(values.get("__state__", [])):
        warn(problem)
    outputs = values["__outputs__"]
    capture.replay(shell, outputs)
    figures.show_after_cell(shell, outputs)
    wrote = any(o[0] == "stream" for o in outputs)
    res = entry.get("result")
    if res is None:
        return None, wrote
    value = values["__result__"]
    return (Replayed(value) if res.get("bundle") else value), wrote


class Replayed:
    """The display of a result that could not be stored as a value."""

    def __init__(self, bundle: dict):
        self._bundle = bundle

    def _repr_mimebundle_(self, include=None, exclude=None):
        return self._bundle
