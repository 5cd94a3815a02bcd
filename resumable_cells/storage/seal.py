"""Sealing what leaves the machine: AES-256-GCM under a key derived from the team key.

A sealed object is a run of frames, each one piece of the plaintext (at most FRAME
bytes when `seal` splits it) sealed on its own:

    magic "rcs" + format 1       4 bytes
    key id                       8 bytes, HKDF of the team key (names it, reveals nothing)
    flags                        1 byte, FINAL on the object's last frame
    plaintext length             4 bytes, big-endian
    nonce                        12 random bytes
    ciphertext, then GCM tag     length + 16 bytes

The associated data binds each frame to what it is: the object's kind and name, the
frame's index, and the 17 header bytes before the nonce. So a frame cannot be moved to
another object or position, a kind cannot pass for another, and an object cut short
after any frame fails (its last frame lacks FINAL). Whole objects (`seal`, `open`) and
streams of frames (`seal_frames`, `open_frames`: one frame per piece, so a tier can
store each piece as its own value or part) are the same bytes.

AES-GCM was measured against ChaCha20-Poly1305 (bench/seal.py): with AES-NI it seals
at several GB/s per core, ChaCha20-Poly1305 at a quarter to a third of that. Random
96-bit nonces are safe for 2**32 frames per key, far beyond what a team cache holds
before a rotation.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable, Iterator
from functools import lru_cache
from pathlib import Path

from ..errors import SealError, TeamCacheError
from . import teamkey

MAGIC = b"rcs\x01"
HEADER = struct.Struct(">4s8sBI")
NONCE, TAG = 12, 16
OVERHEAD = HEADER.size + NONCE + TAG  # bytes a frame adds to its piece
FINAL = 1
FRAME = 8 << 20  # plaintext per frame when a whole object is sealed
_CONTEXT = b"resumable-cells seal 1\0"


class _Key:
    """One team key's sealing key and id, both derived with HKDF so that the raw key,
    which also signs, is never used as a cipher key."""

    def __init__(self, team_key: bytes):
        try:
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM
        except ImportError:  # the team extra is not installed
            raise TeamCacheError(
                "sealing for the team cache needs cryptography: pip install 'resumable-cells[team]'"
            ) from None
        self.aead = AESGCM(_derive(team_key, b"resumable-cells aes-256-gcm key", 32))
        self.id = _derive(team_key, b"resumable-cells key id", 8)


@lru_cache(maxsize=16)
def _derive(team_key: bytes, info: bytes, length: int) -> bytes:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    return HKDF(algorithm=hashes.SHA256(), length=length, salt=None, info=info).derive(team_key)


class Sealer:
    """Seals with the current team key; opens with it or with the previous one."""

    def __init__(self, key: bytes, previous: bytes | None = None):
        """Raises TeamCacheError without the cryptography package."""
        self._current = _Key(key)
        self._keys = {self._current.id: self._current}
        if previous is not None:
            old = _Key(previous)
            self._keys.setdefault(old.id, old)

    @property
    def key_id(self) -> str:
        """The current key's id, as messages show it."""
        return self._current.id.hex()[:8]

    # -- whole objects ---------------------------------------------------------------------
    def seal(self, kind: str, name: str, data: bytes) -> bytes:
        """`data` sealed as the object `name` of `kind` ("entry" or "blob")."""
        view = memoryview(data)
        pieces = (view[i : i + FRAME] for i in range(0, len(view), FRAME))
        return b"".join(self.seal_frames(kind, name, pieces))

    def open(self, kind: str, name: str, data: bytes) -> bytes:
        """The plaintext of the object `name` of `kind`. Raises SealError unless every
        frame authenticates, in order, up to a final one."""
        return b"".join(self.open_frames(kind, name, split_frames(data, kind, name)))

    # -- streams of frames -----------------------------------------------------------------
    def seal_frames(self, kind: str, name: str, pieces: Iterable) -> Iterator[bytes | bytearray]:
        """One sealed frame per piece (bytes-like), the last marked FINAL; an empty
        stream is one empty final frame."""
        it = iter(pieces)
        held = next(it, b"")
        index = 0
        for piece in it:
            yield self._frame(kind, name, index, held, 0)
            held, index = piece, index + 1
        yield self._frame(kind, name, index, held, FINAL)

    def open_frames(self, kind: str, name: str, frames: Iterable) -> Iterator[bytes]:
        """The plaintext of each frame, in order. Raises SealError on a frame that does
        not authenticate, one after the final frame, or a stream that ends before it."""
        final = False
        for index, frame in enumerate(frames):
            if final:
                raise _altered(kind, name, "frames after its last")
            plain, final = self._open_frame(kind, name, index, frame)
            yield plain
        if not final:
            raise _altered(kind, name, "cut short")

    def key_id_of(self, frame: bytes) -> str:
        """The id of the key a sealed object or frame was sealed with ("" if none)."""
        if len(frame) < HEADER.size or frame[:4] != MAGIC:
            return ""
        return bytes(frame[4:12]).hex()[:8]

    def sealed_with_current(self, frame: bytes) -> bool:
        """Whether `frame` (or the first frame of an object) is under the current key."""
        return bytes(frame[4:12]) == self._current.id and frame[:4] == MAGIC

    def _frame(self, kind: str, name: str, index: int, piece, flags: int) -> bytes | bytearray:
        head = HEADER.pack(MAGIC, self._current.id, flags, len(piece))
        nonce = os.urandom(NONCE)
        associated = _associated(kind, name, index, head)
        aead = self._current.aead
        if not hasattr(aead, "encrypt_into"):  # cryptography < 46
            return b"".join((head, nonce, aead.encrypt(nonce, piece, associated)))
        # Encrypted in place after the header: one pass over the piece, no copy after.
        frame = bytearray(OVERHEAD + len(piece))
        frame[: HEADER.size] = head
        frame[HEADER.size : HEADER.size + NONCE] = nonce
        aead.encrypt_into(nonce, piece, associated, memoryview(frame)[HEADER.size + NONCE :])
        return frame

    def _open_frame(self, kind: str, name: str, index: int, frame) -> tuple[bytes, bool]:
        if len(frame) < OVERHEAD:
            raise _altered(kind, name, "a frame too short")
        head = bytes(frame[: HEADER.size])
        magic, key_id, flags, length = HEADER.unpack(head)
        if magic != MAGIC or len(frame) != OVERHEAD + length or flags & ~FINAL:
            raise _altered(kind, name, "a damaged frame")
        key = self._keys.get(key_id)
        if key is None:
            raise SealError(
                f"team {kind} {name[:12]} is sealed with team key {key_id.hex()[:8]}, which "
                f"is not configured here (yours is {self.key_id}): set "
                f"{teamkey.KEY_ENV} to the team's key (or {teamkey.PREVIOUS_ENV} to the "
                "old one while the team rotates); ignoring it",
                key_id.hex()[:8],
            )
        from cryptography.exceptions import InvalidTag

        view = memoryview(frame)  # slices of a view copy nothing
        nonce = view[HEADER.size : HEADER.size + NONCE]
        try:
            plain = key.aead.decrypt(
                nonce, view[HEADER.size + NONCE :], _associated(kind, name, index, head)
            )
        except InvalidTag:
            raise _altered(kind, name, "a frame altered or out of place") from None
        return plain, bool(flags & FINAL)


