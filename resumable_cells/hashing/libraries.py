"""Library objects whose own pickling carries noise: what their digest leaves out.

The digest of an object is its reduction (`objects`); a few libraries put into it
state that changes without the value changing, so that a value and its restored copy
would differ. Each entry here says which part is noise and why. The table of library
classes kept true by `tests/test_libraries.py` is docs/libraries.md.
"""

from __future__ import annotations

from typing import Any

from .registry import add_handler


def register(top: str) -> None:
    """Add the handlers of `top`'s types (once each)."""
    if top in _registered:
        return
    _registered.add(top)
    if top == "matplotlib":
        from matplotlib.cbook import CallbackRegistry

        add_handler(CallbackRegistry, _h_callback_registry)


_registered: set[str] = set()


def _h_callback_registry(h: Any, v: Any, path: str) -> None:
    # Its pickled state holds the next callback id, which pickling itself advances
    # (`next(self._cid_gen)`), and callbacks only by the ids it keeps: the callbacks
    # that survive pickling are the value.
    state = v.__getstate__()
    h.tag(b"o")
    h.text("matplotlib.cbook.CallbackRegistry")
    h.value(state.get("exception_handler"), f"{path}.exception_handler")
    h.value(state.get("callbacks"), f"{path}.callbacks")
