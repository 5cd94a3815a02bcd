"""Helpers for kernel tests of steps: status lines, restarts, files beside the notebook."""

from __future__ import annotations

import shutil
from pathlib import Path

LOAD = "%load_ext resumable_cells"


def status(reply) -> str:
    lines = reply.status_lines()
    assert lines, f"no status line: {reply.outputs}"
    return lines[0]


def served(reply) -> bool:
    return "served from cache" in status(reply)


def restart(kernel, *cells: str) -> None:
    kernel.restart()
    kernel.ok(LOAD)
    for c in cells:
        kernel.ok(c)


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    # Python's own pyc check compares whole seconds and sizes: an edit within the same
    # second to a file of the same size would load the old bytecode. The tests' edits
    # change the size; dropping the cache makes that independent of the clock too.
    shutil.rmtree(path.parent / "__pycache__", ignore_errors=True)


def never_cached(kernel, cell: str, said: str, later, runs: int = 2) -> None:
    """Run `cell` `runs` times: each time it runs, says `not cached: it {said}` and is
    not served, and `later()` holds afterwards; the store keeps no entry of it."""
    for run in range(runs):  # never served: each run does it again
        r = kernel.ok(cell)
        assert f"not cached: it {said}" in r.stderr, (run, r.stderr)
        assert not served(r) and "ran" in status(r)
        later()
    engine = "__import__('resumable_cells').ipython.magics.current_engine()"
    assert kernel.value(f"len(list({engine}.store.entries()))") == 0
