"""Every byte string the object tier uploads is sealed here, and every one it downloads
is opened here (`seal.Sealer`): nothing else in `bucket/` writes to or reads from the
bucket's objects without passing through this module.

Objects are sealed exactly as the Redis tier seals its values (`redis.wire`), under the
same kinds and names, so that one is as safe as the other: an entry as ("entry", its
key), a blob's head as ("blobmeta", the blob's name), and a blob's body as ("blob", the
blob's name) one frame per piece of `wire.PIECE` plaintext bytes. Each frame is bound
to its index and the last one is marked final, so a body whose parts were cut,
reordered or swapped for another blob's does not open; and each frame is exactly
`wire.CHUNK` stored bytes (the last one shorter), so the parts of a multipart upload and
the ranges of a download fall on frame boundaries. A frame is opened before any of its
bytes are written anywhere, and nothing is unpickled before the final frame opened.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ..entries import Entry
from ..redis import wire
from ..seal import Sealer

BLOB = "blob"  # the kind a body's frames are sealed as


def entry_out(entry: Entry, key: str, sealer: Sealer) -> bytes:
    """The object the entry `key` is stored as."""
    return wire.sealed_entry(entry, key, sealer)


def entry_in(raw: bytes, key: str, sealer: Sealer) -> Entry:
    """The entry the object `raw` under `key` holds. Raises SealError unless it opens as
    the entry `key`, StoreError on another layout inside."""
    return wire.opened_entry(raw, key, sealer)


def head_out(meta: wire.BlobMeta, name: str, sealer: Sealer) -> bytes:
    """The object blob `name`'s head is stored as."""
    return wire.sealed_meta(meta, name, sealer)


def head_in(raw: bytes, name: str, sealer: Sealer) -> wire.BlobMeta:
    """Blob `name`'s head. Raises SealError unless it opens as that blob's head,
    TamperedError on anything malformed inside."""
    return wire.opened_meta(raw, name, sealer)


def body_out(pieces: Iterable, name: str, sealer: Sealer) -> Iterator[bytes | bytearray]:
    """The sealed frames of blob `name`'s body, one per piece, in order."""
    return sealer.seal_frames(BLOB, name, pieces)


def body_in(frames: Iterable, name: str, sealer: Sealer) -> Iterator[bytes]:
    """The plaintext of each of blob `name`'s frames, in order. Raises SealError on a
    frame altered, out of place or after the last, and when the last never comes."""
    return sealer.open_frames(BLOB, name, frames)
