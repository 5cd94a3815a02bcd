"""The team cache in a bucket: two kernels with their own working directories, local
stores and per-user keys share one bucket through a team key, on a real S3 server
(moto's standalone server, which the test extra installs) and on a shared folder.

Each test starts its own server on a free port and stops it after; killing it is a
SIGKILL at a condition seen on the server (an upload begun) or on disk (a download
begun), never after a sleep. Without write permission, the server runs with IAM
checks on (moto's INITIAL_NO_AUTH_ACTION_COUNT: the setup's calls go unchecked, then
every request is checked against the caller's IAM policy).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import boto3  # the test extra has it (with moto): a missing client is an error
import pytest
import teamkernels as team
from kernels import Kernel, free_port, wait_until

from resumable_cells.storage.seal import Sealer

BUCKET = "team-cache"
BIG = "%%step big\nx = np.arange(13_107_200, dtype=np.float64)\ny = x * 2"  # 2 x 100 MiB
SUMS = "(float(x.sum()), float(y.sum()), x.shape)"


class S3Server(team.ServerProcess):
    """moto's S3 server on 127.0.0.1:port (everything in its memory)."""

    def __init__(self, port: int, log: Path, setup_calls: int = 0):
        self.port = port
        self.log = log
        self.endpoint = f"http://127.0.0.1:{port}"
        self.setup_calls = setup_calls  # unchecked calls before IAM checks start
        self.proc: subprocess.Popen | None = None
        self.creds = ("admin", "admin")  # any, until IAM checks start

    def client(self, service: str = "s3"):
        return boto3.client(
            service, endpoint_url=self.endpoint, region_name="us-east-1",
            aws_access_key_id=self.creds[0], aws_secret_access_key=self.creds[1],
        )  # fmt: skip

    def start(self) -> None:
        env = dict(os.environ)
        if self.setup_calls:
            env["INITIAL_NO_AUTH_ACTION_COUNT"] = str(self.setup_calls)
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                stdout=log, stderr=subprocess.STDOUT, env=env,
            )  # fmt: skip
        wait_until(self._listening, 60, f"the S3 server on port {self.port}")

    def _listening(self) -> bool:
        assert self.proc.poll() is None, f"the S3 server exited: {self.log.read_text()[-2000:]}"
        import socket

        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", self.port)) == 0

    def keys(self) -> list[str]:
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=BUCKET)
        return [o["Key"] for page in pages for o in page.get("Contents", [])]


@pytest.fixture
def s3(tmp_path):
    server = S3Server(free_port(), tmp_path / "s3.log")
    server.start()
    server.client().create_bucket(Bucket=BUCKET)
    yield server
    server.stop()


def s3_env(s3: S3Server, creds: tuple[str, str] = ("admin", "admin")) -> dict:
    """Credentials from the environment, as a user's would be."""
    return {
        "AWS_ENDPOINT_URL": s3.endpoint, "AWS_ALLOW_HTTP": "true", "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": creds[0], "AWS_SECRET_ACCESS_KEY": creds[1],
    }  # fmt: skip


@pytest.fixture
def pair(tmp_path, s3, team_key):
    url = f"s3://{BUCKET}/notebooks/demo"
    a = team.make_kernel(tmp_path, "alice", url, team_key, **s3_env(s3))
    b = team.make_kernel(tmp_path, "bob", url, team_key, **s3_env(s3))
    yield a, b
    a.shutdown()
    b.shutdown()


# -- sharing ------------------------------------------------------------------------------
def test_two_kernels_share_one_bucket_and_a_hit_is_kept_locally(pair, s3):
    a, b = pair
    team.share(a, b)
    keys = s3.keys()
    prefix = "notebooks/demo/rc2/"
    assert all(k.startswith(prefix) for k in keys), keys
    entries = [k for k in keys if k.startswith(prefix + "entry/")]
    heads = [k for k in keys if k.startswith(prefix + "head/")]
    bodies = [k for k in keys if k.startswith(prefix + "blob/")]
    assert len(entries) == 2 and len(heads) == len(bodies) >= 1, keys
    assert "team cache s3://team-cache/notebooks/demo (up" in a.ok("%step config").stdout

    # The hit was copied into bob's store, signed with bob's key: it outlives the server.
    s3.kill()
    b.restart()
    b.ok("%load_ext resumable_cells\nimport os")
    third = b.ok(team.SHARED)
    assert third.status_lines()[0].startswith("step shared: served from cache in ")
    assert team.records(b)[-1] == ("shared", "hit", "local")
    assert "unreachable" not in third.stderr  # a local hit never asks the server


