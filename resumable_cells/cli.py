"""`resumable-cells`: look into and manage a store from a shell.

Errors (a missing store, an unknown run or step) are one line on stderr and exit
status 2, never a traceback. `verify` (in `resumable_cells.verify`) needs no store.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from . import __version__, formatting, logs, settings
from .errors import CLIError, TeamCacheError
from .records import glance, journal, provenance, runs, views, why
from .storage import sizes
from .storage.store import Store
from .verify import command as verify_command

if TYPE_CHECKING:
    from .storage.teamtier import TeamTier

T = TypeVar("T")

log = logging.getLogger(__name__)
EXIT_USAGE = 2


def main(argv: list[str] | None = None) -> int:
    logs.configure()
    parser = _parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    if getattr(args, "standalone", False):  # verify: runs notebooks, opens no store
        return args.func(args)
    try:
        if getattr(args, "team_only", False):  # reencrypt: the team cache, no local store
            return args.func(args)
        if getattr(args, "remote", None) is not None:  # `ls --remote`: no local store needed
            _ls_remote(args.remote, settings.store_dir(args.dir))
            return 0
        store = _open(settings.store_dir(args.dir))
        try:
            args.func(store, args)
        finally:
            store.close()
    except CLIError as err:
        logs.warn(str(err))
        return EXIT_USAGE
    except BrokenPipeError:
        return 0
    return 0


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="resumable-cells", description="Inspect and manage a resumable-cells store."
    )
    p.add_argument("--version", action="version", version=f"resumable-cells {__version__}")
    p.add_argument(
        "--dir", help="store directory (default: RESUMABLE_CELLS_DIR, else .resumable_cells)"
    )
    sub = p.add_subparsers(title="commands", metavar="COMMAND")

    c = sub.add_parser("ls", help="runs and steps in the store, with sizes")
    c.add_argument(
        "--remote", nargs="?", const="", metavar="URL",
        help="list the team cache at URL instead (default: RESUMABLE_CELLS_REMOTE)",
    )  # fmt: skip
    c.set_defaults(func=cmd_ls)

    c = sub.add_parser("show", help="a run's record as a table")
    c.add_argument("run", nargs="?", help="run id or notebook name (default: the latest run)")
    c.set_defaults(func=cmd_show)

    c = sub.add_parser("why", help="what changed between a step's last two entries")
    c.add_argument("step")
    c.set_defaults(func=cmd_why)

    c = sub.add_parser("export", help="a run's record as JSON or CSV on stdout")
    c.add_argument("run", nargs="?", help="run id or notebook name (default: the latest run)")
    c.add_argument("--format", choices=("json", "csv"), default="json")
    c.set_defaults(func=cmd_export)

    c = sub.add_parser("gc", help="evict least recently used entries until under a size")
    c.add_argument("--size-limit", type=sizes.parse_size, help="e.g. 2GB (default: the store's)")
    c.set_defaults(func=cmd_gc)

    c = sub.add_parser("clear", help="forget one step's entries, or all")
    c.add_argument("step", nargs="?")
    c.add_argument("--all", action="store_true")
    c.set_defaults(func=cmd_clear)

    c = sub.add_parser(
        "reencrypt", help="seal a team cache again under the current team key (after a rotation)"
    )
    c.add_argument(
        "--remote", metavar="URL", help="the team cache (default: RESUMABLE_CELLS_REMOTE)"
    )
    c.set_defaults(func=cmd_reencrypt, team_only=True)

    verify_command.add_parser(sub)
    return p


def _open(directory: Path) -> Store:
    if not (directory / "index").is_dir():
        raise CLIError(f"no store at {directory} (give one with --dir)")
    try:
        return Store(directory)
    except Exception as err:
        log.debug("the store at %s could not be opened", directory, exc_info=True)
        raise CLIError(f"cannot open the store at {directory}: {err}") from None


def _pick_run(store: Store, wanted: str | None) -> runs.Run:
    all_runs = runs.stored(store)
    if not all_runs:
        raise CLIError("the store has no runs yet")
    if wanted is None:
        return all_runs[-1]
    for r in all_runs:
        if wanted in (r.id, r.notebook):
            return r
    known = ", ".join(f"{r.id} ({r.notebook or 'no notebook'})" for r in all_runs)
    raise CLIError(f"no run {wanted!r}; known runs: {known}")


def _when(t: float | None) -> str:
    return dt.datetime.fromtimestamp(t).strftime("%Y-%m-%d %H:%M:%S") if t else "-"


def _table(rows: list[tuple], header: tuple) -> None:
    table = [tuple(str(c) for c in header)] + [tuple(str(c) for c in r) for r in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    for r in table:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())


def cmd_ls(store: Store, args) -> None:
    print(f"store {store.dir}")
    run_rows = []
    for r in runs.stored(store):
        execs = journal.load(store, r.id)
        c = views.totals(execs, None)["run"]
        rate = formatting.percent(glance.hit_rate(c["served"], c["ran"]))
        run_rows.append((r.id, r.notebook or "-", _when(r.created), len(execs), c["served"],
                         c["ran"], rate, formatting.duration(c["saved_s"])))  # fmt: skip
    head = ("run", "notebook", "created", "executions", "served", "ran", "hit rate", "saved")
    _table(run_rows, head)
    sizes_by_blob = store.blob_sizes()
    steps: dict[str, list] = {}
    for _, e in store.entries():
        s = steps.setdefault(e.step, [0, set()])
        s[0] += 1
        s[1].update(e.blobs())
    print()
    _table(
        [
            (n, c, sizes.format_size(sum(sizes_by_blob.get(b, 0) for b in bl)))
            for n, (c, bl) in sorted(steps.items())
        ],
        ("step", "entries", "size"),
    )
    print(f"\nblob files on disk: {sizes.format_size(sum(sizes_by_blob.values()))}")
    print(glance.store_text(glance.store_figures(store)))
    team = settings.team_cache()
    if team:
        print(_team_text(team, store.dir))


def _team_text(url: str, store_dir: Path) -> str:
    """The team cache's line for `ls`; its problem, when it has one, in the line."""
    from .storage import team as teams
    from .storage.redis.health import describe_error

    out = {"url": url}
    try:
        team = teams.from_setting(url, store_dir)
        if team is not None:
            try:
                out.update(teams.figures(team))
            except team.server_errors() as err:
                log.debug("the team cache's figures could not be read", exc_info=True)
                out["error"] = f"unreachable ({describe_error(err)})"
    except TeamCacheError as err:
        out["error"] = str(err)
    return glance.team_text(out)


