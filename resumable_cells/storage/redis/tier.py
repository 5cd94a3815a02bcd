"""The team cache: a Redis tier behind the local store.

What it owns: the layout of entries and blobs in Redis, the team key that authenticates
them, copying a remote hit into the local store, pushing new entries from a background
thread, and staying out of the way when the server is down, slow or refusing. Runs,
budgets and records never leave the machine: only entries and the blobs they name.

Layout, every key under `rc:{REMOTE_VERSION}:`

    entry:{key}               the entry's JSON with `mac`, an HMAC-SHA256 under the team
                              key over its canonical JSON (the local store does the same
                              with the per-user key)
    blob:{name}               JSON: the blob's header (pickle stream length, buffer
                              lengths, the xxh3 of each buffer seeded from the team key,
                              and an HMAC over the stream and those digests), the upload
                              id, the body size and the chunk size
    chunk:{name}:{upload}:{i} the body, the pickle stream then each buffer with no
                              padding, in pieces of at most CHUNK bytes

A blob's chunks are written before its header, and an entry after its blobs, so a reader
that finds a key finds everything it names. Chunks of an upload that was cut off expire
after CHUNK_TTL; the next push uploads the blob again. A blob whose header exists is not
sent again (content addressing). Whatever fails the team key is a miss and is never
unpickled: a blob is verified while it is copied and signed with the user key only
once all of it checked out.

Guarantees and caveats: every command uses short socket timeouts (CONNECT_TIMEOUT,
SOCKET_TIMEOUT) and no retries; a failure marks the server down for a back-off that
doubles up to BACKOFF_MAX, during which lookups skip it; one warning per kernel says it
is unreachable. Redis Cluster is not supported (a push commits with a multi-key script).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import os
import re
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import xxhash

from ...errors import TamperedError
from ...errors import TeamCacheError as RemoteError
from .. import auth, blobs, sizes
from ..store import Store, entry_blobs

REMOTE_VERSION = 1  # bump on any change to the layout above
CHUNK = 8 << 20  # bytes per Redis value
CHUNK_TTL = 24 * 3600  # chunks of an upload that never committed expire after this
CONNECT_TIMEOUT = 0.5
SOCKET_TIMEOUT = 1.0  # lookups, in the user's cell
BULK_TIMEOUT = 10.0  # writing one CHUNK (>= 0.8 MB/s), in the background thread
BACKOFF_MIN, BACKOFF_MAX = 1.0, 30.0
MIN_FETCH_S = 10.0  # a hit may take this long, or twice the step's own duration
_PIPELINE = 4  # chunks in flight per round trip
_MAX_CHUNK = 64 << 20
_HEX = re.compile(r"^[0-9a-f]+$")
_warned = False  # one warning per kernel, whichever tier it is about

# Set the header, unless another push got there first, and keep the chunks it names.
# Returns 1 when committed, 0 when the blob was already there, -1 when a chunk is gone.
_COMMIT = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
for i = 2, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 0 then return -1 end
end
for i = 2, #KEYS do redis.call('PERSIST', KEYS[i]) end
redis.call('SET', KEYS[1], ARGV[1])
return 1
"""


# -- the team key -------------------------------------------------------------------------
def team_key() -> bytes | None:
    """The team key: RESUMABLE_CELLS_TEAM_KEY (hex, or any string), else the contents of
    the file RESUMABLE_CELLS_TEAM_KEY_FILE; None when neither is set."""
    text = os.environ.get("RESUMABLE_CELLS_TEAM_KEY")
    if not text and os.environ.get("RESUMABLE_CELLS_TEAM_KEY_FILE"):
        path = Path(os.environ["RESUMABLE_CELLS_TEAM_KEY_FILE"]).expanduser()
        try:
            text = path.read_text()
        except OSError as err:
            raise RemoteError(f"cannot read the team key file {path}: {err.strerror}") from None
    text = (text or "").strip()
    if not text:
        return None
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = text.encode()
    if len(key) < 16:
        raise RemoteError("the team key is shorter than 16 bytes; use e.g. `openssl rand -hex 32`")
    return key


def _canonical(entry: dict) -> bytes:
    return json.dumps(entry, sort_keys=True, separators=(",", ":")).encode()


