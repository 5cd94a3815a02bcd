"""The jupyter_server extension: serve a notebook's stored record to the sidebar.

`GET {base_url}resumable-cells/record?path=NOTEBOOK` answers with the snapshot of
docs/PROTOCOL.md, read from the store beside the notebook, so the JupyterLab panel is
filled before the kernel has run anything. It also keeps a notebook's run when the
notebook is renamed through the contents API.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web

from . import logs, settings

#: The route under the server's base URL.
ROUTE = "resumable-cells/record"

#: The jupyter_server contents events (rename, copy, delete, ...).
CONTENTS_SCHEMA = "https://events.jupyter.org/jupyter_server/contents_service/v1"


def resolve_notebook(root_dir: str | os.PathLike[str], path: str) -> Path | None:
    """The file `path` (relative to the server root) names, or None.

    None when the path is empty, absolute, escapes the root (``..``, a symlink out), or
    is not an existing file.

    >>> resolve_notebook("/", "") is None
    True
    """
    if not path or "\x00" in path:
        return None
    if Path(path).is_absolute() or path.startswith(("/", "\\")):
        return None
    root = Path(root_dir).resolve()
    target = (root / path).resolve()
    try:
        target.relative_to(root)
    except ValueError:
        return None
    return target if target.is_file() else None


def store_dir_for(notebook: Path) -> Path:
    """The store a kernel started for `notebook` uses: as `settings` resolves it in
    the notebook's directory, which is the kernel's working directory (symlinks and
    `..` resolved, so two notebooks sharing one store see one path)."""
    return settings.store_dir(base=notebook.parent).resolve()


def empty_snapshot(notebook_id: str) -> dict[str, Any]:
    """The snapshot of a notebook that has no run yet."""
    return {
        "notebook": notebook_id,
        "run": None,
        "budget": None,
        "sessions": [],
        "executions": [],
        "steps": [],
    }


def read_snapshot(notebook: Path) -> dict[str, Any]:
    """Read the snapshot of `notebook` from its store; never creates the store."""
    store_dir = store_dir_for(notebook)
    if not store_dir.is_dir():
        return empty_snapshot(notebook.name)
    from .records.snapshot import load_snapshot  # the kernel side's reader, imported lazily

    return load_snapshot(store_dir, notebook.name)


class RecordHandler(APIHandler):
    """`GET ?path=NOTEBOOK`: the notebook's stored record as a snapshot."""

    auth_resource = "contents"

    @web.authenticated
    @authorized
    async def get(self) -> None:
        path = self.get_query_argument("path", "")
        root_dir = self.settings["resumable_cells_root_dir"]
        notebook = resolve_notebook(root_dir, path)
        if notebook is None:
            raise web.HTTPError(404, f"no notebook at {path!r}")
        try:
            snapshot = await asyncio.get_running_loop().run_in_executor(
                None, read_snapshot, notebook
            )
        except Exception as exc:  # a corrupt or locked store must not break the page
            self.log.warning("resumable-cells: cannot read the record of %s: %s", path, exc)
            raise web.HTTPError(500, f"cannot read the record: {exc}") from None
        self.set_header("Content-Type", "application/json")
        self.set_header("Cache-Control", "no-store")
        self.finish(json.dumps(snapshot))


def rename_record(root_dir: str | os.PathLike[str], old_path: str, new_path: str) -> bool:
    """Carry a notebook's run over a rename in the same directory; True when done.

    A move to another directory keeps the old store where it was (its record stays
    readable under the old name) unless `RESUMABLE_CELLS_DIR` points both at one store.
    """
    root = Path(root_dir).resolve()
    old = (root / old_path).resolve()
    new = resolve_notebook(root, new_path)
    if new is None or old.name == new.name:
        return False
    old_store = store_dir_for(old)
    new_store = store_dir_for(new)
    if old_store != new_store or not new_store.is_dir():
        return False
    from .records.snapshot import rename_notebook  # the kernel side's, imported lazily

    rename_notebook(new_store, old.name, new.name)
    return True


def _rename_listener(serverapp: Any):
    async def listener(logger: Any, schema_id: str, data: dict[str, Any]) -> None:
        if data.get("action") != "rename" or not data.get("source_path"):
            return
        try:
            await asyncio.get_running_loop().run_in_executor(
                None,
                rename_record,
                serverapp.root_dir,
                data["source_path"],
                data["path"],
            )
        except Exception as exc:
            serverapp.log.warning(
                "resumable-cells: could not carry the run of %s over to %s: %s",
                data.get("source_path"),
                data.get("path"),
                exc,
            )

    return listener


def _load_jupyter_server_extension(serverapp: Any) -> None:
    logs.configure()
    web_app = serverapp.web_app
    web_app.settings["resumable_cells_root_dir"] = serverapp.root_dir
    base_url = web_app.settings["base_url"]
    web_app.add_handlers(".*$", [(url_path_join(base_url, ROUTE), RecordHandler)])
    event_logger = getattr(serverapp, "event_logger", None)
    if event_logger is not None:
        event_logger.add_listener(schema_id=CONTENTS_SCHEMA, listener=_rename_listener(serverapp))
    serverapp.log.info("resumable-cells: serving records at %s", url_path_join(base_url, ROUTE))


# The name jupyter_server looked for before 2.0.
load_jupyter_server_extension = _load_jupyter_server_extension
