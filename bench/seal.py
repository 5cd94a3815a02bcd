"""Seal and open a blob for the team cache, 100 MB and 1 GB, on one core.

This project's Sealer (AES-256-GCM, one frame per Redis chunk, as a push and a pull
stream them) against the same framing with ChaCha20-Poly1305, AES-256-GCM over the
whole buffer in one call (no framing), and a copy of the buffer (the speed of touching
the memory once). Target: sealing and opening at >= 1 GB/s per core, so that
encryption costs less than the network it saves (1 Gbit/s is 0.125 GB/s).
"""

from __future__ import annotations

import os
import sys
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from statistics import median

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import GB, MB, Row, each_size, interleaved, main  # noqa: E402
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305  # noqa: E402

from resumable_cells.storage.redis.wire import PIECE  # noqa: E402
from resumable_cells.storage.seal import NONCE, Sealer  # noqa: E402

SIZES = [(100 * MB, "100 MB", 9), (GB, "1 GB", 5)]
QUICK = [(16 * MB, "16 MB", 5)]
SEAL, OPEN = "resumable-cells seal (AES-256-GCM)", "resumable-cells open (AES-256-GCM)"
TARGET = 1.0  # GB/s on one core


def _pieces(view: memoryview) -> Iterator[memoryview]:
    return (view[i : i + PIECE] for i in range(0, len(view), PIECE))


def _chacha_frames(cipher: ChaCha20Poly1305, view: memoryview) -> None:
    # The same framing as the Sealer's, with the other AEAD: a nonce and a tag per frame.
    for i, piece in enumerate(_pieces(view)):
        cipher.encrypt(os.urandom(NONCE), piece, i.to_bytes(8, "big"))


def one_size(nbytes: int, label: str, repeat: int) -> list[Row]:
    data = bytearray(os.urandom(MB)) * (nbytes // MB)
    view = memoryview(data)
    sealer = Sealer(os.urandom(32))
    frames = list(sealer.seal_frames("blob", "bench", _pieces(view)))
    aes, chacha = AESGCM(os.urandom(32)), ChaCha20Poly1305(os.urandom(32))
    drain = deque(maxlen=0).extend  # consume a stream of frames, keeping none
    methods = {
        SEAL: lambda: drain(sealer.seal_frames("blob", "bench", _pieces(view))),
        OPEN: lambda: drain(sealer.open_frames("blob", "bench", frames)),
        "ChaCha20-Poly1305, same frames": lambda: _chacha_frames(chacha, view),
        "AES-256-GCM, one call": lambda: aes.encrypt(os.urandom(NONCE), view, b""),
        "copy of the buffer (bytes)": lambda: bytes(view),
    }
    times = interleaved(methods, repeat)
    rows = []
    for name, ts in times.items():
        rate = nbytes / median(ts) / GB
        row = Row("seal a blob for the team cache", label, name, ts, note=f"{rate:.2f} GB/s")
        if name in (SEAL, OPEN):
            row.ours = True
            row.target = ">= 1 GB/s per core"
            row.met = rate >= TARGET
        rows.append(row)
    return rows


if __name__ == "__main__":
    main(each_size(one_size, SIZES, QUICK))
