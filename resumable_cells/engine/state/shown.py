"""The settings a step's shown outputs were made with: numpy's print options, pandas'
and xarray's display options, IPython's plain-text display (`%precision`, `%pprint`),
the printers the notebook gave IPython's formatters, sympy's printing (`init_printing`),
which values IPython shows of a cell (`ast_node_interactivity`: of every step, one that
showed nothing too), the configuration of the loggers its code logged to (their levels
and handlers decide which of its log lines show, and how) and, for figures, matplotlib's rcParams and the inline backend's figure formats
(`%config InlineBackend.figure_formats`), as they were when the step began; and those of
them its code read (`settings_read.py`), which a value it bound may carry (`text =
str(a)`, `report = df.to_string()`, a figure kept and not shown). A hit replays the
outputs and binds the values as they were made; when one of these settings is different
now (`np.set_printoptions(precision=5)`, `pd.set_option('display.max_rows', 5)`,
`plt.style.use(...)` in a plain cell since), that is not what the live run would make,
and the step runs instead (`restore/validity.py`).

Only the settings of libraries imported when the step began are recorded, and only
those of libraries imported at the hit are compared: a library not imported yet has
had no setting changed in this kernel.
"""

from __future__ import annotations

import copy
import logging
import sys
from collections.abc import Callable, Collection, Mapping, Sequence
from itertools import chain
from typing import Any, NamedTuple

import xxhash

from ...display import figures
from ...hashing.values import Hasher
from . import loggers, parts

log = logging.getLogger(__name__)


_ANY, _FORMATTED, _FIGURES, _ALWAYS, _READ = "any", "formatted", "figures", "always", "read"


class _Part(NamedTuple):
    """A setting outputs are made with: its library (compared only once imported), what
    it is called in a sentence, its value in the snapshot taken as a step began, its
    value now, and the outputs it makes: any (printed text too: `print(df)`), those
    IPython's formatters made (a result, a `display`), figures, always (it decides
    which values a step shows: one that showed none may show one under another), or
    those of the names its code read only (the loggers it logged to)."""

    library: str
    sentence: str
    began: Callable[[Mapping[str, Any]], Any]
    now: Callable[[], Any]
    makes: str = _ANY


_PARTS: dict[str, _Part] = {
    "numpy.print": _Part(
        "numpy",
        "numpy's print options",
        lambda before: before.get("numpy.print"),
        lambda: sys.modules["numpy"].get_printoptions(),
    ),
    "pandas.display": _Part(
        "pandas",
        "pandas' display options",
        lambda before: (before.get("pandas.options") or {}).get("display"),
        lambda: parts.pd_config().get("display"),
    ),
    "xarray.display": _Part(
        "xarray",
        "xarray's display options",
        lambda before: _xarray_display(before.get("xarray.options")),
        lambda: _xarray_display(parts.xr_options()),
    ),
    "matplotlib.rc": _Part(
        "matplotlib",
        "matplotlib's rcParams",
        lambda before: _without_backend(before.get("matplotlib.rc")),
        lambda: _without_backend(dict(dict.items(parts.rc_params()))),
        makes=_FIGURES,
    ),
    "ipython.plain": _Part(
        "IPython",
        "IPython's plain-text display",
        lambda before: before.get("ipython.plain"),
        parts.plain_text,
        makes=_FORMATTED,
    ),
    "ipython.printers": _Part(
        "IPython",
        "the notebook's display printers",
        lambda before: _notebook_printers(before.get("ipython.formatters")),
        lambda: _notebook_printers(parts.display_printers(copied=False)),
        makes=_FORMATTED,
    ),
    "ipython.interactivity": _Part(
        "IPython",
        "IPython's ast_node_interactivity",
        lambda before: before.get("ipython.interactivity"),
        parts.interactivity,
        makes=_ALWAYS,
    ),
    "logging": _Part(
        "logging",
        "the logging configuration",
        lambda before: loggers.effective(before["logging"]) if "logging" in before else None,
        loggers.effective,
        makes=_READ,
    ),
    "sympy.printing": _Part(
        "sympy.printing",
        "sympy's printing",
        lambda before: before.get("sympy.printing"),
        parts.sympy_printing,
    ),
    "ipython.inline": _Part(
        "matplotlib_inline.backend_inline",
        "the inline backend's figure formats",
        # set up by the step itself (the kernel's first figure): as it set it up
        lambda before: before.get("ipython.inline") or parts.inline_figures(),
        parts.inline_figures,
        makes=_FIGURES,
    ),
}


def of_step(
    before: Mapping[str, Any],
    outputs: Sequence[Any],
    result: bool,
    read: Mapping[str, Collection[str] | None] | None = None,
) -> dict[str, str]:
    """At a live step's end: the digests of the settings its outputs (`capture.Output`s)
    and its shown result depend on, and of those its code read (`read`: by part, the
    names `settings_read.py` saw read, None for all, which the values it bound may
    carry), from `before` (the process state snapshot taken as it began); {} when it
    showed and read none. A part read only in part is kept as `part:name,name` (those
    settings alone). A setting the step changed itself is left out: a hit sets the
    step's own change again, and what it found before is not what its outputs were made
    with (a step that sets the print options and prints; the inline backend setting
    rcParams at the kernel's first figure)."""
    read = read or {}
    shows = bool(outputs) or result
    made = {
        _ALWAYS: True,
        _READ: False,
        _ANY: shows,
        _FORMATTED: result or any(o[0] in ("display", "result") for o in outputs),
        _FIGURES: any(
            o[0] == figures.KIND or (o[0] == "display" and _image(o[1])) for o in outputs
        ),
    }
    labels = []
    for part, setting in _PARTS.items():
        names = read.get(part, ())
        if made[setting.makes] or names is None:
            labels.append(part)
        elif names:
            labels.append(f"{part}:{','.join(sorted(names))}")
    values = {label: _began(label, before) for label in labels}
    return {
        label: _digest_of(label, value)
        for label, value in values.items()
        if value is not None and _same_now(label, value)
    }


