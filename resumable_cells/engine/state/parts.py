"""The parts of the process state `process_state` watches, each a `State`: how to take a
snapshot of it, tell cheaply whether the process left it, say what changed and set that
again. Standard library ones first (logging's, which needs more words, in `loggers.py`),
then numpy's, scipy's, matplotlib's, pandas', scikit-learn's, xarray's and plotly's
(watched once the library is imported). `BUILTIN` lists them in the order a hit sets them
again.
"""

from __future__ import annotations

import copy
import gc
import locale
import os
import random
import sys
import warnings
from collections.abc import Callable
from typing import Any

from IPython import get_ipython

from . import loggers


class State:
    """One part of the process state. `take()` a snapshot; `differs(snapshot)` whether
    the process left it (cheap); `change(before, after)` what to record, given both
    snapshots (`before` None when the library was imported by the step); `put(change)`
    set it again. Without a `change` of its own, the change is the value after, whatever
    it is (`whole`): a limit set to 0 (`sys.set_int_max_str_digits(0)`) is a change too."""

    module: str | None = None  # watched once this module is imported

    def __init__(
        self,
        name: str,
        take: Callable[[], Any],
        put: Callable[[Any], Any],
        differs: Callable[[Any], bool] | None = None,
        change: Callable[[Any, Any], Any] | None = None,
        module: str | None = None,
    ) -> None:
        self.name = name
        self.take = take
        self.put = put
        self.differs: Callable[[Any], bool] = differs or (lambda snap: take() != snap)
        self.change: Callable[[Any, Any], Any] = change or (lambda before, after: after)
        self.whole = change is None
        self.module = module


def _environ_take() -> dict[bytes, bytes]:
    # os.environ's own dict of encoded strings copies 100x faster than os.environ
    data = getattr(os.environ, "_data", None)
    return (
        dict(data)
        if isinstance(data, dict)
        else {os.fsencode(k): os.fsencode(v) for k, v in os.environ.items()}
    )


def _environ_differs(snap: dict[bytes, bytes]) -> bool:
    data = getattr(os.environ, "_data", None)
    return (data if isinstance(data, dict) else _environ_take()) != snap


def _environ_change(before: dict[bytes, bytes] | None, after: dict[bytes, bytes]) -> dict[str, Any]:
    before = before or {}
    return {
        "set": {os.fsdecode(k): os.fsdecode(v) for k, v in after.items() if before.get(k) != v},
        "unset": [os.fsdecode(k) for k in before if k not in after],
    }


def _environ_put(change: dict[str, Any]) -> None:
    for k, v in change["set"].items():
        os.environ[k] = v
    for k in change["unset"]:
        os.environ.pop(k, None)


def _cwd_change(before: str | None, after: str) -> str:
    return os.path.relpath(after, before) if before else after


def seq_change(before: list[Any] | None, after: list[Any]) -> dict[str, list[Any]]:
    """A list's change as what was added in front, removed, and added at the end, so
    that it applies to a list that differs elsewhere (another kernel's sys.path)."""
    before = before or []
    kept = [x for x in before if x in after]
    added = [x for x in after if x not in before]
    start = after.index(kept[0]) if kept else len(after)
    if after[start : start + len(kept)] != kept:  # reordered: record the whole list
        return {"all": list(after)}
    front = [x for x in after[:start] if x in added]
    return {"front": front, "removed": [x for x in before if x not in after],
            "back": after[start + len(kept) :]}  # fmt: skip


def seq_apply(current: list[Any], change: dict[str, list[Any]]) -> list[Any]:
    if "all" in change:
        return list(change["all"])
    drop = change["removed"] + change["front"] + change["back"]
    middle = [x for x in current if x not in drop]
    return change["front"] + middle + change["back"]


def _path_put(change: dict[str, list[Any]]) -> None:
    sys.path[:] = seq_apply(sys.path, change)


def _warnings_put(change: dict[str, list[Any]]) -> None:
    # the tuples as they were (a list at run time; typeshed declares a Sequence)
    warnings.filters[:] = seq_apply(list(warnings.filters), change)  # type: ignore[index]
    # what filterwarnings() does after changing the list: forget the verdicts cached per
    # module (the function has no public name; without it a filter applies to new code only)
    mutated = getattr(warnings, "_filters_mutated", None) or getattr(
        warnings, "_filters_mutated_lock_held", None
    )
    if mutated is not None:
        mutated()


