"""The local store: a diskcache index of small JSON rows beside content-addressed blobs.

The index never holds a pickle (its Disk refuses to unpickle keys or values), so a
tampered index row is at worst a bad JSON row, which fails its HMAC and is a miss. The
interface kept small on purpose (entries, blobs, a key-value area for runs) is where a
shared tier plugs in later.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import sqlite3
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import diskcache
from diskcache.core import MODE_PICKLE

from ..errors import StoreError
from . import auth, blobs, serialize

FORMAT_VERSION = 2  # bump on any change to keys, entries or blob layout
INLINE_MAX = 4096  # pickles up to this size live in the entry row, not in a blob file
DEFAULT_SIZE_LIMIT = 10 << 30
_HISTORY = 20


class _SafeDisk(diskcache.Disk):
    """diskcache's Disk without unpickling: rows are str, bytes or numbers only."""

    def get(self, key, raw):
        if not raw:
            raise StoreError("the index holds a pickled key; refusing to load it")
        return super().get(key, raw)

    def fetch(self, mode, filename, value, read):
        if mode == MODE_PICKLE:
            raise StoreError("the index holds a pickled value; refusing to load it")
        return super().fetch(mode, filename, value, read)


def open_cache(directory: Path) -> diskcache.Cache:
    return diskcache.Cache(
        str(directory),
        disk=_SafeDisk,
        eviction_policy="none",
        size_limit=1 << 62,
        statistics=False,
    )


def default_dir() -> Path:
    return Path(os.environ.get("RESUMABLE_CELLS_DIR") or ".resumable_cells").absolute()


