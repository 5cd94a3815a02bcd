"""The engine of one kernel: what its steps share.

The notebook's namespace and shell, the store and the team cache behind it (a
`TieredStore`), the entries being written behind (`storage/behind.py`: waited for at a
lookup of their key and when the kernel ends, their failures said at the next cell),
the kernel session, the notebook's run (epoch, seed, budget) and its journal, and the
listeners the executions are told to (the sidebar's comm). One step's execution is
`execution.run_step(engine, ...)`.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import signal
import threading
import time
import uuid
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from .. import formatting, logs, module_runs, settings
from ..hashing import opaque, registry
from ..hashing.key import Key
from ..records import runs
from ..records.journal import Journal
from ..records.producers import Producers
from ..records.why import remember_uncached
from ..storage import serialize, sizes
from ..storage.behind import Job, WriteBehind
from ..storage.deferred import Batch
from ..storage.entries import Entry
from ..storage.store import Store
from ..storage.tiers import Tier, TieredStore
from .code import step_names
from .code.carry import Carry
from .code.transform import Transforms
from .restore.pending import Pending
from .state import drawn

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

log = logging.getLogger(__name__)


class Restoring(msgspec.Struct, frozen=True):
    """A session restore serves one execution of an earlier kernel session again: its
    cell, its `In [n]` then, and the key it had (anything else is not served)."""

    cell_id: str | None
    execution_count: int | None
    key: str


class Freshness(Protocol):
    """Staleness from every input, not only the record: what other cells changed (a
    parameter cell rebinding an input, a frame edited in place). The kernel's frontend
    layer attaches one (`ipython/freshness.py`: `Watcher`)."""

    def causes(self, deep: bool = False) -> dict[tuple[str, str | None], str]:
        """Stale rows (step, cell id) -> why."""
        ...

    def notify(self) -> None:
        """Tell whoever shows staleness (the sidebar) that it may have changed."""
        ...


class Engine:
    def __init__(self, shell: InteractiveShell, store: Store | None = None) -> None:
        self.shell = shell
        self.ns: dict[str, Any] = shell.user_ns
        module_runs.watch_imports()  # (done at load; again for an engine made without it)
        serialize.set_main_namespace(self.ns)
        # `ip = get_ipython()` in a step binds the shell, `opener = open` IPython's own
        # `open`: this kernel's, not data (stored as references a new kernel resolves)
        registry.add_process_object(shell, "IPython shell")
        for name, value in list(shell.user_ns_hidden.items()):
            if callable(value) and not isinstance(value, type):
                registry.add_process_object(value, f"IPython's {name}")
        self.store = store or Store()
        if self.store.recovered:
            logs.warn(self.store.recovered)
        self.session = "k-" + uuid.uuid4().hex[:12]
        self.notebook = settings.notebook_id(self.ns)
        self.run = runs.current(self.store, self.notebook)
        self.budget = runs.Budget(self.store, self.run.id)
        self.journal = Journal(self.store.dir, self.run.id)
        self.listeners: list[Callable[[str, Any], object]] = []  # the comm, tests
        self.quiet = False  # no status lines (StepMagics.quiet)
        self.transforming = False  # in `transform`: a step's body, not a user's cell
        self.restoring: Restoring | None = None  # serve this execution again, or refuse
        self.auto_quiet = 1.0  # auto mode: no status line under this (StepMagics.auto_quiet)
        self.team: Tier | None = None  # the team cache, when one is configured
        self.cache = TieredStore(self.store)  # the store, then the team cache
        self.pending = Pending(self.store)  # names a hit bound, whose values are unread
        self.carry = Carry()  # digests the last live step took at its end, for the next key
        self.producers = Producers()  # the step that bound each name, for provenance
        self.identity = settings.identity()  # who entries say computed them (share_identity)
        self.store.pinned = self.pending.pinned
        self.step_spend = {"tokens": 0, "cost": 0.0}  # of the step running now
        self.freshness: Freshness | None = None  # staleness from every input
        self.names = step_names.Names()  # warns when two cells share a name, not their code
        self._transforms = Transforms(shell)
        self.writes = WriteBehind()  # entries whose values are written behind
        self.writes.on_change.append(lambda: self.emit("writing", None))
        self.write_wait = settings.write_wait()  # seconds waited for them, at most
        # A cell outside %%step may change any figure: the digests of drawings move.
        hooks = shell.events.callbacks["post_run_cell"]
        if opaque.after_cell not in hooks:
            shell.events.register("post_run_cell", opaque.after_cell)
        self._record_scheduled = False  # `flush_record` is on the event loop's way
        # (first the entries put and the rows written when idle, should the loop not
        # have taken its turn)
        shell.events.register("pre_execute", self.at_idle)
        shell.events.register("pre_run_cell", self.report_writes)
        # Whether the notebook seeded a global generator, from the cells it ran so far.
        self.seeding = drawn.Seeding(getattr(shell.history_manager, "input_hist_raw", ()))
        shell.events.register("pre_run_cell", self.seeding.cell_started)
        atexit.register(self.end_writes)

    # -- the record -----------------------------------------------------------------------
    def record(self) -> list[dict[str, Any]]:
        return self.journal.executions(self.session)

    def staleness(self) -> dict[tuple[str, str | None], str]:
        """Stale rows (step, cell id) -> why: from every input when the freshness
        watcher is attached (`ipython.freshness`), else from the record alone."""
        if self.freshness is not None:
            return self.freshness.causes(deep=True)
        from ..records.staleness import causes

        return causes(self.record(), session=self.session)

    def snapshot(self) -> dict[str, Any]:
        from ..records.snapshot import build

        self.save_spend()
        self.flush_record()  # (the snapshot reads the record from the store)
        snap = build(self.store, self.run, self.session)
        snap["cache"]["writing"] = self.writing()  # the kernel's own: not in the store
        return snap

    def notify_snapshot(self) -> None:
        self.emit("snapshot", None)

    def emit(self, kind: str, payload: Any) -> None:
        """Tell every listener; one that fails is logged and never fails a cell."""
        for listener in list(self.listeners):
            try:
                listener(kind, payload)
            except Exception:  # a frontend that went away
                log.debug("a listener failed on %s", kind, exc_info=True)

    def record_soon(self) -> None:
        """A row waits in the journal (an end row, a hit's): written on the event loop's
        next turn, once the cell's reply is sent, unless something writes it first (the
        next row, the next execution, a read of the record, the kernel's end). Where no
        loop runs (a terminal, a script), now."""
        if self._record_scheduled:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush_record()
            return
        self._record_scheduled = True
        loop.call_soon(self.flush_record)

    def flush_record(self) -> None:
        """Write the journal's waiting rows; a failure is said and logged, never raised
        (the rows stay in this kernel's view of the record)."""
        self._record_scheduled = False
        try:
            self.journal.flush()
        except Exception as err:
            log.debug("rows of the record were not written", exc_info=True)
            logs.warn(f"the record could not be written ({err})")

    def at_idle(self, *_: Any) -> None:
        """Before an execution's code runs: the entries and the record's rows the last
        one left waiting are written, in that order (a row that says `live` after its
        entry was put)."""
        self.writes.put_idle()
        self.flush_record()

    # -- the run --------------------------------------------------------------------------
    def start_step_spend(self) -> None:
        """A live step begins: what `step.spend` adds from now on is its own."""
        self.step_spend = {"tokens": 0, "cost": 0.0}

    def spend(self, tokens: int = 0, cost: float = 0.0) -> None:
        self.budget.add(tokens=tokens, cost=cost)
        self.step_spend["tokens"] += int(tokens)
        self.step_spend["cost"] += float(cost)

    def save_spend(self) -> None:
        """Write the steps the budget counted and has not written yet (`runs.Budget`),
        before the store is read another way, or left."""
        try:
            self.budget.save()
        except Exception:  # a failing store: it says so where it is read
            log.debug("the budget's steps were not written", exc_info=True)

    def new_run(self) -> runs.Run:
        self.save_spend()
        self.journal.close()
        self.run = runs.new(self.store, self.notebook)
        self.budget = runs.Budget(self.store, self.run.id)
        self.journal = Journal(self.store.dir, self.run.id)
        return self.run

    # -- the store and the team cache -----------------------------------------------------
    def set_store(self, store: Store) -> None:
        """Use `store` from now on; the values hits left unread are read from the old one
        first (they would be lost with it)."""
        self.pending.materialise_all(self.ns)
        self.pending.store = store
        store.pinned = self.pending.pinned
        self._give_up_writes("the store changed before its values were written")
        self.save_spend()
        self.journal.close()
        self.store.close()
        self.store = store
        self.cache = TieredStore(store, [self.team] if self.team else [])
        self.run = runs.current(store, self.notebook)
        self.budget = runs.Budget(store, self.run.id)
        self.journal = Journal(store.dir, self.run.id)

    def set_team(self, tier: Tier | None) -> None:
        """Replace the team cache (None: none); pushes queued on the old one finish."""
        if self.team is not None:
            self.team.close()
        self.team = tier
        self.cache = TieredStore(self.store, [tier] if tier else [])

    # -- entries written behind -----------------------------------------------------------
    def write_behind(self, key: Key, step: str, entry: Entry, later: Batch) -> None:
        """Put `entry` under its key once the values in `later` are written and match
        the digests they had when the step ended; returns at once. With none left to
        write, it is put when the kernel is idle (`WriteBehind.put_when_idle`), or now
        (raising why it failed) where no event loop runs."""
        code = key.preimage.get("code")
        job = Job(key.address, step, entry, later.blobs, self.store, self._put_written, code)
        if later.blobs:
            self.writes.submit(job)
        elif not self.writes.put_when_idle(job):  # (no event loop: a terminal, a script)
            self._put_written(key.address, entry)

    def _put_written(self, key: str, entry: Entry) -> None:
        """Put an entry whose values are written: locally, then to the team cache set
        now (it may have changed since its step ran)."""
        self.cache.put(key, entry)

    def wait_for_writes(self, timeout: float | None = None) -> bool:
        """Wait until every entry being written behind is stored (or failed), at most
        `timeout` seconds (None: as long as it takes). Returns whether none is left."""
        return self.writes.wait(timeout)

    def wait_for_entry(self, key: str) -> bool:
        """Before a lookup: wait for the entry `key` when it is being written behind, at
        most `write_wait` seconds. Returns whether it is done (stored or not)."""
        return not self.writes.is_pending(key) or self.writes.wait(self.write_wait, key)

    def writing(self) -> dict[str, Any]:
        """{"entries", "bytes", "steps"} being written behind, for `%step status` and
        the sidebar."""
        pending = self.writes.pending()
        return {"entries": pending.entries, "bytes": pending.nbytes, "steps": pending.steps}

    def drop_writes(self, why: str, step: str | None = None) -> list[str]:
        """Give up the entries being written (of `step`, or all); returns their steps."""
        steps = self.writes.drop(why, step)
        self.report_writes(quiet=True)
        return steps

    def report_writes(self, *_: Any, quiet: bool = False) -> None:
        """Say which entries written behind were not stored, and why (IPython calls it
        before each cell: a write fails after its own cell is done); the next miss of
        their step says it too. `quiet`: only that note."""
        for failure in self.writes.take_failures():
            if not quiet:
                logs.warn_step(failure.step, f"{failure.why}; it runs again next time")
            try:
                remember_uncached(self.store, failure.step, failure.why, failure.code)
            except Exception:  # the store failing too: the warning said it
                log.debug("why %s was not stored is not kept", failure.step, exc_info=True)

    def end_writes(self) -> list[str]:
        """The kernel ends: wait for the entries being written up to `write_wait`
        seconds (less when its manager runs out of patience first and sends SIGTERM),
        then drop the rest, saying which steps were not stored."""
        why = "the kernel ended before its values were written"
        try:
            return self._give_up_writes(why, at_exit=True)
        except Exception:  # at exit nobody may see a traceback: the log keeps it
            log.debug("the writes were not ended cleanly", exc_info=True)
            return []
        finally:
            try:
                self.journal.flush()  # (after the entries: their rows say what they did)
            except Exception:
                log.debug("rows of the record were not written at exit", exc_info=True)

    def _give_up_writes(self, why: str, at_exit: bool = False) -> list[str]:
        if not self.writes.pending().entries:
            return []
        t0, done = time.monotonic(), False
        with _sigterm_ends_the_wait() if at_exit else nullcontext():
            done = self.writes.wait(self.write_wait)
        steps = [] if done else self.writes.drop(why)
        if steps:
            with _sigterm_ends_the_wait() if at_exit else nullcontext():
                self.writes.wait(1.0)  # the one being written stops, its temp file removed
        self.report_writes(quiet=True)
        if steps:
            say = logs.warn_at_exit if at_exit else logs.warn
            say(
                f"{sizes.count(len(steps), 'entry', 'entries')} not stored, {why} (waited "
                f"{formatting.duration(time.monotonic() - t0)}): {', '.join(steps)}"
            )
        return steps

    def close(self) -> None:
        """The extension is unloaded: its writes ended, its hooks gone, the store closed."""
        self.end_writes()
        atexit.unregister(self.end_writes)
        for event, hook in (
            ("pre_execute", self.at_idle),
            ("pre_run_cell", self.report_writes),
            ("pre_run_cell", self.seeding.cell_started),
        ):
            try:
                self.shell.events.unregister(event, hook)
            except ValueError:  # (not registered: nothing to undo)
                log.debug("the hook on %s was not registered", event, exc_info=True)
        self.save_spend()
        self.journal.close()
        self.store.close()

    # -- the shell ------------------------------------------------------------------------
    @property
    def hidden(self) -> dict[str, Any]:
        """IPython's own names (`In`, `Out`, `exit`, ...) and their values."""
        hidden: dict[str, Any] = self.shell.user_ns_hidden
        return hidden

    @property
    def history(self) -> tuple[dict[str, Any], ...]:
        """IPython's own dicts that hold results it showed: its hidden names (`_`, `_2`;
        `Out` is one of them), its displayhook's `_`, `__`, `___` and the last cell's
        result. Like `Out`, they keep what they showed when a hit replaces it
        (`units/replaced.py`)."""
        shell = self.shell
        hook = getattr(shell, "displayhook", None)
        holders = (hook, getattr(hook, "exec_result", None), shell.last_execution_result)
        attrs = (d for h in holders if isinstance(d := getattr(h, "__dict__", None), dict))
        return (self.hidden, *attrs)

    def transform(self, cell: str, shadowed: Collection[str] = ()) -> str:
        """The cell as IPython transforms it now (`!cmd`, `%magic` lines become calls;
        `code/transform.py`); `shadowed`: names taken as bound (a plan's)."""
        self.transforming = True  # (auto mode leaves what the engine transforms)
        try:
            return self._transforms(cell, shadowed)
        finally:
            self.transforming = False

    def display_bundle(self, value: Any) -> dict[str, Any]:
        """The mime bundle IPython would display for `value`."""
        formatter = self.shell.display_formatter
        assert formatter is not None  # an instance trait, set when the shell is built
        bundle: dict[str, Any] = formatter.format(value)[0]
        return bundle


class _Terminated(Exception):
    """SIGTERM while the ending kernel waits for its writes."""


def _terminated(signum: int, frame: object) -> None:
    raise _Terminated


@contextmanager
def _sigterm_ends_the_wait() -> Iterator[None]:
    """Within the block, SIGTERM (a kernel manager out of patience: Jupyter's sends it
    after half its `shutdown_wait_time`) ends the block rather than the process: the
    writes waited for are dropped and said, and the process goes on ending."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    try:
        previous = signal.signal(signal.SIGTERM, _terminated)
    except (ValueError, OSError):  # an interpreter that does not let us: wait as told
        log.debug("SIGTERM is not caught while the writes end", exc_info=True)
        yield
        return
    try:
        yield
    except _Terminated:
        log.debug("SIGTERM while the kernel waited for its writes", exc_info=True)
    finally:
        signal.signal(signal.SIGTERM, previous)
