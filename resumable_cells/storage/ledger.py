"""What the store keeps about runs, beside the cache: each notebook's run, its budget
limits and spend, its once-keys and its effects' intents.

Rows of the store's index, written and read only here:

    run:{notebook}                       the notebook's run (JSON: id, notebook, epoch,
                                         seed, created)
    budget:{run}                         its limits (JSON: steps, tokens, cost; null: none)
    spent:{run}:steps|tokens|cost_micros its spend, integer counters incremented
                                         atomically (cost in micro-units), so concurrent
                                         kernels of one run add up
    once:{run}:{key}                     a key `step.once` has seen in the run
    intent:{run}:{step}                  an effect's last intent (JSON: state started|done,
                                         session, time)
"""

from __future__ import annotations

import diskcache

from .index import get_json, set_json

LIMITS = ("steps", "tokens", "cost")


class Ledger:
    """The run-side rows of one store's index."""

    def __init__(self, index: diskcache.Cache):
        self.index = index

    # -- runs ------------------------------------------------------------------------------
    def run(self, notebook: str) -> dict | None:
        """The stored run of `notebook` (its file name; "" for the working directory)."""
        return get_json(self.index, "run:" + notebook)

    def save_run(self, notebook: str, row: dict) -> None:
        set_json(self.index, "run:" + notebook, row)

    def rename_run(self, old: str, new: str) -> bool:
        """Carry `old`'s run over to `new`, unless `new` has one. True when moved."""
        row = self.run(old)
        if row is None or self.run(new) is not None:
            return False
        row["notebook"] = new
        self.save_run(new, row)
        self.index.delete("run:" + old)
        return True

    def runs(self) -> list[dict]:
        """Every stored run, in no particular order."""
        out = []
        for k in self.index.iterkeys():
            if isinstance(k, str) and k.startswith("run:"):
                row = get_json(self.index, k)
                if row:
                    out.append(row)
        return out

    # -- budgets ---------------------------------------------------------------------------
    def limits(self, run_id: str) -> dict:
        return get_json(self.index, f"budget:{run_id}", {k: None for k in LIMITS})

    def set_limits(self, run_id: str, limits: dict) -> None:
        set_json(self.index, f"budget:{run_id}", limits)

    def spent(self, run_id: str) -> dict:
        idx = self.index
        return {
            "steps": int(idx.get(f"spent:{run_id}:steps", 0)),
            "tokens": int(idx.get(f"spent:{run_id}:tokens", 0)),
            "cost": int(idx.get(f"spent:{run_id}:cost_micros", 0)) / 1e6,
        }

    def add_spend(self, run_id: str, steps: int = 0, tokens: int = 0, cost: float = 0.0) -> None:
        idx = self.index
        if steps:
            idx.incr(f"spent:{run_id}:steps", steps)
        if tokens:
            idx.incr(f"spent:{run_id}:tokens", int(tokens))
        if cost:
            idx.incr(f"spent:{run_id}:cost_micros", round(cost * 1e6))

    # -- once-keys and intents -------------------------------------------------------------
    def first_time(self, run_id: str, key: str) -> bool:
        """True the first time `key` is seen in the run (by any kernel), False after."""
        return self.index.add(f"once:{run_id}:{key}", 1)

    def intent(self, run_id: str, step: str) -> dict | None:
        return get_json(self.index, f"intent:{run_id}:{step}")

    def set_intent(self, run_id: str, step: str, row: dict) -> None:
        set_json(self.index, f"intent:{run_id}:{step}", row)
