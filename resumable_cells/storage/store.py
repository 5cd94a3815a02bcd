"""The local store: an index of small JSON rows beside content-addressed blob files.

Rows of the index (`index.py`: JSON only, never a pickle), written and read only by the
storage package:

    entry:{key}       an entry: bindings, outputs, result, files read, run parameters,
                      the key's preimage, the cell's source; with `mac`, an HMAC-SHA256
                      under the per-user key over its canonical JSON
    used:{key}        when the entry was last served, for least-recently-used eviction
                      (none until it is: an entry counts from when it was made)
    hist:{step}       the keys of the step's latest entries, oldest first (for `why`)
    nocache:{step}    why the step's last live run left no entry, by code id ("*": any)
    blobbytes         the bytes the blob files take
    entrycount        how many entry rows there are (counted once when missing)
    cfg:size_limit    the size limit set with `%step config --size-limit`
    run:, budget:, spent:, once:, intent:    the runs' rows (`ledger.py`)

Blob files live in `blobs/{name[:2]}/{name}` (`blobs.py`); kernels claim a key they
compute by locking a byte of the file `claims` (`claims.py`). The interface is small on
purpose (entries, blobs, the ledger): a team cache plugs in behind it (`tiers.py`).
Large values can be left to write behind (`put_value(..., later=batch)`: `deferred.py`,
`behind.py`); their blobs, once written and until their entry is put, are kept from
eviction (`keep_writing`).
"""

from __future__ import annotations

import atexit
import base64
import json
import logging
import os
import pickle
import shutil
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import diskcache

from .. import settings
from ..errors import BlobUnavailable, StoreError
from . import auth, blobs, claims, deferred, serialize
from .deferred import Batch, Check, Deferred
from .entries import Entry, Value
from .index import get_json, identity, open_cache, set_json
from .ledger import Ledger

FORMAT_VERSION = 12  # bump on any change to keys, entries or blob layout
# Pickles up to this size, their out-of-band buffers included, live in the entry row,
# not in a blob file: a small array costs no file to write, nor to open on every hit.
INLINE_MAX = 4096
DEFAULT_SIZE_LIMIT = 10 << 30
_HISTORY = 20
_ENTRIES_KEPT = 256  # entries `get_entry` keeps parsed, per store
_ENTRY_KEPT_MAX = 1 << 18  # characters: a larger row is parsed each time it is read
_TOUCH_EVERY_S = 60.0  # a minute's precision is plenty for least-recently-used eviction
ANY_CODE = "*"  # an uncached note that holds whatever the step's code
log = logging.getLogger(__name__)

__all__ = ["Store", "StoreError", "open_cache", "FORMAT_VERSION"]


