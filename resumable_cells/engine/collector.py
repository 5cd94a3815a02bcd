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

The engine's own modules are kept out of the collector's count (`settle_once`). A
collection of the whole heap starts when the objects that reached the oldest generation
since the last one outnumber a quarter of those it kept; the engine's modules, imported
by the first step and the first live run (about 9,000 objects: functions, classes, their
dicts), are permanent, yet counted as they pass through the young generations they
brought that collection forward: one whole-heap collection more than the plain run in
a NumPy lecture and a pandas chapter, 30 to 60 ms paid by whichever cell came next.
Moved straight to the oldest generation once imported, they are collected with it as
any old object and weigh on no schedule the notebook's own objects set.

The engine's modules may also be imported by a thread of ours while the notebook runs
(`ipython/warmup.py`). A thread cannot pause the collector without pausing the
notebook's code, and turning it back on could undo a `gc.disable()` the notebook made
meanwhile. It holds the young generation's threshold instead (`held_off`), which a
notebook's own change is told apart from, and settles what it imported without a young
collection of its own (that would run the notebook's finalizers on our thread).
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType

log = logging.getLogger(__name__)
HELD = (1 << 30) + 7  # the young threshold while `held_off`: no automatic collection starts
_SETTLED: set[str] = set()  # the kinds of import `settle_once` has settled in this process


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


def settle_once(what: str, collecting: bool) -> None:
    """Once per process for `what` (the engine's modules loading, a first step, the
    engine's start or a first live run has just imported): move every object the
    collector tracks to its oldest generation without counting it toward the next
    collection of the whole heap (see the module's docstring). A young collection first
    frees what the imports left as garbage, when the notebook has the collector
    `collecting` (as it left it, under a pause) and no debugging flag set
    (`gc.set_debug`: that collection would print, or save its garbage, where a plain
    cell's would not); `gc.freeze` then `gc.unfreeze` move the rest: two list merges,
    whatever the heap's size. The notebook's objects made since the last young
    collection move with the engine's: a cycle among them is freed by the next
    collection of the whole heap rather than by the next young one. Left alone when
    the notebook froze objects itself (`gc.freeze`): unfreezing would release them."""
    if what in _SETTLED:
        return
    _SETTLED.add(what)
    if gc.get_freeze_count():
        log.debug("objects are frozen (gc.freeze): the engine's %s imports are not settled", what)
        return
    if collecting and not gc.get_debug():
        gc.collect(0)  # (what the imports left as garbage: freed now, not with the old)
    gc.freeze()
    gc.unfreeze()


@contextmanager
def held_off() -> Iterator[None]:
    """No automatic collection starts while this runs (in any thread: the threshold is
    the process's), and the young generation's threshold is as it was after, unless the
    notebook set one meanwhile: then theirs is kept. For a thread of ours that must not
    turn the collector on or off (`gc.disable` is the notebook's to call). A collector
    turned off by a zero threshold is left as it is."""
    young, *older = gc.get_threshold()
    if young == 0:
        yield
        return
    gc.set_threshold(HELD, *older)
    try:
        yield
    finally:
        now, *older_now = gc.get_threshold()
        if now == HELD:
            gc.set_threshold(young, *older_now)
        else:
            log.debug("the notebook set the collector's threshold meanwhile: %s kept", now)
