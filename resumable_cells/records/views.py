"""`%step status`: the table of a run's rows (a step in a cell) and its totals.

Rows and staleness come from `staleness` (the one function the sidebar's rows use too);
durations and times saved are written by `formatting`, as everywhere else.
"""

from __future__ import annotations

import html

from .. import formatting, palette

_COUNTED = {"hit": "served", "live": "ran", "effect": "effects", "error": "errors"}


def totals(execs: list[dict], session: str | None) -> dict[str, dict]:
    """Executions by outcome and the time saved, for `session` and for the whole run:
    {"session": {"served", "ran", "effects", "errors", "saved_s"}, "run": {...}}."""
    out = {scope: dict.fromkeys(_COUNTED.values(), 0) for scope in ("session", "run")}
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

    return f"this kernel session: {one(t['session'])}\nwhole run: {one(t['run'])}"


class StatusTable:
    """`%step status`: plain text in any frontend, a table where HTML renders."""

    _COLS = ("step", "cell", "status", "last run", "saved (run)", "stale")

    def __init__(self, run_id: str, rows: list[dict], budget: dict, totals: dict | None = None):
        self.run_id = run_id
        self.rows = rows
        self.budget = budget
        self.totals = totals

    def _cells(self, r: dict) -> tuple[str, ...]:
        label = palette.label(r["status"] or "none")
        n = r.get("execution_count")
        cell = f"In [{n}]" if n else ""
        dur = "" if r["duration_s"] is None else formatting.duration(r["duration_s"])
        saved = formatting.duration(r["saved_s"]) if r["saved_s"] else ""
        stale = f"yes: {r['stale_cause']}" if r["stale"] else ""
        return (r["step"], cell, label, dur, saved, stale)

    def __repr__(self) -> str:
        table = [self._COLS] + [self._cells(r) for r in self.rows]
        widths = [max(len(row[i]) for row in table) for i in range(len(self._COLS))]
        lines = [f"run {self.run_id}"]
        for row in table:
            lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
        stale = sum(r["stale"] for r in self.rows)
        lines.append(f"{len(self.rows)} steps, {stale} stale")
        if self.totals:
            lines.append(totals_line(self.totals))
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{c}</th>" for c in self._COLS)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in self._cells(r)) + "</tr>"
            for r in self.rows
        )
        foot = ""
        if self.totals:
            lines = totals_line(self.totals).split("\n")
            foot = "".join(f"<div>{html.escape(x)}</div>" for x in lines)
        return (
            f'<div class="rc-status-table"><div>run {html.escape(self.run_id)}</div>'
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{foot}</div>"
        )
