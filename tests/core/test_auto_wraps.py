"""Which cells auto mode puts under `%%step`: the rule `verify` uses too (a cell that
starts with another cell magic stays plain), plus our own command cells."""

from __future__ import annotations

import pytest

from resumable_cells.ipython.auto import wraps
from resumable_cells.verify.wrap import wrap


@pytest.mark.parametrize(
    ("source", "wrapped"),
    [
        ("x = 1", True),
        ("\n\nx = 1\n", True),
        ("# only a comment\n# !curl ...", True),
        ("%time y = f(x)", True),
        ("!ls", True),
        ("%%time\nx = 1", False),
        ("\n%%bash\necho hi", False),
        ("%%step fit --effect\nx = 1", False),
        ("%step status", False),
        ("%load_ext resumable_cells\n%step auto on", False),
        ("# settings\n%config StepMagics.quiet = True", False),
        ("%step status\nx = 1", True),
        ("", False),
        ("   \n", False),
    ],
)
def test_which_cells_auto_mode_wraps(source, wrapped):
    assert wraps(source) is wrapped


def test_auto_mode_and_verify_agree_on_cells_with_a_cell_magic():
    import nbformat

    sources = ["x = 1", "%%time\nx = 2", "# note", "%%writefile f.txt\nhi", "y = x"]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    plain_in_verify = set(wrap(nb).not_wrapped)
    plain_in_auto = {i for i, s in enumerate(sources) if not wraps(s)}
    assert plain_in_verify == plain_in_auto == {1, 3}
