"""Claims on keys, so that kernels sharing one store compute a key once.

A claim is the index row `lock:{key}` holding the claimant's process id, host and time,
added atomically. A second kernel finds it, is told who holds it, and polls until it is
gone (then it finds the entry). A claim whose holder died (a pid that no longer runs on
this host, or a day old from another host) is taken over.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import diskcache

_POLL_S = 0.05  # how often a waiter looks at the holder's progress
_FOREIGN_HOLDER_S = 24 * 3600  # a claim from another host is trusted this long


@contextmanager
def claim(
    index: diskcache.Cache, key: str, on_wait: Callable[[dict], None] | None = None
) -> Iterator[bool]:
    """Hold the right to compute `key`; a waiter is told (`on_wait(holder)`) once.
    Yields whether it had to wait."""
    name = "lock:" + key
    mine = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "t": time.time()})
    waited = False
    while not index.add(name, mine):
        raw = index.get(name)
        if raw is None:
            continue
        if not _holder_alive(json.loads(raw)):
            _delete_if(index, name, raw)
            continue
        if not waited and on_wait is not None:
            on_wait(json.loads(raw))
        waited = True
        time.sleep(_POLL_S)  # the holder may take as long as the step
    try:
        yield waited
    finally:
        _delete_if(index, name, mine)


def _delete_if(index: diskcache.Cache, name: str, expected: str) -> None:
    with index.transact():
        if index.get(name) == expected:
            index.delete(name)


def _holder_alive(holder: dict) -> bool:
    if holder.get("host") != socket.gethostname():
        return time.time() - holder.get("t", 0) < _FOREIGN_HOLDER_S
    pid = holder.get("pid")
    if not isinstance(pid, int) or pid == os.getpid():
        return False  # our own pid: left over from a kernel that had it before
    return pid_alive(pid)


def pid_alive(pid: int) -> bool:
    """Whether process `pid` runs on this host (one we may not signal counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
