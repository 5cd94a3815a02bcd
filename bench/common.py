"""Shared pieces of the benchmarks: interleaved timing, result rows, kernels, memory.

Every figure times this project and its anchors in one process, round-robin (one run
of each method per round), so that a noisy neighbour slows all of them alike and the
ratios hold. Each script prints its rows; `--json PATH` appends them to PATH for
`run_all.py`, `--quick` shrinks the sizes for a smoke run.
"""

from __future__ import annotations

import argparse
import atexit
import gc
import json
import os
import queue
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MB = 1 << 20
GB = 1 << 30


@dataclass
class Row:
    """One method's timings for one figure. `ours` marks this project's row."""

    figure: str
    size: str
    method: str
    times: list[float]
    ours: bool = False
    target: str = ""  # the target, written out, on this project's row
    met: bool | None = None
    note: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def median(self) -> float | None:
        return statistics.median(self.times) if self.times else None


def interleaved(
    methods: dict[str, Callable[[], object]],
    repeat: int,
    *,
    warmup: int = 1,
    inner: int = 1,
    before: Callable[[str], object] | None = None,
) -> dict[str, list[float]]:
    """Time each method `repeat` times, round-robin after `warmup` untimed rounds.
    A sample is the mean of `inner` back-to-back calls (for operations of microseconds).
    `before(name)` runs untimed before each sample (to delete a file, drop a value)."""
    times: dict[str, list[float]] = {name: [] for name in methods}
    for r in range(warmup + repeat):
        for name, fn in methods.items():
            if before is not None:
                before(name)
            if inner == 1:
                gc.collect()
            t0 = time.perf_counter()
            for _ in range(inner):
                fn()
            dt = (time.perf_counter() - t0) / inner
            if r >= warmup:
                times[name].append(dt)
    return times


def fmt_time(s: float | None) -> str:
    if s is None:
        return "-"
    if s < 1e-3:
        return f"{s * 1e6:.0f} µs"
    if s < 1:
        return f"{s * 1e3:.1f} ms" if s < 0.1 else f"{s * 1e3:.0f} ms"
    return f"{s:.2f} s"


def print_rows(rows: list[Row]) -> None:
    for r in rows:
        lo, hi = (min(r.times), max(r.times)) if r.times else (None, None)
        mark = "*" if r.ours else " "
        print(
            f"{mark} {r.figure:<28} {r.size:>10} {r.method:<34} {fmt_time(r.median):>10}"
            f"  [{fmt_time(lo)} .. {fmt_time(hi)}] n={len(r.times)} {r.note}"
        )


def each_size(
    one_size: Callable[[int, str, int], list[Row]],
    sizes: list[tuple[int, str, int]],
    quick: list[tuple[int, str, int]],
) -> Callable[[argparse.Namespace], list[Row]]:
    """A figure's `run`: `one_size(nbytes, label, repeat)` for each of `sizes` (of
    `quick` with --quick)."""

    def run(args: argparse.Namespace) -> list[Row]:
        rows = []
        for nbytes, label, repeat in quick if args.quick else sizes:
            rows += one_size(nbytes, label, repeat)
        return rows

    return run


