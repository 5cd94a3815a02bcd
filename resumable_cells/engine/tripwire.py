"""The tripwire: an audit hook that watches a pure step while it runs.

Writes outside the temp directory and the store, subprocesses (IPython's `!cmd`, `%sx`
and `%system` included: they start theirs in a pseudo-terminal, `os.forkpty`) and network
connections mean the step has effects: it still runs, but is not cached. Regular files it opens for
reading become discovered inputs of its entry. Library noise (site-packages, caches,
fonts, the standard library) is ignored. One hook for the process, active only for the
thread running the step.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Findings:
    effects: list[str] = field(default_factory=list)
    reads: set[str] = field(default_factory=set)


_state = threading.local()
_installed = False
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_FS_EVENTS = {
    "os.remove": "deleted", "os.rename": "renamed", "os.rmdir": "removed a directory",
    "os.mkdir": "created a directory", "shutil.rmtree": "removed a tree", "os.truncate": "truncated",
    "os.chmod": "changed permissions of", "os.link": "linked", "os.symlink": "linked",
}  # fmt: skip
_PROC_EVENTS = {"subprocess.Popen", "os.system", "os.posix_spawn", "os.spawn", "os.exec", "os.fork"}
_PTY_EVENTS = {"os.forkpty", "pty.spawn"}  # pexpect, under IPython's shell escapes


def _ignored_roots(store_dir: Path) -> tuple[str, ...]:
    home = str(Path.home())
    roots = {
        tempfile.gettempdir(), str(store_dir), sys.prefix, sys.base_prefix, sys.exec_prefix,
        "/usr", "/etc", "/proc", "/sys", "/dev", "/lib", "/var/cache", "/run",
        os.path.join(home, ".cache"), os.path.join(home, ".config"), os.path.join(home, ".ipython"),
        os.path.join(home, ".local"), os.path.join(home, ".matplotlib"), os.path.join(home, ".pyenv"),
        os.path.join(home, ".jupyter"), os.path.dirname(os.path.dirname(os.path.dirname(__file__))),
    }  # fmt: skip
    return tuple(os.path.realpath(r) + os.sep for r in roots if r)


@contextmanager
def watching(store_dir: Path):
    """Yields the Findings of the block it guards (only the current thread is watched)."""
    global _installed
    if not _installed:
        sys.addaudithook(_hook)
        _installed = True
    findings = Findings()
    _state.active = (findings, _ignored_roots(store_dir))
    try:
        yield findings
    finally:
        _state.active = None


def _hook(event: str, args) -> None:
    active = getattr(_state, "active", None)
    if active is None:
        return
    if event == "open":
        _on_open(active, args)
    elif event in _FS_EVENTS:
        _on_fs(active, event, args)
    elif event in _PROC_EVENTS or event.startswith("os.exec") or event.startswith("os.spawn"):
        _note(active, f"started a subprocess ({_short(args)})")
    elif event in _PTY_EVENTS:
        _note(active, f"started a subprocess ({_shell_command() or 'in a pseudo-terminal'})")
    elif event == "socket.connect":
        _on_connect(active, args)


def _on_open(active, args) -> None:
    findings, roots = active
    path, mode, flags = args
    if not isinstance(path, (str, bytes, os.PathLike)):
        return  # a file descriptor, not a path
    full = _real(path)
    if full is None or full.startswith(roots) or "__pycache__" in full:
        return
    writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
        isinstance(flags, int) and flags & _WRITE_FLAGS and not mode
    )
    if writing:
        _note(active, f"wrote {_rel(full)}")
    elif os.path.isfile(full):
        findings.reads.add(full)


def _on_fs(active, event, args) -> None:
    path = args[0] if args else None
    if isinstance(path, (str, bytes, os.PathLike)):
        full = _real(path)
        if full is None or full.startswith(active[1]):
            return
        _note(active, f"{_FS_EVENTS[event]} {_rel(full)}")


def _on_connect(active, args) -> None:
    sock, address = args[0], args[1]
    import socket

    if getattr(sock, "family", None) == socket.AF_UNIX:
        return
    _note(active, f"opened a network connection to {address}")


def _note(active, what: str) -> None:
    findings = active[0]
    if what not in findings.effects:
        findings.effects.append(what)


def _real(path) -> str | None:
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
    frame = sys._getframe(2)
    for _ in range(30):
        if frame is None:
            return None
        cmd = frame.f_locals.get("cmd") if frame.f_code.co_name in _SHELL_CALLS else None
        if isinstance(cmd, str):
            return cmd if len(cmd) < 60 else cmd[:57] + "..."
        frame = frame.f_back
    return None


_SHELL_CALLS = {"system", "system_piped", "system_raw", "getoutput", "getoutputerror"}


def _short(args) -> str:
    text = repr(args[1] if len(args) > 1 else args)
    return text if len(text) < 60 else text[:57] + "..."
