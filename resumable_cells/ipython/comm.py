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

from ..engine.recording import cell_id
from ..records import glance, staleness
from . import restore, teamcache

log = logging.getLogger(__name__)
TARGET = "resumable_cells"


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
        elif data.get("action") == "restore":
            self.restore(data.get("cells"))

    def send(self, data: dict, *, pending: bool = False) -> None:
        for c in self.comms + (self.pending if pending else []):
            try:
                c.send(data)
            except Exception:  # a frontend that went away: stop sending to it
                log.debug("a comm failed to send; dropped", exc_info=True)
                self._drop(c)

    def rows(self, deep: bool = False) -> list[dict]:
        """The kernel's rows: staleness from every input (freshness), when attached."""
        watcher = self.engine.freshness
        if watcher is not None:
            return watcher.rows(deep)
        return staleness.step_rows(self.engine.record())

    def send_snapshot(self) -> None:
        """A sidebar opened or asked to refresh: a deep look at what changed in place,
        and the team cache's figures (a round trip to its server)."""
        if self.comms:
            snap = self.engine.snapshot()
            cache = {**(snap.get("cache") or {}), "team": teamcache.figures(self.engine.team)}
            self.send({"type": "snapshot", **snap, "steps": self.rows(True), "cache": cache})

    def cache(self) -> dict:
        return {"store": glance.store_figures(self.engine.store), "writing": self.engine.writing()}

    def send_rows(self) -> None:
        if self.comms:
            self.send({"type": "steps", "steps": self.rows(),
                       "budget": self.engine.budget.snapshot(), "cache": self.cache()})  # fmt: skip

    def send_cache(self) -> None:
        """An entry written behind was stored or given up (told from the writer's thread:
        only figures the store and the writer keep under their own locks)."""
        if self.comms:
            self.send({"type": "cache", "cache": self.cache()})

    def restore(self, cells: Any) -> None:
        """The panel's Restore session: the cells it holds (unsaved edits included) are
        the code to serve; the answer says how far it went and where it stopped."""
        if not isinstance(cells, list) or not all(
            isinstance(c, dict) and isinstance(c.get("source"), str) for c in cells
        ):
            self.send({"type": "restored", "planned": 0, "restored": 0, "stopped": None,
                       "text": "restore refused: the panel sent no cells"})  # fmt: skip
            return
        outcome = restore.restore(self.engine, cells)
        stopped = outcome.stopped
        self.send({
            "type": "restored", "planned": len(outcome.planned),
            "restored": len(outcome.served), "text": outcome.text(),
            "stopped": None if stopped is None else
            {"step": stopped.step, "cell_id": stopped.cell_id, "why": outcome.why},
        })  # fmt: skip
        self.send_rows()

    def listener(self, kind: str, payload: Any) -> None:
        if kind == "execution" and (self.comms or self.pending):
            self.send({"type": "execution", "execution": payload}, pending=True)
            if payload.get("status") != "running":
                self.send_rows()
        elif kind == "snapshot":
            self.send_snapshot()
        elif kind == "writing":
            self.send_cache()


def to_sidebar(kernel: Any, msg: dict[str, Any]) -> bool:
    """Whether a kernel message opens, closes or talks to the sidebar's comm: it runs
    this package's code only, never the notebook's."""
    kind = (msg.get("header") or {}).get("msg_type")
    content = msg.get("content") or {}
    if kind == "comm_open":
        return content.get("target_name") == TARGET
    if kind not in ("comm_msg", "comm_close"):
        return False
    comms = getattr(getattr(kernel, "comm_manager", None), "comms", {})
    return getattr(comms.get(content.get("comm_id")), "target_name", None) == TARGET


def frontend_sent_cell_ids(shell: Any) -> bool:
    """Whether the request being executed came from a frontend that sends cell ids
    (JupyterLab, Notebook 7): one that may have the sidebar, unlike nbclient."""
    return cell_id(shell) is not None


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
    except Exception:  # no comm manager (not a kernel): no sidebar
        log.debug("the comm target could not be registered", exc_info=True)
        return None
    if frontend_sent_cell_ids(engine.shell):
        try:
            hub.add(create_comm(target_name=TARGET, data={"type": "hello"}), answered=False)
        except Exception:  # the frontend opens one itself when it can
            log.debug("the kernel could not open a comm", exc_info=True)
    return hub
