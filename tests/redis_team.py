"""A real redis-server for the team cache's tests, and kernels that share it: each with
its own working directory, local store and per-user key (tests/test_remote.py,
tests/test_team_keys.py; the fixtures `redis_server` and `team_key` are conftest's).

`make redis-deps` installs Debian's redis-server; each test starts its own on a free port
(no persistence) and stops it after. Those tests are skipped only when the binary is
missing (`needs_redis`).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest
import redis  # the test extra has it: a missing client is an error, not a skip
from kernels import wait_until

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
needs_redis = pytest.mark.skipif(
    not os.access(REDIS_SERVER, os.X_OK),
    reason="redis-server is not installed (make redis-deps installs Debian's package)",
)
PREFIX = "rc:2:"
CHUNK = 8 << 20


class RedisServer:
    """A redis-server subprocess on 127.0.0.1:port, without persistence."""

    def __init__(self, port: int, log: Path):
        self.port = port
        self.log = log
        self.url = f"redis://127.0.0.1:{port}/0"
        self.proc: subprocess.Popen | None = None
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
        assert self.proc.poll() is None, f"redis-server exited: {self.log.read_text()[-2000:]}"
        try:
            return self.client.ping()
        except redis.ConnectionError:
            return False

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        self.client.connection_pool.disconnect()

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()


def make_kernel(
    root: Path, name: str, url: str, team_key: str, identity: str | None = None, **more_env: str
):
    """A kernel with its own directory, store and per-user key, on the team cache `url`
    with `team_key` ("": none), sharing `identity` (default `NAME@NAME-host`); `more_env`
    adds to its environment."""
    from kernels import Kernel

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


def records(k) -> list[tuple]:
    return k.value(
        "[(r['step'], r['status'], r['source']) for r in __import__('resumable_cells').record()]"
    )


def key_of(k, step: str) -> str:
    return k.value(
        f"[r['key'] for r in __import__('resumable_cells').record() if r['step'] == {step!r}][-1]"
    )


def push(k) -> str:
    return k.ok("%step push").stdout
