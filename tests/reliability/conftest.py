from __future__ import annotations

import os
from pathlib import Path

from kernels import Kernel, wait_until  # noqa: F401 (re-exported for the tests here)

LOAD = "%load_ext resumable_cells"


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
