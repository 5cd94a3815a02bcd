"""The figures matplotlib's inline backend shows after a cell, as outputs of a step.

The inline backend (ipykernel's default) draws the figures a cell made once the cell has
run: its `flush_figures` is a `post_execute` callback, so the figures come after the
cell's result and outside the step's capture. A step runs that same function when its
body has run (`flush`), so that the figures are the same mime bundles with the same
metadata and are closed (or left open) as the backend would; their display is held and
shown after the cell (`show_after_cell`), where the plain cell shows them. A hit shows
its stored figures the same way. Restoring a figure (a step that bound `fig`) registers
it with pyplot again, which queues it for drawing: a hit leaves the backend's queue as
it found it (`queue_kept`). pyplot loads the backend at the first figure, and with it
the formatters that show a figure as an image: a hit of a step whose live run had it
loaded loads it too (`activate`), so that a restored `fig` shows as it did.

A figure output is `("figure", data, metadata)`. Imports nothing of the package; does
nothing unless the inline backend is in use.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from . import capture

KIND = "figure"
_BACKEND = "matplotlib_inline.backend_inline"


def _backend(shell) -> Any:
    """The inline backend's module, when it flushes this shell's cells."""
    module = sys.modules.get(_BACKEND)
    if module is None:
        return None
    if module.flush_figures not in shell.events.callbacks.get("post_execute", ()):
        return None
    return module


def in_use(shell) -> bool:
    """Whether the inline backend flushes this shell's cells (pyplot has loaded it)."""
    return _backend(shell) is not None


def activate(shell) -> None:
    """Load the inline backend as pyplot does at its first figure, when pyplot is set to
    use it and has not loaded it yet (so no pyplot figure exists to be closed)."""
    if _backend(shell) is not None:
        return
    import matplotlib
    import matplotlib.pyplot as plt

    backend = matplotlib.get_backend()
    if backend in ("inline", f"module://{_BACKEND}"):
        plt.switch_backend(backend)


def flush(shell) -> list[tuple]:
    """Draw now the figures the inline backend would show after this cell, as figure
    outputs, without showing them; the backend is left with nothing to flush."""
    module = _backend(shell)
    if module is None or not module.show._draw_called:
        return []
    held: list[tuple] = []
    pub = shell.display_pub
    publish = pub.publish

    def hold(data, metadata=None, *args, **kwargs):
        held.append((KIND, data, metadata or {}))

    pub.publish = hold
    try:
        module.flush_figures()
    finally:
        pub.publish = publish
    return held


def show_after_cell(shell, outputs: list[tuple]) -> None:
    """Show the figure outputs among `outputs` once the cell has run (its result
    shown), where the inline backend shows a plain cell's figures."""
    figures = [o for o in outputs if o[0] == KIND]
    if not figures:
        return

    def show(*_):
        shell.events.unregister("post_execute", show)
        for _, data, metadata in figures:
            capture.publish_unflushed(shell, data, metadata)  # after what the cell wrote

    shell.events.register("post_execute", show)


@contextmanager
def queue_kept(shell) -> Iterator[None]:
    """The inline backend's queue of figures to draw after the cell is, after the block,
    what it was before it (restored figures are not drawn again)."""
    module = _backend(shell)
    before = (list(module.show._to_draw), module.show._draw_called) if module else ([], False)
    try:
        yield
    finally:
        module = _backend(shell)  # restoring a figure may have loaded the backend
        if module is not None:
            module.show._to_draw, module.show._draw_called = before
