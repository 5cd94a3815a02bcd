"""The entry points the tripwire watches: the Python functions through which a step
reaches files, processes, the network and code compiled from strings, wrapped only
while a step is watched.

An audit hook would see them all, but a hook cannot be removed: once added, every
audited event of the process pays a Python call, in steps and outside (`id()`, which
`copy.deepcopy` calls for every object, most of all). So nothing is added for good.
When a watch begins, each function below is replaced where Python looks it up at call
time by a wrapper that reports the call, shaped as the arguments of the audit event
the call raises (`report(event, args)`: the tripwire reads them as it read its hook's),
then calls the original; when the watch ends, even by an exception or an interrupt,
the originals are put back. Outside a watch nothing pays; inside, a watched call pays
one Python call, any other call nothing. The thread that began the watch reports, and so
does each thread a reporting thread starts meanwhile (`adopt`: a `ThreadPoolExecutor`
made in the step, whose workers do its work), until the watch ends; so does what a
watched thread submits to a thread pool (`ThreadPoolExecutor.submit`), while it runs in
the pool's thread: a pool an earlier cell made does the step's work watched. Other
threads' calls go straight through.

    builtins.open, io.open (pathlib's), os.open                         "open"
    os.remove, unlink, rename, replace, rmdir, mkdir, truncate, chmod,
    link, symlink; shutil.rmtree (its folders)                           as named
    os.listdir, os.scandir (glob's, os.walk's, pathlib's)                as named
    os.getcwd, getcwdb (`Path.cwd()`, abspath of a relative path)       "os.getcwd"
    os.environ's item reads, its names, its item writes and deletions
    (`os.getenv`, `.get`, `in`, `dict(os.environ)`, `%env`)              "os.environ.*"
    subprocess.Popen._execute_child (every Popen: os.popen's, asyncio's,
    IPython's `%sx`), os.system, posix_spawn(p), execv(e) (the other exec*
    and spawn* call them), fork, forkpty (pty.fork: pexpect, so IPython's
    `!cmd`), pty.spawn, kill, killpg                                     processes
    socket.socket.connect, connect_ex (a subclass's too: ssl)            "socket.connect"
    sqlite3.connect                                                      "sqlite3.connect"
    eval, exec, compile (when the watch asks: `compiled`)                "compile"

A reference to an original taken before the watch began calls it unseen. Three kinds
are covered. The globals of every loaded module are swept for names bound to an
original, each module once (the first watch of a process sweeps them all: 30 ms for
the 1,900 modules of numpy, pandas, scipy, scikit-learn and IPython; a later one, the
modules imported since): IPython's `open`, the one a notebook's cells call, calls the
`io.open` IPython bound when imported; tarfile, bz2 and tokenize bind `open` so; a
notebook's own module may bind `remove`. Numpy's table of file openers (`np.loadtxt`,
`np.savetxt`). And at each watch, the namespace it is given (the notebook's: `from os
import system` in an earlier cell), read from the ids of its values the step took as it
began (a long session's namespace holds a string for every cell it ran: it is not walked
again). A name bound to a wrapper while watched, in that namespace (found by its type:
every wrapper is a function) or in a module imported meanwhile, is bound to the original
when the watch ends. What else holds an original from before the watch (a default
argument, an object's attribute, a closure, C code) escapes it, and so do `io.FileIO`
called directly, files C libraries open themselves, and processes started by
`_posixsubprocess` alone (multiprocessing's spawn and forkserver starts), as they
escaped the audit hook. A wrapper the watched code stores elsewhere stays a wrapper:
it calls the original, reports only while a watch runs, and digests as the original
(its name and module), but pickle refuses it (it is not the original).
"""

from __future__ import annotations
import __future__

import builtins
import functools
import importlib
import inspect
import logging
import operator
import os
import sys
import threading
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager
from itertools import compress, repeat
from types import FrameType, FunctionType, ModuleType
from typing import Any, NamedTuple, TypeAlias

import msgspec

from ..objects.identities import Identities

log = logging.getLogger(__name__)

# An audit event's arguments, as the wrapper of a call that raises it shapes them.
Args: TypeAlias = tuple[Any, ...]
Report: TypeAlias = Callable[[str, Args], None]
Where: TypeAlias = dict[Any, Any] | type  # a module's globals, a namespace, a class


