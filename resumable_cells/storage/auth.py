"""The per-user secret that authenticates entries and blobs.

Kept outside the cache directory (so copying a cache between users or machines does
not copy its trust), created once with mode 0600.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from functools import lru_cache
from pathlib import Path


def key_path() -> Path:
    explicit = os.environ.get("RESUMABLE_CELLS_KEY_FILE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(Path.home(), ".config")
    return Path(base) / "resumable_cells" / "secret.key"


@lru_cache(maxsize=8)
def _load(path: str) -> bytes:
    p = Path(path)
    try:
        return bytes.fromhex(p.read_text().strip())
    except FileNotFoundError:
        pass
    p.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_hex(32))
    try:
        os.link(tmp, p)  # first writer wins, so concurrent kernels agree on one key
    except FileExistsError:
        pass
    finally:
        os.unlink(tmp)
    return bytes.fromhex(p.read_text().strip())


def user_key() -> bytes:
    return _load_for(os.environ.get("RESUMABLE_CELLS_KEY_FILE"), os.environ.get("XDG_CONFIG_HOME"))


@lru_cache(maxsize=8)
def _load_for(key_file: str | None, config_home: str | None) -> bytes:
    # Keyed by the variables that choose the file, so a hit does not build paths.
    return _load(str(key_path()))


def canonical(row: dict) -> bytes:
    """The bytes a JSON row is signed over: sorted keys, no spaces."""
    return json.dumps(row, sort_keys=True, separators=(",", ":")).encode()


def sign(data: bytes, key: bytes | None = None) -> str:
    return hmac.new(key or user_key(), data, hashlib.sha256).hexdigest()


def verify(data: bytes, mac: str, key: bytes | None = None) -> bool:
    return hmac.compare_digest(sign(data, key), mac or "")


def buffer_seed(key: bytes | None = None) -> int:
    """Seed for the fast integrity digests of raw buffers (data only, never code)."""
    return int.from_bytes(hashlib.sha256(b"buffers" + (key or user_key())).digest()[:8], "little")
