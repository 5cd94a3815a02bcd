"""The engine of one kernel: what its steps share.

The notebook's namespace and shell, the store and the team cache behind it (a
`TieredStore`), the kernel session, the notebook's run (epoch, seed, budget) and its
journal, and the listeners the executions are told to (the sidebar's comm). One step's
execution is `execution.run_step(engine, ...)`.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from .. import logs
from ..hashing import opaque, sources
from ..records import runs
from ..records.journal import Journal
from ..storage import serialize
from ..storage.store import Store
from ..storage.tiers import Tier, TieredStore
from .code import step_names
from .restore.pending import Pending

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

log = logging.getLogger(__name__)
_TRANSFORMS_KEPT = 512


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
        sources.watch_imports()  # from now on, when a module's code runs is known
        serialize.set_main_namespace(self.ns)
        self.store = store or Store()
        if self.store.recovered:
            logs.warn(self.store.recovered)
        self.session = "k-" + uuid.uuid4().hex[:12]
        self.notebook = runs.notebook_id(self.ns)
        self.run = runs.current(self.store, self.notebook)
        self.budget = runs.Budget(self.store, self.run.id)
        self.journal = Journal(self.store.dir, self.run.id)
        self.listeners: list[Callable[[str, Any], object]] = []  # the comm, tests
        self.quiet = False  # no status lines (StepMagics.quiet)
        self.team: Tier | None = None  # the team cache, when one is configured
        self.cache = TieredStore(self.store)  # the store, then the team cache
        self.pending = Pending(self.store)  # names a hit bound, whose values are unread
        self.store.pinned = self.pending.pinned
        self.step_spend = {"tokens": 0, "cost": 0.0}  # of the step running now
        self.freshness: Freshness | None = None  # staleness from every input
        self.names = step_names.Names()  # warns when two cells share a name, not their code
        self._transformed: dict[str, str] = {}
        # A cell outside %%step may change any figure: the digests of drawings move.
        hooks = shell.events.callbacks["post_run_cell"]
        if opaque.after_cell not in hooks:
            shell.events.register("post_run_cell", opaque.after_cell)

    # -- the record -----------------------------------------------------------------------
    def record(self) -> list[dict[str, Any]]:
        return self.journal.executions(self.session)

    def staleness(self) -> dict[tuple[str, str | None], str]:
        """Stale rows (step, cell id) -> why: from every input when the freshness
        watcher is attached (`ipython.freshness`), else from the record alone."""
        if self.freshness is not None:
            return self.freshness.causes(deep=True)
        from ..records.staleness import causes

        return causes(self.record())

    def snapshot(self) -> dict[str, Any]:
        from ..records.snapshot import build

        return build(self.store, self.run, self.session)

    def notify_snapshot(self) -> None:
        self.emit("snapshot", None)

    def emit(self, kind: str, payload: Any) -> None:
        """Tell every listener; one that fails is logged and never fails a cell."""
        for listener in list(self.listeners):
            try:
                listener(kind, payload)
            except Exception:  # a frontend that went away
                log.debug("a listener failed on %s", kind, exc_info=True)

    # -- the run --------------------------------------------------------------------------
    def start_step_spend(self) -> None:
        """A live step begins: what `step.spend` adds from now on is its own."""
        self.step_spend = {"tokens": 0, "cost": 0.0}

    def spend(self, tokens: int = 0, cost: float = 0.0) -> None:
        self.budget.add(tokens=tokens, cost=cost)
        self.step_spend["tokens"] += int(tokens)
        self.step_spend["cost"] += float(cost)

    def new_run(self) -> runs.Run:
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

    # -- the shell ------------------------------------------------------------------------
    @property
    def hidden(self) -> dict[str, Any]:
        """IPython's own names (`In`, `Out`, `exit`, ...) and their values."""
        hidden: dict[str, Any] = self.shell.user_ns_hidden
        return hidden

    def transform(self, cell: str) -> str:
        """The cell as IPython transforms it (`!cmd`, `%magic` lines become calls);
        remembered, since the transform is a pure function of the text."""
        transformed = self._transformed.get(cell)
        if transformed is None:
            transformed = self._transformed[cell] = self.shell.transform_cell(cell)
            if len(self._transformed) > _TRANSFORMS_KEPT:
                self._transformed.pop(next(iter(self._transformed)))
        return transformed

    def display_bundle(self, value: Any) -> dict[str, Any]:
        """The mime bundle IPython would display for `value`."""
        formatter = self.shell.display_formatter
        assert formatter is not None  # an instance trait, set when the shell is built
        bundle: dict[str, Any] = formatter.format(value)[0]
        return bundle
