"""The tripwire: what a pure step does beyond its namespace, watched while it runs.

Writes to files (wherever the notebook lives, the temp directory included), deleting or
renaming them, subprocesses (IPython's `!cmd`, `%sx` and `%system` included: they start
theirs in a pseudo-terminal, `os.forkpty`), network connections and, in a kernel, asking
the user for input (`input()`, `getpass()`) mean the step has effects: it still runs,
but is not cached. A step with `--ttl` reads a live source (an API, a
database server) on purpose: its network connections are reads, whose answer its TTL
keeps from going stale (`network=True`). Files and folders the step itself creates are exempt
while it runs, and count as written if they are still there when it ends: a temporary
file it creates and removes is no effect. Regular files it opens for reading (other
than its own) become discovered inputs of its entry, and so do SQLite databases it
connects to and the folders it lists (their names: `os.listdir`, a glob, `os.walk`), and
the environment variables it reads (their digests); a step that reads a file by a
relative path or asks for the working folder's path holds in that folder only; a file it
read that changed by the time it ends was written (a database through its connection, or
a file by code the tripwire does not see). The store, the Python installation, the
package itself, system folders and per-user caches and config are ignored, but for
IPython's `%store` database, which holds the notebook's values. The thread running the
step is watched, and the threads it starts while it runs (a `ThreadPoolExecutor` made in
the step: its workers), and those they start, and what it submits to a thread pool an
earlier cell made while that runs; what else a thread running before the step does (a
`multiprocessing.pool.ThreadPool`'s work, a server's thread) is not.

The calls are seen by wrapping, for the step's duration only, the Python functions
they go through (`watchpoints.py`, which says which, and what escapes them: a
reference to `open` or `os.remove` some library took before the step, C code opening
files itself). Each call arrives as the audit event it raises (`_on_event`). Nothing is
left behind when the step ends: code outside steps pays nothing for the tripwire. While
a step whose key has reads through `eval`/`exec` runs, it also tells its trace
(`trace.py`) each string compiled as code.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, nullcontext
from functools import lru_cache, partial
from pathlib import Path
from types import FrameType
from typing import Any, NamedTuple, TypeAlias

import msgspec

from ...hashing.files import is_pattern
from ...hashing.reach import environ_digest, environ_names_digest
from ..objects.identities import Identities
from . import left_running, registrations, system_queries, watchpoints


class Findings(msgspec.Struct):
    effects: list[str] = msgspec.field(default_factory=list)
    reads: set[str] = msgspec.field(default_factory=set)
    created: dict[str, bool] = msgspec.field(default_factory=dict)  # path -> is a folder
    read_as: dict[str, tuple[int, int]] = msgspec.field(
        default_factory=dict
    )  # path -> (size, mtime)
    on_compile: Callable[[Any], None] | None = None  # told of each string compiled as code
    # folder -> its real path, for this step (`_real_file`)
    folders: dict[str, str] = msgspec.field(default_factory=dict)
    # the working folder as the step began, when it read a file by a relative path (its
    # entry holds only while the same names name the same files: `restore/validity.py`)
    relative_to: str | None = None
    asked_cwd: bool = False  # it asked for the working folder's path (`Path.cwd()`, `abspath`)
    began_in: str = msgspec.field(default_factory=os.getcwd)  # the working folder, as given
    listed: int = 0  # folders listed, among `reads` (their paths end with a separator)
    # environment variables the step's code read (not set first), each one's digest as it
    # read it; the digest of the variables' names, when it listed them (`_on_environ`)
    environ: dict[str, str] = msgspec.field(default_factory=dict)
    environ_names: str | None = None
    environ_set: set[str] = msgspec.field(default_factory=set)  # set or deleted by the step

    def read(self, path: str, st: os.stat_result) -> None:
        self.reads.add(path)
        self.read_as.setdefault(path, (st.st_size, st.st_mtime_ns))

    def asked_for_cwd(self) -> None:
        """The step asked for the working folder's path (`os.getcwd()`, and so
        `Path.cwd()`, `os.path.abspath` or `Path.resolve()` of a relative path): what it
        made of it holds in that folder only, as a file named relative to it does."""
        self.asked_cwd = True
        if self.relative_to is None:
            self.relative_to = os.path.realpath(self.began_in)

    def named_as(self, given: Any, full: str, folder: bool = False) -> None:
        """A file (or `folder`) read, named `given` by the step, whose real path is
        `full`. Named relative to the working folder (`open('data.csv')`), it ties the
        entry to that folder (`relative_to`). Named through a symbolic link
        (`latest/d.csv`, `latest` a link to `v1`), it is read under that name too: a link
        pointed elsewhere since (`latest` to `v2`) names another file, which a hit sees."""
        text = os.fsdecode(given)
        if not os.path.isabs(text):
            if self.relative_to is None:
                self.relative_to = os.path.realpath(self.began_in)
            cwd = os.getcwd()
            real = self.folders.get(cwd)
            if real is None:
                real = self.folders[cwd] = os.path.realpath(cwd)
            text = os.path.join(real, text)
        named = os.path.normpath(text)
        if named != full and os.path.realpath(named) == full:  # (through a link)
            self.reads.add(named + os.sep if folder else named)

    def own(self, path: str) -> bool:
        """Whether `path` is, or is inside, something the step created."""
        while True:
            if path in self.created:
                return True
            parent = os.path.dirname(path)
            if parent == path:
                return False
            path = parent

    def finish(self) -> None:
        """What the step created and did not remove is written, and so is a file it read
        that changed since: effects."""
        for path, is_dir in self.created.items():
            if os.path.lexists(path) and not self.own(os.path.dirname(path)):
                what = "created a directory" if is_dir else "wrote"
                self.effects.append(f"{what} {_rel(path)}")
        for path, sig in self.read_as.items():
            try:
                st = os.stat(path)
                now = (st.st_size, st.st_mtime_ns)
            except OSError:
                now = None
            if now != sig:
                self.effects.append(f"changed {_rel(path)}")


class Ignored(NamedTuple):
    """The folders whose files a step may read and write unseen (the Python install,
    system folders, per-user caches and config, the store), but for the folders inside
    them `kept`: IPython's `%store` database, in its profile folder, holds the notebook's
    values (`%store -r df` reads one another notebook stored; `%store df` writes one)."""

    roots: tuple[str, ...]
    kept: tuple[str, ...] = ()

    def covers(self, path: str) -> bool:
        return path.startswith(self.roots) and not (self.kept and path.startswith(self.kept))


# What a watched step's events are judged against: its findings, the files it may
# touch unseen, whether network connections are allowed.
Active: TypeAlias = tuple[Findings, Ignored, bool]
# An audit event's arguments: what each event passes differs.
Args: TypeAlias = watchpoints.Args
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_FS_EVENTS = {
    "os.remove": "deleted", "os.rename": "renamed", "os.rmdir": "removed a directory",
    "os.mkdir": "created a directory", "shutil.rmtree": "removed a tree", "os.truncate": "truncated",
    "os.chmod": "changed permissions of", "os.link": "linked", "os.symlink": "linked",
}  # fmt: skip
_PROC_EVENTS = {
    "subprocess.Popen", "os.system", "os.posix_spawn", "os.spawn", "os.exec", "os.fork",
    "os.popen",
}  # fmt: skip
_SIGNAL_EVENTS = {"os.kill", "os.killpg"}
_LIST_EVENTS = {"os.listdir", "os.scandir"}
MAX_FOLDERS = 1000  # folders a step lists and its entry keeps; past it, it is not cached
_DIR_FD = {"os.remove": 1, "os.rmdir": 1, "os.mkdir": 2, "os.chmod": 2, "os.rename": 2}
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PTY_EVENTS = {"os.forkpty", "pty.spawn"}  # pexpect, under IPython's shell escapes


def _ignored(store_dir: Path, shell: Any = None) -> Ignored:
    profile = getattr(getattr(shell, "profile_dir", None), "location", None)
    home = os.environ.get("HOME")  # (what `expanduser` reads first)
    return _ignored_for(store_dir, home, profile if isinstance(profile, str) else None)


@lru_cache(maxsize=8)
def _ignored_for(store_dir: Path, home: str | None, profile: str | None) -> Ignored:
    # Once per kernel (per store, home and profile), not twice per step: about 20
    # `realpath` calls would otherwise run each time. A symlink among these roots that is
    # re-pointed while the kernel runs is not seen.
    prefixes = (sys.prefix, sys.base_prefix, sys.exec_prefix)
    roots = _resolved_roots(str(store_dir), os.path.expanduser("~"), prefixes)
    kept = (os.path.join(os.path.realpath(profile), "db") + os.sep,) if profile else ()
    return Ignored(roots, kept)


def _forget_stored(shell: Any) -> None:
    """IPython's `%store` database keeps what it read in memory while the file's mtime
    (in seconds) is the same, and then reads nothing: a step's `%store -r` would be no
    read of the file, and its entry would not hold it. Forgotten as a step begins, each
    value it reads is read from its file. (Made on first use: one not made is not.)"""
    db = vars(shell).get("_db") if shell is not None and hasattr(shell, "__dict__") else None
    cache = getattr(db, "cache", None)
    if isinstance(cache, dict):
        cache.clear()


def _resolved_roots(store_dir: str, home: str, prefixes: tuple[str, ...]) -> tuple[str, ...]:
    roots = {
        store_dir, *prefixes,
        "/usr", "/etc", "/proc", "/sys", "/dev", "/lib", "/var/cache", "/run",
        os.path.join(home, ".cache"), os.path.join(home, ".config"), os.path.join(home, ".ipython"),
        os.path.join(home, ".local"), os.path.join(home, ".matplotlib"), os.path.join(home, ".pyenv"),
        os.path.join(home, ".jupyter"), _PACKAGE,
    }  # fmt: skip
    return tuple(os.path.realpath(r) + os.sep for r in roots if r)


@contextmanager
def watching(
    store_dir: Path,
    network: bool = False,
    on_compile: Callable[[Any], None] | None = None,
    namespace: dict[str, Any] | None = None,
    shell: Any = None,
    names: Identities | None = None,
) -> Iterator[Findings]:
    """Yields the Findings of the block it guards (the current thread is watched, and,
    given `namespace`, the threads it starts meanwhile).
    `network`: connections are allowed (reads of a live source), not effects.
    `on_compile(source)` is told of each string compiled as code (`eval`, `exec`).
    `namespace` (the notebook's): its names bound to a watched function are watched too,
    and the notebook's code the block leaves to run later is an effect (`left_running`),
    as is what it registers with a library (`registrations`).
    `shell` (IPython's, when there is one): its registries are watched, and in a kernel
    the kernel's requests for input. `names`: the namespace's identities, taken as the
    step began with nothing run since (its values' ids: the namespace of a long session
    is not walked again to find the names bound to a watched function)."""
    findings = Findings(on_compile=on_compile)
    active = (findings, _ignored(store_dir, shell), network)
    _forget_stored(shell)
    left = left_running.watching(shell) if namespace is not None else nullcontext(None)
    told = registrations.watching(namespace) if namespace is not None else nullcontext(None)
    try:
        with (
            watchpoints.watching(
                partial(_on_event, active), on_compile is not None, namespace, names
            ),
            _asking(getattr(shell, "kernel", None), findings),
            left as held,
            told as registered,
        ):
            yield findings
            if held is not None and namespace is not None:
                findings.effects += left_running.after(shell, held, namespace)
            if registered is not None:
                findings.effects += registrations.after(registered)
    finally:
        findings.finish()


@contextmanager
def _asking(kernel: Any, findings: Findings) -> Iterator[None]:
    """In a kernel, `input()` and `getpass.getpass()` both send the kernel's one request
    for input (ipykernel's `_input_request`, looked up on the kernel at each call, never
    held by the notebook's code): wrapped on the instance for the block. What the user
    typed is theirs to type again, not the step's result to keep: a step that asked is
    not cached, and a password never reaches the store. (Outside a kernel, `input()`
    reads the terminal, unseen.)"""
    request = getattr(kernel, "_input_request", None) if kernel is not None else None
    if request is None:
        yield
        return

    def asked(prompt: Any, *args: Any, **kwargs: Any) -> Any:
        if watchpoints.watched():  # (asked from a thread the step started, too)
            password = kwargs.get("password", args[2] if len(args) > 2 else False)
            said = "asked the user for a password" if password else "asked the user for input"
            if said not in findings.effects:
                findings.effects.append(said)
        return request(prompt, *args, **kwargs)

    own = vars(kernel).get("_input_request")  # (set on the instance by someone else)
    kernel._input_request = asked
    try:
        yield
    finally:
        if vars(kernel).get("_input_request") is asked:
            if own is None:
                del kernel._input_request
            else:
                kernel._input_request = own


def _on_event(active: Active, event: str, args: Args) -> None:
    if event == "open":
        _on_open(active, args)
    elif event == "os.getcwd":
        if not _libraries_own_read():
            active[0].asked_for_cwd()
    elif event.startswith("os.environ."):
        _on_environ(active[0], event, args)
    elif event in _FS_EVENTS:
        _on_fs(active, event, args)
    elif event in _PROC_EVENTS or event.startswith("os.exec") or event.startswith("os.spawn"):
        if not system_queries.is_query(event, args):  # `lscpu`: a library asking for the CPUs
            _note(active, f"started a subprocess ({_short(args) if args else event})")
    elif event in _PTY_EVENTS:
        _note(active, f"started a subprocess ({_shell_command() or 'in a pseudo-terminal'})")
    elif event in _SIGNAL_EVENTS:
        _note(active, f"sent signal {args[1]} to process {args[0]}")
    elif event == "socket.connect":
        _on_connect(active, args)
    elif event == "sqlite3.connect":
        _on_database(active, args)
    elif event in _LIST_EVENTS:
        _on_list(active, args)
    elif event == "compile":
        told = active[0].on_compile
        if told is not None and len(args) > 1 and args[1] == "<string>":
            told(args[0])


def _on_open(active: Active, args: Args) -> None:
    findings, ignored, _ = active
    path, mode, flags = args
    if not isinstance(path, (str, bytes, os.PathLike)):
        return  # a file descriptor, not a path
    full = _real_file(findings.folders, path)
    if full is None or ignored.covers(full) or "__pycache__" in full:
        return
    if os.path.isdir(full):
        return  # a folder opened to list it, or by an opener that creates the file itself
    writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
        isinstance(flags, int) and flags & _WRITE_FLAGS and not mode
    )
    if findings.own(full):
        return
    if not writing:
        if _read(findings, full):
            findings.named_as(path, full)
    elif os.path.lexists(full):
        _note(active, f"wrote {_rel(full)}")
    else:
        findings.created[full] = False


def read_named(findings: Findings, store_dir: Path, paths: Iterable[str]) -> None:
    """The files a step names (`named_files.py`), which it may have read where Python
    does not see it (in a library's compiled code): read, as a file it opens for reading
    is, unless it is one of the step's own, under an ignored root, or read already."""
    ignored = _ignored(store_dir)
    for path in paths:
        full = _real(path)
        if full is None or full in findings.reads or ignored.covers(full):
            continue
        if is_pattern(full) and not os.path.lexists(full):
            findings.reads.add(full)  # (its digest is its matches': `files.read_digest`)
            findings.named_as(path, full)
        elif "__pycache__" not in full and not findings.own(full) and _read(findings, full):
            findings.named_as(path, full)


def _read(findings: Findings, full: str) -> bool:
    """Whether `full` is a regular file, now one the step read."""
    try:
        st = os.stat(full)
    except OSError:
        return False
    if stat.S_ISREG(st.st_mode):
        findings.read(full, st)
        return True
    return False


def _on_database(active: Active, args: Args) -> None:
    """A SQLite database: read like a file; one the connection creates is written."""
    findings, ignored, _ = active
    path = args[0] if args else None
    if not isinstance(path, (str, bytes, os.PathLike)):
        return
    path = os.fsdecode(path)
    if path.startswith("file:"):  # a URI: file:data.db?mode=ro
        path = path[len("file:") :].partition("?")[0]
    if path in ("", ":memory:"):
        return
    full = _real(path)
    if full is None or ignored.covers(full) or findings.own(full):
        return
    if os.path.lexists(full):
        if _read(findings, full):
            findings.named_as(path, full)
    else:
        findings.created[full] = False


def _on_list(active: Active, args: Args) -> None:
    """A folder listed (`os.listdir('data')`, a glob, `os.walk`): its names are read, an
    input like a file's contents (`files.read_digest` of the folder's path and a
    separator). One the step created, or under an ignored root, is not."""
    findings, ignored, _ = active
    path = args[0] if args else None
    if not isinstance(path, (str, bytes, os.PathLike)) or _finding_code():
        return  # a folder descriptor; the import system looking for code
    full = _real(path)
    if full is None or findings.own(full) or not os.path.isdir(full):
        return
    folder = full.rstrip(os.sep) + os.sep
    if folder in findings.reads or ignored.covers(folder):  # (`/proc` itself too)
        return
    if findings.listed >= MAX_FOLDERS:
        _note(active, f"listed more than {MAX_FOLDERS} folders")
        return
    findings.listed += 1
    findings.reads.add(folder)
    findings.named_as(path, full.rstrip(os.sep), folder=True)


def _on_environ(findings: Findings, event: str, args: Args) -> None:
    """An environment variable the step's code reads, by any way to it (`os.getenv(name)`,
    `dict(os.environ)`, `%env`, a helper's `os.environ.get(n)`), or the names it lists:
    kept with the entry, which is served only while they are the same
    (`restore/validity.py`). The key holds only those read by a literal name. One the step
    set first is its own; a library reading one as it is imported reads its own
    configuration, not the step's data (and would tie every entry that imports it to a
    machine's `HOME`)."""
    name = args[0] if args and isinstance(args[0], str) else None
    if event == "os.environ.write":
        if name is not None:
            findings.environ_set.add(name)
    elif event == "os.environ.list":
        if findings.environ_names is None and not _libraries_own_read():
            findings.environ_names = environ_names_digest()
    elif name is not None and name not in findings.environ and name not in findings.environ_set:
        if not _libraries_own_read():
            findings.environ[name] = environ_digest(name)


def _libraries_own_read() -> bool:
    """Whether the read now (of the environment, of the working folder) is not the
    notebook's: made, before any frame of the notebook's code (`__main__`'s: a cell, a
    notebook function) is reached up the stack, by the engine (a step run inside a step
    makes its own records), by ipykernel (naming the cell it compiles from
    `IPYKERNEL_CELL_NAME`), or by a module being imported (importlib on the stack:
    the library's own configuration)."""
    frame: FrameType | None = sys._getframe(2)
    while frame is not None and str(frame.f_globals.get("__name__", "")).startswith(_HERE):
        frame = frame.f_back  # (the wrapper's and the handler's)
    while frame is not None:
        module = str(frame.f_globals.get("__name__", ""))
        if module == "__main__":
            return False
        if module.startswith(_OWN_READERS) or frame.f_code.co_filename.startswith(
            "<frozen importlib"
        ):
            return True
        frame = frame.f_back
    return False


def _finding_code() -> bool:
    """Whether the listing now is the import system's: importlib's finders and
    `importlib.metadata` (a package asking its own version lists every folder on
    `sys.path`, the working folder among them), `pkgutil`, `pkg_resources`. What they
    list is where code and package metadata are, not data the step reads."""
    frame: FrameType | None = sys._getframe(2)
    for _ in range(12):  # past this module's and watchpoints' frames, to the caller
        if frame is None:
            return False
        module = str(frame.f_globals.get("__name__", ""))
        if module.startswith(_HERE):
            frame = frame.f_back
            continue
        return module.partition(".")[0] in _CODE_FINDERS
    return False


_HERE = __name__.rpartition(".")[0] + "."  # this room's modules (the wrapper's among them)
# Whose reads of the environment and the working folder are not the step's: the
# package's and the kernel's.
_OWN_READERS = (__name__.partition(".")[0] + ".", "ipykernel.")
# (importlib's backports, and setuptools' `pkg_resources`, which lists `sys.path` as it
# is imported: older packages import it)
_CODE_FINDERS = frozenset(
    {"importlib", "importlib_metadata", "importlib_resources", "pkgutil", "pkg_resources"}
    | {"zipimport", "site"}
)


def _on_fs(active: Active, event: str, args: Args) -> None:
    findings, ignored, _ = active
    full = _path(args, _DIR_FD.get(event))
    if full is None or ignored.covers(full) or findings.own(full):
        if event == "os.rename" and full is not None and len(args) > 1:
            _renamed_own(active, args)
        return
    if event == "os.mkdir" and not os.path.lexists(full):
        findings.created[full] = True
        return
    _note(active, f"{_FS_EVENTS[event]} {_rel(full)}")


def _renamed_own(active: Active, args: Args) -> None:
    """A file the step created, renamed: the new name is its own if it was free."""
    findings, ignored, _ = active
    dst = _path((args[1], args[3] if len(args) > 3 else None), 1)
    if dst is None or ignored.covers(dst) or findings.own(dst):
        return
    if os.path.lexists(dst):
        _note(active, f"renamed over {_rel(dst)}")
    else:
        findings.created[dst] = os.path.isdir(_path(args, 2) or "")


def _path(args: Args, dir_fd_at: int | None) -> str | None:
    """The real path an event names, relative to its folder descriptor if it has one."""
    path = args[0] if args else None
    if not isinstance(path, (str, bytes, os.PathLike)):
        return None
    dir_fd = args[dir_fd_at] if dir_fd_at is not None and len(args) > dir_fd_at else None
    if isinstance(dir_fd, int) and dir_fd >= 0 and not os.path.isabs(os.fsdecode(path)):
        try:
            base = os.readlink(f"/proc/self/fd/{dir_fd}")
        except OSError:
            return None  # no way to tell where it is: not a path the step named
        return _real(os.path.join(base, os.fsdecode(path)))
    return _real(path)


def _on_connect(active: Active, args: Args) -> None:
    sock, address = args[0], args[1]
    import socket

    if getattr(sock, "family", None) == socket.AF_UNIX or active[2]:
        return
    _note(active, f"opened a network connection to {address}")


def _note(active: Active, what: str) -> None:
    findings = active[0]
    if what not in findings.effects:
        findings.effects.append(what)


def _real_file(
    folders: dict[str, str], path: str | bytes | os.PathLike[str] | os.PathLike[bytes]
) -> str | None:
    """`_real(path)` for a file opened by a step, its folder's real path kept for the
    step: every module a step imports is opened (`io.open_code` calls `io.open`), and
    `realpath` asks the system about each component of its path, about 0.1 ms a module
    (70 ms for SymPy's 470). The file's own name is still checked for a symlink. A
    symlinked folder re-pointed in the middle of the step is not seen."""
    try:
        text = os.fsdecode(path)
    except (TypeError, ValueError):
        return None
    folder, name = os.path.split(text)
    if not os.path.isabs(text) or name in ("", ".", ".."):  # (relative: the cwd may change)
        return _real(text)
    real = folders.get(folder)
    if real is None:
        real = folders[folder] = os.path.realpath(folder)
    full = os.path.join(real, name)
    return os.path.realpath(full) if os.path.islink(full) else full


def _real(path: str | bytes | os.PathLike[str] | os.PathLike[bytes]) -> str | None:
    try:
        return os.path.realpath(os.fsdecode(path))
    except (TypeError, ValueError):
        return None


def _rel(path: str) -> str:
    try:
        rel = os.path.relpath(path)
        return rel if not rel.startswith("..") else path
    except ValueError:
        return path


def _shell_command() -> str | None:
    """The command of the shell escape forking now: the `cmd` IPython's `system` and
    `getoutput` hold, a few frames up."""
    frame: FrameType | None = sys._getframe(2)
    for _ in range(40):
        if frame is None:
            return None
        cmd = frame.f_locals.get("cmd") if frame.f_code.co_name in _SHELL_CALLS else None
        if isinstance(cmd, str):
            return cmd if len(cmd) < 60 else cmd[:57] + "..."
        frame = frame.f_back
    return None


_SHELL_CALLS = {"system", "system_piped", "system_raw", "getoutput", "getoutputerror"}


def _short(args: Args) -> str:
    text = repr(args[1] if len(args) > 1 else args)
    return text if len(text) < 60 else text[:57] + "..."
