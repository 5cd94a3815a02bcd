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
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

FINAL = ("hit", "live", "effect")

RowKey = tuple[str, "str | None"]


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
    by_name: dict[str, list[tuple[int, str | None]]] = {}
    for pos, b in enumerate(binders):
        for name, digest in b.binds.items():
            by_name.setdefault(name, []).append((pos, digest))
    stale = {}
    for key, pos in last.items():
        cause = _direct(binders, by_name, pos)
        if cause:
            stale[key] = cause
    _propagate(binders, by_name, last, stale)
    return stale


def _timeline(execs, changes, session) -> tuple[list[_Binder], dict[RowKey, int]]:
    events = [(e.get("start") or 0.0, i, e) for i, e in enumerate(execs) if e["status"] in FINAL]
    events += [(c.time, len(events) + i, c) for i, c in enumerate(changes)]
    events.sort(key=lambda ev: (ev[0], ev[1]))
    binders, last = [], {}
    for _, _, ev in events:
        if isinstance(ev, Change):
            label = (
                "in place" if ev.how == "changed in place" else f"({ev.where})" if ev.where else ""
            )
            reads = dict.fromkeys(ev.reads)
            binders.append(_Binder(None, label, reads, {ev.name: ev.digest}, ev.how))
            continue
        key = row_key(ev)
        at = where(ev, session)
        label = f"by step {ev['step']}" + (f" ({at})" if at else "")
        reads = {i["name"]: i.get("digest") for i in ev.get("inputs") or []}
        binds = {o["name"]: o.get("digest") for o in ev.get("outputs") or []}
        last[key] = len(binders)
        binders.append(_Binder(key, label, reads, binds))
    return binders, last


def _direct(binders: list[_Binder], by_name, pos: int) -> str | None:
    """Why the row whose last execution is binders[pos] is stale by itself, or None."""
    mine = binders[pos]
    for name, used in mine.reads.items():
        if used is None:
            continue
        later = [p for p, _ in by_name.get(name, ()) if p > pos]
        if not later:
            continue
        now = binders[later[-1]]
        if now.binds[name] == used:
            continue
        if any(_flows_from(binders[p], mine) for p in later):
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


def _propagate(binders, by_name, last: dict[RowKey, int], stale: dict[RowKey, str]) -> None:
    producers: dict[RowKey, list[tuple[str, RowKey]]] = {}
    for key, pos in last.items():
        for name, used in binders[pos].reads.items():
            before = [p for p, d in by_name.get(name, ()) if p < pos and d == used]
            if used is not None and before:
                source = binders[before[-1]].key
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
    rows: dict[RowKey, dict] = {}
    for e in execs:
        key = row_key(e)
        r = rows.get(key)
        if r is None:
            r = rows[key] = {
                "step": e["step"], "cell_id": key[1], "status": None, "duration_s": None,
                "saved_s": 0.0, "stale": False, "stale_cause": None, "reason": None,
                "last_start": None, "execution_count": None, "computed": None,
                "provenance": None, "executions": 0,
            }  # fmt: skip
        r["executions"] += 1
        r["status"] = e["status"]
        r["last_start"] = e.get("start")
        r["reason"] = e.get("reason")
        r["execution_count"] = e.get("execution_count")
        r["computed"] = e.get("computed")
        r["provenance"] = e.get("provenance")
        if e["status"] in ("live", "effect") and e.get("duration_s") is not None:
            r["duration_s"] = e["duration_s"]
        if e["status"] == "hit":
            r["saved_s"] += e.get("saved_s") or 0.0
    for key, cause in stale.items():
        if key in rows:
            rows[key]["stale"] = True
            rows[key]["stale_cause"] = cause
    return list(rows.values())
