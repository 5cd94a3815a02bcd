"""The round-trip check of a value written to an entry: its restored copy must digest as
the live value did, or it is not cached.

Some libraries' own pickling is lossy (an astropy `WCS` comes back with other SIP and
CD values): serving such a value would hand the next step something other than what
the live run had, silently. So when an entry is written, each value is loaded back
from the very pickle just made and digested; a difference makes the value unstorable,
with a message that names it.

The check is skipped where the round trip is exact by construction, so that storing
large data costs nothing more: atoms, plain containers of atoms, numpy arrays of a
non-object dtype or of atoms (strings, numbers, None: each pickled as it is), pandas
frames, series and indexes whose columns and index hold such arrays or pandas' own
strings, and
a value stored as the attribute of an installed module it is (`from sympy import *`
binds some 900: loading one reads that very object from its module).
The copy is loaded from read-only views of the live value's buffers (never a copy of
large data); a loader that needs to write into them gets copies.
"""

from __future__ import annotations

import pickle
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ...errors import Unhashable, Unstorable
from ...hashing import objects, opaque
from ...hashing.plain import ATOMIC, all_atomic, flat_items
from ...hashing.values import Hasher, ReadAs
from ...storage import serialize

Check = Callable[[Any, bytes, list[pickle.PickleBuffer]], None]  # (value, main, buffers)


def checker(digest: str, ns: dict[str, Any], name: str) -> Check:
    """A check for `Store.put_value`: raises Unstorable when the value pickled as
    (main, buffers) does not come back with `digest`."""

    def check(value: Any, main: bytes, buffers: list[pickle.PickleBuffer]) -> None:
        if exact(value):
            return
        compare(value, serialize.load_back(main, buffers, name), digest, ns, name)

    return check


def compare(
    value: Any,
    restored: Any,
    digest: str,
    ns: dict[str, Any],
    name: str,
    stand_ins: dict[int, Any] | None = None,
) -> None:
    """Raise Unstorable unless `restored`, a copy of `value` loaded back from its pickle,
    digests as the live value did (`digest`), or as the value does now. `stand_ins`
    (id -> object): live objects the copy reaches that a hit gives another state in
    place, read as that state (`ReadAs`)."""
    try:
        with _bound(ns, name, value, restored):
            h = ReadAs(ns, stand_ins) if stand_ins else Hasher(ns)
            again = h.value_digest(restored, name)
    except Unhashable as err:
        raise Unstorable(name, f"its restored copy cannot be hashed ({err.why})") from None
    if again != digest and again != _now(value, ns, name):
        # (A value that its own pickling or inspection changed, an xarray Dataset
        # that fills its attrs, is stored as it now is: the copy matches that.)
        raise Unstorable(
            name,
            f"{_type(value)} does not survive pickling: its restored copy differs "
            "from the live value, so a hit would hand the next step another value",
        )


@contextmanager
def _bound(ns: dict[str, Any], name: str, value: Any, restored: Any) -> Iterator[None]:
    """The copy in the value's place while it is digested: a recursive function (or an
    `lru_cache` one) reaches itself through the namespace, as a restored one will."""
    if ns.get(name) is not value:
        yield
        return
    ns[name] = restored
    try:
        yield
    finally:
        ns[name] = value


def _now(value: Any, ns: dict[str, Any], name: str) -> str | None:
    try:
        return Hasher(ns).value_digest(value, name)
    except Unhashable:
        return None


def exact(value: Any) -> bool:
    """Whether pickling gives `value` back exactly by construction."""
    t = type(value)
    if t in ATOMIC or opaque.is_drawing(value) or serialize.imported(value):
        return True  # (a drawing's digest is its tokens, which its copy carries)
    if t is list or t is tuple or t is dict:
        items = value.values() if t is dict else value
        if t is dict and not set(map(type, value)) <= ATOMIC:
            return False
        if flat_items(items) or objects.flat_records(list(items)) is not None:
            return True
        return all(map(_record, items))  # (records holding records: one by one)
    if _record(value):
        return True
    np = sys.modules.get("numpy")
    if np is not None and t is np.ndarray:
        if value.dtype.hasobject:  # `fig, axes = plt.subplots(2, 2)`: drawings only
            if value.size > 0 and all(map(opaque.is_drawing, value.flat)):
                return True
        return _plain(np, value)
    pd = sys.modules.get("pandas")
    if pd is not None and t is pd.Series:
        return _plain(np, value, pd) and _plain_index(pd, np, value.index)
    if pd is not None and np is not None and t is pd.DataFrame:
        dtypes = list(value.dtypes)
        if any(isinstance(d, np.dtype) and d.hasobject for d in dtypes):
            plain = all(_plain(np, c, pd) for _, c in value.items())  # (their objects read)
        else:  # (the dtypes decide: no Series made for each column)
            plain = all(_plain_dtype(np, d, pd) for d in dtypes)
        return plain and _plain_index(pd, np, value.index)
    return False


def _record(value: Any) -> bool:
    """An instance of a plain Python class (a dataclass, say) whose attributes are plain
    data: it pickles as its class and that data, and comes back the same."""
    if not objects.plain_class(type(value)):
        return False  # (before reading __dict__: a partial makes one when asked for it)
    state = value.__dict__
    return set(map(type, state)) <= ATOMIC and flat_items(state.values())


def _plain(np: Any, values: Any, pd: Any = None) -> bool:
    """An array, column or index of a numpy dtype without objects; of objects that are
    all atoms (strings, numbers, None: each comes back as it was, strings as one buffer,
    `serialize`), at the cost of one C-level pass over them rather than a copy loaded
    back and digested; or of pandas' own strings (`str`, `string`: strings and missing
    values, whose digest does not depend on how arrow chunks them)."""
    dtype = values.dtype
    if not isinstance(dtype, np.dtype) or not dtype.hasobject:
        return _plain_dtype(np, dtype, pd)
    return dtype.kind == "O" and all_atomic(np.asarray(values).ravel(order="K"))


def _plain_dtype(np: Any, dtype: Any, pd: Any) -> bool:
    """Whether values of `dtype`, one without objects, pickle back exactly."""
    if pd is not None and isinstance(dtype, pd.StringDtype):
        return True
    return isinstance(dtype, np.dtype)  # (another extension dtype: its library's pickling)


def _plain_index(pd: Any, np: Any, index: Any) -> bool:
    if type(index) is pd.RangeIndex:
        return True
    return type(index) is pd.Index and _plain(np, index, pd)


def _type(value: Any) -> str:
    t = type(value)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"
