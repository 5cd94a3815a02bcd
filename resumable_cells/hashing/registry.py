"""Which encoding a type gets beyond the builtins that `values` encodes itself.

Three tables: hashers users register (`register_hasher`), handlers of library types
(numpy, pandas: added the first time a value of the library is hashed, so hashing never
imports a library on its own) and the digest of functions and classes (with the
state functions hold, which a digest walks with its other objects). The package
fills the last two from `code` and `arrays` (`hashing/__init__.py`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

# A handler is fn(hasher, value, path); the hasher is a `values.Hasher`.
Handler = Callable[[Any, Any, str], None]

CUSTOM: dict[type, Callable[[Any], Any]] = {}  # read on every hash: a plain dict
_HANDLERS: dict[type, Handler] = {}
_HANDLER_CACHE: dict[type, Handler | None] = {}
_LIBRARIES: dict[str, list[Callable[[str], None]]] = {}
# A whole-value shortcut is fn(hasher, value, path) -> the xxh3_128 state after the value
# or None: a digest of the value alone may come from what is known of it already.
WHOLE: dict[type, Callable[[Any, Any, str], Any]] = {}


# Objects of the process that are never a notebook's data though a notebook binds them
# (the IPython shell: `ip = get_ipython()`): id -> (the object, its token). Each digests
# as its token, and is stored as a reference the restoring process resolves to its own
# object of that token (`storage/serialize.py`), never walked or pickled.
_PROCESS_OBJECTS: dict[int, tuple[Any, str]] = {}
_BY_TOKEN: dict[str, Any] = {}
PROCESS_TYPES: set[type] = set()  # their types: one set lookup tells any other object apart


def add_process_object(obj: Any, token: str) -> None:
    """`obj` is this process's object `token` (the one a new process registers under the
    same token stands for it there)."""
    old = _BY_TOKEN.get(token)
    if old is not None:
        _PROCESS_OBJECTS.pop(id(old), None)
    _PROCESS_OBJECTS[id(obj)] = (obj, token)
    _BY_TOKEN[token] = obj
    PROCESS_TYPES.add(type(obj))


def process_token(obj: Any) -> str | None:
    """The token of a process object (`add_process_object`), None for any other."""
    entry = _PROCESS_OBJECTS.get(id(obj))
    return entry[1] if entry is not None and entry[0] is obj else None


def process_object(token: str) -> Any:
    """This process's object of `token`. Raises LookupError when none is registered."""
    try:
        return _BY_TOKEN[token]
    except KeyError:
        raise LookupError(f"this process has no {token}") from None


def register_hasher(cls: type, fn: Callable[[Any], Any]) -> None:
    """Digest instances of `cls` through `fn(obj)`, which returns any hashable stand-in.

    >>> register_hasher(Client, lambda c: (c.url, c.model))  # doctest: +SKIP
    """
    CUSTOM[cls] = fn


def _not_plugged_in(obj: Any, hasher: Any) -> bytes:
    raise RuntimeError("resumable_cells.hashing.code is not plugged in")


_callable_digest: Callable[[Any, Any], bytes] = _not_plugged_in


def use_callable_digest(fn: Callable[[Any, Any], bytes]) -> None:
    """Digest functions, methods and classes with `fn(obj, hasher) -> 16 bytes`."""
    global _callable_digest
    _callable_digest = fn


def callable_digest(obj: Any, hasher: Any) -> bytes:
    """The 16-byte digest of a function, method or class (by code where it is the
    notebook's own)."""
    return _callable_digest(obj, hasher)


def _no_state(obj: Any, hasher: Any, path: str) -> bool:
    return False


_with_state: Callable[[Any, Any, str], bool] = _no_state


def use_with_state(fn: Callable[[Any, Any, str], bool]) -> None:
    """Digest a function or class that holds state (what a function closes over, its
    defaults, its attributes; a class made at run time) as part of the digest that
    reaches it with `fn(obj, hasher, path)`, which returns False for one it leaves to
    `callable_digest`."""
    global _with_state
    _with_state = fn


def with_state(obj: Any, hasher: Any, path: str) -> bool:
    """Write a function or class into `hasher` with the state it holds walked in the
    hasher's memo; False for one that `callable_digest` digests whole."""
    return _with_state(obj, hasher, path)


def add_library(top: str, register: Callable[[str], None]) -> None:
    """Call `register(top)` the first time a value of one of module `top`'s types is
    hashed while `top` is imported."""
    _LIBRARIES.setdefault(top, []).append(register)
    _HANDLER_CACHE.clear()


def loaded_class(module: str, name: str) -> type | None:
    """The class `name` of `module` once that module is loaded, else None: a library's
    handlers are added for the classes it has loaded, never by importing one (no value
    of a class exists before its module does)."""
    loaded = sys.modules.get(module)
    cls = getattr(loaded, name, None) if loaded is not None else None
    return cls if isinstance(cls, type) else None  # (None while it is being imported)


def add_whole(t: type, fn: Callable[[Any, Any, str], Any]) -> None:
    """Digest a value of exactly type `t` that is the whole of a digest with `fn`, which
    returns the digest state after the value, or None to hash it as any other."""
    WHOLE[t] = fn


def add_handler(t: type, fn: Handler) -> None:
    """Encode values of type `t` (and of its subclasses) with `fn(hasher, value, path)`."""
    _HANDLERS[t] = fn
    _HANDLER_CACHE.clear()


def handler_for(t: type) -> Handler | None:
    """The handler of `t` or of its nearest base that has one; None for none."""
    try:
        return _HANDLER_CACHE[t]
    except KeyError:
        pass
    mro = getattr(t, "__mro__", (t,))
    for base in mro:  # a subclass from another package (mpl_toolkits) counts too
        module = getattr(base, "__module__", None)
        top = module.partition(".")[0] if isinstance(module, str) else ""
        if top in _LIBRARIES and top in sys.modules:
            for register in _LIBRARIES[top]:
                register(top)
    found = None
    for base in mro:
        if base in _HANDLERS:
            found = _HANDLERS[base]
            break
    _HANDLER_CACHE[t] = found
    return found
