"""One rule for durations, times saved and counts (`resumable_cells.formatting`), checked
against the cases the sidebar's tests check too (`tests/shared/formatting.json`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from resumable_cells import formatting

CASES = json.loads((Path(__file__).parent / "shared" / "formatting.json").read_text())


@pytest.mark.parametrize(("seconds", "text"), CASES["duration"])
def test_duration(seconds, text):
    assert formatting.duration(seconds) == text


@pytest.mark.parametrize(("n", "text"), CASES["count"])
def test_count(n, text):
    assert formatting.count(n) == text


@pytest.mark.parametrize(("n", "text"), CASES["size"])
def test_size(n, text):
    assert formatting.size(n) == text


@pytest.mark.parametrize(("seconds", "text"), CASES["age"])
def test_age(seconds, text):
    assert formatting.age(seconds) == text


@pytest.mark.parametrize(("f", "text"), CASES["percent"])
def test_percent(f, text):
    assert formatting.percent(f) == text


def test_the_status_line_the_table_and_the_cli_use_the_rule():
    """No module writes seconds its own way: the old helpers are gone."""
    root = Path(formatting.__file__).parent
    for path in root.rglob("*.py"):
        text = path.read_text()
        assert "def _secs" not in text, path
        assert ":.2f} s" not in text and ":.3f} s" not in text, path
