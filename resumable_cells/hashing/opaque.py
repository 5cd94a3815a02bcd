"""Drawings: objects that are not data (matplotlib figures, axes, artists, canvases,
transforms), digested by identity and by the steps that may have changed them.

A figure's internals are a graph of artists, transforms and callbacks that drawing it
changes (caches, tick objects made on draw, callback counters), so no walk of them
gives a digest that a store/restore round trip keeps. Instead each drawing object gets
an identity token, and the figure it belongs to (its root) a state token:

    digest(artist) = its class, its identity token, its root's state token

Both tokens travel with the object through the store (`reduce`, used by the
serialiser), so a restored figure digests as the live one did. The state token moves
after anything that may have changed a drawing: after each step, every live root's
state becomes hash(state, the step's key): a hit applies the same (`advance`), so a
resumed run reaches the tokens the live run had and a step reading a figure is served;
a step with no key, an effect, and any cell outside `%%step` give every root a random
state (`after_cell`), so a step reading a figure after them runs. A step whose input
holds a drawing is therefore never served with a figure some other cell changed.

The tokens are kept beside the objects (weakly, by id), never in them.
"""

from __future__ import annotations

import itertools
import sys
import uuid
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import xxhash

from ..errors import Unhashable
from .registry import add_handler, loaded_class

_IDENT: dict[int, tuple[weakref.ref, str]] = {}  # id(object) -> its identity token
_STATE: dict[int, tuple[weakref.ref, str]] = {}  # id(root) -> its state token
_advanced = False  # whether a step moved the state tokens during the current cell


def register(top: str) -> None:
    """Make matplotlib's drawing classes drawings, each once its module is loaded: no
    drawing of a class exists before its module does, and importing them all at the
    first matplotlib value hashed (a colormap, `rcParams`) loaded `matplotlib.figure`
    and the backends, 300 ms, for a notebook that never drew."""
    global _classes, _figure
    if top != "matplotlib" or len(_classes) == len(_DRAWINGS):
        return
    for module, name in _DRAWINGS:
        cls = loaded_class(module, name)
        if cls is not None and cls not in _classes:
            _classes += (cls,)
            add_handler(cls, h_drawing)
            if name == "Figure":
                _figure = cls


_DRAWINGS = (
    ("matplotlib.artist", "Artist"),
    ("matplotlib.backend_bases", "FigureCanvasBase"),
    ("matplotlib.backend_bases", "FigureManagerBase"),
    ("matplotlib.figure", "Figure"),
    ("matplotlib.transforms", "TransformNode"),
)
_classes: tuple[type, ...] = ()  # those of `_DRAWINGS` registered so far
_figure: type | tuple = ()  # matplotlib's Figure, once registered


def is_drawing(obj: Any) -> bool:
    """Whether `obj` is of a class registered as a drawing."""
    if _registered_at != len(sys.modules):
        _catch_up()
    return bool(_classes) and isinstance(obj, _classes)


def is_drawing_type(t: type) -> bool:
    """Whether instances of `t` are drawings."""
    if _registered_at != len(sys.modules):
        _catch_up()
    return bool(_classes) and issubclass(t, _classes)


def _catch_up() -> None:
    """Register the drawing classes loaded since matplotlib's first value was hashed
    (a figure drawn after a colormap), asked again only once modules were imported."""
    global _registered_at
    _registered_at = len(sys.modules)
    if _classes and len(_classes) < len(_DRAWINGS):
        register("matplotlib")


_registered_at = -1  # how many modules were loaded when `_catch_up` last looked


def h_drawing(h: Any, v: Any, path: str) -> None:
    """The handler of drawing classes: class, identity token, root's state token."""
    h.note_module(type(v))
    t = type(v)
    h.tag(b"Z")
    h.text(f"{t.__module__}.{t.__qualname__}")
    try:
        h.text(_token(_IDENT, v))
        h.text(_token(_STATE, root_of(v)))
    except TypeError:
        raise Unhashable(path, f"{t.__name__} is a drawing that cannot be tracked") from None


def root_of(obj: Any) -> Any:
    """The figure `obj` belongs to (itself for a figure or a loose artist)."""
    root = obj
    for _ in range(8):  # an artist, its subfigure, the figure
        nxt = getattr(root, "figure", None)
        if nxt is None or nxt is root:
            break
        root = nxt
    return root


