"""The definitions the sidebar shares with Python, written to one JSON file that the
TypeScript imports (`labextension/src/spec.json`):

- `statuses`, `themes`: the word and the colours of each status (from `palette`);
- `age_shown_after_s`: past this age a served value says how old it is (`formatting`);
- `step_magic`: the arguments of `%%step` as `stepargs` declares them (the one spec),
  and example lines with what the magic's own parser makes of them, so the sidebar's
  parser (`labextension/src/stepline.ts`) is tested against the real one.

    python -m resumable_cells.ipython.frontend_spec          # rewrite labextension/src/spec.json
    python -m resumable_cells.ipython.frontend_spec --check  # exit 1 when the file is out of date

`tests/test_frontend_spec.py` fails when the committed file differs from what this
module writes, so a new flag on `%%step` cannot silently be unknown to the sidebar.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from IPython.core.error import UsageError

from .. import formatting, palette
from . import stepargs

#: Lines a user might write after `%%step`, parsed by the magic to give the cases.
EXAMPLE_LINES = (
    "", "load", "load --effect", "--effect load", "fit --force", "--force --effect",
    "fit --ignore client logger", "--ignore client logger", "--deps data/*.csv fit",
    "fit --deps a.csv b.csv --effect", "--deps a b --effect c", "fit --version 2",
    "fit --version=2", "--version 2 fit", "fit --eff", "fit --ver 3", "fit --ignore=a",
    "fit --ignore=a b", "fit --dir x", "fit --name x", "a b", "x --effect y",
    "'my step' --force", '"q w" --effect', "'my step'x", "fit --ignore", "fit --version",
    "fit --effect=1", "-h", "fit -e", "fit --", "fit -- x", "--effect -- x",
    "--ignore a -- b", "s1 --ignore -1", "'open", "fit --ttl 2h", "--ttl 30m fit",
    "fit --ttl 1d --effect", "fit --ttl",
)  # fmt: skip


def step_magic() -> dict:
    """The arguments of `%%step` as `stepargs.ARGUMENTS` declares them, and what the
    magic's own parser makes of each example line."""
    args = []
    for arg in stepargs.ARGUMENTS:
        names, kw = list(arg.args), dict(arg.kwds)
        takes = "flag" if kw.get("action") == "store_true" else kw.get("nargs", 1)
        args.append({"name": names[0], "takes": takes, "help": kw.get("help", "")})
    cases = []
    for line in EXAMPLE_LINES:
        try:
            ns = stepargs.parser().parse_argstring(line)
        except (UsageError, ValueError) as err:
            cases.append({"line": line, "error": str(err)})
            continue
        cases.append({"line": line, "parsed": vars(ns)})
    return {"arguments": args, "cases": cases}


def spec() -> dict:
    statuses = {
        s: {"label": word, "light": light, "dark": dark}
        for s, (word, light, dark) in palette.STATUSES.items()
    }
    return {
        "_about": "Written by `python -m resumable_cells.ipython.frontend_spec`; do not edit.",
        "statuses": statuses,
        "themes": palette.THEMES,
        "age_shown_after_s": formatting.AGE_SHOWN_AFTER_S,
        "step_magic": step_magic(),
    }


def text() -> str:
    return json.dumps(spec(), indent=1, ensure_ascii=False) + "\n"


def default_path() -> Path:
    return Path(__file__).resolve().parents[2] / "labextension" / "src" / "spec.json"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m resumable_cells.ipython.frontend_spec")
    p.add_argument("--check", action="store_true", help="exit 1 if the file is out of date")
    p.add_argument("--path", type=Path, default=default_path())
    args = p.parse_args(argv)
    want = text()
    if args.check:
        have = args.path.read_text(encoding="utf-8") if args.path.exists() else ""
        if have != want:
            print(
                f"{args.path} is out of date: run python -m resumable_cells.ipython.frontend_spec"
            )
            return 1
        return 0
    args.path.write_text(want, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
