"""Building the entry of a pure step's live run: its values stored, its record typed.

Each value the step bound is stored by its digest (small ones inline), or, when values
share objects, in the entry's unit (`sharing` plans which, `units/stream.py` writes it,
`unit_check` checks it); the unit's changed inputs are also kept whole when a library may
lay them out anew (`units/byvalue.py`). Then the names it deleted, the process state it
changed, its captured outputs, its result (or the result's display when the value
cannot be stored), the files it read with their digests, the run parameters it used,
the key's preimage and the cell's source. Each value is loaded back before it is kept
(`value_check`, `unit_check`): what a hit would serve must be what the live run had.
Given a batch (`later`), the large values and units are pickled and checked now but
left to write behind (`storage/deferred.py`), their bytes checked against their digests.
"""

from __future__ import annotations

import pickle
import sys
import time
import types
from collections.abc import Callable
from functools import partial
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypedDict

import msgspec
import xxhash

from ...display.result import Bundle
from ...errors import Unhashable, Unstorable
from ...hashing import key as step_key
from ...hashing import sources
from ...hashing.values import Hasher
from ...storage import serialize
from ...storage.deferred import Batch
from ...storage.entries import Binding, Entry, FileRead, Provenance, Result, Unit, Value
from ...storage.store import Store, inline_value
from ..state import module_attrs
from ..units import byvalue, result_refs
from ..units.layout import StoragePlan
from . import unit_check, value_check
from .changes import Digests

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing's own from Python 3.11


class LiveRun(msgspec.Struct):
    """What a live run of a pure step left, for its entry."""

    name: str
    cell: str
    key: step_key.Key
    bound: list[str]
    deleted: list[str]
    outputs: list[Any]
    result: Any
    params: dict[str, Any]  # run parameters used: epoch, seed; the settings its outputs
    # were shown with (`state/shown.py`: "shown_with")
    reads: set[str]  # files read
    duration: float
    inline_backend: bool = False  # matplotlib's inline backend was loaded after the run
    shown: Bundle | None = None  # the result's MIME bundle as the run showed it
    imports: dict[str, str] = msgspec.field(default_factory=dict)  # alias -> `module.attribute`
    star_imports: tuple[str, ...] = ()  # modules imported with `from module import *`
    trace: dict[str, str] = msgspec.field(default_factory=dict)  # read through eval: name -> digest
    provenance: Provenance | None = None  # who ran it, and which steps bound its inputs


def build(
    run: LiveRun,
    store: Store,
    digests: Digests,
    display: Callable[[Any], dict[str, Any]],
    plan: StoragePlan | None = None,
    state: list[Any] | None = None,
    later: Batch | None = None,
    refs: Imported | None = None,
) -> Entry:
    """Store the run's values and return its entry (not yet put under its key). Raises
    Unstorable, Unhashable, KeyComponentError, Unfaithful, or the store's errors.
    `display(result)` gives the mime bundle of a result that cannot be stored as a
    value; `plan` says how names are stored (all alone without one); `state` is the
    process state the step changed (`process_state.changes`); `later` takes the values
    left to write behind (none without one). A value the step imported from an
    installed module is stored as that module's attribute (`refs`, when the caller
    found them already: `imported`)."""
    with serialize.importing(imported(run, digests.ns) if refs is None else refs):
        return _build(run, Keeping(store, later), digests, display, plan, state)


Imported = dict[int, tuple[Any, str, str]]  # id -> (value, module, attribute)


def imported(run: LiveRun, ns: dict[str, Any]) -> Imported:
    """The bound values that are attributes of installed modules the step imported
    from (id -> (value, module, attribute)): `from sympy import pi` or `*`."""
    found: dict[str, tuple[str, str]] = {}
    for alias, dotted in run.imports.items():
        module, _, attr = dotted.rpartition(".")
        if module:
            found[alias] = (module, attr)
    for module in run.star_imports:
        for name in run.bound:
            found.setdefault(name, (module, name))
    out = {}
    for name, (module, attr) in found.items():
        loaded = sys.modules.get(module)
        value = ns.get(name, _MISSING)
        if loaded is None or sources.is_local_module(module) or isinstance(value, ModuleType):
            continue  # (a module pickles by its name: `import matplotlib.pyplot as plt`)
        if value is not _MISSING and getattr(loaded, attr, _MISSING) is value:
            out[id(value)] = (value, module, attr)
    return out


