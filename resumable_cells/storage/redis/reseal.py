"""Re-encrypting a team cache under the current team key (`resumable-cells reencrypt`),
so that the previous key can be dropped after a rotation.

Each entry and blob sealed with another key is opened with the previous key and sealed
again with the current one. An entry is replaced only if it is still the value read; a
blob's frames are sealed again into chunks of a new upload, and its header is swapped
to them (`SWAP`) only while the old header is still there and every new chunk is: a
reader that is copying the old chunks keeps them for RETIRED_TTL, after which they
expire. Frames are streamed one at a time, so memory stays at a few chunks.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator

import msgspec

from ...errors import TamperedError
from ..seal import Sealer
from . import wire

log = logging.getLogger(__name__)
RETIRED_TTL = 3600  # seconds the chunks a swapped header no longer names are kept

# Replace an entry only if nobody changed it since it was read.
REPLACE = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
return 1
"""

# KEYS: the header, the n new chunks, the old chunks; ARGV: the old header, the new one,
# n, how long the old chunks are kept. 1 when swapped, 0 when the header changed
# meanwhile, -1 when a new chunk is gone.
SWAP = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
local n = tonumber(ARGV[3])
for i = 2, n + 1 do
  if redis.call('EXISTS', KEYS[i]) == 0 then return -1 end
end
for i = 2, n + 1 do redis.call('PERSIST', KEYS[i]) end
for i = n + 2, #KEYS do redis.call('EXPIRE', KEYS[i], ARGV[4]) end
redis.call('SET', KEYS[1], ARGV[2])
return 1
"""


class ResealReport(msgspec.Struct):
    """What `reseal` did: objects sealed again, those already under the current key,
    and those it could not open (with why, one line each)."""

    entries: int = 0
    blobs: int = 0
    bytes: int = 0
    current: int = 0
    failed: list[str] = msgspec.field(default_factory=list)


def reseal(redis, sealer: Sealer) -> ResealReport:
    """Seal every entry and blob on the server that is not under `sealer`'s current key
    again with it. Raises the server's errors."""
    report = ResealReport()
    for redis_key in redis.scan_iter(match=wire.entry_key("*"), count=1000):
        _entry(redis, sealer, redis_key, report)
    for redis_key in redis.scan_iter(match=wire.blob_key("*"), count=1000):
        _blob(redis, sealer, redis_key, report)
    return report


def _entry(redis, sealer: Sealer, redis_key: bytes, report: ResealReport) -> None:
    raw = redis.get(redis_key)
    if raw is None:
        return
    if sealer.sealed_with_current(raw):
        report.current += 1
        return
    key = wire.last_part(redis_key)
    try:
        plain = sealer.open("entry", key, raw)
    except TamperedError as err:
        log.debug("entry %s was not re-encrypted", key[:12], exc_info=True)
        report.failed.append(str(err))
        return
    again = sealer.seal("entry", key, plain)
    if int(redis.eval(REPLACE, 1, redis_key, raw, again)) == 1:
        report.entries += 1


def _blob(redis, sealer: Sealer, redis_key: bytes, report: ResealReport) -> None:
    raw = redis.get(redis_key)
    if raw is None:
        return
    if sealer.sealed_with_current(raw):  # a header and its chunks are sealed together
        report.current += 1
        return
    name = wire.last_part(redis_key)
    new: list[str] = []
    try:
        meta = wire.opened_meta(raw, name, sealer)
        old = [wire.chunk_key(name, meta.upload, i) for i in range(meta.chunks)]
        upload = uuid.uuid4().hex[:16]
        plain = sealer.open_frames("blob", name, _values(redis, old))
        for frame in sealer.seal_frames("blob", name, plain):
            new.append(wire.chunk_key(name, upload, len(new)))
            redis.set(new[-1], frame, ex=wire.CHUNK_TTL)
        if len(new) != meta.chunks:
            raise TamperedError(f"blob {name[:12]} has more chunks than its header says")
        header = wire.sealed_meta(
            wire.BlobMeta(meta.main, meta.bufs, upload, meta.size, meta.chunk, len(new)),
            name,
            sealer,
        )
        swapped = int(
            redis.eval(SWAP, 1 + len(new) + len(old), redis_key, *new, *old,
                       raw, header, len(new), RETIRED_TTL)
        )  # fmt: skip
    except TamperedError as err:
        log.debug("blob %s was not re-encrypted", name[:12], exc_info=True)
        report.failed.append(str(err))
        swapped = 0
    if swapped != 1:
        if new:
            redis.delete(*new)
        return
    report.blobs += 1
    report.bytes += meta.size


def _values(redis, keys: list[str]) -> Iterator[bytes]:
    for key in keys:
        value = redis.get(key)
        if value is None:
            raise TamperedError(f"part of blob {key.split(':')[-3][:12]} is gone")
        yield value
