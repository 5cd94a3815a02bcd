"""The report of a `verify` call: a table of the cells with findings and a summary per
notebook, as text for people and as JSON (`--json FILE`) for tests and figures.

JSON: `{"version": 1, "ok", "timeout_s", "wall_s", "totals": {...}, "notebooks": [{
"notebook", "ok", "summary", "problems", "passes", "cells": [...]}]}`; `summary` and
`totals` carry the counts of `NotebookResult.summary`, the time of each pass and the
ratios of the stepped passes to the plain run (`plain_s`, `ratios`: `stepped` the first
run under `%%step`, `replay` the resume; in `totals`, of the sums), `cells` every code
cell.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..formatting import duration
from .results import PASSES, STEPPED, NotebookResult

FORMAT_VERSION = 1  # bump when a key of the JSON form changes meaning
LABELS = {"plain_1": "plain", "plain_2": "plain again", "stepped": "stepped", "replay": "replay"}


def text(results: list[NotebookResult], wall_s: float) -> str:
    parts = [_notebook(r) for r in results]
    if len(results) > 1:
        t = totals(results)
        parts.append("all notebooks: " + _counts(t) + "\n" + _passes(t, "(cells only)"))
    bad = [r.notebook for r in results if not r.ok]
    verdict = (
        f"{len(bad)} of {len(results)} notebooks differ or hung: " + ", ".join(bad)
        if bad
        else "nothing differs and nothing hung"
    )
    parts.append(f"{verdict} ({duration(wall_s)})")
    return "\n\n".join(parts) + "\n"


def _notebook(r: NotebookResult) -> str:
    lines = [f"== {r.notebook}"]
    rows = [(str(c.index), _clip(c.line), f) for c in r.cells for f in c.findings()]
    if rows:
        lines += _table(rows, ("cell", "code", "finding"))
    lines += [f"problem: {p}" for p in r.problems]
    s = r.summary()
    lines.append(_counts(s))
    lines.append(_passes(s, f"(cells only); {duration(s['wall_s'])} in all"))
    return "\n".join(lines)


def _passes(s: dict, after: str) -> str:
    """The time of each pass, then each stepped pass against the plain run:
    `passes: plain 1.0 s, ... (cells only); 9.8 s in all` and `under %%step: first run
    1.31x plain, resume 0.82x plain (%load_ext 0.2 s, 0.1 s)`."""
    times = ", ".join(
        f"{LABELS[k]} {duration(s['pass_wall_s'][k])}" for k in PASSES if k in s["pass_wall_s"]
    )
    line = f"passes: {times} {after}"
    r = s.get("ratios") or {}
    if r.get("stepped") is None and r.get("replay") is None:
        return line
    shown = [
        f"{what} {r[k]:.2f}x plain" if r.get(k) is not None else f"{what} not timed"
        for k, what in (("stepped", "first run"), ("replay", "resume"))
    ]
    loads = [duration(s["load_s"][k]) for k in STEPPED if k in s.get("load_s", {})]
    load = f" (%load_ext {', '.join(loads)})" if loads else ""
    return line + "\nunder %%step: " + ", ".join(shown) + load


def _counts(s: dict) -> str:
    not_served = "; ".join(f"{n} {reason}" for reason, n in sorted(s["not_served"].items()))
    return (
        f"cells {s['cells']}, wrapped {s['wrapped']}, nondeterministic {s['nondeterministic']}, "
        f"identical {s['identical']}/{s['compared']}, "
        f"replay identical {s['replay_identical']}/{s['replayed']}, "
        f"served {s['served']}/{s['wrapped']}"
        + (f" (not served: {not_served})" if not_served else "")
        + f", hung {s['hung']}, slow {s['slow']}"
    )


def totals(results: list[NotebookResult]) -> dict:
    out: dict = {"notebooks": len(results), "not_served": {}, "pass_wall_s": {}, "load_s": {}}
    plain = 0.0
    timed = {k: [0.0, 0.0] for k in STEPPED}  # the pass's and the plain run's, where timed
    for r in results:
        s = r.summary()
        for k in STEPPED:
            if s["ratios"][k] is not None:
                timed[k][0] += s["pass_wall_s"][k]
                timed[k][1] += s["plain_s"]
        for k, v in s.items():
            if k == "not_served":
                for reason, n in v.items():
                    out[k][reason] = out[k].get(reason, 0) + n
            elif k in ("pass_wall_s", "load_s"):
                for label, t in v.items():
                    out[k][label] = round(out[k].get(label, 0.0) + t, 3)
            elif k == "plain_s":
                plain += v or 0.0
            elif k != "ratios":
                out[k] = round(out.get(k, 0) + v, 3)
    # Over every notebook whose pass was timed: its sum over the sum of their plain runs.
    out["plain_s"] = round(plain, 3)
    out["ratios"] = {k: round(t / p, 3) if p else None for k, (t, p) in timed.items()}
    return out


def to_json(results: list[NotebookResult], *, timeout: float, wall_s: float) -> dict:
    return {
        "version": FORMAT_VERSION,
        "ok": all(r.ok for r in results),
        "timeout_s": timeout,
        "wall_s": round(wall_s, 3),
        "totals": totals(results),
        "notebooks": [r.to_json() for r in results],
    }


def _table(rows: Sequence[tuple[str, ...]], header: tuple[str, ...]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header) - 1)]
    out = []
    for r in [header, *rows]:
        cells = [c.rjust(w) if i == 0 else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))]
        out.append("  ".join([*cells, r[-1]]))
    return out


def _clip(line: str, width: int = 32) -> str:
    return line if len(line) <= width else line[: width - 1] + "…"
