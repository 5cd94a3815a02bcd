"""One execution of a `%%step` cell: its key, then a hit served or a live run.

The flow: analyse the cell, compute its key (fail closed: a key that cannot be computed
runs the step live, uncached), look the key up in the store and the team cache and
serve a valid entry; otherwise take the store's claim on the key (another kernel
computing it makes this one wait, then serve), run the body live under the budget, the
tripwire and output capture, and store the entry. What the execution tells is its
`Recording`; what it stores is built in `keep/`, what a hit restores is loaded and
applied in `restore/`. Nothing of a failed or interrupted run is cached, and a failing
store never fails the cell.

The execution is one coroutine: it suspends only where a body with top-level `await`
awaits, and IPython awaits it then (`AwaitedStep`); any other body runs it to its end at
once, without an event loop.
"""

from __future__ import annotations

import logging
import time
from asyncio import CancelledError
from collections.abc import Coroutine, Generator, Iterator
from contextlib import contextmanager, nullcontext
from functools import partial
from typing import TYPE_CHECKING, Any, NamedTuple

import msgspec
import xxhash
from IPython.core.error import UsageError

from ..display import capture, figures, widgets
from ..display import result as shown_result
from ..display.prompt import prompt_number
from ..errors import (
    BlobUnavailable,
    BudgetExceeded,
    KeyComponentError,
    MissingDeps,
    NotRestored,
    NotServed,
    StepRefused,
    StoreError,
    Unfaithful,
    Unhashable,
)
from ..hashing import key as step_key
from ..hashing import opaque
from ..hashing.reach import Known
from ..hashing.values import Hasher
from ..records import provenance, why
from ..storage.entries import Entry, Provenance
from ..storage.store import FORMAT_VERSION
from . import collector
from .code import inputs, nondeterminism, step_code
from .kernel import Engine
from .live import body, step_object
from .recording import Recording
from .restore import apply, load, validity
from .state import drawn, library_settings, process_state, warned
from .state import shown as shown_settings

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from .live import trace as live_trace
    from .live import tripwire
    from .objects.identities import Identities
    from .state.settings_read import Read

log = logging.getLogger(__name__)
WAYS_OUT = (
    "Exclude it with `--ignore NAME`, mark the step `--effect`, "
    "or teach it with `resumable_cells.register_hasher(type, fn)`"
)


class StepArgs(msgspec.Struct, frozen=True):
    """The flags of one `%%step` line (see `ipython.stepargs`)."""

    name: str | None = None
    effect: bool = False
    force: bool = False
    ignore: tuple[str, ...] = ()
    version: str | None = None
    deps: tuple[str, ...] = ()
    ttl: float | None = None  # seconds an entry is served for; not part of the key
    auto: bool = False  # put on the cell by auto mode: a derived name, a quiet status line


def header_of(args: StepArgs, line: str) -> str | None:
    """The cell's first line as the user sees it: `%%step ...`, or none when auto mode
    put the magic on the cell (tracebacks count the cell's lines from its code)."""
    return None if args.auto else f"%%step {line}"


def run_step(engine: Engine, args: StepArgs, line: str, cell: str) -> Any:
    """Run the cell `cell` of `%%step {line}`: returns its last expression's value (on
    a hit, the stored one) for IPython to display. Raises what the cell raises, a
    SyntaxError with the cell's own line numbers, UsageError, or StepRefused.

    A body with top-level `await` gives an `AwaitedStep` instead, which the cell awaits
    (`ipython/awaiting.py` rewrites it so), or a UsageError when the cell does not."""
    __tracebackhide__ = True  # noqa: F841 (IPython hides this frame in tracebacks)
    # The entry of a step before it in this cell (a loop of agent turns) is put first:
    # a crash in this step must not take the last one's with it.
    engine.writes.put_idle()
    transformed = engine.transform(cell)
    try:
        code = step_code.of(engine.shell, transformed)
    except SyntaxError as err:
        raise _syntax_error(engine, err, args, line, cell) from None
    name = args.name or code.info.default_name()
    if code.awaits and not body.awaited_by_cell():
        raise _not_awaited(name)
    execution = Execution(engine, name, args, code, line, cell, transformed)
    count = prompt_number(engine.shell)
    clash = engine.names.check(name, code.info.normalised, execution.rec.cell_id, count)
    if clash and not args.auto:  # (auto mode's names are derived, not the user's)
        execution.rec.warn(clash)
    if args.auto:  # auto mode wrapped the request's whole cell: it is this step
        execution.rec.quiet_below = engine.auto_quiet
        execution.rec.cell_is_step = engine.restoring is None
    if code.awaits:
        return AwaitedStep(execution.go())
    return _to_the_end(execution.go())


