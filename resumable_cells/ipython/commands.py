"""`%step SUBCOMMAND`: status, why, plan, timeline, clear, run, budget, config."""

from __future__ import annotations

import argparse
import time

from IPython.core.error import UsageError

from .. import settings
from ..engine.kernel import Engine
from ..records import glance, provenance, runs, staleness, views, why
from ..storage import sizes
from ..storage.store import Store
from . import auto, notebookfile, restore, teamcache

SUBCOMMANDS = (
    "status", "why", "plan", "timeline", "clear", "run", "budget", "config", "push", "auto",
    "restore", "help",
)  # fmt: skip


class ArgParser(argparse.ArgumentParser):
    """argparse that reports mistakes as UsageError instead of exiting the kernel."""

    def error(self, message):
        raise UsageError(f"{self.prog}: {message}. See `{self.prog} --help`.")

    def exit(self, status=0, message=None):
        if message:
            print(message)
        raise _Done()


class _Done(Exception):
    pass


def dispatch(engine: Engine, argv: list[str]):
    if not argv:
        argv = ["status"]
    cmd, rest = argv[0], argv[1:]
    handler = _HANDLERS.get(cmd)
    if handler is None:
        raise UsageError(
            f"%step: unknown subcommand {cmd!r}. Use one of: {', '.join(SUBCOMMANDS)}."
        )
    try:
        return handler(engine, rest)
    except _Done:
        return None


def _parser(name: str, description: str) -> ArgParser:
    return ArgParser(prog=f"%step {name}", description=description, add_help=True)


def _help(engine: Engine, argv):
    print(
        "%%step [NAME] [--effect] [--force] [--ignore VAR ...] [--version TAG] [--deps GLOB ...]\n"
        "       [--ttl AGE]         AGE: 30m, 2h, 1d; an older entry is not served\n"
        "%step status               the run's steps, a row per cell: status, last run, saved, age,\n"
        "                           stale and why; the hit rate and the store's size and entries\n"
        "%step why NAME             why NAME last ran; which key component changed since its nearest entry\n"
        "%step plan [--notebook P]  what Run All would serve and what it would run (and what is stale)\n"
        "%step timeline             the run's executions across kernel sessions (SVG)\n"
        "%step clear NAME | --all   forget cached entries\n"
        "%step run [--new]          show the run, or start a new one (new epoch, seed, budget)\n"
        "%step budget [--steps N] [--tokens N] [--cost X]   show or set the run's limits\n"
        "%step config [--dir PATH] [--size-limit SIZE] [--remote URL|none]\n"
        "                           show or change the store and the team cache\n"
        "%step push [--all]         wait for pushes to the team cache (--all: every entry)\n"
        "%step auto [on|off]        every code cell a step without %%step (kept for the notebook)\n"
        "%step restore [--dry-run]  the last kernel session's state back, served (stops at what cannot be)"
    )


def _status(engine: Engine, argv):
    _parser("status", "Steps of the current run.").parse_args(argv)
    execs = engine.record()
    rows = staleness.step_rows(execs, engine.staleness())
    if engine.freshness is not None:
        engine.freshness.notify()  # the sidebar shows what this table says
    engine.report_writes()  # what failed to be written, before the table
    team = teamcache.figures(teamcache.team_of(engine))
    cache = {"store": glance.store_figures(engine.store), "team": team, "writing": engine.writing()}
    if engine.pending:
        cache["unread"] = {"names": engine.pending.names(), "bytes": engine.pending.bytes_pending()}
    if not rows:
        print("\n".join([f"run {engine.run.id}: no steps yet", *views.cache_lines(cache)]))
        return None
    totals = views.totals(execs, engine.session)
    return views.StatusTable(engine.run.id, rows, engine.budget.snapshot(), totals, cache)


def _why(engine: Engine, argv):
    p = _parser("why", "Explain the last miss of a step.")
    p.add_argument("name", help="step name")
    args = p.parse_args(argv)
    execs = engine.record()
    try:
        lines = why.why_lines(engine.store, args.name)
    except LookupError as err:
        if provenance.latest(execs, args.name) is None:  # (an uncached step has its record)
            known = sorted({e["step"] for e in execs})
            hint = f" Known steps: {', '.join(known)}." if known else ""
            raise UsageError(f"%step why: {err}.{hint}") from None
        lines = [f"step {args.name}: no cached entry"]
    origin = why.origin_lines(engine.store, args.name, execs, time.time())
    last = _last_run(execs, args.name)
    print("\n".join(([last] if last else []) + origin + lines))
    return None


def _last_run(execs: list[dict], step: str) -> str | None:
    """`step fit last ran because: expired (computed 3 h ago, ttl 2 h)`: why the step's
    latest execution ran rather than being served, from the record, when it says."""
    for e in reversed(execs):
        if e["step"] == step and e["status"] != "running":
            if e["status"] != "live" or not e.get("reason"):
                return None
            return f"step {step} last ran because: {e['reason']}"
    return None


def _plan(engine: Engine, argv):
    from . import plan

    p = _parser("plan", "What Run All would serve and run, without running anything.")
    p.add_argument("--notebook", help="notebook file (default: this kernel's notebook)")
    args = p.parse_args(argv)
    return plan.show(engine, args.notebook)


def _timeline(engine: Engine, argv):
    from ..records import timeline

    _parser("timeline", "The run's executions across kernel sessions.").parse_args(argv)
    return timeline.Timeline(engine.record())


