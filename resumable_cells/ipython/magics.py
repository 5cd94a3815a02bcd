"""The IPython surface: the `%%step` cell magic, the `%step` line magic, their settings
(traitlets, `c.StepMagics.*`) and loading the extension.

Loading imports only what the magics and the hooks need to be registered; the engine and
everything under it (hashing backends, the store, the team cache) are started when first
needed (`engine_slot.py`), their modules imported by then: most by a thread while the
kernel is idle after the load (`warmup.py`), the rest (the team cache's client, what a
live run needs) inside the functions that first need them, each with that reason."""

from __future__ import annotations

import builtins
import gc
import logging
import shlex
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from traitlets import Bool, Float, Int, Unicode, observe

from .. import builtins_found, logs, module_runs, settings
from ..engine import collector
from ..engine.live.step_object import step as step_api
from ..errors import StepRefused
from . import auto, awaiting, comm, lazy, stepargs, warmup
from .engine_slot import EngineSlot

if TYPE_CHECKING:
    from ..engine.execution import AwaitedStep
    from ..engine.kernel import Engine

log = logging.getLogger(__name__)
_SLOT: EngineSlot | None = None


def current_engine() -> Engine:
    """The kernel's engine, started now if no step or command has started it yet."""
    if _SLOT is None:
        raise RuntimeError("resumable_cells is not loaded: run `%load_ext resumable_cells`")
    return _SLOT.get()


@magics_class
class StepMagics(Magics):
    quiet = Bool(False, help="Do not print the one-line status after each step.").tag(config=True)
    store_dir = Unicode(
        "", help="Store directory (default: RESUMABLE_CELLS_DIR or ./.resumable_cells)."
    ).tag(config=True)
    size_limit = Int(0, help="Store size limit in bytes (0: the store's own, 10 GiB).").tag(
        config=True
    )
    remote = Unicode(
        "",
        help="Team cache, redis://HOST:PORT/DB or s3://BUCKET/PREFIX (gs://, az://, "
        "file:///DIR) (default: RESUMABLE_CELLS_REMOTE; none: off).",
    ).tag(config=True)
    auto = Bool(
        False,
        help="Auto mode in every notebook: each code cell runs as a step without %%step "
        "(`%step auto on|off` sets it for one notebook, kept in its store).",
    ).tag(config=True)
    auto_quiet = Float(
        1.0,
        help="Auto mode: no status line for a cell that ran or was served in less than this "
        "many seconds and saved less (its badge in the sidebar says it).",
    ).tag(config=True)
    write_wait = Float(
        None,
        allow_none=True,
        help="Seconds to wait for entries still being written, when the kernel ends and at "
        "a lookup of their key (default: RESUMABLE_CELLS_WRITE_WAIT, else 30).",
    ).tag(config=True)

    share_identity = Unicode(
        None,
        allow_none=True,
        help="Who the entries this kernel stores say computed them: 'user@host', 'user', "
        "'@host', or 'none' (default: RESUMABLE_CELLS_IDENTITY, else the login user and "
        "the host name).",
    ).tag(config=True)

    def __init__(self, shell):
        super().__init__(shell)  # the traitlets are read from the shell's config here
        self.slot = EngineSlot(shell, self._start_engine)

    @property
    def engine(self) -> Engine:
        return self.slot.get()

    def _start_engine(self) -> Engine:
        # With the collector paused, and what it imported (a team cache's client too)
        # settled after: see `_import_engine`.
        warmup.wait()
        with collector.Paused() as pause:
            engine = self._engine_started()
            collector.settle_once("engine", pause.was_enabled)
        return engine

    def _engine_started(self) -> Engine:
        # Imported at the first step or command, not at load (see the module's docstring).
        from ..engine.kernel import Engine
        from ..storage.store import Store

        store_dir = settings.store_dir(configured=self.store_dir)
        size_limit = settings.size_limit(configured=self.size_limit)
        store = warmup.take_store(store_dir, size_limit) or Store(store_dir, size_limit)
        try:
            engine = Engine(self.slot.shell, store)
        except BaseException:
            store.close()
            raise
        engine.quiet = self.quiet
        engine.auto_quiet = self.auto_quiet
        engine.write_wait = settings.write_wait(configured=self.write_wait)
        engine.identity = settings.identity(configured=self.share_identity)
        url = settings.team_cache(configured=self.remote)
        if not settings.team_cache_off(url):
            from . import teamcache  # the team cache's client: only when one is set

            teamcache.attach(engine, url)
        return engine

    @observe("quiet")
    def _quiet_changed(self, change) -> None:
        # `%config StepMagics.quiet = True` after loading (config is read before the
        # engine exists, when there is nothing to tell yet).
        if hasattr(self, "slot") and self.slot.started is not None:
            self.slot.started.quiet = change["new"]

    @observe("auto_quiet")
    def _auto_quiet_changed(self, change) -> None:
        if hasattr(self, "slot") and self.slot.started is not None:
            self.slot.started.auto_quiet = change["new"]

    @observe("write_wait")
    def _write_wait_changed(self, change) -> None:
        if hasattr(self, "slot") and self.slot.started is not None:
            self.slot.started.write_wait = settings.write_wait(configured=change["new"])

    @observe("share_identity")
    def _share_identity_changed(self, change) -> None:
        if hasattr(self, "slot") and self.slot.started is not None:
            self.slot.started.identity = settings.identity(configured=change["new"])

    @stepargs.declare
    @cell_magic
    def step(self, line: str, cell: str):
        """Run the cell as a resumable step: served from the cache when nothing it
        depends on changed (code, inputs, functions reached, package versions, --deps
        files), run live and stored otherwise. See `%step help` for the subcommands."""
        __tracebackhide__ = True  # noqa: F841
        if self.slot.started is None:  # the first step (or one after the store failed)
            _import_engine()
        from ..engine.execution import AwaitedStep, run_step, run_unstored  # (imported now)

        step_args = stepargs.parse(line)
        try:
            engine = self.engine
        except Exception as err:  # its store cannot be opened: tried again by the next step
            if self.slot.started is not None:  # it started; what failed after is no store's
                raise
            log.debug("the engine could not start", exc_info=True)
            logs.warn(f"not cached: the store failed ({_reason(err)}); the cell runs as is")
            result = run_unstored(self.slot.shell, step_args, line, cell)
        else:
            try:
                result = run_step(engine, step_args, line, cell)
            except StepRefused as err:
                raise UsageError(str(err)) from None
            except Exception as err:
                _from_the_users_code(self.slot.shell, err, cell_frame=not step_args.auto)
                raise
        if isinstance(result, AwaitedStep):  # the cell awaits it (`awaiting`)
            return _refusals_as_usage_errors(self.slot.shell, result, cell_frame=not step_args.auto)
        return result

    @line_magic("step")  # type: ignore[arg-type]  # IPython's decorator types reject a named magic
    def step_line(self, line: str):
        """%step SUBCOMMAND: status, why NAME, plan, timeline, clear NAME|--all,
        run [--new], budget [--steps N] [--tokens N] [--cost X], config, help."""
        from . import commands  # with the engine: at first use

        try:
            argv = shlex.split(line)
        except ValueError as err:
            raise UsageError(f"%step: {err}") from None
        return commands.dispatch(self.engine, argv)


