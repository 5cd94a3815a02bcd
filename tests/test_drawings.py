"""Figures and artists through real kernels: the matplotlib cells that used to hang the
hasher finish and are served after a restart; a step that reads a figure is served with
what it changed, and never after a cell outside %%step changed the figure."""

from __future__ import annotations

import pytest

pytest.importorskip("matplotlib")

SETUP = "%matplotlib inline\nimport matplotlib.pyplot as plt\nimport numpy as np"
ISSUE_CELLS = [
    "%%step\nplt.plot([1, 2, 3])",
    "%%step\nfig, ax = plt.subplots()",
    "%%step\nx = np.random.default_rng(0).normal(size=500)\nplt.hist(x); plt.title('x');",
    "%%step\nplt.scatter(x, x ** 2)",
]
SKLEARN_CELL = """%%step curve
from sklearn.datasets import load_iris
from sklearn.model_selection import validation_curve
from sklearn.svm import SVC
X, y = load_iris(return_X_y=True)
train, test = validation_curve(SVC(), X, y, param_name="C", param_range=[0.1, 1.0], cv=3)"""


def _served(reply) -> bool:
    return any("served from cache" in s for s in reply.status_lines())


def test_the_matplotlib_cells_finish_and_are_served_after_a_restart(kernel):
    cells = [SETUP, *ISSUE_CELLS]
    if _has("sklearn"):
        cells.append(SKLEARN_CELL)
    for cell in cells:
        kernel.ok(cell, timeout=90)  # used to hang: a timeout here is the failure
    kernel.restart()
    kernel.ok("%load_ext resumable_cells")
    replies = [kernel.ok(cell, timeout=90) for cell in cells]
    assert [c for c, r in zip(cells[1:], replies[1:]) if not _served(r)] == []
    assert kernel.value("plt.get_fignums()") == []  # restored figures are not shown again


FIGURE_STEPS = [
    SETUP,
    "%%step draw\nfig, ax = plt.subplots()\nax.plot([1, 2, 3])",
    "%%step label\nax.set_title('three points')\nax.plot([3, 2, 1])\nfig",
]
FIGURE_PROBE = "print(len(ax.lines), ax.get_title(), ax.figure.get_size_inches().tolist())"


def test_a_step_reading_a_figure_is_served_with_what_it_changed(kernel):
    for cell in FIGURE_STEPS:
        kernel.ok(cell)
    live = kernel.ok(FIGURE_PROBE).stdout
    kernel.restart()
    kernel.ok("%load_ext resumable_cells")
    replies = [kernel.ok(cell) for cell in FIGURE_STEPS]
    assert all(_served(r) for r in replies[1:])
    assert kernel.ok(FIGURE_PROBE).stdout == live == "2 three points [6.4, 4.8]\n"


PANEL_STEPS = [
    SETUP,
    "%%step panels\nfig, (left, right) = plt.subplots(1, 2)\nleft.plot([1, 2])",
    "%%step titles\nright.set_title('right')\nleft.set_title('left')",
]


def test_every_axes_of_a_figure_is_itself_again_after_a_restart(kernel):
    # A restored artist carries the tokens its digest had, so the steps after it find
    # the same keys: the second axes (of a type met earlier in the same pickle) too.
    for cell in PANEL_STEPS:
        kernel.ok(cell)
    kernel.restart()
    kernel.ok("%load_ext resumable_cells")
    replies = [kernel.ok(cell) for cell in PANEL_STEPS]
    assert [c for c, r in zip(PANEL_STEPS[1:], replies[1:]) if not _served(r)] == []
    assert kernel.ok("print(left.get_title(), right.get_title())").stdout == "left right\n"


def test_a_figure_changed_outside_steps_is_never_served_stale(kernel):
    kernel.ok(SETUP)
    kernel.ok("%%step draw\nfig, ax = plt.subplots()")
    read = "%%step read\ntitle = ax.get_title()"
    kernel.ok("ax.set_title('one')")
    kernel.ok(read)
    assert kernel.value("title") == "one"
    kernel.ok("ax.set_title('two')")  # a plain cell: the figure may have changed
    r = kernel.ok(read)
    assert not _served(r)
    assert kernel.value("title") == "two"


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None
