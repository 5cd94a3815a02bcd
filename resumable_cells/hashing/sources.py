"""Local modules, by the content of their source.

A module is local when its file lies outside the Python installation and every
site-packages folder: `helpers.py` beside the notebook, a package folder there, a
checkout on `sys.path` (an editable install too: its source is what runs). A step that
reaches a local module has in its key the digest of the module's source and,
transitively, of the local modules it imports (every `import` in its source, function
bodies included, found without importing anything) and of the loaded submodules of a
local package. The installed packages they import are returned for their versions.

A module is labelled by its name, as a path: `helpers.py`, `pkg/sub.py`,
`pkg/__init__.py` (the same wherever the notebook's folder is).

Cost: one `stat` per local file per step; a file's digest and its imports are
remembered by (size, mtime). A loaded module is remembered with the digest its file had
when first seen: a file edited after its import no longer says what the kernel runs,
and `reached` raises `KeyComponentError` until the module is reloaded or the kernel
restarted. An edit before the module is first seen is told by the time its code was
executed (`module_runs.py`, watching from the extension's load), or else by its
bytecode cache.
"""

from __future__ import annotations

import ast
import importlib.util
import logging
import os
import site
import sys
import time
from collections import deque
from collections.abc import Iterable
from functools import lru_cache
from importlib.machinery import (
    ExtensionFileLoader,
    PathFinder,
    SourceFileLoader,
    SourcelessFileLoader,
)
from types import ModuleType

import msgspec

from ..errors import KeyComponentError
from ..module_runs import executed_at
from .files import file_digest, signature

log = logging.getLogger(__name__)


_FILE_LOADERS = (SourceFileLoader, SourcelessFileLoader, ExtensionFileLoader)


class Sources(msgspec.Struct):
    files: dict[str, str] = msgspec.field(default_factory=dict)  # label -> digest of the source
    packages: set[str] = msgspec.field(default_factory=set)  # installed top-level modules reached


