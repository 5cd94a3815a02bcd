"""Runs: the persistent state of one notebook's work, across kernel sessions.

A run has an id, an epoch (its logical clock, fixed at creation like SOURCE_DATE_EPOCH),
a seed, a budget and a record. A new kernel of the same notebook continues the run;
`%step run --new` starts another. The cache itself is shared between runs.
"""

from __future__ import annotations

import atexit
import datetime as dt
import logging
import os
import secrets
import threading
import time
import weakref

import msgspec

from ..errors import BudgetExceeded
from ..storage.ledger import LIMITS
from ..storage.store import Store

log = logging.getLogger(__name__)


class Run(msgspec.Struct, frozen=True):
    id: str
    notebook: str
    epoch: str  # ISO 8601, UTC
    seed: int
    created: float

    def epoch_datetime(self) -> dt.datetime:
        return dt.datetime.fromisoformat(self.epoch)


def current(store: Store, notebook: str) -> Run:
    row = store.ledger.run(notebook)
    if row is None:
        return new(store, notebook)
    return Run(**row)


def new(store: Store, notebook: str) -> Run:
    now = time.time()
    # Microseconds kept: two runs started within a second still get distinct epochs.
    stamp = dt.datetime.fromtimestamp(now, dt.timezone.utc)
    run = Run(
        id=f"r-{stamp:%Y%m%d-%H%M%S}-{secrets.token_hex(3)}",
        notebook=notebook,
        epoch=stamp.isoformat(),
        seed=secrets.randbits(63),
        created=now,
    )
    store.ledger.save_run(notebook, msgspec.structs.asdict(run))
    return run


def stored(store: Store) -> list[Run]:
    """Every run the store holds, oldest first."""
    return sorted((Run(**row) for row in store.ledger.runs()), key=lambda r: r.created)


# -- budget ---------------------------------------------------------------------------
# Steps counted while the run has no limit are written this long after the first of
# them, together, by a thread of their own (and before the spend is read here, a limit
# checked or set, the run or store changes, and at exit).
SAVE_STEPS_AFTER_S = 1.0


class Budget:
    """Limits and spend of one run, persisted as they change (cost in micro-units, so
    every update is an atomic integer increment shared by concurrent kernels).

    Tokens and cost are written when spent, and so are steps while the run has a limit.
    Without one the step count only informs, and a live step does not wait for a write
    of its own: steps are written together within a second. Whatever this kernel reads
    (`%step status`, `%step budget`, the sidebar, a limit checked or set) includes them;
    another process reads them up to a second late; a kernel killed (SIGKILL) loses the
    steps of its last second."""

    def __init__(self, store: Store, run_id: str):
        self.store = store
        self.run_id = run_id
        self._unsaved = 0  # steps counted, not yet written
        self._saving: threading.Timer | None = None  # the write of `_unsaved`, due
        self._limited = True  # whether the run had a limit when last checked
        self._lock = threading.Lock()  # the timer's thread, and `step.spend` from threads
        self._pid = os.getpid()  # a forked child never writes its parent's steps

    def limits(self) -> dict:
        return self.store.ledger.limits(self.run_id)

    def set_limits(self, **limits) -> dict:
        current = self.limits()
        current.update({k: v for k, v in limits.items() if v is not None})
        self.save()
        self.store.ledger.set_limits(self.run_id, current)
        self._limited = True  # until the next check reads them
        return current

    def spent(self) -> dict:
        self.save()
        return self.store.ledger.spent(self.run_id)

    def add(self, steps: int = 0, tokens: int = 0, cost: float = 0.0) -> None:
        with self._lock:
            if steps and not tokens and not cost and not self._limited:
                self._unsaved += steps
                if self._saving is None:
                    self._saving = threading.Timer(SAVE_STEPS_AFTER_S, self._save_later)
                    self._saving.name = "resumable-cells-save"
                    self._saving.daemon = True
                    self._saving.start()
                    _UNSAVED.add(self)
                return
            self._save(steps, tokens, cost)

    def save(self) -> None:
        """Write the steps counted and not yet written."""
        with self._lock:
            if self._unsaved and os.getpid() == self._pid:
                self._save()

    def _save_later(self) -> None:
        with self._lock:
            self._saving = None
        try:
            self.save()
        except Exception:  # a store failing: they are written with the next spend
            log.debug("the steps of run %s were not written", self.run_id, exc_info=True)

    def _save(self, steps: int = 0, tokens: int = 0, cost: float = 0.0) -> None:
        steps += self._unsaved
        self.store.ledger.add_spend(self.run_id, steps=steps, tokens=tokens, cost=cost)
        self._unsaved = 0
        if self._saving is not None:
            self._saving.cancel()
            self._saving = None

    def check(self) -> None:
        """Raise BudgetExceeded when a new live step would start past a limit."""
        limits = self.limits()
        self._limited = any(limits.get(name) is not None for name in LIMITS)
        if not self._limited:
            return  # no limit (the usual case): one read, not four, per live step
        spent = self.spent()
        for name in LIMITS:
            limit = limits.get(name)
            if limit is not None and spent[name] >= limit:
                flag = {"steps": "--steps", "tokens": "--tokens", "cost": "--cost"}[name]
                raise BudgetExceeded(
                    f"{name} budget exhausted: spent {_fmt(spent[name])} of {_fmt(limit)}. "
                    f"Raise it with `%step budget {flag} N` (a larger N)."
                )

    def snapshot(self) -> dict:
        return {"limits": self.limits(), "spent": self.spent()}


def _fmt(x) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


# Budgets with steps not yet written: written when the kernel exits.
_UNSAVED: weakref.WeakSet[Budget] = weakref.WeakSet()


@atexit.register
def _save_all() -> None:
    for budget in list(_UNSAVED):
        try:
            budget.save()
        except Exception:  # a store that went away: those steps are not counted
            log.debug("the steps of run %s were not written", budget.run_id, exc_info=True)
