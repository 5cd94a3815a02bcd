"""Library objects whose own pickling carries noise: what their digest leaves out.

The digest of an object is its reduction (`objects`); a few libraries put into it
state that changes without the value changing, so that a value and its restored copy
would differ. Each entry here says which part is noise and why. The table of library
classes kept true by `tests/test_libraries.py` is docs/libraries.md.
"""

from __future__ import annotations

from typing import Any

from .registry import add_handler, loaded_class


def register(top: str) -> None:
    """Add the handlers of `top`'s types whose modules are loaded (each once). One
    not loaded yet is added when a value of `top`'s is next met after it is: no value
    of a type exists before its module does, and importing it here would load what
    the notebook never asked for (`astropy.wcs`, 120 ms, for a notebook of units)."""
    for module, name, handler in _TYPES.get(top, ()):
        cls = loaded_class(module, name) if (module, name) not in _registered else None
        if cls is not None:
            add_handler(cls, handler)
            _registered.add((module, name))


_registered: set[tuple[str, str]] = set()


def _h_callback_registry(h: Any, v: Any, path: str) -> None:
    # Its pickled state holds the next callback id, which pickling itself advances
    # (`next(self._cid_gen)`), and callbacks only by the ids it keeps: the callbacks
    # that survive pickling are the value.
    state = v.__getstate__()
    h.tag(b"o")
    h.text("matplotlib.cbook.CallbackRegistry")
    h.value(state.get("exception_handler"), f"{path}.exception_handler")
    h.value(state.get("callbacks"), f"{path}.callbacks")


def _h_dict_items(h: Any, v: Any, path: str) -> None:
    # Dicts whose keys are also attributes. scikit-learn's Bunch keeps a table of
    # deprecation warnings as an attribute that its unpickling drops on purpose;
    # statsmodels' Dataset is its own __dict__, which a restored one is not. Their
    # items are the value.
    t = type(v)
    h.tag(b"o")
    h.text(f"{t.__module__}.{t.__qualname__}")
    h.mapping(v, b"d", path)


def _h_wcs(h: Any, v: Any, path: str) -> None:
    # An astropy WCS pickles as its instance dict (in an order its unpickling does
    # not keep) and a FITS header; the header does not tell a CD matrix from PC and
    # CDELT, which a restored WCS comes back with. So: the header, the attributes by
    # name, and the parameters the header folds together.
    fn, (cls, attrs, fits) = v.__reduce__()[:2]
    p = v.wcs
    h.tag(b"o")
    h.text("astropy.wcs.WCS")
    h.value(cls, path)
    h.mapping(attrs, b"d", path, attributes=True, by_name=True)
    h.value(fits, path)
    has_cd, has_pc = bool(p.has_cd()), bool(p.has_pc())
    h.value((has_cd, has_pc), f"{path}.wcs")
    for name in (
        ("crpix", "crval", "cdelt") + (("cd",) if has_cd else ()) + (("pc",) if has_pc else ())
    ):
        h.value(getattr(p, name), f"{path}.wcs.{name}")
    sip = v.sip
    h.value(None if sip is None else (sip.a, sip.b, sip.ap, sip.bp, sip.crpix), f"{path}.sip")


def _h_plotly(h: Any, v: Any, path: str) -> None:
    # A plotly figure or trace is its JSON, which it pickles as a dict in the order
    # its properties were set and rebuilds in the order of its validators (a figure's
    # template too): the order of the keys of a JSON object is not its value.
    t = type(v)
    h.tag(b"o")
    h.text(f"{t.__module__}.{t.__qualname__}")
    h.value(_by_key(v.to_dict() if hasattr(v, "to_dict") else v.to_plotly_json()), path)


def _by_key(obj: Any) -> Any:
    if type(obj) is dict:
        return {k: _by_key(obj[k]) for k in sorted(obj, key=str)}
    if type(obj) in (list, tuple):
        return type(obj)(map(_by_key, obj))
    return obj


# Each library's types that have a handler here: (the module that defines the name, the
# name, the handler).
_TYPES: dict[str, tuple[tuple[str, str, Any], ...]] = {
    "matplotlib": (("matplotlib.cbook", "CallbackRegistry", _h_callback_registry),),
    "sklearn": (("sklearn.utils", "Bunch", _h_dict_items),),
    "astropy": (("astropy.wcs", "WCS", _h_wcs),),
    "plotly": (
        ("plotly.basedatatypes", "BaseFigure", _h_plotly),
        ("plotly.basedatatypes", "BasePlotlyType", _h_plotly),
    ),
    "statsmodels": (("statsmodels.datasets.utils", "Dataset", _h_dict_items),),
}