class _Local(threading.local):
    """What this thread tells, while watched: `report`, the watching thread's (or the
    relay of the watch that adopted this thread); `relay`, the watch's, for the threads
    this one starts. None in every thread until set (a class default: no lookup fails)."""

    report: Report | None = None
    relay: _Relay | None = None


_local = _Local()


# -- the arguments each call's audit event carries -----------------------------------------
def _fd(dir_fd: Any) -> Any:
    return -1 if dir_fd is None else dir_fd  # (as the audit events give "none")


def _open_args(file: Any, mode: Any = "r", *_: Any, **__: Any) -> Args:
    return (file, mode, None)


def _os_open_args(path: Any, flags: Any, *_: Any, **__: Any) -> Args:
    return (path, None, flags)


def _path_args(path: Any, *_: Any, dir_fd: Any = None, **__: Any) -> Args:
    return (path, _fd(dir_fd))


def _mkdir_args(path: Any, mode: Any = 0o777, *_: Any, dir_fd: Any = None, **__: Any) -> Args:
    return (path, mode, _fd(dir_fd))


def _chmod_args(path: Any, mode: Any, *_: Any, dir_fd: Any = None, **__: Any) -> Args:
    return (path, mode, _fd(dir_fd))


def _two_paths_args(
    src: Any, dst: Any, *_: Any, src_dir_fd: Any = None, dst_dir_fd: Any = None, **__: Any
) -> Args:
    return (src, dst, _fd(src_dir_fd), _fd(dst_dir_fd))


def _symlink_args(src: Any, dst: Any, *_: Any, dir_fd: Any = None, **__: Any) -> Args:
    return (src, dst, _fd(dir_fd))


def _truncate_args(path: Any, length: Any, *_: Any, **__: Any) -> Args:
    return (path, length)


def _system_args(command: Any, *_: Any, **__: Any) -> Args:
    return (os.fsencode(command),)


def _spawn_args(path: Any, argv: Any, env: Any = None, *_: Any, **__: Any) -> Args:
    return (path, argv, env)


def _list_args(path: Any = ".", *_: Any, **__: Any) -> Args:
    return (path,)


def _no_args(*_: Any, **__: Any) -> Args:
    return ()


def _environ_key(environ: Any, key: Any, *_: Any, **__: Any) -> Args:
    return (key,)


def _first_arg(first: Any, *_: Any, **__: Any) -> Args:
    return (first,)


def _two_args(first: Any, second: Any, *_: Any, **__: Any) -> Args:
    return (first, second)


def _popen_args(
    self: Any, args: Any, executable: Any, preexec_fn: Any, close_fds: Any, pass_fds: Any,
    cwd: Any, env: Any, startupinfo: Any, creationflags: Any, shell: Any, *_: Any, **__: Any,
) -> Args:  # fmt: skip
    """As `Popen._execute_child` shapes them for its event (without consuming an
    iterator it was given: that is the process's to read)."""
    if isinstance(args, (str, bytes, os.PathLike)):
        argv = [args]
    elif isinstance(args, Sequence):
        argv = list(args)
    else:
        argv = [repr(args)]
    if shell:
        argv = ["/bin/sh", "-c", *argv]
        if executable:
            argv[0] = executable
    return (executable if executable is not None else argv[0], argv, cwd, env)


class Target(msgspec.Struct, frozen=True):
    """A function looked up at call time where it is defined, and its call's event."""

    owner: str  # a module, or "module:Class" for a method
    name: str
    event: str
    shape: Callable[..., Args]


