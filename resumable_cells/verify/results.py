"""What `verify` found, cell by cell and per notebook: the data the report is made of.

Pass labels: `plain_1` and `plain_2` (the notebook as it is, each in a new kernel),
`stepped` (every code cell under `%%step`, fresh store) and `replay` (the same, in a new
kernel with that store).
"""

from __future__ import annotations

import re

import msgspec

from ..formatting import duration

PASSES = ("plain_1", "plain_2", "stepped", "replay")
STEPPED = ("stepped", "replay")  # the passes timed against the plain run (`ratios`)
SLOW_FACTOR, SLOW_GRACE_S = 2.0, 0.5  # slow: stepped live time > 2 x plain time + 0.5 s


class CellResult(msgspec.Struct):
    index: int  # position in the notebook, every cell counted, from 1
    cell_id: str | None
    line: str  # the cell's first line of code
    wrapped: bool
    magic: str | None = None  # the cell magic that kept it plain
    plain_error: str | None = None  # `ename: evalue` of the first plain run
    nondeterministic: bool = False  # the two plain runs differ
    hung: list[str] = msgspec.field(default_factory=list)  # passes in which it hung
    differs: str | None = None  # the stepped run against the plain run
    replay_differs: str | None = None  # the replay against the stepped (live) run
    replay_compared: bool = False  # served, or a deterministic step that ran again
    stepped: str | None = None  # hit|live|effect|error|hung|died|not run|no status
    replay: str | None = None
    reason: str | None = None  # why the replay did not serve it
    messages: list[str] = msgspec.field(default_factory=list)  # the extension's, both passes
    seconds: dict[str, float] = msgspec.field(default_factory=dict)  # by pass
    plan: str | None = None  # what `%step plan` said before the replay: serve|run|effect
    plan_reason: str | None = None
    plan_differs: str | None = None  # the plan against what the replay did

    @property
    def served(self) -> bool:
        return self.replay == "hit"

    @property
    def slow(self) -> bool:
        plain = [self.seconds[p] for p in ("plain_1", "plain_2") if p in self.seconds]
        if not plain or "stepped" not in self.seconds or self.hung:
            return False
        return self.seconds["stepped"] > SLOW_FACTOR * sum(plain) / len(plain) + SLOW_GRACE_S

    def findings(self) -> list[str]:
        """What is worth a line in the table (empty for a cell with nothing to say)."""
        out = []
        if self.hung:
            out.append("hung in " + ", ".join(self.hung))
        if self.differs:
            out.append("differs: " + self.differs)
        if self.replay_differs:
            out.append("replay differs: " + self.replay_differs)
        expected = self.plain_error is not None and self.replay == "error"  # it raises
        if self.wrapped and not self.served and not self.hung and not expected:
            out.append(f"not served: {self.reason or 'no reason given'}")
        if self.plan_differs:
            out.append("plan: " + self.plan_differs)
        if not self.wrapped:
            out.append(f"not wrapped ({self.magic})")
        if self.slow:
            s = self.seconds
            out.append(f"slow: {duration(s['stepped'])} stepped, {duration(s['plain_1'])} plain")
        return out

    def to_json(self) -> dict:
        return {**msgspec.structs.asdict(self), "served": self.served, "slow": self.slow}


class PassResult(msgspec.Struct):
    wall_s: float = 0.0  # cells only, kernel start-up excluded
    restarts: int = 0
    failure: str | None = None
    load_s: float | None = None  # of that, the `%load_ext` cell (the stepped passes)


class NotebookResult(msgspec.Struct):
    notebook: str
    cells: list[CellResult] = msgspec.field(default_factory=list)
    passes: dict[str, PassResult] = msgspec.field(default_factory=dict)
    wall_s: float = 0.0  # the whole verification of the notebook
    problems: list[str] = msgspec.field(default_factory=list)  # a pass that could not run, ...

    @property
    def ok(self) -> bool:
        return not self.problems and not any(
            c.hung or c.differs or c.replay_differs for c in self.cells
        )

    def summary(self) -> dict:
        cells = self.cells
        compared = [c for c in cells if not c.nondeterministic and not c.hung]
        replayed = [c for c in cells if c.replay_compared]
        wrapped = [c for c in cells if c.wrapped]
        reasons: dict[str, int] = {}
        for c in wrapped:
            if not c.served:
                r = "hung" if c.hung else brief(c.reason or "no reason given")
                reasons[r] = reasons.get(r, 0) + 1
        return {
            "cells": len(cells),
            "wrapped": len(wrapped),
            "not_wrapped": len(cells) - len(wrapped),
            "nondeterministic": sum(c.nondeterministic for c in cells),
            "plain_errors": sum(c.plain_error is not None for c in cells),
            "compared": len(compared),
            "identical": sum(c.differs is None for c in compared),
            "replayed": len(replayed),
            "replay_identical": sum(c.replay_differs is None for c in replayed),
            "served": sum(c.served for c in wrapped),
            "not_served": reasons,
            "hung": sum(bool(c.hung) for c in cells),
            "slow": sum(c.slow for c in cells),
            "pass_wall_s": {k: round(p.wall_s, 3) for k, p in self.passes.items()},
            "plain_s": plain_s(self.passes),
            "ratios": ratios(self.passes),
            "load_s": {k: p.load_s for k, p in self.passes.items() if p.load_s is not None},
            "wall_s": round(self.wall_s, 3),
        }

    def to_json(self) -> dict:
        return {
            "notebook": self.notebook,
            "ok": self.ok,
            "summary": self.summary(),
            "problems": self.problems,
            "passes": {k: msgspec.structs.asdict(p) for k, p in self.passes.items()},
            "cells": [c.to_json() for c in self.cells],
        }


def plain_s(passes: dict[str, PassResult]) -> float | None:
    """The plain run's time: the faster of the two plain passes (the first may pay for
    caches, the disk's, matplotlib's fonts, that every later pass finds warm)."""
    times = [p.wall_s for k, p in passes.items() if k.startswith("plain") and not p.failure]
    return round(min(times), 3) if times and min(times) > 0 else None


def ratios(passes: dict[str, PassResult]) -> dict[str, float | None]:
    """Each stepped pass's time over the plain run's: `stepped` (the first run under
    `%%step`, which stores every step) and `replay` (the resume after a restart). Both
    include the `%load_ext` cell, as Run All of a notebook that loads the extension
    would; None where a pass could not run."""
    plain = plain_s(passes)
    out: dict[str, float | None] = {}
    for label in STEPPED:
        p = passes.get(label)
        if plain is None or p is None or p.failure or p.wall_s <= 0:
            out[label] = None
        else:
            out[label] = round(p.wall_s / plain, 3)
    return out


def brief(reason: str) -> str:
    """A reason without its parenthesised details, to count alike reasons together:
    `not cached: G cannot be stored (generator cannot be pickled (...)) last time` ->
    `not cached: G cannot be stored last time`."""
    previous = None
    while previous != reason:
        previous, reason = reason, re.sub(r"\s*\([^()]*\)", "", reason)
    return reason
