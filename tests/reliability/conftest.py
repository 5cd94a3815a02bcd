from __future__ import annotations

import os
import time
from pathlib import Path

from kernels import Kernel

LOAD = "%load_ext resumable_cells"


def wait_for(predicate, timeout: float = 60, what: str = "condition"):
    """Poll `predicate` until it is truthy; fail the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def fresh_kernel(cwd: Path, **env) -> Kernel:
    tmp = cwd / ".tmp"
    tmp.mkdir(exist_ok=True)
    k = Kernel(cwd, env={"JPY_SESSION_NAME": "nb.ipynb", "TMPDIR": str(tmp), **env})
    r = k.ok(LOAD)
    assert "damaged" not in r.stderr, r.stderr
    return k


def flag_path(cwd: Path, name: str) -> Path:
    return cwd / ".tmp" / name


def flag_code(name: str) -> str:
    # Written in the kernel's temp dir, which the tripwire ignores.
    return f"open(__import__('os').path.join(__import__('tempfile').gettempdir(), {name!r}), 'w').close()"


os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