TARGETS = (
    Target("builtins", "open", "open", _open_args),
    Target("io", "open", "open", _open_args),
    Target("os", "open", "open", _os_open_args),
    Target("os", "remove", "os.remove", _path_args),
    Target("os", "unlink", "os.remove", _path_args),
    Target("os", "rename", "os.rename", _two_paths_args),
    Target("os", "replace", "os.rename", _two_paths_args),
    Target("os", "rmdir", "os.rmdir", _path_args),
    Target("os", "mkdir", "os.mkdir", _mkdir_args),
    Target("os", "truncate", "os.truncate", _truncate_args),
    Target("os", "chmod", "os.chmod", _chmod_args),
    Target("os", "lchmod", "os.chmod", _chmod_args),
    Target("os", "link", "os.link", _two_paths_args),
    Target("os", "symlink", "os.symlink", _symlink_args),
    Target("shutil", "rmtree", "shutil.rmtree", _path_args),
    Target("os", "getcwd", "os.getcwd", _no_args),
    Target("os", "getcwdb", "os.getcwd", _no_args),
    Target("os:_Environ", "__getitem__", "os.environ.read", _environ_key),
    Target("os:_Environ", "__iter__", "os.environ.list", _no_args),
    Target("os:_Environ", "__setitem__", "os.environ.write", _environ_key),
    Target("os:_Environ", "__delitem__", "os.environ.write", _environ_key),
    Target("os", "listdir", "os.listdir", _list_args),
    Target("os", "scandir", "os.scandir", _list_args),
    Target("subprocess:Popen", "_execute_child", "subprocess.Popen", _popen_args),
    Target("os", "system", "os.system", _system_args),
    Target("os", "posix_spawn", "os.posix_spawn", _spawn_args),
    Target("os", "posix_spawnp", "os.posix_spawn", _spawn_args),
    Target("os", "execv", "os.exec", _spawn_args),
    Target("os", "execve", "os.exec", _spawn_args),
    Target("os", "fork", "os.fork", _no_args),
    Target("os", "forkpty", "os.forkpty", _no_args),
    Target("pty", "spawn", "pty.spawn", _first_arg),
    Target("os", "kill", "os.kill", _two_args),
    Target("os", "killpg", "os.killpg", _two_args),
    Target("socket:socket", "connect", "socket.connect", _two_args),
    Target("socket:socket", "connect_ex", "socket.connect", _two_args),
    Target("sqlite3", "connect", "sqlite3.connect", _first_arg),
    Target("sqlite3.dbapi2", "connect", "sqlite3.connect", _first_arg),
)
# Imported when the first watch begins, so that a step importing one finds it wrapped.
_OWNERS = ("builtins", "io", "os", "shutil", "subprocess", "pty", "socket", "sqlite3")


# -- wrappers ------------------------------------------------------------------------------
def _tell(report: Report, event: str, args: Args) -> None:
    _local.report = None  # what reporting does itself (a stat, a digest) is not the step's
    try:
        report(event, args)
    finally:
        _local.report = report


def _wrap(original: Callable[..., Any], event: str, shape: Callable[..., Args]) -> Any:
    @functools.wraps(original)  # (its name and module: it digests as the original does)
    def watched(*args: Any, **kwargs: Any) -> Any:
        report = _local.report
        if report is not None:
            try:
                told = shape(*args, **kwargs)
            except (TypeError, ValueError):
                told = None  # a call the original refuses: it raises
            if told is not None:
                _tell(report, event, told)
        return original(*args, **kwargs)

    return watched


# The future statements whose flags compile() inherits from the code that calls it.
_FUTURES = (
    functools.reduce(
        operator.or_, (getattr(__future__, f).compiler_flag for f in __future__.all_feature_names)
    )
    & ~__future__.nested_scopes.compiler_flag
)  # (always on: not a flag compile takes)
_STRINGS = (str, bytes, bytearray, memoryview)


def _compiled(source: Any, mode: str, caller: FrameType, original_compile: Any) -> Any:
    """A string given to eval or exec, compiled as they compile it (with the caller's
    future statements; eval strips leading blanks), reported first."""
    text = source if isinstance(source, (str, bytes)) else bytes(source)
    report = _local.report
    if report is not None:
        _tell(report, "compile", (text, "<string>"))
    if mode == "eval":
        text = text.lstrip(" \t") if isinstance(text, str) else text.lstrip(b" \t")
    return original_compile(text, "<string>", mode, caller.f_code.co_flags & _FUTURES, True)


def _caller_locals(frame: FrameType) -> Any:
    """What eval and exec take as the locals when given none: the caller's."""
    if sys.version_info >= (3, 13) and frame.f_code.co_flags & inspect.CO_OPTIMIZED:
        return dict(frame.f_locals)  # (PEP 667: a snapshot of a function's locals)
    return frame.f_locals


def _wrap_compile(original: Any) -> Any:
    @functools.wraps(original)
    def compile(
        source: Any, filename: Any, mode: Any, flags: Any = 0, dont_inherit: Any = False,
        optimize: Any = -1, **kwargs: Any,
    ) -> Any:  # fmt: skip
        __tracebackhide__ = True  # noqa: F841  (IPython shows no frame of ours)
        report = _local.report
        if report is not None and filename in ("<string>", b"<string>"):
            _tell(report, "compile", (source, "<string>"))
        if not dont_inherit and isinstance(flags, int):
            flags |= sys._getframe(1).f_code.co_flags & _FUTURES  # the caller's, not ours
            dont_inherit = True
        return original(source, filename, mode, flags, dont_inherit, optimize, **kwargs)

    return compile