def run_unstored(shell: InteractiveShell, args: StepArgs, line: str, cell: str) -> Any:
    """Run the cell `cell` of `%%step {line}` as the plain cell would run, when there is
    no engine to run it as a step (its store cannot be opened): caching never breaks the
    computation. Returns and raises what `run_step` does, nothing recorded or stored."""
    __tracebackhide__ = True  # noqa: F841
    transformed = shell.transform_cell(cell)
    try:
        code = step_code.of(shell, transformed)
    except SyntaxError as err:
        raise body.syntax_error(shell, err, line, cell) from None
    run = (shell, shell.user_ns, line, cell, transformed)
    if code.awaits:
        if not body.awaited_by_cell():
            raise _not_awaited(args.name or code.info.default_name())
        return AwaitedStep(_awaited_unstored(code.quiet, *run))
    result = body.run(*run)
    return None if code.quiet else result


async def _awaited_unstored(quiet: bool, *run: Any) -> Any:
    __tracebackhide__ = True  # noqa: F841
    result = await body.run_awaiting(*run)
    return None if quiet else result


def _not_awaited(name: str) -> UsageError:
    return UsageError(
        f"%%step {name}: the body has a top-level `await`, which runs only in a cell "
        "IPython awaits, with autoawait on (the default in Jupyter). Turn it on with "
        "`%autoawait on`, or await inside an `async def` defined in a plain cell."
    )


class AwaitedStep:
    """A step whose body has top-level `await`: the cell awaits it, in IPython's event
    loop, as it would await the plain cell."""

    def __init__(self, coroutine: Coroutine[Any, Any, Any]) -> None:
        self._coroutine = coroutine

    def __await__(self) -> Generator[Any, None, Any]:
        return self._coroutine.__await__()


