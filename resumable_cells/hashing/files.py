"""Digests of files by their content: `--deps` files, the files a step read, the source
of local modules. Each is remembered with the file's (size, mtime) so that a file that
did not change costs one `stat`."""

from __future__ import annotations

import os

import xxhash

_MEMO: dict[str, tuple[tuple[int, int], str]] = {}


def signature(st: os.stat_result) -> tuple[int, int]:
    """What says a file changed without reading it: (size, mtime in ns)."""
    return st.st_size, st.st_mtime_ns


def file_digest(path: str, st: os.stat_result | None = None) -> str:
    """The xxh3_128 hex digest of the file's bytes. Raises OSError."""
    sig = signature(st if st is not None else os.stat(path))
    memo = _MEMO.get(path)
    if memo and memo[0] == sig:
        return memo[1]
    h = xxhash.xxh3_128()
    with open(path, "rb") as f:
        while chunk := f.read(8 << 20):
            h.update(chunk)
    d = h.hexdigest()
    _MEMO[path] = (sig, d)
    return d