def _wrap_runner(original: Any, original_compile: Any, mode: str) -> Any:
    """`eval` (mode "eval") or `exec` ("exec"): a string is compiled through the watched
    `compile`, in the caller's globals and locals as the builtin would take them."""

    @functools.wraps(original)
    def run(source: Any, globals: Any = None, locals: Any = None, **kwargs: Any) -> Any:
        __tracebackhide__ = True  # noqa: F841
        caller = sys._getframe(1)
        if isinstance(source, _STRINGS):
            source = _compiled(source, mode, caller, original_compile)
        if globals is None:
            globals = caller.f_globals
            locals = _caller_locals(caller) if locals is None else locals
        return original(source, globals, locals, **kwargs)

    return run


# -- where the wrappers go -----------------------------------------------------------------
class _Spot(NamedTuple):
    """One place an original is looked up, and the wrapper put there while watched."""

    where: Where
    key: Any
    original: Any
    wrapper: Any
    inherited: bool = False  # a class's attribute found on a base: deleted, not set, after


def _in_place(spots: list[_Spot]) -> bool:
    """Whether each spot still holds its original (a test's mock may have replaced one)."""
    for where, key, original, _, _ in spots:
        current = where.get(key) if isinstance(where, dict) else getattr(where, key, None)
        if current is not original:
            return False
    return True


def _put_all(spots: list[_Spot]) -> None:
    for where, key, _, wrapper, _ in spots:
        if isinstance(where, dict):
            where[key] = wrapper
        else:
            setattr(where, key, wrapper)


def _take_back_all(spots: list[_Spot]) -> None:
    """The originals, wherever a wrapper still is (so a second pass finishes the work of
    one an interrupt cut short, and a spot never reached is left as it is)."""
    for where, key, original, wrapper, inherited in reversed(spots):
        if isinstance(where, dict):
            if where.get(key) is wrapper:
                where[key] = original
                continue
            current = where.get(key)
        elif vars(where).get(key) is wrapper:
            if inherited:
                delattr(where, key)
            else:
                setattr(where, key, original)
            continue
        else:
            current = getattr(where, key, None)
        if current is not original:
            log.debug("%r was rebound while a step was watched: left as it is", key)


_WRAPPERS: dict[int, tuple[Any, Any]] = {}  # id(original) -> (original, its wrapper)
_ORIGINALS: dict[int, tuple[Any, Any]] = {}  # id(wrapper) -> (wrapper, its original)


def _wrapper_of(original: Any, make: Callable[[], Any]) -> Any:
    known = _WRAPPERS.get(id(original))
    if known is not None and known[0] is original:
        return known[1]
    wrapper = make()
    if type(wrapper) is not FunctionType:  # (`_wrappers_in` finds them by their type)
        raise TypeError(f"a wrapper must be a function, not {type(wrapper).__name__}")
    _WRAPPERS[id(original)] = (original, wrapper)
    _ORIGINALS[id(wrapper)] = (wrapper, original)
    return wrapper


def original_of(obj: Any) -> Any:
    """The original function `obj` wraps, or `obj` if it is not a wrapper of ours."""
    known = _ORIGINALS.get(id(obj))
    return known[1] if known is not None and known[0] is obj else obj


def _is_wrapper(obj: Any) -> bool:
    return original_of(obj) is not obj


_MISSING = object()
_imported = False


def _owner(name: str) -> Where | None:
    module_name, _, cls = name.partition(":")
    module = sys.modules.get(module_name)
    if module is None:
        return None
    if not cls:
        return vars(module)
    owner = getattr(module, cls, None)
    return owner if isinstance(owner, type) else None


def _import_owners() -> None:
    global _imported
    if _imported:
        return
    for name in _OWNERS:
        try:
            importlib.import_module(name)
        except ImportError:  # (a Python built without sqlite3, a platform without pty)
            log.debug("%s cannot be imported: its functions are not watched", name, exc_info=True)
    _imported = True