def test_a_shared_folder_works_too(tmp_path, team_key):
    folder = tmp_path / "shared folder"
    url = f"file://{folder}"
    a = team.make_kernel(tmp_path, "alice", url, team_key)
    b = team.make_kernel(tmp_path, "bob", url, team_key)
    try:
        team.share(a, b)
        names = sorted(p.relative_to(folder).parts[:2] for p in folder.rglob("*") if p.is_file())
        assert ("rc2", "entry") in names and ("rc2", "head") in names, names
        env = {**os.environ, "RESUMABLE_CELLS_TEAM_KEY": team_key}
        out = subprocess.run(
            [sys.executable, "-m", "resumable_cells", "ls", "--remote", url],
            capture_output=True, text=True, env=env, check=True,
        ).stdout  # fmt: skip
        rows = {line.split()[0]: line.split() for line in out.splitlines()[2:4]}
        assert set(rows) == {"shared", "copy"}, out
        assert rows["shared"][1:4] == rows["copy"][1:4] == ["1", "2.9", "MiB"], out
        assert "total 2 entries, 1 blob" in out, out
        status = a.ok("%step status").result()
        want = rf"team cache {re.escape(url)}: [\d.]+ MiB \(no limit\) \(objects\), 2 entries"
        assert re.search(want, status), status
    finally:
        a.shutdown()
        b.shutdown()


def test_a_large_value_goes_up_in_parts_and_comes_down_whole(pair, s3):
    a, b = pair
    a.ok("import numpy as np")
    a.ok(BIG)
    sent = re.search(r"pushed 1 entry \((\d+) blobs, ([\d.]+) MiB\)", team.push(a))
    assert sent and float(sent[2]) >= 200, sent
    c = s3.client()
    bodies = [k for k in s3.keys() if "/rc2/blob/" in k]
    parts = [c.head_object(Bucket=BUCKET, Key=k, PartNumber=1) for k in bodies]
    assert max(int(p["PartsCount"]) for p in parts) >= 12  # 100 MiB in 8 MiB parts
    b.ok("import numpy as np")
    b.ok(BIG)
    assert team.records(b)[-1] == ("big", "hit", "remote")
    assert b.value(SUMS) == a.value(SUMS)


# -- failures -----------------------------------------------------------------------------
def test_killing_the_server_mid_upload_leaves_no_entry_and_the_push_goes_through_later(pair, s3):
    a, b = pair
    a.ok("import numpy as np")
    a.ok(BIG)  # returns while the push goes on in the background
    c = s3.client()
    wait_until(lambda: c.list_multipart_uploads(Bucket=BUCKET).get("Uploads"), 60, "an upload")
    big_key = team.key_of(a, "big")
    assert not any(k.endswith(f"/entry/{big_key}") for k in s3.keys()), "pushed before the kill"
    s3.kill()

    out = team.push(a)
    assert "pushed 0 entries" in out and "1 not pushed" in out and "unreachable" in out, out
    again = a.ok(BIG)  # the local store is intact
    assert again.status_lines()[0].startswith("step big: served from cache")

    s3.start()  # the same port, empty (moto keeps nothing): the next push sends it all
    s3.client().create_bucket(Bucket=BUCKET)
    b.ok("import numpy as np")
    missed = b.ok(BIG)  # nothing partial was served: bob runs it
    assert "ran in" in missed.status_lines()[0], missed.status_lines()
    out = team.push(a)
    assert "pushed 1 entry" in out and "not pushed" not in out, out
    assert any(k.endswith(f"/entry/{big_key}") for k in s3.keys())
    assert "not pushed" not in team.push(b)  # bob's own push of it, begun when he ran it
    assert c.list_multipart_uploads(Bucket=BUCKET).get("Uploads", []) == []  # none left open


