"""Runs: the persistent state of one notebook's work, across kernel sessions.

A run has an id, an epoch (its logical clock, fixed at creation like SOURCE_DATE_EPOCH),
a seed, a budget and a record. A new kernel of the same notebook continues the run;
`%step run --new` starts another. The cache itself is shared between runs.
"""

from __future__ import annotations

import datetime as dt
import os
import secrets
import time
from dataclasses import asdict, dataclass

from ..errors import BudgetExceeded
from ..storage.ledger import LIMITS
from ..storage.store import Store


@dataclass(frozen=True)
class Run:
    id: str
    notebook: str
    epoch: str  # ISO 8601, UTC
    seed: int
    created: float

    def epoch_datetime(self) -> dt.datetime:
        return dt.datetime.fromisoformat(self.epoch)


def session_path(user_ns: dict | None = None) -> str:
    """The notebook path the kernel's session names (`__session__`, which ipykernel
    sets, else JPY_SESSION_NAME, which JupyterLab sets); "" without a session."""
    return str((user_ns or {}).get("__session__") or os.environ.get("JPY_SESSION_NAME") or "")


def notebook_id(user_ns: dict | None = None) -> str:
    """The notebook this kernel serves: its file name, from the kernel's session, else
    "" (the kernels of one working directory without a session share one run)."""
    return os.path.basename(session_path(user_ns))


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
    store.ledger.save_run(notebook, asdict(run))
    return run


def stored(store: Store) -> list[Run]:
    """Every run the store holds, oldest first."""
    return sorted((Run(**row) for row in store.ledger.runs()), key=lambda r: r.created)


# -- budget ---------------------------------------------------------------------------
class Budget:
    """Limits and spend of one run, persisted as they change (cost in micro-units, so
    every update is an atomic integer increment shared by concurrent kernels)."""

    def __init__(self, store: Store, run_id: str):
        self.store = store
        self.run_id = run_id

    def limits(self) -> dict:
        return self.store.ledger.limits(self.run_id)

    def set_limits(self, **limits) -> dict:
        current = self.limits()
        current.update({k: v for k, v in limits.items() if v is not None})
        self.store.ledger.set_limits(self.run_id, current)
        return current

    def spent(self) -> dict:
        return self.store.ledger.spent(self.run_id)

    def add(self, steps: int = 0, tokens: int = 0, cost: float = 0.0) -> None:
        self.store.ledger.add_spend(self.run_id, steps=steps, tokens=tokens, cost=cost)

    def check(self) -> None:
        """Raise BudgetExceeded when a new live step would start past a limit."""
        limits = self.limits()
        if all(limits.get(name) is None for name in LIMITS):
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
