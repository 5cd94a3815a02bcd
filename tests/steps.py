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
