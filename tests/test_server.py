"""The server extension's route, in a real jupyter_server started in a subprocess.

403 without the token, 404 for paths outside the root and for missing notebooks, 200
with the stored snapshot of a notebook whose run a real kernel wrote, and the run kept
when the notebook is renamed through the contents API.
"""

from __future__ import annotations

import http.client
import json
import os
import secrets
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import nbformat
import pytest
from kernels import Kernel, free_port

NOTEBOOK = "nb.ipynb"


class Server:
    """`jupyter server` on a free port with a random token, rooted at `root`."""

    def __init__(self, root: Path, tmp: Path):
        self.root = root
        self.token = secrets.token_hex(16)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = (tmp / "server.log").open("w+")
        env = {**os.environ, "JUPYTER_CONFIG_DIR": str(tmp / "config")}
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "jupyter_server",
                "--no-browser",
                "--allow-root",
                f"--ServerApp.token={self.token}",
                "--ServerApp.ip=127.0.0.1",
                f"--ServerApp.port={self.port}",
                "--ServerApp.port_retries=0",
                f"--ServerApp.root_dir={root}",
                # enabled here too, so the test does not depend on the installed config
                "--ServerApp.jpserver_extensions=resumable_cells=True",
            ],
            cwd=root,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        try:
            self._wait()
        except BaseException:  # never leave a server behind a failed start
            self.stop()
            raise

    def _wait(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"jupyter server exited:\n{self.output()}")
            try:
                if self.get("/api/status", auth=True)[0] == 200:
                    return
            except (OSError, http.client.HTTPException):
                pass  # not listening yet, or another program holds the port (then it exits)
            time.sleep(0.1)  # polling the endpoint until it answers
        raise RuntimeError(f"jupyter server did not answer:\n{self.output()}")

    def output(self) -> str:
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def request(self, method: str, path: str, *, auth: bool, body: dict | None = None):
        headers = {"Authorization": f"token {self.token}"} if auth else {}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def get(self, path: str, *, auth: bool):
        return self.request("GET", path, auth=auth)

    def record(self, notebook: str, *, auth: bool = True):
        status, body = self.get(
            "/resumable-cells/record?" + urllib.parse.urlencode({"path": notebook}), auth=auth
        )
        return status, (json.loads(body) if status == 200 else None)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


@pytest.fixture
def root(tmp_path):
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("%load_ext resumable_cells")]
    nbformat.write(nb, root / NOTEBOOK)
    nbformat.write(nb, root / "sub" / "other.ipynb")
    (tmp_path / "outside.ipynb").write_text(json.dumps(nb))
    return root


@pytest.fixture
def server(root, tmp_path):
    s = Server(root, tmp_path)
    yield s
    s.stop()


def test_403_without_token(server):
    status, _ = server.record(NOTEBOOK, auth=False)
    assert status == 403


def test_404_outside_root_missing_or_symlinked_out(server, root):
    (root / "link.ipynb").symlink_to(root.parent / "outside.ipynb")
    for path in [
        "../outside.ipynb",
        "sub/../../outside.ipynb",
        "/etc/passwd",
        "",
        "missing.ipynb",
        "sub",
        "link.ipynb",
    ]:
        status, _ = server.record(path)
        assert status == 404, path
    # and the same paths are fine inside the root
    assert server.record("sub/../nb.ipynb")[0] == 200


def test_empty_snapshot_and_no_store_created(server, root):
    status, snap = server.record("sub/other.ipynb")
    assert status == 200
    assert snap["run"] is None and snap["executions"] == [] and snap["steps"] == []
    assert snap["notebook"] == "other.ipynb"
    assert not (root / "sub" / ".resumable_cells").exists()


def test_200_with_the_snapshot_a_kernel_wrote_and_kept_over_a_rename(server, root):
    kernel = Kernel(root, env={"JPY_SESSION_NAME": NOTEBOOK})
    try:
        kernel.ok("%load_ext resumable_cells")
        kernel.ok("%%step load\nx = 41")
        kernel.ok("%%step inc\ny = x + 1")
    finally:
        kernel.shutdown()

    status, snap = server.record(NOTEBOOK)
    assert status == 200
    assert snap["notebook"] == NOTEBOOK
    assert snap["run"] and snap["run"]["id"]
    assert [e["step"] for e in snap["executions"]] == ["load", "inc"]
    assert {e["status"] for e in snap["executions"]} == {"live"}
    assert [r["step"] for r in snap["steps"]] == ["load", "inc"]
    assert len(snap["sessions"]) == 1

    # Rename through the contents API: the run follows the notebook.
    status, _ = server.request(
        "PATCH", f"/api/contents/{NOTEBOOK}", auth=True, body={"path": "renamed.ipynb"}
    )
    assert status == 200
    deadline = time.monotonic() + 30
    while True:
        status, renamed = server.record("renamed.ipynb")
        if status == 200 and renamed["run"] is not None or time.monotonic() > deadline:
            break
        time.sleep(0.1)  # the rename listener runs in the background
    assert status == 200, server.output()
    assert renamed["run"] is not None, server.output()
    assert renamed["run"]["id"] == snap["run"]["id"]
    assert renamed["notebook"] == "renamed.ipynb"
    assert server.record(NOTEBOOK)[0] == 404
