"""Admitting a pure step's live run to the cache: whether it can be cached, and its
entry stored.

A run with an effect (the tripwire's findings, or a module attribute among its inputs
that a hit could not set again) is not cached. Otherwise the sharing analysis plans
how its names are stored, the process state it changed is recorded, the entry is built
and handed to `Engine.write_behind`: its large values' bytes are written by a thread
of their own and the entry put once they are; an entry with none is put when the cell
is done. Every way this can fail is a note for the record and the user (what could not
be kept, and what to do), never an error of the cell: the step has already run.
"""

from __future__ import annotations

import logging
from types import ModuleType
from typing import Any

import msgspec

from ...errors import KeyComponentError, Unfaithful, Unhashable, Unstorable
from ...hashing import reach, sources
from ...hashing.key import Key
from ...storage.deferred import Batch
from ...storage.entries import Entry
from ..code.analysis import CellInfo
from ..kernel import Engine
from ..state import module_attrs, process_state
from . import advice, build, sharing
from .build import Imported, LiveRun
from .changes import Digests

log = logging.getLogger(__name__)


def attributes_changed(
    ns: dict[str, Any], key: Key, inputs_before: sharing.InputSnapshot | None
) -> list[str]:
    """Module attributes among the key's inputs that the run changed and that a hit
    could not set again (the notebook's modules' public attributes it can: `module_attrs`),
    as effects."""
    attributes = key.attributes
    changed = reach.changed_attributes(ns, attributes, key.digests)
    before = inputs_before.modules if inputs_before is not None else {}
    return [
        f"changed the module attribute {label}"
        for label in changed
        if not module_attrs.watched(before, *attributes[label].home())
    ]


def library_objects_changed(ns: dict[str, Any], info: CellInfo, imported: Imported) -> list[str]:
    """Objects of installed modules that the cell's own top level changes in place, as
    effects: an item assigned or deleted (`mimetypes.types_map[k] = v`, or `from
    mimetypes import types_map` then `types_map[k] = v`), an attribute set on one of
    their objects (`string.Template.x = 1`, `logging.root.x = 1`). A hit binds names and
    sets the process state again: it would leave the library's object as the serving
    kernel has it. What the process state records is set again and is no effect
    (`os.environ[k] = v`, `plt.rcParams[k] = v`, `InteractiveShell.ast_node_interactivity
    = "all"`); an attribute set on a module is `attributes_changed`'s, and a notebook
    module's objects are its attributes (`module_attrs`). `imported`: the bound values
    the cell imported from installed modules (`build.imported`)."""
    out = []
    changes: list[tuple[tuple[str, ...], str | None]] = [(c, None) for c in info.item_writes]
    changes += [(chain[:-1], chain[-1]) for chain in info.attr_writes if len(chain) > 1]
    for chain, attr in changes:
        held = _library_object(ns, imported, chain)
        if held is None or process_state.replays(held[1], attr):
            continue
        module, label = held[0], ".".join(chain)
        if attr is None:
            out.append(f"changed an item of {label}, which the installed module {module} holds")
        else:
            out.append(f"changed {label}.{attr}, on an object the installed module {module} holds")
    return out


def _library_object(
    ns: dict[str, Any], imported: Imported, chain: tuple[str, ...]
) -> tuple[str, Any] | None:
    """(module, object) when `chain` leads to an object an installed module holds (not
    a module): from a module bound in `ns`, or from a name the cell imported from one."""
    root = ns.get(chain[0])
    if isinstance(root, ModuleType):
        owner = root.__name__
        if len(chain) < 2 or sources.is_local_module(owner):
            return None
    else:
        ref = imported.get(id(root))
        if ref is None or ref[0] is not root:
            return None
        owner = ref[1]
    obj = root
    for attr in chain[1:]:  # as the module holds them (no `__getattr__`, no property)
        try:
            obj = vars(obj)[attr]
        except (KeyError, TypeError):
            return None
    return None if isinstance(obj, ModuleType) else (owner, obj)


class Watched(msgspec.Struct):
    """What the engine saw of a pure step's live run, besides its values."""

    digests: Digests  # of the namespace after the run
    changed_inputs: dict[str, Any]  # inputs whose object the run changed (`changes`)
    effects: list[str]  # what the tripwire caught, module attributes it cannot set again
    inputs_before: sharing.InputSnapshot | None  # the inputs' objects before the run
    state: Any  # the process state watch (`process_state.watching`)
    imported: Imported = msgspec.field(default_factory=dict)  # (`build.imported`)


class Admitted(msgspec.Struct):
    """Whether the run was kept: `note` says why not; `outputs` describe its values for
    the record."""

    note: str | None
    outputs: list[dict[str, Any]]
    entry: Entry | None = None  # the entry stored (or being written behind)


def admit(engine: Engine, live: LiveRun, watched: Watched) -> Admitted:
    """Store the entry of `live` when it can be cached; otherwise say why not."""
    digests = watched.digests
    if watched.effects:
        note = f"not cached: it {watched.effects[0]}. Mark it `%%step {live.name} --effect`"
        return Admitted(note, digests.describe(live.bound))
    try:
        pre = watched.inputs_before
        if pre is None:
            raise RuntimeError("a pure step's inputs were not walked before it ran")
        refs = watched.imported
        by_reference = {n for n in live.bound if id(engine.ns.get(n)) in refs}
        plan = sharing.analyse(
            pre, engine.ns, live.bound, watched.changed_inputs, engine.hidden, by_reference
        )
        recorded = process_state.changes(watched.state)
        engine.carry.state_read()  # what it read is the state the next step starts from
        later = Batch()
        built = build.build(
            live, engine.store, digests, engine.display_bundle, plan, recorded, later, refs
        )
    except Unfaithful as err:
        note = f"not cached: {err.name}: {err.why}. To cache it, {err.way_out}"
        return Admitted(note, digests.describe(live.bound))
    except (Unstorable, KeyComponentError, Unhashable) as err:
        var = str(getattr(err, "name", None) or getattr(err, "path", "a value"))  # (a str)
        why = str(getattr(err, "why", err))
        note = f"not cached: {var} cannot be stored ({why}). {advice.unstorable(var, why)}"
        return Admitted(note, digests.describe(live.bound))
    except Exception as err:  # disk full, locked index: the step already ran
        log.debug("the entry of %s was not stored", live.name, exc_info=True)
        note = f"not cached: the store failed ({getattr(err, 'strerror', None) or err})"
        return Admitted(note, digests.describe(live.bound))
    try:
        # Its large values' bytes are written while the user goes on, and even a small
        # entry's put (a SQLite transaction, signed JSON) waits for the cell's reply.
        engine.write_behind(live.key, live.name, built, later)
    except Exception as err:
        log.debug("the entry of %s was not stored", live.name, exc_info=True)
        return Admitted(f"not cached: the store failed ({err})", built.described())
    return Admitted(None, built.described(), built)
