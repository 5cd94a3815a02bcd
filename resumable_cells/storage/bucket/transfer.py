"""Copying one blob between the local store and a bucket, sealed on the way up and
opened on the way down (`crossing`).

Push: a local blob, checked under the user's key while it is read, is sealed frame by
frame and goes up as one object (a multipart upload of up to `connect.CONCURRENCY`
parts in flight, one frame per part, when it is larger than one frame); its sealed
head is created after it. Pull: the frames come down `connect.CONCURRENCY` ranges at a
time, in order, each opened under the team keys before it is written into a new local
blob file signed with the user's key; the file is renamed into place only once every
frame opened, the last one marked final (as `redis.transfer` does), so nothing that
fails the team key is ever unpickled.
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
from ..seal import Sealer
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


def push_blob(store: Any, local: Store, name: str, sealer: Sealer) -> int:
    """Upload blob `name` from `local`, sealed, unless the bucket has it. Returns the
    body bytes sent (0 when it was there). Raises BlobError or the bucket's errors."""
    if exists(store, layout.head_path(name)):
        return 0
    with local.blob_reader(name) as reader:
        head = reader.header
        mine = wire.Digests(auth.user_key(), len(head["bufs"]))
        size = sum(reader.parts)
        upload, frames = upload_body(store, name, size, wire.read_body(reader, mine), sealer)
    path = layout.body_path(name, upload)
    if not mine.match(head):
        _delete(store, path)
        raise BlobError(f"blob {name[:12]} fails authentication; not pushed")
    meta = wire.BlobMeta(head["main"], head["bufs"], upload, size, wire.PIECE, frames)
    try:
        put(store, layout.head_path(name), crossing.head_out(meta, name, sealer), mode="create")
    except obstore.exceptions.AlreadyExistsError:  # another push of it got there first
        _delete(store, path)
        return 0
    return size


def upload_body(
    store: Any, name: str, size: int, pieces: Iterator, sealer: Sealer
) -> tuple[str, int]:
    """Seal `pieces` (`size` plaintext bytes in `wire.PIECE` pieces) as blob `name`'s
    body and upload them as a new body object. Returns (its upload id, its frames)."""
    upload = layout.new_upload()
    path = layout.body_path(name, upload)
    count = [0]

    def frames() -> Iterator[bytes | bytearray]:
        for frame in crossing.body_out(pieces, name, sealer):
            count[0] += 1
            yield frame

    if size <= wire.PIECE:
        (only,) = list(frames())
        put(store, path, only, use_multipart=False)
    else:  # each frame is FRAME bytes but the last: a part holds exactly one frame
        put(
            store, path, frames(), use_multipart=True,
            chunk_size=layout.FRAME, max_concurrency=connect.CONCURRENCY,
        )  # fmt: skip
    return upload, count[0]


def _delete(store: Any, path: str) -> None:
    try:
        obstore.delete(store, path)
    except Exception:  # left over: the next push of the blob uploads it again
        log.debug("the body %s was left in the bucket", path, exc_info=True)


def pull_blob(
    store: Any, local: Store, name: str, sealer: Sealer, deadline: float = math.inf
) -> int:
    """Copy blob `name` into `local`. Returns its size. Raises Incomplete, TooSlow (past
    `deadline`, a time.monotonic()), TamperedError (SealError among them), or the
    bucket's or disk's errors."""
    meta = head(store, name, sealer)
    pieces = crossing.body_in(body_frames(store, name, meta, deadline), name, sealer)
    return redis_transfer.write_pulled(local, name, meta, pieces)


def head(store: Any, name: str, sealer: Sealer) -> wire.BlobMeta:
    """Blob `name`'s head, opened. Raises Incomplete when there is none, TamperedError
    (SealError among them) when it does not open."""
    raw = get(store, layout.head_path(name))
    if raw is None:
        raise Incomplete(f"blob {name[:12]} is missing from the team cache", name)
    return crossing.head_in(raw, name, sealer)


def body_frames(
    store: Any, name: str, meta: wire.BlobMeta, deadline: float = math.inf
) -> Iterator[memoryview]:
    """The body's sealed frames in order, each of the length its head gives. They are
    read in ranges of up to `layout.RANGE_FRAMES` frames, CONCURRENCY ranges in flight
    (fewer, larger requests: a server's cost per request can grow with the object)."""
    path = layout.body_path(name, meta.upload)
    stored = layout.stored_sizes(meta)
    starts = [0, *itertools.accumulate(stored)]
    groups = [range(i, min(i + layout.RANGE_FRAMES, len(stored)))
              for i in range(0, len(stored), layout.RANGE_FRAMES)]  # fmt: skip

    def fetch(group: range) -> list[memoryview]:
        start, end = starts[group.start], starts[group.stop]
        try:
            data = obstore.get_range(store, path, start=start, end=end)
        except FileNotFoundError:
            raise Incomplete(
                f"the body of blob {name[:12]} is gone from the team cache", name
            ) from None
        view = memoryview(data)
        if len(view) != end - start:
            raise TamperedError(f"blob {name[:12]} on the team cache has a damaged body")
        return [view[starts[i] - start : starts[i + 1] - start] for i in group]

    pool = ThreadPoolExecutor(connect.CONCURRENCY, thread_name_prefix="resumable-cells-pull")
    window: deque[Future[list[memoryview]]] = deque()
    try:
        todo = iter(groups)
        for _ in groups:
            while len(window) < connect.CONCURRENCY and (g := next(todo, None)) is not None:
                window.append(pool.submit(fetch, g))
            if time.monotonic() > deadline:
                raise TooSlow()
            yield from window.popleft().result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
