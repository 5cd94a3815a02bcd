"""The arguments of `%%step`, declared once, the IPython way (`@magic_arguments`).

The magic takes its generated help and parser from here (`%%step?`), and `%step plan`,
which reads the `%%step` lines of the notebook's cells, parses them with the same spec.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING

from IPython.core.error import UsageError
from IPython.core.magic_arguments import MagicArgumentParser, argument, magic_arguments

if TYPE_CHECKING:
    from ..engine.execution import StepArgs

# In the order the help lists them. --ignore and --deps take several values, so the
# name goes first.
ARGUMENTS = (
    argument("name", nargs="?", help="Step name (default: derived from what the cell assigns)."),
    argument("--effect", action="store_true", help="Always run: the step has side effects."),
    argument("--force", action="store_true", help="Run live and replace the cached entry."),
    argument("--ignore", nargs="+", default=[], metavar="VAR", help="Inputs left out of the key."),
    argument("--version", metavar="TAG", help="A tag in the key: change it to invalidate."),
    argument("--deps", nargs="+", default=[], metavar="GLOB", help="Files the key depends on."),
    argument(
        "--ttl",
        metavar="AGE",
        help="Run again once the entry is older than this (30m, 2h, 1d); not in the key.",
    ),
    argument(
        "--auto",
        action="store_true",
        help="Put on the cell by auto mode (`%%step auto on`): no warning when two cells "
        "derive one name, no status line for a trivial cell.",
    ),
)
_TTL_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
# The parser `parse` uses: the magic's, once `declare` made it, else one of its own made
# at first use. A parser takes about 3 ms to make, most of it IPython writing its help
# into the magic's docstring; loading the extension made two, this module's at import.
_parser: MagicArgumentParser | None = None


def declare(magic):
    """Decorate the `%%step` magic with its arguments: as `@magic_arguments()` over one
    `@argument(...)` line each, which also writes its help into its docstring."""
    global _parser
    for arg in reversed(ARGUMENTS):  # decorators apply bottom-up
        magic = arg(magic)
    magic = magic_arguments()(magic)
    _parser = magic.parser
    return magic


def parser() -> MagicArgumentParser:
    """The parser of `%%step` lines (named as the magic, so that its messages say
    `%step`), without the magic: for `%step plan` and the frontend's spec."""
    global _parser
    if _parser is None:
        made = MagicArgumentParser("step")
        for arg in ARGUMENTS:
            arg.add_to_parser(made, None)
        _parser = made
    return _parser


@lru_cache(maxsize=512)
def parse(line: str) -> StepArgs:
    """The flags of a `%%step` line (parsed once per distinct line: it is on every
    hit). Raises UsageError on a line that does not parse."""
    try:
        args = parser().parse_argstring(line)
    except ValueError as err:  # shlex: an unclosed quote
        raise UsageError(f"%%step: cannot parse {line!r} ({err}).") from None
    from ..engine.execution import StepArgs  # the engine: imported by the first step

    return StepArgs(
        name=args.name,
        effect=args.effect,
        force=args.force,
        ignore=tuple(args.ignore),
        version=args.version,
        deps=tuple(args.deps),
        ttl=None if args.ttl is None else ttl_seconds(args.ttl),
        auto=args.auto,
    )


def ttl_seconds(text: str) -> float:
    """`30m`, `2h`, `1d`, `45s` (or `1.5h`) in seconds. UsageError on anything else."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd])\s*", text)
    if not m:
        raise UsageError(
            f"%%step --ttl: {text!r} is not an age; give a number and a unit: 45s, 30m, 2h or 1d."
        )
    seconds = float(m.group(1)) * _TTL_UNITS[m.group(2)]
    if seconds <= 0:
        raise UsageError(f"%%step --ttl: {text!r}: a TTL must be more than 0.")
    return seconds
