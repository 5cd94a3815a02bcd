"""Human quantities: parse sizes (`500MB`, `10GiB`), print bytes and counts readably."""

from __future__ import annotations

import argparse
import re

from .. import formatting

_UNITS = {
    "": 1, "b": 1, "k": 1000, "kb": 1000, "m": 1000**2, "mb": 1000**2, "g": 1000**3,
    "gb": 1000**3, "t": 1000**4, "tb": 1000**4, "kib": 1 << 10, "mib": 1 << 20,
    "gib": 1 << 30, "tib": 1 << 40,
}  # fmt: skip


def parse_size(text: str) -> int:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    if not m or m.group(2).lower() not in _UNITS:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a size; use a number with an optional unit: 500MB, 10GiB, 2000000"
        )
    value = int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a size limit must be more than 0")
    return value


def format_size(n: int) -> str:
    """`1.2 GiB`: the one rule (`formatting.size`), which the sidebar follows too."""
    return formatting.size(n)


def count(n: int, singular: str, plural: str | None = None) -> str:
    """`1 entry`, `2 entries`, `0 blobs`."""
    return f"{n} {singular if n == 1 else plural or singular + 's'}"
