"""The word and the colour of each status, in the light and the dark theme: the one
definition that the SVG timeline (`%step timeline`) and the sidebar use. The sidebar
reads it from `labextension/src/spec.json`, which `python -m resumable_cells.frontend_spec`
writes from here (a test fails when the two differ).

Every colour keeps a contrast of at least 3:1 with the backgrounds it is drawn on
(WCAG's rule for graphics), and a badge's text (`on_status`) at least 4.5:1 with the
status colour under it; `tests/test_palette.py` checks both.
"""

from __future__ import annotations

# status -> (the word shown, light-theme colour, dark-theme colour)
STATUSES: dict[str, tuple[str, str, str]] = {
    "hit": ("served", "#2e7d32", "#81c784"),
    "live": ("ran", "#1565c0", "#64b5f6"),
    "effect": ("effect", "#6a1b9a", "#ce93d8"),
    "error": ("error", "#c62828", "#ff8a80"),
    "interrupted": ("interrupted", "#616161", "#bdbdbd"),
    "refused": ("refused", "#ad1457", "#f48fb1"),
    "running": ("running", "#00838f", "#4dd0e1"),
    "stale": ("stale", "#8f5b00", "#ffd54f"),
    "none": ("not run", "#757575", "#9e9e9e"),
}

# theme -> the backgrounds statuses are drawn on (JupyterLab's layout colours 0-2) and
# the text colour of a badge
THEMES: dict[str, dict] = {
    "light": {"backgrounds": ["#ffffff", "#eeeeee"], "on_status": "#ffffff"},
    "dark": {"backgrounds": ["#111111", "#212121", "#424242"], "on_status": "#111111"},
}

#: The statuses an execution can end in (and `running`), in legend order.
EXECUTION_STATUSES = ("hit", "live", "effect", "error", "interrupted", "refused", "running")


def label(status: str) -> str:
    return STATUSES.get(status, (status, "", ""))[0]


def colour(status: str, theme: str = "light") -> str:
    _, light, dark = STATUSES.get(status, STATUSES["none"])
    return dark if theme == "dark" else light


def contrast(a: str, b: str) -> float:
    """WCAG 2 contrast ratio of two `#rrggbb` colours (1 to 21)."""
    la, lb = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def _luminance(hex_colour: str) -> float:
    h = hex_colour.lstrip("#")
    channels = [int(h[i : i + 2], 16) / 255 for i in (0, 2, 4)]
    r, g, b = (c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b
