"""The team cache's layout in a bucket, under the URL's prefix:

    rc1/entry/{key}   the entry's JSON, signed with the team key as in Redis
                      (`redis.wire.signed_entry`)
    rc1/blob/{name}/{upload}
                      the blob's body (the pickle stream, then each buffer, unpadded) as
                      frames of FRAME bytes, each as `crossing.outgoing` stored it
    rc1/head/{name}   its head, JSON: the blob's header under the team key (as Redis
                      keeps it), the upload whose body it names, the body's size, FRAME,
                      the number of frames and the stored length of each

A body is written whole or not at all (a single PUT, or a multipart upload that only
shows once completed) under an upload id of its own; its head is created after it,
only if there is none yet (the first push of a blob wins, a later one deletes its own
body), and an entry after the heads of all its blobs, so a reader that finds a name
finds everything it names. A body whose head never came (an upload cut off) is left
over and uploaded again by the next push.
"""

from __future__ import annotations

import json
import uuid

from ...errors import TamperedError
from ..redis import wire

VERSION = 1  # bump on any change to the layout above
ROOT = f"rc{VERSION}/"
FRAME = wire.CHUNK  # body bytes per frame (and per part of an upload), sealed on its own
RANGE_FRAMES = 8  # frames per ranged read of a body (64 MiB)


def entry_path(key: str) -> str:
    return f"{ROOT}entry/{key}"


def body_path(name: str, upload: str) -> str:
    return f"{ROOT}blob/{name}/{upload}"


def new_upload() -> str:
    return uuid.uuid4().hex[:16]


def head_path(name: str) -> str:
    return f"{ROOT}head/{name}"


ENTRIES = f"{ROOT}entry/"
BODIES = f"{ROOT}blob/"


def head(header: bytes, upload: str, size: int, stored: list[int]) -> bytes:
    """The head of a blob whose team-key header is `header`, `size` body bytes stored by
    `upload` as frames of `stored` lengths."""
    meta = {
        "header": json.loads(header),
        "upload": upload,
        "size": size,
        "chunk": FRAME,
        "chunks": len(stored),
        "stored": stored,
    }
    return json.dumps(meta).encode()


def parse_head(raw: bytes, name: str) -> dict:
    """A blob's head, checked (`wire.parse_meta`, and one stored length per frame).
    Raises TamperedError on anything malformed."""
    meta = wire.parse_meta(raw, name)
    stored = meta.get("stored")
    if not (
        isinstance(stored, list)
        and len(stored) == meta["chunks"]
        and all(type(n) is int and n >= 0 for n in stored)
    ):
        raise TamperedError(f"blob {name[:12]} on the team cache has a damaged head")
    return meta


def frame_sizes(meta: dict) -> list[int]:
    """The body bytes each frame of a blob holds once it has crossed back."""
    size, frame = meta["size"], meta["chunk"]
    return [min(frame, size - i * frame) for i in range(meta["chunks"])]
