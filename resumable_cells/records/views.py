"""`%step status`: the table of a run's rows (a step in a cell), its totals and the
cache at a glance (`glance`).

Rows and staleness come from `staleness` (the one function the sidebar's rows use too);
durations, ages and times saved are written by `formatting`, as everywhere else.
"""

from __future__ import annotations

import html
import time

from .. import formatting, palette
from . import glance

_COUNTED = {"hit": "served", "live": "ran", "effect": "effects", "error": "errors"}


def totals(execs: list[dict], session: str | None) -> dict[str, dict]:
    """Executions by outcome and the time saved, for `session` and for the whole run:
    {"session": {"served", "ran", "effects", "errors", "saved_s"}, "run": {...}}."""
    out: dict[str, dict[str, float]] = {
        scope: dict.fromkeys(_COUNTED.values(), 0) for scope in ("session", "run")
    }
    for scope in out:
        out[scope]["saved_s"] = 0.0
    for e in execs:
        scopes = ("session", "run") if e.get("session") == session else ("run",)
        for scope in scopes:
            counts = out[scope]
            if e["status"] in _COUNTED:
                counts[_COUNTED[e["status"]]] += 1
            if e["status"] == "hit":
                counts["saved_s"] += e.get("saved_s") or 0.0
    return out


def totals_line(t: dict[str, dict]) -> str:
    def one(c: dict) -> str:
        return (
            f"{c['served']} served, {c['ran']} ran, {c['effects']} effects, {c['errors']} "
            f"errors, {formatting.duration(c['saved_s'])} saved"
        )

    lines = [f"this kernel session: {one(t['session'])}", f"whole run: {one(t['run'])}"]
    rate = glance.hit_rate_text(t["run"])
    if rate:
        lines.append(f"hit rate of the run: {rate}")
    return "\n".join(lines)


def cache_lines(cache: dict | None) -> list[str]:
    """The store's line, the entries being written behind, and the team cache's line
    when one is set."""
    if not cache:
        return []
    lines = [glance.store_text(cache["store"])] if cache.get("store") else []
    if cache.get("writing") and cache["writing"]["entries"]:
        lines.append(glance.writing_text(cache["writing"]))
    if cache.get("team"):
        lines.append(glance.team_text(cache["team"]))
    unread = cache.get("unread")
    if unread:
        names = ", ".join(unread["names"][:6]) + (", ..." if len(unread["names"]) > 6 else "")
        lines.append(
            f"not read yet: {len(unread['names'])} values restored lazily "
            f"({formatting.size(unread['bytes'])}: {names}), read when first used"
        )
    return lines


class StatusTable:
    """`%step status`: plain text in any frontend, a table where HTML renders."""

    _COLS = ("step", "cell", "status", "last run", "saved (run)", "computed", "stale")

    def __init__(
        self,
        run_id: str,
        rows: list[dict],
        budget: dict,
        totals: dict | None = None,
        cache: dict | None = None,
    ):
        self.run_id = run_id
        self.rows = rows
        self.budget = budget
        self.totals = totals
        self.cache = cache  # {"store": glance.store_figures, "team": ...}
        self.now = time.time()

    def _cells(self, r: dict) -> tuple[str, ...]:
        label = palette.label(r["status"] or "none")
        n = r.get("execution_count")
        cell = f"In [{n}]" if n else ""
        dur = "" if r["duration_s"] is None else formatting.duration(r["duration_s"])
        saved = formatting.duration(r["saved_s"]) if r["saved_s"] else ""
        stale = f"yes: {r['stale_cause']}" if r["stale"] else ""
        computed = r.get("computed")
        age = f"{formatting.age(self.now - computed)} ago" if computed else ""
        return (r["step"], cell, label, dur, saved, age, stale)

    def _foot(self) -> list[str]:
        return (totals_line(self.totals).split("\n") if self.totals else []) + cache_lines(
            self.cache
        )

    def __repr__(self) -> str:
        table = [self._COLS] + [self._cells(r) for r in self.rows]
        widths = [max(len(row[i]) for row in table) for i in range(len(self._COLS))]
        lines = [f"run {self.run_id}"]
        for row in table:
            lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
        stale = sum(r["stale"] for r in self.rows)
        lines.append(f"{len(self.rows)} steps, {stale} stale")
        lines.extend(self._foot())
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        left = ("step", "cell", "status", "stale")  # words read from the left; figures right
        align = [' style="text-align: left"' if c in left else "" for c in self._COLS]
        head = "".join(f"<th{a}>{c}</th>" for c, a in zip(self._COLS, align))
        body = "".join(
            "<tr>"
            + "".join(f"<td{a}>{html.escape(c)}</td>" for c, a in zip(self._cells(r), align))
            + "</tr>"
            for r in self.rows
        )
        foot = "".join(f"<div>{html.escape(x)}</div>" for x in self._foot())
        return (
            f'<div class="rc-status-table"><div>run {html.escape(self.run_id)}</div>'
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{foot}</div>"
        )