def split_frames(data, kind: str = "object", name: str = "") -> Iterator[memoryview]:
    """The frames of a whole sealed object, as views into it. Raises SealError when it
    is not a run of whole frames."""
    view, pos = memoryview(data), 0
    while pos < len(view):
        if len(view) - pos < HEADER.size or view[pos : pos + 4] != MAGIC:
            raise _altered(kind, name, "not a sealed object")
        length = HEADER.unpack(view[pos : pos + HEADER.size])[3]
        end = pos + OVERHEAD + length
        if end > len(view):
            raise _altered(kind, name, "cut short")
        yield view[pos:end]
        pos = end


def _associated(kind: str, name: str, index: int, head: bytes) -> bytes:
    return b"".join(
        (_CONTEXT, kind.encode(), b"\0", name.encode(), b"\0", index.to_bytes(8, "big"), head)
    )


def _altered(kind: str, name: str, what: str) -> SealError:
    return SealError(f"team {kind} {name[:12]} fails the team key ({what}); ignoring it")


def from_settings(store_dir: Path | None = None) -> Sealer | None:
    """The Sealer of the team keys the environment names (see `teamkey`), None when no
    team key is set. Raises TeamCacheError on a key that cannot be used."""
    keys = teamkey.team_keys(store_dir)
    if keys.current is None:
        return None
    return Sealer(keys.current, keys.previous)
