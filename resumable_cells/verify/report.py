"""The report of a `verify` call: a table of the cells with findings and a summary per
notebook, as text for people and as JSON (`--json FILE`) for tests and figures.

JSON: `{"version": 1, "ok", "timeout_s", "wall_s", "totals": {...}, "notebooks": [{
"notebook", "ok", "summary", "problems", "passes", "cells": [...]}]}`; `summary` and
`totals` carry the counts of `NotebookResult.summary`, `cells` every code cell.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..formatting import duration
from .results import PASSES, NotebookResult

FORMAT_VERSION = 1  # bump when a key of the JSON form changes meaning
LABELS = {"plain_1": "plain", "plain_2": "plain again", "stepped": "stepped", "replay": "replay"}


def text(results: list[NotebookResult], wall_s: float) -> str:
    parts = [_notebook(r) for r in results]
    if len(results) > 1:
        parts.append("all notebooks: " + _counts(totals(results)))
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
    times = ", ".join(
        f"{LABELS[k]} {duration(s['pass_wall_s'][k])}" for k in PASSES if k in s["pass_wall_s"]
    )
    lines.append(f"passes: {times} (cells only); {duration(s['wall_s'])} in all")
    return "\n".join(lines)


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
    out: dict = {"notebooks": len(results), "not_served": {}, "pass_wall_s": {}}
    for r in results:
        for k, v in r.summary().items():
            if k == "not_served":
                for reason, n in v.items():
                    out[k][reason] = out[k].get(reason, 0) + n
            elif k == "pass_wall_s":
                for label, t in v.items():
                    out[k][label] = round(out[k].get(label, 0.0) + t, 3)
            else:
                out[k] = round(out.get(k, 0) + v, 3)
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
