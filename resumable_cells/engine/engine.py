"""Running one step: look up its key, serve a hit, or run it live and store the entry.

The cell behaves as if the magic were not there: its body is compiled and executed
here (not through a nested `run_cell`, which would hide errors from the frontend), the
last expression is returned for IPython to display, and exceptions propagate with the
cell's own line numbers. Nothing of a failed or interrupted run is cached, and a failing
store never fails the cell.
"""

from __future__ import annotations

import ast
import io
import re
import sys
import time
import types
import uuid
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import xxhash
from IPython.core.error import UsageError

from ..errors import KeyComponentError, MissingDeps, StepRefused
from ..hashing import key as keymod
from ..hashing.values import Hasher, Unhashable
from ..ipython import capture, statusline
from ..records import why
from ..records.journal import Journal
from ..storage import serialize
from ..storage.store import FORMAT_VERSION, Store, StoreError
from ..storage.tiers import Tier, TieredStore
from . import analysis, runs, tripwire
from .stepapi import StepContext
from .stepapi import step as step_api

_IPYTHON_NAMES = re.compile(r"^(_+|_i+|_i?\d+|_ii+|In|Out|exit|quit|get_ipython|_oh|_ih|_dh)$")


@dataclass(frozen=True)
class StepArgs:
    name: str | None = None
    effect: bool = False
    force: bool = False
    ignore: tuple[str, ...] = ()
    version: str | None = None
    deps: tuple[str, ...] = ()


@dataclass
class Outcome:
    """What one execution did, for the record and the status line."""

    status: str  # hit | live | effect | error | interrupted | refused
    reason: str | None = None
    cached: bool = False
    note: str | None = None  # why it was not cached, or a warning


class Engine:
    def __init__(self, shell, store: Store | None = None):
        self.shell = shell
        self.ns: dict = shell.user_ns
        serialize.set_main_namespace(self.ns)
        self.store = store or Store()
        if self.store.recovered:
            print(f"resumable_cells: {self.store.recovered}", file=sys.stderr)
        self.session = "k-" + uuid.uuid4().hex[:12]
        self.notebook = runs.notebook_id(self.ns)
        self.run = runs.current(self.store, self.notebook)
        self.budget = runs.Budget(self.store, self.run.id)
        self.journal = Journal(self.store.dir, self.run.id)
        self.listeners: list = []  # callables(kind, payload): the comm, tests
        self._transformed: dict[str, str] = {}
        self._current_spend = {"tokens": 0, "cost": 0.0}  # of the step running now
        self.quiet = False
        self.team: Tier | None = None  # the team cache, when one is configured
        self.cache = TieredStore(self.store)  # the store, then the team cache

    # -- public ---------------------------------------------------------------------------
    def record(self) -> list[dict]:
        return self.journal.executions(self.session)

    def staleness(self) -> dict[str, str]:
        from ..records.views import staleness

        return staleness(self.record())

    def snapshot(self) -> dict:
        from ..records.snapshot import build

        return build(self.store, self.run, self.session)

    def notify_snapshot(self) -> None:
        self._emit("snapshot", None)

    def spend(self, tokens: int = 0, cost: float = 0.0) -> None:
        self.budget.add(tokens=tokens, cost=cost)
        self._current_spend["tokens"] += int(tokens)
        self._current_spend["cost"] += float(cost)

    def new_run(self) -> runs.Run:
        self.journal.close()
        self.run = runs.new(self.store, self.notebook)
        self.budget = runs.Budget(self.store, self.run.id)
        self.journal = Journal(self.store.dir, self.run.id)
        return self.run

    def set_store(self, store: Store) -> None:
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

    # -- one step -------------------------------------------------------------------------
    def execute(self, args: StepArgs, line: str, cell: str) -> Any:
        __tracebackhide__ = True  # noqa: F841 (IPython hides this frame in tracebacks)
        transformed = self._transformed.get(cell)
        if transformed is None:  # IPython's transform is a pure function of the text
            transformed = self._transformed[cell] = self.shell.transform_cell(cell)
            if len(self._transformed) > 512:
                self._transformed.pop(next(iter(self._transformed)))
        try:
            info = _analyse(transformed)
        except SyntaxError as err:
            raise self._syntax_error(err, args, line, cell) from None
        name = args.name or info.default_name()
        ex = _Execution(self, name, args, info, line, cell, transformed)
        return ex.go()

    def _syntax_error(self, err: SyntaxError, args: StepArgs, line: str, cell: str):
        """The error as Python would give it for the cell itself (its own file name and
        line numbers, the %%step line counted), recorded as an `error` execution."""
        source = f"%%step {line}\n{cell}"
        filename = _register_source(self.shell, source)
        lineno = (err.lineno or 0) + 1
        text = source.splitlines()[lineno - 1] if lineno - 1 < len(source.splitlines()) else None
        fixed = type(err)(err.msg, (filename, lineno, err.offset, text))
        name = args.name or "cell-" + xxhash.xxh3_64_hexdigest(cell.encode())[:8]
        info = analysis.CellInfo("", (), (), (), ())
        ex = _Execution(self, name, args, info, line, cell, cell)
        ex._record_start()
        ex._finish("error", reason=f"SyntaxError: {err.msg}")
        return fixed

    def _emit(self, kind: str, payload: Any) -> None:
        for listener in list(self.listeners):
            try:
                listener(kind, payload)
            except Exception:
                pass  # a frontend that went away must never fail a cell


