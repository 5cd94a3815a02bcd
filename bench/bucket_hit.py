"""A team-cache hit on a step that binds 100 MB and 1 GB, from a bucket (S3 and a
shared folder) against the same hit from Redis and against recomputing.

Two kernels with their own working directories, stores and per-user keys share each
team cache through one team key: a redis-server and moto's S3 server on 127.0.0.1
(started here, in memory), and a folder (`file://`). Alice runs `%%step big` once and
pushes it to each. Before each timed sample of a team-cache hit, Bob's store is emptied
and his kernel pointed at that team cache (untimed). A bucket restores the array
lazily (its bytes come down when it is first read), Redis copies it at the hit: each
tier is timed for the hit alone and for the hit then a first read of the value (both
cells, end to end through jupyter_client), against recomputing the cell without the
magic and reading it. Interleaved. The step sorts its input so that it costs what a
real step would (a hit abandons a fetch slower than twice the step: with a trivial step
a gigabyte would never be fetched). There is no target in the design for this figure.
Needs redis-server (make redis-deps) and the test extra's moto, obstore and redis.
"""

from __future__ import annotations

import re
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402
from remote_hit import start_redis  # noqa: E402

FIGURE = "team-cache hit, bucket vs Redis"
STEP = "%%step big\nb = np.sort(a)"
PLAIN = "b = np.sort(a)"
READ = "float(b[-1])"  # reads the whole value: a lazy one is fetched then
RECOMPUTE = "recompute without the magic, read"
BUCKET = "team-cache"


def start_s3(tmp: Path) -> tuple[subprocess.Popen, str]:
    """moto's S3 server on a free port, with a bucket; (process, endpoint)."""
    proc, port = common.spawn_server(
        lambda port: [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        tmp / "s3.log",
    )
    import boto3

    endpoint = f"http://127.0.0.1:{port}"
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                      aws_access_key_id="bench", aws_secret_access_key="bench")  # fmt: skip
    deadline = time.monotonic() + 60
    while True:
        try:
            s3.create_bucket(Bucket=BUCKET)
            return proc, endpoint
        except Exception:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the S3 server did not start (see {tmp / 's3.log'})") from None
            time.sleep(0.05)


def one_size(nbytes: int, repeat: int, tiers: dict[str, str], env: dict, tmp: Path) -> list:
    size = f"{nbytes // common.MB} MB" if nbytes < common.GB else f"{nbytes // common.GB} GB"
    kernels = []
    try:
        setup = f"import numpy as np\na = np.random.default_rng(0).random({nbytes // 8})"
        kernels = common.team_kernels(tmp, env, setup)
        alice, bob = kernels
        live_s, _, _ = alice.run(STEP)
        alice.check("__import__('resumable_cells').wait_for_writes(600)")
        pushed = {}
        for name, url in tiers.items():
            alice.check(f"%step config --remote {url}")
            pushed[name] = "".join(o.get("text", "") for o in alice.check("%step push --all"))
        seen: dict[str, list[str]] = {name: [] for name in tiers}

        def hit(name: str, read: bool):
            def go():
                _, outputs, _ = bob.run(STEP)
                seen[name].append(common.status_text(outputs))
                if read:
                    bob.check(READ)

            return go

        methods = {}
        for name in tiers:
            methods[f"hit from {name}"] = hit(name, False)
            methods[f"hit from {name}, read"] = hit(name, True)

        def recompute():
            bob.run(PLAIN)
            bob.check(READ)

        def point_bob(method: str) -> None:
            for name, url in tiers.items():
                if method.startswith(f"hit from {name}"):
                    bob.check(f"%step clear --all\n%step config --remote {url}")

        times = common.interleaved(
            {**methods, RECOMPUTE: recompute}, repeat, warmup=1, before=point_bob
        )
        same = bob.value("bool((b == np.sort(a)).all())")
    finally:
        for k in kernels:
            k.close()
        shutil.rmtree(tmp / "alice", ignore_errors=True)
        shutil.rmtree(tmp / "bob", ignore_errors=True)
    return rows_of(size, times, tiers, seen, pushed, live_s, same)


def rows_of(size, times, tiers, seen, pushed, live_s, same) -> list:
    def median(ts: list[float]) -> float:
        return sorted(ts)[len(ts) // 2]

    recompute = median(times[RECOMPUTE])
    rows = []
    for method, ts in times.items():
        row = common.Row(FIGURE, size, method, ts)
        name = method.removeprefix("hit from ").removesuffix(", read")
        if name in tiers:
            row.ours = True
            inner = [  # the engine's own timing, from the status lines
                float(m.group(1)) * (1e-3 if m.group(2) == "ms" else 1)
                for s in seen[name][2:]
                if (m := re.search(r"team cache in ([0-9.]+) (ms|s)\b", s))
            ]
            row.note = (
                f"hit in the kernel {1e3 * median(inner):.0f} ms; " if inner else ""
            ) + f"{median(ts) / recompute:.2f}x recomputing; first (live) run {live_s:.2f} s"
            if "pushed 1 entry" not in pushed[name]:
                row.note += f"; alice's push: {pushed[name].strip()[:80]}"
            if not (all("served from team cache" in s for s in seen[name]) and same):
                row.note += "; NOT ALWAYS SERVED FROM THE TEAM CACHE: " + seen[name][-1][:80]
        rows.append(row)
    return rows


def run(args) -> list:
    sizes = [8 * common.MB] if args.quick else [100 * common.MB, 1 * common.GB]
    tmp = common.scratch_dir("bucket")
    redis_proc, redis_url = start_redis(tmp)
    s3_proc, endpoint = start_s3(tmp)
    tiers = {
        "S3 (moto)": f"s3://{BUCKET}/bench",
        "a shared folder": f"file://{tmp / 'shared'}",
        "Redis": redis_url,
    }
    env = {
        "RESUMABLE_CELLS_TEAM_KEY": secrets.token_hex(32),
        "AWS_ENDPOINT_URL": endpoint, "AWS_ALLOW_HTTP": "true", "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
    }  # fmt: skip
    rows = []
    try:
        for nbytes in sizes:
            rows += one_size(nbytes, 5 if nbytes <= 100 * common.MB else 3, tiers, env, tmp)
    finally:
        for proc in (redis_proc, s3_proc):
            proc.terminate()
            proc.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


if __name__ == "__main__":
    common.main(run)
