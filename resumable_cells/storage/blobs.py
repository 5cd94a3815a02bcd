"""Content-addressed blob files: one stored value each, named by the value's digest.

Layout: magic, header length, JSON header, then the pickle stream and each out-of-band
buffer at 64-byte aligned offsets. Buffers are written straight from the value's memory
and read back with `readinto` into fresh buffers, so neither direction copies a large
array twice; a large buffer is hashed by a thread of its own as its chunks are read or
written.
The header carries an HMAC over the pickle stream and the seeded xxh3 digests of the
buffers: a file that fails it is never unpickled.

`write_copied` writes a blob from memory the user may be changing: through a bounce
buffer, each chunk hashed as written, and checked against a digest taken before (the
write-behind of `behind.py`).

`BlobWriter` and `BlobReader` give the same files piece by piece, without pickling, to
whatever copies blobs elsewhere and back (the team cache).
"""

from __future__ import annotations

import json
import mmap
import os
import queue
import struct
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import xxhash

from ..errors import BlobError, NotWritten, ResumableCellsError
from ..hashing import unwritten
from . import auth, serialize

MAGIC = b"RCB1"
_ALIGN = 64
_READ_CHUNK = 4 << 20  # read, then hash while the chunk is still in the CPU cache
_HASH_BEHIND_MIN = 32 << 20  # a buffer this large is hashed by a thread as it is read or written
_WRITE_CHUNK = 4 << 20
BOUNCE = 256 << 10  # the bounce buffer of `write_copied`: copied, hashed twice, written from L2
_LARGE = 1 << 20
_SMALL = 256 << 10  # blobs up to this size are read in one call
# The folder of the blob files being written: each is renamed into its blob folder
# when whole, so what a writer that died left is found with one listing.
PARTIAL = ".partial"
_MADV_HUGEPAGE = getattr(mmap, "MADV_HUGEPAGE", None) if hasattr(mmap, "MAP_ANONYMOUS") else None


def blob_path(root: Path, name: str) -> Path:
    return root / name[:2] / name


def write_blob(root: Path, name: str, value: Any, var: str = "value", pickled=None) -> int:
    """Store `value` as blob `name` unless it exists. Returns the bytes written (0 if
    it was already there). Raises serialize.Unstorable or OSError.

    Each buffer is written a chunk at a time and each chunk is hashed right after it was
    written, while it is still in the CPU cache; the header (whose digests and MAC are
    fixed-width hex, so its length is known before they are) is written last, into the
    place kept for it."""
    path = blob_path(root, name)
    if path.exists():
        return 0
    main, buffers = pickled or serialize.dumps(value, var)  # pickled: (main, buffers) done
    seed = auth.buffer_seed() if buffers else 0
    return _write_file(
        root, name, main, [b.raw() for b in buffers], lambda w, raw: _write_hashed(w, raw, seed)
    )


def write_copied(
    root: Path,
    name: str,
    main: bytes,
    buffers: list,
    expect: tuple[bytes, str],
    bounce: bytearray,
    dropped: Callable[[], bool] | None = None,
    var: str = "a value",
) -> int:
    """Write blob `name` from a value's live memory (`buffers`, views of it), which the
    user may be changing meanwhile: each chunk is copied into `bounce` and the copy is
    what is hashed and written. xxh3_128 over `expect[0]` and then every byte written
    must be `expect[1]`, a digest taken while the value could not change; otherwise
    nothing is left behind and NotWritten is raised, as it is when `dropped()` says the
    write was given up. Returns the bytes written (0 if the blob was there)."""
    if blob_path(root, name).exists():
        return 0
    seed = auth.buffer_seed() if buffers else 0
    check = xxhash.xxh3_128(expect[0])
    into = _bounce_array(bounce)

    def write_part(writer: BlobWriter, raw) -> str:
        view = memoryview(raw).cast("B")
        h = xxhash.xxh3_128(seed=seed)
        for pos in range(0, view.nbytes, len(bounce)):
            if dropped is not None and dropped():
                raise NotWritten(f"the write of blob {name[:12]} was dropped")
            chunk = _copy(view[pos : pos + len(bounce)], bounce, into)
            h.update(chunk)
            check.update(chunk)
            writer.write(chunk)
        return h.hexdigest()

    def verify() -> None:
        if check.hexdigest() != expect[1]:
            raise NotWritten(f"{var} changed in place before its bytes were written")

    return _write_file(root, name, main, [b.raw() for b in buffers], write_part, verify)