def _import_engine() -> None:
    """The first step imports the engine (about a hundred modules) with the collector
    paused, then settles them: they are permanent, and counted as they passed through
    the young generations they would bring a collection of the whole heap forward
    (`engine.collector`). Most often the thread loading started has imported them
    already (`warmup.py`)."""
    warmup.wait()
    with collector.Paused() as pause:
        from ..engine import execution  # noqa: F401 (imported for the step to use)

        collector.settle_once("step", pause.was_enabled)


def _from_the_users_code(shell: Any, err: Exception, *, cell_frame: bool) -> None:
    """The traceback of a failing step shows the user's code, not the frames that run it
    (IPython's and ours, marked hidden): IPython would otherwise read the source of each
    of those files to render it, about 50 ms the first time a step fails in a kernel.
    A cell auto mode ran as a step reads as a plain cell's: the frame of the cell as
    IPython transformed it (the line `get_ipython().run_cell_magic('step', '--auto',
    ...)`) is left out too; a `%%step` the user wrote keeps that line, then the user's
    frames. When no frame is the user's (the step's own error), the whole traceback is
    shown. IPython renders an exception through its `_render_traceback_` when it has one;
    an exception that takes no attribute (`__slots__`) keeps the whole traceback."""
    formatter = getattr(shell, "InteractiveTB", None)
    if formatter is None or hasattr(err, "_render_traceback_"):
        return

    rendered: list[Any] = []  # the traceback it rendered, the text

    def render() -> list[str]:
        head = err.__traceback__
        if rendered and rendered[0] is head:  # IPython renders it again for its history
            return rendered[1]
        if rendered:  # raised again since: shown whole, as IPython would
            del err._render_traceback_  # type: ignore[attr-defined]
            return formatter.structured_traceback(type(err), err, head)
        tb = head
        # IPython's own frames first (`run_code`), then the transformed cell's
        while tb is not None and _ipython_frame(tb.tb_frame):
            tb = tb.tb_next
        cell, tb = tb, (tb.tb_next if tb is not None else None)
        # then the frames that call the step (IPython's and ours, marked hidden)
        shown = tb
        while shown is not None and (
            _ipython_frame(shown.tb_frame) or shown.tb_frame.f_locals.get("__tracebackhide__")
        ):
            shown = shown.tb_next
        if shown is None:  # the step's own error: every frame
            shown = cell if cell_frame else tb
        elif cell_frame and cell is not None:  # the cell's line, then straight to the user's
            shown = TracebackType(shown, cell.tb_frame, cell.tb_lasti, cell.tb_lineno)
        rendered[:] = [head, formatter.structured_traceback(type(err), err, shown)]
        return rendered[1]

    try:
        err._render_traceback_ = render  # type: ignore[attr-defined]
    except (AttributeError, TypeError):
        log.debug("%s takes no attribute: its traceback is shown whole", type(err).__name__)