def main(run: Callable[[argparse.Namespace], list[Row]], extra_args=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", help="append the result rows to this file (JSON lines)")
    ap.add_argument("--quick", action="store_true", help="small sizes, a smoke run")
    if extra_args:
        extra_args(ap)
    args = ap.parse_args()
    compile_package()
    rows = run(args)
    print_rows(rows)
    if args.json:
        with open(args.json, "a") as f:
            for r in rows:
                f.write(json.dumps(asdict(r)) + "\n")


def compile_package() -> None:
    """Write the package's bytecode before any kernel imports it. An install from a
    wheel compiles it; an editable one under PYTHONDONTWRITEBYTECODE never does, and
    every kernel would then compile the extension's modules from source when it loads
    them (about 0.2 s), a cost no user of a released package pays."""
    import compileall

    compileall.compile_dir(str(ROOT / "resumable_cells"), quiet=1)


def private_env(tmp: Path) -> dict[str, str]:
    """Environment for code under test: its own store and key file."""
    return {
        "RESUMABLE_CELLS_DIR": str(tmp / "store"),
        "RESUMABLE_CELLS_KEY_FILE": str(tmp / "secret.key"),
    }


def notebook_dir(tmp: Path) -> tuple[Path, dict[str, str]]:
    """A notebook's folder under `tmp`, and the environment of its kernels (the store and
    key beside it, in `tmp`)."""
    work = tmp / "nb"
    work.mkdir()
    return work, private_env(tmp)


def scratch_dir(prefix: str) -> Path:
    """A fresh directory (under BENCH_TMP if set), removed when the process exits unless
    BENCH_KEEP is set: a figure can leave a gigabyte of blobs behind."""
    base = os.environ.get("BENCH_TMP") or None
    path = Path(tempfile.mkdtemp(prefix=f"rc-bench-{prefix}-", dir=base))
    if not os.environ.get("BENCH_KEEP"):
        atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


# -- memory -------------------------------------------------------------------------------
def vm_status(field_name: str) -> int:
    """A /proc/self/status field (VmRSS, VmHWM) in bytes."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field_name + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(field_name)


def reset_peak() -> None:
    """Reset VmHWM to the current RSS (Linux >= 4.0), so a peak is the op's own."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


# -- servers ------------------------------------------------------------------------------
def spawn_server(argv: Callable[[int], list[str]], log: Path) -> tuple[subprocess.Popen, int]:
    """A server process on a free port of 127.0.0.1, `argv(port)`, its output to `log`;
    (process, port). The caller waits until it answers, and ends it."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv(port), stdout=out, stderr=subprocess.STDOUT)
    return proc, port


# -- kernels ------------------------------------------------------------------------------
class BenchKernel:
    """A real ipykernel driven by jupyter_client, timed from execute to idle."""

    def __init__(self, cwd: Path, env: dict[str, str]):
        from jupyter_client.manager import KernelManager

        self.km = KernelManager(kernel_name="python3")
        self.km.start_kernel(cwd=str(cwd), env={**os.environ, **env})
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=120)

    def run(
        self, code: str, timeout: float = 600, *, comms: bool = False
    ) -> tuple[float, list[dict], dict]:
        """Execute `code`; returns (seconds from send to idle, iopub outputs, reply);
        `comms`: comm messages the kernel sent during it are outputs too."""
        kc = self.kc
        t0 = time.perf_counter()
        msg_id = kc.execute(code, store_history=True)
        outputs = []
        while True:
            try:
                msg = kc.get_iopub_msg(timeout=timeout)
            except queue.Empty:
                raise TimeoutError(f"no idle after {timeout}s: {code[:60]!r}") from None
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind = msg["msg_type"]
            if kind == "status" and msg["content"]["execution_state"] == "idle":
                break
            if kind in ("stream", "display_data", "execute_result", "error") or (
                comms and kind == "comm_msg"
            ):
                outputs.append({"type": kind, **msg["content"]})
        dt = time.perf_counter() - t0
        reply = kc.get_shell_msg(timeout=timeout)
        while reply["parent_header"].get("msg_id") != msg_id:
            reply = kc.get_shell_msg(timeout=timeout)
        return dt, outputs, reply["content"]

    def check(self, code: str, timeout: float = 600) -> list[dict]:
        """Execute `code` and fail loudly if it raised."""
        _, outputs, reply = self.run(code, timeout)
        if reply["status"] != "ok":
            raise RuntimeError(f"{code[:80]!r} failed: {reply.get('ename')}: {reply.get('evalue')}")
        return outputs

    def value(self, expr: str):
        """The value of a Python literal expression evaluated in the kernel."""
        import ast

        for o in self.check(f"print(repr({expr}))"):
            if o["type"] == "stream" and o.get("name") == "stdout":
                return ast.literal_eval(o["text"].strip())
        raise RuntimeError(f"no value for {expr}")

    def time_magic(self, line: str, cell: str, n: int) -> dict[str, list[float]]:
        """`run_cell_magic("step", line, cell)` against a cell magic that does nothing
        (the floor of any cell magic), `n` times each, interleaved and timed inside the
        kernel: {"step": seconds, "noop": seconds}."""
        self.check(_IN_KERNEL)
        out = self.check(f"_bench_in_kernel({line!r}, {cell!r}, {n})")
        text = "".join(o.get("text", "") for o in out if o["type"] == "stream")
        return json.loads(text.strip().splitlines()[-1])

    def close(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


def team_kernels(tmp: Path, env: dict[str, str], setup: str) -> list[BenchKernel]:
    """Alice's and Bob's kernels for a team-cache figure: each in its own folder under
    `tmp` with its own store and per-user key, both with `env` (the team key, the team
    cache), the extension loaded and `setup` run."""
    kernels = []
    for who in ("alice", "bob"):
        (tmp / who).mkdir()
        k = BenchKernel(tmp / who, {**private_env(tmp / who), **env})
        kernels.append(k)
        k.check("%load_ext resumable_cells")
        k.check(setup)
    return kernels


_IN_KERNEL = r"""
import json as _json, time as _time
from IPython.core.magic import register_cell_magic as _reg

@_reg
def noop(line, cell):
    pass

def _bench_in_kernel(line, cell, n):
    _ip = get_ipython()
    out = {"step": [], "noop": []}
    for _ in range(n):
        t0 = _time.perf_counter()
        _ip.run_cell_magic("step", line, cell)
        out["step"].append(_time.perf_counter() - t0)
        t0 = _time.perf_counter()
        _ip.run_cell_magic("noop", "", cell)
        out["noop"].append(_time.perf_counter() - t0)
    print(_json.dumps(out))
"""


def status_text(outputs: list[dict]) -> str:
    """The extension's status lines among a cell's outputs (served from cache ...)."""
    out = []
    for o in outputs:
        data = o.get("data") or {}
        if "resumable_cells" in (o.get("metadata") or {}):
            out.append(data.get("text/plain", ""))
        elif o["type"] == "stream":
            out.append(o.get("text", ""))
    return " ".join(out)


def module_versions(*names: str) -> dict[str, str]:
    from importlib import metadata

    out = {"python": sys.version.split()[0]}
    for n in names:
        try:
            out[n] = metadata.version(n)
        except metadata.PackageNotFoundError:
            pass
    return out