def _bounce_array(bounce: bytearray) -> Any:
    """numpy's view of the bounce buffer, when numpy is loaded: its copy lets go of the
    interpreter lock, so the user's code runs while a chunk is copied."""
    np = sys.modules.get("numpy")
    return np.frombuffer(bounce, dtype=np.uint8) if np is not None else None


def _copy(src: memoryview, bounce: bytearray, into: Any) -> memoryview:
    n = src.nbytes
    if into is not None:
        np = sys.modules["numpy"]
        np.copyto(into[:n], np.frombuffer(src, dtype=np.uint8))
    else:
        memoryview(bounce)[:n] = src
    return memoryview(bounce)[:n]


def _write_file(
    root: Path,
    name: str,
    main: bytes,
    raws: list,
    write_part: Callable[[BlobWriter, Any], str],
    verify: Callable[[], None] | None = None,
) -> int:
    """Write the blob file: the pickle stream, then each buffer through `write_part`
    (which returns its seeded digest), then, once `verify()` passed, the header; the file
    is renamed into place last."""
    header = {
        "main": len(main),
        "bufs": [memoryview(r).nbytes for r in raws],
        "xx": ["0" * 32 for _ in raws],
        "mac": "0" * 64,
    }
    with BlobWriter(root, name, len(json.dumps(header).encode())) as writer:
        writer.start_part()
        writer.write(main)
        digests = []
        for raw in raws:
            writer.start_part()
            digests.append(write_part(writer, raw))
        if verify is not None:
            verify()
        header["xx"] = digests
        header["mac"] = auth.sign(main + "".join(digests).encode())
        writer.finish(json.dumps(header).encode())
    return writer.size


def _write_hashed(writer: BlobWriter, raw, seed: int) -> str:
    view = memoryview(raw).cast("B")
    h = xxhash.xxh3_128(seed=seed)
    if view.nbytes >= _HASH_BEHIND_MIN:  # the thread only reads: the file stays this one's
        with _hashing_behind(view, h) as hash_chunk:
            _write_chunks(writer, view, hash_chunk)
    else:  # each chunk hashed right after it was written, while it is in the CPU cache
        _write_chunks(writer, view, lambda start, end: h.update(view[start:end]))
    return h.hexdigest()


def _write_chunks(writer: BlobWriter, view: memoryview, wrote: Callable[[int, int], None]) -> None:
    for pos in range(0, view.nbytes, _WRITE_CHUNK):
        end = min(pos + _WRITE_CHUNK, view.nbytes)
        writer.write(view[pos:end])
        wrote(pos, end)


class BlobWriter:
    """Writes blob file `name` from pieces. The header's length is fixed up front and
    its content written last (`finish`, with the digests known by then); the file
    appears under its name whole, or not at all.

        with BlobWriter(root, name, header_len) as w:
            w.start_part(); w.write(pickle_stream)
            w.start_part(); w.write(buffer) ...       # each buffer, in pieces or whole
            w.finish(header)                         # header_len bytes of JSON
    """

    def __init__(self, root: Path, name: str, header_len: int):
        self.path = blob_path(root, name)
        self.name = name
        self.header_len = header_len
        self.size = 0  # of the finished file
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = root / PARTIAL
        partial.mkdir(exist_ok=True)
        # `.{name}.{pid}.{random}.tmp`: sweep_partial_writes spares a live writer's
        self._tmp = partial / f".{name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
        self._f = open(self._tmp, "wb", buffering=0)
        self._done = False
        _write_all(self._f, MAGIC + struct.pack("<I", header_len) + b" " * header_len)

    def start_part(self) -> None:
        """Begin the next part (the pickle stream, then each buffer) at its alignment."""
        _pad(self._f)

    def write(self, data) -> None:
        _write_all(self._f, data)

    def finish(self, header: bytes) -> int:
        """Write the header into its place and rename the file in. Returns its size."""
        if len(header) != self.header_len:  # hex digests have a fixed width: a bug
            raise BlobError(f"blob header of {self.name[:12]} changed size")
        os.pwrite(self._f.fileno(), header, len(MAGIC) + 4)
        self.size = os.fstat(self._f.fileno()).st_size
        self._f.close()
        os.replace(self._tmp, self.path)  # readers see the whole file or none of it
        self._done = True
        return self.size

    def __enter__(self) -> BlobWriter:
        return self

    def __exit__(self, *exc) -> None:
        if not self._done:  # an error, or never finished: nothing is left behind
            self._f.close()
            self._tmp.unlink(missing_ok=True)


