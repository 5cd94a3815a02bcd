"""What the standard library puts around notebook functions and classes, through a
pickle: `functools.lru_cache`/`cache` wrappers, `functools.cached_property`, mapping
proxies (a dataclass field's `metadata`), the dataclasses module's sentinels, and
classes `collections.namedtuple` (or `typing.NamedTuple`) makes; and two objects pickle
refuses that are made again from what they refer to: a dict's views (`d.keys()`), on the
dict itself, and a regex match, by searching again.

Plain pickle stores an `lru_cache` wrapper by name (`__main__.fib`), which a new kernel
cannot resolve; here it is the wrapped function (stored by code by the serialiser) and
the cache's parameters, wrapped again on restore (with an empty cache: it only ever
holds results the function gives again). A `cached_property` holds a lock pickle
refuses; it is its function and attribute name. The dataclasses module tells fields
apart by the identity of its sentinels (`MISSING`, `_FIELD`, `_HAS_DEFAULT_FACTORY`):
they are stored by name, so that a restored dataclass still has its fields, defaults
and factories. A namedtuple class's methods live in a module of their own that only
exists while `namedtuple` runs: the class is made again by `namedtuple`, then given
what the notebook added (methods of a `typing.NamedTuple`, a docstring).
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import re
import types
from collections.abc import Callable
from typing import Any

from ..hashing.code import LRU_WRAPPER
from ..hashing.objects import DICT_VIEWS, viewed

__all__ = ["LRU_WRAPPER", "is_namedtuple", "is_sentinel_type", "namedtuple_reduce", "reduce"]

# (private classes of dataclasses that typeshed does not list)
_SENTINEL_TYPES = (dataclasses._MISSING_TYPE, dataclasses._FIELD_BASE,  # type: ignore[attr-defined]
                   dataclasses._HAS_DEFAULT_FACTORY_CLASS, dataclasses._KW_ONLY_TYPE)  # type: ignore[attr-defined]  # fmt: skip
_SENTINELS = {
    id(v): name for name, v in vars(dataclasses).items() if isinstance(v, _SENTINEL_TYPES)
}


def is_sentinel_type(t: type) -> bool:
    """Whether `t` is the type of one of the dataclasses module's sentinels."""
    return t in _SENTINEL_TYPES


def reduce(obj: Any) -> Any:
    """For a pickler's `reducer_override`: the reduction of these objects, or
    NotImplemented for any other."""
    t = type(obj)
    if t is types.MappingProxyType:
        return _mapping_proxy, (_viewed(obj),)
    view = DICT_VIEWS.get(t)
    if view is not None:  # on the dict itself, which its other holders restore as one
        return _dict_view, (viewed(obj), _VIEW_METHODS[view])
    if t is re.Match:
        return _match_reduce(obj)
    if t in _SENTINEL_TYPES and id(obj) in _SENTINELS:
        return getattr, (dataclasses, _SENTINELS[id(obj)])
    if t is LRU_WRAPPER and getattr(obj, "__module__", None) == "__main__":
        params = obj.cache_parameters()
        extra = {k: v for k, v in vars(obj).items() if k not in _LRU_OWN}
        return _rebuild_lru, (obj.__wrapped__, params["maxsize"], params["typed"], extra)
    if t is functools.cached_property:
        return _rebuild_cached_property, (obj.func, obj.attrname, obj.__doc__)
    return NotImplemented


_LRU_OWN = frozenset({"__wrapped__", "cache_parameters"})  # lru_cache sets them again


def _viewed(proxy: types.MappingProxyType[Any, Any]) -> Any:
    """The dict a proxy views, itself, so that the restored proxy views the dict its
    owner keeps (`singledispatch`'s `registry`, which `register` adds to; a notebook's
    own), not a copy. Any other mapping is copied into a dict."""
    mapping = viewed(proxy)
    return mapping if mapping is not None else dict(proxy)


_VIEW_METHODS = {b"k": "keys", b"v": "values", b"i": "items"}


def _dict_view(mapping: dict[Any, Any], method: str) -> Any:
    return getattr(dict, method)(mapping)  # (a dict subclass's own `keys` may be another)


def _match_reduce(m: re.Match[Any]) -> Any:
    """A match that searching its string again between its bounds finds (`re.search`,
    `re.match`, the first of `re.finditer`); NotImplemented for another (a later match
    of `finditer`, a `fullmatch` that a search ends sooner): pickle then refuses it."""
    again = m.re.search(m.string, m.pos, m.endpos)
    if again is None or again.regs != m.regs:
        return NotImplemented
    return _search, (m.re, m.string, m.pos, m.endpos)


def _search(pattern: re.Pattern[Any], string: Any, pos: int, endpos: int) -> Any:
    return pattern.search(string, pos, endpos)


def _mapping_proxy(mapping: dict[Any, Any]) -> types.MappingProxyType[Any, Any]:
    return types.MappingProxyType(mapping)


def _rebuild_lru(
    fn: Callable[..., Any], maxsize: int | None, typed: bool, extra: dict[str, Any]
) -> Any:
    wrapper = functools.lru_cache(maxsize=maxsize, typed=typed)(fn)
    vars(wrapper).update(extra)
    return wrapper


def _rebuild_cached_property(
    fn: Callable[[Any], Any], attrname: str | None, doc: str | None
) -> functools.cached_property[Any]:
    prop = functools.cached_property(fn)
    prop.attrname = attrname  # set by __set_name__ when its class is made
    prop.__doc__ = doc
    return prop


def is_namedtuple(cls: type) -> bool:
    """Whether `cls` was made by `collections.namedtuple` (directly or through
    `typing.NamedTuple`)."""
    own = cls.__dict__
    return issubclass(cls, tuple) and "_make" in own and "_fields" in own


def namedtuple_reduce(cls: Any) -> tuple[Any, ...]:
    """The reduction of a namedtuple class: its fields and defaults, then the rest."""
    defaults = tuple(cls._field_defaults[f] for f in cls._fields if f in cls._field_defaults)
    # a class made at run time from another's fields: mypy checks only literal ones
    made = collections.namedtuple(cls.__name__, cls._fields, defaults=defaults or None)  # type: ignore[misc]
    late = {
        k: v
        for k, v in cls.__dict__.items()
        if (k not in made.__dict__ or k == "__doc__") and k not in ("__module__", "__dict__")
    }
    args = (cls.__name__, cls.__qualname__, cls._fields, defaults)
    return _rebuild_namedtuple, args, late or None, None, None, _set_attrs


def _rebuild_namedtuple(
    name: str, qualname: str, fields: tuple[str, ...], defaults: tuple[Any, ...]
) -> type:
    # (as in namedtuple_reduce: the names and fields are data)
    cls = collections.namedtuple(name, fields, defaults=defaults or None, module="__main__")  # type: ignore[misc]
    cls.__qualname__ = qualname
    return cls


def _set_attrs(cls: type, late: dict[str, Any] | None) -> None:
    for k, v in (late or {}).items():
        setattr(cls, k, v)
