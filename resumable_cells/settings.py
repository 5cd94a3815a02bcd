"""The store directory, its size limit and the team cache, resolved in one place.

The magics (with their traitlets, `c.StepMagics.store_dir`, `size_limit`, `remote`),
the CLI and the server extension all ask here, so a setting means the same everywhere.
Each resolves, first found wins:

    store directory   an argument (`%step config --dir`, `resumable-cells --dir`), the
                      traitlet, RESUMABLE_CELLS_DIR, `.resumable_cells`; a relative path
                      is taken from the working directory (the server: the notebook's
                      directory, which is its kernel's working directory)
    size limit        an argument (`--size-limit`), the traitlet, else the limit the
                      store keeps (`%step config --size-limit`), else 10 GiB
    team cache        an argument (`--remote`), the traitlet, RESUMABLE_CELLS_REMOTE;
                      "" when none ("none" and "off" also mean none, see `redis`)
    write wait        the traitlet (`c.StepMagics.write_wait`), RESUMABLE_CELLS_WRITE_WAIT,
                      else 30: seconds a kernel waits for entries still being written
                      (when it ends, and at a lookup of their key)
    identity          the traitlet (`c.StepMagics.share_identity`), RESUMABLE_CELLS_IDENTITY,
                      else the login user and the host name: who an entry says computed it
                      ("ana@gpu-3", "ana", "@gpu-3", or "none" to share neither)

Choices kept for one notebook (`%step auto on`) are in `notebooks.json` in the store
directory, read when the extension loads, before the store is opened.
"""

from __future__ import annotations

import getpass
import json
import logging
import os
import socket
from pathlib import Path

import msgspec

log = logging.getLogger(__name__)
DIR_ENV = "RESUMABLE_CELLS_DIR"
REMOTE_ENV = "RESUMABLE_CELLS_REMOTE"
WRITE_WAIT_ENV = "RESUMABLE_CELLS_WRITE_WAIT"
IDENTITY_ENV = "RESUMABLE_CELLS_IDENTITY"
DEFAULT_WRITE_WAIT = 30.0
DEFAULT_DIRNAME = ".resumable_cells"


def store_dir(
    explicit: str | os.PathLike | None = None,
    *,
    configured: str = "",
    base: str | os.PathLike | None = None,
) -> Path:
    """The store directory, absolute (`~` expanded; relative to `base`, else the
    working directory)."""
    raw = explicit or configured or os.environ.get(DIR_ENV) or DEFAULT_DIRNAME
    path = Path(raw).expanduser()
    return (Path(base) / path if base is not None else path).absolute()


def size_limit(explicit: int | None = None, *, configured: int = 0) -> int | None:
    """A size limit in bytes that overrides the store's own, or None to keep it."""
    return explicit or configured or None


def team_cache(explicit: str | None = None, *, configured: str = "") -> str:
    """The team cache's URL as set, or "" when none is."""
    if explicit is not None and explicit != "":
        return explicit
    return configured or os.environ.get(REMOTE_ENV, "")


def team_cache_off(url: str | None) -> bool:
    """Whether a team cache setting means none: "", "none" or "off"."""
    return not url or url.strip().lower() in ("none", "off")


def write_wait(*, configured: float | None = None) -> float:
    """Seconds to wait for entries still being written behind: the traitlet, else the
    environment, else 30. A value that is not a number of seconds is the default."""
    if configured is not None:
        return max(0.0, float(configured))
    raw = os.environ.get(WRITE_WAIT_ENV, "").strip()
    try:
        return max(0.0, float(raw)) if raw else DEFAULT_WRITE_WAIT
    except ValueError:
        return DEFAULT_WRITE_WAIT


class Identity(msgspec.Struct, frozen=True):
    """Who computed an entry, as the user shares it: either part may be withheld."""

    user: str | None
    host: str | None


def identity(*, configured: str | None = None) -> Identity:
    """The identity entries record: the traitlet, else RESUMABLE_CELLS_IDENTITY, else the
    login user and the host name. "user@host", "user", "@host"; "none" (or "") shares
    neither."""
    raw = configured if configured is not None else os.environ.get(IDENTITY_ENV)
    if raw is None:
        return Identity(_login_user(), socket.gethostname() or None)
    raw = raw.strip()
    if raw.lower() in ("", "none", "off"):
        return Identity(None, None)
    user, _, host = raw.partition("@")
    return Identity(user.strip() or None, host.strip() or None)


def _login_user() -> str | None:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no login name for this uid (a container): share none
        log.debug("no login user name", exc_info=True)
        return None


def session_path(user_ns: dict | None = None) -> str:
    """The notebook path the kernel's session names (`__session__`, which ipykernel
    sets, else JPY_SESSION_NAME, which JupyterLab sets); "" without a session."""
    return str((user_ns or {}).get("__session__") or os.environ.get("JPY_SESSION_NAME") or "")


def notebook_id(user_ns: dict | None = None) -> str:
    """The notebook this kernel serves: its file name, from the kernel's session, else
    "" (the kernels of one working directory without a session share one run)."""
    return os.path.basename(session_path(user_ns))


NOTEBOOK_SETTINGS = "notebooks.json"  # in the store directory: choices kept per notebook


def notebook_setting(store: Path, notebook: str, name: str) -> str | None:
    """A choice kept for one notebook (`%step auto on`), read without opening the store
    (the extension reads it when it loads); None when never made or unreadable."""
    try:
        data = json.loads((store / NOTEBOOK_SETTINGS).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):  # a damaged file: as if nothing was chosen
        log.warning("%s cannot be read; notebook settings ignored", store / NOTEBOOK_SETTINGS)
        return None
    value = data.get(notebook, {}).get(name) if isinstance(data, dict) else None
    return value if isinstance(value, str) else None


def keep_notebook_setting(store: Path, notebook: str, name: str, value: str) -> None:
    """Keep a choice for one notebook: written whole and renamed into place."""
    path = store / NOTEBOOK_SETTINGS
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    if not isinstance(data, dict):
        data = {}
    data.setdefault(notebook, {})[name] = value
    store.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)