def _ls_remote(url: str, store_dir: Path) -> None:
    """`ls --remote [URL]`: steps, entries and sizes on the team cache."""
    from .storage import team as teams

    url = settings.team_cache(url)
    if not url:
        raise CLIError("no team cache: give --remote URL or set RESUMABLE_CELLS_REMOTE")
    team = _team_at(url, store_dir)
    if team is None:
        raise CLIError("no team cache (--remote none)")
    info = _on_team(url, teams.listing, team)
    print(f"team cache {url}")
    rows = [
        (n, s["entries"], sizes.format_size(s["bytes"]), _when(s["latest"]))
        for n, s in sorted(info["steps"].items())
    ]
    _table(rows, ("step", "entries", "size", "latest"))
    print(
        f"\ntotal {info['entries']} entries, {info['blobs']} blobs, "
        f"{sizes.format_size(info['bytes'])} in {info['chunks']} chunks"
    )
    if info["unverified"]:
        why_not = "no team key set" if team.sealer is None else "they fail the team key"
        print(f"{info['unverified']} entries not verified ({why_not})")


def _team_at(url: str, store_dir: Path) -> TeamTier | None:
    """The team cache `url` names; a setting it refuses is a CLIError."""
    from .storage import team as teams

    try:
        return teams.from_setting(url, store_dir)
    except TeamCacheError as err:
        raise CLIError(str(err)) from None


def _on_team(url: str, call: Callable[[TeamTier], T], team: TeamTier) -> T:
    """`call(team)`, its server's errors said as a CLIError."""
    from .storage.redis.health import describe_error

    try:
        return call(team)
    except team.server_errors() as err:
        raise CLIError(f"the team cache {url} is unreachable ({describe_error(err)})") from None
    except TeamCacheError as err:
        raise CLIError(str(err)) from None


