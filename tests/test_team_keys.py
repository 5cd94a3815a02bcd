"""The team key on a real redis-server, between real kernels with their own stores: a
wrong key or none is a miss that says why (never an error in the cell), nothing on the
server reads without the key, and a rotation keeps old entries readable until
`resumable-cells reencrypt` has sealed them again under the new key.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys

import pytest
from teamkernels import PREFIX, make_kernel, needs_redis, push, records

from resumable_cells.errors import SealError
from resumable_cells.storage.seal import Sealer

pytestmark = needs_redis
BIG = "%%step big\nbig = b'needle-in-the-blob' * 200_000\nprint('made', len(big))"
SMALL = "%%step small\nsmall = {'word': 'needle-in-the-entry'}"


@pytest.fixture
def alice(tmp_path, redis_server, team_key):
    k = make_kernel(tmp_path, "alice", redis_server.url, team_key)
    yield k
    k.shutdown()


@pytest.fixture
def others(tmp_path, redis_server):
    """make(name, team key, **env): more kernels on the same server, shut down after."""
    made = []

    def make(name: str, key: str, **env: str):
        made.append(make_kernel(tmp_path, name, redis_server.url, key, **env))
        return made[-1]

    yield make
    for k in made:
        k.shutdown()


def _pushed_both(alice) -> None:
    alice.ok(BIG)
    alice.ok(SMALL)
    assert "pushed 2 entries (" in push(alice)


def _values(redis_server) -> dict[str, bytes]:
    r = redis_server.client
    return {k.decode(): r.get(k) for k in r.scan_iter(f"{PREFIX}*", count=1000)}


def _reencrypt(redis_server, **env: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "RESUMABLE_CELLS_REMOTE": redis_server.url, **env}
    return subprocess.run(
        [sys.executable, "-m", "resumable_cells", "reencrypt"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip


def test_a_wrong_team_key_is_a_miss_that_says_so_and_the_server_reads_as_noise(
    alice, others, redis_server
):
    _pushed_both(alice)
    values = _values(redis_server)
    assert values and not any(b"needle" in v for v in values.values())  # sealed, all of it

    bob = others("bob", secrets.token_hex(32))
    for cell in (BIG, SMALL):
        reply = bob.ok(cell)
        assert "ran in" in reply.status_lines()[0], reply.status_lines()
        assert "is sealed with team key" in reply.stderr, reply.stderr
        assert "not configured here" in reply.stderr and "RESUMABLE_CELLS_TEAM_KEY" in reply.stderr
        assert records(bob)[-1][1:] == ("live", None)
    assert bob.value("(len(big), small)") == (3_600_000, {"word": "needle-in-the-entry"})
    # What bob pushes (under his key) does not replace alice's: she is still served.
    bob.ok("%%step third\nthird = 3")
    assert "pushed 1 entry" in push(bob)
    alice.ok("%step clear --all")
    assert "served from team cache" in alice.ok(SMALL).status_lines()[0]


def test_a_kernel_without_the_team_key_neither_reads_nor_writes_and_says_why(
    alice, others, redis_server
):
    _pushed_both(alice)
    before = _values(redis_server)
    carol = others("carol", "")
    first = carol.ok(BIG)
    assert "ran in" in first.status_lines()[0], first.status_lines()
    assert "is off: set RESUMABLE_CELLS_TEAM_KEY" in first.stderr, first.stderr
    assert "ran in" in carol.ok(SMALL).status_lines()[0]
    assert "nothing pushed" in carol.ok("%step push --all").stdout
    assert "(no team key)" in carol.ok("%step config").stdout
    assert _values(redis_server) == before  # nothing planted, nothing replaced


def test_rotation_reads_old_entries_with_the_previous_key_and_reencrypt_lets_it_go(
    alice, others, redis_server, team_key
):
    _pushed_both(alice)
    new = secrets.token_hex(32)
    rotated = {"RESUMABLE_CELLS_TEAM_KEY": new, "RESUMABLE_CELLS_TEAM_KEY_PREVIOUS": team_key}

    # A kernel that has the new key and the old one reads what the old key sealed.
    bob = others("bob", new, RESUMABLE_CELLS_TEAM_KEY_PREVIOUS=team_key)
    served = bob.ok(BIG)
    assert served.status_lines()[0].startswith("step big: served from team cache"), served.stderr
    assert bob.value("(big[:18].decode(), len(big))") == ("needle-in-the-blob", 3_600_000)
    bob.ok("%%step newer\nnewer = 'sealed with the new key'")
    assert "pushed 1 entry" in push(bob)

    # Without the old key, re-encrypting cannot open them: it says so and fails.
    alone = _reencrypt(redis_server, RESUMABLE_CELLS_TEAM_KEY=new)
    assert alone.returncode == 1, alone.stdout + alone.stderr
    assert "not configured here" in alone.stdout and "previous team key" in alone.stderr

    done = _reencrypt(redis_server, **rotated)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "re-encrypted 2 entries and 1 blob (3.4 MiB)" in done.stdout, done.stdout
    assert "1 already under it" in done.stdout, done.stdout  # bob's entry

    # Everything now opens under the new key alone, and nothing under the old one.
    only_new, only_old = Sealer(bytes.fromhex(new)), Sealer(bytes.fromhex(team_key))
    for name, raw in _values(redis_server).items():
        kind, ident = name.split(":")[2], name.split(":")[3]
        if kind == "chunk":  # the old upload's chunks are left to expire, for readers
            retired = redis_server.client.ttl(name) > 0
            assert only_new.sealed_with_current(raw) != retired, name
            continue
        sealed_as = {"entry": "entry", "blob": "blobmeta"}[kind]
        assert json.loads(only_new.open(sealed_as, ident, raw))
        with pytest.raises(SealError, match="not configured here"):
            only_old.open(sealed_as, ident, raw)

    # The old key can go: a kernel with only the new key is served the old steps.
    dave = others("dave", new)
    for cell, step in ((BIG, "big"), (SMALL, "small")):
        reply = dave.ok(cell)
        assert reply.status_lines()[0].startswith(f"step {step}: served from team cache"), (
            reply.status_lines(),
            reply.stderr,
        )
    assert dave.value("(big[-18:].decode(), small['word'])") == (
        "needle-in-the-blob",
        "needle-in-the-entry",
    )
    again = _reencrypt(redis_server, RESUMABLE_CELLS_TEAM_KEY=new)
    assert again.returncode == 0 and "re-encrypted 0 entries and 0 blobs" in again.stdout
