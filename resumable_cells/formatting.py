"""How a duration, a time saved, an age, a size and a count are written, everywhere a
person reads one: the status line, `%step status`, `%step plan`, the CLI and the SVG
timeline. The sidebar
(`labextension/src/format.ts`) follows the same rule; `tests/shared/formatting.json`
holds the cases both test suites check.

Rounding is done on integers (`floor(x + 0.5)`), never by `round()` or `%.2f`, so that
Python and JavaScript write the same digits for the same float.
"""

from __future__ import annotations

import math

__all__ = ["AGE_SHOWN_AFTER_S", "age", "count", "duration", "percent", "size"]

#: A served value is said to be old (`computed 3 days ago`) past this many seconds.
AGE_SHOWN_AFTER_S = 300


def _half_up(x: float) -> int:
    return math.floor(x + 0.5)


def _fixed(x: float, digits: int) -> str:
    sign = "-" if x < 0 else ""
    scaled = _half_up(abs(x) * 10**digits)
    whole, frac = divmod(scaled, 10**digits)
    return sign + (f"{whole}.{frac:0{digits}d}" if digits else str(whole))


def duration(s: float | None) -> str:
    """`0.6 ms`, `628 ms`, `1.52 s`, `12.3 s`, `2m 40s`, `1h 05m`; `–` when unknown.

    >>> duration(0.6284), duration(1.5234), duration(160)
    ('628 ms', '1.52 s', '2m 40s')
    """
    if s is None or not math.isfinite(s):
        return "–"
    s = max(0.0, s)
    if s == 0:
        return "0 ms"
    if s < 0.00095:
        return f"{_fixed(s * 1000, 1)} ms"
    if _half_up(s * 1000) < 1000:
        return f"{_half_up(s * 1000)} ms"
    if _half_up(s * 100) < 1000:
        return f"{_fixed(s, 2)} s"
    if _half_up(s * 10) < 600:
        return f"{_fixed(s, 1)} s"
    if _half_up(s) < 3600:
        minutes, seconds = divmod(_half_up(s), 60)
        return f"{minutes}m {seconds:02d}s"
    hours, minutes = divmod(_half_up(s / 60), 60)
    return f"{hours}h {minutes:02d}m"


def count(n: float | None) -> str:
    """`950`, `12.5k`, `310k`, `1.2M`, `31M`; `–` when unknown.

    >>> count(31000), count(1_234_567)
    ('31.0k', '1.2M')
    """
    if n is None or not math.isfinite(n):
        return "–"
    if _half_up(abs(n) / 1e3) >= 1000:  # 999,500 and up: millions
        v = n / 1e6
        return _fixed(v, 0 if _half_up(abs(v) * 10) >= 100 else 1) + "M"
    if abs(n) >= 1e4:
        v = n / 1e3
        return _fixed(v, 0 if _half_up(abs(v) * 10) >= 1000 else 1) + "k"
    if n == int(n):
        return str(int(n))
    return _fixed(n, 2).rstrip("0").rstrip(".")


def age(s: float | None) -> str:
    """How long ago, or how long a TTL is, in whole units rounded down: `45 s`,
    `12 min`, `3 h`, `3 days` (minutes up to two hours, hours up to two days).

    >>> age(10800), age(5400), age(3 * 86400)
    ('3 h', '90 min', '3 days')
    """
    if s is None or not math.isfinite(s):
        return "–"
    s = max(0.0, s)
    if s < 60:
        return f"{math.floor(s)} s"
    if s < 7200:
        return f"{math.floor(s / 60)} min"
    if s < 172800:
        return f"{math.floor(s / 3600)} h"
    return f"{math.floor(s / 86400)} days"


def size(n: float | None) -> str:
    """`512 B`, `1.5 KiB`, `20.0 MiB`, `1.2 GiB`; `–` when unknown."""
    if n is None or not math.isfinite(n):
        return "–"
    v = max(0.0, n)
    if _half_up(v) < 1024:
        return f"{_half_up(v)} B"
    units = ("KiB", "MiB", "GiB", "TiB")
    for i, unit in enumerate(units):
        v /= 1024
        if _half_up(v * 10) < 10240 or i == len(units) - 1:
            return f"{_fixed(v, 1)} {unit}"
    return "–"  # not reached


def percent(f: float | None) -> str:
    """A fraction as a whole percentage: `80%`; `–` when unknown."""
    if f is None or not math.isfinite(f):
        return "–"
    return f"{_half_up(max(0.0, f) * 100)}%"
