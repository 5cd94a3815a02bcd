"""Whether an entry may be served in this run: the one check a hit and `%step plan`
both ask (`invalid_reason`).

Valid while it is younger than the step's `--ttl`, the files it read are unchanged and
the run's epoch and seed are the ones it used (`step.now()`, `step.rng()`).
"""

from __future__ import annotations

import time

from ... import formatting
from ...hashing import key as step_key
from ...records.runs import Run
from ...storage.entries import Entry


def invalid_reason(entry: Entry, run: Run, ttl: float | None = None) -> str | None:
    """Why `entry` cannot be served in `run` (older than the step's `--ttl` in seconds,
    a file it read changed or is gone, the run's epoch or seed it used changed), or
    None when it can."""
    if ttl is not None:
        age = time.time() - entry.created
        if age > ttl:
            return f"expired (computed {formatting.age(age)} ago, ttl {formatting.age(ttl)})"
    for f in entry.files:
        try:
            if step_key.file_digest(f.path) != f.digest:
                return f"{f.path} changed"
        except OSError:
            return f"{f.path} is gone"
    params = entry.params
    if "epoch" in params and params["epoch"] != run.epoch:
        return "run epoch changed"
    if "seed" in params and params["seed"] != run.seed:
        return "run seed changed"
    return None