def _ipython_frame(frame: Any) -> bool:
    return str(frame.f_globals.get("__name__", "")).split(".")[0] == "IPython"


def _reason(err: Exception) -> str:
    return str(getattr(err, "strerror", None) or err)


async def _refusals_as_usage_errors(shell: Any, step: AwaitedStep, *, cell_frame: bool):
    __tracebackhide__ = True  # noqa: F841
    try:
        return await step
    except StepRefused as err:
        raise UsageError(str(err)) from None
    except Exception as err:
        _from_the_users_code(shell, err, cell_frame=cell_frame)
        raise


def load(ipython) -> None:
    global _SLOT
    if _SLOT is not None and _SLOT.shell is ipython:
        return
    logs.configure()
    # From now on, not from the first step: a module imported before it and edited
    # since is still known to run old code.
    module_runs.watch_imports()
    builtins_found.note()  # (a name the notebook puts among them later is its global)
    magics = StepMagics(ipython)
    slot = _SLOT = magics.slot
    ipython.register_magics(magics)
    _install_step_name()
    awaiting.install(slot)
    slot.on_start.append(partial(_watch_freshness, slot))  # first: the comm's hub uses it
    slot.on_start.append(_watch_outside)
    comm.attach(slot)
    lazy.attach(slot)
    auto.attach(slot, configured=magics.auto, store_dir=magics.store_dir)
    collector.settle_once("load", gc.isenabled())  # what loading imported (`engine.collector`)
    store_dir = settings.store_dir(configured=magics.store_dir)
    if _partial_writes_left(store_dir):
        # A kernel killed mid-write left a temp file: opening the store sweeps it now,
        # not at the first step (its bytes are the user's disk until then).
        try:
            slot.get()
        except Exception:  # the store cannot open: the first step says so
            log.debug("the store could not open to sweep partial writes", exc_info=True)
    if slot.started is None:  # the engine's modules, while the user reads the next cell
        warmup.arm(ipython, store_dir, settings.size_limit(configured=magics.size_limit))


def _install_step_name() -> None:
    """`step` as a builtin name, the way IPython gives `display` and `get_ipython`: every
    cell and notebook function finds it, yet it is not one of the notebook's variables
    (`dir()` and `globals()` list what they list without the extension), a variable of
    the user's called `step` hides it instead of being overwritten by it, and `%reset`
    leaves it. A `step` some other code made a builtin first is left alone."""
    if getattr(builtins, "step", step_api) is step_api:
        setattr(builtins, "step", step_api)  # noqa: B010 (no such attribute, for the checker)
    else:
        log.warning("`step` is already a builtin name here: use `from resumable_cells import step`")


def _remove_step_name() -> None:
    if getattr(builtins, "step", None) is step_api:
        delattr(builtins, "step")


def _partial_writes_left(store_dir: Path) -> bool:
    """Whether a blob file being written when its kernel died may be left: a listing of
    the folder the store writes them in (`storage.blobs.PARTIAL`, named here rather
    than imported with the store), or, in a store no version with that folder opened,
    of every blob folder."""
    blobs = store_dir / "blobs"
    partial = blobs / ".partial"
    if partial.is_dir():
        return next(partial.glob(".*.tmp"), None) is not None
    return blobs.is_dir() and next(blobs.glob("*/.*.tmp"), None) is not None


def _watch_outside(engine: Engine) -> None:
    from . import outside  # what may run the notebook's code between steps

    outside.attach(engine)


def _watch_freshness(slot: EngineSlot, engine: Engine) -> None:
    from . import freshness  # imports the key's hashing: started with the engine

    freshness.attach(engine, slot.cells_before)


def unload(ipython) -> None:
    global _SLOT
    _remove_step_name()
    awaiting.uninstall(ipython)
    lazy.detach(ipython)
    auto.detach(ipython)
    if _SLOT is not None:
        _SLOT.close()
        engine = _SLOT.started
        if engine is not None:
            from . import freshness, outside

            outside.detach(engine)
            freshness.detach(engine)
            engine.close()
        _SLOT = None