def _to_the_end(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Run an execution whose body does not await: nothing in it suspends, so it runs
    to its end at once, without an event loop."""
    __tracebackhide__ = True  # noqa: F841
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    coroutine.close()
    raise RuntimeError("a step without top-level await was suspended")


def _syntax_error(
    engine: Engine, err: SyntaxError, args: StepArgs, line: str, cell: str
) -> SyntaxError:
    """The error for the cell itself, recorded as an `error` execution."""
    fixed = body.syntax_error(engine.shell, err, header_of(args, line), cell)
    name = args.name or "cell-" + xxhash.xxh3_64_hexdigest(cell.encode())[:8]
    rec = Recording(engine, name)
    rec.started()
    rec.finished("error", reason=f"SyntaxError: {err.msg}")
    return fixed


class Ran(NamedTuple):
    """What a live body left: its result, its outputs, the tripwire's findings (a pure
    step's), the result's MIME bundle, and what its values and outputs were made with:
    the settings that make text and figures it read (`state/settings_read.py`) and the
    warnings it showed (`state/warned.py`)."""

    result: Any
    outputs: list[Any]
    findings: tripwire.Findings | None
    shown: shown_result.Bundle | None
    read: Read.Parts
    warned: list[warned.Warned]


_WHY = {  # why a call of `nondeterminism.calls` makes a hit differ from a live run
    nondeterminism.CHANGES: "its result changes between runs, so a cached replay would diverge",
    nondeterminism.DRAWS: (  # (`state/drawn.py`)
        "it draws from the global generator, so a hit gives back the numbers it drew when "
        "it ran (once the notebook seeded the generator, it runs again when the generator "
        "has moved)"
    ),
    nondeterminism.UNSEEDS: (
        "it seeds a generator from the system's entropy, so its numbers change between "
        "runs and a hit gives back the ones it drew when it ran"
    ),
}


class Execution:
    """One run of `%%step`: sequences the key, the lookup, the claim and the live run."""

    def __init__(
        self,
        engine: Engine,
        name: str,
        args: StepArgs,
        code: step_code.StepCode,
        line: str,
        cell: str,
        transformed: str,
    ) -> None:
        self.engine = engine
        self.name = name
        self.args = args
        self.code = code
        self.info = code.info
        self.line = line
        self.cell = cell
        self.transformed = transformed
        self.rec = Recording(engine, name)
        self.key: step_key.Key | None = None
        self.carried: dict[str, Known] = {}  # what the key took from the step before
        self.found = False  # the lookup found an entry (served or not)
        self.collector = collector.Paused()  # off for the engine's work, not the body's

    @property
    def known_key(self) -> step_key.Key:
        """The key, where the flow has one: `_go` looks up, claims and serves only with
        a key, and a live run is kept only without a `key_problem`, i.e. with one."""
        assert self.key is not None, "the step has no key"
        return self.key

    async def go(self) -> Any:
        """The whole execution. It suspends only where its body awaits (`AwaitedStep`);
        a body without `await` runs it to the end at once (`_to_the_end`)."""
        __tracebackhide__ = True  # noqa: F841
        try:
            with self.engine.carry.step(), self.collector:
                return await self._go()
        except (KeyboardInterrupt, CancelledError):  # Ctrl-C (in an awaited cell: a cancel)
            self.rec.interrupted()
            raise

    async def _go(self) -> Any:
        __tracebackhide__ = True  # noqa: F841
        key_problem = self._compute_key()
        if self.engine.restoring is not None:
            return self._serve_as_before(key_problem)
        if not self.args.effect:
            self._warn_nondeterminism()
        reason = None
        if self.key is not None and not self.args.effect and not self.args.force:
            served, reason = self._try_serve()
            if served is not None:
                return served[0]
        if self.args.force:
            reason = "--force"
        if self.key is None or self.args.effect:
            return await self._run_live(reason, key_problem)
        with self._claim() as waited:
            # Another kernel may have stored it while this one waited for the claim, or
            # between the lookup above and taking the claim (not when the lookup found
            # one that cannot be served here: it would be loaded and refused again).
            if not self.args.force and (waited or not self.found and self._stored_meanwhile()):
                served, _ = self._try_serve()
                if served is not None:
                    return served[0]
            return await self._run_live(reason, key_problem)

    def _serve_as_before(self, key_problem: KeyComponentError | None) -> Any:
        """A session restore: serve the entry this execution was served from (or made)
        in the earlier session, under the same key, or raise NotServed saying why; it
        never runs the body."""
        expected = self.engine.restoring.key if self.engine.restoring else None
        if self.args.effect:
            raise NotServed(self.name, "an effect: it runs every time, so it is not restored")
        if self.key is None:
            raise NotServed(self.name, f"its key cannot be computed ({key_problem})")
        if self.key.address != expected:
            raise NotServed(self.name, self._differs_from(expected))
        served, reason = self._try_serve()
        if served is None:
            raise NotServed(self.name, reason or "its entry is gone")
        return served[0]

    def _differs_from(self, expected: str | None) -> str:
        """Why this execution's key is not the one it had: what changed since."""
        old = (
            self.rec.best_effort(None, self.engine.store.get_entry, expected) if expected else None
        )
        if old is None:
            return "its entry is gone (evicted or cleared)"
        changed = why.miss_reason_between(old.preimage, self.known_key.preimage)
        if changed == "code changed":
            return "the cell was edited since it ran"
        if changed and changed.startswith("input "):
            # what a plain cell set is not in the record (in auto mode every cell is)
            return f"{changed} (a cell that is not a step sets it: run it, or use auto mode)"
        return changed or "its key differs"

    def _stored_meanwhile(self) -> bool:
        has_entry = self.engine.store.has_entry
        return bool(self.rec.best_effort(None, has_entry, self.known_key.address))

    def _compute_key(self) -> KeyComponentError | None:
        """Set the key (None when a component cannot be computed: returned, to say
        why the step is not cached). UsageError on a --deps pattern matching nothing."""
        engine = self.engine
        carried = self.carried = engine.carry.take(engine.ns)  # the step before's
        known = {**carried, **engine.pending.known()} if engine.pending else carried
        try:
            self.key, self.rec.inputs = step_key.compute(
                format_version=FORMAT_VERSION,
                step=self.name,
                normalised=self.info.normalised,
                version_tag=self.args.version,
                ns=engine.ns,
                deps=list(self.args.deps),
                known=known,
                settings=partial(library_settings.digests, ns=engine.ns),
                **inputs.of_cell(
                    self.info, self.args.ignore, engine.ns, engine.hidden, engine.pending
                ),
            )
        except MissingDeps as err:
            raise UsageError(f"%%step {self.name}: {err}") from None
        except KeyComponentError as err:
            return err
        engine.carry.used(carried, self.key.digests)
        self.rec.key = self.key.address
        return None

    def _warn_nondeterminism(self) -> None:
        for call, replacement, kind in nondeterminism.calls(self.info, self.engine.ns):
            self.rec.warn(f"calls {call}() directly: {_WHY[kind]}. Use {replacement} instead.")

    @contextmanager
    def _claim(self) -> Iterator[bool]:
        """The store's compute claim on this key; without one (store failing), run. An
        entry written behind keeps it until it is stored: another kernel waits, then
        serves it, rather than computing it again meanwhile."""
        key = self.known_key.address
        try:
            claim = self.engine.store.claim(key, self._told_to_wait)
            waited = claim.__enter__()
        except Exception:
            log.debug("no claim on %s: the step runs unclaimed", self.name, exc_info=True)
            yield False
            return
        try:
            yield waited
        finally:
            release = partial(self.rec.best_effort, None, claim.__exit__, None, None, None)
            if not self.engine.writes.after(key, release):
                release()

    def _told_to_wait(self, holder: dict[str, Any]) -> None:
        pid, host = holder.get("pid"), holder.get("host")
        who = f"process {pid} on {host}" if pid is not None else "another kernel"
        self.rec.warn(f"waiting: {who} is computing this step with the same inputs")

    # -- hit ------------------------------------------------------------------------------
    def _try_serve(self) -> tuple[tuple[Any] | None, str | None]:
        """((result,), None) when served; (None, why not) on a miss."""
        engine, rec, k = self.engine, self.rec, self.known_key.address
        if not engine.wait_for_entry(k):  # this kernel is still writing it
            return None, "its entry is still being written"
        try:
            found, source, where = engine.cache.lookup(k)
        except StoreError as err:
            rec.warn(str(err))
            return None, "entry failed authentication"
        except Exception as err:  # an unreadable index is a miss, never a failed cell
            log.debug("the store could not be read", exc_info=True)
            rec.warn(f"the store could not be read ({err}); running the step")
            return None, "store unreadable"
        self.found = found is not None
        if found is None:
            reason = rec.best_effort(
                None, why.miss_reason, engine.store, self.name, self.known_key.preimage
            )
            return None, reason or "new key"
        invalid = validity.invalid_reason(
            found, engine.run, self.args.ttl, self._digest_now, seeding=engine.seeding
        )
        if invalid:
            return None, invalid
        opaque.advance(k)  # as the live run did, before the values it left are bound
        unread = engine.pending.known() if engine.pending else {}
        # Restored figures open as the live run left them, and are not drawn again.
        with figures.queue_kept(engine.shell), opaque.reopening():
            try:
                with capture.unshown(f"step {self.name} loaded its values"):
                    loaded = load.load(
                        found,
                        engine.store,
                        engine.ns,
                        engine.hidden,
                        engine.pending,
                        engine.history,
                    )
            except NotRestored as err:  # a value it refers to is unreadable: said when run
                log.debug("an entry of %s refers to an unreadable value", self.name, exc_info=True)
                return None, str(err)
            except Unfaithful as err:  # the namespace differs from the live run's: a miss
                log.debug("an entry of %s does not fit this namespace", self.name, exc_info=True)
                return None, f"{err.name} is not as it was ({err.why})"
            except Exception as err:  # a damaged or missing blob is a miss, never an error
                log.debug("an entry of %s could not be restored", self.name, exc_info=True)
                rec.warn(f"cached entry of {self.name} could not be restored ({err}); running it")
                suspect = not isinstance(err, BlobUnavailable)  # else the blob never came
                rec.best_effort(None, engine.store.discard_entry, k, found, suspect)
                return None, "cached values unreadable"
            # The replay flushes each stream it writes (`capture.replay`): the status line
            # need not wait for the kernel's I/O thread again (unless `rec.warn` wrote).
            result, _ = apply.apply(
                found, loaded, engine.ns, engine.shell, rec.warn, engine.pending, k
            )
        engine.carry.keep_known(engine.ns, self._known_after_hit(found, unread))
        rec.outputs = found.described()
        rec.origin, rec.entry_key = provenance.of_entry(found, where), k
        rec.best_effort(None, engine.store.touch, k)
        rec.finished("hit", saved=found.duration_s, source=source, computed=found.created)
        return (result,), None

    def _known_after_hit(
        self, found: Entry, unread: dict[str, Known]
    ) -> list[tuple[str, Any, Known]]:
        """What the next step's key may take after this hit (`code/carry.py`): where
        they reached no code, the stored digests of the values it bound that are in the
        namespace (read as it bound them, or read since to show its result) and of the
        pending values it read (`unread`: the names pending as it began), the digests
        its key took of its inputs and those the step before handed it, for the names
        it neither bound nor deleted. Nothing when it gave an object a state in place."""
        if found.unit is not None or any(b.inplace for b in found.bindings):
            return []
        ns, pending = self.engine.ns, self.engine.pending
        touched = {b.name for b in found.bindings}.union(found.deleted)
        read = {n: k for n, k in unread.items() if n not in pending}
        inputs = self.known_key.known  # (what the key digested, or took as known)
        handed = {**self.carried, **inputs, **read}
        kept = {n: k for n, k in handed.items() if n not in touched}
        for b in found.bindings:  # (those left unread are pending: their digest is known)
            reached = b.reached if b.reached is not None else b.lazy
            if reached is not None and b.digest and b.value is not None:
                kept[b.name] = Known(b.digest, frozenset(reached), b.type, b.size or 0)
        return [(n, ns[n], k) for n, k in kept.items() if n in ns and n not in pending]

    def _digest_now(self, name: str) -> str | None:
        """The digest `name` has in the namespace now (None: gone, or not hashable)."""
        ns = self.engine.ns
        if name not in ns:
            return self.engine.pending.digest(name)
        try:
            return Hasher(ns).value_digest(ns[name], name)
        except Unhashable:
            return None

    # -- live -----------------------------------------------------------------------------
    async def _run_live(self, reason: str | None, key_problem: KeyComponentError | None) -> Any:
        __tracebackhide__ = True  # noqa: F841
        # What only a live run needs (the trace, what it changed and keeps, and in
        # `_run_body` the tripwire) is imported by the first miss, not with this module:
        # a resume whose steps are all served never imports it. All of it before the
        # body runs, where `_run_body` settles it (`collector.settle_once`).
        from .keep import admit, build, changes, sharing, value_check
        from .live import trace as live_trace
        from .objects.identities import Identities

        engine, rec, effect = self.engine, self.rec, self.args.effect
        try:
            self._read_pending()
        except NotRestored as err:
            rec.started(reason)
            rec.finished("error", reason=str(err))
            raise StepRefused(f"step {self.name} cannot run: {err}") from None
        try:
            rec.best_effort("the budget could not be read", engine.budget.check)
        except BudgetExceeded as err:
            rec.started()
            rec.finished("refused", reason=str(err))
            raise StepRefused(f"step {self.name} refused: {err}") from None
        rec.best_effort("the budget spend could not be saved", engine.budget.add, steps=1)
        engine.start_step_spend()
        rec.ran = True
        if effect:
            self._intent_check()
        rec.started(reason)
        before = Identities(engine.ns)
        ctx = step_object.StepContext(engine, self.name, self.key.digests if self.key else {})
        watch = not effect and self.key is not None
        imports = self.info.imports.values()
        inputs_before = (
            sharing.before(engine.ns, self.known_key.digests, imports) if watch else None
        )
        traced = watch and bool(self.known_key.traced)
        trace = live_trace.Trace(engine.ns, before) if traced else None
        current = watch and engine.carry.state_current()
        with process_state.watching(engine.shell, current) if watch else nullcontext() as state:
            ran = await self._run_body(ctx, reason, trace, before)
        result, outputs, findings, shown = ran.result, ran.outputs, ran.findings, ran.shown
        engine.pending.settle(engine.ns)  # names it bound hold their new values
        opaque.advance(self.key.address if self.key is not None and not effect else None)
        digests = changes.Digests(engine.ns)
        if trace is not None:
            trace.finish(digests.of)
            if inputs_before is not None and trace.incomplete is None:
                sharing.add_inputs(inputs_before, engine.ns, trace.reads)
        key_digests = self.key.digests if self.key is not None else {}
        objects = inputs_before.values if inputs_before is not None else {}
        graph = inputs_before.graph if inputs_before is not None else None
        changed = changes.of_run(
            engine.ns,
            before,
            self.info.binds,
            objects,
            key_digests,
            digests,
            graph,
            self.info.top_deletes,
        )
        note = None
        who = self._provenance()
        if key_problem is not None:
            note = f"not cached: {key_problem}. {key_problem.ways_out or WAYS_OUT}"
        elif effect:
            rec.outputs = digests.describe(changed.bound)
        elif trace is not None and trace.incomplete is not None:
            rec.outputs = digests.describe(changed.bound)
            note = f"not cached: {trace.incomplete}. {WAYS_OUT}"
        else:
            assert findings is not None  # a pure step ran under the tripwire
            began = state.before if state is not None else {}
            shown_with = shown_settings.of_step(began, outputs, shown is not None, ran.read)
            params = {**ctx.params, "shown_with": shown_with} if shown_with else ctx.params
            if ran.warned:  # (matched against the filters in effect at a hit)
                params = {**params, "warned": warned.encode(ran.warned)}
            if findings.relative_to is not None:  # (named relative to it: served only there)
                params = {**params, "cwd": findings.relative_to}
                if findings.asked_cwd:  # (which of the two the message names)
                    params["cwd_asked"] = True
            if findings.environ or findings.environ_names is not None:  # (read as it ran)
                read = {"read": findings.environ, "names": findings.environ_names}
                params = {**params, "environ": read}
            drew = drawn.began(began, self.cell)
            if drew:  # (served only while a generator the notebook seeded stands there)
                params = {**params, "drew": drew}
            live = build.LiveRun(
                self.name, self.cell, self.known_key, changed.bound, changed.deleted, outputs, result,
                params, findings.reads, time.perf_counter() - rec.t0,
                inline_backend=figures.in_use(engine.shell), shown=shown,
                imports=self.info.imports, star_imports=self.info.star_imports,
                trace=dict(trace.reads) if trace is not None else {},
                provenance=who,
            )  # fmt: skip
            refs = build.imported(live, engine.ns)
            effects = findings.effects + admit.attributes_changed(
                engine.ns, self.known_key, inputs_before
            )
            effects += admit.library_objects_changed(engine.ns, self.info, refs)
            watched = admit.Watched(digests, changed.inputs, effects, inputs_before, state, refs)
            kept = admit.admit(engine, live, watched)
            rec.outputs, note = kept.outputs, kept.note
            if kept.entry is not None:
                rec.origin = provenance.of_entry(kept.entry, None)
                rec.entry_key = self.known_key.address
            del watched
        del inputs_before  # the inputs' objects, kept alive for the analysis
        if rec.origin is None and self.key is not None:  # uncached: computed here all the same
            rec.origin = provenance.of_run(who, self.key.preimage, time.time())
        if not effect:  # so the next miss can say why there was nothing to serve
            code = self.key.preimage.get("code") if self.key is not None else None
            rec.best_effort(None, why.remember_uncached, engine.store, self.name, note, code)
        # For the next step's key: values whose storing ran no code that could change them.
        engine.carry.keep(engine.ns, (d for d in digests.data_values() if value_check.exact(d[1])))
        rec.finished("effect" if effect else "live", reason=reason, note=note)
        return result

    def _provenance(self) -> Provenance:
        """Who computes this run (as shared) and the steps that bound its inputs."""
        me, digests = self.engine.identity, self.key.digests if self.key is not None else {}
        return Provenance(me.user, me.host, self.engine.producers.of(digests))

    def _read_pending(self) -> None:
        """Read the values hits left unread that the body may read: its inputs, or all
        of them when it reads the namespace in ways its key does not list (no key,
        reads through eval, `--ignore`d names its functions may read)."""
        engine = self.engine
        if not engine.pending:
            return
        key = self.key
        if key is None or key.traced or self.info.dynamic or self.args.ignore:
            engine.pending.materialise_all(engine.ns)
        else:
            engine.pending.materialise([*key.digests, *self.info.reads], engine.ns)

    async def _run_body(
        self,
        ctx: step_object.StepContext,
        reason: str | None,
        trace: live_trace.Trace | None,
        names: Identities,
    ) -> Ran:
        """The body run under the step's context, output capture and (for a pure step)
        the tripwire, which tells `trace` what strings it compiles as code and finds the
        names bound to a watched function from `names` (the namespace as the step
        began). The result's display is watched too: a `_repr_html_` may read the
        namespace through `eval`."""
        __tracebackhide__ = True  # noqa: F841
        from .live import named_files, tripwire  # a live run's (see `_run_live`)
        from .state import settings_read

        # the modules a live run imports, before the body (`collector.settle_once`)
        collector.settle_once("live", self.collector.was_enabled)

        engine, rec, effect = self.engine, self.rec, self.args.effect
        network = self.args.ttl is not None  # it reads a live source, fresh for its TTL
        told = trace.compiled if trace is not None else None
        watch = (
            nullcontext(None)
            if effect
            else tripwire.watching(engine.store.dir, network, told, engine.ns, engine.shell, names)
        )
        reading = nullcontext(settings_read.Read()) if effect else settings_read.watching()
        warning = nullcontext(list[warned.Warned]()) if effect else warned.watching()
        rec.wrote_streams = True  # live code may write anywhere while it runs
        try:
            with watch as found:
                with step_object.running(ctx), capture.capturing(engine.shell) as outputs:
                    header = header_of(self.args, self.line)
                    args = (engine.shell, engine.ns, header, self.cell, self.transformed)
                    with self.collector.lifted(), reading as read, warning as shown_warnings:
                        if self.code.awaits:
                            result = await body.run_awaiting(*args)
                        else:
                            result = body.run(*args)
                        if self.code.quiet:  # evaluated, as IPython does, not shown or kept
                            result = None
                        # Formatted before the figures are drawn, as a plain cell's result
                        # is, and captured: a `_repr_html_` may print, or raise.
                        before, shell = len(outputs), engine.shell
                        shown = (
                            shown_result.bundle_of(shell, result) if result is not None else None
                        )
                    capture.errors_in_display(shell, outputs, before)
                    widgets.settle(shell, outputs)  # their text as the step left them
            if shown is not None:
                shown_result.show_as(engine.shell, result, shown)
            drawn = figures.flush(engine.shell)  # what the inline backend would show
            outputs += drawn
            # The capture flushed the kernel's streams as it closed (elsewhere they write
            # through): the status line waits for the kernel's I/O thread (two round trips,
            # about a millisecond) only for what drawing figures may print, a matplotlib
            # warning, or what `rec.warn` writes.
            rec.wrote_streams = bool(drawn)
        except (KeyboardInterrupt, CancelledError):
            raise  # the execution records it (`go`)
        except BaseException:
            rec.finished("error", reason=reason)
            raise
        finally:
            if effect:
                self._intent("done")
        if found is not None:  # script magics start theirs where the tripwire cannot see
            found.effects += [f"started a subprocess ({s})" for s in self.code.scripts]
            named = named_files.candidates(*self._naming())
            tripwire.read_named(found, engine.store.dir, named)
        figures.show_after_cell(engine.shell, outputs)
        return Ran(result, outputs, found, shown, read.parts, shown_warnings)

    def _naming(self) -> tuple[list[str], list[Any]]:
        """The strings and values in which the step's code and inputs may name files
        (`live/named_files.py`): those it may have read without the tripwire seeing it."""
        ns, key = self.engine.ns, self.key
        strings = [*self.info.strings, *(key.named if key is not None else ())]
        labels = key.digests if key is not None else self.info.reads
        return strings, [ns[n] for n in labels if n.isidentifier() and n in ns]

    # -- effects --------------------------------------------------------------------------
    def _intent_check(self) -> None:
        engine = self.engine
        row = engine.store.ledger.intent(engine.run.id, self.name)
        if row and row.get("state") == "started" and row.get("session") != engine.session:
            self.rec.warn(
                f"effect {self.name} was started in an earlier kernel session and never "
                "finished: it may already have happened. Check before relying on it twice."
            )
        self._intent("started")

    def _intent(self, state: str) -> None:
        engine = self.engine
        row = {"state": state, "session": engine.session, "time": time.time()}
        self.rec.best_effort(None, engine.store.ledger.set_intent, engine.run.id, self.name, row)
