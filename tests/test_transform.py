"""A cell as the engine transforms it is the cell as IPython's `transform_cell` would
transform it at that moment (engine/code/transform.py): its static part remembered,
what reads the namespace and the transformers a notebook adds done each time."""

from __future__ import annotations

import inprocess
import pytest

from resumable_cells.engine.code.transform import Transforms

CELLS = [
    "x = 1\n",
    "load('m.npy')\n",
    "load('m.npy')",
    "a = 1\nb = 2\nprint(a + b)\n",
    "!echo hi\n",
    "files = !ls\n",
    "%time y = 2\n",
    "%%time\nz = 3\n",
    "pwd\n",
    "who\n",
]


@pytest.fixture
def shell():
    sh = inprocess.shell()
    yield sh
    sh.reset(new_session=False)


def test_the_transform_is_ipythons_as_the_namespace_changes(shell):
    transforms = Transforms(shell)
    for cell in CELLS:
        assert transforms(cell) == shell.transform_cell(cell), cell
    shell.push({"load": print, "pwd": 1, "who": str})  # names that shadow magics
    for cell in CELLS:
        assert transforms(cell) == shell.transform_cell(cell), cell
    assert "run_line_magic" not in transforms("load('m.npy')\n")


def test_transformers_a_notebook_adds_later_are_applied(shell):
    transforms = Transforms(shell)
    assert transforms("x = LOUD\n") == "x = LOUD\n"

    def cleanup(lines):
        return [line.replace("LOUD", "1") for line in lines]

    def post(lines):
        return [line.replace("QUIET", "0") for line in lines]

    shell.input_transformers_cleanup.append(cleanup)
    shell.input_transformers_post.append(post)
    try:
        assert transforms("x = LOUD\n") == shell.transform_cell("x = LOUD\n") == "x = 1\n"
        assert transforms("y = QUIET\n") == "y = 0\n"
    finally:
        shell.input_transformers_cleanup.remove(cleanup)
        shell.input_transformers_post.remove(post)
    assert transforms("x = LOUD\n") == "x = LOUD\n"


def test_the_plan_takes_names_earlier_cells_bind_as_bound(shell):
    transforms = Transforms(shell)
    assert "run_line_magic" in transforms("load('m.npy')\n")
    assert transforms("load('m.npy')\n", shadowed={"load"}) == "load('m.npy')\n"
    assert shell.automagic  # put back
