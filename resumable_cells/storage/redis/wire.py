"""The team cache's layout in Redis, and the bytes of what it holds.

Every key is under `rc:{REMOTE_VERSION}:`; every value is sealed under the team key
(`storage.seal`: AES-256-GCM, bound to its kind and name), so without the key nothing
there can be read, and nothing planted there opens:

    entry:{key}               the entry's JSON (with its key), sealed as ("entry", key)
    blob:{name}               JSON: the blob's pickle stream length and buffer lengths,
                              the upload id, the body size, the plaintext bytes per chunk
                              and the chunk count; sealed as ("blobmeta", name)
    chunk:{name}:{upload}:{i} frame i of the body (the pickle stream then each buffer,
                              no padding) sealed as ("blob", name): at most CHUNK bytes,
                              PIECE of them plaintext. The chunks in order are the sealed
                              object `Sealer.seal("blob", name, body)` would make with
                              PIECE-byte frames.

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

import msgspec
import xxhash

from ...errors import BlobError, StoreError, TamperedError
from .. import auth, seal
from ..blobs import BlobReader
from ..entries import Entry
from ..seal import Sealer

REMOTE_VERSION = 2  # bump on any change to the layout above (2: sealed)
PREFIX = f"rc:{REMOTE_VERSION}:"
CHUNK = 8 << 20  # bytes per Redis value
PIECE = CHUNK - seal.OVERHEAD  # plaintext bytes per chunk
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
def sealed_entry(entry: Entry, key: str, sealer: Sealer) -> bytes:
    """The bytes an entry is stored as: its JSON, with its key, sealed."""
    return sealer.seal("entry", key, json.dumps(dict(entry.to_json(), key=key)).encode())


def opened_entry(raw: bytes, key: str, sealer: Sealer) -> Entry:
    """The entry stored as `raw` under `key`. Raises SealError unless it opens under a
    configured team key as the entry `key`, StoreError when it has another layout."""
    plain = json.loads(sealer.open("entry", key, raw))
    if not isinstance(plain, dict) or plain.pop("key", None) != key:
        raise TamperedError(f"the team cache entry {key[:12]} is not the entry it names")
    try:
        return Entry.from_json(plain)
    except (ValueError, KeyError, TypeError) as err:  # sealed by a newer version, say
        raise StoreError(f"the team cache entry {key[:12]} cannot be read ({err})") from None


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
    """A blob header as the blob files write it."""
    return json.dumps({"main": main, "bufs": bufs, "xx": xx, "mac": mac}).encode()


class BlobMeta(msgspec.Struct, frozen=True):
    """The `blob:{name}` record: the body's layout and where its chunks are."""

    main: int  # the pickle stream's length
    bufs: list[int]  # each out-of-band buffer's length
    upload: str  # the upload whose chunks these are
    size: int  # the body's plaintext bytes
    chunk: int  # plaintext bytes per chunk (the last may be shorter)
    chunks: int

    def want(self, i: int) -> int:
        """The plaintext bytes of chunk `i`."""
        return min(self.chunk, self.size - i * self.chunk)


def sealed_meta(meta: BlobMeta, name: str, sealer: Sealer) -> bytes:
    return sealer.seal("blobmeta", name, json.dumps(msgspec.structs.asdict(meta)).encode())


def opened_meta(raw: bytes, name: str, sealer: Sealer) -> BlobMeta:
    """The `blob:{name}` record. Raises SealError unless it opens under a configured
    team key, TamperedError on anything malformed inside."""
    plain = sealer.open("blobmeta", name, raw)
    try:
        meta = BlobMeta(**json.loads(plain))
        ints = [meta.main, *meta.bufs, meta.size, meta.chunk, meta.chunks]
        ok = (
            all(type(v) is int and v >= 0 for v in ints)
            and isinstance(meta.upload, str) and bool(_HEX.match(meta.upload))
            and 0 < meta.chunk <= _MAX_CHUNK
            and meta.size == meta.main + sum(meta.bufs)
            and meta.chunks == max(1, math.ceil(meta.size / meta.chunk))
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
    """The unpadded body of a local blob in PIECE pieces, each fresh (a pipeline holds
    several), feeding `digests` on the way."""
    buf, fill = bytearray(PIECE), 0
    for part, n in enumerate(reader.parts):
        reader.start_part()
        while n:
            view = memoryview(buf)[fill : fill + min(n, PIECE - fill)]
            got = reader.readinto(view)
            if not got:
                raise BlobError(f"blob {reader.name[:12]} is truncated")
            for d in digests:
                d.update(part, view[:got])
            fill += got
            n -= got
            if fill == PIECE:
                yield memoryview(buf)
                buf, fill = bytearray(PIECE), 0
    if fill or not sum(reader.parts):
        yield memoryview(buf)[:fill]
