"""The kernel end of the sidebar's comm (target `resumable_cells`, docs/PROTOCOL.md).

The kernel accepts comms the frontend opens, and opens one itself when the extension is
loaded from a cell that a JupyterLab-family frontend sent (JupyterLab and Notebook 7
send the cell's id with each execute request; nbclient, nbconvert and papermill do not),
so a headless run sends nothing and prints no "No handler found for comm target"
warning. Every event goes to every open comm.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ..engine.recording import cell_id

if TYPE_CHECKING:
    from .engine_slot import EngineSlot

log = logging.getLogger(__name__)
TARGET = "resumable_cells"


class Hub:
    """Comms to sidebars. A comm the kernel opened is `pending` until the frontend
    answers on it (a frontend without our target never does). Pending comms get the
    cheap execution events, so a Run All queued before the answer still shows live;
    only answered ones get step tables, whose cost grows with the run.

    A sidebar that asks for the record starts the engine (`engine_slot.py`); the
    executions it is told of come from the engine once started (`listen`)."""

    def __init__(self, slot: EngineSlot):
        self.slot = slot
        self.comms: list = []  # answered: events go here
        self.pending: list = []

    @property
    def engine(self) -> Any:  # the Engine, with the frontend layer's freshness watcher
        return self.slot.get()

    def listen(self, engine: Any) -> None:
        """The engine started: tell the sidebars of its executions, and of staleness."""
        engine.listeners.append(self.listener)
        if engine.freshness is not None:
            engine.freshness.on_change.append(self.send_rows)

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
        elif data.get("action") == "plan":
            self.plan(data.get("cells"), data.get("request"))

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
        from ..records import staleness  # with the engine

        return staleness.step_rows(self.engine.record())

    def send_snapshot(self) -> None:
        """A sidebar opened or asked to refresh: a deep look at what changed in place,
        and the team cache's figures (a round trip to its server)."""
        if self.comms:
            snap = self.engine.snapshot()
            team = None
            if self.engine.team is not None:
                from . import teamcache  # the team cache's client: only when one is set

                team = teamcache.figures(teamcache.team_of(self.engine))
            cache = {**(snap.get("cache") or {}), "team": team}
            self.send({"type": "snapshot", **snap, "steps": self.rows(True), "cache": cache})

    def cache(self) -> dict:
        from ..records import glance  # with the engine

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
        from . import notebookfile, restore  # with the engine: a restore starts it anyway

        sent = notebookfile.cells_of(cells)
        if sent is None:
            self.send({"type": "restored", "planned": 0, "restored": 0, "stopped": None,
                       "text": "restore refused: the panel sent no cells"})  # fmt: skip
            return
        outcome = restore.restore(self.engine, sent)
        stopped = outcome.stopped
        self.send({
            "type": "restored", "planned": len(outcome.planned),
            "restored": len(outcome.served), "text": outcome.text(),
            "stopped": None if stopped is None else
            {"step": stopped.step, "cell_id": stopped.cell_id, "why": outcome.why},
        })  # fmt: skip
        self.send_rows()

    def plan(self, cells: Any, request: Any) -> None:
        """The panel's "Run stale": which of the cells it holds (unsaved edits included)
        are out of date, by the plan `%step plan` prints. A plan that fails (a bad
        %%step line) answers with its reason and no cells."""
        from IPython.core.error import UsageError

        from . import notebookfile, plan  # with the engine: a plan reads the store

        sent = notebookfile.cells_of(cells)
        answer: dict[str, Any] = {"type": "plan", "request": request, "run": [], "error": None}
        if sent is None:
            answer["error"] = "the panel sent no cells"
        else:
            try:
                answer["run"] = plan.stale_cells(self.engine, sent)
            except UsageError as err:
                answer["error"] = str(err)
            except Exception as err:  # the panel waits for an answer: give it the reason
                log.warning("the plan for Run stale failed", exc_info=True)
                answer["error"] = f"{type(err).__name__}: {err}"
        self.send(answer)

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


def attach(slot: EngineSlot) -> Hub | None:
    try:
        from comm import create_comm, get_comm_manager
    except ImportError:
        return None
    hub = Hub(slot)
    slot.on_start.append(hub.listen)
    try:
        get_comm_manager().register_target(TARGET, lambda comm, msg: hub.add(comm, answered=True))
    except Exception:  # no comm manager (not a kernel): no sidebar
        log.debug("the comm target could not be registered", exc_info=True)
        return None
    if frontend_sent_cell_ids(slot.shell):
        try:
            hub.add(create_comm(target_name=TARGET, data={"type": "hello"}), answered=False)
        except Exception:  # the frontend opens one itself when it can
            log.debug("the kernel could not open a comm", exc_info=True)
    return hub