class Store:
    """Entries and the blobs they name, in one directory (created 0700)."""

    def __init__(self, directory: Path | str | None = None, size_limit: int | None = None):
        self.dir = Path(directory).absolute() if directory else settings.store_dir()
        _make_private_dir(self.dir)
        self.blob_dir = self.dir / "blobs"
        self._touched: dict[str, float] = {}  # key -> when this kernel last marked it used
        self._untold: dict[str, float] = {}  # ... not yet written (`touch`)
        self._told_at = time.monotonic()
        self._parsed: dict[str, tuple[str, bytes, Entry]] = {}  # `get_entry`
        self._put: dict[str, tuple[str, frozenset[str]]] = {}  # key -> row put, its blobs
        self._no_notes: set[str] = set()  # steps whose `nocache:` row a read found absent
        self._writing: set[str] = set()  # blobs written behind whose entry is not put yet
        self._writing_lock = threading.Lock()
        # The blobs eviction must keep: those of values a kernel has not read yet
        # (`engine/restore/pending.py` sets it).
        self.pinned: Callable[[], set[str]] = set
        self._blob_source: Callable[[str], object] | None = None  # `set_blob_source`
        self.recovered: str | None = None  # what was set aside, when the index was damaged
        self.index = self._open_index()
        self.ledger = Ledger(self.index)
        self.size_limit = size_limit or int(self.index.get("cfg:size_limit", DEFAULT_SIZE_LIMIT))
        blobs.sweep_partial_writes(self.blob_dir, claims.pid_alive)
        claims.reopen(self.dir)
        if self.index.get("entrycount") is None:  # a store older than the counter
            self.index.add("entrycount", self._count_entry_rows())

    def _open_index(self) -> diskcache.Cache:
        path = index_dir(self.dir)
        try:
            index = open_cache(path)
            index.get("cfg:size_limit")  # a damaged database fails here, not later
            return index
        except sqlite3.DatabaseError as err:
            # Set the damaged index aside and start a new one: entries become misses
            # (their blobs stay and are reused), nothing is unpickled from it.
            aside = self.dir / f"index.damaged-{int(time.time())}"
            os.replace(path, aside)
            self.recovered = f"the store index was damaged ({err}); it was moved to {aside.name}"
            return open_cache(path)

    def close(self) -> None:
        _write_touched(self)
        self.index.close()

    # -- entries -----------------------------------------------------------------------
    def get_entry(self, key: str) -> Entry | None:
        """The entry stored under `key`, or None. Raises StoreError on a row that fails
        authentication or has another layout, so the caller can warn and treat it as a
        miss."""
        raw = self.index.get("entry:" + key)
        if raw is None:
            return None
        # An entry is kept parsed with the row it was parsed from and the user key that
        # authenticated it, and served again only while both are the same: it cannot go
        # stale (a replaced or tampered row differs). Parsing and checking a row takes
        # 0.1 ms for a small entry, milliseconds for one of many names. Callers only read
        # an entry (none changes one), so one object may be handed out again.
        user_key = auth.user_key()
        kept = self._parsed.get(key)
        if kept is not None and kept[0] == raw and kept[1] == user_key:
            return kept[2]
        entry = self._entry_of(raw, key)
        if len(raw) <= _ENTRY_KEPT_MAX:
            self._parsed.pop(key, None)
            self._parsed[key] = (raw, user_key, entry)
            if len(self._parsed) > _ENTRIES_KEPT:
                del self._parsed[next(iter(self._parsed))]
        return entry

    def _readable(self, raw: str) -> Entry | None:
        """The entry of a row, or None when it cannot be trusted (it is replaced)."""
        try:
            return self._entry_of(raw, "being replaced")
        except (StoreError, ValueError):
            return None

    def _entry_of(self, raw: str, key: str) -> Entry:
        row = json.loads(raw)
        mac = row.pop("mac", "")
        signed = _signed_bytes(raw, mac)
        if signed is None or not auth.verify(signed, mac):  # (a row of an earlier layout)
            if not auth.verify(auth.canonical(row), mac):
                raise StoreError(f"entry {key[:12]} fails authentication; ignoring it")
        return Entry.from_json(row)

    def has_entry(self, key: str) -> bool:
        """Whether an entry is stored under `key` (not checked: see `get_entry`)."""
        return "entry:" + key in self.index

    def put_entry(self, key: str, entry: Entry) -> None:
        """Store `entry` under `key`. An entry it replaces (`--force`, an expired one)
        releases the blob files no other entry uses."""
        entry.key = key
        signed = auth.canonical(entry.to_json())
        raw = _with_mac(signed, auth.sign(signed))
        named = set(entry.blobs())
        with self.index.transact():
            replaced = self.index.get("entry:" + key)  # (one read, as the count needs)
            if replaced is None:  # a replaced entry is not another one
                self.index.incr("entrycount")
            self.index.set("entry:" + key, raw)
            hist = [k for k in self.history(entry.step) if k != key]
            set_json(self.index, "hist:" + entry.step, (hist + [key])[-_HISTORY:])
        if replaced is not None:
            self.release(self._blobs_of(key, replaced) - named)
        self._put.pop(key, None)
        if len(raw) <= _ENTRY_KEPT_MAX:
            self._put[key] = (raw, frozenset(named))
            if len(self._put) > _ENTRIES_KEPT:
                del self._put[next(iter(self._put))]
        # Only an entry with blob files can have taken the store over its limit: blobs are
        # counted as they are written, before their entry is put (another kernel's evict
        # after their own puts).
        if named and self.used_bytes() > self.size_limit:
            self.evict(self.size_limit)

    def _blobs_of(self, key: str, raw: str) -> set[str]:
        """The blobs the row `raw` under `key` names: known when it is the row this store
        put there (a step run again with `--force`), else read from the row, which must
        authenticate (a row that does not names nothing to delete)."""
        put = self._put.get(key)
        if put is not None and put[0] == raw:
            return set(put[1])
        old = self._readable(raw)
        return set(old.blobs()) if old is not None else set()

    def touch(self, key: str) -> None:
        """Mark an entry used, for LRU eviction. The times are written together, at most
        once a minute (and before this store evicts, and when it closes), so that a hit
        makes no write: after a restart every hit is a first one, and a write of its
        own cost as much as the rest of a small hit. Times not yet written when a
        kernel dies are lost, which only makes those entries look older to eviction."""
        now = time.time()
        if now - self._touched.get(key, 0.0) > _TOUCH_EVERY_S:
            self._touched[key] = now
            self._untold[key] = now
            _UNTOLD.add(self)
        if self._untold and time.monotonic() - self._told_at > _TOUCH_EVERY_S:
            self.write_touched()

    def write_touched(self) -> None:
        """Write the times `touch` kept, in one transaction; an entry deleted since is
        skipped (its `used:` row went with it)."""
        self._told_at = time.monotonic()
        if not self._untold:
            return
        untold, self._untold = self._untold, {}
        with self.index.transact():
            for key, when in untold.items():
                if "entry:" + key in self.index:
                    self.index.set("used:" + key, when)

    def claim(self, key: str, on_wait: Callable[[dict], None] | None = None):
        """Hold the right to compute `key` (see `claims`): a context manager that
        yields whether it had to wait for another kernel."""
        return claims.claim(self.dir, key, on_wait)

    def history(self, step: str) -> list[str]:
        """Keys of `step`'s latest entries, oldest first (at most 20)."""
        return get_json(self.index, "hist:" + step, [])

    def entries(self) -> list[tuple[str, Entry]]:
        """Every readable entry, as (key, entry)."""
        out = []
        for key in self.entry_keys():
            try:
                e = self.get_entry(key)
            except StoreError:
                continue
            if e is not None:
                out.append((key, e))
        return out

    def entry_keys(self) -> list[str]:
        """The key of every entry row, readable or not (a row of an earlier format, or
        one that fails authentication, can never be served)."""
        return [
            k[6:] for k in self.index.iterkeys() if isinstance(k, str) and k.startswith("entry:")
        ]

    def delete_entry(self, key: str) -> None:
        """Forget the entry under `key` (its blobs stay: see `release`)."""
        row = get_json(self.index, "entry:" + key)
        with self.index.transact():
            if self.index.delete("entry:" + key):
                self.index.decr("entrycount")
            self.index.delete("used:" + key)
            if isinstance(row, dict) and "step" in row:
                hist = [k for k in self.history(row["step"]) if k != key]
                set_json(self.index, "hist:" + row["step"], hist)

    def discard_entry(self, key: str, entry: Entry, suspect: bool = True) -> None:
        """Drop an entry that could not be restored, with its blobs: they are suspect
        (unless not `suspect`: then only those no other entry uses), and the live run
        that follows writes them again."""
        self.delete_entry(key)
        self.release(set(entry.blobs()), suspect=suspect)

    def release(self, names: set[str], suspect: bool = False) -> int:
        """Delete the blob files among `names` that no stored entry uses (`suspect`:
        delete them all, used or not: their bytes cannot be trusted). Returns the bytes
        freed, which the size counter loses too."""
        if not names:
            return 0
        if not suspect:
            names = names - self.writing()
            for _, other in self.entries():
                names = names - set(other.blobs())
        freed = 0
        for path in (blobs.blob_path(self.blob_dir, n) for n in names):
            try:
                size = path.stat().st_size
                path.unlink()
            except FileNotFoundError:
                continue
            freed += size
        if freed:
            self.index.incr("blobbytes", -freed)
        return freed

    def clear_step(self, step: str, why: str) -> int:
        """Forget every entry of `step`; a later miss says `why`. Returns how many."""
        keys = self.history(step)
        for k in keys:
            self.delete_entry(k)
        if keys:
            self.note_uncached(step, why)
        return len(keys)

    def clear(self) -> None:
        """Forget every entry and blob (runs and records stay)."""
        for key in self.entry_keys():
            self.delete_entry(key)
        shutil.rmtree(self.blob_dir, ignore_errors=True)
        self.index.set("blobbytes", 0)

    def uncached_note(self, step: str, code: str | None = None) -> str | None:
        """Why the last live run of `step` with `code` (any code, without one) left no
        entry, when it did not."""
        raw = self.index.get("nocache:" + step)
        if raw is None:
            self._no_notes.add(step)
            return None
        notes = _notes(json.loads(raw))
        return notes.get(code or ANY_CODE) or notes.get(ANY_CODE)

    def note_uncached(self, step: str, note: str | None, code: str | None = None) -> None:
        """Keep (or, with None, forget) why `step` with `code` has no entry: two cells
        may share a step name, and one of them may be cached while the other is not."""
        if not note and step in self._no_notes:
            # The miss before this live run read no note and this store wrote none since:
            # nothing to forget, and no second read (a live step's usual case). A note
            # another kernel wrote meanwhile is left as it is.
            self._no_notes.discard(step)
            return
        self._no_notes.discard(step)
        raw = self.index.get("nocache:" + step)
        notes = _notes(None if raw is None else json.loads(raw))
        if note:
            notes[code or ANY_CODE] = note
        else:
            notes.pop(code or ANY_CODE, None)
        if notes:
            set_json(self.index, "nocache:" + step, dict(list(notes.items())[-_HISTORY:]))
        elif raw is not None:
            self.index.delete("nocache:" + step)

    # -- blobs -------------------------------------------------------------------------
    def has_blob(self, name: str) -> bool:
        return blobs.blob_path(self.blob_dir, name).exists()

    def put_blob(self, name: str, value: Any, var: str = "value", pickled=None) -> None:
        written = blobs.write_blob(self.blob_dir, name, value, var, pickled)
        if written:
            self.index.incr("blobbytes", written)

    def put_value(
        self,
        name: str,
        value: Any,
        var: str = "value",
        check=None,
        *,
        later: Batch | None = None,
        by_value: bool = False,
        pickled: tuple[bytes, list[pickle.PickleBuffer]] | None = None,
    ) -> Value:
        """Store a value; returns its reference for an entry. Small values without
        out-of-band buffers are inlined in the entry (authenticated with it), which
        saves a file per value on every hit. `check(value, main, buffers)`, given,
        sees the pickle before anything is written and may refuse it (Unstorable).
        With `later`, a value with many out-of-band bytes is not written now but added
        to that batch, to be written behind (`deferred.py`); `by_value`: `name` is the
        value's digest (`hashing.values`), which its bytes are then checked against;
        `pickled`: the value's pickle (`serialize.dumps`), when the caller made it."""
        main, buffers = pickled if pickled is not None else serialize.dumps(value, var)
        if check is not None:
            check(value, main, buffers)
        small = inline_value(name, main, buffers)
        if small is not None:
            return small
        if later is not None and deferred.behind(buffers) and not self.has_blob(name):
            made = deferred.value_check(name, value, buffers) if by_value else None
            later.add(
                Deferred(name, var, main, buffers, made or deferred.bytes_check(b"", buffers))
            )
            return Value(name)
        self.put_blob(name, value, var, pickled=(main, buffers))
        return Value(name)

    def put_pickled(
        self,
        name: str,
        main: bytes,
        buffers: list,
        var: str = "value",
        *,
        later: Batch | None = None,
        written: Check | None = None,
    ) -> Value:
        """Store a value the caller pickled (`serialize.dumps`) as `name`; returns its
        reference for an entry, inlined like `put_value`'s when small, or left to
        `later` like its large values: `written` is how its bytes are then checked
        (by default, against their digest taken now)."""
        small = inline_value(name, main, buffers)
        if small is not None:
            return small
        if later is not None and deferred.behind(buffers) and not self.has_blob(name):
            later.add(
                Deferred(name, var, main, buffers, written or deferred.bytes_check(b"", buffers))
            )
            return Value(name)
        self.put_blob(name, None, var, pickled=(main, buffers))
        return Value(name)

    def write_deferred(
        self, blob: Deferred, bounce: bytearray, dropped: Callable[[], bool] | None = None
    ) -> int:
        """Write a blob left to write behind, checked as it is written (`blobs.write_copied`):
        NotWritten when its bytes changed or `dropped()`. Returns the bytes written."""
        check = (blob.check.prefix, blob.check.digest)
        written = blobs.write_copied(
            self.blob_dir, blob.name, blob.main, blob.buffers, check, bounce, dropped, blob.var
        )
        if written:
            self.index.incr("blobbytes", written)
        return written

    def keep_writing(self, names: set[str]) -> None:
        """The blobs of an entry being written behind: eviction and `release` leave them
        alone until `done_writing` (the entry is not put yet, so no entry names them)."""
        with self._writing_lock:
            self._writing |= names

    def done_writing(self, names: set[str]) -> None:
        with self._writing_lock:
            self._writing -= names

    def writing(self) -> set[str]:
        with self._writing_lock:
            return set(self._writing)

    def get_value(self, ref: Value, persistent_load: Callable[[Any], Any] | None = None) -> Any:
        """The value behind a reference from an entry that passed authentication;
        `persistent_load` gives back the objects it was pickled with by reference."""
        if ref.inline is not None:
            # (bytearrays: an array restored from its buffer stays writable)
            bufs = [bytearray(base64.b64decode(b)) for b in ref.bufs]
            return serialize.loads(base64.b64decode(ref.inline), bufs, persistent_load)
        return self.get_blob(ref.blob, persistent_load)

    @contextmanager
    def blob_writer(self, name: str, header_len: int) -> Iterator[blobs.BlobWriter]:
        """Write blob `name` from pieces (see `blobs.BlobWriter`) and count its bytes."""
        with blobs.BlobWriter(self.blob_dir, name, header_len) as writer:
            yield writer
        self.index.incr("blobbytes", writer.size)

    def blob_reader(self, name: str) -> blobs.BlobReader:
        """Read blob `name` raw, part by part (see `blobs.BlobReader`)."""
        return blobs.BlobReader(self.blob_dir, name)

    def set_blob_source(self, source: Callable[[str], object] | None) -> None:
        """Where a blob an entry names but this store lacks comes from when it is read:
        `source(name)` copies it in (a team cache that served the entry without the
        blobs of values restored lazily) or raises why it cannot."""
        self._blob_source = source

    def get_blob(self, name: str, persistent_load: Callable[[Any], Any] | None = None) -> Any:
        if self._blob_source is not None and not self.has_blob(name):
            try:
                self._blob_source(name)
            except Exception as err:  # the blob never arrived: nothing here is suspect
                log.debug("blob %s could not be fetched", name[:12], exc_info=True)
                first = (str(err).strip() or type(err).__name__).splitlines()[0][:160]
                raise BlobUnavailable(f"the team cache did not give it: {first}") from err
        try:
            return blobs.read_blob(self.blob_dir, name, persistent_load)
        except blobs.BlobError:
            # Untrusted or damaged: drop it, so the next live run can write it again.
            blobs.blob_path(self.blob_dir, name).unlink(missing_ok=True)
            raise

    # -- size --------------------------------------------------------------------------
    def used_bytes(self) -> int:
        """The bytes the blob files take, as counted when they were written."""
        return int(self.index.get("blobbytes", 0))

    def entry_count(self) -> int:
        """How many entries the store holds, as counted when they were put and deleted."""
        return max(0, int(self.index.get("entrycount", 0)))

    def _count_entry_rows(self) -> int:
        return sum(
            1 for k in self.index.iterkeys() if isinstance(k, str) and k.startswith("entry:")
        )

    def set_size_limit(self, limit: int) -> None:
        """Change the size limit and keep it for the next kernel."""
        self.size_limit = limit
        self.index.set("cfg:size_limit", limit)

    def blob_sizes(self) -> dict[str, int]:
        """Each blob file's name and size, from the disk."""
        return {p.name: p.stat().st_size for p in self.blob_dir.glob("*/*") if p.is_file()}

    def evict(self, limit: int) -> int:
        """Drop least recently used entries, then their blobs no other entry uses,
        until the blobs take at most `limit` bytes. Returns the bytes freed."""
        self.write_touched()  # so that what this kernel served counts as used
        readable = self.entries()
        for key in set(self.entry_keys()) - {k for k, _ in readable}:
            self.delete_entry(key)  # never served: an earlier format, or tampered with
        entries = sorted(readable, key=lambda kv: self._last_used(*kv))
        sizes = self.blob_sizes()
        pinned = self.pinned()  # values this kernel reads later: kept, whatever their age
        refs: dict[str, int] = {}
        for _, e in entries:
            for b in e.blobs():
                refs[b] = refs.get(b, 0) + 1
        total = sum(sizes.values())
        freed = 0
        kept = pinned | self.writing()  # (blobs written behind: their entry is not put yet)
        for name in [n for n in sizes if n not in refs and n not in kept and n[:1] != "."]:
            freed += self._unlink_blob(name, sizes[name])  # orphans from failed puts
        while entries and total - freed > limit:
            key, entry = entries.pop(0)
            self.delete_entry(key)
            for b in entry.blobs():
                refs[b] -= 1
                if refs[b] == 0 and b not in kept:
                    freed += self._unlink_blob(b, sizes.get(b, 0))
        self.index.set("blobbytes", max(0, total - freed))
        return freed

    def _last_used(self, key: str, entry: Entry) -> float:
        """When the entry was last served, or made if later (an entry never served has no
        `used:` row: putting one would cost each live step a write of its own)."""
        used = self.index.get("used:" + key)
        return max(used if isinstance(used, (int, float)) else 0.0, entry.created or 0.0)

    def _unlink_blob(self, name: str, size: int) -> int:
        blobs.blob_path(self.blob_dir, name).unlink(missing_ok=True)
        return size


