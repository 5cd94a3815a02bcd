"""The kernel end of the sidebar's comm (target `resumable_cells`, docs/PROTOCOL.md).

The kernel accepts comms the frontend opens, and opens one itself when the extension is
loaded from a cell that a JupyterLab-family frontend sent (JupyterLab and Notebook 7
send the cell's id with each execute request; nbclient, nbconvert and papermill do not),
so a headless run sends nothing and prints no "No handler found for comm target"
warning. Every event goes to every open comm.
"""

from __future__ import annotations

import logging
from typing import Any

TARGET = "resumable_cells"

log = logging.getLogger("resumable_cells")


class Hub:
    """Comms to sidebars. A comm the kernel opened is `pending` until the frontend
    answers on it (a frontend without our target never does). Pending comms get the
    cheap execution events, so a Run All queued before the answer still shows live;
    only answered ones get step tables, whose cost grows with the run."""

    def __init__(self, engine: Any):
        self.engine = engine
        self.comms: list = []  # answered: events go here
        self.pending: list = []

    def add(self, comm, *, answered: bool) -> None:
        (self.comms if answered else self.pending).append(comm)
        comm.on_msg(lambda msg, c=comm: self._on_msg(c, msg))
        comm.on_close(lambda msg, c=comm: self._drop(c))
        if answered:
            self.send_snapshot()

    def _drop(self, comm) -> None:
        for group in (self.comms, self.pending):
            if comm in group:
                group.remove(comm)

    def _on_msg(self, comm, msg) -> None:
        if comm in self.pending:
            self.pending.remove(comm)
            self.comms.append(comm)
        data = msg.get("content", {}).get("data", {}) or {}
        if data.get("action") == "snapshot":
            self.send_snapshot()

    def send(self, data: dict, *, pending: bool = False) -> None:
        for c in self.comms + (self.pending if pending else []):
            try:
                c.send(data)
            except Exception as err:  # the frontend went away: forget its comm
                log.info("resumable_cells: a sidebar comm failed (%s); dropped", err)
                self._drop(c)

    def rows(self, deep: bool = False) -> list[dict]:
        """The kernel's rows: staleness from every input (freshness), when attached."""
        watcher = self.engine.freshness
        if watcher is not None:
            return watcher.rows(deep)
        from . import staleness

        return staleness.step_rows(self.engine.record())

    def send_snapshot(self) -> None:
        """A sidebar opened or asked to refresh: a deep look at what changed in place."""
        if self.comms:
            self.send({"type": "snapshot", **self.engine.snapshot(), "steps": self.rows(True)})

    def send_rows(self) -> None:
        if self.comms:
            self.send({"type": "steps", "steps": self.rows(),
                       "budget": self.engine.budget.snapshot()})  # fmt: skip

    def listener(self, kind: str, payload: Any) -> None:
        if kind == "execution" and (self.comms or self.pending):
            self.send({"type": "execution", "execution": payload}, pending=True)
            if payload.get("status") != "running":
                self.send_rows()
        elif kind == "snapshot":
            self.send_snapshot()


def frontend_sent_cell_ids(shell: Any) -> bool:
    """Whether the request being executed came from a frontend that sends cell ids
    (JupyterLab, Notebook 7): one that may have the sidebar, unlike nbclient."""
    kernel = getattr(shell, "kernel", None)
    try:
        parent = kernel.get_parent() if kernel is not None else None
    except Exception as err:  # an old ipykernel without get_parent: assume a frontend
        log.info("resumable_cells: cannot see the request's metadata (%s)", err)
        return kernel is not None
    return bool(((parent or {}).get("metadata") or {}).get("cellId"))


def attach(engine: Any) -> Hub | None:
    try:
        from comm import create_comm, get_comm_manager
    except ImportError:
        return None
    hub = Hub(engine)
    engine.listeners.append(hub.listener)
    if engine.freshness is not None:
        engine.freshness.on_change.append(hub.send_rows)
    try:
        get_comm_manager().register_target(TARGET, lambda comm, msg: hub.add(comm, answered=True))
    except Exception as err:  # no comm manager (a plain IPython): no sidebar either
        log.info("resumable_cells: no comm target (%s)", err)
        return None
    if frontend_sent_cell_ids(engine.shell):
        try:
            hub.add(create_comm(target_name=TARGET, data={"type": "hello"}), answered=False)
        except Exception as err:
            log.warning("resumable_cells: could not open the sidebar's comm (%s)", err)
    return hub
