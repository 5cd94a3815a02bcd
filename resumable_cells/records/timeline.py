"""`%step timeline`: the run's executions as an inline SVG, one lane per kernel session.

Plain SVG inside an HTML output, no JavaScript, so Notebook, VS Code and nbconvert HTML
show it too. Idle gaps between executions are compressed so that a run spread over days
still reads at a glance.
"""

from __future__ import annotations

import bisect
import html

COLOURS = {
    "hit": "#4caf50", "live": "#2196f3", "effect": "#9c27b0", "error": "#f44336",
    "interrupted": "#ff9800", "refused": "#795548", "running": "#90a4ae",
}  # fmt: skip
LABELS = {"hit": "served", "live": "ran"}
_MAX_GAP = 2.0  # seconds an idle gap may take on the axis
_LANE, _LEFT, _WIDTH = 26, 120, 640


def time_axis(execs: list[dict]):
    """A monotonic map from wall time to axis seconds, idle gaps capped at _MAX_GAP.
    Returns (to_axis, axis length)."""
    spans = sorted((e["start"], max(e["start"], _end(e))) for e in execs)
    busy = sum(end - start for start, end in spans)
    cap = min(_MAX_GAP, max(busy / (4 * len(spans)), 1e-3))  # a gap: a quarter of a mean bar
    wall, axis = [spans[0][0]], [0.0]
    for start, end in spans:
        if start > wall[-1]:
            wall.append(start)
            axis.append(axis[-1] + min(start - wall[-2], cap))
        if end > wall[-1]:
            wall.append(end)
            axis.append(axis[-1] + end - wall[-2])

    def to_axis(t: float) -> float:
        i = bisect.bisect_right(wall, t)
        if i == 0:
            return 0.0
        if i >= len(wall):
            return axis[-1]
        frac = (t - wall[i - 1]) / (wall[i] - wall[i - 1])
        return axis[i - 1] + frac * (axis[i] - axis[i - 1])

    return to_axis, max(axis[-1], 1e-3)


def _end(e: dict) -> float:
    if e.get("end"):
        return e["end"]
    return e["start"] + (e.get("duration_s") or 0.0)


class Timeline:
    def __init__(self, execs: list[dict]):
        self.execs = [e for e in execs if e.get("start")]

    def sessions(self) -> list[str]:
        return list(dict.fromkeys(e["session"] for e in self.execs))

    def svg(self) -> str:
        lanes = self.sessions()
        height = _LANE * max(1, len(lanes)) + 30
        parts = [
            f'<svg xmlns="http://www.w3.org/2000/svg" class="rc-timeline" width="{_LEFT + _WIDTH + 10}" '
            f'height="{height}" font-family="sans-serif" font-size="11">'
        ]
        if not self.execs:
            parts.append('<text x="4" y="16">no executions yet</text></svg>')
            return "".join(parts)
        to_axis, total = time_axis(self.execs)
        scale = _WIDTH / total
        for i, session in enumerate(lanes):
            y = 4 + i * _LANE
            parts.append(
                f'<g class="rc-lane" data-session="{html.escape(session)}">'
                f'<text x="4" y="{y + 15}">session {i + 1}</text>'
                f'<line x1="{_LEFT}" x2="{_LEFT + _WIDTH}" y1="{y + 10}" y2="{y + 10}" '
                'stroke="#ccc" stroke-width="1"/>'
            )
            for e in (e for e in self.execs if e["session"] == session):
                parts.append(self._bar(e, y, to_axis, scale))
            parts.append("</g>")
        parts.append(self._legend(height - 8))
        parts.append("</svg>")
        return "".join(parts)

    def _bar(self, e: dict, y: float, to_axis, scale: float) -> str:
        x0 = _LEFT + to_axis(e["start"]) * scale
        x1 = _LEFT + to_axis(_end(e)) * scale
        status = e["status"]
        tip = f"{e['step']}: {LABELS.get(status, status)}"
        if e.get("duration_s") is not None:
            tip += f", {e['duration_s']:.2f} s"
        if e.get("reason"):
            tip += f" ({e['reason']})"
        return (
            f'<rect class="rc-bar" data-status="{status}" x="{x0:.1f}" y="{y + 3}" '
            f'width="{max(2.0, x1 - x0):.1f}" height="14" rx="2" fill="{COLOURS.get(status, "#999")}">'
            f"<title>{html.escape(tip)}</title></rect>"
        )

    def _legend(self, y: float) -> str:
        out, x = [], _LEFT
        for status in ("hit", "live", "effect", "error", "interrupted", "refused"):
            out.append(
                f'<rect x="{x}" y="{y - 9}" width="10" height="10" fill="{COLOURS[status]}"/>'
                f'<text x="{x + 13}" y="{y}">{LABELS.get(status, status)}</text>'
            )
            x += 90
        return "".join(out)

    def _repr_html_(self) -> str:
        return f'<div class="rc-timeline-wrap">{self.svg()}</div>'

    def __repr__(self) -> str:
        lanes = self.sessions()
        return f"<timeline: {len(self.execs)} executions in {len(lanes)} kernel sessions>"