def index_dir(store_dir: Path) -> Path:
    """Where the store at `store_dir` keeps its index."""
    return store_dir / "index"


def index_identity(store_dir: Path) -> tuple[int, int] | None:
    """Which file the index of the store at `store_dir` is (device, inode); None when it
    has none: no store there yet, or one deleted since."""
    return identity(index_dir(store_dir))


# Stores whose `touch` times are not written yet: written when the kernel exits.
_UNTOLD: weakref.WeakSet[Store] = weakref.WeakSet()


@atexit.register
def _write_all_touched() -> None:
    for store in list(_UNTOLD):
        _write_touched(store)


def _write_touched(store: Store) -> None:
    try:
        store.write_touched()
    except Exception:  # a store that went away: its entries only look older
        log.debug("the use times of entries in %s were not written", store.dir, exc_info=True)


def _make_private_dir(path: Path) -> None:
    existed = path.exists()
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    if not existed:
        os.chmod(path, 0o700)


def _notes(row: Any) -> dict[str, str]:
    """The uncached notes of a `nocache:` row, by code."""
    if isinstance(row, str):  # a store from before notes were kept per code
        return {ANY_CODE: row}
    return dict(row) if isinstance(row, dict) else {}


# An entry row is the canonical JSON it is signed over (`auth.canonical`) with its `mac`
# added last: a reader checks the bytes it read, rather than encoding the row again
# (rows written before, in another layout, are checked encoded again).
_MAC_FIELD = ',"mac":"'


def _with_mac(signed: bytes, mac: str) -> str:
    return signed[:-1].decode() + _MAC_FIELD + mac + '"}'


def _signed_bytes(raw: str, mac: Any) -> bytes | None:
    """The bytes `raw`'s mac signs, when `raw` is laid out as `_with_mac` writes it."""
    if not isinstance(mac, str):
        return None
    tail = _MAC_FIELD + mac + '"}'
    if not raw.endswith(tail):
        return None
    return (raw[: -len(tail)] + "}").encode()


def inline_value(name: str, main: bytes, buffers: list) -> Value | None:
    """The reference holding a small pickle (and its buffers) itself, or None."""
    views = [
        b.raw() if isinstance(b, pickle.PickleBuffer) else memoryview(b).cast("B") for b in buffers
    ]
    if len(main) + sum(v.nbytes for v in views) > INLINE_MAX:
        return None
    bufs = tuple(base64.b64encode(v).decode() for v in views)
    return Value(name, base64.b64encode(main).decode(), bufs)
