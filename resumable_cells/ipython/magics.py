"""The IPython surface: the `%%step` cell magic and the `%step` line magic."""

from __future__ import annotations

import shlex
from functools import lru_cache

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from traitlets import Bool, Int, Unicode

from ..engine.engine import Engine, StepArgs, StepRefused
from ..engine.stepapi import step as step_api
from ..storage.store import Store
from . import commands

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

    def __init__(self, shell, engine: Engine):
        super().__init__(shell)
        self.engine = engine
        engine.quiet = self.quiet
        from ..storage.redis import tier as remote

        remote.attach(engine, self.remote)

    @magic_arguments()
    @argument("name", nargs="?", help="Step name (default: derived from what the cell assigns).")
    @argument("--effect", action="store_true", help="Always run: the step has side effects.")
    @argument("--force", action="store_true", help="Run live and replace the cached entry.")
    @argument("--ignore", nargs="+", default=[], metavar="VAR", help="Inputs left out of the key.")
    @argument("--version", metavar="TAG", help="A tag in the key: change it to invalidate.")
    @argument("--deps", nargs="+", default=[], metavar="GLOB", help="Files the key depends on.")
    @cell_magic
    def step(self, line: str, cell: str):
        """Run the cell as a resumable step: served from the cache when nothing it
        depends on changed (code, inputs, functions reached, package versions, --deps
        files), run live and stored otherwise. See `%step help` for the subcommands."""
        __tracebackhide__ = True  # noqa: F841
        step_args = _parsed_args(line)
        try:
            return self.engine.execute(step_args, line, cell)
        except StepRefused as err:
            raise UsageError(str(err)) from None

    @line_magic("step")
    def step_line(self, line: str):
        """%step SUBCOMMAND: status, why NAME, plan, timeline, clear NAME|--all,
        run [--new], budget [--steps N] [--tokens N] [--cost X], config, help."""
        try:
            argv = shlex.split(line)
        except ValueError as err:
            raise UsageError(f"%step: {err}") from None
        return commands.dispatch(self.engine, argv)


@lru_cache(maxsize=512)
def _parsed_args(line: str) -> StepArgs:
    """The flags of a `%%step` line (parsed once per distinct line: it is on every hit)."""
    try:
        args = parse_argstring(StepMagics.step, line)
    except ValueError as err:  # shlex: an unclosed quote
        raise UsageError(f"%%step: cannot parse {line!r} ({err}).") from None
    return StepArgs(
        name=args.name,
        effect=args.effect,
        force=args.force,
        ignore=tuple(args.ignore),
        version=args.version,
        deps=tuple(args.deps),
    )


def load(ipython) -> None:
    global _ENGINE
    if _ENGINE is not None and _ENGINE.shell is ipython:
        return
    store = None
    cfg = ipython.config.get("StepMagics", {})
    if cfg.get("store_dir") or cfg.get("size_limit"):
        store = Store(cfg.get("store_dir") or None, cfg.get("size_limit") or None)
    _ENGINE = Engine(ipython, store)
    ipython.register_magics(StepMagics(ipython, _ENGINE))
    ipython.push({"step": step_api}, interactive=False)
    from . import comm

    comm.attach(_ENGINE)


def unload(ipython) -> None:
    global _ENGINE
    if _ENGINE is not None:
        _ENGINE.journal.close()
        _ENGINE.store.close()
        _ENGINE = None
