"""The team cache's layout in a bucket, under the URL's prefix. Every object is sealed
under the team key (`crossing`: AES-256-GCM frames, bound to their kind and name):

    rc2/entry/{key}   the entry's JSON (with its key), sealed as ("entry", key)
    rc2/blob/{name}/{upload}
                      the blob's body (the pickle stream, then each buffer, unpadded)
                      as frames sealed as ("blob", name), each of `wire.PIECE`
                      plaintext bytes (the last may be shorter) and so FRAME stored
                      bytes: the parts of an upload and the ranges of a download are
                      whole frames
    rc2/head/{name}   its head (`wire.BlobMeta`: the pickle stream's and the buffers'
                      lengths, the upload whose body it names, the body's size, the
                      plaintext per frame, the number of frames), sealed as
                      ("blobmeta", name)

A body is written whole or not at all (a single PUT, or a multipart upload that only
shows once completed) under an upload id of its own; its head is created after it,
only if there is none yet (the first push of a blob wins, a later one deletes its own
body), and an entry after the heads of all its blobs, so a reader that finds a name
finds everything it names. A body whose head never came (an upload cut off) is left
over and uploaded again by the next push.
"""

from __future__ import annotations

import uuid

from .. import seal
from ..redis import wire

VERSION = 2  # bump on any change to the layout above (2: sealed)
ROOT = f"rc{VERSION}/"
FRAME = wire.CHUNK  # stored bytes per frame (and per part of an upload)
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
HEADS = f"{ROOT}head/"


def stored_sizes(meta: wire.BlobMeta) -> list[int]:
    """The stored bytes of each frame of a body: its plaintext and what sealing adds."""
    return [meta.want(i) + seal.OVERHEAD for i in range(meta.chunks)]
