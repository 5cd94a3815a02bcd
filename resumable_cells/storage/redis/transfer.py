"""Copying one blob between the local store and the team cache, checked on the way.

Pull: the chunks stream into a new local blob file while their digests under the team
key are checked and those under the user's key computed; the file is signed with the
user's key and renamed into place only once all of it checked out, so nothing that
fails the team key is ever unpickled. Push: a local blob, checked under the user's key
while it is read, goes up in chunks; its header is set after them, by `wire.COMMIT`,
only while every chunk is still there. A blob whose header is there is not sent again.
"""

from __future__ import annotations

import json
import logging
import math
import time
import uuid
from collections.abc import Iterator

from ...errors import BlobError, ResumableCellsError, TamperedError
from .. import auth
from ..store import Store
from . import wire

log = logging.getLogger(__name__)
_PIPELINE = 4  # chunks in flight per round trip


class TooSlow(ResumableCellsError):
    """Copying an entry from the server takes longer than running the step did."""


class Incomplete(ResumableCellsError):
    """A blob that is only partly on the server (evicted by a maxmemory policy)."""

    def __init__(self, message: str, blob: str | None = None):
        super().__init__(message)
        self.blob = blob


def pull_blob(redis, local: Store, name: str, team_key: bytes, deadline: float = math.inf) -> int:
    """Copy blob `name` into `local`. Returns its size. Raises Incomplete, TooSlow (past
    `deadline`, a time.monotonic()), TamperedError, or the server's or disk's errors."""
    raw = redis.get(wire.blob_key(name))
    if raw is None:
        raise Incomplete(f"blob {name[:12]} is missing from the team cache", name)
    meta = wire.parse_meta(raw, name)
    return write_pulled(local, name, meta["header"], _chunks(redis, name, meta, deadline), team_key)


def write_pulled(
    local: Store, name: str, head: dict, chunks: Iterator[bytes], team_key: bytes
) -> int:
    """Write the body `chunks` of blob `name`, whose header under the team key is
    `head`, into `local` under the user's key. Returns its size. Raises TamperedError
    (nothing is left behind), or whatever `chunks` raises."""
    nbufs = len(head["bufs"])
    team = wire.Digests(team_key, nbufs)
    mine = wire.Digests(auth.user_key(), nbufs)
    placeholder = wire.header(head["main"], head["bufs"], ["0" * 32] * nbufs, "0" * 64)
    with local.blob_writer(name, len(placeholder)) as writer:
        parts = [head["main"], *head["bufs"]]
        for part, piece in wire.split(chunks, parts):
            if piece is None:
                writer.start_part()
                continue
            team.update(part, piece)
            mine.update(part, piece)
            writer.write(piece)
        if not team.match(head):
            raise TamperedError(f"blob {name[:12]} on the team cache fails the team key")
        return writer.finish(wire.header(head["main"], head["bufs"], mine.xx(), mine.mac()))


def _chunks(redis, name: str, meta: dict, deadline: float) -> Iterator[bytes]:
    keys = [wire.chunk_key(name, meta["upload"], i) for i in range(meta["chunks"])]
    size, chunk = meta["size"], meta["chunk"]
    for start in range(0, len(keys), _PIPELINE):
        if time.monotonic() > deadline:
            raise TooSlow()
        values = redis.mget(keys[start : start + _PIPELINE])
        for i, value in enumerate(values, start):
            want = min(chunk, size - i * chunk)
            if value is None:
                raise Incomplete(f"part of blob {name[:12]} is gone from the team cache", name)
            if len(value) != want:
                raise TamperedError(f"blob {name[:12]} on the team cache has a damaged chunk")
            yield value


def push_blob(redis, local: Store, name: str, team_key: bytes) -> int:
    """Upload blob `name` from `local` unless the server has it. Returns the body bytes
    sent (0 when it was there). Raises BlobError, Incomplete or the server's errors."""
    meta_key = wire.blob_key(name)
    if redis.exists(meta_key):
        return 0
    upload = uuid.uuid4().hex[:16]
    chunk_keys: list[str] = []
    try:
        with local.blob_reader(name) as reader:
            head = reader.header
            mine = wire.Digests(auth.user_key(), len(head["bufs"]))
            team = wire.Digests(team_key, len(head["bufs"]))
            pipe = redis.pipeline(transaction=False)
            for buf in wire.read_body(reader, mine, team):
                chunk_keys.append(wire.chunk_key(name, upload, len(chunk_keys)))
                pipe.set(chunk_keys[-1], buf, ex=wire.CHUNK_TTL)
                if len(pipe) >= _PIPELINE:
                    pipe.execute()
            pipe.execute()
            size = sum(reader.parts)
        if not mine.match(head):
            raise BlobError(f"blob {name[:12]} fails authentication; not pushed")
        meta = {
            "header": json.loads(wire.header(head["main"], head["bufs"], team.xx(), team.mac())),
            "upload": upload,
            "size": size,
            "chunk": wire.CHUNK,
            "chunks": len(chunk_keys),
        }
        done = redis.eval(wire.COMMIT, 1 + len(chunk_keys), meta_key, *chunk_keys, json.dumps(meta))
    except BaseException:
        _drop_chunks(redis, chunk_keys)
        raise
    if int(done) != 1:
        redis.delete(*chunk_keys)
        if int(done) == -1:
            raise Incomplete(f"chunks of blob {name[:12]} were evicted while it was pushed")
        return 0
    return size


def _drop_chunks(redis, chunk_keys: list[str]) -> None:
    if not chunk_keys:
        return
    try:
        redis.delete(*chunk_keys)
    except Exception:  # unreachable: they expire after CHUNK_TTL
        log.debug("chunks of an upload that failed were left to expire", exc_info=True)