def _effect_spots() -> list[_Spot]:
    spots = []
    for target in TARGETS:
        where = _owner(target.owner)
        if where is None:
            continue
        if isinstance(where, dict):
            current, inherited = where.get(target.name, _MISSING), False
        else:
            current = getattr(where, target.name, _MISSING)
            inherited = target.name not in vars(where)
        if current is _MISSING or _is_wrapper(current):
            continue  # (absent here; or left wrapped by a watch an interrupt cut short)
        wrapper = _wrapper_of(
            current, functools.partial(_wrap, current, target.event, target.shape)
        )
        spots.append(_Spot(where, target.name, current, wrapper, inherited))
    return spots


def _compile_spots() -> list[_Spot]:
    space = vars(builtins)
    compile_, eval_, exec_ = space["compile"], space["eval"], space["exec"]
    if any(_is_wrapper(f) for f in (compile_, eval_, exec_)):
        return []
    return [
        _Spot(space, "compile", compile_, _wrapper_of(compile_, lambda: _wrap_compile(compile_))),
        _Spot(
            space, "eval", eval_, _wrapper_of(eval_, lambda: _wrap_runner(eval_, compile_, "eval"))
        ),
        _Spot(
            space, "exec", exec_, _wrapper_of(exec_, lambda: _wrap_runner(exec_, compile_, "exec"))
        ),
    ]


# -- references taken before the watch -----------------------------------------------------
# Module name -> (the module, the names in its globals that held an original when it
# was swept): each module is swept once, when the number of modules has changed.
_SWEPT: dict[str, tuple[ModuleType, tuple[str, ...]]] = {}
_swept_count = 0


def _globals(module: ModuleType) -> dict[str, Any] | None:
    try:  # (not `module.__dict__`: that loads a lazily imported module)
        space = object.__getattribute__(module, "__dict__")
    except AttributeError:
        return None
    return space if isinstance(space, dict) else None


def _holding(space: dict[Any, Any], originals: dict[int, Any]) -> tuple[Any, ...]:
    held = originals.__contains__
    if not any(map(held, map(id, list(space.values())))):  # (at C speed: most hold none)
        return ()
    return tuple(k for k, v in list(space.items()) if id(v) in originals)


def _holding_of(names: Identities, originals: dict[int, Any]) -> list[str]:
    """The names of a namespace, as `names` took it, that held one of `originals`: from
    the ids it took, so a long session's namespace is not walked a second time."""
    if originals.keys().isdisjoint(names.ids):  # (at C speed: most hold none)
        return []
    return [
        names.names[i]
        for i in compress(range(len(names.ids)), map(originals.__contains__, names.ids))
    ]


def _wrappers_in(namespace: dict[str, Any]) -> list[str]:
    """The names of `namespace` bound to a wrapper. Only a function can be one, so the
    values' types are compared (in C, no int made per name), then the few functions'
    ids: a long session's namespace holds a string for each cell it ran (`_i42`)."""
    values = list(namespace.values())
    functions = compress(namespace, map(operator.is_, map(type, values), repeat(FunctionType)))
    return [k for k in functions if id(namespace.get(k)) in _ORIGINALS]


def _module_references(originals: dict[int, Any]) -> Iterator[tuple[dict[str, Any], str]]:
    if len(sys.modules) != _swept_count:
        _sweep(originals, unwrap=False)
    for module, names in _SWEPT.values():
        space = _globals(module) if names else None
        if space is not None:
            yield from ((space, name) for name in names)


def _sweep(originals: dict[int, Any], unwrap: bool) -> None:
    """Sweep the modules not swept before for names bound to one of `originals`; with
    `unwrap`, first bind each name bound to a wrapper to its original (the modules
    imported while watched: tarfile's `bltn_open`), so that the next watch finds them
    swept rather than walking their globals a second time."""
    global _swept_count
    here = sys.modules.get(__name__)
    either = {**originals, **_ORIGINALS} if unwrap else originals  # one walk for both
    swept: dict[str, tuple[ModuleType, tuple[str, ...]]] = {}
    for name, module in list(sys.modules.items()):
        known = _SWEPT.get(name)
        if known is not None and known[0] is module:
            swept[name] = known
            continue
        space = _globals(module) if isinstance(module, ModuleType) else None
        if space is None:
            continue
        held = _holding(space, either)
        if unwrap:
            for key in held:
                if _is_wrapper(space[key]):  # (the others hold an original already)
                    space[key] = original_of(space[key])
        if module is not here:
            swept[name] = (module, tuple(k for k in held if id(space.get(k)) in originals))
    _SWEPT.clear()
    _SWEPT.update(swept)
    _swept_count = len(sys.modules)