def _client(url: str, timeout: float):
    try:
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry
    except ImportError:
        raise RemoteError(
            "the team cache needs the redis client: pip install 'resumable-cells[team]'"
        ) from None

    try:
        return redis.Redis.from_url(
            url,
            socket_timeout=timeout,
            socket_connect_timeout=CONNECT_TIMEOUT,
            retry=Retry(NoBackoff(), 0),
            health_check_interval=0,
        )
    except ValueError as err:
        raise RemoteError(f"{url!r} is not a Redis URL ({err}); use redis://HOST:PORT/DB") from None


def _errors() -> tuple[type[BaseException], ...]:
    """What a server that is down, slow or refusing raises (redis-py wraps socket errors)."""
    import redis

    return (redis.RedisError,)


def _describe(err: BaseException) -> str:
    text = str(err).strip() or type(err).__name__
    return text.splitlines()[0][:160]


class Tier:
    """The team cache at `url`. Foreground calls (`fetch`, `push_later`, `flush`) never
    raise on a server problem; they warn once per kernel and carry on.

    >>> tier = Tier("redis://127.0.0.1:6379/0")  # nothing connects until it is used
    """

    def __init__(self, url: str, key: bytes | None = None):
        self.url = url
        self.fast = _client(url, SOCKET_TIMEOUT)
        self.bulk = _client(url, BULK_TIMEOUT)
        self.key = key if key is not None else team_key()
        self.prefix = f"rc:{REMOTE_VERSION}:"
        self.last_error: str | None = None
        self._warning: str | None = None
        self._down_until = 0.0
        self._backoff = BACKOFF_MIN
        self._known: set[str] = set()  # keys known to be on the server
        self._cv = threading.Condition()
        self._todo: dict[str, Store] = {}
        self._failed: dict[str, Store] = {}
        self._busy: str | None = None
        self._worker: threading.Thread | None = None
        self._closed = False
        self.stats = {"entries": 0, "blobs": 0, "bytes": 0, "errors": []}
        self._reported = dict(self.stats, errors=0)  # what the last flush reported
        if self.key is None:
            self._warning = (
                f"the team cache {url} is off: set RESUMABLE_CELLS_TEAM_KEY (or "
                "RESUMABLE_CELLS_TEAM_KEY_FILE) to the key your team shares"
            )

    def k(self, *parts: str) -> str:
        return self.prefix + ":".join(parts)

    # -- health ----------------------------------------------------------------------------
    def usable(self) -> bool:
        return self.key is not None and not self._closed and time.monotonic() >= self._down_until

    def _down(self, err: BaseException) -> None:
        with self._cv:
            self.last_error = _describe(err)
            self._down_until = time.monotonic() + self._backoff
            self._backoff = min(self._backoff * 2, BACKOFF_MAX)
            if self._warning is None:
                self._warning = (
                    f"the team cache {self.url} is unreachable ({self.last_error}); steps "
                    "run from the local store or live, and it is retried in the background"
                )
            self._cv.notify_all()

    def _up(self) -> None:
        if self._down_until or self._backoff != BACKOFF_MIN:
            with self._cv:
                self._down_until, self._backoff = 0.0, BACKOFF_MIN
                self._cv.notify_all()

    def say_warning(self) -> None:
        """Print the pending warning, once per kernel (call from the user's thread)."""
        global _warned
        if self._warning and not _warned:
            _warned = True
            print(f"resumable-cells: {self._warning}", file=sys.stderr)

    # -- lookup ----------------------------------------------------------------------------
    def fetch(self, store: Store, key: str) -> dict | None:
        """The entry under `key` from the team cache, copied into `store` with its blobs
        (re-signed with the user key), or None. Raises TamperedError (a StoreError) when
        what is there fails the team key."""
        self.say_warning()
        if not self.usable():
            return None
        try:
            raw = self.fast.get(self.k("entry", key))
            if raw is None:
                self._up()
                return None
            entry = self._verify_entry(raw, key)
            # Give up when copying would take longer than running the step did.
            duration = entry.get("duration_s")
            budget = max(MIN_FETCH_S, 2 * duration if isinstance(duration, float) else 0.0)
            deadline = time.monotonic() + budget
            for name in dict.fromkeys(entry_blobs(entry)):
                if not store.has_blob(name):
                    self._pull_blob(store, name, deadline)
            self._up()
        except TamperedError:
            raise
        except _Incomplete as err:
            print(f"resumable-cells: {err}; running the step", file=sys.stderr)
            self._forget(key, err.blob)
            return None
        except _TooSlow:
            print(
                f"resumable-cells: the team cache is too slow to beat running the step "
                f"(over {budget:.1f} s); running it",
                file=sys.stderr,
            )
            return None
        except _errors() as err:
            self._down(err)
            self.say_warning()
            return None
        except OSError as err:  # the local disk, not the server
            print(
                f"resumable-cells: a team cache hit could not be copied here ({err})",
                file=sys.stderr,
            )
            return None
        self._known.add(key)
        try:
            store.put_entry(key, entry)
        except Exception as err:  # a full or locked local store: serve it anyway
            print(
                f"resumable-cells: the team cache hit was not kept locally ({err})", file=sys.stderr
            )
        return entry

    def _forget(self, key: str, blob: str | None) -> None:
        """Drop an entry whose blob lost chunks (and that blob's header), so that the
        next push of either uploads them again instead of finding them there."""
        try:
            self.fast.delete(self.k("entry", key), *([self.k("blob", blob)] if blob else []))
        except _errors():
            pass

    def _verify_entry(self, raw: bytes, key: str) -> dict:
        try:
            entry = json.loads(raw)
            mac = entry.pop("mac")
            ok = isinstance(entry, dict) and auth.verify(_canonical(entry), mac, self.key)
        except (ValueError, KeyError, TypeError, AttributeError):
            ok = False
        if not ok or entry.get("key") != key:
            raise TamperedError(f"the team cache entry {key[:12]} fails the team key; ignoring it")
        return entry

    def _pull_blob(self, store: Store, name: str, deadline: float = math.inf) -> int:
        raw = self.fast.get(self.k("blob", name))
        if raw is None:
            raise _Incomplete(f"blob {name[:12]} is missing from the team cache", name)
        meta = _parse_meta(raw, name)
        head = meta["header"]
        parts = [head["main"], *head["bufs"]]
        path = blobs.blob_path(store.blob_dir, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        # named as blobs.py names its temp files, so a sweep for dead writers spares it
        tmp = path.with_name(f".{name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
        team = _Digests(self.key, len(head["bufs"]))
        mine = _Digests(auth.user_key(), len(head["bufs"]))
        placeholder = _header(head["main"], head["bufs"], ["0" * 32] * len(head["bufs"]), "0" * 64)
        try:
            with open(tmp, "wb", buffering=0) as f:
                blobs._write_all(f, blobs.MAGIC + _u32(len(placeholder)) + placeholder)
                for part, piece in _split(self._chunks(name, meta, deadline), parts):
                    if piece is None:
                        blobs._pad(f)
                        continue
                    team.update(part, piece)
                    mine.update(part, piece)
                    blobs._write_all(f, piece)
                if team.xx() != head["xx"] or not hmac.compare_digest(team.mac(), head["mac"]):
                    raise TamperedError(f"blob {name[:12]} on the team cache fails the team key")
                real = _header(head["main"], head["bufs"], mine.xx(), mine.mac())
                if len(real) != len(placeholder):  # pragma: no cover (fixed-width fields)
                    raise _Incomplete(f"blob {name[:12]}: header size changed")
                f.seek(8)
                blobs._write_all(f, real)
            size = tmp.stat().st_size
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        store.index.incr("blobbytes", size)
        return size

    def _chunks(self, name: str, meta: dict, deadline: float = math.inf) -> Iterator[bytes]:
        keys = [self.k("chunk", name, meta["upload"], str(i)) for i in range(meta["chunks"])]
        size, chunk = meta["size"], meta["chunk"]
        for start in range(0, len(keys), _PIPELINE):
            if time.monotonic() > deadline:
                raise _TooSlow()
            batch = keys[start : start + _PIPELINE]
            values = self.fast.mget(batch)
            for i, value in enumerate(values, start):
                want = min(chunk, size - i * chunk)
                if value is None:
                    raise _Incomplete(f"part of blob {name[:12]} is gone from the team cache", name)
                if len(value) != want:
                    raise TamperedError(f"blob {name[:12]} on the team cache has a damaged chunk")
                yield value

    # -- push ------------------------------------------------------------------------------
    def push_later(self, store: Store, key: str) -> None:
        """Queue the local entry `key` for the background pusher; returns at once."""
        self.say_warning()
        if self.key is None or key in self._known or self._closed:
            return
        with self._cv:
            self._todo[key] = store
            self._failed.pop(key, None)
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(
                    target=self._work, name="resumable-cells-push", daemon=True
                )
                self._worker.start()
            self._cv.notify_all()

    def pending(self) -> int:
        with self._cv:
            return len(self._todo) + len(self._failed) + (self._busy is not None)

    def flush(self, timeout: float = 600.0) -> dict:
        """Retry failed pushes now and wait until none is queued or running. Returns what
        was pushed since the last flush: {"pushed": entries, "blobs", "bytes", "failed":
        entries left to push, "errors": [entries that cannot be pushed, and why]}."""
        self.say_warning()
        deadline = time.monotonic() + timeout
        with self._cv:
            self._todo.update(self._failed)
            self._failed.clear()
            self._down_until = 0.0  # try now, whatever the back-off says
            if self._todo and (self._worker is None or not self._worker.is_alive()):
                self._worker = threading.Thread(
                    target=self._work, name="resumable-cells-push", daemon=True
                )
                self._worker.start()
            self._cv.notify_all()
            while self._todo or self._busy is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cv.wait(min(left, 0.5))
            before, now = self._reported, self.stats
            self._reported = dict(now, errors=len(now["errors"]))
            return {
                "pushed": now["entries"] - before["entries"],
                "blobs": now["blobs"] - before["blobs"],
                "bytes": now["bytes"] - before["bytes"],
                "failed": len(self._failed) + len(self._todo) + (self._busy is not None),
                "errors": now["errors"][before["errors"] :],
            }

    def close(self) -> None:
        """No more lookups or new pushes; the worker finishes what is queued (not what
        failed: `%step push --all` on the next tier sends those) and exits."""
        with self._cv:
            self._closed = True
            self._failed.clear()
            self._cv.notify_all()

    def _work(self) -> None:
        while True:
            with self._cv:
                while True:
                    now = time.monotonic()
                    if self._failed and now >= self._down_until and not self._closed:
                        self._todo.update(self._failed)  # the back-off is over: retry
                        self._failed.clear()
                    if self._todo and now < self._down_until:
                        self._failed.update(self._todo)  # down: park them until it is over
                        self._todo.clear()
                    if self._todo:
                        break
                    if self._closed:
                        return
                    wait = self._down_until - now if self._failed else None
                    self._cv.wait(wait)
                key = next(iter(self._todo))
                store = self._todo.pop(key)
                self._busy = key
            try:
                self._push_entry(store, key)
                self._up()
            except _errors() as err:
                self._down(err)
                with self._cv:
                    self._failed[key] = store
            except Exception as err:  # a local problem (evicted, damaged): not retried
                with self._cv:
                    self.stats["errors"].append(f"{key[:12]}: {_describe(err)}")
            finally:
                with self._cv:
                    self._busy = None
                    self._cv.notify_all()

    def push_entry(self, store: Store, key: str) -> bool:
        """Push one local entry now, in this thread. Returns False if it was already
        there or is gone locally. Raises on a server problem."""
        return self._push_entry(store, key)

    def _push_entry(self, store: Store, key: str) -> bool:
        r = self.bulk
        if key in self._known:
            return False
        entry = store.get_entry(key)  # checked with the user key: only trusted data leaves
        if entry is None:
            return False
        if r.exists(self.k("entry", key)):
            self._known.add(key)
            return False
        for name in dict.fromkeys(entry_blobs(entry)):
            sent = self._push_blob(store, name)
            if sent:
                with self._cv:
                    self.stats["blobs"] += 1
                    self.stats["bytes"] += sent
        signed = dict(entry, key=key)
        signed["mac"] = auth.sign(_canonical(signed), self.key)
        r.set(self.k("entry", key), json.dumps(signed, sort_keys=True), nx=True)
        self._known.add(key)
        with self._cv:
            self.stats["entries"] += 1
        return True

    def _push_blob(self, store: Store, name: str) -> int:
        """Upload blob `name` unless the server has it. Returns the body bytes sent."""
        r = self.bulk
        meta_key = self.k("blob", name)
        if r.exists(meta_key):
            return 0
        path = blobs.blob_path(store.blob_dir, name)
        upload = uuid.uuid4().hex[:16]
        chunk_keys: list[str] = []
        try:
            with open(path, "rb", buffering=0) as f:
                head = blobs._read_header(f, name)
                parts = [head["main"], *head["bufs"]]
                mine = _Digests(auth.user_key(), len(head["bufs"]))
                team = _Digests(self.key, len(head["bufs"]))
                pipe = r.pipeline(transaction=False)
                for buf in _read_body(f, parts, name, mine, team):
                    chunk_keys.append(self.k("chunk", name, upload, str(len(chunk_keys))))
                    pipe.set(chunk_keys[-1], buf, ex=CHUNK_TTL)
                    if len(pipe) >= _PIPELINE:
                        pipe.execute()
                pipe.execute()
            if mine.xx() != head["xx"] or not hmac.compare_digest(mine.mac(), head.get("mac", "")):
                raise blobs.BlobError(f"blob {name[:12]} fails authentication; not pushed")
            size = sum(parts)
            meta = {
                "header": json.loads(_header(head["main"], head["bufs"], team.xx(), team.mac())),
                "upload": upload,
                "size": size,
                "chunk": CHUNK,
                "chunks": len(chunk_keys),
            }
            done = r.eval(_COMMIT, 1 + len(chunk_keys), meta_key, *chunk_keys, json.dumps(meta))
        except BaseException:
            if chunk_keys:
                try:
                    r.delete(*chunk_keys)
                except Exception:
                    pass  # unreachable: they expire after CHUNK_TTL
            raise
        if int(done) != 1:
            r.delete(*chunk_keys)
            if int(done) == -1:
                raise _Incomplete(f"chunks of blob {name[:12]} were evicted while it was pushed")
            return 0
        return size

    # -- listing ---------------------------------------------------------------------------
    def listing(self) -> dict:
        """What the server holds: {"steps": {step: {"entries", "bytes", "latest"}},
        "entries", "blobs", "bytes", "chunks", "unverified"}."""
        r = self.fast
        entries = list(r.scan_iter(match=self.k("entry", "*"), count=1000))
        metas = list(r.scan_iter(match=self.k("blob", "*"), count=1000))
        blob_meta: dict[str, dict] = {}
        for k_, raw in zip(metas, r.mget(metas) if metas else []):
            name = k_.decode().rsplit(":", 1)[1]
            try:
                blob_meta[name] = _parse_meta(raw, name)
            except Exception:
                continue
        steps: dict[str, dict] = {}
        unverified = 0
        for k_, raw in zip(entries, r.mget(entries) if entries else []):
            key = k_.decode().rsplit(":", 1)[1]
            try:
                if self.key is not None:
                    e = self._verify_entry(raw, key)
                else:
                    e = json.loads(raw)
                    unverified += 1
            except Exception:
                unverified += 1
                continue
            s = steps.setdefault(str(e.get("step")), {"entries": 0, "blobs": set(), "latest": 0})
            s["entries"] += 1
            s["blobs"].update(entry_blobs(e))
            s["latest"] = max(s["latest"], float(e.get("created") or 0))
        for s in steps.values():
            s["bytes"] = sum(blob_meta[b]["size"] for b in s.pop("blobs") if b in blob_meta)
        return {
            "steps": steps,
            "entries": sum(s["entries"] for s in steps.values()),
            "blobs": len(blob_meta),
            "bytes": sum(m["size"] for m in blob_meta.values()),
            "chunks": sum(m["chunks"] for m in blob_meta.values()),
            "unverified": unverified,
        }


class _TooSlow(Exception):
    """Copying an entry from the server takes longer than running the step did."""


class _Incomplete(Exception):
    """A blob that is only partly on the server (evicted by a maxmemory policy)."""

    def __init__(self, message: str, blob: str | None = None):
        super().__init__(message)
        self.blob = blob


# -- blob bodies --------------------------------------------------------------------------
class _Digests:
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


def _header(main: int, bufs: list[int], xx: list[str], mac: str) -> bytes:
    return json.dumps({"main": main, "bufs": bufs, "xx": xx, "mac": mac}).encode()


def _u32(n: int) -> bytes:
    return n.to_bytes(4, "little")


def _parse_meta(raw: bytes, name: str) -> dict:
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


def _split(chunks: Iterator[bytes], parts: list[int]) -> Iterator[tuple[int, Any]]:
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


def _read_body(f, parts: list[int], name: str, *digests: _Digests) -> Iterator[memoryview]:
    """The unpadded body of the blob file `f` (positioned after its header) in CHUNK
    pieces, each fresh (a pipeline holds several), feeding `digests` on the way."""
    buf, fill = bytearray(CHUNK), 0
    for part, n in enumerate(parts):
        blobs._skip_pad(f)
        while n:
            view = memoryview(buf)[fill : fill + min(n, CHUNK - fill)]
            got = f.readinto(view)
            if not got:
                raise blobs.BlobError(f"blob {name[:12]} is truncated")
            for d in digests:
                d.update(part, view[:got])
            fill += got
            n -= got
            if fill == CHUNK:
                yield memoryview(buf)
                buf, fill = bytearray(CHUNK), 0
    if fill or not sum(parts):
        yield memoryview(buf)[:fill]


# -- configuration and commands ------------------------------------------------------------
def from_setting(url: str | None) -> Tier | None:
    """A Tier for `url`, or None for "", "none" or "off". Raises RemoteError."""
    if not url or url.strip().lower() in ("none", "off"):
        return None
    url = url.strip()
    if not url.startswith(("redis://", "rediss://", "unix://")):
        raise RemoteError(f"{url!r} is not a Redis URL; use redis://HOST:PORT/DB (or none)")
    return Tier(url)


def describe(tier: Tier | None) -> str:
    if tier is None:
        return "team cache: none (set one with %step config --remote redis://HOST:PORT/DB)"
    state = "no team key" if tier.key is None else "up" if tier.usable() else "unreachable"
    text = f"team cache {tier.url} ({state}"
    if tier.last_error and state == "unreachable":
        text += f": {tier.last_error}"
    pending = tier.pending()
    return text + (f"; {pending} entr{'y' if pending == 1 else 'ies'} to push)" if pending else ")")


def push_report(tier: Tier, store: Store, everything: bool = False) -> str:
    """`%step push`: queue every local entry too when `everything`, then wait."""
    if tier.key is None:
        tier.say_warning()
        return f"nothing pushed: {tier._warning}"
    if everything:
        for key, _ in store.entries():
            tier.push_later(store, key)
    res = tier.flush()
    text = (
        f"pushed {res['pushed']} entr{'y' if res['pushed'] == 1 else 'ies'} "
        f"({res['blobs']} blob{'' if res['blobs'] == 1 else 's'}, "
        f"{sizes.format_size(res['bytes'])}) to {tier.url}"
    )
    if res["failed"]:
        text += (
            f"; {res['failed']} not pushed: the team cache is unreachable "
            f"({tier.last_error}). They are retried in the background and by `%step push`."
        )
    for err in res["errors"]:
        text += f"\n  not pushed {err}"
    return text


def print_listing(url: str | None) -> None:
    """`resumable-cells ls --remote [URL]`: steps, entries and sizes on the server."""
    from ...cli import _table, _when

    url = url or os.environ.get("RESUMABLE_CELLS_REMOTE")
    if not url:
        raise RemoteError("no team cache: give --remote URL or set RESUMABLE_CELLS_REMOTE")
    tier = from_setting(url)
    if tier is None:
        raise RemoteError("no team cache (--remote none)")
    try:
        info = tier.listing()
    except _errors() as err:
        raise RemoteError(f"the team cache {url} is unreachable ({_describe(err)})") from None
    print(f"team cache {url}")
    _table(
        [
            (n, s["entries"], sizes.format_size(s["bytes"]), _when(s["latest"]))
            for n, s in sorted(info["steps"].items())
        ],
        ("step", "entries", "size", "latest"),
    )
    print(
        f"\ntotal {info['entries']} entries, {info['blobs']} blobs, "
        f"{sizes.format_size(info['bytes'])} in {info['chunks']} chunks"
    )
    if info["unverified"]:
        why = "no team key set" if tier.key is None else "they fail the team key"
        print(f"{info['unverified']} entries not verified ({why})")


def attach(engine, setting: str = "") -> None:
    """At load: the traitlet `StepMagics.remote`, else RESUMABLE_CELLS_REMOTE. A bad
    setting is a warning; it never stops the extension from loading."""
    try:
        engine.remote = from_setting(setting or os.environ.get("RESUMABLE_CELLS_REMOTE", ""))
    except RemoteError as err:
        print(f"resumable-cells: no team cache: {err}", file=sys.stderr)


def configure(engine, setting: str) -> None:
    """`%step config --remote URL|none`: replace the engine's team cache. UsageError
    on a bad setting; pushes still queued on the old one finish in the background."""
    from IPython.core.error import UsageError

    try:
        tier = from_setting(setting)
    except RemoteError as err:
        raise UsageError(f"%step config --remote: {err}") from None
    if engine.remote is not None:
        engine.remote.close()
    engine.remote = tier