@lru_cache(maxsize=512)
def _analyse(transformed: str) -> analysis.CellInfo:
    return analysis.analyse(transformed)


class _Execution:
    """One run of `%%step`: owns the timing, the record rows and the status line."""

    def __init__(self, engine: Engine, name, args, info, line, cell, transformed):
        self.e = engine
        self.name = name
        self.args = args
        self.info = info
        self.line = line
        self.cell = cell
        self.transformed = transformed
        self.id = "e-" + uuid.uuid4().hex[:16]
        self.start = time.time()
        self.t0 = time.perf_counter()
        self.key: keymod.Key | None = None
        self.inputs_info: dict = {}
        self.cell_id = _cell_id(engine.shell)
        self.wrote_streams = False  # stdout/stderr written: the status line must follow it
        self._digests: dict[str, str] = {}  # of values after the live run

    # -- flow -----------------------------------------------------------------------------
    def go(self) -> Any:
        __tracebackhide__ = True  # noqa: F841
        ns = self.e.ns
        inputs = self._inputs()
        key_problem = None
        try:
            self.key, self.inputs_info = keymod.compute(
                format_version=FORMAT_VERSION,
                step=self.name,
                normalised=self.info.normalised,
                version_tag=self.args.version,
                ns=ns,
                inputs=inputs,
                cell_modules=list(self.info.imports.values()),
                deps=list(self.args.deps),
            )
        except MissingDeps as err:
            raise UsageError(f"%%step {self.name}: {err}") from None
        except KeyComponentError as err:
            key_problem = err
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
            return self._run_live(reason, key_problem)
        with self._claim() as waited:
            if waited and not self.args.force:  # another kernel computed it meanwhile
                served, _ = self._try_serve()
                if served is not None:
                    return served[0]
            return self._run_live(reason, key_problem)

    @contextmanager
    def _claim(self):
        """The store's compute claim on this key; without one (store failing), run."""
        try:
            claim = self.e.store.claim(self.key.key, self._told_to_wait)
            waited = claim.__enter__()
        except Exception:
            yield False
            return
        try:
            yield waited
        finally:
            self._guard(None, claim.__exit__, None, None, None)

    def _told_to_wait(self, holder: dict) -> None:
        self._warn(
            f"waiting: process {holder.get('pid')} on {holder.get('host')} is computing "
            "this step with the same inputs"
        )

    def _inputs(self) -> list[str]:
        ns, hidden = self.e.ns, self.e.shell.user_ns_hidden
        ignored = set(self.args.ignore)
        out = []
        for n in self.info.reads:
            if n not in ns or n in ignored or n.startswith("__"):
                continue
            v = ns[n]
            if n in hidden and hidden[n] is v:
                continue
            if getattr(type(v), "_resumable_cells_own", False):
                continue
            out.append(n)
        return out

    # -- hit ------------------------------------------------------------------------------
    def _try_serve(self) -> tuple[tuple | None, str | None]:
        k = self.key.key
        try:
            entry, source = self.e.cache.lookup(k)
        except StoreError as err:
            self._warn(str(err))
            return None, "entry failed authentication"
        except Exception as err:  # an unreadable index is a miss, never a failed cell
            self._warn(f"the store could not be read ({err}); running the step")
            return None, "store unreadable"
        if entry is None:
            reason = self._guard(None, why.miss_reason, self.e.store, self.name, self.key.preimage)
            return None, reason or "new key"
        stale = self._entry_invalid(entry)
        if stale:
            return None, stale
        try:
            values = self._load_values(entry)
        except Exception as err:  # a damaged or missing blob is a miss, never an error
            self._warn(f"cached entry of {self.name} could not be restored ({err}); running it")
            self._guard(None, self.e.store.discard_entry, k, entry)
            return None, "cached values unreadable"
        result = self._apply(entry, values)
        self._guard(None, self.e.store.touch, k)
        self._finish("hit", entry=entry, saved=entry.get("duration_s", 0.0), source=source)
        return (result,), None

    def _entry_invalid(self, entry: dict) -> str | None:
        for f in entry.get("files", []):
            try:
                if keymod.file_digest(f["path"]) != f["digest"]:
                    return f"{f['path']} changed"
            except OSError:
                return f"{f['path']} is gone"
        params = entry.get("params", {})
        if "epoch" in params and params["epoch"] != self.e.run.epoch:
            return "run epoch changed"
        if "seed" in params and params["seed"] != self.e.run.seed:
            return "run seed changed"
        return None

    def _load_values(self, entry: dict) -> dict:
        store = self.e.store
        values = {}
        # Classes and functions first: instances in later blobs refer to them by name.
        ordered = sorted(entry["bindings"], key=lambda b: not b.get("callable", False))
        for b in ordered:
            values[b["name"]] = store.get_value(b)
            if b.get("callable"):
                self.e.ns[b["name"]] = values[b["name"]]
        values["__outputs__"] = store.get_value(entry["outputs"])
        if entry.get("result"):
            values["__result__"] = store.get_value(entry["result"])
        return values

    def _apply(self, entry: dict, values: dict) -> Any:
        ns = self.e.ns
        for b in entry["bindings"]:
            ns[b["name"]] = values[b["name"]]
        for n in entry.get("deleted", []):
            ns.pop(n, None)
        capture.replay(self.e.shell, values["__outputs__"])
        self.wrote_streams = self.wrote_streams or any(
            o[0] == "stream" for o in values["__outputs__"]
        )
        self.outputs_info = [
            {k: b[k] for k in ("name", "type", "size", "digest")} for b in entry["bindings"]
        ]
        res = entry.get("result")
        if res is None:
            return None
        value = values["__result__"]
        return _Replayed(value) if res.get("bundle") else value

    # -- live -----------------------------------------------------------------------------
    def _run_live(self, reason: str | None, key_problem) -> Any:
        __tracebackhide__ = True  # noqa: F841
        effect = self.args.effect
        try:
            self._guard("the budget could not be read", self.e.budget.check)
        except runs.BudgetExceeded as err:
            self._record_start()
            self._finish("refused", reason=str(err))
            raise StepRefused(f"step {self.name} refused: {err}") from None
        self._guard("the budget spend could not be saved", self.e.budget.add, steps=1)
        self.e._current_spend = {"tokens": 0, "cost": 0.0}
        if effect:
            self._intent_check()
        self._record_start(reason)
        ns = self.e.ns
        before = {k: id(v) for k, v in ns.items()}
        ctx = StepContext(self.e, self.name, self.key.digests if self.key else {})
        previous_ctx, step_api._ctx = step_api._ctx, ctx
        watch = nullcontext(None) if effect else tripwire.watching(self.e.store.dir)
        try:
            self.wrote_streams = True  # live code may write anywhere: always flush after
            with capture.capturing(self.e.shell) as outputs, watch as findings:
                result = self._exec_body()
        except KeyboardInterrupt:
            self._finish("interrupted", reason="interrupted by the user")
            raise
        except BaseException:
            self._finish("error", reason=reason)
            raise
        finally:
            step_api._ctx = previous_ctx
            if effect:
                self._intent("done")
        bound, deleted = self._changes(before)
        outcome = "effect" if effect else "live"
        note = None
        if key_problem is not None:
            note = f"not cached: {key_problem}. {_WAYS_OUT}"
        elif not effect:
            note = self._store_entry(bound, deleted, outputs, result, ctx, findings)
        else:
            self.outputs_info = self._describe(bound)
        if not effect:  # so the next miss can say why there was nothing to serve
            self._guard(None, why.remember_uncached, self.e.store, self.name, note)
        self._finish(outcome, reason=reason, note=note)
        return result

    def _exec_body(self) -> Any:
        __tracebackhide__ = True  # noqa: F841
        shell = self.e.shell
        source = f"%%step {self.line}\n{self.cell}"
        filename = _register_source(shell, source)
        tree = shell.compile.ast_parse(self.transformed, filename=filename)
        tree = shell.transform_ast(tree)
        ast.increment_lineno(tree, 1)  # line 1 is the %%step line
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        ns = self.e.ns
        exec(shell.compile(tree, filename, "exec"), ns)
        if last is not None:
            return eval(shell.compile(last, filename, "eval"), ns)
        return None

    def _changes(self, before: dict[str, int]) -> tuple[list[str], list[str]]:
        ns = self.e.ns
        static = set(self.info.binds)
        bound = [
            k
            for k, v in ns.items()
            if (before.get(k) != id(v) or k in static) and _user_name(k) and not _spent_handle(v)
        ]
        deleted = [k for k in before if k not in ns and _user_name(k)]
        # Inputs mutated in place (df.dropna(inplace=True)) are bound values too.
        if self.key is not None:
            for name, old in self.key.digests.items():
                if name in ns and name not in bound:
                    try:
                        new = self._digest(name)
                    except Unhashable:
                        continue
                    if new != old:
                        bound.append(name)
        return bound, deleted

    def _store_entry(self, bound, deleted, outputs, result, ctx, findings) -> str | None:
        """Store the entry; returns a note when the step could not be cached."""
        if findings.effects:
            self.outputs_info = self._describe(bound)
            return f"not cached: it {findings.effects[0]}. Mark it `%%step {self.name} --effect`"
        try:
            entry = self._build_entry(bound, deleted, outputs, result, ctx, findings.reads)
        except (serialize.Unstorable, KeyComponentError, Unhashable) as err:
            self.outputs_info = self._describe(bound)
            var = getattr(err, "name", None) or getattr(err, "path", "a value")
            return (
                f"not cached: {var} cannot be stored ({getattr(err, 'why', err)}). "
                f"If it is a connection or handle, mark the step `--effect`"
            )
        except Exception as err:  # disk full, locked index: the step already ran
            self.outputs_info = self._describe(bound)
            return f"not cached: the store failed ({getattr(err, 'strerror', None) or err})"
        try:
            self.e.cache.put(self.key.key, entry)  # the team cache pushes in the background
        except Exception as err:
            return f"not cached: the store failed ({err})"
        return None

    def _build_entry(self, bound, deleted, outputs, result, ctx, reads) -> dict:
        store, ns = self.e.store, self.e.ns
        bindings = []
        for name in bound:
            value = ns[name]
            d = self._digest(name)
            ref = store.put_value(d, value, name)
            tname, size = keymod.describe(value)
            bindings.append(
                {**ref, "name": name, "digest": d, "type": tname, "size": size,
                 "callable": callable(value) and isinstance(value, type | types.FunctionType)}
            )  # fmt: skip
        self.outputs_info = [
            {k: b[k] for k in ("name", "type", "size", "digest")} for b in bindings
        ]
        out_list = list(outputs)
        out_name = Hasher(ns).value_digest(repr(out_list), "outputs")
        out_ref = store.put_value(out_name, out_list, "outputs")
        entry = {
            "step": self.name,
            "created": time.time(),
            "duration_s": time.perf_counter() - self.t0,
            "bindings": bindings,
            "deleted": deleted,
            "outputs": out_ref,
            "result": self._result_ref(result),
            "files": [{"path": p, "digest": keymod.file_digest(p)} for p in sorted(reads)],
            "params": ctx.params,
            "preimage": self.key.preimage,
            "source": self.cell,
        }
        return entry

    def _result_ref(self, result: Any) -> dict | None:
        if result is None:
            return None
        ns, store = self.e.ns, self.e.store
        try:
            d = Hasher(ns).value_digest(result, "result")
            return store.put_value(d, result, "the cell's result")
        except (serialize.Unstorable, Unhashable):
            bundle = self.e.shell.display_formatter.format(result)[0]
            d = Hasher(ns).value_digest(repr(bundle), "result")
            return {**store.put_value(d, bundle, "the cell's result"), "bundle": True}

    def _digest(self, name: str) -> str:
        """The digest of a name's value after the run, computed once: the mutation
        check, the entry and the record all need it, and a frame is worth hashing once."""
        if name not in self._digests:
            self._digests[name] = Hasher(self.e.ns).value_digest(self.e.ns[name], name)
        return self._digests[name]

    def _describe(self, names: list[str]) -> list[dict]:
        out = []
        for n in names:
            tname, size = keymod.describe(self.e.ns[n])
            try:
                d = self._digest(n)
            except Unhashable:
                d = None
            out.append({"name": n, "type": tname, "size": size, "digest": d})
        return out

    # -- effects --------------------------------------------------------------------------
    def _intent_check(self) -> None:
        row = self.e.store.ledger.intent(self.e.run.id, self.name)
        if row and row.get("state") == "started" and row.get("session") != self.e.session:
            self._warn(
                f"effect {self.name} was started in an earlier kernel session and never "
                "finished: it may already have happened. Check before relying on it twice."
            )
        self._intent("started")

    def _intent(self, state: str) -> None:
        row = {"state": state, "session": self.e.session, "time": time.time()}
        try:
            self.e.store.ledger.set_intent(self.e.run.id, self.name, row)
        except Exception:
            pass

    # -- record and status ----------------------------------------------------------------
    def _record_start(self, reason: str | None = None) -> None:
        row = self._row(status="running", reason=reason)
        row["event"] = "start"
        self._append(row)

    def _finish(
        self, status_: str, *, reason=None, note=None, entry=None, saved=0.0, source="local"
    ) -> None:
        end = time.time()
        duration = time.perf_counter() - self.t0
        row = self._row(status=status_, reason=reason)
        row.update(
            event="end", end=end, duration_s=duration, saved_s=max(0.0, saved - duration),
            outputs=getattr(self, "outputs_info", []),
            spend={"steps": 0 if status_ in ("hit", "refused") else 1,
                   **self.e._current_spend},
            source=source if status_ == "hit" else None,
        )  # fmt: skip
        if status_ == "hit":
            row["event"] = "start"  # a hit is a whole execution in one row
        self._append(row)
        if note:
            self._warn(note)
        if not self.e.quiet and status_ not in ("error", "interrupted", "refused"):
            statusline.show_line(
                self.name, status_, duration, saved, reason, source, flush=self.wrote_streams
            )

    def _row(self, *, status: str, reason: str | None) -> dict:
        return {
            "id": self.id, "run": self.e.run.id, "session": self.e.session,
            "step": self.name, "cell_id": self.cell_id,
            "key": self.key.key if self.key else None, "status": status,
            "start": self.start, "reason": reason,
            "inputs": [{"name": n, **i} for n, i in self.inputs_info.items()],
        }  # fmt: skip

    def _append(self, row: dict) -> None:
        try:
            merged = self.e.journal.append(row)
        except Exception as err:  # the record must never fail the cell
            self._warn(f"the record could not be written ({err})")
            merged = row
        self.e._emit("execution", dict(merged))

    def _guard(self, warning: str | None, fn, *args, **kwargs):
        """Call a store operation; a failure warns (when `warning` is given) and
        returns None instead of failing the user's cell. Budget refusals pass."""
        try:
            return fn(*args, **kwargs)
        except runs.BudgetExceeded:
            raise
        except Exception as err:
            if warning:
                self._warn(f"{warning} ({err})")
            return None

    def _warn(self, message: str) -> None:
        self.wrote_streams = True
        import sys

        print(f"step {self.name}: {message}", file=sys.stderr)

    def _warn_nondeterminism(self) -> None:
        for call, replacement in _nondeterministic_calls(self.info, self.e.ns):
            self._warn(
                f"calls {call}() directly: its result changes between runs, so a cached "
                f"replay would diverge. Use {replacement} instead."
            )