def _tables() -> Iterator[dict[Any, Any]]:
    """Tables that hold an original where no module global does: numpy's file openers,
    bound when numpy is imported (`np.loadtxt`, `np.genfromtxt`, `np.savetxt`)."""
    datasource = sys.modules.get("numpy.lib._datasource")
    table = getattr(getattr(datasource, "_file_openers", None), "_file_openers", None)
    if isinstance(table, dict):
        yield table


def _references(spots: list[_Spot], spaces: list[dict[Any, Any]], modules: bool) -> list[_Spot]:
    """The other places holding one of the spots' originals: in `spaces`, and in the
    loaded modules' globals if `modules`."""
    by_id = {id(s.original): s for s in spots}
    places: list[tuple[dict[Any, Any], Hashable]] = []
    if modules:
        places += _module_references(by_id)
    for space in spaces:
        places += [(space, k) for k in _holding(space, by_id)]
    return _spots_at(spots, by_id, places)


def _namespace_references(
    spots: list[_Spot], namespace: dict[str, Any], names: Identities | None
) -> list[_Spot]:
    """The names of `namespace` holding one of the spots' originals; from `names` when
    given (its identities, taken just before: a name it missed is one bound since)."""
    if names is None:
        return _references(spots, [namespace], modules=False)
    by_id = {id(s.original): s for s in spots}
    return _spots_at(spots, by_id, [(namespace, k) for k in _holding_of(names, by_id)])


def _spots_at(
    spots: list[_Spot], by_id: dict[int, _Spot], places: list[tuple[dict[Any, Any], Hashable]]
) -> list[_Spot]:
    """A spot for each place that still holds an original, and is not one of `spots`."""
    taken = {(id(s.where), s.key) for s in spots}
    out = []
    for space, key in places:
        spot = by_id.get(id(space.get(key)))
        if spot is not None and space.get(key) is spot.original and (id(space), key) not in taken:
            taken.add((id(space), key))
            out.append(_Spot(space, key, spot.original, spot.wrapper))
    return out


def _unwrap_new_modules(originals: dict[int, Any]) -> None:
    """Modules imported while watched bound the wrappers they found (tarfile's
    `bltn_open`): they get the originals, as if imported before, and are swept for
    `originals` while at hand: walking the 600 modules scipy.stats imports costs 7 ms."""
    if len(sys.modules) != _swept_count:
        _sweep(originals, unwrap=True)


def _unwrap(namespace: dict[str, Any]) -> None:
    """Bind each name of `namespace` bound to a wrapper to its original: what the watched
    code bound (`from os import remove` in a step) is what it would have bound."""
    for name in _wrappers_in(namespace):
        namespace[name] = original_of(namespace[name])


# -- watching ------------------------------------------------------------------------------
_lock = threading.Lock()


class _Group:
    """Wrappers put in place together while at least one watch wants them."""

    def __init__(self, spots: Callable[[], list[_Spot]], sweep: bool) -> None:
        self.spots = spots
        self.sweep = sweep  # for references taken before: modules, tables, the namespace
        self.depth = 0
        self.put: list[_Spot] = []
        self.namespace: dict[str, Any] | None = None
        # The spots of the last watch, and how many modules there were then.
        self.known: list[_Spot] = []
        self.known_at = -1

    def known_spots(self) -> list[_Spot]:
        """The spots found before, while no module was imported since and each still
        holds its original; else found again."""
        if self.known_at != len(sys.modules) or not _in_place(self.known):
            _import_owners()
            spots = self.spots()
            if self.sweep:
                spots += _references(spots, list(_tables()), modules=True)
            self.known, self.known_at = spots, len(sys.modules)
        return self.known

    def enter(self, namespace: dict[str, Any] | None, names: Identities | None = None) -> None:
        with _lock:
            self.depth += 1
            if self.depth > 1:
                return
            try:
                spots = self.known_spots()
                if self.sweep and namespace is not None:
                    spots = spots + _namespace_references(spots, namespace, names)
                    self.namespace = namespace
                self.put = spots  # (taken back whole, should an interrupt cut this short)
                _put_all(spots)
            except BaseException:
                self._take_back()
                self.depth -= 1
                raise

    def exit(self) -> None:
        with _lock:
            self.depth -= 1
            if self.depth:
                return
            try:
                self._take_back()
            except BaseException:  # an interrupt midway: the rest go back all the same
                self._take_back()
                raise

    def _take_back(self) -> None:
        _take_back_all(self.put)
        self.put = []
        if self.sweep:
            _unwrap_new_modules({id(spot.original): spot for spot in self.known})
        if self.namespace is not None:
            _unwrap(self.namespace)
            self.namespace = None


