"""Digests of files by their content: `--deps` files, the files a step read, the source
of local modules. Each is remembered with the file's (size, mtime) so that a file that
did not change costs one `stat`."""

from __future__ import annotations

import glob
import os
import re

import xxhash

_MEMO: dict[str, tuple[tuple[int, int], str]] = {}
NAME_MAX = 1024  # characters of the longest string taken for a file's name


def read_digest(path: str) -> str:
    """The digest an entry keeps of a file its step read: the file's (`file_digest`);
    for a folder it listed (its path ends with a separator), its names'
    (`listing_digest`); for a glob pattern the step named (`data/*.csv`, not itself a file), the digest of
    the names and contents of the files it matches, which a file added, removed or
    changed alters. Raises OSError (FileNotFoundError: a pattern that matches none)."""
    if path.endswith(os.sep) and len(path) > 1:
        return listing_digest(path)
    if not is_pattern(path) or os.path.lexists(path):
        return file_digest(path)
    paths = matches(path)
    if not paths:
        raise FileNotFoundError(f"no file matches {path}")
    h = xxhash.xxh3_128()
    for p in paths:
        for part in (p.encode("utf-8", "surrogateescape"), file_digest(p).encode()):
            h.update(len(part).to_bytes(8, "little"))
            h.update(part)
    return h.hexdigest()


def listing_digest(folder: str) -> str:
    """The digest of a folder's names, each with whether it is a folder: what a step
    listing it saw (a file added, removed or renamed alters it; a file's contents, read
    only when opened, do not). Raises OSError."""
    h = xxhash.xxh3_128()
    with os.scandir(folder) as entries:
        names = sorted((e.name, e.is_dir()) for e in entries)
    for name, is_dir in names:
        part = name.encode("utf-8", "surrogateescape") + (b"/" if is_dir else b"")
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.hexdigest()


def is_pattern(text: str) -> bool:
    """Whether a string is a glob pattern (`*`, `?`, `[`)."""
    return not _GLOB.isdisjoint(text)


def matches(pattern: str, limit: int = 1000) -> list[str]:
    """The regular files a glob pattern matches (`**` across folders), sorted, at most
    `limit` of them."""
    out = []
    for path in glob.iglob(pattern, recursive="**" in pattern):
        if os.path.isfile(path):
            out.append(path)
            if len(out) >= limit:
                break
    return sorted(out)


_GLOB = frozenset("*?[")


def working_folder() -> str:
    """The working folder's real path (a folder reached through a link is its target)."""
    return os.path.realpath(os.getcwd())


def could_name(text: str) -> bool:
    """Whether a string constant of a step's code could be a path it passes to a reader:
    one line, short, and naming something (`engine/live/named_files.py` asks the file
    system which do)."""
    return 0 < len(text) <= NAME_MAX and not _NOT_A_NAME.search(text) and not text.isspace()


_NOT_A_NAME = re.compile(r"[\n\r\0]")


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
