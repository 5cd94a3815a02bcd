"""Write-behind: the large blobs of new entries written by a thread of their own while
the user goes on, each entry put under its key once its blobs are written and match.

A live step's entry is built when it ends; the values too large to write then are left
in its `Batch` (`deferred.py`). `WriteBehind.submit` queues the entry with them and
returns at once. Its thread takes the entries in the order their steps ended and writes
each one's blobs through one bounce buffer (`Store.write_deferred`): what is hashed and
checked is exactly what is written. Only when every blob of the entry is written and
matches the digest taken when the step ended is the entry put (locally, then handed to
the team cache): from then on it is served. A value changed in place before its bytes
were copied does not match: the entry is not stored, and the next run is a miss, never
the changed bytes under the old digest. A kernel killed mid-write leaves a temp file
(swept when a store opens) and no entry.

An entry with nothing left to write (every value small enough to write as the step
ended) is not handed to the thread: `put_when_idle` has the kernel's own thread put it
on its event loop's next turn, after the cell's reply, so the user does not wait for
its SQLite transaction (about a millisecond a live step) and nothing runs beside their
next cell. Waiting for it (a lookup of its key, `wait`) puts it at once, and so does
the start of the next execution or of the next step (of a loop of steps in one cell),
whichever comes first. Outside an event loop (a terminal, a script) it is put as the
step ends.

What failed is kept for the engine to say (`take_failures`); the blobs an entry that
failed had written are released. Queued entries hold views of the values' memory, never
copies; past `MAX_PENDING` bytes queued, `submit` waits for the writer. The writer runs
at a lower priority than the kernel's own thread (Linux: `NICENESS`): on a busy machine
the user's next cell goes first, and the writes take what is left.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from functools import partial

import msgspec

from ..errors import NotWritten
from . import blobs
from .deferred import Deferred
from .entries import Entry
from .store import Store

log = logging.getLogger(__name__)
MAX_PENDING = 4 << 30  # bytes of values queued before a new entry waits for the writer
NICENESS = 10  # the writer thread's, above the kernel's: the user's code goes first


class Job(msgspec.Struct):
    """An entry waiting for its blobs: `put(key, entry)` makes it visible once they are
    written; `after` run once it is done, stored or not (a claim let go of)."""

    key: str
    step: str
    entry: Entry
    blobs: list[Deferred]
    store: Store
    put: Callable[[str, Entry], None]
    code: str | None = None  # the step's code id, for the note of why it is not stored
    after: list[Callable[[], object]] = msgspec.field(default_factory=list)
    dropped: bool = False  # given up: its write stops at the next chunk
    putting: bool = False  # written and checked: being put, too late to drop
    written: set[str] = msgspec.field(default_factory=set)  # the blob files it wrote

    @property
    def nbytes(self) -> int:
        return sum(b.nbytes for b in self.blobs)


class Failure(msgspec.Struct, frozen=True):
    """An entry that was not stored, and why (a sentence for the user)."""

    step: str
    key: str
    code: str | None
    why: str


class Pending(msgspec.Struct, frozen=True):
    """The entries being written behind: how many, their bytes, their steps."""

    entries: int
    nbytes: int
    steps: list[str]


class WriteBehind:
    """One kernel's writer of entries, and its thread (started on the first entry)."""

    def __init__(self, max_pending: int = MAX_PENDING) -> None:
        self.max_pending = max_pending
        self._cv = threading.Condition()
        self._queue: deque[Job] = deque()
        self._busy: Job | None = None
        self._worker: threading.Thread | None = None
        self._failures: list[Failure] = []
        self._idle: deque[Job] = deque()  # put on the event loop's next turn
        self._idle_busy: Job | None = None
        self._idle_thread: int | None = None  # the thread whose loop puts them
        self._idle_scheduled = False
        # told (from the writer's thread) each time an entry leaves the queue, stored or
        # not, once `pending()` no longer counts it: the sidebar's figures follow
        self.on_change: list[Callable[[], object]] = []

    def submit(self, job: Job) -> None:
        """Queue an entry; returns at once, unless the entries already queued hold
        `max_pending` bytes or more: then once the writer has caught up below that."""
        with self._cv:
            while self._jobs() and self._bytes() + job.nbytes > self.max_pending:
                self._cv.wait(0.5)
            job.store.keep_writing(set(job.entry.blobs()))
            self._queue.append(job)
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(
                    target=self._work, name="resumable-cells-write", daemon=True
                )
                self._worker.start()
            self._cv.notify_all()

    def put_when_idle(self, job: Job) -> bool:
        """Queue an entry with no blob left to write, to be put by this thread's event
        loop on its next turn; False (nothing queued) when no loop runs in this thread:
        the caller puts it now."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return False
        with self._cv:
            job.store.keep_writing(set(job.entry.blobs()))
            self._idle.append(job)
            self._idle_thread = threading.get_ident()
            schedule, self._idle_scheduled = not self._idle_scheduled, True
        if schedule:
            loop.call_soon(self.put_idle)
        return True

    def put_idle(self) -> None:
        """Put the entries `put_when_idle` queued, oldest first: on the loop's turn, for
        someone waiting on them in the same thread, or before the next execution's or
        step's code runs (the engine's `pre_execute`, `run_step`: a kernel reads a
        request queued meanwhile without the loop taking a turn, a cell may run steps in
        a loop, and an entry whose step is done must not wait for the next one's end to
        be stored, or be lost if that one crashes the kernel)."""
        with self._cv:
            self._idle_scheduled = False
        while True:
            with self._cv:
                if not self._idle:
                    return
                job = self._idle_busy = self._idle.popleft()
                job.putting = True
            stored = False
            try:
                stored = self._attempt(job, partial(job.put, job.key, job.entry))
            finally:  # (an interrupt of the cell that put it: not left pending forever)
                self._done(job, stored)

    def pending(self) -> Pending:
        with self._cv:
            jobs = self._jobs()
            return Pending(len(jobs), sum(j.nbytes for j in jobs), [j.step for j in jobs])

    def is_pending(self, key: str) -> bool:
        with self._cv:
            return any(j.key == key for j in self._jobs())

    def wait(self, timeout: float | None = None, key: str | None = None) -> bool:
        """Wait until no entry (with `key`: that key's) is queued or being written, at
        most `timeout` seconds (None: as long as it takes). Returns whether none is."""
        if self._idle and self._idle_thread == threading.get_ident():
            self.put_idle()  # (its loop cannot take its turn while this thread waits)
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cv:
            while any(key is None or j.key == key for j in self._jobs()):
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cv.wait(left if left is not None and left < 0.5 else 0.5)
            return True

    def after(self, key: str, fn: Callable[[], object]) -> bool:
        """Run `fn` once the entry `key` is done (stored or not), when one is pending;
        returns False (and does not run it) when none is."""
        with self._cv:
            for job in self._jobs():
                if job.key == key:
                    job.after.append(fn)
                    return True
        return False

    def drop(self, why: str, step: str | None = None) -> list[str]:
        """Give up the pending entries (of `step`, or all): none of them is stored; the
        one being written stops at its next chunk. Returns their steps; each is a
        failure with `why`."""
        with self._cv:
            gone = [j for j in self._jobs() if (step is None or j.step == step) and not j.putting]
            queued = [j for j in gone if j in self._queue or j in self._idle]
            for job in gone:
                job.dropped = True
                self._failures.append(Failure(job.step, job.key, job.code, why))
            for job in queued:
                (self._queue if job in self._queue else self._idle).remove(job)
            self._cv.notify_all()
        for job in queued:  # (the one being written finishes in the thread)
            self._finish(job, stored=False)
        if queued:
            self._changed()
        return [j.step for j in gone]

    def take_failures(self) -> list[Failure]:
        """The entries not stored since the last call."""
        with self._cv:
            out, self._failures = self._failures, []
            return out

    # -- the thread --------------------------------------------------------------------
    def _jobs(self) -> list[Job]:
        busy = [j for j in (self._busy, self._idle_busy) if j is not None]
        return busy + list(self._queue) + list(self._idle)

    def _bytes(self) -> int:
        return sum(j.nbytes for j in self._jobs())

    def _next(self) -> Job:
        with self._cv:
            while not self._queue:
                self._cv.wait()
            self._busy = self._queue.popleft()
            return self._busy

    def _work(self) -> None:
        _yield_to_the_kernel()
        bounce = bytearray(blobs.BOUNCE)
        while True:
            job = self._next()
            self._done(job, self._attempt(job, partial(self._write, job, bounce)))
            # Waiting for the next job, this frame would still hold the last one, and
            # through its buffers the value's memory: a value the notebook has since
            # dropped (rebound, deleted) would stay in memory until another step ended.
            del job

    def _attempt(self, job: Job, work: Callable[[], object]) -> bool:
        """Run `work` (the job's writes, its put); whether the entry was stored. A
        failure is kept for the engine to say."""
        try:
            work()
            return True
        except NotWritten as err:
            log.debug("the entry of %s was not stored", job.step, exc_info=True)
            self._failed(job, f"not cached: {err}")
        except Exception as err:  # disk full, permission: the step already ran
            log.debug("the entry of %s was not stored", job.step, exc_info=True)
            why = getattr(err, "strerror", None) or err
            self._failed(job, f"not cached: the store failed ({why})")
        return False

    def _done(self, job: Job, stored: bool) -> None:
        """The job left the queue, stored or not: what waited for it is told."""
        self._finish(job, stored)
        with self._cv:
            if self._busy is job:
                self._busy = None
            if self._idle_busy is job:
                self._idle_busy = None
            self._cv.notify_all()
        self._changed()

    def _changed(self) -> None:
        for fn in list(self.on_change):
            try:
                fn()
            except Exception:  # a listener that fails never stops the writer
                log.debug("a listener of the writer failed", exc_info=True)

    def _write(self, job: Job, bounce: bytearray) -> None:
        for blob in job.blobs:
            if job.store.write_deferred(blob, bounce, lambda: job.dropped):
                job.written.add(blob.name)
        with self._cv:
            if job.dropped:
                raise NotWritten("the write was dropped")
            job.putting = True
        job.put(job.key, job.entry)

    def _failed(self, job: Job, why: str) -> None:
        with self._cv:
            if not job.dropped:  # (a dropped one was told when it was dropped)
                self._failures.append(Failure(job.step, job.key, job.code, why))

    def _finish(self, job: Job, stored: bool) -> None:
        """Let the store evict the entry's blobs again; release those it wrote when it
        was not stored; run what waited for it."""
        job.store.done_writing(set(job.entry.blobs()))
        if not stored and job.written:
            try:
                job.store.release(job.written)
            except Exception:  # the store closed meanwhile: they are orphans until evicted
                log.debug("the blobs of %s were not released", job.step, exc_info=True)
        for fn in job.after:
            try:
                fn()
            except Exception:
                log.debug("what waited for the entry of %s failed", job.step, exc_info=True)


def _yield_to_the_kernel() -> None:
    """Lower the calling thread's priority, so that on a busy machine the kernel's own
    thread (the user's next cell) runs first and the writes fill the gaps. Linux only,
    where a thread has a nice value of its own (elsewhere the id names a process)."""
    if not NICENESS or not sys.platform.startswith("linux"):
        return
    tid = threading.get_native_id()
    try:
        os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + NICENESS)
    except OSError:  # not allowed: the writer runs as it is
        log.debug("the writer thread keeps its priority", exc_info=True)
