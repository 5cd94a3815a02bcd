"""Subprocesses that only query the system: not effects of a step.

Libraries ask the system how many CPUs and how much memory it has by starting a small
program (scikit-learn's thread-pool helpers run `lscpu --parse=core`, others `nproc`,
`getconf _NPROCESSORS_ONLN`, `sysctl -n hw.ncpu`). Such a call changes nothing, so the
tripwire lets it pass. The exemption goes by the program started, not by who started
it, and only for this short list, called with arguments that read:

    lscpu, nproc, getconf, uname, free      any arguments
    sysctl                                  without -w or a `name=value`

directly or through `sh -c` with a single command whose output goes to a pipe or to
/dev/null. Anything else a pure step starts is an effect.
"""

from __future__ import annotations

import os
import re
import shlex
from typing import Any

QUERIES = frozenset({"lscpu", "nproc", "getconf", "uname", "free", "sysctl"})
_SHELLS = frozenset({"sh", "bash", "dash", "zsh"})
_DEVNULL = re.compile(r"\s*[12]?>\s*/dev/null")
_SHELL_SYNTAX = re.compile(r"[;&|<>$`(){}\n\\*?]")


def is_query(event: str, args: Any) -> bool:
    """Whether the audit event `event` (`subprocess.Popen`, `os.posix_spawn`,
    `os.system`) with `args` starts one of the query programs."""
    try:
        if event == "os.system":
            return _shell_query(os.fsdecode(args[0]))
        if event == "subprocess.Popen":
            argv = args[1]
        elif event == "os.posix_spawn":
            argv = args[1]
        else:
            return False
        if isinstance(argv, (str, bytes)):
            return _shell_query(os.fsdecode(argv))
        argv = [os.fsdecode(a) for a in argv]
    except (TypeError, ValueError, IndexError):
        return False
    if len(argv) >= 3 and os.path.basename(argv[0]) in _SHELLS and argv[1] == "-c":
        return _shell_query(argv[2])
    return _reads(argv)


def _shell_query(command: str) -> bool:
    command = _DEVNULL.sub("", command)
    if _SHELL_SYNTAX.search(command):
        return False
    try:
        return _reads(shlex.split(command))
    except ValueError:
        return False


def _reads(argv: list[str]) -> bool:
    if not argv:
        return False
    program = os.path.basename(argv[0])
    if program not in QUERIES:
        return False
    if program == "sysctl":
        return not any(a.startswith("-w") or a == "--write" or "=" in a for a in argv[1:])
    return True