class _Replayed:
    """The display of a result that could not be stored as a value."""

    def __init__(self, bundle: dict):
        self._bundle = bundle

    def _repr_mimebundle_(self, include=None, exclude=None):
        return self._bundle


_WAYS_OUT = (
    "Exclude it with `--ignore NAME`, mark the step `--effect`, "
    "or teach it with `resumable_cells.register_hasher(type, fn)`"
)


def _spent_handle(value: Any) -> bool:
    """A closed file (the `f` of `with open(...) as f`): nothing to restore."""
    return isinstance(value, io.IOBase) and value.closed


def _user_name(name: str) -> bool:
    return not name.startswith("__") and not _IPYTHON_NAMES.match(name)


def _cell_id(shell) -> str | None:
    try:
        parent = shell.kernel.get_parent()
        return (parent.get("metadata") or {}).get("cellId")
    except Exception:
        return None


def _register_source(shell, source: str) -> str:
    """Put the cell's source in linecache so tracebacks show its lines, under the
    outer cell's number (`Cell In[5], line 3`)."""
    number = _outer_cell_number(shell)
    try:
        return shell.compile.cache(source, number, raw_code=source + "\n# step")
    except TypeError:
        return shell.compile.cache(source, number)


def _outer_cell_number(shell) -> int:
    names = getattr(shell.compile, "_filename_map", {})
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename in names:
            return names[frame.f_code.co_filename]
        frame = frame.f_back
    return shell.execution_count


def _nondeterministic_calls(info: analysis.CellInfo, ns: dict):
    import types

    seen = set()
    for dotted in info.calls:
        root = dotted[0]
        value = ns.get(root)
        if isinstance(value, types.ModuleType):
            full = tuple(value.__name__.split(".")) + dotted[1:]
        elif root in info.imports:
            full = tuple(info.imports[root].split(".")) + dotted[1:]
        elif value is not None and hasattr(value, "__module__") and hasattr(value, "__name__"):
            full = (value.__module__, value.__name__) + dotted[1:]
        else:
            continue
        replacement = analysis.NONDETERMINISTIC.get(full)
        if replacement is None:
            for prefix, repl in analysis.NONDETERMINISTIC_MODULES.items():
                if full[: len(prefix)] == prefix and len(full) > len(prefix):
                    if full[len(prefix)] in _SEEDED_OK and len(full) == len(prefix) + 1:
                        continue
                    replacement = (
                        f"{repl}.{full[len(prefix)]}(...)" if repl == "step.random" else repl
                    )
                    break
        if replacement and full not in seen:
            seen.add(full)
            yield ".".join(full), replacement


_SEEDED_OK = {"Random", "default_rng", "Generator", "RandomState", "seed", "SeedSequence", "PCG64"}
