"""Hits that left the namespace otherwise than the live run, each found in a real kernel:
the cells run live, then after a restart again, and what the probe prints must be the
same both times. A step that cannot be served right runs live again, saying why.

- Attributes set on a notebook function (`f.cache = 5`) were no part of its digest: lost
  on a hit, and a later step reading them was served the old ones (`hashing/code.py`).
"""

from __future__ import annotations

import pytest
from replay import replay


def twice(kernel, cells: list[str], probe: str) -> tuple[str, str, list[str], str]:
    """(what `print(repr(probe))` prints after `cells` run live, the same after a restart
    and the cells again, the status line of each step of the second pass, what the
    first pass wrote to stderr)."""
    warned = "".join(kernel.ok(c).stderr for c in cells)
    live = kernel.ok(f"print(repr({probe}))").stdout
    kernel.restart()
    kernel.ok("%load_ext resumable_cells")
    lines = []
    for c in cells:
        r = kernel.ok(c)
        if c.startswith("%%step"):
            lines.append(r.status_lines()[0])
    return live, kernel.ok(f"print(repr({probe}))").stdout, lines, warned


# -- attributes of notebook functions and classes --------------------------------------------
@pytest.mark.parametrize(
    "setup, step, probe",
    [
        ("def f(x): return x", "%%step s\nf.cache = 5", "f.cache"),
        ("def f(x): return x", "%%step s\nf.calls = []\nf.calls.append(1)", "f.calls"),
        (
            "def f(x): return x\nf.calls = []\nseen = f.calls",
            "%%step s\nf.calls.append(1)",
            "(f.calls, seen is f.calls)",
        ),
        (
            "def f(x):\n    f.calls += 1\n    return x\nf.calls = 0",
            "%%step s\ny = f(2)",
            "(y, f.calls)",
        ),
    ],
    ids=["set", "set-and-append", "append", "counted-by-itself"],
)
def test_attributes_a_step_sets_on_a_notebook_function_are_served(kernel, setup, step, probe):
    live, again = replay(kernel, [setup, step], probe)
    assert live == again


def test_a_step_reading_a_function_attribute_is_keyed_on_it(kernel):
    kernel.ok("def f(x): return x\nf.cache = 5")
    kernel.ok("%%step t\ny = f.cache")
    kernel.ok("f.cache = 6")
    r = kernel.ok("%%step t\ny = f.cache")
    assert "served" not in r.status_lines()[0]
    assert kernel.ok("print(y)").stdout == "6\n"