class BlobReader:
    """Reads blob file `name` raw, part by part, without unpickling or checking it: its
    header (`main` and `bufs`, the lengths of the pickle stream and of each buffer,
    `xx` and `mac`, their digests) and then each part's bytes.

        with BlobReader(root, name) as r:
            for n in r.parts:
                r.start_part(); r.readinto(view) ...   # n bytes in all
    """

    def __init__(self, root: Path, name: str):
        self.name = name
        try:
            self._f = open(blob_path(root, name), "rb", buffering=0)
        except FileNotFoundError:
            raise BlobError(f"blob {name[:12]} is missing") from None
        try:
            self.header = _read_header(self._f, name)
        except BaseException:
            self._f.close()
            raise
        self.parts: list[int] = [self.header["main"], *self.header["bufs"]]

    def start_part(self) -> None:
        """Skip to the next part's start (past its alignment padding)."""
        _skip_pad(self._f)

    def readinto(self, view) -> int:
        """Read into `view`; returns the bytes read (0 at the end of the file)."""
        return self._f.readinto(view)

    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> BlobReader:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_blob(root: Path, name: str, persistent_load=None) -> Any:
    """The value stored as blob `name` (`persistent_load`: see `serialize.loads`).
    Raises BlobError if it cannot be trusted."""
    path = blob_path(root, name)
    try:
        f = open(path, "rb", buffering=0)
    except FileNotFoundError:
        raise BlobError(f"blob {name[:12]} is missing") from None
    with f:
        size = os.fstat(f.fileno()).st_size
        if size <= _SMALL:
            main, buffers, header = _read_small(f, size, name)
            return _authenticated_loads(main, buffers, header, name, persistent_load)
        header = _read_header(f, name)
        _skip_pad(f)
        main = _read_exact(f, header["main"], name)
        seed = auth.buffer_seed() if header["bufs"] else 0
        buffers = [
            _read_buffer(f, n, xx, seed, name) for n, xx in zip(header["bufs"], header["xx"])
        ]
    return _authenticated_loads(main, buffers, header, name, persistent_load)


def _authenticated_loads(main: bytes, buffers: list, header: dict, name: str, load_ref) -> Any:
    if not auth.verify(main + "".join(header["xx"]).encode(), header.get("mac", "")):
        raise BlobError(f"blob {name[:12]} fails authentication")
    try:
        return serialize.loads(main, buffers, load_ref)
    except ResumableCellsError:  # raised by `load_ref`: the blob is fine
        raise
    except Exception as e:
        raise BlobError(f"blob {name[:12]} cannot be restored ({e})") from None


def _read_small(f, size: int, name: str) -> tuple[bytes, list, dict]:
    """A small blob in one read: most blobs (a step's outputs, small values) are a few
    hundred bytes, where the system calls of the streaming route cost more than the
    data. The buffers are slices of one bytearray, so restored arrays stay writable."""
    data = bytearray(size)
    if f.readinto(data) != size or size < 8 or data[:4] != MAGIC:
        raise BlobError(f"blob {name[:12]} is not a resumable-cells blob")
    view = memoryview(data)
    (n,) = struct.unpack_from("<I", data, 4)
    try:
        header = json.loads(bytes(view[8 : 8 + n]))
        if len(header["bufs"]) != len(header["xx"]) or 8 + n > size:
            raise ValueError
        pos = _aligned(8 + n)
        main = bytes(view[pos : pos + header["main"]])
        pos += header["main"]
        if len(main) != header["main"]:
            raise ValueError
    except (ValueError, KeyError, TypeError):
        raise BlobError(f"blob {name[:12]} has a damaged header") from None
    seed = auth.buffer_seed() if header["bufs"] else 0
    buffers = []
    for nbytes, expected in zip(header["bufs"], header["xx"]):
        pos = _aligned(pos)
        if pos + nbytes > size:
            raise BlobError(f"blob {name[:12]} is truncated")
        buf = view[pos : pos + nbytes]
        if xxhash.xxh3_128_hexdigest(buf, seed) != expected:
            raise BlobError(f"blob {name[:12]} fails its integrity check")
        buffers.append(buf)
        pos += nbytes
    return main, buffers, header


def _aligned(pos: int) -> int:
    return pos + (-pos % _ALIGN)


def _read_header(f, name: str) -> dict:
    lead = f.read(8)
    if len(lead) != 8 or lead[:4] != MAGIC:
        raise BlobError(f"blob {name[:12]} is not a resumable-cells blob")
    (n,) = struct.unpack("<I", lead[4:])
    try:
        header = json.loads(_read_exact(f, n, name))
        if len(header["bufs"]) != len(header["xx"]):
            raise ValueError
        return header
    except (ValueError, KeyError, TypeError):
        raise BlobError(f"blob {name[:12]} has a damaged header") from None


