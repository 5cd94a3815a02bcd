"""What a step registers with a library: a call that changes how the process behaves
afterwards and leaves nothing in the notebook's variables.

`Sequence.register(My)` makes `isinstance(m, Sequence)` true, `codecs.register(search)`
adds an encoding, `atexit.register(f)` runs `f` when the kernel ends,
`mimetypes.add_type(...)` a file type, `plt.colormaps.register(cmap)` a colormap a later
`imshow(cmap=...)` names, `tqdm.pandas()` the `progress_apply` methods of pandas' frames,
`@register_extension_dtype` a dtype `pd.array(..., dtype=...)` names. A hit binds the
step's values and sets the process state again; it calls none of these, and after a
restart a later cell would find the registration missing (an AttributeError, a
LookupError, or silently another answer). Such a step has an effect and is not cached.

These registries cannot be read (a codec search function, an ABC's virtual subclasses
are kept in C), so the functions that change them are wrapped for the step's duration,
on their module or class (the wrapper records, then calls the original). A call counts
when the notebook's code made it on a thread the tripwire watches for the step (its
own, one it started, work it submitted to a pool: `watchpoints.watched`): below the
frames of the registry's own package (matplotlib's `register_cmap` calls its registry), the first
frame is a cell's or a module of the notebook's folder. What a library registers as it
is imported, or for itself as it runs, is left alone: an import the hit makes again
registers it again. A registry module first imported during the step is wrapped as its
import finishes (a finder placed first on `sys.meta_path` for the step's duration), so
that `import tqdm; tqdm.pandas()` in one step is seen.

Not seen: a function taken by name before the step (`from atexit import register`, then
`register(f)` in a step), and registries not listed here (docs/guarantees.md).
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from importlib.machinery import ModuleSpec
from typing import Any, NamedTuple

from . import watchpoints
from .notebook_code import notebook_globals, own_module

log = logging.getLogger(__name__)


def _named(obj: Any) -> str:
    return str(getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) or obj)


class Entry(NamedTuple):
    """A function that registers: where it lives, and what a call means."""

    module: str  # the module it lives in (watched once imported)
    path: str  # its attribute there: "register", "ABCMeta.register"
    said: str  # for the message: "registered a codec search function"
    label: Callable[[tuple[Any, ...]], str]  # a name for the message, from the arguments


ENTRIES = (
    Entry("abc", "ABCMeta.register", "registered a virtual subclass",
          lambda a: f"{_named(a[1])} of {_named(a[0])}"),
    Entry("codecs", "register", "registered a codec search function", lambda a: _named(a[0])),
    Entry("atexit", "register", "registered an exit function", lambda a: _named(a[0])),
    Entry("copyreg", "pickle", "registered a pickle reducer", lambda a: _named(a[0])),
    Entry("mimetypes", "add_type", "added a MIME type", lambda a: f"{a[1]} as {a[0]}"),
    Entry("matplotlib.cm", "ColormapRegistry.register", "registered a colormap",
          lambda a: str(getattr(a[1], "name", "?"))),
    Entry("matplotlib.projections", "ProjectionRegistry.register", "registered a projection",
          lambda a: ", ".join(str(getattr(c, "name", _named(c))) for c in a[1:])),
    Entry("tqdm.std", "tqdm.pandas", "added tqdm's progress methods to pandas",
          lambda a: f"{_named(a[0])}.pandas"),
    Entry("pandas.core.dtypes.base", "Registry.register", "registered a pandas extension dtype",
          lambda a: str(getattr(a[1], "name", _named(a[1])))),
)  # fmt: skip


class _Call(NamedTuple):
    entry: Entry
    args: tuple[Any, ...]


class Held:
    """The calls a step made, as it runs."""

    def __init__(self, namespace: dict[str, Any]) -> None:
        self.namespace = namespace
        self.calls: list[_Call] = []


_active: Held | None = None  # the running step's, while `watching`
# (owner id, attribute) -> (the original, its wrapper): made once per kernel
_wrappers: dict[tuple[int, str], tuple[Any, Any]] = {}


@contextmanager
def watching(namespace: dict[str, Any]) -> Iterator[Held]:
    """Within the block, the registering calls the notebook's code makes on the threads
    watched for the step (inside `watchpoints.watching`) are kept in the Held it yields."""
    global _active
    held, outer = Held(namespace), _active
    placed: list[tuple[Any, str, Any, Any]] = []
    for entry in ENTRIES:
        module = sys.modules.get(entry.module)
        if module is not None:
            _wrap(module, entry, placed)
    finder = _Finder([e for e in ENTRIES if e.module not in sys.modules], placed)
    if finder.entries:
        sys.meta_path.insert(0, finder)
    _active = held
    try:
        yield held
    finally:
        _active = outer
        if finder.entries and finder in sys.meta_path:
            sys.meta_path.remove(finder)
        for owner, attr, raw, wrapped in reversed(placed):
            if vars(owner).get(attr) is wrapped:  # (else someone replaced it meanwhile)
                setattr(owner, attr, raw)


def after(held: Held) -> list[str]:
    """The registrations the step made, as effects ("registered an exit function (f)")."""
    found: list[str] = []
    for call in held.calls:
        try:
            label = call.entry.label(call.args)
        except Exception:  # (a call the registry itself refused: said without a name)
            log.debug("no label for %s", call.entry.path, exc_info=True)
            label = call.entry.path
        said = f"{call.entry.said} ({label})"
        if said not in found:
            found.append(said)
    return found


def _wrap(module: Any, entry: Entry, placed: list[tuple[Any, str, Any, Any]]) -> None:
    """Put the entry's wrapper in place of its function, noted in `placed`."""
    *owners, attr = entry.path.split(".")
    owner = module
    for name in owners:
        owner = getattr(owner, name, None)
    raw = vars(owner).get(attr) if owner is not None else None
    if raw is None:  # (another version of the library: nothing to watch)
        return
    key = (id(owner), attr)
    made = _wrappers.get(key)
    if made is not None and raw is made[1]:  # (already wrapped: a step within a step)
        return
    if made is None or made[0] is not raw:
        made = _wrappers[key] = (raw, _wrapper(raw, entry))
    setattr(owner, attr, made[1])
    placed.append((owner, attr, raw, made[1]))