_MISSING = object()
# A value stored alone whose hit leaves it unread until something reads it: one whose
# read costs more than keeping track of it (below this, a read takes well under 1 ms).
LAZY_MIN_BYTES = 1 << 20


class Keeping(msgspec.Struct, frozen=True):
    """Where the run's values go: the store, and the batch of those written behind."""

    store: Store
    later: Batch | None = None

    def put(
        self,
        digest: str,
        value: Any,
        name: str,
        check: value_check.Check,
        pickled: tuple[bytes, list[pickle.PickleBuffer]] | None = None,
    ) -> Value:
        """Store a value whose digest is `digest` (checked by `check` now; left to
        write behind when large, its bytes checked against `digest` then); `pickled`:
        its pickle, when the caller made it already."""
        return self.store.put_value(
            digest, value, name, check, later=self.later, by_value=True, pickled=pickled
        )


def _build(
    run: LiveRun,
    keep: Keeping,
    digests: Digests,
    display: Callable[[Any], dict[str, Any]],
    plan: StoragePlan | None,
    state: list[Any] | None,
) -> Entry:
    ns, store = digests.ns, keep.store
    plan = plan or StoragePlan(alone=list(run.bound))
    bindings = [_binding(name, plan, keep, digests) for name in run.bound]
    extra = [n for n in plan.unit_bind if n not in run.bound]
    bindings += [_binding(name, plan, keep, digests) for name in extra]
    bindings += [_described(name, digests, seen=True) for name in plan.seen]
    for name, value in module_attrs.values(plan.modules).items():
        tname, size = step_key.describe(value)
        d = Hasher(ns).value_digest(value, name)
        bindings.append(Binding(name, d, tname, size, unit=True))
    out_list = list(run.outputs)
    outputs = store.put_value(
        Hasher(ns).value_digest(repr(out_list), "outputs"), out_list, "outputs"
    )
    result = _result(run.result, run.shown, keep, ns, display, partial(_referrer, run, plan))
    unit = None
    if plan.has_unit:
        stream = unit_check.put(plan, store, digests.of, keep.later)
        names = byvalue.needed(plan, stream)
        whole = unit_check.put_whole(plan, store, names, digests.of, keep.later) if names else None
        unit = Unit(stream, whole)
    stored_state = None
    if state:
        d = Hasher(ns).value_digest(repr(state), "state")
        stored_state = store.put_value(d, state, "process state")
    return Entry(
        step=run.name,
        created=time.time(),
        duration_s=run.duration,
        bindings=bindings,
        deleted=list(run.deleted),
        outputs=outputs,
        result=result,
        files=[FileRead(p, step_key.read_digest(p)) for p in sorted(run.reads)],
        params=dict(run.params),
        inline_backend=run.inline_backend,
        preimage=run.key.preimage,
        source=run.cell,
        unit=unit,
        state=stored_state,
        trace=dict(run.trace),
        provenance=run.provenance,
    )


class _Flags(TypedDict, total=False):
    """A binding's flags (`storage.entries.Binding`)."""

    callable: bool
    inplace: bool
    unit: bool
    seen: bool


def _described(name: str, digests: Digests, **flags: Unpack[_Flags]) -> Binding:
    tname, size = step_key.describe(digests.ns[name])
    return Binding(name, digests.of(name), tname, size, **flags)


