"""`resumable-cells verify NOTEBOOK ...`: the command line of verify.

Exit status: 0 when nothing differs and nothing hung in any notebook, 1 otherwise, 2 for
a usage error (a missing or unreadable notebook, a folder too big to copy): one line on
stderr, like the rest of the CLI, before any kernel starts.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from .. import logs

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2
DEFAULT_TIMEOUT = 300.0


class UsageProblem(Exception):
    pass


def add_parser(sub) -> None:
    """Add `verify` to the CLI's subcommands (its function needs no store)."""
    c = sub.add_parser(
        "verify",
        help="check that %%%%step changes nothing in notebooks: run each as it is "
        "(twice), with every cell under %%%%step, then again from the store",
    )
    c.add_argument("notebooks", nargs="+", metavar="NOTEBOOK",
                   help="notebooks, or folders (their *.ipynb)")  # fmt: skip
    c.add_argument(
        "--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
        help="a cell running longer counts as hung (default: %(default)g)",
    )  # fmt: skip
    c.add_argument("--json", type=Path, metavar="FILE", help="also write the report as JSON")
    c.add_argument(
        "--in-place", action="store_true",
        help="run in each notebook's own folder instead of a scratch copy of it",
    )  # fmt: skip
    c.add_argument(
        "--jobs", type=int, default=1, metavar="N",
        help="verify N notebooks at once (default: 1; timings are then noisier)",
    )  # fmt: skip
    c.add_argument(
        "--auto", action="store_true",
        help="run the stepped passes in auto mode (`%%%%step auto on`) instead of writing "
        "%%%%step on each cell",
    )  # fmt: skip
    c.add_argument("--keep", action="store_true", help="keep the scratch directory")
    c.set_defaults(func=run, standalone=True)


def run(args: argparse.Namespace) -> int:
    try:
        paths = notebooks(args.notebooks)
        _check_options(args, paths)
    except UsageProblem as err:
        logs.warn(str(err))
        return EXIT_USAGE
    from . import report
    from .workspace import Workspace

    t0 = time.perf_counter()
    with Workspace(keep=args.keep, in_place=args.in_place) as ws:
        results = _verify_all(paths, ws, args)
        if args.keep:
            print(f"scratch directory kept: {ws.root}", file=sys.stderr)
    wall = time.perf_counter() - t0
    print(report.text(results, wall), end="")
    if args.json:
        data = report.to_json(results, timeout=args.timeout, wall_s=wall)
        args.json.write_text(json.dumps(data, indent=1) + "\n")
    return EXIT_OK if all(r.ok for r in results) else EXIT_FINDINGS


def _verify_all(paths: list[Path], ws, args: argparse.Namespace) -> list:
    """Each notebook's result, in the order given; `--jobs N` verifies N at once, each
    in a worker process of its own (the kernels are processes anyway)."""
    from .check import verify_in, verify_notebook

    def done(number: int, result) -> None:
        verdict = "ok" if result.ok else "differs or hung"
        print(f"{number}/{len(paths)} {result.notebook}: {verdict}", file=sys.stderr, flush=True)

    results = []
    if args.jobs <= 1:
        for number, path in enumerate(paths, 1):
            results.append(verify_notebook(path, ws, number, args.timeout, args.auto))
            done(number, results[-1])
        return results
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    spawn = multiprocessing.get_context("spawn")  # no forked copies of zmq sockets
    with ProcessPoolExecutor(max_workers=args.jobs, mp_context=spawn) as pool:
        futures = [
            pool.submit(
                verify_in, str(ws.root), ws.keep, ws.in_place, path, n, args.timeout, args.auto
            )
            for n, path in enumerate(paths, 1)
        ]
        for number, future in enumerate(futures, 1):
            results.append(future.result())
            done(number, results[-1])
    return results


def notebooks(names: list[str]) -> list[Path]:
    """The notebooks named, folders expanded to their `*.ipynb` (sorted); UsageProblem
    for a path that does not exist, is not a notebook or cannot be read as one."""
    import nbformat

    out: list[Path] = []
    for name in names:
        p = Path(name)
        if p.is_dir():
            found = sorted(p.glob("*.ipynb"))
            if not found:
                raise UsageProblem(f"no notebooks (*.ipynb) in {p}")
            out += found
        elif p.is_file():
            out.append(p)
        else:
            raise UsageProblem(f"no notebook at {p}")
    for p in out:
        try:
            nbformat.read(p, as_version=4)
        except Exception as err:
            raise UsageProblem(f"cannot read {p} as a notebook ({type(err).__name__})") from None
    return out


def _check_options(args: argparse.Namespace, paths: list[Path]) -> None:
    from .workspace import FolderTooBig, check_copyable

    if args.jobs < 1:
        raise UsageProblem("--jobs takes a number of notebooks above 0")
    if not args.timeout > 0:
        raise UsageProblem("--timeout takes a number of seconds above 0")
    if args.json is not None and not args.json.parent.resolve().is_dir():
        raise UsageProblem(f"cannot write {args.json}: no folder {args.json.parent}")
    if not args.in_place:
        for folder in dict.fromkeys(p.resolve().parent for p in paths):
            try:
                check_copyable(folder)
            except FolderTooBig as err:
                raise UsageProblem(str(err)) from None
