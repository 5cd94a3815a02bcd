"""Every byte string the object tier uploads goes through `outgoing`, and every one it
downloads through `incoming`: nothing else in `bucket/` writes to or reads from the
bucket's objects without them.

This is the contract with the encryption of what leaves the machine (`seal.Sealer`):
`outgoing(kind, name, data)` is where `Sealer.seal` goes and `incoming` where
`Sealer.open` goes, with kind "entry" (name: the entry key) or "blob" (name: one of
`part_name`'s). Until that is wired both are the identity. A blob's body is uploaded as
frames of `layout.FRAME` bytes, each crossing on its own under its own name, so that a
large value can be sealed part by part and its parts cannot be reordered; the stored
length of each frame is kept in the blob's head, so a reader never needs to know what
sealing adds.
"""

from __future__ import annotations

ENTRY, BLOB = "entry", "blob"


def part_name(blob: str, part: int | str) -> str:
    """The name frame `part` of blob `blob` (or its "head") crosses under."""
    return f"{blob}/{part}"


def outgoing(kind: str, name: str, data: bytes) -> bytes:
    """The bytes stored for `data` (the identity until sealing is wired)."""
    return data


def incoming(kind: str, name: str, data: bytes) -> bytes:
    """The bytes `data`, read from the bucket, stand for (the identity until sealing is
    wired; a sealer raises SealError when they fail to open)."""
    return data
