"""Keeping a pure step's live run: whether it can be cached, and its entry stored.

A run with an effect (the tripwire's findings, or a module attribute among its inputs
that a hit could not set again) is not cached. Otherwise the sharing analysis plans
how its names are stored, the process state it changed is recorded, the entry is built
and put in the tiered store. Every way this can fail is a note for the record and the
user (what could not be kept, and what to do), never an error of the cell: the step has
already run.
"""

from __future__ import annotations

import logging

from ..errors import KeyComponentError, Unfaithful, Unhashable, Unstorable
from ..hashing import reach
from ..hashing.key import Key
from . import advice, entry, modattrs, process_state, sharing
from .engine import Engine
from .recording import Recording

log = logging.getLogger(__name__)


def attributes_changed(ns: dict, key: Key, held: sharing.Before | None) -> list[str]:
    """Module attributes among the key's inputs that the run changed and that a hit
    could not set again (the notebook's modules' public attributes it can: `modattrs`),
    as effects."""
    attributes = key.attributes
    changed = reach.changed_attributes(ns, attributes, key.digests)
    before = held.modules if held is not None else {}
    return [
        f"changed the module attribute {label}"
        for label in changed
        if not modattrs.watched(before, *attributes[label].home())
    ]


def keep(
    engine: Engine,
    rec: Recording,
    live: entry.LiveRun,
    digests: entry.Digests,
    effects: list[str],
    held: sharing.Before | None,
    state,
) -> str | None:
    """Store the entry of `live`; returns a note when the step could not be cached."""
    if effects:
        rec.outputs = digests.describe(live.bound)
        return f"not cached: it {effects[0]}. Mark it `%%step {live.name} --effect`"
    try:
        changed = sharing.mutated(held, engine.ns, live.key.digests, digests.of)
        plan = sharing.analyse(held, engine.ns, live.bound, changed, engine.hidden)
        recorded = process_state.changes(state)
        built = entry.build(live, engine.store, digests, engine.display_bundle, plan, recorded)
    except Unfaithful as err:
        rec.outputs = digests.describe(live.bound)
        return f"not cached: {err.name}: {err.why}. To cache it, {err.way_out}"
    except (Unstorable, KeyComponentError, Unhashable) as err:
        rec.outputs = digests.describe(live.bound)
        var = getattr(err, "name", None) or getattr(err, "path", "a value")
        why = str(getattr(err, "why", err))
        return f"not cached: {var} cannot be stored ({why}). {advice.unstorable(var, why)}"
    except Exception as err:  # disk full, locked index: the step already ran
        log.debug("the entry of %s was not stored", live.name, exc_info=True)
        rec.outputs = digests.describe(live.bound)
        return f"not cached: the store failed ({getattr(err, 'strerror', None) or err})"
    rec.outputs = entry.described(built)
    try:
        engine.cache.put(live.key.key, built)  # the team cache pushes in the background
    except Exception as err:
        log.debug("the entry of %s was not stored", live.name, exc_info=True)
        return f"not cached: the store failed ({err})"
    return None
