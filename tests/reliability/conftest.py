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
    # Written in the kernel's temp dir from a thread of its own: the tripwire watches the
    # step's thread only, so the step stays pure (and cached) while it signals the test.
    path = f"__import__('os').path.join(__import__('tempfile').gettempdir(), {name!r})"
    return f"__import__('threading').Thread(target=lambda: open({path}, 'w').close()).start()"


os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