# The collector's thresholds (`gc.set_threshold`). Whether it runs is not recorded: the
# engine pauses it for its own work (`collector.py`), so a snapshot never sees it on.
def _gc_put(thresholds: tuple[int, ...]) -> None:
    gc.set_threshold(*thresholds)


# The timeout of sockets made without one (`socket.setdefaulttimeout(10)` before
# downloads); read through the module, watched once something imported it. Taken as a
# 1-tuple: no timeout (None) is a setting a step may make, and a change of None would
# read as no change.
def _socket_timeout() -> tuple[float | None]:
    return (sys.modules["socket"].getdefaulttimeout(),)


def _set_socket_timeout(value: tuple[float | None] | float | None) -> None:
    # (an entry of an earlier version recorded the bare number)
    sys.modules["socket"].setdefaulttimeout(value[0] if isinstance(value, tuple) else value)


# The locale (`locale.setlocale(locale.LC_ALL, "de_DE.UTF-8")`) formats numbers and
# dates: `setlocale(LC_ALL)` reads every category at once, as one string it takes back.
def _locale_take() -> str:
    return locale.setlocale(locale.LC_ALL)


def _locale_put(value: str) -> None:
    locale.setlocale(locale.LC_ALL, value)


# The decimal context of the kernel's thread (`getcontext().prec = 6`): its settings, not
# its flags, which every inexact operation raises.
_DECIMAL_SETTINGS = ("prec", "rounding", "Emin", "Emax", "capitals", "clamp")


def _decimal_take() -> dict[str, Any]:
    context = sys.modules["decimal"].getcontext()
    out = {a: getattr(context, a) for a in _DECIMAL_SETTINGS}
    out["traps"] = sorted(signal.__name__ for signal, on in context.traps.items() if on)
    return out


def _decimal_put(change: dict[str, Any]) -> None:
    decimal = sys.modules["decimal"]
    context = decimal.getcontext()
    for a in _DECIMAL_SETTINGS:
        if a in change:
            setattr(context, a, change[a])
    if "traps" in change:
        for signal in list(context.traps):
            context.traps[signal] = signal.__name__ in change["traps"]


def _mapping_change(before: dict[str, Any] | None, after: dict[str, Any]) -> dict[str, Any]:
    before = before or {}
    return {k: v for k, v in after.items() if k not in before or before[k] != v}


# -- numpy ----------------------------------------------------------------------------------
def _np_rng_take() -> Any:
    """The raw state of numpy's global generator (its Mersenne Twister's words) as a
    token to compare: reading it is 100x cheaper than `np.random.get_state()`."""
    np = sys.modules["numpy"]
    bitgen = np.random.get_bit_generator()
    if type(bitgen).__name__ == "MT19937":
        import ctypes

        return ctypes.string_at(bitgen.ctypes.state_address, 624 * 4 + 4)
    return bitgen.state


def rng_token(name: str) -> Any:
    """The state of a global generator (`"random"`, `"numpy.random"`) as the process
    state compares it (None: numpy's, before numpy is imported)."""
    if name == "random":
        return random.getstate()
    if name == "numpy.random" and "numpy.random" in sys.modules:
        return _np_rng_take()
    return None


def _np_rng_change(before: Any, after: Any) -> Any:
    return sys.modules["numpy"].random.get_state()


def _np_rng_put(state: Any) -> None:
    sys.modules["numpy"].random.set_state(state)


def _np_print_take() -> dict[str, Any]:
    options: dict[str, Any] = sys.modules["numpy"].get_printoptions()
    return options


def _np_print_put(change: dict[str, Any]) -> None:
    sys.modules["numpy"].set_printoptions(**change)


def _np_err_take() -> dict[str, Any]:
    np = sys.modules["numpy"]
    modes: dict[str, Any] = np.geterr()
    modes["call"] = np.geterrcall()  # (`np.seterrcall`: what mode "call" calls)
    return modes


def _np_err_put(change: dict[str, Any]) -> None:
    np = sys.modules["numpy"]
    change = dict(change)
    if "call" in change:
        np.seterrcall(change.pop("call"))
    np.seterr(**change)


# scipy.special's error handling (`sc.seterr(all="raise")`), as numpy's.
def _sc_err_take() -> dict[str, str]:
    modes: dict[str, str] = sys.modules["scipy.special"].geterr()
    return modes


