"""The budget of one value's digest: past it, the value is unhashable and the step runs
uncached. Hashing never hangs a cell.

Two limits per value: the time its digest may take (10 s by default) and the bytes it
may read (64 GiB: numpy and pandas data hashed in place at memory speed, plus the
encoding of everything else). The walk is linear (each object is hashed once), so a
value reaches the limits only when it is truly huge or when it is a graph of objects
that is not data; the limits say so instead of hanging. `RESUMABLE_CELLS_HASH_BUDGET`
(`"30s,100GB"`, either part alone) or `set_budget` change them.
"""

from __future__ import annotations

import logging
import os
import re
import time

from ..errors import Unhashable

log = logging.getLogger(__name__)

_CHECK_EVERY = 256  # objects between two looks at the clock

_seconds = 10.0
_bytes = 64 << 30


def set_budget(seconds: float | None = None, nbytes: int | None = None) -> None:
    """Change the per-value limits (None keeps one)."""
    global _seconds, _bytes
    if seconds is not None:
        _seconds = float(seconds)
    if nbytes is not None:
        _bytes = int(nbytes)


def limits() -> tuple[float, int]:
    """The per-value limits in force: (seconds, bytes)."""
    return _seconds, _bytes


_UNITS = {"": 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12, "kib": 1 << 10,
          "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}  # fmt: skip


def parse(text: str) -> tuple[float | None, int | None]:
    """`"30s,100GB"` -> (30.0, 100e9); either part may be left out."""
    seconds = nbytes = None
    for part in filter(None, (p.strip().lower() for p in text.split(","))):
        m = re.fullmatch(r"([0-9.]+)\s*(s|ms|[kmgt]i?b|b)?", part)
        if m is None:
            raise ValueError(f"cannot read {part!r} as a duration (10s) or a size (64GB)")
        number, unit = float(m.group(1)), m.group(2) or "s"
        if unit in ("s", "ms"):
            seconds = number / 1000 if unit == "ms" else number
        else:
            nbytes = int(number * _UNITS[unit])
    return seconds, nbytes


def _from_environment() -> None:
    text = os.environ.get("RESUMABLE_CELLS_HASH_BUDGET")
    if text:
        try:
            set_budget(*parse(text))
        except ValueError:
            log.warning("RESUMABLE_CELLS_HASH_BUDGET=%r ignored", text, exc_info=True)


_from_environment()


class Meter:
    """What one digest has spent; `tick` and `spend` raise Unhashable past the limits."""

    __slots__ = ("deadline", "bytes_left", "countdown", "seconds", "nbytes")

    def __init__(self) -> None:
        self.seconds, self.nbytes = _seconds, _bytes
        self.deadline = time.perf_counter() + self.seconds
        self.bytes_left = self.nbytes
        self.countdown = _CHECK_EVERY

    def tick(self, path: str) -> None:
        """One more object: look at the clock every few hundred."""
        self.countdown -= 1
        if self.countdown <= 0:
            self.countdown = _CHECK_EVERY
            self.check_time(path)

    def check_time(self, path: str) -> None:
        if time.perf_counter() > self.deadline:
            raise Unhashable(
                path,
                f"hashing it took more than {self.seconds:g} s, the budget of one value "
                "(RESUMABLE_CELLS_HASH_BUDGET raises it)",
            )

    def spend(self, nbytes: int, path: str) -> None:
        self.bytes_left -= nbytes
        if self.bytes_left < 0:
            raise Unhashable(
                path,
                f"it is larger than {self.nbytes / 1e9:g} GB, the budget of one value "
                "(RESUMABLE_CELLS_HASH_BUDGET raises it)",
            )
        if nbytes > 1 << 20:
            self.check_time(path)
