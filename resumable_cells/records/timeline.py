"""`%step timeline`: the run's executions as an inline SVG, one lane per kernel session.

Plain SVG inside an HTML output, no JavaScript, so Notebook, VS Code and nbconvert HTML
show it too. Every lane starts at the left edge and all lanes share one time scale, so
a resume that took 0.7 s is drawn a tenth as long as the 7 s run it resumed. Idle gaps
between executions are shortened by `lane_axes`, the rule the sidebar follows too
(`labextension/src/viewmodel.ts`, cases in `tests/shared/time_axis.json`). Colours
and words come from `palette`; the dark theme's are applied by a style rule in
JupyterLab, Notebook 7 and VS Code.
"""

from __future__ import annotations

import bisect
import html
from collections.abc import Callable, Sequence

from .. import formatting, palette

MAX_GAP_S = 2.0  # an idle gap takes at most this long on the axis ...
GAP_OF_MEAN_BAR = 0.25  # ... and at most a quarter of a mean busy stretch
_LANE, _LEFT, _WIDTH = 26, 150, 620


def lane_axes(
    lanes: Sequence[Sequence[tuple[float, float]]],
) -> tuple[list[Callable[[float], float]], float]:
    """For each lane (its executions' (start, end) wall times), a map from wall time to
    seconds on a common axis where the lane starts at 0, with every idle gap shortened to
    `min(MAX_GAP_S, GAP_OF_MEAN_BAR * busy / stretches)` over all lanes; and the axis
    length (the longest lane, at least 1 ms)."""
    merged = [_merge(intervals) for intervals in lanes]
    stretches = sum(len(m) for m in merged)
    busy = sum(e - s for m in merged for s, e in m)
    cap = min(MAX_GAP_S, max(GAP_OF_MEAN_BAR * busy / max(stretches, 1), 1e-3))
    maps, length = [], 1e-3
    for m in merged:
        to_axis, lane_length = _lane_map(m, cap)
        maps.append(to_axis)
        length = max(length, lane_length)
    return maps, length


def _merge(intervals: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[list[float]] = []
    for s, e in sorted(intervals):
        e = max(s, e)
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def _lane_map(merged: list[tuple[float, float]], cap: float):
    if not merged:
        return (lambda t: 0.0), 0.0
    wall, axis = [merged[0][0]], [0.0]
    for i, (s, e) in enumerate(merged):
        if i:
            wall.append(s)
            axis.append(axis[-1] + min(s - merged[i - 1][1], cap))
        wall.append(e)
        axis.append(axis[-1] + (e - s))

    def to_axis(t: float) -> float:
        i = bisect.bisect_right(wall, t)
        if i == 0:
            return 0.0
        if i >= len(wall):
            return axis[-1]
        span = wall[i] - wall[i - 1]
        frac = (t - wall[i - 1]) / span if span > 0 else 0.0
        return axis[i - 1] + frac * (axis[i] - axis[i - 1])

    return to_axis, axis[-1]


def busy_seconds(intervals: Sequence[tuple[float, float]]) -> float:
    """Time some execution of the lane was running: idle time not counted."""
    return sum(e - s for s, e in _merge(intervals))


def _end(e: dict) -> float:
    if e.get("end"):
        return max(e["end"], e["start"])
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
            f'<svg xmlns="http://www.w3.org/2000/svg" class="rc-timeline" '
            f'width="{_LEFT + _WIDTH + 10}" height="{height}" font-family="sans-serif" '
            'font-size="11" fill="currentColor">'
        ]
        if not self.execs:
            parts.append('<text x="4" y="16">no executions yet</text></svg>')
            return "".join(parts)
        per_lane = [[e for e in self.execs if e["session"] == s] for s in lanes]
        spans = [[(e["start"], _end(e)) for e in lane] for lane in per_lane]
        maps, length = lane_axes(spans)
        scale = _WIDTH / length
        for i, (session, execs) in enumerate(zip(lanes, per_lane)):
            y = 4 + i * _LANE
            label = f"session {i + 1} · {formatting.duration(busy_seconds(spans[i]))}"
            parts.append(
                f'<g class="rc-lane" data-session="{html.escape(session)}">'
                f'<text x="4" y="{y + 15}">{label}</text>'
                f'<line x1="{_LEFT}" x2="{_LEFT + _WIDTH}" y1="{y + 10}" y2="{y + 10}" '
                'stroke="currentColor" stroke-opacity="0.25" stroke-width="1"/>'
            )
            parts.extend(self._bar(e, y, maps[i], scale) for e in execs)
            parts.append("</g>")
        parts.append(self._legend(height - 8))
        parts.append("</svg>")
        return "".join(parts)

    def _bar(self, e: dict, y: float, to_axis, scale: float) -> str:
        x0 = _LEFT + to_axis(e["start"]) * scale
        x1 = _LEFT + to_axis(_end(e)) * scale
        status = e["status"]
        tip = f"{e['step']}: {palette.label(status)}"
        if e.get("duration_s") is not None:
            tip += f", {formatting.duration(e['duration_s'])}"
        if e.get("reason"):
            tip += f" ({e['reason']})"
        return (
            f'<rect class="rc-bar" data-status="{status}" x="{x0:.1f}" y="{y + 3}" '
            f'width="{max(2.0, x1 - x0):.1f}" height="14" rx="2" '
            f'fill="{palette.colour(status)}"><title>{html.escape(tip)}</title></rect>'
        )

    def _legend(self, y: float) -> str:
        out, x = [], _LEFT
        for status in palette.EXECUTION_STATUSES:
            out.append(
                f'<rect data-status="{status}" x="{x}" y="{y - 9}" width="10" height="10" '
                f'fill="{palette.colour(status)}"/>'
                f'<text x="{x + 13}" y="{y}">{palette.label(status)}</text>'
            )
            x += 88
        return "".join(out)

    def _repr_html_(self) -> str:
        return f'<div class="rc-timeline-wrap">{_dark_style()}{self.svg()}</div>'

    def __repr__(self) -> str:
        lanes = self.sessions()
        return f"<timeline: {len(self.execs)} executions in {len(lanes)} kernel sessions>"


def _dark_style() -> str:
    """The dark theme's colours, for the frontends that say they are dark."""
    dark = ("[data-jp-theme-light='false'] .rc-timeline", "body.vscode-dark .rc-timeline")
    rules = []
    for status in palette.STATUSES:
        selector = ", ".join(f'{d} [data-status="{status}"]' for d in dark)
        rules.append(f"{selector} {{ fill: {palette.colour(status, 'dark')}; }}")
    return "<style>" + " ".join(rules) + "</style>"