# A value whose digest reached the notebook's own code (its class) is read on the hit;
# arrays are restored lazily, their bytes fetched when first read.
EAGER = (
    "%%step boxed\nclass Box:\n    pass\nbox = Box()\n"
    "box.data = np.arange(26_214_400, dtype=np.float64)"  # 200 MiB
)


def lazy_flags(k: Kernel, step: str) -> list:
    k.wait_for_writes()
    return k.value(
        "[b.lazy is not None for _, e in __import__('resumable_cells').ipython.magics"
        f".current_engine().store.entries() if e.step == {step!r} for b in e.bindings]"
    )


def test_killing_the_server_mid_download_runs_the_step_and_says_why(pair, s3, tmp_path):
    a, b = pair
    a.ok("import numpy as np")
    a.ok(EAGER)
    assert lazy_flags(a, "boxed") == [False, False]  # Box, box: read on the hit
    assert "pushed 1 entry" in team.push(a)
    total = a.value("float(box.data.sum())")

    b.ok("import numpy as np")
    blobs = tmp_path / "bob" / ".resumable_cells"
    msg = b.submit(EAGER)
    wait_until(lambda: any(blobs.rglob(".*.tmp")), 60, "a blob being downloaded")
    s3.kill()
    reply = b.collect(msg)
    assert reply.status == "ok"
    assert "ran in" in reply.status_lines()[0], reply.status_lines()
    assert "unreachable" in reply.stderr, reply.stderr
    assert team.records(b)[-1][:2] == ("boxed", "live")
    assert b.value("float(box.data.sum())") == total
    b.wait_for_writes()  # its own values, written behind
    assert not list(blobs.rglob(".*.tmp"))  # no partial file left behind


def test_a_value_restored_lazily_comes_from_the_bucket_only_when_read(pair, s3, tmp_path):
    a, b = pair
    a.ok("import numpy as np")
    a.ok(BIG)
    assert lazy_flags(a, "big") == [True, True]
    assert "pushed 1 entry" in team.push(a)
    sums = a.value(SUMS)
    a.ok(BIG.replace("big", "big2").replace("x * 2", "x * 3"))  # same x: one blob
    assert "pushed 1 entry (1 blob" in team.push(a)

    def local_bytes() -> int:
        store = tmp_path / "bob" / ".resumable_cells" / "blobs"
        return sum(p.stat().st_size for p in store.rglob("*") if p.is_file())

    b.ok("import numpy as np")
    served = b.ok(BIG)
    assert served.status_lines()[0].startswith("step big: served from team cache in ")
    assert local_bytes() < 1 << 20  # the entry, not its 200 MiB
    assert b.value("float(x[:10].sum())") == 45.0  # x is read: its blob comes down
    assert 100 << 20 < local_bytes() < 150 << 20
    assert b.value(SUMS) == sums
    assert local_bytes() > 200 << 20

    # The server killed once the read of a value has begun: the cell that reads it is
    # refused, saying which step to run again; run again, the step runs.
    b.ok(BIG.replace("big", "big2").replace("x * 2", "x * 3"))
    blobs = tmp_path / "bob" / ".resumable_cells"
    msg = b.submit("print(float(y.sum()))")
    wait_until(lambda: any(blobs.rglob(".*.tmp")), 60, "a blob being downloaded")
    s3.kill()
    reply = b.collect(msg)
    assert reply.status == "error"
    assert "run step big2 again" in reply.error["evalue"], reply.error["evalue"]
    again = b.ok(BIG.replace("big", "big2").replace("x * 2", "x * 3"))
    assert "ran in" in again.status_lines()[0], again.status_lines()
    assert b.value("float(y[:3].sum())") == 9.0