def _sc_err_put(change: dict[str, str]) -> None:
    sys.modules["scipy.special"].seterr(**change)


def interactivity() -> str | None:
    """What IPython displays of a cell (`InteractiveShell.ast_node_interactivity = "all"`
    is a common first cell)."""
    shell = get_ipython()
    return None if shell is None else shell.ast_node_interactivity


def _set_interactivity(value: str | None) -> None:
    shell = get_ipython()
    if shell is not None and value is not None:
        shell.ast_node_interactivity = value


# -- IPython's display formatters --------------------------------------------------------------
# What a step registers with IPython's display formatters (sympy's `init_printing()`,
# `get_ipython().display_formatter.formatters['text/html'].for_type(...)`), and whether
# each formatter is on, is how later results are drawn: part of the step's result.
def _formatters() -> dict[str, Any]:
    shell = get_ipython()
    return {} if shell is None else shell.display_formatter.formatters


def display_printers(copied: bool = True) -> dict[str, Any]:
    """Each formatter's printers by type and by name, and whether it is on: `{mime:
    (type_printers, deferred_printers, enabled)}`; the formatters' own dicts when not
    `copied` (to read at once, not to keep)."""
    take = dict if copied else _same
    return {
        mime: (take(f.type_printers), take(f.deferred_printers), bool(f.enabled))
        for mime, f in _formatters().items()
    }


def _same(d: dict[Any, Any]) -> dict[Any, Any]:
    return d


def _fmt_differs(snap: dict[str, Any]) -> bool:
    # compared in place: no copy of every formatter's printers for each step
    formatters = _formatters()
    if formatters.keys() != snap.keys():
        return True
    for mime, f in formatters.items():
        types, deferred, enabled = snap[mime]
        if bool(f.enabled) != enabled or f.type_printers != types:
            return True
        if f.deferred_printers != deferred:
            return True
    return False


def _fmt_change(before: dict[str, Any] | None, after: dict[str, Any]) -> dict[str, Any]:
    before = before or {}
    change: dict[str, Any] = {}
    for mime, (types, deferred, enabled) in after.items():
        old_types, old_deferred, old_enabled = before.get(mime, ({}, {}, enabled))
        one = {
            "types": {t: f for t, f in types.items() if old_types.get(t) is not f},
            "deferred": {k: f for k, f in deferred.items() if old_deferred.get(k) is not f},
            "untyped": [t for t in old_types if t not in types],
            "undeferred": [k for k in old_deferred if k not in deferred],
        }
        one = {k: v for k, v in one.items() if v}
        if enabled != old_enabled:
            one["enabled"] = enabled
        if one:
            change[mime] = one
    return change


def _fmt_put(change: dict[str, Any]) -> None:
    formatters = _formatters()
    for mime, one in change.items():
        f = formatters.get(mime)
        if f is None:
            raise LookupError(f"IPython has no {mime} formatter here")
        for t, printer in one.get("types", {}).items():
            f.for_type(t, printer)
        for (module, name), printer in one.get("deferred", {}).items():
            f.for_type_by_name(module, name, printer)
        for t in one.get("untyped", []):
            f.type_printers.pop(t, None)
        for k in one.get("undeferred", []):
            f.deferred_printers.pop(k, None)
        if "enabled" in one:
            f.enabled = one["enabled"]


# How the plain-text formatter writes a result (`%precision 3`, `%pprint`), and the
# formats the inline backend draws figures in (`%config InlineBackend.figure_formats`):
# watched for what a step's outputs were shown with (`shown.py`), not recorded as a
# step's change: the magics that set them are called again (`ipython.magics`, which
# reads `%precision $digits` as written), and the backend is set up again by a hit's
# `import matplotlib.pyplot`, with the formats configured then.
_PLAIN_TRAITS = ("float_precision", "pprint", "max_width", "max_seq_length", "verbose")


def plain_text() -> dict[str, Any]:
    """The plain-text formatter's settings (`%precision`, `%pprint`)."""
    f = _formatters().get("text/plain")
    return {} if f is None else {t: getattr(f, t) for t in _PLAIN_TRAITS if f.has_trait(t)}


def inline_figures() -> dict[str, Any]:
    """The inline backend's figure formats and their `print_figure` arguments, once the
    kernel has set the backend up ({} before)."""
    backend = sys.modules.get("matplotlib_inline.backend_inline")
    cls = getattr(backend, "InlineBackend", None)
    if cls is None or not cls.initialized():
        return {}
    config = cls.instance()
    return {
        "figure_formats": sorted(config.figure_formats),
        "print_figure_kwargs": dict(config.print_figure_kwargs),
    }


