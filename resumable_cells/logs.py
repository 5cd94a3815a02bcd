"""The package's log, `logging.getLogger("resumable_cells")`, and its debug switch.

Failures the package deliberately survives (a record row that could not be written, a
sidebar that went away, a team cache that is down, a store that failed after the step
ran) are logged here at DEBUG with their traceback, so none is dropped without a trace;
what the user must know is also said, as a one-line warning on stderr, through `warn`
(the package's own) or `warn_step` (about one step): one spelling, one place. Each
module logs to its own child logger (`resumable_cells.engine.execution`, ...).

`RESUMABLE_CELLS_DEBUG=1` in the environment of the kernel (or of the CLI or the
server) sends this log to stderr; `enable_debug()` does the same from Python.
"""

from __future__ import annotations

import logging
import os
import sys

NAME = "resumable_cells"
ENV = "RESUMABLE_CELLS_DEBUG"

logger = logging.getLogger(NAME)
logger.addHandler(logging.NullHandler())  # a library: silent unless someone asks
_handler: logging.Handler | None = None


def debug_requested() -> bool:
    """Whether RESUMABLE_CELLS_DEBUG asks for the log (anything but empty, 0, false, no)."""
    return os.environ.get(ENV, "").strip().lower() not in ("", "0", "false", "no")


def enable_debug(stream=None) -> None:
    """Send the package's log, DEBUG and up, to `stream` (stderr by default)."""
    global _handler
    if _handler is None:
        _handler = logging.StreamHandler(stream or sys.stderr)
        _handler.setFormatter(logging.Formatter("%(name)s %(levelname)s: %(message)s"))
        logger.addHandler(_handler)
    logger.setLevel(logging.DEBUG)


def configure() -> None:
    """Turn the debug log on when the environment asks for it (called where the
    package starts: the extension's load, the CLI, the server extension)."""
    if debug_requested():
        enable_debug()


PREFIX = "resumable-cells"


def warn(message: str) -> None:
    """Tell the user something the package survived or refused, on stderr:
    `resumable-cells: MESSAGE`."""
    print(f"{PREFIX}: {message}", file=sys.stderr)


def warn_at_exit(message: str) -> None:
    """`warn`, as the kernel ends: on the process's own stderr (the terminal or the
    server's log), and on the notebook's while it still listens."""
    line = f"{PREFIX}: {message}"
    for stream in dict.fromkeys([sys.__stderr__, sys.stderr]):  # (once when they are one)
        try:
            print(line, file=stream, flush=True)
        except (AttributeError, OSError, ValueError):  # gone, or closed as the kernel ends
            logger.debug("a warning at exit was not written to %r", stream, exc_info=True)


def warn_step(step: str, message: str) -> None:
    """Tell the user something about one step, on stderr: `step NAME: MESSAGE`."""
    print(f"step {step}: {message}", file=sys.stderr)