# -- which files are local -----------------------------------------------------------------
@lru_cache(maxsize=1)
def _installed_roots() -> tuple[str, ...]:
    import sysconfig  # here: a step that reaches no module file never needs it

    roots: set[str | None] = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    paths = sysconfig.get_paths()
    roots |= {paths.get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    roots |= set(getattr(site, "getsitepackages", list)())
    real = {os.path.realpath(r) for r in roots if r}
    return tuple(r.rstrip(os.sep) + os.sep for r in real if r != os.sep)


_LOCAL_FILES: dict[str, bool] = {}


def is_local_file(path: str) -> bool:
    """Whether `path` (a module's file) lies outside the installation and site-packages."""
    got = _LOCAL_FILES.get(path)
    if got is None:
        real = os.path.realpath(path)
        parts = real.split(os.sep)
        got = not (
            real.startswith(_installed_roots())
            or "site-packages" in parts
            or "dist-packages" in parts
        )
        _LOCAL_FILES[path] = got
    return got


def is_local_module(name: str | None) -> bool:
    """Whether the loaded module `name` is local (by its file)."""
    module = sys.modules.get(name) if name else None
    path = getattr(module, "__file__", None)
    return isinstance(path, str) and is_local_file(path)


# -- labels --------------------------------------------------------------------------------
def label(name: str, path: str) -> str:
    """`pkg.sub` in `.../pkg/sub.py` -> "pkg/sub.py"; a package -> "pkg/__init__.py"."""
    base = os.path.basename(path)
    rel = name.replace(".", "/")
    if base.startswith("__init__."):
        return f"{rel}/{base}"
    return rel + os.path.splitext(base)[1]


def module_name(file_label: str) -> str:
    """The inverse of `label`."""
    stem = os.path.splitext(file_label)[0]
    return stem.removesuffix("/__init__").replace("/", ".")


# -- the closure ---------------------------------------------------------------------------
def reached(names: Iterable[str]) -> Sources:
    """The local modules among `names` (dotted names; those that are not modules are
    skipped), what they import from local places, transitively, and the installed
    packages they import. Raises KeyComponentError for a module edited since its import."""
    out = Sources()
    todo = deque(_with_parents(names))
    seen: set[str] = set()
    local_packages: dict[str, list[str]] = {}  # name -> where its submodules are
    while todo:
        name = todo.popleft()
        if name in seen:
            continue
        seen.add(name)
        parent = name.rpartition(".")[0]
        if parent and parent not in local_packages:
            continue  # only a local package's own submodules are looked up
        path, search = _locate(name, local_packages.get(parent))
        if path is None and search is None:
            continue
        if not _local(path, search):
            out.packages.add(name.partition(".")[0])
            continue
        if search is not None:
            local_packages[name] = search
            todo.extend(_loaded_submodules(name))
        if path is not None:
            try:
                st = os.stat(path)
            except OSError:  # gone since its import: what runs is what was loaded
                log.debug("the source of %s is gone", name, exc_info=True)
                raise _stale(name, path) from None
            out.files[label(name, path)] = _digest(name, path, st)
            todo.extend(_with_parents(_imports(name, path, search is not None, st)))
    return out


def _with_parents(names: Iterable[str]) -> list[str]:
    out: list[str] = []
    for name in names:
        parts = name.split(".")
        out.extend(".".join(parts[: i + 1]) for i in range(len(parts)))
    return out


def _local(path: str | None, search: list[str] | None) -> bool:
    if path is not None:
        return is_local_file(path)
    return any(is_local_file(os.path.join(p, "__init__.py")) for p in search or ())


def _locate(name: str, parent_search: list[str] | None) -> tuple[str | None, list[str] | None]:
    """(file, submodule search path) of module `name`, without importing anything."""
    module = sys.modules.get(name)
    if module is not None:
        path = getattr(module, "__file__", None)
        search = getattr(module, "__path__", None)
        loader = getattr(getattr(module, "__spec__", None), "loader", None)
        if not isinstance(path, str) or not isinstance(loader, _FILE_LOADERS):
            path = None  # not loaded from a file of its own (a zip, frozen, built in)
        return path, (list(search) if search else None)
    try:
        if parent_search is not None:
            spec = PathFinder.find_spec(name, parent_search)
        else:
            spec = importlib.util.find_spec(name)
    except (ImportError, ValueError, AttributeError):
        log.debug("module %s could not be looked up", name, exc_info=True)
        return None, None
    if spec is None:
        return None, None
    path = spec.origin if spec.has_location and isinstance(spec.loader, _FILE_LOADERS) else None
    search = spec.submodule_search_locations
    return path, (list(search) if search is not None else None)


_SUBMODULES: dict[str, tuple[int, list[str]]] = {}


def _loaded_submodules(package: str) -> list[str]:
    """Submodules of `package` imported so far (remembered while sys.modules holds as
    many modules as it did)."""
    n = len(sys.modules)
    memo = _SUBMODULES.get(package)
    if memo is None or memo[0] != n:
        prefix = package + "."
        memo = (n, [m for m in list(sys.modules) if m.startswith(prefix)])
        _SUBMODULES[package] = memo
    return memo[1]


_IMPORTS: dict[str, tuple[tuple[int, int], list[str]]] = {}


def _imports(name: str, path: str, is_package: bool, st: os.stat_result) -> list[str]:
    """The modules the source at `path` imports anywhere in it, as absolute names."""
    if not path.endswith(".py"):
        return []  # an extension module: nothing to read
    sig = signature(st)
    memo = _IMPORTS.get(path)
    if memo and memo[0] == sig:
        return memo[1]
    try:
        with open(path, "rb") as f:
            tree = ast.parse(f.read(), path)
    except (OSError, SyntaxError, ValueError):
        log.debug("the imports of %s could not be read", path, exc_info=True)
        tree = ast.Module(body=[], type_ignores=[])
    package = name if is_package else name.rpartition(".")[0]
    found = list(dict.fromkeys(_import_names(tree, package)))
    _IMPORTS[path] = (sig, found)
    return found


def _import_names(tree: ast.AST, package: str) -> Iterable[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".") if package else []
                if node.level - 1 > len(parts):
                    continue
                prefix = ".".join(parts[: len(parts) - (node.level - 1)])
                base = ".".join(p for p in (prefix, base) if p)
            if base:
                yield base
                yield from (f"{base}.{a.name}" for a in node.names if a.name != "*")


# -- digests, and modules edited since their import -----------------------------------------
_FIRST_SEEN: dict[str, tuple[ModuleType, object, tuple[int, int], str]] = {}


def _digest(name: str, path: str, st: os.stat_result) -> str:
    """The digest of the source the kernel runs for module `name`: the file's, unless
    the module was loaded before the file changed."""
    module = sys.modules.get(name)
    if module is None or getattr(module, "__file__", None) != path:
        return file_digest(path, st)  # not loaded: an import runs what the file says
    spec = getattr(module, "__spec__", None)
    seen = _FIRST_SEEN.get(name)
    if seen is None or seen[0] is not module or seen[1] is not spec:  # new, or reloaded
        executed = executed_at(path)
        if executed is not None and executed < st.st_mtime <= time.time():
            raise _stale(name, path)  # (a time in the future is no evidence of an edit)
        if executed is None and _compiled_from_older_source(module, st):
            raise _stale(name, path)
        d = file_digest(path, st)
        _FIRST_SEEN[name] = (module, spec, signature(st), d)
        return d
    if seen[2] != signature(st):
        if file_digest(path, st) != seen[3]:
            raise _stale(name, path)
        _FIRST_SEEN[name] = (module, spec, signature(st), seen[3])
    return seen[3]


def _compiled_from_older_source(module: ModuleType, st: os.stat_result) -> bool:
    """Whether the module's bytecode cache was written for another version of its source:
    then the module was imported before the file's last edit. (A cache that cannot be
    rewritten is no evidence: the import may have compiled the source itself.)"""
    cached = getattr(module, "__cached__", None)
    if not cached or sys.dont_write_bytecode or not os.access(os.path.dirname(cached), os.W_OK):
        return False
    try:
        with open(cached, "rb") as f:
            head = f.read(16)
    except OSError:
        return False
    if len(head) < 16 or head[:4] != importlib.util.MAGIC_NUMBER:
        return False
    if int.from_bytes(head[4:8], "little"):
        return False  # checked by the source's hash, not its time
    mtime, size = int.from_bytes(head[8:12], "little"), int.from_bytes(head[12:16], "little")
    return (mtime, size) != (int(st.st_mtime) & 0xFFFFFFFF, st.st_size & 0xFFFFFFFF)


def _stale(name: str, path: str) -> KeyComponentError:
    alias = name.rpartition(".")[2]
    return KeyComponentError(
        f"{label(name, path)} changed after it was imported, so the kernel runs its old code",
        path=name,
        ways_out=f"Run `importlib.reload({alias})` or restart the kernel to use the new code",
    )