class Store:
    def __init__(self, directory: Path | str | None = None, size_limit: int | None = None):
        self.dir = Path(directory).absolute() if directory else default_dir()
        _make_private_dir(self.dir)
        self.blob_dir = self.dir / "blobs"
        self._touched: dict[str, float] = {}
        self.recovered: str | None = None  # what was set aside, when the index was damaged
        self.index = self._open_index()
        self.size_limit = size_limit or int(self.index.get("cfg:size_limit", DEFAULT_SIZE_LIMIT))
        blobs.sweep_partial_writes(self.blob_dir, _pid_alive)

    def _open_index(self) -> diskcache.Cache:
        path = self.dir / "index"
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
        self.index.close()

    # -- small JSON rows ---------------------------------------------------------------
    def get_json(self, key: str, default: Any = None) -> Any:
        raw = self.index.get(key)
        return default if raw is None else json.loads(raw)

    def set_json(self, key: str, value: Any) -> None:
        self.index.set(key, json.dumps(value, sort_keys=True))

    # -- entries -----------------------------------------------------------------------
    def get_entry(self, key: str) -> dict | None:
        """The entry stored under `key`, or None. Raises StoreError on a row that fails
        authentication, so the caller can warn and treat it as a miss."""
        raw = self.index.get("entry:" + key)
        if raw is None:
            return None
        entry = json.loads(raw)
        mac = entry.pop("mac", "")
        if not auth.verify(_canonical(entry), mac):
            raise StoreError(f"entry {key[:12]} fails authentication; ignoring it")
        return entry

    def put_entry(self, key: str, entry: dict) -> None:
        entry = dict(entry, key=key)
        entry["mac"] = auth.sign(_canonical(entry))
        with self.index.transact():
            self.index.set("entry:" + key, json.dumps(entry, sort_keys=True))
            self.index.set("used:" + key, time.time())
            hist = [k for k in self.get_json("hist:" + entry["step"], []) if k != key]
            self.set_json("hist:" + entry["step"], (hist + [key])[-_HISTORY:])
        if int(self.index.get("blobbytes", 0)) > self.size_limit:
            self.evict(self.size_limit)

    @contextmanager
    def claim(self, key: str, on_wait=None):
        """Hold the right to compute `key`, so concurrent kernels sharing the store run
        a step once: a waiter is told (`on_wait(holder)`) and then finds the entry. A
        claim whose holder died is taken over. Yields whether it had to wait."""
        name = "lock:" + key
        mine = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "t": time.time()})
        waited = False
        while not self.index.add(name, mine):
            raw = self.index.get(name)
            if raw is None:
                continue
            if not _holder_alive(json.loads(raw)):
                self._delete_if(name, raw)
                continue
            if not waited and on_wait is not None:
                on_wait(json.loads(raw))
            waited = True
            time.sleep(0.05)  # poll the holder's progress; it may take as long as the step
        try:
            yield waited
        finally:
            self._delete_if(name, mine)

    def _delete_if(self, name: str, expected: str) -> None:
        with self.index.transact():
            if self.index.get(name) == expected:
                self.index.delete(name)

    def touch(self, key: str) -> None:
        """Mark an entry used, for LRU eviction. A minute's precision is plenty, and
        skipping the write keeps it off most hits."""
        now = time.time()
        if now - self._touched.get(key, 0.0) > 60:
            self.index.set("used:" + key, now)
            self._touched[key] = now

    def history(self, step: str) -> list[str]:
        return self.get_json("hist:" + step, [])

    def entries(self) -> list[tuple[str, dict]]:
        """Every readable entry, as (key, entry)."""
        out = []
        for k in self.index.iterkeys():
            if isinstance(k, str) and k.startswith("entry:"):
                try:
                    e = self.get_entry(k[6:])
                except StoreError:
                    continue
                if e is not None:
                    out.append((k[6:], e))
        return out

    def delete_entry(self, key: str) -> None:
        entry = self.get_json("entry:" + key)
        with self.index.transact():
            self.index.delete("entry:" + key)
            self.index.delete("used:" + key)
            if entry:
                hist = [k for k in self.get_json("hist:" + entry["step"], []) if k != key]
                self.set_json("hist:" + entry["step"], hist)

    def discard_entry(self, key: str, entry: dict) -> None:
        """Drop an entry that could not be restored, with its blobs: they are suspect,
        and the live run that follows writes them again."""
        self.delete_entry(key)
        for name in entry_blobs(entry):
            blobs.blob_path(self.blob_dir, name).unlink(missing_ok=True)

    # -- blobs -------------------------------------------------------------------------
    def has_blob(self, name: str) -> bool:
        return blobs.blob_path(self.blob_dir, name).exists()

    def put_blob(self, name: str, value: Any, var: str = "value", pickled=None) -> None:
        written = blobs.write_blob(self.blob_dir, name, value, var, pickled)
        if written:
            self.index.incr("blobbytes", written)

    def put_value(self, name: str, value: Any, var: str = "value") -> dict:
        """Store a value; returns its reference for an entry. Small values without
        out-of-band buffers are inlined in the entry (authenticated with it), which
        saves a file per value on every hit."""
        main, buffers = serialize.dumps(value, var)
        if not buffers and len(main) <= INLINE_MAX:
            return {"blob": name, "inline": base64.b64encode(main).decode()}
        self.put_blob(name, value, var, pickled=(main, buffers))
        return {"blob": name}

    def get_value(self, ref: dict) -> Any:
        """The value behind a reference from an entry that passed authentication."""
        if "inline" in ref:
            return serialize.loads(base64.b64decode(ref["inline"]), [])
        return self.get_blob(ref["blob"])

    def get_blob(self, name: str) -> Any:
        try:
            return blobs.read_blob(self.blob_dir, name)
        except blobs.BlobError:
            # Untrusted or damaged: drop it, so the next live run can write it again.
            blobs.blob_path(self.blob_dir, name).unlink(missing_ok=True)
            raise

    # -- size --------------------------------------------------------------------------
    def evict(self, limit: int) -> int:
        """Drop least recently used entries, then their blobs no other entry uses,
        until the blobs take at most `limit` bytes. Returns the bytes freed."""
        entries = sorted(self.entries(), key=lambda kv: self.index.get("used:" + kv[0], 0))
        sizes = {p.name: p.stat().st_size for p in self.blob_dir.glob("*/*") if p.is_file()}
        refs: dict[str, int] = {}
        for _, e in entries:
            for b in entry_blobs(e):
                refs[b] = refs.get(b, 0) + 1
        total = sum(sizes.values())
        freed = 0
        for name in [n for n in sizes if n not in refs and not n.startswith(".")]:
            freed += self._unlink_blob(name, sizes[name])  # orphans from failed puts
        while entries and total - freed > limit:
            key, entry = entries.pop(0)
            self.delete_entry(key)
            for b in entry_blobs(entry):
                refs[b] -= 1
                if refs[b] == 0:
                    freed += self._unlink_blob(b, sizes.get(b, 0))
        self.index.set("blobbytes", max(0, total - freed))
        return freed

    def _unlink_blob(self, name: str, size: int) -> int:
        blobs.blob_path(self.blob_dir, name).unlink(missing_ok=True)
        return size

    def clear(self) -> None:
        for key, _ in self.entries():
            self.delete_entry(key)
        shutil.rmtree(self.blob_dir, ignore_errors=True)
        self.index.set("blobbytes", 0)


def entry_blobs(entry: dict) -> list[str]:
    """Names of the blob files an entry uses (inlined values have none)."""
    refs = [*entry.get("bindings", []), entry.get("outputs"), entry.get("result")]
    return [r["blob"] for r in refs if isinstance(r, dict) and "blob" in r and "inline" not in r]


def _holder_alive(holder: dict) -> bool:
    if holder.get("host") != socket.gethostname():
        return time.time() - holder.get("t", 0) < 24 * 3600
    pid = holder.get("pid")
    if not isinstance(pid, int) or pid == os.getpid():
        return False  # our own pid: left over from a kernel that had it before
    return _pid_alive(pid)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _canonical(entry: dict) -> bytes:
    return json.dumps(entry, sort_keys=True, separators=(",", ":")).encode()


def _make_private_dir(path: Path) -> None:
    existed = path.exists()
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    if not existed:
        os.chmod(path, 0o700)
