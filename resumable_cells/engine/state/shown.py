"""The settings a step's shown outputs were made with: numpy's print options, pandas'
display options and, for figures, matplotlib's rcParams, as they were when the step
began. A hit replays the outputs as they were made; when one of these settings is
different now (`np.set_printoptions(precision=5)`, `pd.set_option('display.max_rows',
5)`, `plt.style.use(...)` in a plain cell since), the replay would not show what the
live run shows, and the step runs instead (`restore/validity.py`).

Only the settings of libraries imported when the step began are recorded, and only
those of libraries imported at the hit are compared: a library not imported yet has
had no setting changed in this kernel.
"""

from __future__ import annotations

import copy
import logging
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import xxhash

from ...display import figures
from . import parts

log = logging.getLogger(__name__)

# part -> (the library, what the part is called in a sentence)
_PARTS = {
    "numpy.print": ("numpy", "numpy's print options"),
    "pandas.display": ("pandas", "pandas' display options"),
    "matplotlib.rc": ("matplotlib", "matplotlib's rcParams"),
}


def of_step(before: Mapping[str, Any], outputs: Sequence[Any], result: bool) -> dict[str, str]:
    """At a live step's end: the digests of the settings its outputs (`capture.Output`s)
    and its shown result depend on, from `before` (the process state snapshot taken as
    it began); {} when it showed nothing. A setting the step changed itself is left out:
    a hit sets the step's own change again, and what it found before is not what its
    outputs were made with (a step that sets the print options and prints; the inline
    backend setting rcParams at the kernel's first figure)."""
    if not outputs and not result:
        return {}
    drew = any(o[0] == figures.KIND or (o[0] == "display" and _image(o[1])) for o in outputs)
    values = {
        "numpy.print": before.get("numpy.print"),
        "pandas.display": (before.get("pandas.options") or {}).get("display"),
        "matplotlib.rc": _without_backend(before.get("matplotlib.rc")) if drew else None,
    }
    return {
        part: _digest_of(part, value)
        for part, value in values.items()
        if value is not None and _same_now(part, value)
    }


def _same_now(part: str, value: Any) -> bool:
    try:
        return bool(_now(part) == value)
    except Exception:  # unreadable now: nothing to hold a hit to
        log.debug("the setting %s could not be read", part, exc_info=True)
        return False


def _image(data: Any) -> bool:
    return isinstance(data, Mapping) and any(str(k).startswith("image/") for k in data)


def changed(shown_with: Mapping[str, str]) -> str | None:
    """At a hit: the settings that differ now from those the outputs were made with
    (`numpy's print options`), or None. Settings that cannot be read now hold nothing
    back (as a process state that cannot be read, `process_state.snapshot`)."""
    differ = []
    for part, digest in shown_with.items():
        if part not in _PARTS or _PARTS[part][0] not in sys.modules:
            continue
        try:
            now = _digest_now(part)
        except Exception:
            log.debug("the setting %s could not be read", part, exc_info=True)
            continue
        if now != digest:
            differ.append(_PARTS[part][1])
    return " and ".join(differ) or None


# part -> (a copy of the value last digested, its digest): a hit compares the settings
# with it (microseconds) rather than digesting them again (0.6 ms for rcParams)
_seen: dict[str, tuple[Any, str]] = {}


def _digest_now(part: str) -> str:
    return _digest_of(part, _now(part))


def _digest_of(part: str, value: Any) -> str:
    seen = _seen.get(part)
    if seen is not None and seen[0] == value:
        return seen[1]
    digest = _digest(value)
    _seen[part] = (copy.deepcopy(value), digest)
    return digest


def _now(part: str) -> Any:
    if part == "numpy.print":
        return sys.modules["numpy"].get_printoptions()
    if part == "pandas.display":
        return parts.pd_config().get("display")
    return _without_backend(dict(dict.items(parts.rc_params())))


def _without_backend(rc: dict[str, Any] | None) -> dict[str, Any] | None:
    # The backend and interactive mode are the kernel's, not a look of the figure: the
    # inline backend turns interactive mode on at the kernel's first figure.
    return None if rc is None else {k: v for k, v in rc.items() if k not in _KERNEL_RC}


_KERNEL_RC = frozenset({"backend", "interactive"})


def _digest(value: Any) -> str:
    return xxhash.xxh3_64_hexdigest(repr(_canonical(value)).encode(errors="replace"))


def _canonical(value: Any) -> Any:
    """A form whose repr is the same in every kernel: a mapping's items sorted, a
    function by its name (a custom formatter), not its address."""
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), _canonical(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_canonical(v) for v in value)
    if callable(value) and not isinstance(value, type):
        name = getattr(value, "__qualname__", type(value).__name__)
        return f"{getattr(value, '__module__', '')}.{name}"
    return value
