"""Real ipykernel kernels for tests: start, execute, restart, kill."""

from __future__ import annotations

import os
import queue
import signal
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path

from jupyter_client.manager import KernelManager

from resumable_cells.verify.compare import joined_streams


def wait_until(cond, timeout: float = 60.0, what: str = "condition"):
    """Poll `cond` until it returns something truthy; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        got = cond()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.01)  # a poll interval, not a wait for something to happen


def kernel_processes() -> set[int]:
    """Kernel processes this test process started (directly or not) that still run."""
    import psutil

    pids = set()
    for p in psutil.Process().children(recursive=True):
        try:
            if "ipykernel_launcher" in " ".join(p.cmdline()) and p.status() != "zombie":
                pids.add(p.pid)
        except psutil.NoSuchProcess:
            continue
    return pids


def no_kernels_left(before: set[int], timeout: float = 30.0) -> None:
    """Wait until every kernel started since `before` was taken has exited."""
    wait_until(lambda: not kernel_processes() - before, timeout, "every new kernel to exit")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Reply:
    status: str
    outputs: list[dict] = field(default_factory=list)
    error: dict | None = None
    execution_count: int | None = None  # the cell's prompt, In [n], from the reply

    @property
    def stdout(self) -> str:
        return "".join(o["text"] for o in self.outputs if o.get("name") == "stdout")

    @property
    def stderr(self) -> str:
        return "".join(o["text"] for o in self.outputs if o.get("name") == "stderr")

    def user_outputs(self) -> list[dict]:
        """Outputs without the extension's own status lines, as a frontend shows them:
        consecutive messages of one stream are one output (the kernel's I/O thread may
        flush between `print`'s two writes on a loaded machine, in a plain cell too)."""
        mine = [o for o in self.outputs if "resumable_cells" not in (o.get("metadata") or {})]
        return joined_streams(mine)

    def status_lines(self) -> list[str]:
        return [
            o["data"]["text/plain"]
            for o in self.outputs
            if "resumable_cells" in (o.get("metadata") or {})
        ]

    def result(self) -> str | None:
        for o in self.outputs:
            if o["output_type"] == "execute_result":
                return o["data"]["text/plain"]
        return None


class Kernel:
    """A real kernel in `cwd`, with its own store and key file; `launch` goes to the
    process's launch (`stderr=file`: where the kernel's own stderr goes)."""

    def __init__(self, cwd: Path, env: dict | None = None, **launch):
        self.cwd = Path(cwd)
        self.env = {**os.environ, **(env or {})}
        self.km = KernelManager(kernel_name="python3")
        self.km.start_kernel(cwd=str(self.cwd), env=self.env, **launch)
        self._connect()

    def _connect(self) -> None:
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)

    def run(self, code: str, timeout: float = 120, cell_id: str | None = None) -> Reply:
        return self.collect(self.submit(code, cell_id), timeout, what=code)

    def submit(self, code: str, cell_id: str | None = None) -> str:
        """Send an execute request without waiting for it; `collect` its reply."""
        return self._execute(code, cell_id)

    def collect(self, msg_id: str, timeout: float = 120, what: str = "") -> Reply:
        """The outputs and reply of the request `msg_id`, once the kernel is idle."""
        outputs: list[dict] = []
        while True:
            try:
                msg = self.kc.get_iopub_msg(timeout=timeout)
            except queue.Empty:
                raise TimeoutError(
                    f"no output for {timeout} s running:\n{what or msg_id}"
                ) from None
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "status" and content["execution_state"] == "idle":
                break
            if kind == "stream":
                outputs.append({"output_type": "stream", **content})
            elif kind in ("display_data", "execute_result"):
                outputs.append({"output_type": kind, **content})
            elif kind == "error":
                outputs.append({"output_type": "error", **content})
        reply = self.kc.get_shell_msg(timeout=timeout)
        while reply["parent_header"].get("msg_id") != msg_id:
            reply = self.kc.get_shell_msg(timeout=timeout)
        content = reply["content"]
        error = content if content["status"] == "error" else None
        return Reply(content["status"], outputs, error, content.get("execution_count"))

    def _execute(self, code: str, cell_id: str | None) -> str:
        """Send an execute request; with `cell_id`, as JupyterLab sends it (the cell's
        id in the request's metadata), which jupyter_client's execute() cannot do."""
        if cell_id is None:
            return self.kc.execute(code, store_history=True)
        content = {"code": code, "silent": False, "store_history": True,
                   "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}  # fmt: skip
        msg = self.kc.session.msg("execute_request", content, metadata={"cellId": cell_id})
        self.kc.shell_channel.send(msg)
        return msg["header"]["msg_id"]

    def ok(self, code: str, **kw) -> Reply:
        r = self.run(code, **kw)
        assert r.status == "ok", f"cell failed: {r.error and r.error.get('evalue')}\n" + "\n".join(
            (r.error or {}).get("traceback", [])
        )
        return r

    def value(self, expr: str):
        """Evaluate `expr` in the kernel and return it (via repr + literal_eval)."""
        import ast

        r = self.ok(f"print(repr({expr}))")
        return ast.literal_eval(r.stdout.strip())

    def printed_until(self, text: str, timeout: float = 60) -> str:
        """What the kernel prints, outside any cell of ours (a comm callback), until it
        prints `text`; fails on an error message, or after `timeout` s without output."""
        printed = ""
        while text not in printed:  # (get_iopub_msg raises Empty after its timeout)
            msg = self.kc.get_iopub_msg(timeout=timeout)
            if msg["msg_type"] == "stream" and msg["content"]["name"] == "stdout":
                printed += msg["content"]["text"]
            assert msg["msg_type"] != "error", msg["content"]
        return printed

    def wait_for_writes(self, timeout: float = 120) -> None:
        """Wait until the entries the kernel writes behind are stored (or failed)."""
        done = self.value(f"__import__('resumable_cells').wait_for_writes({timeout})")
        assert done, f"entries still being written after {timeout} s"

    def restart(self, clean: bool = False) -> None:
        """Restart the kernel: killed once settled (`settle`; `kill` does not wait), or
        with `clean` asked to shut down first (as Jupyter's restart does), so that what
        it does at exit runs."""
        if not clean:
            self.settle()
        self.kc.stop_channels()
        self.km.restart_kernel(now=not clean)
        self._connect()

    def settle(self) -> None:
        """A silent execution: the engine puts the entries of the steps already done as
        any execution starts (a small entry is put after its cell's reply, on the
        kernel's next turn), as a clean shutdown would at exit. A kernel still busy, or
        gone, is left as it is after a few seconds."""
        try:
            self.collect(self.kc.execute("None", silent=True), timeout=5)
        except TimeoutError:
            pass

    def kill(self) -> None:
        """SIGKILL, as a crash would, then start a fresh kernel in the same place."""
        pid = self.km.provisioner.process.pid
        os.kill(pid, signal.SIGKILL)
        self.km.provisioner.process.wait()
        self.kc.stop_channels()
        self.km.restart_kernel(now=True)
        self._connect()

    def shutdown(self) -> None:
        """Killed once settled (`settle`): the entries of the steps it ran are stored."""
        if self.km.is_alive():
            self.settle()
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)