def _not_recorded(before: Any, after: Any) -> dict[str, Any]:
    return {}


def _not_set(change: Any) -> None:
    raise AssertionError("a part that is never recorded is never set again")


# sympy's `init_printing()` also sets how its objects draw themselves (the `_repr_*_`
# methods of its `Printable` class) and its printers' global settings.
_SYMPY_REPRS = ("_repr_png_", "_repr_svg_", "_repr_latex_")


def sympy_printing() -> dict[str, Any]:
    """How sympy's objects draw themselves, and its printers' settings."""
    from sympy.printing.defaults import Printable
    from sympy.printing.printer import Printer

    reprs = {a: Printable.__dict__.get(a) for a in _SYMPY_REPRS}
    return {"reprs": reprs, "settings": dict(Printer._global_settings)}


def _sympy_differs(snap: dict[str, Any]) -> bool:
    now = sympy_printing()
    same = all(now["reprs"][a] is snap["reprs"][a] for a in _SYMPY_REPRS)
    return not same or now["settings"] != snap["settings"]


def _sympy_put(change: dict[str, Any]) -> None:
    from sympy.printing.defaults import Printable
    from sympy.printing.printer import Printer

    for a, f in change["reprs"].items():
        if f is not None:
            setattr(Printable, a, f)
    Printer._global_settings.clear()
    Printer._global_settings.update(change["settings"])


# -- matplotlib and pandas -------------------------------------------------------------------
def rc_params() -> Any:
    """matplotlib's rcParams (matplotlib imported)."""
    return sys.modules["matplotlib"].rcParams


def _rc_take() -> dict[str, Any]:
    # rcParams' own items: its __getitem__ resolves the backend, which would pick one
    return dict(dict.items(rc_params()))


def _rc_differs(snap: dict[str, Any]) -> bool:
    return not dict.__eq__(rc_params(), snap)


def _rc_change(before: dict[str, Any] | None, after: dict[str, Any]) -> dict[str, Any]:
    change = _mapping_change(before, after)
    change.pop("backend", None)  # choosing a backend is not state a step's value carries
    return change


def _rc_put(change: dict[str, Any]) -> None:
    rc = rc_params()
    for k, v in change.items():
        if k in rc and dict.__getitem__(rc, k) != v:
            rc[k] = v


def pd_config() -> dict[str, Any]:
    """pandas' options, its own nested dict (pandas imported)."""
    from pandas._config import config  # the options' one dict: pandas has no public copy

    options: dict[str, Any] = config._global_config
    return options


def _pd_take() -> dict[str, Any]:
    return copy.deepcopy(pd_config())


def _pd_differs(snap: dict[str, Any]) -> bool:
    return pd_config() != snap


