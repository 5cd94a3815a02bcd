"""A changed input whose library pickles it laid out otherwise (plotly rebuilds a figure
from its dict, without the parts that were empty): the mutating step's references into
it lead nowhere after a restart, and the entry serves it whole instead, when nothing
else holds a part of it (`engine/units/byvalue.py`)."""

from __future__ import annotations

import importlib.util

import pytest
from boards import BOARD, GROW, MAKE, MAKE_FULL
from replay import replay


@pytest.mark.parametrize("make", ["MAKE", "MAKE_FULL"], ids=["whole", "replaced"])
def test_a_changed_input_laid_out_otherwise_after_a_hit_is_served_whole(kernel, make):
    cells = [BOARD, globals()[make], GROW]
    live, again = replay(kernel, cells, "(board.spec(), board.part('x').items)")
    assert live == again == "({'x': [1, 2]}, [1, 2])\n"


@pytest.mark.parametrize("make", [MAKE, MAKE_FULL], ids=["whole", "replaced"])
@pytest.mark.parametrize(
    "holder, why",
    [("first = board.part('x')", "first holds a part of it"), ("keep = [board.parts]", "dict")],
)
def test_it_is_not_served_when_something_else_holds_a_part(kernel, make, holder, why):
    # "replaced": the unit's paths all lead somewhere, but the board it binds anew (its
    # class pickles it by its constructor) has new parts: `first` would be left with
    # the old one, a silent difference before.
    cells = [BOARD, make, holder, GROW]
    for c in cells:
        kernel.ok(c)
    kernel.restart()
    kernel.ok("%load_ext resumable_cells")
    for c in cells[:-1]:
        r = kernel.ok(c)
        assert c != make or "served from cache" in r.status_lines()[0], r.status_lines()
    r = kernel.ok(GROW)
    assert "served from cache" not in r.status_lines()[0]
    assert why in kernel.ok("%step why grow").stdout
    probe = "board.spec(), board.part('x') is board.parts['x'], board.parts is keep[0]"
    probe = probe if "keep" in holder else probe.replace("keep[0]", "board.parts")
    assert kernel.ok(f"print(repr(({probe})))").stdout == "({'x': [1, 2]}, True, True)\n"


@pytest.mark.skipif(importlib.util.find_spec("plotly") is None, reason="plotly not installed")
def test_a_plotly_express_figure_changed_in_place_is_served_after_a_restart(kernel):
    cells = [
        "import plotly.express as px",
        "%%step make\nfig = px.scatter(px.data.iris(), x='sepal_width', y='sepal_length')",
        "%%step grow\nfig.update_traces(marker=dict(size=10))\nfig.update_layout(title='iris')",
    ]
    probe = "fig.data[0].marker.size, fig.layout.title.text, fig.data[0].parent is fig"
    live, again = replay(kernel, cells, f"({probe})")
    assert live == again == "(10, 'iris', True)\n"


# The board is changed and rebound in one step to a dict of its parts, its empty one
# too, whose path leads nowhere after a restart: the entry is served whole, and binds
# the dict (it bound the old board, with its new state, before).
REBIND = """%%step rebind
board.part('x').items.append(2)
board = {'x': board.part('x'), 'e': board.part('empty')}"""


def test_a_changed_input_rebound_in_the_same_step_is_served_whole_with_its_new_value(kernel):
    probe = "{k: p.items for k, p in board.items()}"
    live, again = replay(kernel, [BOARD, MAKE, REBIND], probe)
    assert live == again == "{'x': [1, 2], 'e': []}\n"
