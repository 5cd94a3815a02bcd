"""Python's cyclic garbage collector, paused while the engine works and as the notebook
left it while the notebook's own code runs.

A step's own work (the key's digests, the pickles of its values and their load-back
check, a hit's restore) makes container objects by the thousand, nearly all freed by
reference counting before the step ends. The collector does not know that: every 700
such objects made and not yet freed start a young collection, every tenth of those an
older one, and every tenth of these may start a collection of the whole heap, whose cost
grows with everything the notebook holds, not with what the engine made (120 to 140 ms
in a SymPy notebook, paid by the cell that happens to come next: a cell that took 40 ms
plain took 160 to 200 ms after a few steps). Paused, the engine's temporaries are gone
before the collector counts them. Objects the engine keeps (restored values, its own
records) are counted when the collector next runs, as any allocation of the notebook's
would be; a cycle it made waits for that collection.

The collector is never turned on by the engine where the notebook turned it off: a
pause restores the state it found, and the state the step's body leaves (a cell that
calls `gc.disable()`) is the one restored at the end.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType


class Paused:
    """`with Paused() as pause:` the collector is off; `with pause.lifted():` (the
    notebook's code) it is as it was before the pause."""

    def __init__(self) -> None:
        self.was_enabled = False

    def __enter__(self) -> Paused:
        self.was_enabled = gc.isenabled()
        gc.disable()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        err: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.was_enabled:
            gc.enable()

    @contextmanager
    def lifted(self) -> Iterator[None]:
        """The collector as the notebook had it, for the notebook's own code; what that
        code leaves (it may turn the collector off or on) is what the pause restores."""
        if self.was_enabled:
            gc.enable()
        try:
            yield
        finally:
            self.was_enabled = gc.isenabled()
            gc.disable()
