"""How a duration, a time saved and a count are written, everywhere a person reads one:
the status line, `%step status`, `%step plan`, the CLI and the SVG timeline. The sidebar
(`labextension/src/format.ts`) follows the same rule; `tests/shared/formatting.json`
holds the cases both test suites check.

Rounding is done on integers (`floor(x + 0.5)`), never by `round()` or `%.2f`, so that
Python and JavaScript write the same digits for the same float.
"""

from __future__ import annotations

import math

__all__ = ["duration", "count"]


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
