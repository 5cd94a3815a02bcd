from __future__ import annotations

import secrets
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from kernels import Kernel  # noqa: E402


@pytest.fixture(autouse=True)
def _private_key(tmp_path_factory, monkeypatch):
    # Every test gets its own per-user secret, never the developer's real one.
    key = tmp_path_factory.mktemp("key") / "secret.key"
    monkeypatch.setenv("RESUMABLE_CELLS_KEY_FILE", str(key))


@pytest.fixture
def team_key():
    """A team key of its own for each test that shares a team cache."""
    return secrets.token_hex(32)


@pytest.fixture
def kernel(tmp_path):
    # The kernel's temp dir apart from the notebook's folder, as on a usual machine.
    tmp = tmp_path / ".tmp"
    tmp.mkdir()
    k = Kernel(tmp_path, env={"JPY_SESSION_NAME": "test.ipynb", "TMPDIR": str(tmp)})
    k.ok("%load_ext resumable_cells")
    yield k
    k.shutdown()


@pytest.fixture
def redis_server(tmp_path):
    """A redis-server of its own on a free port (tests/teamkernels.py), stopped after."""
    from kernels import free_port
    from teamkernels import RedisServer

    server = RedisServer(free_port(), tmp_path / "redis.log")
    server.start()
    yield server
    server.stop()