def _read_only_keys(s3: S3Server) -> tuple[tuple[str, str], tuple[str, str]]:
    """(writer, reader) credentials: s3:* on the bucket, and only reading it."""
    iam = s3.client("iam")
    creds = []
    for user, actions in (("writer", ["s3:*"]), ("reader", ["s3:GetObject", "s3:ListBucket"])):
        iam.create_user(UserName=user)
        policy = {"Version": "2012-10-17", "Statement": [{
            "Effect": "Allow", "Action": actions,
            "Resource": [f"arn:aws:s3:::{BUCKET}", f"arn:aws:s3:::{BUCKET}/*"],
        }]}  # fmt: skip
        iam.put_user_policy(UserName=user, PolicyName="team", PolicyDocument=json.dumps(policy))
        key = iam.create_access_key(UserName=user)["AccessKey"]
        creds.append((key["AccessKeyId"], key["SecretAccessKey"]))
    return creds[0], creds[1]


def test_without_write_permission_the_tier_is_read_only_and_nothing_is_lost(tmp_path, team_key):
    s3 = S3Server(free_port(), tmp_path / "s3.log", setup_calls=7)  # the calls below
    s3.start()
    s3.client().create_bucket(Bucket=BUCKET)
    writer, reader = _read_only_keys(s3)
    s3.creds = writer
    url = f"s3://{BUCKET}/ro"
    a = team.make_kernel(tmp_path, "alice", url, team_key, **s3_env(s3, writer))
    b = team.make_kernel(tmp_path, "bob", url, team_key, **s3_env(s3, reader))
    try:
        team.share(a, b)  # bob may read: he is served what alice pushed

        mine = b.ok("%%step mine\nnote = 'bob was here' * 100_000")
        assert "ran in" in mine.status_lines()[0]
        out = team.push(b)
        assert "pushed 0 entries" in out and "read-only" in out, out
        assert "read-only" in b.ok("%step config").stdout
        assert not any("/entry/" + team.key_of(b, "mine") in k for k in s3.keys())
        b.ok("%%step later\nother = 2")  # said once: no warning on every step
        assert "read-only" not in b.ok("%%step later2\nother2 = 3").stderr

        b.restart()  # nothing lost: bob's own entry is in his store
        b.ok("%load_ext resumable_cells")
        again = b.ok("%%step mine\nnote = 'bob was here' * 100_000")
        assert again.status_lines()[0].startswith("step mine: served from cache in ")
    finally:
        a.shutdown()
        b.shutdown()
        s3.stop()


def test_a_bucket_that_does_not_exist_is_said_once_then_used_once_made(s3, tmp_path, team_key):
    url = "s3://not-made-yet/cache"
    k = team.make_kernel(tmp_path, "carol", url, team_key, **s3_env(s3))
    try:
        team.two_steps_kept_locally(k, "does not exist")
        s3.client().create_bucket(Bucket="not-made-yet")
        out = team.push(k)
        assert "pushed 2 entries" in out and "not pushed" not in out, out
    finally:
        k.shutdown()


# -- sealing ------------------------------------------------------------------------------
PREFIX = "notebooks/demo/rc2/"


def test_everything_in_the_bucket_is_sealed_and_a_wrong_key_is_a_miss_that_says_so(
    pair, s3, tmp_path
):
    a, _ = pair
    a.ok("%%step secret\nsecret = 'needle-in-the-value' * 1000")
    assert "pushed 1 entry" in team.push(a)
    c = s3.client()
    stored = [c.get_object(Bucket=BUCKET, Key=k)["Body"].read() for k in s3.keys()]
    assert len(stored) == 3 and all(raw.startswith(b"rcs\x01") for raw in stored)
    assert not any(b"needle" in raw or b"secret" in raw for raw in stored)

    carol = team.make_kernel(
        tmp_path, "carol", f"s3://{BUCKET}/notebooks/demo", secrets.token_hex(32), **s3_env(s3)
    )
    try:
        reply = carol.ok("%%step secret\nsecret = 'needle-in-the-value' * 1000")
        assert "ran in" in reply.status_lines()[0], reply.status_lines()
        assert "is sealed with team key" in reply.stderr, reply.stderr
        assert "not configured here" in reply.stderr and "RESUMABLE_CELLS_TEAM_KEY" in reply.stderr
        assert team.records(carol)[-1][1:] == ("live", None)
        assert carol.value("len(secret)") == 19_000
    finally:
        carol.shutdown()


