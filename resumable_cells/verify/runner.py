"""Executing one pass of a notebook: a fresh real kernel, nbclient, a per-cell timeout.

A pass runs every code cell in order in a new kernel process (the kernelspec
`resumable-cells-verify`: this interpreter, never the user's `python3`), with errors
allowed, so a failing cell is an output like any other. A cell that gives no reply
within the timeout counts as hung: the kernel is interrupted, and restarted when it does
not answer a probe within `RECOVER_S` (cells after it then run in the new kernel, after
the pass's `after_restart` code). A kernel that dies is restarted the same way. The pass
never raises for what the notebook does; it records what happened.
"""

from __future__ import annotations

import logging
import queue
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
import nbformat

KERNEL = "resumable-cells-verify"
RECOVER_S = 10.0  # for an interrupted kernel to answer a probe before it is restarted
START_S = 60.0  # for a (re)started kernel to be ready
# The reply nbclient stands in for a cell that timed out (after interrupting it).
TIMED_OUT = {"ename": "CellTimeoutError", "evalue": "no reply within the timeout", "traceback": []}

log = logging.getLogger("resumable_cells")
# nbclient's own log says again what the report says (a timeout, an interrupt).
nbclient_log = logging.getLogger("resumable_cells.verify.nbclient")
nbclient_log.setLevel(logging.CRITICAL)


class CellRun(msgspec.Struct):
    """One code cell in one pass."""

    outputs: list[dict]
    seconds: float  # from the execute request to the reply (the timeout when hung)
    hung: bool = False  # no reply within the timeout
    died: bool = False  # the kernel died while running it
    restarted: bool = False  # the kernel was restarted after it


class PassRun(msgspec.Struct):
    """One top-to-bottom execution of a notebook in one kernel process (or more, when a
    hung cell or a dead kernel forced a restart)."""

    label: str
    nb: nbformat.NotebookNode | None = None  # with this pass's outputs
    cells: dict[int, CellRun] = msgspec.field(default_factory=dict)  # by cell index
    wall_s: float = 0.0  # from the first cell to the last, kernel start-up excluded
    failure: str | None = None  # the pass could not run at all (a kernel that never started)

    @property
    def restarts(self) -> int:
        return sum(1 for c in self.cells.values() if c.restarted)


def write_kernelspec(directory: Path) -> None:
    """A kernelspec of this interpreter (the one with the package installed) in
    `directory/KERNEL`, so the user's Jupyter paths cannot pick another Python."""
    from ipykernel.kernelspec import write_kernel_spec

    if not (directory / KERNEL / "kernel.json").exists():
        write_kernel_spec(directory / KERNEL)


def run_pass(nb: nbformat.NotebookNode, workdir: Path, env: dict[str, str], **how) -> PassRun:
    """`run_once`, and once more when the kernel did not start (it died before any cell
    ran: kernels started side by side can race for a port): a pass that could not start
    is a finding only when it fails twice."""
    result = run_once(nb, workdir, env, **how)
    if result.failure and not result.cells:
        log.warning("verify: pass %s in %s did not start; again", how.get("label"), workdir)
        result = run_once(nb, workdir, env, **how)
    return result


