"""Copying one blob between the local store and a bucket, checked on the way.

Push: a local blob, checked under the user's key while it is read, goes up as one
object in frames of `layout.FRAME` bytes (a multipart upload of up to
`connect.CONCURRENCY` parts in flight when it is larger than one frame); its head,
with the digests under the team key, is created after it. Pull: the frames come down
`connect.CONCURRENCY` at a time, in order, into a new local blob file while their
digests under the team key are checked and those under the user's key computed; the
file is renamed into place only once all of it checked out (as `redis.transfer` does),
so nothing that fails the team key is ever unpickled.
"""

from __future__ import annotations

import itertools
import logging
import math
import time
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import obstore

from ...errors import BlobError, TamperedError
from .. import auth
from ..redis import transfer as redis_transfer
from ..redis import wire
from ..redis.transfer import Incomplete, TooSlow
from ..store import Store
from . import connect, crossing, layout

log = logging.getLogger(__name__)


def exists(store: Any, path: str) -> bool:
    try:
        obstore.head(store, path)
    except FileNotFoundError:
        return False
    return True


def get(store: Any, path: str) -> bytes | None:
    """The object at `path`, None when there is none. Raises MissingBucket."""
    try:
        return bytes(obstore.get(store, path).bytes())
    except FileNotFoundError as err:
        connect.check_bucket(err)
        return None


def put(store: Any, path: str, data: Any, **options: Any) -> None:
    """`obstore.put`, with a missing bucket said as MissingBucket."""
    try:
        obstore.put(store, path, data, **options)
    except FileNotFoundError as err:
        connect.check_bucket(err)
        raise


def push_blob(store: Any, local: Store, name: str, team_key: bytes) -> int:
    """Upload blob `name` from `local` unless the bucket has it. Returns the body bytes
    sent (0 when it was there). Raises BlobError or the bucket's errors."""
    if exists(store, layout.head_path(name)):
        return 0
    upload = layout.new_upload()
    path = layout.body_path(name, upload)
    stored: list[int] = []
    with local.blob_reader(name) as reader:
        head = reader.header
        mine = wire.Digests(auth.user_key(), len(head["bufs"]))
        team = wire.Digests(team_key, len(head["bufs"]))
        size = sum(reader.parts)
        frames = _sealed(wire.read_body(reader, mine, team), name, stored)
        if size <= layout.FRAME:
            (only,) = list(frames)
            put(store, path, only, use_multipart=False)
        else:
            put(
                store, path, frames, use_multipart=True,
                chunk_size=layout.FRAME, max_concurrency=connect.CONCURRENCY,
            )  # fmt: skip
    if not mine.match(head):
        _delete(store, path)
        raise BlobError(f"blob {name[:12]} fails authentication; not pushed")
    header = wire.header(head["main"], head["bufs"], team.xx(), team.mac())
    raw = crossing.outgoing(
        crossing.BLOB, crossing.part_name(name, "head"), layout.head(header, upload, size, stored)
    )
    try:
        put(store, layout.head_path(name), raw, mode="create")
    except obstore.exceptions.AlreadyExistsError:  # another push of it got there first
        _delete(store, path)
        return 0
    return size


def _sealed(frames: Iterator[memoryview], name: str, stored: list[int]) -> Iterator[bytes]:
    """Each frame as it is stored, its stored length appended to `stored`."""
    for i, frame in enumerate(frames):
        data = crossing.outgoing(crossing.BLOB, crossing.part_name(name, i), bytes(frame))
        stored.append(len(data))
        yield data


def _delete(store: Any, path: str) -> None:
    try:
        obstore.delete(store, path)
    except Exception:  # left over: the next push of the blob uploads it again
        log.debug("the body %s was left in the bucket", path, exc_info=True)


def pull_blob(
    store: Any, local: Store, name: str, team_key: bytes, deadline: float = math.inf
) -> int:
    """Copy blob `name` into `local`. Returns its size. Raises Incomplete, TooSlow (past
    `deadline`, a time.monotonic()), TamperedError, or the bucket's or disk's errors."""
    raw = get(store, layout.head_path(name))
    if raw is None:
        raise Incomplete(f"blob {name[:12]} is missing from the team cache", name)
    meta = layout.parse_head(
        crossing.incoming(crossing.BLOB, crossing.part_name(name, "head"), raw), name
    )
    frames = _frames(store, name, meta, deadline)
    return redis_transfer.write_pulled(local, name, meta["header"], frames, team_key)


def _frames(store: Any, name: str, meta: dict, deadline: float) -> Iterator[bytes]:
    """The body's frames in order, each checked for the length its head gives. They are
    read in ranges of up to `layout.RANGE_FRAMES` frames, CONCURRENCY ranges in flight
    (fewer, larger requests: a server's cost per request can grow with the object)."""
    path = layout.body_path(name, meta["upload"])
    stored = meta["stored"]
    starts = [0, *itertools.accumulate(stored)]
    groups = [range(i, min(i + layout.RANGE_FRAMES, len(stored)))
              for i in range(0, len(stored), layout.RANGE_FRAMES)]  # fmt: skip

    def fetch(group: range) -> list[bytes]:
        start, end = starts[group.start], starts[group.stop]
        try:
            data = obstore.get_range(store, path, start=start, end=end) if end > start else b""
        except FileNotFoundError:
            raise Incomplete(
                f"the body of blob {name[:12]} is gone from the team cache", name
            ) from None
        view = memoryview(data)
        if len(view) != end - start:
            raise TamperedError(f"blob {name[:12]} on the team cache has a damaged body")
        return [
            crossing.incoming(
                crossing.BLOB, crossing.part_name(name, i),
                bytes(view[starts[i] - start : starts[i + 1] - start]),
            )
            for i in group
        ]  # fmt: skip

    pool = ThreadPoolExecutor(connect.CONCURRENCY, thread_name_prefix="resumable-cells-pull")
    window: deque[Future[list[bytes]]] = deque()
    try:
        todo = iter(groups)
        sizes = iter(layout.frame_sizes(meta))
        for _ in groups:
            while len(window) < connect.CONCURRENCY and (g := next(todo, None)) is not None:
                window.append(pool.submit(fetch, g))
            if time.monotonic() > deadline:
                raise TooSlow()
            for frame in window.popleft().result():
                if len(frame) != next(sizes):
                    raise TamperedError(f"blob {name[:12]} on the team cache has a damaged frame")
                yield frame
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
