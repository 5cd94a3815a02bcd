"""Servers and kernels for the team cache's tests (tests/test_remote.py and
tests/test_team_keys.py: Redis; tests/test_bucket.py: a bucket): a server the test
started, a real redis-server, and kernels sharing a team cache, each with its own
working directory, local store and per-user key; the fixtures `redis_server` and
`team_key` are conftest's.

`make redis-deps` installs Debian's redis-server; each test starts its own on a free port
(no persistence) and stops it after. Those tests are skipped only when the binary is
missing (`needs_redis`).
"""

from __future__ import annotations

import os
import pickle
import re
import shutil
import signal
import subprocess
from pathlib import Path

import pytest
import redis  # the test extra has it: a missing client is an error, not a skip
from kernels import Kernel, wait_until

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
needs_redis = pytest.mark.skipif(
    not os.access(REDIS_SERVER, os.X_OK),
    reason="redis-server is not installed (make redis-deps installs Debian's package)",
)
PREFIX = "rc:2:"
CHUNK = 8 << 20


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


class RedisServer(ServerProcess):
    """A redis-server subprocess on 127.0.0.1:port, without persistence."""

    def __init__(self, port: int, log: Path):
        self.port = port
        self.log = log
        self.url = f"redis://127.0.0.1:{port}/0"
        self.client = redis.Redis(port=port, socket_timeout=5)
        self.start_args: list[str] = []

    def start(self) -> None:
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1",
                 "--save", "", "--appendonly", "no", *self.start_args],
                stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
        wait_until(self._pong, 20, f"redis-server PONG on port {self.port}")

    def _pong(self) -> bool:
        assert self.proc is not None
        assert self.proc.poll() is None, f"redis-server exited: {self.log.read_text()[-2000:]}"
        try:
            return self.client.ping()
        except redis.ConnectionError:
            return False

    def kill(self) -> None:
        super().kill()
        self.client.connection_pool.disconnect()


SHARED = "%%step shared\nran_in = os.getpid()\nrows = bytes(3_000_000)\nprint('computed')"


def make_kernel(
    root: Path, name: str, url: str, team_key: str, identity: str | None = None, **more_env: str
) -> Kernel:
    """A kernel with its own directory, store and per-user key, on the team cache `url`
    with `team_key` ("": none), sharing `identity` (default `NAME@NAME-host`); `more_env`
    adds to its environment."""
    cwd = root / name
    (cwd / ".tmp").mkdir(parents=True)
    env = {
        "JPY_SESSION_NAME": f"{name}.ipynb",
        "TMPDIR": str(cwd / ".tmp"),
        "RESUMABLE_CELLS_KEY_FILE": str(root / f"{name}.key"),  # a per-user key each
        "RESUMABLE_CELLS_TEAM_KEY": team_key,
        "RESUMABLE_CELLS_REMOTE": url,
        "RESUMABLE_CELLS_IDENTITY": identity or f"{name}@{name}-host",
        **more_env,
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


def planted_pickle(root: Path) -> tuple[Path, bytes]:
    """(marker, payload): a pickle that creates `marker` (under `root`) if it is ever
    loaded, checked to work on a control file first."""

    def payload(marker: Path) -> bytes:
        return b"cbuiltins\nopen\n(" + pickle.dumps(str(marker), 0)[:-1] + b"S'w'\ntR."

    control = root / "control"
    pickle.loads(payload(control))  # the payload works when it is loaded
    assert control.exists()
    return root / "pwned", payload(root / "pwned")
