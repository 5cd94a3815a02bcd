"""The team cache's layout in Redis, and the bytes of what it holds.

Every key is under `rc:{REMOTE_VERSION}:`

    entry:{key}               the entry's JSON with `mac`, an HMAC-SHA256 under the team
                              key over its canonical JSON (the local store does the same
                              with the per-user key)
    blob:{name}               JSON: the blob's header (pickle stream length, buffer
                              lengths, the xxh3 of each buffer seeded from the team key,
                              and an HMAC over the stream and those digests), the upload
                              id, the body size and the chunk size
    chunk:{name}:{upload}:{i} the body, the pickle stream then each buffer with no
                              padding, in pieces of at most CHUNK bytes

A blob's chunks are written before its header (`COMMIT`), and an entry after its blobs,
so a reader that finds a key finds everything it names. Chunks of an upload that was
cut off expire after CHUNK_TTL; the next push uploads the blob again.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import re
from collections.abc import Iterator
from typing import Any

import xxhash

from ...errors import BlobError, TamperedError
from .. import auth
from ..blobs import BlobReader
from ..entries import Entry

REMOTE_VERSION = 1  # bump on any change to the layout above
PREFIX = f"rc:{REMOTE_VERSION}:"
CHUNK = 8 << 20  # bytes per Redis value
CHUNK_TTL = 24 * 3600  # chunks of an upload that never committed expire after this
_MAX_CHUNK = 64 << 20
_HEX = re.compile(r"^[0-9a-f]+$")

# Set the header, unless another push got there first, and keep the chunks it names.
# Returns 1 when committed, 0 when the blob was already there, -1 when a chunk is gone.
COMMIT = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
for i = 2, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 0 then return -1 end
end
for i = 2, #KEYS do redis.call('PERSIST', KEYS[i]) end
redis.call('SET', KEYS[1], ARGV[1])
return 1
"""


# -- key names ----------------------------------------------------------------------------
def entry_key(key: str) -> str:
    return f"{PREFIX}entry:{key}"


def blob_key(name: str) -> str:
    return f"{PREFIX}blob:{name}"


def chunk_key(name: str, upload: str, i: int) -> str:
    return f"{PREFIX}chunk:{name}:{upload}:{i}"


def last_part(redis_key: bytes) -> str:
    """The entry key or blob name at the end of a Redis key."""
    return redis_key.decode().rsplit(":", 1)[1]


# -- entries ------------------------------------------------------------------------------
def signed_entry(entry: Entry, key: str, team_key: bytes) -> str:
    """The JSON an entry is stored as: with its key, signed with the team key."""
    signed = dict(entry.to_json(), key=key)
    signed["mac"] = auth.sign(auth.canonical(signed), team_key)
    return json.dumps(signed, sort_keys=True)


def verified_entry(raw: bytes, key: str, team_key: bytes) -> Entry:
    """The entry stored as `raw` under `key`. Raises TamperedError unless it carries the
    team key's MAC and its own key, StoreError when it has another layout."""
    try:
        entry = json.loads(raw)
        mac = entry.pop("mac")
        ok = isinstance(entry, dict) and auth.verify(auth.canonical(entry), mac, team_key)
    except (ValueError, KeyError, TypeError, AttributeError):
        ok = False
    if not ok or entry.get("key") != key:
        raise TamperedError(f"the team cache entry {key[:12]} fails the team key; ignoring it")
    return Entry.from_json(entry)


# -- blob headers -------------------------------------------------------------------------
class Digests:
    """The HMAC and seeded buffer digests of one blob under one key, fed incrementally."""

    def __init__(self, key: bytes, nbufs: int):
        self._mac = hmac.new(key, digestmod=hashlib.sha256)
        seed = auth.buffer_seed(key)
        self._xx = [xxhash.xxh3_128(seed=seed) for _ in range(nbufs)]

    def update(self, part: int, piece) -> None:
        if part == 0:
            self._mac.update(piece)
        else:
            self._xx[part - 1].update(piece)

    def xx(self) -> list[str]:
        return [h.hexdigest() for h in self._xx]

    def mac(self) -> str:
        m = self._mac.copy()
        m.update("".join(self.xx()).encode())
        return m.hexdigest()

    def match(self, head: dict) -> bool:
        """Whether these digests are the ones `head` (a blob header) carries."""
        return self.xx() == head["xx"] and hmac.compare_digest(self.mac(), head.get("mac", ""))


def header(main: int, bufs: list[int], xx: list[str], mac: str) -> bytes:
    """A blob header as the blob files and the team cache write it."""
    return json.dumps({"main": main, "bufs": bufs, "xx": xx, "mac": mac}).encode()


def parse_meta(raw: bytes, name: str) -> dict:
    """The `blob:{name}` record. Raises TamperedError on anything malformed."""
    try:
        meta = json.loads(raw)
        head = meta["header"]
        main, bufs, xx, mac = head["main"], head["bufs"], head["xx"], head["mac"]
        ints = [main, *bufs, meta["size"], meta["chunk"], meta["chunks"]]
        ok = (
            all(type(v) is int and v >= 0 for v in ints)
            and len(bufs) == len(xx)
            and all(isinstance(x, str) and len(x) == 32 and _HEX.match(x) for x in xx)
            and isinstance(mac, str) and len(mac) == 64 and _HEX.match(mac)
            and isinstance(meta["upload"], str) and _HEX.match(meta["upload"])
            and 0 < meta["chunk"] <= _MAX_CHUNK
            and meta["size"] == main + sum(bufs)
            and meta["chunks"] == max(1, math.ceil(meta["size"] / meta["chunk"]))
        )  # fmt: skip
    except (ValueError, KeyError, TypeError):
        ok = False
    if not ok:
        raise TamperedError(f"blob {name[:12]} on the team cache has a damaged header")
    return meta


# -- blob bodies --------------------------------------------------------------------------
def split(chunks: Iterator[bytes], parts: list[int]) -> Iterator[tuple[int, Any]]:
    """The body's pieces as (part, memoryview), with (part, None) where a part starts."""
    it = iter(chunks)
    view, pos = memoryview(b""), 0
    for part, n in enumerate(parts):
        yield part, None
        while n:
            if pos == len(view):
                view, pos = memoryview(next(it)), 0
            take = min(n, len(view) - pos)
            yield part, view[pos : pos + take]
            pos += take
            n -= take
    for extra in it:
        if extra:
            raise TamperedError("a blob on the team cache is longer than its header says")


def read_body(reader: BlobReader, *digests: Digests) -> Iterator[memoryview]:
    """The unpadded body of a local blob in CHUNK pieces, each fresh (a pipeline holds
    several), feeding `digests` on the way."""
    buf, fill = bytearray(CHUNK), 0
    for part, n in enumerate(reader.parts):
        reader.start_part()
        while n:
            view = memoryview(buf)[fill : fill + min(n, CHUNK - fill)]
            got = reader.readinto(view)
            if not got:
                raise BlobError(f"blob {reader.name[:12]} is truncated")
            for d in digests:
                d.update(part, view[:got])
            fill += got
            n -= got
            if fill == CHUNK:
                yield memoryview(buf)
                buf, fill = bytearray(CHUNK), 0
    if fill or not sum(reader.parts):
        yield memoryview(buf)[:fill]
