"""Derived views of the record: one row per step, and staleness.

Everything here is computed from the executions alone, so the kernel, the server
extension and the CLI show the same thing.
"""

from __future__ import annotations

import html

_FINAL = ("hit", "live", "effect")


def staleness(execs: list[dict]) -> dict[str, str]:
    """Steps whose producer rebound an input they used with another digest since:
    step -> cause (`input df changed by clean`).

    The producer of an input is the step whose output was the value read (same name,
    same digest). A later step that merely rebinds the same name (`state = state + 1`
    in a chain) does not make earlier readers stale.
    """
    latest: dict[str, tuple[str | None, str]] = {}  # name -> (digest, producing step)
    bound_by: dict[tuple[str, str], tuple[str | None, int]] = {}  # (step, name) -> (digest, seq)
    used: dict[str, tuple[int, list[tuple[str, str | None, str]]]] = {}
    for seq, e in enumerate(execs):
        if e.get("status") not in _FINAL:
            continue
        reads = []
        for i in e.get("inputs") or []:
            cur = latest.get(i["name"])
            if cur and cur[0] == i.get("digest") and cur[1] != e["step"]:
                reads.append((i["name"], i.get("digest"), cur[1]))
        used[e["step"]] = (seq, reads)
        for o in e.get("outputs") or []:
            latest[o["name"]] = (o.get("digest"), e["step"])
            bound_by[(e["step"], o["name"])] = (o.get("digest"), seq)
    causes: dict[str, str] = {}
    for step, (seq, reads) in used.items():
        for name, digest, producer in reads:
            now = bound_by.get((producer, name))
            if now and now[1] > seq and now[0] != digest:
                causes[step] = f"input {name} changed by {producer}"
                break
    # Downstream of a stale step is stale too: Run All would rebuild it after its producer.
    for step, (_, reads) in sorted(used.items(), key=lambda kv: kv[1][0]):
        if step in causes:
            continue
        for name, _, producer in reads:
            if producer in causes:
                causes[step] = f"input {name} comes from {producer}, which is stale"
                break
    return causes


def step_rows(execs: list[dict], stale: dict[str, str] | None = None) -> list[dict]:
    """The latest state of each step, in first-seen order (see docs/PROTOCOL.md)."""
    if stale is None:
        stale = staleness(execs)
    rows: dict[str, dict] = {}
    for e in execs:
        r = rows.setdefault(
            e["step"],
            {"step": e["step"], "cell_id": None, "status": None, "duration_s": None,
             "saved_s": 0.0, "stale": False, "stale_cause": None, "reason": None,
             "last_start": None, "executions": 0},
        )  # fmt: skip
        r["executions"] += 1
        r["status"] = e["status"]
        r["cell_id"] = e.get("cell_id") or r["cell_id"]
        r["last_start"] = e.get("start")
        r["reason"] = e.get("reason")
        if e["status"] in ("live", "effect") and e.get("duration_s") is not None:
            r["duration_s"] = e["duration_s"]
        if e["status"] == "hit":
            r["saved_s"] += e.get("saved_s") or 0.0
    for name, cause in stale.items():
        if name in rows:
            rows[name]["stale"] = True
            rows[name]["stale_cause"] = cause
    return list(rows.values())


class StatusTable:
    """`%step status`: plain text in any frontend, a table where HTML renders."""

    _COLS = ("step", "status", "last run", "saved", "stale")

    def __init__(self, run_id: str, rows: list[dict], budget: dict):
        self.run_id = run_id
        self.rows = rows
        self.budget = budget

    def _cells(self, r: dict) -> tuple[str, ...]:
        label = {"hit": "served", "live": "ran"}.get(r["status"], r["status"] or "")
        dur = "" if r["duration_s"] is None else f"{r['duration_s']:.2f} s"
        saved = f"{r['saved_s']:.2f} s" if r["saved_s"] else ""
        stale = f"yes: {r['stale_cause']}" if r["stale"] else ""
        return (r["step"], label, dur, saved, stale)

    def __repr__(self) -> str:
        table = [self._COLS] + [self._cells(r) for r in self.rows]
        widths = [max(len(row[i]) for row in table) for i in range(len(self._COLS))]
        lines = [f"run {self.run_id}"]
        for row in table:
            lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
        saved = sum(r["saved_s"] for r in self.rows)
        lines.append(f"{len(self.rows)} steps, {saved:.1f} s saved")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{c}</th>" for c in self._COLS)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in self._cells(r)) + "</tr>"
            for r in self.rows
        )
        return (
            f'<div class="rc-status-table"><div>run {html.escape(self.run_id)}</div>'
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"
        )