def flat(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """A nested dict of options as one level: `{"a": {"b": 1}}` -> `{"a.b": 1}`."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(flat(v, f"{prefix}{k}."))
        else:
            out[prefix + k] = v
    return out


def _pd_change(before: dict[str, Any] | None, after: dict[str, Any]) -> dict[str, Any]:
    return _mapping_change(flat(before) if before else None, flat(after))


def _pd_put(change: dict[str, Any]) -> None:
    pd = sys.modules["pandas"]
    for k, v in change.items():
        if pd.get_option(k) != v:
            pd.set_option(k, v)


# scikit-learn's configuration (`sklearn.set_config(transform_output="pandas")` makes
# every later transformer return frames; `display="text"` changes how estimators show).
def _sklearn_take() -> dict[str, Any]:
    config: dict[str, Any] = sys.modules["sklearn"].get_config()
    return config


def _sklearn_put(change: dict[str, Any]) -> None:
    sys.modules["sklearn"].set_config(**change)


def xr_options() -> dict[str, Any]:
    """xarray's options, its own dict (xarray imported; `get_options()` copies it)."""
    options = getattr(sys.modules.get("xarray.core.options"), "OPTIONS", None)
    return options if isinstance(options, dict) else dict(sys.modules["xarray"].get_options())


# xarray's options (`xr.set_options(display_style="text")`, called outside a `with`).
def _xr_take() -> dict[str, Any]:
    return dict(sys.modules["xarray"].get_options())


def _xr_put(change: dict[str, Any]) -> None:
    sys.modules["xarray"].set_options(**change)


# plotly's default renderer and template (`pio.renderers.default = "notebook"`,
# `pio.templates.default = "plotly_white"`: set as attributes, replayed as such).
def _plotly_config() -> list[tuple[Any, str]]:
    pio = sys.modules.get("plotly.io")
    if pio is None:
        return []
    return [
        (getattr(pio, "renderers", None), "default"),
        (getattr(pio, "templates", None), "default"),
    ]


def _plotly_take() -> tuple[Any, ...]:
    return tuple(getattr(owner, attr) for owner, attr in _plotly_config())


def _plotly_put(value: tuple[Any, ...]) -> None:
    for (owner, attr), v in zip(_plotly_config(), value, strict=True):
        if getattr(owner, attr) != v:
            setattr(owner, attr, v)


def replayed_objects() -> list[Any]:
    """The objects whose contents the parts below record and set again, so that a step
    assigning their items (`os.environ[k] = v`, `plt.rcParams[k] = v`) is replayed."""
    held: list[Any] = [os.environ, sys.path, warnings.filters]
    matplotlib = sys.modules.get("matplotlib")
    if matplotlib is not None and hasattr(matplotlib, "rcParams"):
        held.append(rc_params())
    return held


def replayed_attributes() -> list[tuple[Any, str]]:
    """(object, attribute) pairs the parts below read through the object they are set
    on: `InteractiveShell.ast_node_interactivity = "all"`, on the shell's class or one of
    its bases, is what `ipython.interactivity` records; `pio.renderers.default` and
    `pio.templates.default`, what `plotly.io` records."""
    pairs = [(owner, attr) for owner, attr in _plotly_config() if owner is not None]
    shell = get_ipython()
    if shell is not None:
        pairs += [(cls, "ast_node_interactivity") for cls in type(shell).__mro__]
    return pairs


BUILTIN: list[State] = [
    State("cwd", os.getcwd, lambda rel: os.chdir(rel), change=_cwd_change),
    State("sys.path", lambda: list(sys.path), _path_put, change=seq_change),
    State("environ", _environ_take, _environ_put, _environ_differs, _environ_change),
    State("warnings", lambda: list(warnings.filters), _warnings_put, change=seq_change),
    State("recursionlimit", sys.getrecursionlimit, sys.setrecursionlimit),
    State("int_max_str_digits", sys.get_int_max_str_digits, sys.set_int_max_str_digits),
    State("gc", gc.get_threshold, _gc_put),
    State("socket.timeout", _socket_timeout, _set_socket_timeout, module="socket"),
    State("locale", _locale_take, _locale_put),
    State("decimal", _decimal_take, _decimal_put, change=_mapping_change, module="decimal"),
    State("logging", loggers.take, loggers.put, loggers.differs, loggers.change),
    State("ipython.interactivity", interactivity, _set_interactivity),
    State("ipython.formatters", display_printers, _fmt_put, _fmt_differs, _fmt_change),
    State("ipython.plain", plain_text, _not_set, change=_not_recorded),
    State(
        "ipython.inline",
        inline_figures,
        _not_set,
        change=_not_recorded,
        module="matplotlib_inline.backend_inline",
    ),
    State("random", random.getstate, random.setstate),
    State("numpy.random", _np_rng_take, _np_rng_put, change=_np_rng_change, module="numpy.random"),
    State("numpy.print", _np_print_take, _np_print_put, change=_mapping_change, module="numpy"),
    State("numpy.errors", _np_err_take, _np_err_put, change=_mapping_change, module="numpy"),
    State(
        "scipy.special.errors",
        _sc_err_take,
        _sc_err_put,
        change=_mapping_change,
        module="scipy.special",
    ),
    State("matplotlib.rc", _rc_take, _rc_put, _rc_differs, _rc_change, module="matplotlib"),
    State("pandas.options", _pd_take, _pd_put, _pd_differs, _pd_change, module="pandas"),
    State("sklearn.config", _sklearn_take, _sklearn_put, change=_mapping_change, module="sklearn"),
    State("xarray.options", _xr_take, _xr_put, change=_mapping_change, module="xarray"),
    State("plotly.io", _plotly_take, _plotly_put, module="plotly.io"),
    State("sympy.printing", sympy_printing, _sympy_put, _sympy_differs, module="sympy.printing"),
]