def test_a_kernel_without_the_team_key_neither_reads_nor_writes_the_bucket(pair, s3, tmp_path):
    a, _ = pair
    a.ok("%%step one\nv = bytes(50_000)")
    assert "pushed 1 entry" in team.push(a)
    before = sorted(s3.keys())
    dave = team.make_kernel(tmp_path, "dave", f"s3://{BUCKET}/notebooks/demo", "", **s3_env(s3))
    try:
        first = dave.ok("%%step one\nv = bytes(50_000)")
        assert "ran in" in first.status_lines()[0], first.status_lines()
        assert "is off: set RESUMABLE_CELLS_TEAM_KEY" in first.stderr, first.stderr
        assert "is off" not in dave.ok("%%step two\nw = 2").stderr  # said once
        assert "nothing pushed" in dave.ok("%step push --all").stdout
        assert "(no team key)" in dave.ok("%step config").stdout
        assert sorted(s3.keys()) == before  # nothing planted, nothing replaced
    finally:
        dave.shutdown()


def test_a_hit_from_the_bucket_says_it_was_served_from_its_url(pair, s3):
    a, b = pair
    a.ok("%%step load\ndf = list(range(100))")
    assert "pushed 1 entry" in team.push(a)
    assert (
        b.ok("%%step load\ndf = list(range(100))")
        .status_lines()[0]
        .startswith("step load: served from team cache in ")
    )
    why = b.ok("%step why load").stdout
    assert re.search(
        r"step load: computed by alice on alice-host, \d+ \w+ ago, "
        r"served from s3://team-cache/notebooks/demo\b",
        why,
    ), why


def test_tampered_swapped_or_planted_objects_are_misses_and_never_unpickled(
    pair, s3, team_key, tmp_path
):
    a, b = pair
    marker, evil = team.planted_pickle(tmp_path)

    cells = {
        "ok": "%%step ok\nok_v = [1, 2]",
        "t1": "%%step t1\nt1_v = [2, 3]",
        "t2": "%%step t2\nt2_v = bytes(10_000)",  # big enough for a blob of its own
        "t3": "%%step t3\nt3_v = [3, 4]",
        "t4": "%%step t4\nt4_v = bytes(30_000)",
        "t5": "%%step t5\nt5_v = b'\\x01' * 30_000",  # the same size as t4's
        # three frames, read at the hit (its class is the notebook's)
        "t6": "%%step t6\nclass Box:\n    pass\nt6_v = Box()\nt6_v.data = bytes(20_000_000)",
        "t7": "%%step t7\nt7_v = bytes(20_000_000)",  # the same, restored lazily
        "t8": "%%step t8\nclass Crate:\n    pass\nt8_v = Crate()\nt8_v.data = bytes(20_000_001)",
    }
    for cell in cells.values():
        a.ok(cell)
    assert "pushed 9 entries" in team.push(a)
    c = s3.client()
    sealer = Sealer(bytes.fromhex(team_key))

    def entry_path(step: str) -> str:
        return f"{PREFIX}entry/{team.key_of(a, step)}"

    def read(path: str) -> bytes:
        return c.get_object(Bucket=BUCKET, Key=path)["Body"].read()

    def write(path: str, data: bytes) -> None:
        c.put_object(Bucket=BUCKET, Key=path, Body=data)

    def body_path(step: str) -> str:
        plain = json.loads(sealer.open("entry", team.key_of(a, step), read(entry_path(step))))
        (name,) = [b["blob"] for b in plain["bindings"] if b["name"] == f"{step}_v"]
        (path,) = [k for k in s3.keys() if k.startswith(f"{PREFIX}blob/{name}/")]
        return path

    # t1: one bit of a genuine entry flipped in the bucket.
    raw = bytearray(read(entry_path("t1")))
    raw[-20] ^= 1
    write(entry_path("t1"), bytes(raw))
    # t2: its body replaced by a malicious pickle of the same length.
    body = read(body_path("t2"))
    write(body_path("t2"), evil.ljust(len(body), b"\0"))
    # t3: the genuine sealed entry of another step copied under t3's key.
    write(entry_path("t3"), read(entry_path("ok")))
    # t4: its body swapped for t5's, genuine and of the same length.
    write(body_path("t4"), read(body_path("t5")))
    # t6, t7: their bodies' last two frames swapped (a part moved).
    frame = 8 << 20
    for step in ("t6", "t7"):
        body = read(body_path(step))
        write(body_path(step), body[:frame] + body[2 * frame :] + body[frame : 2 * frame])
    # t8: its body cut after the first frame (the upload's later parts lost).
    write(body_path("t8"), read(body_path("t8"))[:frame])

    for step in ("ok", "t5"):  # the untouched ones are shared
        assert "served from team cache" in b.ok(cells[step]).status_lines()[0], step
    for step in ("t1", "t2", "t3", "t4", "t6", "t8"):
        reply = b.ok(cells[step])
        assert "ran in" in reply.status_lines()[0], (step, reply.status_lines())
        assert "fails the team key" in reply.stderr or "damaged" in reply.stderr, (
            step,
            reply.stderr,
        )
        assert team.records(b)[-1] == (step, "live", None)
    # A value restored lazily whose body does not open: the cell that reads it is
    # refused, naming the step to run again; run again, the step runs.
    assert "served from team cache" in b.ok(cells["t7"]).status_lines()[0]
    refused = b.run("len(t7_v)")
    assert refused.status == "error" and "run step t7 again" in refused.error["evalue"], (
        refused.error
    )
    again = b.ok(cells["t7"])  # not served again: it would be refused again
    assert "ran in" in again.status_lines()[0] and "failed the team key" in again.stderr, (
        again.stderr
    )
    assert not marker.exists()
    assert b.value(
        "(t1_v, len(t2_v), t3_v, t4_v == bytes(30_000), len(t6_v.data), len(t8_v.data))"
    ) == (
        [2, 3],
        10_000,
        [3, 4],
        True,
        20_000_000,
        20_000_001,
    )