def _split(label: str) -> tuple[str, list[str] | None]:
    """`part` -> (part, None); `part:a,b` -> (part, [a, b])."""
    part, colon, names = label.partition(":")
    return part, names.split(",") if colon else None


def _only(value: Any, names: list[str] | None) -> Any:
    if names is None or not isinstance(value, Mapping):
        return value
    return {n: value[n] for n in names if n in value}


def _began(label: str, before: Mapping[str, Any]) -> Any:
    part, names = _split(label)
    return _only(_PARTS[part].began(before), names)


def _same_now(label: str, value: Any) -> bool:
    try:
        return bool(_now(label) == value)
    except Exception:  # unreadable now: nothing to hold a hit to
        log.debug("the setting %s could not be read", label, exc_info=True)
        return False


def _image(data: Any) -> bool:
    return isinstance(data, Mapping) and any(str(k).startswith("image/") for k in data)


def changed(shown_with: Mapping[str, str]) -> str | None:
    """At a hit: the settings that differ now from those the outputs were made with
    (`numpy's print options`), or None. Settings that cannot be read now hold nothing
    back (as a process state that cannot be read, `process_state.snapshot`)."""
    differ: list[str] = []
    for label, digest in shown_with.items():
        part, _ = _split(label)
        setting = _PARTS.get(part)
        if setting is None or setting.library not in sys.modules:
            continue
        try:
            now = _digest_now(label)
        except Exception:
            log.debug("the setting %s could not be read", label, exc_info=True)
            continue
        if now != digest and setting.sentence not in differ:
            differ.append(setting.sentence)
    return " and ".join(differ) or None


# label -> (a copy of the value last digested, its digest): a hit compares the settings
# with it (microseconds) rather than digesting them again (0.6 ms for rcParams)
_seen: dict[str, tuple[Any, str]] = {}


def _digest_now(label: str) -> str:
    return _digest_of(label, _now(label))


def _digest_of(label: str, value: Any) -> str:
    seen = _seen.get(label)
    if seen is not None and seen[0] == value:
        return seen[1]
    digest = _digest(value)
    _seen[label] = (copy.deepcopy(value), digest)
    return digest


def _now(label: str) -> Any:
    part, names = _split(label)
    return _only(_PARTS[part].now(), names)


def _notebook_printers(printers: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Of each display formatter, whether it is on and the printers the notebook's own
    code made (`formatters['text/plain'].for_type(Money, lambda o, p, c: ...)`), told by
    what they do (`_canonical`): those a library registers as it is imported
    (matplotlib's for its figures, sympy's, which `sympy.printing` covers) would make
    every step that showed something before its import run again."""
    if printers is None:
        return None
    out = {}
    for mime, (types, deferred, enabled) in printers.items():
        own = {}
        for key, printer in chain(types.items(), deferred.items()):
            if getattr(printer, "__module__", None) == "__main__":
                own[_type_name(key)] = printer  # (by name: a class defined again left
                # its old one's printer behind, which a new kernel has not)
        out[mime] = (enabled, own)
    return out


def _type_name(key: Any) -> str:
    if isinstance(key, type):
        return f"{key.__module__}.{key.__qualname__}"
    return ".".join(map(str, key)) if isinstance(key, tuple) else str(key)


def _xarray_display(options: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if options is None:
        return None
    return {k: v for k, v in options.items() if k.startswith("display_")}


def _without_backend(rc: dict[str, Any] | None) -> dict[str, Any] | None:
    # The backend and interactive mode are the kernel's, not a look of the figure: the
    # inline backend turns interactive mode on at the kernel's first figure.
    return None if rc is None else {k: v for k, v in rc.items() if k not in _KERNEL_RC}


_KERNEL_RC = frozenset({"backend", "interactive"})


def _digest(value: Any) -> str:
    return xxhash.xxh3_64_hexdigest(repr(_canonical(value)).encode(errors="replace"))


def _canonical(value: Any) -> Any:
    """A form whose repr is the same in every kernel: a mapping's items sorted, a
    function by its name and what it does (a custom formatter: `'{:.2f}'.format`, a
    lambda, as `hashing/code.py` digests them), not its address."""
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), _canonical(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_canonical(v) for v in value)
    if callable(value) and not isinstance(value, type):
        name = getattr(value, "__qualname__", type(value).__name__)
        return f"{getattr(value, '__module__', '')}.{name}", _does(value)
    return value


def _does(fn: Any) -> str:
    """What a callable does, as a step's key digests it (its code and what it holds;
    a bound method with what it is bound to); "" when it cannot be digested."""
    try:
        return Hasher().value_digest(fn, "a setting")
    except Exception:  # (a callable the digest refuses: its name alone, as before)
        log.debug("a setting's callable could not be digested", exc_info=True)
        return ""
