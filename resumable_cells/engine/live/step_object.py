"""`from resumable_cells import step`: what a running step may ask of its run.

Clock and randomness come from the run, not from the machine: `step.now()` is the run
epoch and `step.rng()` is seeded from the run seed and the step name, so a replayed or
resumed run makes the same decisions. Using them is recorded, so the step's entry is
valid only for the same epoch or seed.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import random as _random
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np

    from ...records.runs import Run
    from ...storage.store import Store


class StepEngine(Protocol):
    """What `step` asks of the kernel's engine (`engine/kernel.py`'s `Engine`, a room
    above this one): its run, its store and its budget."""

    run: Run
    store: Store

    def spend(self, tokens: int = 0, cost: float = 0.0) -> None: ...


class StepContext:
    """The execution a `step` call refers to; set by the engine while a step runs."""

    def __init__(self, engine: StepEngine, name: str, input_digests: dict[str, str]) -> None:
        self.engine = engine
        self.name = name
        self.input_digests = input_digests
        self.params: dict[str, Any] = {}  # run parameters used: epoch, seed


class _Step:
    _resumable_cells_own = True  # never an input of a step

    def __init__(self) -> None:
        self._ctx: StepContext | None = None

    def _require(self) -> StepContext:
        if self._ctx is None:
            raise RuntimeError("step.* can only be used inside a %%step cell")
        return self._ctx

    @property
    def name(self) -> str:
        return self._require().name

    def now(self) -> dt.datetime:
        """The run epoch, an aware UTC datetime: the same on every resume of the run."""
        ctx = self._require()
        run = ctx.engine.run
        ctx.params["epoch"] = run.epoch
        return run.epoch_datetime()

    @property
    def seed(self) -> int:
        """A 63-bit seed derived from the run seed and this step's name."""
        ctx = self._require()
        ctx.params["seed"] = ctx.engine.run.seed
        raw = f"{ctx.engine.run.seed}:{ctx.name}".encode()
        return int.from_bytes(hashlib.sha256(raw).digest()[:8], "little") >> 1

    def rng(self) -> np.random.Generator:
        """A fresh `numpy.random.Generator` seeded with `step.seed`."""
        import numpy as np

        return np.random.default_rng(self.seed)

    @property
    def random(self) -> _random.Random:
        """A fresh `random.Random` seeded with `step.seed`."""
        return _random.Random(self.seed)

    @property
    def idempotency_key(self) -> str:
        """Stable across resumes of the run: run id, step name and input digests."""
        ctx = self._require()
        parts = [ctx.engine.run.id, ctx.name] + [
            f"{k}={v}" for k, v in sorted(ctx.input_digests.items())
        ]
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]

    def once(self, key: str) -> bool:
        """True the first time `key` is seen in this run, False after (persisted)."""
        ctx = self._require()
        return ctx.engine.store.ledger.first_time(ctx.engine.run.id, key)

    def spend(self, tokens: int = 0, cost: float = 0.0) -> None:
        """Add spend to the run's budget now (kept even if the step later fails)."""
        ctx = self._require()
        ctx.engine.spend(tokens=tokens, cost=cost)

    def __repr__(self) -> str:
        return "<resumable_cells.step>"


step = _Step()


@contextmanager
def running(ctx: StepContext) -> Iterator[StepContext]:
    """`step` refers to `ctx` inside the block (the execution of one step)."""
    previous, step._ctx = step._ctx, ctx
    try:
        yield ctx
    finally:
        step._ctx = previous
