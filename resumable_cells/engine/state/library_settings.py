"""Settings a library keeps for the whole process that change what its functions return,
as inputs of the key of a step that reaches the library.

`sklearn.set_config(transform_output="pandas")` makes every transformer return a frame;
`decimal.getcontext().prec = 5` makes `Decimal(1) / 3` another number; `np.seterr(over=
"raise")` turns an overflow into an error; pandas' options (`future.infer_string`)
change dtypes; xarray's (`xr.set_options(keep_attrs=False)`) what arithmetic keeps. Set
in a plain cell, none of them was an input: a step computed under the old settings was
served under the new ones, silently. So a step whose key reaches one of
these libraries (a value of its type, a function of it, an import in the cell) has the
digest of that library's settings among its key's parts (`settings`). So is the code the
notebook registered with pandas or xarray, which the step's code never names: an
accessor (`@pd.api.extensions.register_dataframe_accessor("geo")`, then
`df.geo.total()`), redefined in a plain cell, was served with the old class's result.

Only the settings that differ from the library's defaults count, and a library at its
defaults adds nothing: a step importing numpy itself computes its key before numpy is
loaded (at its defaults, necessarily), and must compute the same key when it runs
again with numpy loaded. Display settings are left out: how outputs look is
`shown.py`'s. `%step plan` leaves these out too: it cannot know what Run All's plain
cells will have set by then. (A step that changes them is recorded and set again by a
hit as process state: `parts.py`.) Settings of other libraries (torch's default dtype,
JAX's config, scipy.special's error modes) are not seen: `--version` names them.
"""

from __future__ import annotations

import ast
import logging
import re
import sys
from collections.abc import Callable, Iterable
from functools import lru_cache
from types import FunctionType
from typing import Any

import xxhash

from ...hashing.values import Hasher
from . import parts

log = logging.getLogger(__name__)

# (the loaded module, the notebook's namespace) -> its settings off default
Changed = Callable[[Any, dict[str, Any] | None], dict[str, Any]]


def _numpy(np: Any, ns: dict[str, Any] | None) -> dict[str, Any]:
    modes: dict[str, Any] = np.geterr()
    out = {k: v for k, v in modes.items() if v != _NUMPY_ERRORS.get(k)}
    if np.geterrcall() is not None:  # (`np.seterrcall`: what mode "call" calls)
        out["call"] = type(np.geterrcall()).__qualname__
    return out


_NUMPY_ERRORS = {"divide": "warn", "over": "warn", "under": "ignore", "invalid": "warn"}


def _decimal(decimal: Any, ns: dict[str, Any] | None) -> dict[str, Any]:
    now, default = decimal.getcontext(), decimal.DefaultContext
    out = {a: getattr(now, a) for a in _DECIMAL if getattr(now, a) != getattr(default, a)}
    traps = sorted(s.__name__ for s, on in now.traps.items() if on)
    if traps != sorted(s.__name__ for s, on in default.traps.items() if on):
        out["traps"] = traps
    return out


_DECIMAL = ("prec", "rounding", "Emin", "Emax", "capitals", "clamp")


def _sklearn(sklearn: Any, ns: dict[str, Any] | None) -> dict[str, Any]:
    # (`sklearn._config._global_config`: the defaults a thread's settings start from,
    # with those its environment variables set; `get_config()`: this thread's)
    defaults = getattr(sys.modules.get("sklearn._config"), "_global_config", {})
    now: dict[str, Any] = sklearn.get_config()
    return {k: v for k, v in now.items() if k not in defaults or defaults[k] != v}


def _pandas(pd: Any, ns: dict[str, Any] | None) -> dict[str, Any]:
    out = _accessors(ns, [pd.DataFrame, pd.Series, pd.Index])
    now = parts.pd_config()
    defaults = _pandas_defaults(id(now))
    if all(now.get(k) == v for k, v in defaults.items() if k != "display"):
        return out  # (a comparison at C speed: the usual case)
    flat_now = parts.flat({k: v for k, v in now.items() if k != "display"})
    flat_default = parts.flat({k: v for k, v in defaults.items() if k != "display"})
    out.update((k, v) for k, v in flat_now.items() if flat_default.get(k, _NONE) != v)
    return out


def _xarray(xr: Any, ns: dict[str, Any] | None) -> dict[str, Any]:
    out = _accessors(ns, [xr.Dataset, xr.DataArray])
    defaults = _xarray_defaults(getattr(sys.modules.get("xarray.core.options"), "__file__", None))
    if defaults:
        out.update(
            (k, v)
            for k, v in parts.xr_options().items()
            if not k.startswith(_XARRAY_LOOKS) and defaults.get(k, _NONE) != v
        )
    return out


