"""The number in the prompt of the cell being run (`In [n]`): the one source of it.

IPython 9 raises `shell.execution_count` before it runs a cell, IPython 8 after, so the
attribute read inside a cell is one more than the prompt under IPython 9. IPython's own
display hook knows which (`prompt_count`, what `Out[n]` shows), so every `In [n]` the
record, the status table, the plan and the sidebar show comes from it.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)


def prompt_number(shell: Any) -> int | None:
    """`n` of the running cell's `In [n]`; None outside a shell that numbers cells."""
    hook = getattr(shell, "displayhook", None)
    try:
        count = hook.prompt_count if hook is not None else None
    except Exception:  # a display hook of another shell: fall back to the counter
        log.debug("no prompt_count on %r", hook, exc_info=True)
        count = None
    if count is None:
        count = getattr(shell, "execution_count", None)
    return count if isinstance(count, int) and count > 0 else None
