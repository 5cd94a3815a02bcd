"""Kernels sharing a team cache (tests/test_remote.py: Redis; tests/test_bucket.py: a
bucket): each with its own working directory, local store and per-user key, all with
one team key, and what the tests ask them."""

from __future__ import annotations

import re
import signal
import subprocess
from pathlib import Path

from kernels import Kernel


class ServerProcess:
    """A server the test started (`proc`), killed as a crash would kill it, or stopped."""

    proc: subprocess.Popen | None = None

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()


SHARED = "%%step shared\nran_in = os.getpid()\nrows = bytes(3_000_000)\nprint('computed')"


def make_kernel(root: Path, name: str, url: str, team_key: str, env: dict | None = None) -> Kernel:
    cwd = root / name
    (cwd / ".tmp").mkdir(parents=True)
    env = {
        "JPY_SESSION_NAME": f"{name}.ipynb",
        "TMPDIR": str(cwd / ".tmp"),
        "RESUMABLE_CELLS_KEY_FILE": str(root / f"{name}.key"),  # a per-user key each
        "RESUMABLE_CELLS_TEAM_KEY": team_key,
        "RESUMABLE_CELLS_REMOTE": url,
        **(env or {}),
    }
    k = Kernel(cwd, env=env)
    k.ok("%load_ext resumable_cells")
    return k


def records(k: Kernel) -> list[tuple]:
    return k.value(
        "[(r['step'], r['status'], r['source']) for r in __import__('resumable_cells').record()]"
    )


def key_of(k: Kernel, step: str) -> str:
    return k.value(
        f"[r['key'] for r in __import__('resumable_cells').record() if r['step'] == {step!r}][-1]"
    )


def push(k: Kernel) -> str:
    return k.ok("%step push").stdout


def share(a: Kernel, b: Kernel) -> None:
    """A step run in `a` is served in `b` from the team cache, without running; a
    value already there is not sent again."""
    setup = "import os"
    cell = SHARED
    a.ok(setup)
    first = a.ok(cell)
    assert "ran in" in first.status_lines()[0]
    assert re.search(r"pushed 1 entry \(\d blobs?, 2.9 MiB\)", push(a))
    a.ok("%%step copy\nsame = bytes(3_000_000)")  # the same value: its blob is not sent again
    assert "pushed 1 entry (0 blobs, 0 B)" in push(a)

    b.ok(setup)
    second = b.ok(cell)
    assert second.status_lines()[0].startswith("step shared: served from team cache in ")
    assert second.user_outputs() == first.user_outputs()  # the print, replayed
    assert b.value("ran_in") == a.value("ran_in") != b.value("os.getpid()")
    assert b.value("len(rows)") == 3_000_000
    assert records(b)[-1] == ("shared", "hit", "remote")


def two_steps_kept_locally(k: Kernel, why: str) -> None:
    """Two steps run while the team cache cannot be used: both run, one warning says
    it is unreachable and `why`, and `%step push` says both wait."""
    first = k.ok("%%step p1\nw1 = 'one'")
    second = k.ok("%%step p2\nw2 = 'two'")
    assert "ran in" in first.status_lines()[0] and "ran in" in second.status_lines()[0]
    warnings = first.stderr + second.stderr
    assert warnings.count("unreachable") == 1 and why in warnings, warnings
    assert "2 not pushed" in push(k)
