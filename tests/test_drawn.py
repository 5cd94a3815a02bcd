"""Steps that draw from a global random generator (`state/drawn.py`): once the notebook
seeded it, a hit is served only where the generator stands as it stood when the step
drew from it; what nothing seeded is served as before."""

from __future__ import annotations

import random

import numpy as np
import pytest

SEED = "import numpy as np\nimport random\nnp.random.seed(0)\nrandom.seed(0)"
DRAWS = {
    "numpy": ("%%step a\na = np.random.rand({n}).round(6).tolist()", "%%step b\nb = np.random.rand(2).round(6).tolist()\nprint(b)"),
    "random": ("%%step a\na = [random.random() for _ in range({n})]", "%%step b\nb = [round(random.random(), 6) for _ in range(2)]\nprint(b)"),
}  # fmt: skip


def _truth(which: str, first: int) -> list[float]:
    """What a plain run prints for `b` after `a` drew `first` numbers from the seed."""
    if which == "numpy":
        rs = np.random.RandomState(0)
        rs.rand(first)
        return rs.rand(2).round(6).tolist()
    rnd = random.Random(0)
    for _ in range(first):
        rnd.random()
    return [round(rnd.random(), 6) for _ in range(2)]


@pytest.mark.parametrize("which", DRAWS)
def test_a_step_after_an_edited_draw_from_a_seeded_generator_runs_again(kernel, which):
    a, b = DRAWS[which]
    kernel.ok(SEED)
    said = kernel.ok(a.format(n=3)).stderr
    assert "directly: it draws from the global generator" in said
    assert kernel.ok(b).stdout.strip() == str(_truth(which, 3))
    kernel.restart()
    kernel.ok("%load_ext resumable_cells")
    kernel.ok(SEED)
    kernel.ok(a.format(n=4))  # the earlier cell, edited: it draws one number more
    r = kernel.ok(b)
    assert r.stdout.strip() == str(_truth(which, 4)), r.status_lines
    assert "is not where it was when the step drew from it" in r.status_lines()[-1]


@pytest.mark.parametrize("which", DRAWS)
def test_a_seeded_notebook_run_again_as_it_was_is_served_whole(kernel, which):
    a, b = DRAWS[which]
    kernel.ok(SEED)
    kernel.ok(a.format(n=3))
    kernel.ok(b)
    kernel.restart()
    kernel.ok("%load_ext resumable_cells")
    kernel.ok(SEED)
    assert "served" in kernel.ok(a.format(n=3)).status_lines()[-1]
    r = kernel.ok(b)
    assert "served" in r.status_lines()[-1]
    assert r.stdout.strip() == str(_truth(which, 3))
    # and each generator stands where the live run left it, after five draws
    assert kernel.value(NEXT[which]) == _next(which, 5)


NEXT = {"numpy": "float(np.random.rand())", "random": "random.random()"}


def _next(which: str, drawn: int) -> float:
    gen = np.random.RandomState(0) if which == "numpy" else random.Random(0)
    for _ in range(drawn):
        gen.random_sample() if which == "numpy" else gen.random()
    return float(gen.random_sample() if which == "numpy" else gen.random())


def test_a_step_run_again_in_the_same_seeded_kernel_draws_on_as_a_plain_cell(kernel):
    kernel.ok(SEED)
    kernel.ok(DRAWS["numpy"][0].format(n=3))
    first = kernel.ok(DRAWS["numpy"][1]).stdout.strip()
    again = kernel.ok(DRAWS["numpy"][1])  # the generator moved on: a plain cell draws anew
    rs = np.random.RandomState(0)
    rs.rand(5)
    assert again.stdout.strip() == str(rs.rand(2).round(6).tolist()) != first


def test_a_step_that_seeds_before_it_draws_is_served_wherever_the_generator_stands(kernel):
    cell = (
        "%%step own\nimport numpy as np\nnp.random.seed(7)\nx = np.random.rand(2).round(6).tolist()"
    )
    kernel.ok("import numpy as np\nnp.random.seed(1)\nnp.random.rand(9)")
    kernel.ok(cell)
    kernel.restart()
    kernel.ok("%load_ext resumable_cells")
    kernel.ok("import numpy as np\nnp.random.seed(2)")  # elsewhere: it does not matter
    assert "served" in kernel.ok(cell).status_lines()[-1]
    assert kernel.value("x") == np.random.RandomState(7).rand(2).round(6).tolist()


def test_draws_nothing_seeded_are_served_after_a_restart(kernel):
    # Their numbers are new in every run: the served ones are one such run's, as before.
    cell = "%%step noise\nimport numpy as np\nx = np.random.rand(3)"
    kernel.ok(cell)
    x = kernel.value("x.tolist()")
    kernel.restart()
    kernel.ok("%load_ext resumable_cells")
    r = kernel.ok(cell)
    assert "served" in r.status_lines()[-1]
    assert kernel.value("x.tolist()") == x