def run_once(
    nb: nbformat.NotebookNode,
    workdir: Path,
    env: dict[str, str],
    *,
    label: str,
    kernels: Path,
    timeout: float,
    extra_arguments: Sequence[str] = (),
    after_restart: str = "",
    log_file: Path,
) -> PassRun:
    """Execute the code cells of `nb` in a new kernel started in `workdir` with `env`.

    `extra_arguments` go on the kernel's command line (traitlets config); `after_restart`
    is code run in a kernel that had to be restarted, before the next cell.
    """
    from nbclient import NotebookClient

    nb = nbformat.from_dict(nb)  # a copy: outputs land here, not in the caller's object
    client = NotebookClient(
        nb,
        km=_manager(kernels),
        timeout=max(1, round(timeout)),
        kernel_name=KERNEL,
        resources={"metadata": {"path": str(workdir)}},
        allow_errors=True,
        interrupt_on_timeout=True,
        error_on_timeout=TIMED_OUT,
        on_cell_executed=_Replies(),
        startup_timeout=int(START_S),
        extra_arguments=list(extra_arguments),
        log=nbclient_log,
    )
    result = PassRun(label, nb)
    with open(log_file, "ab") as klog:
        try:
            # cleanup_kc: nbclient shuts down only kernels of its own manager, and
            # this one is ours (the kernelspec); without it every pass's kernel lives on.
            with client.setup_kernel(env=env, stdout=klog, stderr=klog, cleanup_kc=True):
                t0 = time.perf_counter()
                for index, cell in enumerate(nb.cells):
                    if cell.cell_type == "code" and cell.source.strip():
                        result.cells[index] = _run_cell(client, cell, index, after_restart)
                result.wall_s = time.perf_counter() - t0
        except Exception as err:  # a kernel that would not start: the pass is a finding
            log.warning("verify: pass %s in %s failed", label, workdir, exc_info=True)
            result.failure = f"{type(err).__name__}: {err}"
    return result


def _manager(kernels: Path):
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager

    specs = KernelSpecManager(kernel_dirs=[str(kernels)], ensure_native_kernel=False)
    return AsyncKernelManager(kernel_name=KERNEL, kernel_spec_manager=specs)


class _Replies:
    """nbclient's `on_cell_executed` hook: the reply of the last cell, so a timeout
    (nbclient's stand-in reply, `TIMED_OUT`) can be told from the cell's own error."""

    def __init__(self) -> None:
        self.last: dict[str, Any] | None = None

    def __call__(self, cell, cell_index, execute_reply) -> None:
        self.last = execute_reply


def _run_cell(client, cell, index: int, after_restart: str) -> CellRun:
    from nbclient.exceptions import DeadKernelError

    replies: _Replies = client.on_cell_executed
    replies.last = None
    start = time.perf_counter()
    died = False
    try:
        client.execute_cell(cell, index)
    except DeadKernelError:
        died = True
    seconds = time.perf_counter() - start
    last: dict[str, Any] = replies.last or {}
    content: dict[str, Any] = last.get("content") or {}
    hung = content.get("ename") == TIMED_OUT["ename"]
    run = CellRun(list(cell.get("outputs", [])), seconds, hung, died)
    if hung or died:
        # nbclient interrupted it; a kernel that does not then answer is restarted.
        if died or not _execute(client.km, "pass", RECOVER_S):
            _restart(client, after_restart)
            run.restarted = True
        _fresh_client(client)
    return run


def _fresh_client(client) -> None:
    """Give nbclient new channels: the ones that saw a timeout may hold its leftovers."""
    from jupyter_core.utils import run_sync

    old = client.kc
    client.kc = None
    if old is not None:
        old.stop_channels()
    run_sync(client.async_start_new_kernel_client)()


def _restart(client, after_restart: str) -> None:
    from jupyter_core.utils import run_sync

    run_sync(client.km.restart_kernel)(now=True)
    if after_restart and not _execute(client.km, after_restart, START_S):
        log.warning("verify: %r failed in the restarted kernel", after_restart)


def _execute(km, code: str, timeout: float) -> bool:
    """Run `code` on a client of its own; True when it replied `ok` within `timeout`.
    (nbclient's client would file the probe's outputs under a notebook cell.)"""
    kc = km.blocking_client()
    kc.start_channels()
    try:
        msg_id = kc.execute(code, store_history=False)
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                reply = kc.get_shell_msg(timeout=left)
            except queue.Empty:
                return False
            if reply["parent_header"].get("msg_id") == msg_id:
                return reply["content"].get("status") == "ok"
        return False
    finally:
        kc.stop_channels()
