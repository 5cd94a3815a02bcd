"""What counts as plain data: containers of atomic values that `values` hashes as one
C-level pickle stream instead of element by element."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import chain, compress, repeat
from operator import is_
from typing import Any

ATOMIC = frozenset({str, bytes, int, float, bool, type(None)})
_FLAT_CONTAINERS = (list, tuple)
_FLAT_CONTAINER_TYPES = frozenset(_FLAT_CONTAINERS)
_RECORD_KINDS = ATOMIC | {list, tuple, dict}
_DICTS = frozenset({dict})
_BULK = 64  # items from which `flat_items` asks in passes over all of them


def all_atomic(items) -> bool:
    """Whether every item is a str, bytes, int, float, bool or None."""
    return set(map(type, items)) <= ATOMIC


def _flat_values(values) -> bool:
    """Dict values that are atomic, or lists/tuples of atomic values."""
    kinds = set(map(type, values))
    if kinds <= ATOMIC:
        return True
    if not kinds <= ATOMIC | _FLAT_CONTAINER_TYPES:
        return False
    atomic = ATOMIC
    for x in values:
        if type(x) in _FLAT_CONTAINER_TYPES and not set(map(type, x)) <= atomic:
            return False
    return True


def flat_items(items) -> bool:
    """Items of a list, tuple or dict that are plain data: atomic values, lists and
    tuples of atomic values, and records (dicts with atomic keys whose values are atomic
    or lists/tuples of atomic values). Deeper nesting takes the general route."""
    kinds = set(map(type, items))
    if kinds <= ATOMIC:
        return True
    if not kinds <= _RECORD_KINDS:
        return False
    if len(items) > _BULK:
        return _flat_in_bulk(items, kinds)
    atomic = ATOMIC
    for x in items:
        t = type(x)
        if t is dict:
            if not (set(map(type, x)) <= atomic and _flat_values(x.values())):
                return False
        elif (t is list or t is tuple) and not set(map(type, x)) <= atomic:
            return False
    return True


def _flat_in_bulk(items, kinds: set[type]) -> bool:
    """`flat_items` of many items (the rows of a table), asked of all of them at once in
    passes at C speed: a million records cost a few passes, not a million questions."""
    if kinds == _DICTS:
        return flat_states(items)
    each = list(map(type, items))
    if not kinds.isdisjoint(_FLAT_CONTAINER_TYPES):
        sequences = compress(items, map(_FLAT_CONTAINER_TYPES.__contains__, each))
        if not set(map(type, chain.from_iterable(sequences))) <= ATOMIC:
            return False
    return dict not in kinds or flat_states(compress(items, map(is_, each, repeat(dict))))


def flat_states(states: Iterable[Any]) -> bool:
    """Whether every one of `states` (objects' attribute dicts) is a dict with atomic keys
    whose values are atomic or lists/tuples of atomic values: what `flat_items` says of
    each one's values when none holds a record, asked of all of them at once, in passes
    at C speed (ten thousand dataclass records: one question, not ten thousand)."""
    states = list(states)
    if set(map(type, states)) != {dict}:
        return False
    if not set(map(type, chain.from_iterable(states))) <= ATOMIC:  # (a dict yields its keys)
        return False
    kinds = set(map(type, chain.from_iterable(map(dict.values, states))))
    if kinds <= ATOMIC:  # (rows of atomic values: one pass over the values)
        return True
    if not kinds <= ATOMIC | _FLAT_CONTAINER_TYPES:
        return False
    values = list(chain.from_iterable(map(dict.values, states)))
    inner = compress(values, map(_FLAT_CONTAINER_TYPES.__contains__, map(type, values)))
    return set(map(type, chain.from_iterable(inner))) <= ATOMIC
