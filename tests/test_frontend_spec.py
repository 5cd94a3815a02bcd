"""What the sidebar shares with Python: the status palette (one definition, enough
contrast in both themes), the `%%step` argument spec and the timeline's time axis.

The TypeScript side reads the same data (`labextension/src/spec.json`,
`tests/shared/time_axis.json`) in its vitest tests.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from resumable_cells import palette
from resumable_cells.ipython import frontend_spec
from resumable_cells.records import timeline

SHARED = Path(__file__).parent / "shared"


def test_the_committed_spec_is_what_python_declares():
    """Fails when `%%step` gains, loses or changes a flag (or a colour changes) and
    labextension/src/spec.json was not regenerated."""
    assert frontend_spec.default_path().read_text(encoding="utf-8") == frontend_spec.text(), (
        "run `python -m resumable_cells.ipython.frontend_spec` and commit labextension/src/spec.json"
    )
    assert frontend_spec.main(["--check"]) == 0


def test_the_spec_lists_every_flag_of_the_magic_with_its_arity():
    from resumable_cells.ipython.magics import StepMagics

    spec = frontend_spec.step_magic()
    by_name = {a["name"]: a["takes"] for a in spec["arguments"]}
    parser_flags = {s for a in StepMagics.step.parser._actions for s in a.option_strings} | {"name"}
    assert set(by_name) == parser_flags
    assert by_name["--ignore"] == by_name["--deps"] == "+"
    assert by_name["--version"] == 1 and by_name["--effect"] == "flag"
    assert "--dir" not in by_name and "--name" not in by_name


def test_the_cases_are_what_the_magic_parses():
    from IPython.core.magic_arguments import parse_argstring

    from resumable_cells.ipython.magics import StepMagics

    for case in frontend_spec.step_magic()["cases"]:
        if "error" in case:
            with pytest.raises(Exception):  # noqa: B017 (UsageError, or ValueError from shlex)
                parse_argstring(StepMagics.step, case["line"])
        else:
            assert vars(parse_argstring(StepMagics.step, case["line"])) == case["parsed"]


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize("status", sorted(palette.STATUSES))
def test_every_status_colour_has_contrast_in_both_themes(status, theme):
    colour = palette.colour(status, theme)
    for background in palette.THEMES[theme]["backgrounds"]:
        assert palette.contrast(colour, background) >= 3.0, (status, theme, background)
    assert palette.contrast(colour, palette.THEMES[theme]["on_status"]) >= 4.5


def test_statuses_are_told_apart_and_one_word_each():
    for theme in ("light", "dark"):
        colours = [palette.colour(s, theme) for s in palette.STATUSES]
        assert len(set(colours)) == len(colours)
    labels = [palette.label(s) for s in palette.STATUSES]
    assert len(set(labels)) == len(labels)
    assert palette.label("hit") == "served" and palette.label("live") == "ran"


def test_the_svg_timeline_draws_with_the_palette_in_both_themes():
    execs = [
        {"session": "k-1", "step": "a", "status": s, "start": 10.0 + i, "end": 10.5 + i,
         "duration_s": 0.5, "reason": None}
        for i, s in enumerate(palette.EXECUTION_STATUSES)
    ]  # fmt: skip
    html = timeline.Timeline(execs)._repr_html_()
    for status in palette.EXECUTION_STATUSES:
        assert f'data-status="{status}" x=' in html
        assert f'fill="{palette.colour(status)}"' in html
        assert f"fill: {palette.colour(status, 'dark')}" in html
    assert "[data-jp-theme-light='false']" in html


CASES = json.loads((SHARED / "time_axis.json").read_text())["cases"]


@pytest.mark.parametrize("case", CASES, ids=[c["title"] for c in CASES])
def test_time_axis(case):
    maps, length = timeline.lane_axes([[tuple(i) for i in lane] for lane in case["lanes"]])
    assert length == pytest.approx(case["length"], abs=1e-6)
    for to_axis, lane, want in zip(maps, case["lanes"], case["axis"]):
        got = [x for s, e in lane for x in (to_axis(s), to_axis(e))]
        assert got == pytest.approx([x for pair in want for x in pair], abs=1e-6)


def test_lanes_share_one_scale_so_a_resume_is_drawn_short():
    first = [(0.0, 3.0), (3.1, 8.6)]
    resume = [(100.0, 100.3), (100.35, 100.7)]
    maps, length = timeline.lane_axes([first, resume])
    assert maps[1](100.7) / length == pytest.approx(0.7 / 8.6, rel=0.05)
    assert timeline.busy_seconds([(0, 1), (0.5, 2), (100, 101)]) == pytest.approx(3.0)