def _new_buffer(n: int):
    """A fresh writable buffer of `n` bytes, not zero-filled first.

    Large buffers are anonymous memory maps advised to use huge pages: the first touch
    of fresh memory (a page fault per 4 KB page otherwise) is most of what restoring a
    large array costs, and `bytearray(n)` also zero-fills it before `readinto` writes
    it again. The map is freed when the last array using it goes."""
    if n >= _LARGE and _MADV_HUGEPAGE is not None:
        m = mmap.mmap(-1, n, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        try:
            m.madvise(_MADV_HUGEPAGE)
        except OSError:  # a kernel without transparent huge pages
            pass
        unwritten.own_memory(m)  # (a value restored here is watched as a computed one)
        return m
    np = sys.modules.get("numpy")
    if np is not None and n >= _LARGE:
        return np.empty(n, dtype=np.uint8)  # numpy asks for huge pages on its own
    return bytearray(n)


def _read_buffer(f, n: int, expected: str, seed: int, name: str):
    _skip_pad(f)
    buf = _new_buffer(n)
    view = memoryview(buf).cast("B")
    h = xxhash.xxh3_128(seed=seed)
    if n >= _HASH_BEHIND_MIN:
        with _hashing_behind(view, h) as hash_chunk:
            _read_chunks(f, view, hash_chunk, name)
    else:  # each chunk hashed while it is still in the CPU cache
        _read_chunks(f, view, lambda start, end: h.update(view[start:end]), name)
    if h.hexdigest() != expected:
        raise BlobError(f"blob {name[:12]} fails its integrity check")
    return buf


def _read_chunks(f, view: memoryview, read: Callable[[int, int], None], name: str) -> None:
    """Fill `view` from `f` a chunk at a time, telling `read(start, end)` of each."""
    pos, n = 0, view.nbytes
    while pos < n:
        got = f.readinto(view[pos : pos + _READ_CHUNK])
        if not got:
            raise BlobError(f"blob {name[:12]} is truncated")
        read(pos, pos + got)
        pos += got


@contextmanager
def _hashing_behind(view: memoryview, h: Any) -> Iterator[Callable[[int, int], None]]:
    """A thread of its own hashes each chunk of `view` it is told of, in order, while the
    next is read (`readinto` and xxh3 both let go of the interpreter lock): with a core
    free, the check costs next to nothing over the read, and the digest is the one a
    single pass gives. The block ends once every chunk told of is hashed."""
    read: queue.SimpleQueue[tuple[int, int] | None] = queue.SimpleQueue()

    def hash_in_order() -> None:
        while (piece := read.get()) is not None:
            h.update(view[piece[0] : piece[1]])

    hasher = threading.Thread(target=hash_in_order, name="resumable-cells-check", daemon=True)
    hasher.start()
    try:
        yield lambda start, end: read.put((start, end))
    finally:  # (an error or an interrupt too: the thread ends before the buffer is let go)
        read.put(None)
        hasher.join()


def _read_exact(f, n: int, name: str) -> bytes:
    data = f.read(n)
    if len(data) != n:
        raise BlobError(f"blob {name[:12]} is truncated")
    return data


def _write_all(f, data) -> None:
    view = memoryview(data).cast("B")
    while view.nbytes:
        n = f.write(view)
        view = view[n:]


def _pad(f) -> None:
    rem = f.tell() % _ALIGN
    if rem:
        f.write(b"\0" * (_ALIGN - rem))


def _skip_pad(f) -> None:
    rem = f.tell() % _ALIGN
    if rem:
        f.seek(_ALIGN - rem, os.SEEK_CUR)


def sweep_partial_writes(root: Path, alive) -> int:
    """Remove temp files left by writers that died mid-write (`alive(pid)` is False).
    They are all in `PARTIAL`: one listing, where looking through every blob folder
    (where versions before it wrote them, beside their blob) took 15 ms a store open
    with 10,000 blobs. A store no version with the folder opened yet is looked through
    that way once, then given the folder."""
    partial = root / PARTIAL
    if partial.is_dir():
        temps = list(partial.glob(".*.tmp"))
    else:
        temps = list(root.glob("*/.*.tmp"))
        partial.mkdir(parents=True, exist_ok=True)
    removed = 0
    for tmp in temps:
        parts = tmp.name.split(".")
        pid = int(parts[2]) if len(parts) > 4 and parts[2].isdigit() else None
        if pid is None or not alive(pid):
            tmp.unlink(missing_ok=True)
            removed += 1
    return removed
