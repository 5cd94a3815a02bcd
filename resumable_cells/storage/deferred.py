"""Blobs written later: what a value left to write behind holds, and how the bytes then
written are checked against the value as its step left it.

A value with `BEHIND_MIN` out-of-band bytes or more (numpy arrays, pandas blocks) is
pickled when its step ends, like any other, but its blob is not written then: it
becomes a `Deferred` in the entry's `Batch`, holding the pickle stream and the
out-of-band buffers, which are views of the value's own memory (never a copy), and a
`Check`: the digest its bytes must have when they are written, taken now, while the
value cannot change. The writer (`behind.py`) hashes exactly the bytes it writes
(`blobs.write_copied`) and compares.

The check costs nothing more when the digest already covers the bytes: a plain array's
own digest is its prefix and its memory (`hashing.arrays.data_prefix`); a stream of
shared values is named by the digest of its pickle and buffers. Any other value (a
frame's blocks, arrays inside a container) has its buffers hashed once now.
"""

from __future__ import annotations

import pickle
import sys
from typing import Any

import msgspec
import xxhash

from ..hashing import arrays

BEHIND_MIN = 4 << 20  # fewer out-of-band bytes are written at once (about 2 ms of writing)


class Check(msgspec.Struct, frozen=True):
    """xxh3_128 over `prefix`, then every out-of-band byte as written, must be `digest`."""

    prefix: bytes
    digest: str


class Deferred(msgspec.Struct):
    """A blob to write later: the value's pickle stream, views of its memory, the check."""

    name: str
    var: str  # what it is, for messages (`arr`, "shared values")
    main: bytes
    buffers: list[pickle.PickleBuffer]
    check: Check

    @property
    def nbytes(self) -> int:
        return len(self.main) + sum(b.raw().nbytes for b in self.buffers)


class Batch(msgspec.Struct):
    """The blobs of one entry that are written behind, gathered while it is built."""

    blobs: list[Deferred] = msgspec.field(default_factory=list)

    def add(self, blob: Deferred) -> None:
        if all(b.name != blob.name for b in self.blobs):  # one value under two names
            self.blobs.append(blob)

    @property
    def nbytes(self) -> int:
        return sum(b.nbytes for b in self.blobs)

    def names(self) -> set[str]:
        return {b.name for b in self.blobs}


def behind(buffers: list[pickle.PickleBuffer]) -> bool:
    """Whether a value pickled with `buffers` is large enough to be written behind."""
    return sum(b.raw().nbytes for b in buffers) >= BEHIND_MIN


def value_check(digest: str, value: Any, buffers: list[pickle.PickleBuffer]) -> Check:
    """The check of `value`, pickled with `buffers`, whose digest (`hashing.values`) is
    `digest`: that digest itself when the value is a plain array pickled as its own
    memory (nothing is hashed now), else the digest of its buffers, taken now."""
    prefix = arrays.data_prefix(value)
    if prefix is not None and len(buffers) == 1 and _memory_of(buffers[0], value):
        return Check(prefix, digest)
    return bytes_check(b"", buffers)


def bytes_check(prefix: bytes, buffers: list[pickle.PickleBuffer]) -> Check:
    """The check of buffers as they are now: their digest after `prefix`."""
    h = xxhash.xxh3_128(prefix)
    for b in buffers:
        h.update(b.raw())
    return Check(prefix, h.hexdigest())


def _memory_of(buffer: pickle.PickleBuffer, arr: Any) -> bool:
    """Whether the buffer is the array's own memory, whole (it then holds the bytes its
    digest hashes, in that order)."""
    np = sys.modules["numpy"]
    raw = buffer.raw()
    if raw.nbytes != arr.nbytes:
        return False
    start = np.frombuffer(raw, dtype=np.uint8).__array_interface__["data"][0]
    return bool(start == arr.__array_interface__["data"][0])