_EFFECTS = _Group(_effect_spots, sweep=True)
_COMPILE = _Group(_compile_spots, sweep=False)  # (eval, exec, compile: the builtins only)


def prepare() -> None:
    """Find where the originals are held now (the owners imported, the loaded modules
    swept), as the first watch would: ahead of it, while the kernel is idle. A watch
    finds them again only if a module was imported since, and then sweeps only the new
    ones."""
    with _lock:
        if not _EFFECTS.depth:
            _EFFECTS.known_spots()


class _Relay:
    """A watch's report as the threads it adopted hold it: told nothing once the watch
    ended (a pool's worker outlives the step that started it)."""

    __slots__ = ("report",)

    def __init__(self, report: Report) -> None:
        self.report: Report | None = report

    def __call__(self, event: str, args: Args) -> None:
        report = self.report
        if report is not None:
            report(event, args)


def adopt(thread: threading.Thread) -> None:
    """Called by a watched thread about to start `thread`: its calls are told to the
    same watch until it ends (its `run` is wrapped on the instance to say so as it
    begins). Outside a watch, nothing."""
    relay = _local.relay
    if relay is not None and relay.report is not None:
        thread.run = _carrying(thread.run, relay)  # type: ignore[method-assign]


def watched() -> bool:
    """Whether this thread's calls are told to a watch now: the thread that began it, a
    thread it adopted, or work it submitted to a pool, while the watch runs."""
    relay = _local.relay
    return relay is not None and relay.report is not None


def _carrying(fn: Callable[..., Any], relay: _Relay) -> Callable[..., Any]:
    """`fn`, reporting to `relay` while it runs in whichever thread runs it."""

    def carried(*args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True  # noqa: F841  (IPython shows no frame of ours)
        before = _local.report, _local.relay
        _local.report, _local.relay = relay, relay
        try:
            return fn(*args, **kwargs)
        finally:
            _local.report, _local.relay = before

    return carried


@contextmanager
def _pools_carrying() -> Iterator[None]:
    """While the watch runs, what a watched thread submits to a thread pool reports to
    its watch wherever it runs: `ThreadPoolExecutor.submit` (which `map` and asyncio's
    `run_in_executor` call) wrapped on the class, so a pool an earlier cell made does the
    step's work watched, and nothing else it does is."""
    futures = sys.modules.get("concurrent.futures.thread")
    cls = getattr(futures, "ThreadPoolExecutor", None)
    original = vars(cls).get("submit") if isinstance(cls, type) else None
    if cls is None or original is None or getattr(original, "_carries", False):
        yield  # (not imported; or an outer watch wrapped it, which serves this one too)
        return

    @functools.wraps(original)
    def submit(self: Any, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        if watched():
            fn = _carrying(fn, _local.relay)  # type: ignore[arg-type]
        return original(self, fn, *args, **kwargs)

    submit._carries = True  # type: ignore[attr-defined]
    cls.submit = submit
    try:
        yield
    finally:
        if vars(cls).get("submit") is submit:
            cls.submit = original


@contextmanager
def watching(
    report: Report,
    compiled: bool = False,
    namespace: dict[str, Any] | None = None,
    names: Identities | None = None,
) -> Iterator[None]:
    """Within the block, this thread's calls of the targets (and of eval, exec and
    compile if `compiled`) are told to `report(event, args)`, and those of the threads
    it `adopt`s. `namespace` is swept for names bound to an original before (from
    `names`, its identities taken just before, when given), and after for names bound
    to a wrapper."""
    previous = _local.report, _local.relay
    relay = _Relay(report)
    _EFFECTS.enter(namespace, names)
    try:
        if compiled:
            _COMPILE.enter(None)
        try:
            _local.report, _local.relay = report, relay
            with _pools_carrying():
                yield
        finally:
            relay.report = None
            _local.report, _local.relay = previous
            if compiled:
                _COMPILE.exit()
    finally:
        _EFFECTS.exit()
