"""The IPython surface: the `%%step` cell magic, the `%step` line magic, their settings
(traitlets, `c.StepMagics.*`) and loading the extension."""

from __future__ import annotations

import shlex

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from traitlets import Bool, Float, Int, Unicode, observe

from .. import logs, settings
from ..engine.execution import AwaitedStep, run_step
from ..engine.kernel import Engine
from ..engine.live.step_object import step as step_api
from ..errors import StepRefused
from ..storage.store import Store
from . import awaiting, commands, stepargs, teamcache

_ENGINE: Engine | None = None


def current_engine() -> Engine:
    if _ENGINE is None:
        raise RuntimeError("resumable_cells is not loaded: run `%load_ext resumable_cells`")
    return _ENGINE


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
        "", help="Team cache, redis://HOST:PORT/DB (default: RESUMABLE_CELLS_REMOTE; none: off)."
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

    def __init__(self, shell):
        super().__init__(shell)  # the traitlets are read from the shell's config here
        store = Store(
            settings.store_dir(configured=self.store_dir),
            settings.size_limit(configured=self.size_limit),
        )
        self.engine = Engine(shell, store)
        self.engine.quiet = self.quiet
        self.engine.auto_quiet = self.auto_quiet
        self.engine.write_wait = settings.write_wait(configured=self.write_wait)
        teamcache.attach(self.engine, settings.team_cache(configured=self.remote))

    @observe("quiet")
    def _quiet_changed(self, change) -> None:
        # `%config StepMagics.quiet = True` after loading (config is read before the
        # engine exists, when there is nothing to tell yet).
        if hasattr(self, "engine"):
            self.engine.quiet = change["new"]

    @observe("auto_quiet")
    def _auto_quiet_changed(self, change) -> None:
        if hasattr(self, "engine"):
            self.engine.auto_quiet = change["new"]

    @observe("write_wait")
    def _write_wait_changed(self, change) -> None:
        if hasattr(self, "engine"):
            self.engine.write_wait = settings.write_wait(configured=change["new"])

    @stepargs.declare
    @cell_magic
    def step(self, line: str, cell: str):
        """Run the cell as a resumable step: served from the cache when nothing it
        depends on changed (code, inputs, functions reached, package versions, --deps
        files), run live and stored otherwise. See `%step help` for the subcommands."""
        __tracebackhide__ = True  # noqa: F841
        step_args = stepargs.parse(line)
        try:
            result = run_step(self.engine, step_args, line, cell)
        except StepRefused as err:
            raise UsageError(str(err)) from None
        if isinstance(result, AwaitedStep):  # the cell awaits it (`awaiting`)
            return _refusals_as_usage_errors(result)
        return result

    @line_magic("step")  # type: ignore[arg-type]  # IPython's decorator types reject a named magic
    def step_line(self, line: str):
        """%step SUBCOMMAND: status, why NAME, plan, timeline, clear NAME|--all,
        run [--new], budget [--steps N] [--tokens N] [--cost X], config, help."""
        try:
            argv = shlex.split(line)
        except ValueError as err:
            raise UsageError(f"%step: {err}") from None
        return commands.dispatch(self.engine, argv)


async def _refusals_as_usage_errors(step: AwaitedStep):
    __tracebackhide__ = True  # noqa: F841
    try:
        return await step
    except StepRefused as err:
        raise UsageError(str(err)) from None


def load(ipython) -> None:
    global _ENGINE
    if _ENGINE is not None and _ENGINE.shell is ipython:
        return
    logs.configure()
    magics = StepMagics(ipython)
    _ENGINE = magics.engine
    ipython.register_magics(magics)
    ipython.push({"step": step_api}, interactive=False)
    awaiting.install(_ENGINE)
    from . import auto, comm, freshness, lazy, outside

    freshness.attach(_ENGINE)
    comm.attach(_ENGINE)
    lazy.attach(_ENGINE)
    outside.attach(_ENGINE)
    auto.attach(_ENGINE, configured=magics.auto)


def unload(ipython) -> None:
    global _ENGINE
    awaiting.uninstall(ipython)
    if _ENGINE is not None:
        from . import auto, freshness, lazy, outside

        auto.detach(_ENGINE)
        outside.detach(_ENGINE)
        lazy.detach(_ENGINE)
        freshness.detach(_ENGINE)
        _ENGINE.close()
        _ENGINE = None
