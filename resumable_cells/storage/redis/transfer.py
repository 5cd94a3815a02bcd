"""Copying one blob between the local store and the team cache, checked on the way.

Pull: the chunks are opened under the team key (`seal`), frame by frame, as they stream
into a new local blob file while their digests under the user's key are computed; the
file is signed with the user's key and renamed into place only once every frame opened,
the last one marked final, so nothing that fails the team key is ever unpickled. Push:
a local blob, checked under the user's key while it is read, is sealed and goes up in
chunks; its header is set after them, by `wire.COMMIT`, only while every chunk is still
there. A blob whose header is there is not sent again.
"""

from __future__ import annotations

import logging
import math
import time
import uuid
from collections.abc import Iterator

from ...errors import BlobError, ResumableCellsError, TamperedError
from .. import auth, seal
from ..seal import Sealer
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


def pull_blob(redis, local: Store, name: str, sealer: Sealer, deadline: float = math.inf) -> int:
    """Copy blob `name` into `local`. Returns its size. Raises Incomplete, TooSlow (past
    `deadline`, a time.monotonic()), TamperedError (SealError among them), or the
    server's or disk's errors."""
    raw = redis.get(wire.blob_key(name))
    if raw is None:
        raise Incomplete(f"blob {name[:12]} is missing from the team cache", name)
    meta = wire.opened_meta(raw, name, sealer)
    pieces = sealer.open_frames("blob", name, _chunks(redis, name, meta, deadline))
    return write_pulled(local, name, meta, pieces)


def write_pulled(local: Store, name: str, meta: wire.BlobMeta, pieces: Iterator[bytes]) -> int:
    """Write the opened body `pieces` of blob `name`, laid out as `meta` says, into
    `local` under the user's key. Returns its size. Raises whatever `pieces` raises
    (SealError on a frame that does not open); nothing is left behind then, so nothing
    that fails the team key is ever unpickled."""
    nbufs = len(meta.bufs)
    mine = wire.Digests(auth.user_key(), nbufs)
    placeholder = wire.header(meta.main, meta.bufs, ["0" * 32] * nbufs, "0" * 64)
    with local.blob_writer(name, len(placeholder)) as writer:
        for part, piece in wire.split(pieces, [meta.main, *meta.bufs]):
            if piece is None:
                writer.start_part()
                continue
            mine.update(part, piece)
            writer.write(piece)
        return writer.finish(wire.header(meta.main, meta.bufs, mine.xx(), mine.mac()))


def _chunks(redis, name: str, meta: wire.BlobMeta, deadline: float) -> Iterator[bytes]:
    keys = [wire.chunk_key(name, meta.upload, i) for i in range(meta.chunks)]
    for start in range(0, len(keys), _PIPELINE):
        if time.monotonic() > deadline:
            raise TooSlow()
        values = redis.mget(keys[start : start + _PIPELINE])
        for i, value in enumerate(values, start):
            if value is None:
                raise Incomplete(f"part of blob {name[:12]} is gone from the team cache", name)
            if len(value) != meta.want(i) + seal.OVERHEAD:
                raise TamperedError(f"blob {name[:12]} on the team cache has a damaged chunk")
            yield value


def push_blob(redis, local: Store, name: str, sealer: Sealer) -> int:
    """Upload blob `name` from `local`, sealed, unless the server has it. Returns the
    body bytes sent (0 when it was there). Raises BlobError, Incomplete or the server's
    errors."""
    meta_key = wire.blob_key(name)
    if redis.exists(meta_key):
        return 0
    upload = uuid.uuid4().hex[:16]
    chunk_keys: list[str] = []
    try:
        with local.blob_reader(name) as reader:
            head = reader.header
            mine = wire.Digests(auth.user_key(), len(head["bufs"]))
            pipe = redis.pipeline(transaction=False)
            for frame in sealer.seal_frames("blob", name, wire.read_body(reader, mine)):
                chunk_keys.append(wire.chunk_key(name, upload, len(chunk_keys)))
                pipe.set(chunk_keys[-1], frame, ex=wire.CHUNK_TTL)
                if len(pipe) >= _PIPELINE:
                    pipe.execute()
            pipe.execute()
            size = sum(reader.parts)
        if not mine.match(head):
            raise BlobError(f"blob {name[:12]} fails authentication; not pushed")
        meta = wire.BlobMeta(head["main"], head["bufs"], upload, size, wire.PIECE, len(chunk_keys))
        sealed = wire.sealed_meta(meta, name, sealer)
        done = redis.eval(wire.COMMIT, 1 + len(chunk_keys), meta_key, *chunk_keys, sealed)
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