# How xarray's objects and plots look: `shown.py`'s (its display options) or the figure's.
_XARRAY_LOOKS = ("display_", "cmap_", "facetgrid_")


@lru_cache(maxsize=1)
def _xarray_defaults(path: str | None) -> dict[str, Any]:
    """xarray's options as its module sets them (`OPTIONS = {...}`, read from its
    source: xarray keeps no copy of its defaults); {} when it cannot be read."""
    if path is None:
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        for node in tree.body:
            target: ast.expr
            if isinstance(node, ast.AnnAssign) and node.value is not None:
                target, value = node.target, node.value
            elif isinstance(node, ast.Assign) and len(node.targets) == 1:
                target, value = node.targets[0], node.value
            else:
                continue
            if isinstance(target, ast.Name) and target.id == "OPTIONS":
                found = ast.literal_eval(value)
                return found if isinstance(found, dict) else {}
    except (OSError, SyntaxError, ValueError):
        log.debug("xarray's default options could not be read", exc_info=True)
    return {}


def _accessors(ns: dict[str, Any] | None, classes: list[type]) -> dict[str, Any]:
    """The accessors the notebook registered on a library's classes
    (`@pd.api.extensions.register_dataframe_accessor("geo")`,
    `@xr.register_dataset_accessor("geo")`), and the functions it set on them: `df.geo.
    total()` runs the notebook's class, `df.total()` its function, which the step's code
    never names. Each by its code's digest (`Class.name` -> digest; the globals its code
    reads are not followed)."""
    out: dict[str, Any] = {}
    for cls in classes:
        attributes = vars(cls)
        for name in _notebook_attributes(cls):
            value = attributes.get(name)
            made = getattr(value, "_accessor", value)  # (a function set on the class)
            if _notebook_code(made):
                out[f"{cls.__name__}.{name}"] = Hasher(ns).value_digest(made, name)
    return out


def _notebook_attributes(cls: type) -> list[str]:
    """The names of a library class's accessors and of the functions the notebook set on
    it by hand (`pd.DataFrame.total = total`, the general case), found among its
    attributes: 400-600 of them, looked through again only when their number changed,
    as registering or setting a new one adds one (the values are read each time)."""
    attributes = vars(cls)
    known = _ATTRIBUTES.get(cls)
    if known is None or known[0] != len(attributes):
        names = sorted(
            k
            for k, v in attributes.items()
            if hasattr(v, "_accessor") or isinstance(v, FunctionType) and _notebook_code(v)
        )
        known = _ATTRIBUTES[cls] = (len(attributes), names)
    return known[1]


def _notebook_code(obj: Any) -> bool:
    return isinstance(obj, (type, FunctionType)) and obj.__module__ == "__main__"


_ATTRIBUTES: dict[type, tuple[int, list[str]]] = {}


@lru_cache(maxsize=1)
def _pandas_defaults(_options_id: int) -> dict[str, Any]:
    """pandas' options at their registered defaults, nested as its options are."""
    from pandas._config import config

    out: dict[str, Any] = {}
    for key, option in config._registered_options.items():
        *groups, last = key.split(".")
        node = out
        for g in groups:
            node = node.setdefault(g, {})
        node[last] = option.defval
    return out


_NONE = object()

# Top-level module a key reaches -> (the module holding the settings, their reader).
LIBRARIES: dict[str, tuple[str, Changed]] = {
    "decimal": ("decimal", _decimal),
    "numpy": ("numpy", _numpy),
    "pandas": ("pandas", _pandas),
    "sklearn": ("sklearn", _sklearn),
    "xarray": ("xarray", _xarray),
}
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")  # (an object's default repr: not the same twice)


def digests(modules: Iterable[str], ns: dict[str, Any] | None = None) -> dict[str, str]:
    """The settings off default of the libraries among `modules` (top-level names), and
    the code the notebook (`ns`) registered with them: library -> digest; a library not
    loaded, or at its defaults, is not there. One whose settings cannot be read now is
    left out (and logged)."""
    out = {}
    for top in sorted(set(modules) & LIBRARIES.keys()):
        name, changed = LIBRARIES[top]
        module = sys.modules.get(name)
        if module is None:
            continue  # (not loaded: at its defaults)
        try:
            settings = changed(module, ns)
        except Exception:  # a library changed its settings' shape: not an input then
            log.debug("the settings of %s could not be read", top, exc_info=True)
            continue
        if settings:
            text = _ADDRESS.sub("", repr(sorted(settings.items())))
            out[top] = xxhash.xxh3_64_hexdigest(text.encode("utf-8", "surrogatepass"))
    return out
