"""A team-cache hit on a step that binds a 100 MB result, through a real redis-server.

Two kernels with their own working directories, stores and per-user keys share one
redis-server on 127.0.0.1 (started here, no persistence) through a team key. Alice runs
`%%step big` with `b = a * 2` and pushes it; Bob's store is emptied before each sample
(untimed), so every timed `%%step big` in his kernel fetches the entry and its 100 MB
blob from Redis, checks it with the team key, writes it to his store signed with his
key, and restores it. Against: Bob's local hit on the same entry, and the cell without
the magic (recomputing). All end to end through jupyter_client, interleaved.

There is no target in the design for this figure; the note gives it next to the local
hit. Needs `redis-server` (make redis-deps) and the `redis` client (the team extra).
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

from common import (  # noqa: E402
    MB,
    Row,
    interleaved,
    main,
    scratch_dir,
    spawn_server,
    status_text,
    team_kernels,
)

FIGURE = "team-cache hit on a 100 MB step"
STEP = "%%step big\nb = a * 2"
PLAIN = "b = a * 2"
REMOTE = "%%step team-cache hit, end to end"


def not_measured(size: str, why: str) -> list[Row]:
    return [Row(FIGURE, size, REMOTE, [], ours=True, note=f"not measured: {why}")]


def start_redis(tmp: Path) -> tuple[subprocess.Popen, str]:
    proc, port = spawn_server(
        lambda port: [shutil.which("redis-server") or "/usr/bin/redis-server", "--port",
                      str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        tmp / "redis.log",
    )  # fmt: skip
    import redis

    client = redis.Redis(port=port)
    deadline = time.monotonic() + 20
    while True:  # until it answers PING
        try:
            if client.ping():
                break
        except redis.ConnectionError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"redis-server did not start (see {tmp / 'redis.log'})"
                ) from None
            time.sleep(0.01)
    return proc, f"redis://127.0.0.1:{port}/0"


def run(args) -> list[Row]:
    nbytes = 8 * MB if args.quick else 100 * MB
    size = f"{nbytes // MB} MB"
    if not shutil.which("redis-server") and not Path("/usr/bin/redis-server").exists():
        return not_measured(size, "redis-server is not installed (make redis-deps)")
    try:
        import redis  # noqa: F401
    except ImportError:
        return not_measured(size, "the redis client is not installed (pip install '.[team]')")
    tmp = scratch_dir("remote")
    proc, url = start_redis(tmp)
    team = {"RESUMABLE_CELLS_TEAM_KEY": secrets.token_hex(32), "RESUMABLE_CELLS_REMOTE": url}
    kernels = []
    try:
        setup = f"import numpy as np\na = np.random.default_rng(0).random({nbytes // 8})"
        kernels = team_kernels(tmp, team, setup)
        alice, bob = kernels
        live_s, _, _ = alice.run(STEP)
        pushed = "".join(o.get("text", "") for o in alice.check("%step push"))
        seen: list[str] = []

        def remote_hit():
            _, outputs, _ = bob.run(STEP)
            seen.append(status_text(outputs))

        def empty_bobs_store(name: str) -> None:
            if name == REMOTE:
                bob.check("%step clear --all")

        times = interleaved(
            {
                REMOTE: remote_hit,
                "%%step local hit, end to end": lambda: bob.run(STEP),
                "same cell without the magic (recompute)": lambda: bob.run(PLAIN),
            },
            5 if args.quick else 7,
            warmup=1,
            before=empty_bobs_store,
        )
        served = all("served from team cache" in s for s in seen)
        inner = [  # the engine's own timing, from the status lines of the timed samples
            float(m.group(1)) for s in seen[1:] if (m := re.search(r"team cache in ([0-9.]+) s", s))
        ]
        same = bob.value("bool((b == a * 2).all())")
    finally:
        for k in kernels:
            k.close()
        proc.terminate()
        proc.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)
    med = {name: sorted(ts)[len(ts) // 2] for name, ts in times.items()}
    rows = []
    for name, ts in times.items():
        row = Row(FIGURE, size, name, ts)
        if name == REMOTE:
            row.ours = True
            row.note = (
                f"in the kernel {1e3 * sorted(inner)[len(inner) // 2]:.0f} ms; " if inner else ""
            ) + f"{med[name] / med['%%step local hit, end to end']:.1f}x the local hit"
            if "pushed 1 entry" not in pushed:
                row.note += f"; alice's push: {pushed.strip()[:80]}"
            row.note += f"; first (live) run {live_s * 1e3:.0f} ms"
            if not (served and same):
                row.note += "; NOT SERVED FROM THE TEAM CACHE"
        rows.append(row)
    return rows


if __name__ == "__main__":
    main(run)