def _clear(engine: Engine, argv):
    p = _parser("clear", "Forget cached entries.")
    p.add_argument("name", nargs="?", help="step name")
    p.add_argument("--all", action="store_true", help="every entry of the store")
    args = p.parse_args(argv)
    if args.all == bool(args.name):
        raise UsageError("%step clear: give a step name or --all (not both).")
    engine.pending.materialise_all(engine.ns)  # values not read yet would go with the blobs
    dropped = engine.drop_writes("cleared by %step clear", args.name)  # (None: every step's)
    if args.all:
        engine.store.clear()
        print("cleared every entry")
    else:
        n = engine.store.clear_step(args.name, "cleared by %step clear") + len(dropped)
        if not n:
            raise UsageError(f"%step clear: no cached entry of a step named {args.name!r}.")
        print(f"cleared {sizes.count(n, 'entry', 'entries')} of {args.name}")
    engine.notify_snapshot()
    return None


def _run(engine: Engine, argv):
    p = _parser("run", "Show the run, or start a new one.")
    p.add_argument("--new", action="store_true", help="new epoch, seed and budget")
    args = p.parse_args(argv)
    if args.new:
        engine.new_run()
        engine.notify_snapshot()
    r = engine.run
    print(f"run {r.id}  notebook {r.notebook or '(working directory)'}\n"
          f"  epoch {r.epoch}  seed {r.seed}\n  store {engine.store.dir}")  # fmt: skip
    _print_budget(engine)
    return None


def _budget(engine: Engine, argv):
    p = _parser("budget", "Show or set the run's limits.")
    p.add_argument("--steps", type=_nonneg(int), help="live executions allowed")
    p.add_argument("--tokens", type=_nonneg(int), help="tokens allowed (step.spend)")
    p.add_argument("--cost", type=_nonneg(float), help="cost allowed (step.spend)")
    args = p.parse_args(argv)
    if any(v is not None for v in (args.steps, args.tokens, args.cost)):
        engine.budget.set_limits(steps=args.steps, tokens=args.tokens, cost=args.cost)
        engine.notify_snapshot()
    _print_budget(engine)
    return None


def _print_budget(engine: Engine) -> None:
    snap = engine.budget.snapshot()
    parts = []
    for k in ("steps", "tokens", "cost"):
        limit = snap["limits"].get(k)
        spent = snap["spent"][k]
        parts.append(f"{k} {spent:g} of {'unlimited' if limit is None else f'{limit:g}'}")
    print("budget: " + ", ".join(parts))


def _config(engine: Engine, argv):
    p = _parser("config", "Show or change the store.")
    p.add_argument("--dir", help="store directory")
    p.add_argument("--size-limit", type=sizes.parse_size, help="e.g. 500MB, 10GiB")
    p.add_argument(
        "--remote",
        metavar="URL",
        help="team cache redis://HOST:PORT/DB, s3://BUCKET/PREFIX (gs://, az://, file:///DIR), or none",
    )
    args = p.parse_args(argv)
    if args.remote is not None:
        teamcache.configure(engine, args.remote)
    if args.dir:
        engine.set_store(Store(settings.store_dir(args.dir)))
    if args.size_limit is not None:
        engine.store.set_size_limit(args.size_limit)
    used = engine.store.used_bytes()
    print(f"store {engine.store.dir}\n  size {sizes.format_size(used)} "
          f"of {sizes.format_size(engine.store.size_limit)}")  # fmt: skip
    print(teamcache.describe(teamcache.team_of(engine)))
    return None


def _auto(engine: Engine, argv):
    p = _parser("auto", "Run every code cell as a step, without %%step in it.")
    p.add_argument("state", nargs="?", choices=["on", "off"], help="kept for this notebook")
    args = p.parse_args(argv)
    if args.state is not None:
        auto.switch(engine, args.state == "on")
    current = auto.of(engine)
    on = current is not None and current.on
    print(
        "auto mode on: every code cell runs as a step (cells that start with another cell "
        "magic stay plain); `%step auto off` to stop"
        if on
        else "auto mode off: only %%step cells are steps"
    )
    return None


def _restore(engine: Engine, argv):
    p = _parser(
        "restore",
        "Serve again, in order, the executions of the last kernel session of this run, "
        "each as it was; stop at the first that cannot be served and say why.",
    )
    p.add_argument("--dry-run", action="store_true", help="only say what it would restore")
    p.add_argument("--notebook", metavar="PATH", help="the notebook file (default: this kernel's)")
    args = p.parse_args(argv)
    cells: list[dict] | None
    if args.notebook:
        cells = notebookfile.code_cells(args.notebook)
    else:  # the cells the sidebar sent with this request, else the notebook file
        cells = notebookfile.sent_cells(engine.shell)
    return restore.command(engine, cells, args.dry_run)


def _push(engine: Engine, argv):
    p = _parser("push", "Wait until new entries are on the team cache.")
    p.add_argument("--all", action="store_true", help="push every local entry it lacks")
    args = p.parse_args(argv)
    team = teamcache.team_of(engine)
    if team is None:
        raise UsageError("%step push: no team cache; set one with `%step config --remote URL`.")
    engine.wait_for_writes(engine.write_wait)  # an entry is pushed once it is stored
    print(teamcache.push_report(team, engine.store, everything=args.all))
    return None


def _nonneg(kind):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if value < 0:
            raise argparse.ArgumentTypeError(f"{text} is negative; limits are 0 or more")
        return value

    parse.__name__ = kind.__name__
    return parse


_HANDLERS = {
    "help": _help, "status": _status, "why": _why, "plan": _plan, "timeline": _timeline,
    "clear": _clear, "run": _run, "budget": _budget, "config": _config, "push": _push,
    "auto": _auto, "restore": _restore,
}  # fmt: skip

__all__ = ["dispatch", "runs"]