def _token(table: dict, obj: Any) -> str:
    token = _known(table, obj)
    if token is None:
        token = f"{_PROCESS}-{next(_COUNT)}"  # unique: this process's, then a count
        _track(table, obj, token)
    return token


def _known(table: dict, obj: Any) -> str | None:
    hit = table.get(id(obj))
    return hit[1] if hit is not None and hit[0]() is obj else None


_PROCESS = uuid.uuid4().hex
_COUNT = itertools.count()


def _track(table: dict, obj: Any, token: str) -> None:
    # No callback on the weak reference: a callback runs whenever the collector
    # does, in the middle of any loop over the table. Dead entries are dropped by
    # `advance`, and `_token` never trusts one (an id may be reused).
    table[id(obj)] = (weakref.ref(obj), token)


# -- the state tokens move ----------------------------------------------------------------
def advance(key: str | None) -> None:
    """A step ran live (or is being served) under `key`: every live root's state token
    becomes hash(state, key); None (no key, an effect) makes each one random."""
    global _advanced
    _advanced = True
    for table in (_IDENT, _STATE):
        for oid in [oid for oid, (ref, _) in table.items() if ref() is None]:
            del table[oid]
    for oid, (ref, token) in list(_STATE.items()):
        new = uuid.uuid4().hex if key is None else xxhash.xxh3_128_hexdigest((token + key).encode())
        _STATE[oid] = (ref, new)


def after_cell(*_args: Any) -> None:
    """After each cell (IPython's post_run_cell): a cell that was not a step may have
    changed any drawing, so every root gets a random state."""
    global _advanced
    if not _advanced:
        advance(None)
    _advanced = False


# -- through the store --------------------------------------------------------------------
def reduce(obj: Any) -> Any:
    """For a pickler's `reducer_override`: a drawing's own reduction, rebuilt through
    `restore` so that the copy gets its tokens; NotImplemented for anything else. A
    figure that was open in pyplot (the inline backend left it open) is open again
    only when restored inside `reopening` (a hit); any other copy (the round-trip
    check's) never takes a place in pyplot's list of open figures."""
    if not is_drawing(obj):
        return NotImplemented
    # Only what was digested has tokens to carry: a figure's other objects (thousands
    # of transforms and artists) pickle as they are, and get tokens when digested.
    ident = _known(_IDENT, obj)
    if ident is None and not isinstance(obj, _figure):  # (a figure: see below)
        return NotImplemented
    rv = obj.__reduce_ex__(5)
    if isinstance(rv, str):
        return NotImplemented
    state = rv[2] if len(rv) > 2 else None
    was_open = False
    if isinstance(state, dict) and "_restore_to_pylab" in state:
        was_open = bool(state["_restore_to_pylab"])
        state = {**state, "_restore_to_pylab": False}
    tokens = (ident, _known(_STATE, obj))
    if was_open and not any(rv[3:]):
        return (restore, (tokens, rv[0], rv[1]), state, None, None, set_open_state)
    return (restore, (tokens, rv[0], rv[1]), state, *rv[3:])


def set_open_state(fig: Any, state: dict) -> None:
    """Set the state of a figure that was open in pyplot: open again inside `reopening`."""
    fig.__setstate__({**state, "_restore_to_pylab": True} if _reopening else state)


_reopening = False


@contextmanager
def reopening() -> Iterator[None]:
    """Figures restored in the block that were open in pyplot are open again, as the
    live run left them (a hit)."""
    global _reopening
    before, _reopening = _reopening, True
    try:
        yield
    finally:
        _reopening = before


def restore(tokens: tuple[str, str | None], fn: Any, args: tuple) -> Any:
    """Rebuild a drawing stored by `reduce` and give it its tokens."""
    obj = fn(*args)
    ident, state = tokens
    if ident is not None:
        _track(_IDENT, obj, ident)
    if state is not None:
        _track(_STATE, obj, state)
    return obj


def tracked() -> int:
    """How many objects and roots have tokens (dead ones until `advance`)."""
    return len(_IDENT) + len(_STATE)