def cmd_reencrypt(args) -> int:
    """`reencrypt [--remote URL]`: every entry and blob not under the current team key
    sealed again with it (opened with RESUMABLE_CELLS_TEAM_KEY_PREVIOUS). Status 1 when
    something could not be opened, so the previous key is still needed."""
    from .storage import team as teams

    url = settings.team_cache(args.remote)
    if not url or settings.team_cache_off(url):
        raise CLIError("no team cache: give --remote URL or set RESUMABLE_CELLS_REMOTE")
    team = _team_at(url, settings.store_dir(args.dir))
    assert team is not None, url
    if team.sealer is None:
        raise CLIError(f"no team key: {team.health.warning}")
    done = _on_team(url, teams.reseal, team)
    print(
        f"team cache {url}: re-encrypted {sizes.count(done.entries, 'entry', 'entries')} and "
        f"{sizes.count(done.blobs, 'blob')} ({sizes.format_size(done.bytes)}) under team key "
        f"{team.sealer.key_id}; {done.current} already under it"
    )
    for why_not in done.failed:
        print(f"  not re-encrypted: {why_not}")
    if done.failed:
        logs.warn(
            f"{len(done.failed)} objects were left as they are: keep the previous team key "
            "until they are re-encrypted (or delete them)"
        )
        return 1
    return 0


def cmd_show(store: Store, args) -> None:
    run = _pick_run(store, args.run)
    execs = journal.load(store, run.id)
    now = time.time()
    print(f"run {run.id}  notebook {run.notebook or '-'}  epoch {run.epoch}")
    sessions = journal.sessions(execs)
    rows = [
        (
            _when(e["start"]),
            sessions.index(e["session"]) + 1 if e["session"] in sessions else "-",
            e["step"],
            {"hit": "served", "live": "ran"}.get(e["status"], e["status"]),
            formatting.duration(e["duration_s"]),
            formatting.duration(e["saved_s"]) if e.get("saved_s") else "",
            e.get("reason") or "",
            _provenance(e, now),
        )
        for e in execs
    ]
    head = ("start", "session", "step", "status", "duration", "saved", "reason", "provenance")
    _table(rows, head)


def _provenance(execution: dict, now: float) -> str:
    raw = execution.get("provenance")
    if not isinstance(raw, dict):
        return ""
    return provenance.sentence(provenance.Origin.from_json(raw), now)


def cmd_why(store: Store, args) -> None:
    all_runs = runs.stored(store)
    execs = journal.load(store, all_runs[-1].id) if all_runs else []
    try:
        origin = why.origin_lines(store, args.step, execs, time.time())
        print("\n".join(origin + why.why_lines(store, args.step)))
    except LookupError as err:
        raise CLIError(str(err)) from None


def cmd_export(store: Store, args) -> None:
    run = _pick_run(store, args.run)
    execs = journal.load(store, run.id)
    if args.format == "json":
        json.dump(execs, sys.stdout, indent=1)
        print()
        return
    fields = list(journal.EXECUTION_FIELDS)
    w = csv.DictWriter(sys.stdout, fieldnames=fields)
    w.writeheader()
    for e in execs:
        w.writerow({k: json.dumps(v) if isinstance(v, (list, dict)) else v for k, v in e.items()})


def cmd_gc(store: Store, args) -> None:
    limit = args.size_limit or store.size_limit
    freed = store.evict(limit)
    print(
        f"freed {sizes.format_size(freed)}; the store now takes at most {sizes.format_size(limit)}"
    )


def cmd_clear(store: Store, args) -> None:
    if args.all == bool(args.step):
        raise CLIError("clear takes a step name or --all (not both)")
    if args.all:
        store.clear()
        print("cleared every entry")
        return
    n = store.clear_step(args.step, "cleared by resumable-cells clear")
    if not n:
        raise CLIError(f"no cached entry of a step named {args.step!r}")
    print(f"cleared {sizes.count(n, 'entry', 'entries')} of {args.step}")


if __name__ == "__main__":
    sys.exit(main())
