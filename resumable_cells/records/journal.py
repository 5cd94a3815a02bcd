"""The completion record: an append-only journal of step events, one per run.

Each execution writes a `start` row when it begins and an `end` row when it finishes
(a hit, a whole execution, one row). A start row is written as it happens: a kernel
killed mid-step has written it, so the execution reads as `interrupted`. An end row (and
a hit's row) may wait (`append(..., later=True)`): it is written with the next row, at
`flush` (the engine's, once the cell's reply is sent, when the kernel is idle, with the
entries put then), or once 64 rows wait, whichever comes first; this process reads it
merged at once. A step's own file write is then one, not two, and a hit's none while the
user waits. A kernel killed before the flush loses those rows, as it loses the entries
not yet put at that moment: the execution reads as `interrupted` (a hit's, as not run).
The journal is a file of JSON lines,
`record/{run}.jsonl` in the store, each row appended with one `write` to a descriptor
opened with O_APPEND: rows cost a system call, not a database transaction, and
kernels of one run appending at once never interleave their rows (the kernel writes
each append whole at the end of the file). A row cut short (a disk full, a kill
in the middle of a write) is skipped when read, and the next kernel to append starts on
a new line, so that it damages no other row.

Reading merges the rows into one dict per execution; an execution that started in a
kernel session that is no longer the current one and never ended is `interrupted`.
Stores written before the journal was a file keep their rows in `record/{run}/`, a
diskcache deque: they are read first, never written again.

Beside it, `record/{run}.names` lists the names that finished executions read (one JSON
string a line), which is all a kernel needs of the record when its first step starts (the
names it watches for changes, `ipython.freshness`): a resumed run with a long history
would otherwise parse every row before its first step. Each append touches the file; it
is trusted only when it is at least as new as the journal, so rows that a kernel
appended without it (a version before it, a kernel killed between the two writes) make
the next reader build it again from the rows.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path

import diskcache

from .. import logs
from ..storage.index import open_cache
from ..storage.store import Store
from .staleness import FINAL

log = logging.getLogger(__name__)
_WAITING_MAX = 64  # rows appended `later` written at once at the latest (a loop of hits)
EXECUTION_FIELDS = (
    "id", "run", "session", "step", "cell_id", "execution_count", "key", "status", "start", "end",
    "duration_s", "saved_s", "computed", "reason", "source", "inputs", "outputs", "spend",
    "provenance",
)  # fmt: skip


class Journal:
    def __init__(self, store_dir: Path, run_id: str):
        record = Path(store_dir) / "record"
        self.path = record / f"{run_id}.jsonl"
        self.legacy = record / run_id  # the diskcache deque of stores before the file
        self.names_path = record / f"{run_id}.names"
        self._fd: int | None = None
        self._names_fd: int | None = None
        # The names file's names, once it was found current; None: not kept (not read
        # yet, or behind the journal: a reader rebuilds it, appends never touch it).
        self._names: set[str] | None = None
        self._lock = threading.Lock()
        self._merged: dict[str, dict] | None = None  # in-memory view, kept as rows append
        # The executions this kernel appended, merged, while the view is not read: an
        # execution's rows all come from the kernel that ran it, so `append` needs no
        # other row, and a resumed run's first step does not read its whole record.
        self._own: dict[str, dict] = {}
        self._waiting: list[tuple[bytes, dict]] = []  # rows appended `later`, not written

    def append(self, row: dict, *, later: bool = False) -> dict:
        """Write `row`, after the rows waiting; `later`: it waits too (see the module's
        docstring). Returns the execution it belongs to, merged so far (waiting or not).
        Raises OSError when the rows cannot be written (those waiting are dropped)."""
        line = (json.dumps(row, sort_keys=True, default=str) + "\n").encode()
        with self._lock:
            merged = _merge(self._merged if self._merged is not None else self._own, row)
            self._waiting.append((line, row))
            if not later or len(self._waiting) >= _WAITING_MAX:
                self._write_waiting()
            return merged

    def flush(self) -> None:
        """Write the rows waiting. Raises OSError when they cannot be (they are dropped:
        this process keeps them merged)."""
        with self._lock:
            self._write_waiting()

    def _write_waiting(self) -> None:
        if not self._waiting:
            return
        waiting, self._waiting = self._waiting, []  # (a failing write drops them: said once)
        if self._fd is None:
            self._fd = self._open()
        _write_all(self._fd, b"".join(line for line, _ in waiting))
        self._note_names([row for _, row in waiting])

    def input_names(self) -> set[str]:
        """The names that finished executions read: from the names file when it is
        current (a few hundred bytes), else from every row, and the file written again."""
        with self._lock:
            self._write_waiting()
            names = self._names if self._names is not None else self._current_names()
            if names is not None:
                self._names = names
                return set(names)
            journal_mtime = _mtime_ns(self.path)  # before the rows: a later row shows
            names = set()
            for row in self.rows():
                names.update(_names_read_by(row))
            self._names = names
            self._rewrite_names(journal_mtime)  # (not kept when it cannot be written)
            return set(names)

    def _note_names(self, rows: list[dict]) -> None:
        """After rows: their new names appended, and the file touched (it covers them)."""
        if self._names is None:
            return
        try:
            if self._names_fd is None:
                self._names_fd = os.open(self.names_path, os.O_WRONLY | os.O_APPEND)
            read = dict.fromkeys(n for row in rows for n in _names_read_by(row))
            new = [n for n in read if n not in self._names]
            if new:
                _write_all(self._names_fd, "".join(json.dumps(n) + "\n" for n in new).encode())
                self._names.update(new)
            os.utime(self._names_fd)
        except OSError:  # left behind the journal: the next reader builds it again
            log.debug("the names of %s were not written", self.path, exc_info=True)
            self._names = None

    def _current_names(self) -> set[str] | None:
        try:
            names_mtime = _mtime_ns(self.names_path)
            if names_mtime is None or names_mtime < (_mtime_ns(self.path) or 0):
                return None
            data = self.names_path.read_bytes()
        except OSError:
            log.debug("the names of %s could not be read", self.path, exc_info=True)
            return None
        names = set()
        for line in data.split(b"\n"):
            try:
                name = json.loads(line) if line.strip() else None
            except ValueError:  # a line cut short by a kill: the rest still count
                continue
            if isinstance(name, str):
                names.add(name)
        return names

    def _rewrite_names(self, journal_mtime: int | None) -> None:
        """Replace the names file whole. Its time is the journal's when the rows were
        read, so that a row another kernel appended meanwhile makes it behind."""
        assert self._names is not None
        tmp = self.names_path.with_name(f"{self.names_path.name}.{os.getpid()}.tmp")
        try:
            self.names_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            tmp.write_text("".join(json.dumps(n) + "\n" for n in sorted(self._names)))
            if journal_mtime is not None:
                os.utime(tmp, ns=(journal_mtime, journal_mtime))
            os.replace(tmp, self.names_path)
        except OSError:  # a read-only store: the rows are read again next time
            log.debug("the names of %s were not written", self.path, exc_info=True)
            tmp.unlink(missing_ok=True)
            self._names = None
            return
        if self._names_fd is not None:  # the replaced file's descriptor
            os.close(self._names_fd)
            self._names_fd = None

    def _open(self) -> int:
        """The journal's descriptor for appending. When the file ends in the middle of
        a row (a kernel killed while it wrote), a line break first: the cut row stays
        damaged on a line of its own and the next row is whole."""
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            size = os.fstat(fd).st_size
            if size and _last_byte(self.path, size) != b"\n":
                _write_all(fd, b"\n")
        except BaseException:
            os.close(fd)
            raise
        return fd

    def executions(self, current_session: str | None = None) -> list[dict]:
        """Like `executions(self.rows())`, without re-reading the store each time."""
        with self._lock:
            self._write_waiting()
            return _finish(self._view().values(), current_session)

    def _view(self) -> dict[str, dict]:
        if self._merged is None:  # (the file holds this kernel's rows too)
            self._merged = {}
            for row in self.rows():
                _merge(self._merged, row)
            self._own = {}
        return self._merged

    def rows(self) -> list[dict]:
        """Every row, oldest first (those of an earlier store's deque before the
        file's). A damaged row is skipped; a journal that cannot be read at all is
        said, and reads as empty."""
        if self._waiting:  # (not under the lock: those who hold it wrote them)
            self.flush()
        rows = self._legacy_rows()
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return rows
        except OSError as err:
            log.debug("the record at %s could not be read", self.path, exc_info=True)
            logs.warn(f"the record could not be read ({err})")
            return rows
        lines = [line for line in data.split(b"\n") if line.strip()]
        parsed = [row for row in map(_row, lines) if row is not None]
        if lines and not parsed:  # not one row: not a damaged row, a damaged file
            log.debug("no row of the record at %s could be read", self.path)
            logs.warn("the record could not be read (none of its rows is JSON)")
        elif len(parsed) < len(lines):
            log.debug("%d damaged rows of %s skipped", len(lines) - len(parsed), self.path)
        return rows + parsed

    def _legacy_rows(self) -> list[dict]:
        if not self.legacy.is_dir():
            return []
        cache = None
        try:
            cache = open_cache(self.legacy)
            raws = list(diskcache.Deque.fromcache(cache))
        except Exception as err:  # a damaged journal must not take the kernel down
            log.debug("the record at %s could not be read", self.legacy, exc_info=True)
            logs.warn(f"the record could not be read ({err})")
            return []
        finally:
            if cache is not None:
                cache.close()
        return [row for row in map(_row, raws) if row is not None]

    def close(self) -> None:
        """Write the rows waiting (a failure is logged: the kernel goes on without this
        journal) and let go of the files."""
        with self._lock:
            try:
                self._write_waiting()
            except OSError:
                log.warning("%s: rows of the record were not written", self.path, exc_info=True)
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
            if self._names_fd is not None:
                os.close(self._names_fd)
                self._names_fd = None
            self._names = None
            self._merged = None
            self._own = {}


def _row(raw: str | bytes) -> dict | None:
    try:
        row = json.loads(raw)
    except (TypeError, ValueError):
        return None  # a damaged row is skipped, never fatal
    return row if isinstance(row, dict) else None


def _names_read_by(row: dict) -> list[str]:
    """The input names of a finished execution's row (none for any other row)."""
    if row.get("status") not in FINAL or not isinstance(row.get("inputs"), list):
        return []
    return [
        i["name"] for i in row["inputs"] if isinstance(i, dict) and isinstance(i.get("name"), str)
    ]


def _mtime_ns(path: Path) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except FileNotFoundError:
        return None


def _write_all(fd: int, data: bytes) -> None:
    """One `write` in practice: a row is far smaller than what a file takes at once."""
    while data:
        data = data[os.write(fd, data) :]


def _last_byte(path: Path, size: int) -> bytes:
    with open(path, "rb") as f:
        f.seek(size - 1)
        return f.read(1)


def executions(rows: list[dict], current_session: str | None = None) -> list[dict]:
    """One dict per execution (start merged with end), in start order."""
    by_id: dict[str, dict] = {}
    for row in rows:
        _merge(by_id, row)
    return _finish(by_id.values(), current_session)


def _merge(by_id: dict[str, dict], row: dict) -> dict:
    eid = row.get("id")
    merged = by_id.get(eid) if eid else None  # (rows without an id are never kept)
    if merged is None:
        merged = {f: None for f in EXECUTION_FIELDS}
        merged.update(status="running", saved_s=0.0, inputs=[], outputs=[],
                      spend={"steps": 0, "tokens": 0, "cost": 0.0})  # fmt: skip
        if eid:
            by_id[eid] = merged
    merged.update({k: v for k, v in row.items() if k in EXECUTION_FIELDS and v is not None})
    return merged


def _finish(merged, current_session: str | None) -> list[dict]:
    out = []
    for e in merged:
        e = dict(e)
        if e["status"] == "running" and e["session"] != current_session:
            e["status"] = "interrupted"
        out.append(e)
    return sorted(out, key=lambda e: e["start"] or 0)


def sessions(execs: list[dict]) -> list[str]:
    return list(dict.fromkeys(e["session"] for e in execs if e.get("session")))


def load(store: Store, run_id: str, current_session: str | None = None) -> list[dict]:
    journal = Journal(store.dir, run_id)
    try:
        return executions(journal.rows(), current_session)
    finally:
        journal.close()