def test_reencrypt_seals_the_bucket_again_under_a_new_key(pair, s3, team_key, tmp_path):
    a, _ = pair
    a.ok("%%step small\nsmall = [1, 2, 3]")
    a.ok("%%step large\nlarge = bytes(20_000_000)")  # three frames
    assert "pushed 2 entries" in team.push(a)
    before = set(s3.keys())
    new = secrets.token_hex(32)
    url = f"s3://{BUCKET}/notebooks/demo"
    env = {
        **os.environ, **s3_env(s3), "RESUMABLE_CELLS_REMOTE": url,
        "RESUMABLE_CELLS_TEAM_KEY": new, "RESUMABLE_CELLS_TEAM_KEY_PREVIOUS": team_key,
    }  # fmt: skip
    cli = [sys.executable, "-m", "resumable_cells", "reencrypt"]
    done = subprocess.run(cli, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "re-encrypted 2 entries and 1 blob" in done.stdout, done.stdout
    again = subprocess.run(cli, capture_output=True, text=True, env=env, timeout=300)
    assert "re-encrypted 0 entries and 0 blobs" in again.stdout, again.stdout

    c, sealer = s3.client(), Sealer(bytes.fromhex(new))
    keys = s3.keys()
    assert len(keys) == len(before) and set(keys) != before  # a new body, the old gone
    for k in keys:
        assert sealer.sealed_with_current(c.get_object(Bucket=BUCKET, Key=k)["Body"].read()), k

    erin = team.make_kernel(tmp_path, "erin", url, new, **s3_env(s3))  # the new key alone
    try:
        for cell in ("%%step small\nsmall = [1, 2, 3]", "%%step large\nlarge = bytes(20_000_000)"):
            assert "served from team cache" in erin.ok(cell).status_lines()[0], cell
        assert erin.value("(small, len(large))") == ([1, 2, 3], 20_000_000)
    finally:
        erin.shutdown()
