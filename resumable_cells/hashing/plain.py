"""What counts as plain data: containers of atomic values that `values` hashes as one
C-level pickle stream instead of element by element."""

from __future__ import annotations

from itertools import chain, compress

ATOMIC = frozenset({str, bytes, int, float, bool, type(None)})
_FLAT_CONTAINERS = (list, tuple)
_FLAT_CONTAINER_TYPES = frozenset(_FLAT_CONTAINERS)
_RECORD_KINDS = ATOMIC | {list, tuple, dict}


def all_atomic(items) -> bool:
    """Whether every item is a str, bytes, int, float, bool or None."""
    return set(map(type, items)) <= ATOMIC


def _flat_values(values) -> bool:
    """Dict values that are atomic, or lists/tuples of atomic values."""
    kinds = set(map(type, values))
    if kinds <= ATOMIC:
        return True
    if not kinds <= ATOMIC | set(_FLAT_CONTAINERS):
        return False
    atomic = ATOMIC
    for x in values:
        if type(x) in _FLAT_CONTAINERS and not set(map(type, x)) <= atomic:
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
    atomic = ATOMIC
    for x in items:
        t = type(x)
        if t is dict:
            if not (set(map(type, x)) <= atomic and _flat_values(x.values())):
                return False
        elif (t is list or t is tuple) and not set(map(type, x)) <= atomic:
            return False
    return True


def flat_states(states: list) -> bool:
    """Whether every one of `states` (objects' attribute dicts) is a dict with atomic keys
    whose values are atomic or lists/tuples of atomic values: what `flat_items` says of
    each one's values when none holds a record, asked of all of them at once, in passes
    at C speed (ten thousand dataclass records: one question, not ten thousand)."""
    if set(map(type, states)) != {dict}:
        return False
    if not set(map(type, chain.from_iterable(states))) <= ATOMIC:  # (a dict yields its keys)
        return False
    values = list(chain.from_iterable(map(dict.values, states)))
    kinds = list(map(type, values))
    if not set(kinds) <= ATOMIC | _FLAT_CONTAINER_TYPES:
        return False
    inner = compress(values, map(_FLAT_CONTAINER_TYPES.__contains__, kinds))
    return set(map(type, chain.from_iterable(inner))) <= ATOMIC