def _wrapper(raw: Any, entry: Entry) -> Any:
    """`raw` (a function, builtin or classmethod) wrapped to record the notebook's calls."""
    fn = raw.__func__ if isinstance(raw, classmethod) else raw
    package = entry.module.partition(".")[0]

    @functools.wraps(fn)
    def registering(*args: Any, **kwargs: Any) -> Any:
        held = _active
        if held is not None and watchpoints.watched():
            if _from_notebook(sys._getframe(1), package, held.namespace):
                held.calls.append(_Call(entry, args))
        return fn(*args, **kwargs)

    return classmethod(registering) if isinstance(raw, classmethod) else registering


def _from_notebook(frame: Any, package: str, ns: dict[str, Any]) -> bool:
    """Whether the call was the notebook's: the first frame below the registry
    package's own and this package's (the tripwire's wrappers of `exec`, through which
    an import runs a module's code) is a cell's or a module of the notebook's folder."""
    while frame is not None:
        home = frame.f_globals.get("__name__")
        if not isinstance(home, str) or (
            home.partition(".")[0] != package and not own_module(home)
        ):
            return notebook_globals(frame.f_globals, ns)
        frame = frame.f_back
    return False


class _Finder:
    """First on `sys.meta_path` while a step runs: a registry module the step imports is
    wrapped once its import has run. Finds nothing itself: the spec is the next
    finder's, with the loader's `exec_module` extended on that one loader."""

    def __init__(self, entries: Sequence[Entry], placed: list[tuple[Any, str, Any, Any]]):
        self.entries = list(entries)
        self.names = {e.module for e in entries}
        self.placed = placed

    def find_spec(self, name: str, path: Any, target: Any = None) -> ModuleSpec | None:
        if name not in self.names:
            return None
        spec = None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(name, path, target)
            if spec is not None:
                break
        loader: Any = getattr(spec, "loader", None)
        run = getattr(loader, "exec_module", None)
        if run is None or isinstance(loader, type) or getattr(loader, "name", None) != name:
            # Only a loader made for this one module (a file's) is extended: a shared
            # one (the builtin importer is a class) would keep it for every module.
            return spec

        def exec_module(module: Any) -> None:
            try:
                run(module)
            finally:
                try:
                    del loader.exec_module  # (its class's again)
                except AttributeError:
                    log.debug("the loader of %s lost its exec_module", name)
            for entry in self.entries:
                if entry.module == name:
                    _wrap(module, entry, self.placed)

        try:
            loader.exec_module = exec_module
        except (AttributeError, TypeError):  # a loader without an instance dict
            log.debug("%s is imported unwatched", name)
        return spec
