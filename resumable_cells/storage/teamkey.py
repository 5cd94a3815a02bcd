"""The team key, and the previous one while a team rotates: where they come from.

RESUMABLE_CELLS_TEAM_KEY (hex, or any string of at least 16 bytes), else the file named
by RESUMABLE_CELLS_TEAM_KEY_FILE; the previous key the same way from
RESUMABLE_CELLS_TEAM_KEY_PREVIOUS(_FILE). A key is never kept in the store: a key file
inside the store directory is refused, since whoever copies the store would copy the
key that opens everything the team shares.
"""

from __future__ import annotations

import os
from pathlib import Path

import msgspec

from ..errors import TeamCacheError

KEY_ENV, KEY_FILE_ENV = "RESUMABLE_CELLS_TEAM_KEY", "RESUMABLE_CELLS_TEAM_KEY_FILE"
PREVIOUS_ENV = "RESUMABLE_CELLS_TEAM_KEY_PREVIOUS"
PREVIOUS_FILE_ENV = "RESUMABLE_CELLS_TEAM_KEY_PREVIOUS_FILE"
MIN_BYTES = 16


class TeamKeys(msgspec.Struct, frozen=True):
    """The key that seals (`current`) and the one that still opens (`previous`)."""

    current: bytes | None
    previous: bytes | None = None


def team_keys(store_dir: Path | None = None) -> TeamKeys:
    """The team keys the environment names; a key file inside `store_dir` is refused.
    Raises TeamCacheError (an unreadable, short or misplaced key; a previous key
    without a current one)."""
    current = _key(KEY_ENV, KEY_FILE_ENV, store_dir)
    previous = _key(PREVIOUS_ENV, PREVIOUS_FILE_ENV, store_dir)
    if previous is not None and current is None:
        raise TeamCacheError(
            f"{PREVIOUS_ENV} is set but no team key is: set {KEY_ENV} (or {KEY_FILE_ENV}) "
            "to the new key"
        )
    return TeamKeys(current, previous if previous != current else None)


def team_key(store_dir: Path | None = None) -> bytes | None:
    """The current team key; None when none is set. Raises TeamCacheError."""
    return _key(KEY_ENV, KEY_FILE_ENV, store_dir)


def _key(env: str, file_env: str, store_dir: Path | None) -> bytes | None:
    text = os.environ.get(env)
    if not text and os.environ.get(file_env):
        path = Path(os.environ[file_env]).expanduser()
        _refuse_inside(path, store_dir, file_env)
        try:
            text = path.read_text()
        except OSError as err:
            raise TeamCacheError(f"cannot read the team key file {path}: {err.strerror}") from None
    text = (text or "").strip()
    if not text:
        return None
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = text.encode()
    if len(key) < MIN_BYTES:
        raise TeamCacheError(
            f"the team key in {env if os.environ.get(env) else file_env} is shorter than "
            f"{MIN_BYTES} bytes; use e.g. `openssl rand -hex 32`"
        )
    return key


def _refuse_inside(path: Path, store_dir: Path | None, file_env: str) -> None:
    if store_dir is None:
        return
    store, where = Path(store_dir).resolve(), path.resolve()
    if where == store or store in where.parents:
        raise TeamCacheError(
            f"{file_env} names {path}, inside the store {store}: keep the team key outside "
            "it (e.g. in ~/.config), since copying a store must not copy the key"
        )
