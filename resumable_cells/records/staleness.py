"""Which steps are stale, and why: the one function behind `%step status`, `%step plan`,
the sidebar's rows and badges, the server route and the CLI.

A row is one step in one cell, `(step name, cell id)`: the same step run again in
another cell (as the quickstart does to show that going back is free) is another row.
A row is stale when an input its last execution used now has another value, unless
that value came from the row's own outputs flowing on (a chain like `state = state + 1`
in the next step, or a step that rebinds its own input); and a row is stale when an
input came from a row that is stale (Run All would rebuild it first).

What a name holds now is known from the record (the values steps bound) and, in a
kernel, from the `Change`s that `freshness` saw other cells make: a parameter cell
rebinding `ridge`, a plain cell editing a frame in place.

`causes` and `step_rows` read a whole record. A kernel answers after every execution
(the sidebar is sent its rows each time), and a loop's record grows to thousands of
executions: it keeps a `Ledger` instead, which takes each execution and change as it
comes and answers in time that grows with the rows, not with the history.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

FINAL = ("hit", "live", "effect")

RowKey = tuple[str, "str | None"]
# Where a binder stands in time: comparable, unique. A batch uses its index; a ledger
# (time, 0 for an execution or 1 for a change, arrival number), so that on equal times
# an execution comes before a change, as in a batch.
Pos = Any


class Change(msgspec.Struct, frozen=True):
    """A name bound outside the record: by a plain cell, or changed in place."""

    name: str
    digest: str | None  # None: deleted, or its value cannot be hashed
    time: float
    where: str = ""  # "In [5]" when known
    reads: frozenset[str] = frozenset()  # the names the changing cell read
    how: str = "changed"  # changed | deleted | changed in place


class _Binder(msgspec.Struct):
    """One execution of a step, or one Change, in time order."""

    key: RowKey | None  # the row of a step execution; None for a Change
    label: str  # "by fit (In [24])" / "(In [23])" / "in place"
    reads: dict[str, str | None] = msgspec.field(default_factory=dict)
    binds: dict[str, str | None] = msgspec.field(default_factory=dict)
    how: str = "changed"


# name -> (pos, digest) of each binder that bound it, in time order
ByName = dict[str, list[tuple[Pos, "str | None"]]]
Binders = Mapping[Pos, "_Binder"] | list["_Binder"]  # a ledger's by pos, a batch's list


def row_key(e: dict) -> RowKey:
    return (e["step"], e.get("cell_id"))


def where(e: dict, session: str | None = None) -> str:
    """`In [n]` of an execution ("" when unknown); given the kernel's `session`, one of
    another session is `earlier session` (its prompts are not the notebook's now)."""
    if session is not None and e.get("session") != session:
        return "earlier session"
    n = e.get("execution_count")
    return f"In [{n}]" if n else ""


def causes(
    execs: Iterable[dict], changes: Iterable[Change] = (), session: str | None = None
) -> dict[RowKey, str]:
    """Stale rows -> why (`ridge changed (In [23])`, `coef changed by step fit (In [24])`,
    `coef comes from stale step fit`); `In [n]` only of the kernel `session` when given."""
    binders, last = _timeline(execs, changes, session)
    by_name: ByName = {}
    for pos, b in enumerate(binders):
        for name, digest in b.binds.items():
            by_name.setdefault(name, []).append((pos, digest))
    return _stale(binders, by_name, last)


def _timeline(execs, changes, session) -> tuple[list[_Binder], dict[RowKey, int]]:
    events: list[tuple[float, int, int, Any]] = [
        (e.get("start") or 0.0, 0, i, e) for i, e in enumerate(execs) if e["status"] in FINAL
    ]
    events += [(c.time, 1, i, c) for i, c in enumerate(changes)]
    events.sort(key=lambda ev: ev[:3])
    binders, last = [], {}
    for _, _, _, ev in events:
        if isinstance(ev, Change):
            binders.append(_change_binder(ev))
            continue
        last[row_key(ev)] = len(binders)
        binders.append(_execution_binder(ev, session))
    return binders, last


def _change_binder(c: Change) -> _Binder:
    label = "in place" if c.how == "changed in place" else f"({c.where})" if c.where else ""
    return _Binder(None, label, dict.fromkeys(c.reads), {c.name: c.digest}, c.how)


def _execution_binder(e: dict, session: str | None) -> _Binder:
    at = where(e, session)
    label = f"by step {e['step']}" + (f" ({at})" if at else "")
    reads = {i["name"]: i.get("digest") for i in e.get("inputs") or []}
    binds = {o["name"]: o.get("digest") for o in e.get("outputs") or []}
    return _Binder(row_key(e), label, reads, binds)


def _stale(binders: Binders, by_name: ByName, last: dict[RowKey, Pos]) -> dict[RowKey, str]:
    stale = {}
    for key, pos in last.items():
        cause = _direct(binders, by_name, pos)
        if cause:
            stale[key] = cause
    _propagate(binders, by_name, last, stale)
    return stale


def _first(pair: tuple[Pos, Any]) -> Pos:
    return pair[0]


def _direct(binders: Binders, by_name: ByName, pos: Pos) -> str | None:
    """Why the row whose last execution is binders[pos] is stale by itself, or None."""
    mine = binders[pos]
    for name, used in mine.reads.items():
        if used is None:
            continue
        bound = by_name.get(name, [])
        later = bound[bisect.bisect_right(bound, pos, key=_first) :]
        if not later:
            continue
        now = binders[later[-1][0]]
        if now.binds[name] == used:
            continue
        if any(_flows_from(binders[p], mine) for p, _ in later):
            continue
        verb = "was deleted" if now.how == "deleted" else "changed"
        return f"{name} {verb} {now.label}".rstrip()
    return None


def _flows_from(later: _Binder, mine: _Binder) -> bool:
    """`later` read a value `mine` bound: a continuation of it, not a change to it."""
    for name, digest in later.reads.items():
        if name in mine.binds and (digest is None or digest == mine.binds[name]):
            return True
    return False


def _source(by_name: ByName, name: str, used: str, pos: Pos) -> Pos | None:
    """The last binder before `pos` that bound `name` to the value `used`."""
    bound = by_name.get(name, [])
    for i in range(bisect.bisect_left(bound, pos, key=_first) - 1, -1, -1):
        if bound[i][1] == used:
            return bound[i][0]
    return None


def _propagate(binders, by_name, last: dict[RowKey, Pos], stale: dict[RowKey, str]) -> None:
    producers: dict[RowKey, list[tuple[str, RowKey]]] = {}
    for key, pos in last.items():
        for name, used in binders[pos].reads.items():
            before = _source(by_name, name, used, pos) if used is not None else None
            if before is not None:
                source = binders[before].key
                if source is not None and source != key:
                    producers.setdefault(key, []).append((name, source))
    changed = True
    while changed:  # a fixed point: a chain of n stale steps takes n passes at most
        changed = False
        for key in sorted(last, key=lambda k: last[k]):
            if key in stale:
                continue
            for name, source in producers.get(key, ()):
                if source in stale:
                    stale[key] = f"{name} comes from stale step {source[0]}"
                    changed = True
                    break


def step_rows(execs: list[dict], stale: dict[RowKey, str] | None = None) -> list[dict]:
    """The latest state of each row (step in a cell), in first-seen order (see
    docs/PROTOCOL.md). `saved_s` adds up the time saved by the row's hits in the run."""
    if stale is None:
        stale = causes(execs)
    rows: dict[RowKey, _Row] = {}
    for i, e in enumerate(execs):
        key = row_key(e)
        if key not in rows:
            rows[key] = _Row(i)
        rows[key].take(i, i, e)
    return [r.shown(key, stale.get(key)) for key, r in rows.items()]


class _Row:
    """What a row shows, folded one execution at a time: how many, the latest (in time
    order), the duration of the latest that ran and was timed, the time its hits saved."""

    __slots__ = ("first", "count", "saved", "latest", "timed", "members")

    def __init__(self, first: Pos):
        self.first = first
        self.count = 0
        self.saved = 0.0
        self.latest: tuple[Pos, dict] | None = None
        self.timed: tuple[Pos, float] | None = None
        # what each execution gave, for when it is taken again (it ended):
        # id -> (pos, time saved, duration if it ran and was timed); not the execution,
        # which a long loop's rows would keep thousands of
        self.members: dict[Any, tuple[Pos, float, float | None]] = {}

    def take(self, ident: Any, pos: Pos, e: dict) -> None:
        saved = _saved(e)
        timed = e.get("duration_s") if e["status"] in ("live", "effect") else None
        before = self.members.get(ident)
        self.members[ident] = (pos, saved, timed)
        if before is None:
            self.count += 1
            self.first = min(self.first, pos)
        else:
            self.saved -= before[1]
        self.saved += saved
        if self.latest is None or pos >= self.latest[0]:
            self.latest = (pos, e)
        if timed is not None:
            if self.timed is None or pos >= self.timed[0]:
                self.timed = (pos, timed)
        elif self.timed is not None and self.timed[0] == pos:  # it was, and is no longer
            ran = [(p, d) for p, _, d in self.members.values() if d is not None]
            self.timed = max(ran, key=_first) if ran else None

    def shown(self, key: RowKey, cause: str | None) -> dict:
        assert self.latest is not None
        e = self.latest[1]
        return {
            "step": key[0], "cell_id": key[1], "status": e["status"],
            "duration_s": self.timed[1] if self.timed is not None else None,
            "saved_s": self.saved, "stale": cause is not None, "stale_cause": cause,
            "reason": e.get("reason"), "last_start": e.get("start"),
            "execution_count": e.get("execution_count"), "computed": e.get("computed"),
            "provenance": e.get("provenance"), "executions": self.count,
        }  # fmt: skip


def _saved(e: dict) -> float:
    return (e.get("saved_s") or 0.0) if e["status"] == "hit" else 0.0


class Ledger:
    """`causes` and `step_rows` of a record that grows: each execution (again when it
    ends, by its `id`) and each `Change` is taken as it comes, in about time order, and
    an answer costs the rows, not the history. Equal to the two functions over the same
    record (`tests/test_staleness.py` holds it to them over random records)."""

    def __init__(
        self, execs: Iterable[dict] = (), changes: Iterable[Change] = (), session: str | None = None
    ):
        self.session = session
        self._arrivals = itertools.count()
        self._binders: dict[Pos, _Binder] = {}
        self._by_name: ByName = {}
        self._finals: dict[RowKey, list[Pos]] = {}  # a row's finished executions, in order
        self._seen: dict[str, tuple[int, Pos | None]] = {}  # id -> arrival, its binder
        self._rows: dict[RowKey, _Row] = {}
        for e in execs:
            self.execution(e)
        for c in changes:
            self.change(c)

    def execution(self, e: dict) -> None:
        """An execution started, or ended (the same `id`: it replaces what was taken)."""
        eid = e.get("id")
        arrival, bound = self._seen.get(eid, (None, None)) if eid else (None, None)
        if arrival is None:
            arrival = next(self._arrivals)
        if bound is not None:
            self._unbind(bound)
        key = row_key(e)
        pos = (e.get("start") or 0.0, 0, arrival)
        if e["status"] in FINAL:
            self._bind(pos, _execution_binder(e, self.session))
            bisect.insort(self._finals.setdefault(key, []), pos)
        if eid:
            self._seen[eid] = (arrival, pos if e["status"] in FINAL else None)
        row = self._rows.get(key)
        if row is None:
            row = self._rows[key] = _Row(pos)
        row.take(eid if eid else ("arrival", arrival), pos, e)

    def change(self, c: Change) -> None:
        self._bind((c.time, 1, next(self._arrivals)), _change_binder(c))

    def causes(self) -> dict[RowKey, str]:
        last = {key: finals[-1] for key, finals in self._finals.items() if finals}
        return _stale(self._binders, self._by_name, last)

    def rows(self, stale: dict[RowKey, str] | None = None) -> list[dict]:
        """As `step_rows` over the record taken so far."""
        if stale is None:
            stale = self.causes()
        ordered = sorted(self._rows.items(), key=lambda kr: kr[1].first)
        return [row.shown(key, stale.get(key)) for key, row in ordered]

    def _bind(self, pos: Pos, binder: _Binder) -> None:
        self._binders[pos] = binder
        for name, digest in binder.binds.items():
            bisect.insort(self._by_name.setdefault(name, []), (pos, digest), key=_first)

    def _unbind(self, pos: Pos) -> None:
        binder = self._binders.pop(pos)
        for name in binder.binds:
            bound = self._by_name[name]
            del bound[bisect.bisect_left(bound, pos, key=_first)]
        if binder.key is not None:
            self._finals[binder.key].remove(pos)