def _binding(name: str, plan: StoragePlan, keep: Keeping, digests: Digests) -> Binding:
    """A bound name's row: its value stored alone (bound, or restored in place), or
    in the unit."""
    if name in plan.alone:
        value = digests.ns[name]
        is_code = callable(value) and isinstance(value, type | types.FunctionType)
        return _stored(name, digests, keep, callable=is_code)
    if name in plan.alone_inplace:
        return _stored(name, digests, keep, inplace=True)
    return _described(name, digests, unit=True)


def _stored(name: str, digests: Digests, keep: Keeping, **flags: Unpack[_Flags]) -> Binding:
    row = _described(name, digests, **flags)
    digest = digests.of(name)
    checker = value_check.checker(digest, digests.ns, name)
    pickled = [0]

    def check(value: Any, main: bytes, buffers: list[pickle.PickleBuffer]) -> None:
        pickled[0] = len(main) + sum(memoryview(b).nbytes for b in buffers)
        checker(value, main, buffers)

    stored = keep.put(digest, digests.ns[name], name, check)
    reached = None if any(flags.values()) else digests.data_only(name)
    lazy = reached if pickled[0] >= LAZY_MIN_BYTES else None
    return Binding(
        row.name, row.digest, row.type, row.size,
        value=stored, lazy=lazy, reached=reached, **flags,
    )  # fmt: skip


def _result(
    result: Any,
    shown: Bundle | None,
    keep: Keeping,
    ns: dict[str, Any],
    display: Callable[[Any], dict[str, Any]],
    referring: Callable[[dict[str, Any]], result_refs.Referrer],
) -> Result | None:
    if result is None:
        return None
    referrer = referring(ns)
    store = keep.store
    name = "the cell's result"
    try:
        main, buffers = serialize.dumps(result, name, persistent_id=referrer.pid)
        by_reference = _by_reference(result, main, buffers, referrer, ns)
        if by_reference is not None:
            value, refs = by_reference, True
        else:
            if referrer.used:  # too large to sit in the entry: by value, as any value
                main, buffers = serialize.dumps(result, name)
            d = Hasher(ns).value_digest(result, "result")
            check = value_check.checker(d, ns, name)
            value = keep.put(d, result, name, check, pickled=(main, buffers))
            refs = False
        if shown is None:
            return Result(value, refs=refs)
        pair = [shown[0], shown[1]]
        shown_at = store.put_value(Hasher(ns).value_digest(repr(pair), "shown"), pair)
        return Result(value, shown=shown_at, refs=refs)
    except (Unstorable, Unhashable):
        bundle = display(result)
        d = Hasher(ns).value_digest(repr(bundle), "result")
        return Result(store.put_value(d, bundle, name), bundle=True)


def _referrer(run: LiveRun, plan: StoragePlan, ns: dict[str, Any]) -> result_refs.Referrer:
    """What the result may refer to: the names the step bound (first: a result a bound
    name and an input both hold is the bound one's), its inputs, and their graphs."""
    names = [*run.bound, *run.key.digests, *run.trace]
    graphs = (plan.post, plan.graph) if plan.post is not None and plan.graph is not None else ()
    return result_refs.Referrer(ns, names, graphs)


def _by_reference(
    result: Any,
    main: bytes,
    buffers: list[pickle.PickleBuffer],
    referrer: result_refs.Referrer,
    ns: dict[str, Any],
) -> Value | None:
    """The result pickled with references to the names' objects, to sit in the entry
    (None: it refers to none, or is too large to), checked unless it is only such
    references in tuples, lists, dicts and sets (which pickling keeps as they are)."""
    if not referrer.used:
        return None
    small = inline_value(xxhash.xxh3_128_hexdigest(main), main, buffers)
    if small is not None and not referrer.plain:
        restored = serialize.loads(main, buffers, result_refs.resolver(ns, _read_nothing))
        d = Hasher(ns).value_digest(result, "result")
        value_check.compare(result, restored, d, ns, "the cell's result")
    return small


def _read_nothing(names: list[str]) -> None:
    """While the entry is built every name holds its value: nothing is left to read."""
