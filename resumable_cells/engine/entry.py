"""An entry: what a pure step's live run leaves under its key, and how a hit puts it back.

Built from a live run (`build`): each value the step bound, stored by its digest (small
ones inline), the names it deleted, its captured outputs, its result (or the result's
display when the value cannot be stored), the files it read with their digests, the run
parameters it used, the key's preimage and the cell's source. Valid (`invalid_reason`,
which `%step plan` asks too) while it is younger than the step's `--ttl`, those files
are unchanged and the run's epoch and seed are the ones it used. Restored (`load`,
then `apply`) by binding its values, deleting its names and replaying its outputs in
order (figures after the cell, as the inline backend shows them).
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
from ..errors import Unhashable, Unstorable
from ..hashing import key as step_key
from ..hashing.values import Hasher
from ..ipython import capture, figures
from ..storage.store import Store
from . import roundtrip
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


def build(run: LiveRun, store: Store, digests: Digests, display: Callable[[Any], dict]) -> dict:
    """Store the run's values and return its entry (not yet put under its key). Raises
    Unstorable, Unhashable, KeyComponentError, or the store's errors. `display(result)`
    gives the mime bundle of a result that cannot be stored as a value."""
    ns = digests.ns
    bindings = []
    for name in run.bound:
        value = ns[name]
        d = digests.of(name)
        tname, size = step_key.describe(value)
        bindings.append(
            {**store.put_value(d, value, name, roundtrip.checker(d, ns, name)),
             "name": name, "digest": d, "type": tname,
             "size": size, "callable": callable(value) and isinstance(value, type | types.FunctionType)}
        )  # fmt: skip
    out_list = list(run.outputs)
    out_ref = store.put_value(
        Hasher(ns).value_digest(repr(out_list), "outputs"), out_list, "outputs"
    )
    return {
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
def load(entry: dict, store: Store, ns: dict) -> dict:
    """The entry's values (and `__outputs__`, `__result__`). Classes and functions are
    bound into `ns` as they load: instances in later blobs refer to them by name.
    Raises whatever a damaged or missing blob raises."""
    values = {}
    for b in sorted(entry["bindings"], key=lambda b: not b.get("callable", False)):
        values[b["name"]] = store.get_value(b)
        if b.get("callable"):
            ns[b["name"]] = values[b["name"]]
    values["__outputs__"] = store.get_value(entry["outputs"])
    if entry.get("result"):
        values["__result__"] = store.get_value(entry["result"])
    return values


def apply(entry: dict, values: dict, ns: dict, shell) -> tuple[Any, bool]:
    """Bind the values, delete the names the run deleted, replay the outputs. Returns
    (the result to display, whether a stream was written)."""
    if entry.get("inline_backend"):  # restored figures show as images, as they did
        figures.activate(shell)
    for b in entry["bindings"]:
        ns[b["name"]] = values[b["name"]]
    for n in entry.get("deleted", []):
        ns.pop(n, None)
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
