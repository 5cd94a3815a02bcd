"""The team cache on a real redis-server: two kernels with their own working directories,
local stores and per-user keys share one Redis through a team key.

`make redis-deps` installs Debian's redis-server; each test starts its own on a free port
(no persistence) and stops it after. Skipped only when the binary is missing.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import socket
import subprocess
import sys
import time

import pytest
import redis
from boards import BOARD, MAKE
from entries import binding, entry
from kernels import free_port, wait_until
from teamkernels import (
    CHUNK,
    PREFIX,
    SHARED,
    RedisServer,
    key_of,
    make_kernel,
    needs_redis,
    planted_pickle,
    push,
    records,
    share,
    two_steps_kept_locally,
)

from resumable_cells.storage.entries import Value
from resumable_cells.storage.seal import OVERHEAD, Sealer

pytestmark = needs_redis


@pytest.fixture
def pair(tmp_path, redis_server, team_key):
    a = make_kernel(tmp_path, "alice", redis_server.url, team_key)
    b = make_kernel(tmp_path, "bob", redis_server.url, team_key)
    yield a, b
    a.shutdown()
    b.shutdown()


# -- sharing ------------------------------------------------------------------------------
def test_a_step_run_in_one_kernel_is_served_in_the_other_without_running(
    pair, redis_server, team_key, tmp_path
):
    a, b = pair
    assert a.value("__import__('os').getcwd()") != b.value("__import__('os').getcwd()")
    share(a, b)

    # The hit was copied into bob's store, signed with bob's key: it outlives the server.
    redis_server.kill()
    b.restart()
    b.ok("%load_ext resumable_cells\nimport os")
    third = b.ok(SHARED)
    assert third.status_lines()[0].startswith("step shared: served from cache in ")
    assert records(b)[-1] == ("shared", "hit", "local")
    assert b.value("ran_in") == a.value("ran_in")
    assert "unreachable" not in third.stderr  # a local hit never asks the server


def test_a_team_hit_shows_who_computed_it_and_the_server_it_came_from(pair, redis_server, tmp_path):
    a, b = pair
    load, total = "%%step load\ndf = list(range(100))", "%%step total\ns = sum(df)"
    a.ok(load)
    a.ok(total)
    assert "pushed 2 entries (" in push(a)
    df = a.value("__import__('resumable_cells').record()[0]['outputs'][0]['digest']")[:4]

    b.ok(load)
    assert b.ok(total).status_lines()[0].startswith("step total: served from team cache in ")
    why = b.ok("%step why total").stdout
    first = next(line for line in why.splitlines() if line.startswith("step total: computed"))
    assert re.fullmatch(
        rf"step total: computed by alice on alice-host, \d+ \w+ ago, from df@{df} \(load\), "
        rf"served from {re.escape(redis_server.url)}",
        first,
    ), why
    assert f"input df@{df} from step load (entry {key_of(a, 'load')[:12]})" in why

    b.wait_for_writes()
    cli = [
        sys.executable,
        "-m",
        "resumable_cells",
        "--dir",
        str(tmp_path / "bob" / ".resumable_cells"),
    ]
    shown = subprocess.run([*cli, "show"], capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    rows = [line for line in shown.stdout.splitlines() if " total " in line]
    assert len(rows) == 1 and rows[0].endswith(f"served from {redis_server.url}"), shown.stdout
    assert "computed by alice on alice-host" in rows[0] and "bob" not in rows[0]


# A board pickles as the parts that hold items (an empty part is gone after a round
# trip, as plotly's empty figure parts are), so in a kernel served `make`, `grow`'s
# references into the board lead nowhere: its entry is served from its by-value copy,
# a blob of its own (an array of 80 KB), which the team cache must carry too.
GROW_BIG = "%%step grow\nboard.part('x').items.append(np.arange(10_000))"
PROBE = "print(len(board.part('x').items), int(board.part('x').items[1].sum()))"


def test_an_entry_served_from_its_by_value_copy_is_served_from_the_team_cache(pair):
    a, b = pair
    for cell in ("import numpy as np", BOARD, MAKE, GROW_BIG):
        a.ok(cell)
    whole = a.value(
        "[e.unit.byvalue.value.inline is None for _, e in __import__('resumable_cells')"
        ".ipython.magics.current_engine().store.entries() if e.step == 'grow']"
    )
    assert whole == [True]  # the by-value copy is a blob file, not inline
    assert "pushed 2 entries (" in push(a)
    for cell in ("import numpy as np", BOARD, MAKE):
        b.ok(cell)
    served = b.ok(GROW_BIG)
    assert served.status_lines()[0].startswith("step grow: served from team cache in "), (
        served.status_lines()
    )
    assert b.ok(PROBE).stdout == a.ok(PROBE).stdout == "2 49995000\n"


def test_ls_remote_lists_steps_entries_and_sizes(pair, redis_server, team_key):
    a, _ = pair
    a.ok("%%step numbers\nnumbers = bytes(3_000_000)")
    assert re.search(r"pushed 1 entry \(\d blobs?, 2.9 MiB\)", push(a))
    a.ok("%%step copy\nsame = bytes(3_000_000)")  # the same value: its blob is not sent again
    assert "pushed 1 entry (0 blobs, 0 B)" in push(a)
    a.ok("%%step words\nwords = ['w'] * 10")
    push(a)
    env = {**os.environ, "RESUMABLE_CELLS_TEAM_KEY": team_key}
    out = subprocess.run(
        [sys.executable, "-m", "resumable_cells", "ls", "--remote", redis_server.url],
        capture_output=True, text=True, env=env, check=True,
    ).stdout  # fmt: skip
    rows = {line.split()[0]: line.split() for line in out.splitlines()[2:5]}
    assert set(rows) == {"numbers", "copy", "words"}, out
    assert rows["numbers"][1] == "1" and rows["numbers"][2:4] == ["2.9", "MiB"], out
    assert rows["copy"][2:4] == ["2.9", "MiB"], out
    assert "total 3 entries" in out
    env["RESUMABLE_CELLS_REMOTE"] = redis_server.url  # the URL from the environment
    out2 = subprocess.run(
        [sys.executable, "-m", "resumable_cells", "ls", "--remote"],
        capture_output=True, text=True, env=env, check=True,
    ).stdout  # fmt: skip
    assert out2 == out


def test_status_and_ls_show_the_team_cache_at_a_glance(pair, redis_server, team_key, tmp_path):
    a, _ = pair
    redis_server.client.config_set("maxmemory", 256 << 20)
    a.ok("%%step numbers\nnumbers = bytes(3_000_000)")
    a.ok("%%step words\nwords = ['w'] * 10")
    push(a)
    status = a.ok("%step status").result()
    url = re.escape(redis_server.url)
    assert re.search(
        rf"team cache {url}: \S+ \S+ of 256\.0 MiB \(server memory\), 2 entries", status
    )
    env = {**os.environ, "RESUMABLE_CELLS_TEAM_KEY": team_key,
           "RESUMABLE_CELLS_REMOTE": redis_server.url}  # fmt: skip
    store = tmp_path / "alice" / ".resumable_cells"
    out = subprocess.run(
        [sys.executable, "-m", "resumable_cells", "--dir", str(store), "ls"],
        capture_output=True, text=True, env=env, check=True,
    ).stdout  # fmt: skip
    assert re.search(rf"team cache {url}: .*, 2 entries", out), out
    redis_server.kill()
    assert f"team cache {redis_server.url}: unreachable" in a.ok("%step status").result()


def test_an_entry_whose_chunks_were_evicted_is_a_miss_and_is_uploaded_again(pair, redis_server):
    a, b = pair
    cell = "%%step numbers\nnumbers = bytes(3_000_000)"
    a.ok(cell)
    push(a)
    r = redis_server.client
    evicted = r.delete(*r.scan_iter(f"{PREFIX}chunk:*"))  # as a maxmemory policy would
    assert evicted >= 1
    reply = b.ok(cell)
    assert "ran in" in reply.status_lines()[0], reply.status_lines()
    assert "is gone from the team cache" in reply.stderr, reply.stderr
    assert re.search(r"pushed 1 entry \(\d blobs?, 2.9 MiB\)", push(b))  # sent again
    assert b.ok("%step clear --all").stdout
    served = b.ok(cell)
    assert "served from team cache" in served.status_lines()[0], served.status_lines()


# -- trust --------------------------------------------------------------------------------
def _plant_blob(r, name: str, payload: bytes, sealer: Sealer) -> None:
    meta = {"main": len(payload), "bufs": [], "upload": "ee" * 8, "size": len(payload),
            "chunk": CHUNK - OVERHEAD, "chunks": 1}  # fmt: skip
    r.set(f"{PREFIX}chunk:{name}:{'ee' * 8}:0", sealer.seal("blob", name, payload))
    r.set(f"{PREFIX}blob:{name}", sealer.seal("blobmeta", name, json.dumps(meta).encode()))


def test_tampered_or_planted_remote_entries_are_misses_and_never_unpickled(
    pair, redis_server, team_key, tmp_path
):
    a, b = pair
    marker, evil = planted_pickle(tmp_path)

    names = ["ok", "t1", "t2", "t3", "t4", "t5"]
    cells = {s: f"%%step {s}\n{s}_v = [{i}, {i + 1}]" for i, s in enumerate(names)}
    cells["t2"] = "%%step t2\nt2_v = bytes(10_000)"  # big enough for a blob of its own
    cells["t5"] = "%%step t5\nt5_v = bytes(20_000)"
    for c in cells.values():
        a.ok(c)
    assert "pushed 6 entries" in push(a)
    r = redis_server.client
    team = Sealer(bytes.fromhex(team_key))
    attacker = Sealer(secrets.token_bytes(32))
    entries = {s: f"{PREFIX}entry:{key_of(a, s)}" for s in names}
    plain = {s: json.loads(team.open("entry", key_of(a, s), r.get(k))) for s, k in entries.items()}

    # t1: one bit of a genuine entry flipped on the server.
    raw = bytearray(r.get(entries["t1"]))
    raw[-20] ^= 1
    r.set(entries["t1"], bytes(raw))
    # t2: a genuine entry whose blob was swapped for a malicious pickle (another key).
    _plant_blob(r, plain["t2"]["bindings"][0]["blob"], evil, attacker)
    # t3: a forged entry, sealed with another key, naming a malicious blob.
    forged = dict(plain["t3"])
    forged["bindings"] = [dict(forged["bindings"][0], blob="ff" * 16)]
    forged["bindings"][0].pop("inline", None)
    r.set(entries["t3"], attacker.seal("entry", key_of(a, "t3"), json.dumps(forged).encode()))
    _plant_blob(r, "ff" * 16, evil, attacker)
    # t4: the genuine sealed entry of another step copied under t4's key.
    r.set(entries["t4"], r.get(entries["ok"]))
    # t5: its blob's chunk replaced by a malicious pickle of the same length, sealed with
    # the team key but for another blob (trailing bytes after a pickle are ignored).
    chunk5 = next(r.scan_iter(f"{PREFIX}chunk:{plain['t5']['bindings'][0]['blob']}:*"))
    padded = evil.ljust(r.strlen(chunk5) - OVERHEAD, b"\0")
    r.set(chunk5, team.seal("blob", "ab" * 16, padded))

    served = b.ok(cells["ok"])
    assert "served from team cache" in served.status_lines()[0]  # the untouched one is shared
    why = {"t1": "fails the team key", "t2": "which is not configured here",
           "t3": "which is not configured here", "t4": "fails the team key",
           "t5": "fails the team key"}  # fmt: skip
    for step in ("t1", "t2", "t3", "t4", "t5"):
        reply = b.ok(cells[step])
        assert "ran in" in reply.status_lines()[0], (step, reply.status_lines())
        assert why[step] in reply.stderr, (step, reply.stderr)
        assert records(b)[-1] == (step, "live", None)
    assert not marker.exists()
    assert b.value("(t1_v, len(t2_v), t3_v, t4_v, len(t5_v))") == (
        [1, 2],
        10_000,
        [3, 4],
        [4, 5],
        20_000,
    )


# -- failure ------------------------------------------------------------------------------
def test_killing_redis_mid_push_keeps_both_stores_and_200mb_then_goes_through_in_chunks(
    pair, redis_server, team_key
):
    a, b = pair
    small = "%%step small\nnote = 'bob was here'"
    b.ok(small)
    assert "pushed 1 entry" in push(b)

    a.ok("import numpy as np")
    big = "%%step big\nx = np.arange(13_107_200, dtype=np.float64)\ny = x * 2"  # 2 x 100 MiB
    a.ok(big)  # returns while the push goes on in the background
    r = redis_server.client
    wait_until(lambda: next(r.scan_iter(f"{PREFIX}chunk:*", count=1000), None), 60, "a chunk")
    r.execute_command("CLIENT", "PAUSE", "60000", "WRITE")  # hold the push where it is
    big_key = key_of(a, "big")
    assert not r.exists(f"{PREFIX}entry:{big_key}"), "the push finished before the kill"
    redis_server.kill()

    t0 = time.monotonic()
    out = push(a)
    assert time.monotonic() - t0 < 10
    assert "pushed 0 entries" in out and "1 not pushed" in out and "unreachable" in out, out

    # Both local stores are intact: each serves its own step without the server.
    again = a.ok(big)
    assert again.status_lines()[0].startswith("step big: served from cache")
    sums = a.value("(float(x.sum()), float(y.sum()), x.shape)")
    assert sums[2] == (13_107_200,)
    assert b.ok(small).status_lines()[0].startswith("step small: served from cache")
    assert b.value("note") == "bob was here"

    redis_server.start()  # the same port, empty: the next push sends everything
    out = push(a)
    sent = re.search(r"pushed 1 entry \((\d+) blobs, ([\d.]+) MiB\)", out)
    assert sent and int(sent[1]) >= 2 and float(sent[2]) >= 200, out
    assert "not pushed" not in out, out

    team = Sealer(bytes.fromhex(team_key))
    metas = {
        k.decode(): json.loads(team.open("blobmeta", k.decode().rsplit(":", 1)[1], r.get(k)))
        for k in r.scan_iter(f"{PREFIX}blob:*")
    }
    chunks = [k.decode() for k in r.scan_iter(f"{PREFIX}chunk:*", count=1000)]
    lengths = [r.strlen(k) for k in chunks]
    assert sum(m["size"] for m in metas.values()) >= 200 * (1 << 20)
    assert max(lengths) <= CHUNK and len(chunks) >= 26
    for name, m in metas.items():
        mine = [k for k in chunks if k.startswith(name.replace(":blob:", ":chunk:") + ":")]
        assert len(mine) == m["chunks"] == -(-m["size"] // (CHUNK - OVERHEAD))
        assert sum(r.strlen(k) for k in mine) == m["size"] + OVERHEAD * len(mine)
    assert r.ttl(chunks[0]) == -1  # committed chunks do not expire

    b.ok("import numpy as np")
    served = b.ok(big)
    assert records(b)[-1] == ("big", "hit", "remote"), served.status_lines()
    assert b.value("(float(x.sum()), float(y.sum()), x.shape)") == sums


def test_a_remote_that_is_down_or_silent_never_holds_a_cell_and_is_picked_up_when_back(
    tmp_path, team_key
):
    port = free_port()
    # A silent server: accepts connections (the kernel's backlog) but never answers.
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)
    silent_url = f"redis://127.0.0.1:{silent.getsockname()[1]}/0"
    k = make_kernel(tmp_path, "carol", silent_url, team_key)
    try:
        t0 = time.monotonic()
        first = k.ok("%%step s1\nv1 = 1")
        assert time.monotonic() - t0 < 3.5  # one socket timeout (1 s), not more
        assert "ran in" in first.status_lines()[0]
        assert first.stderr.count("unreachable") == 1, first.stderr

        k.ok(f"%step config --remote redis://127.0.0.1:{port}/0")  # nothing listens there
        errs = first.stderr
        for i in range(2, 6):
            t0 = time.monotonic()
            reply = k.ok(f"%%step s{i}\nv{i} = {i}")
            assert time.monotonic() - t0 < 2.5
            assert "ran in" in reply.status_lines()[0]
            errs += reply.stderr
        assert errs.count("unreachable") == 1, errs  # one warning per kernel

        server = RedisServer(port, tmp_path / "redis.log")
        server.start()
        try:
            out = push(k)
            assert "pushed 4 entries" in out and "not pushed" not in out, out
            assert len(list(server.client.scan_iter(f"{PREFIX}entry:*"))) == 4
            assert f"team cache redis://127.0.0.1:{port}/0 (up)" in k.ok("%step config").stdout
        finally:
            server.stop()
        assert "team cache: none" in k.ok("%step config --remote none").stdout
        bad = k.run("%step config --remote http://example.org/")
        assert bad.status == "error" and "not a Redis URL" in bad.error["evalue"]
    finally:
        k.shutdown()
        silent.close()


def test_a_server_refusing_us_is_a_warning_then_push_all_sends_everything(tmp_path, team_key):
    port = free_port()
    server = RedisServer(port, tmp_path / "redis.log")
    server.client = redis.Redis(port=port, password="sesame", socket_timeout=5)
    server.start_args = ["--requirepass", "sesame"]
    server.start()
    k = make_kernel(tmp_path, "dave", f"redis://127.0.0.1:{port}/0", team_key)  # no password
    try:
        two_steps_kept_locally(k, "authenticat")
        # Reconfigured with the password, `--all` pushes every local entry it lacks.
        k.ok(f"%step config --remote redis://:sesame@127.0.0.1:{port}/0")
        out = k.ok("%step push --all").stdout
        assert "pushed 2 entries" in out and "not pushed" not in out, out
        assert len(list(server.client.scan_iter(f"{PREFIX}entry:*"))) == 2
    finally:
        k.shutdown()
        server.stop()


def test_a_hit_slower_than_running_the_step_is_abandoned_without_a_partial_file(
    redis_server, team_key, tmp_path, monkeypatch
):
    from resumable_cells.storage import teamtier as remote
    from resumable_cells.storage.redis.tier import RedisTier
    from resumable_cells.storage.store import Store

    monkeypatch.setenv("RESUMABLE_CELLS_TEAM_KEY", team_key)
    theirs, mine = Store(tmp_path / "theirs"), Store(tmp_path / "mine")
    name = "ab" * 16
    theirs.put_blob(name, bytes(40 << 20))  # 40 MiB and a few bytes of pickle: 6 chunks
    theirs.put_entry("k" * 32, entry(theirs, "quick", [binding("v", Value(name))], 0.001))
    tier = RedisTier(redis_server.url)
    assert tier.push_entry(theirs, "k" * 32)
    assert len(list(redis_server.client.scan_iter(f"{PREFIX}chunk:{name}:*"))) == 6

    monkeypatch.setattr(remote, "MIN_FETCH_S", 0.0)  # the budget: twice 1 ms
    assert tier.lookup("k" * 32, mine) is None
    assert [p for p in mine.blob_dir.rglob("*") if p.is_file()] == []
    assert mine.get_entry("k" * 32) is None

    monkeypatch.setattr(remote, "MIN_FETCH_S", 60.0)
    assert tier.lookup("k" * 32, mine).step == "quick"
    assert mine.get_blob(name) == bytes(40 << 20)
