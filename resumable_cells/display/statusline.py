"""The one-line status a step shows after it ran or was served (a `display_data` output
with metadata `{"resumable_cells": {"status", "step"}}`, so tools can tell it apart)."""

from __future__ import annotations

import html

from .. import formatting
from .capture import publish_unflushed


def show_line(
    name: str,
    status: str,
    duration: float,
    saved: float,
    reason: str | None,
    source="local",
    age: float | None = None,
    *,
    flush: bool = True,
    ends_cell: bool = False,
) -> None:
    """Publish the step's status line; a hit says how old its value is (`age`, seconds)
    when that is more than a few minutes. `flush=False` when the step wrote nothing to
    stdout/stderr since they were last flushed: ipykernel then need not wait for its I/O
    thread to flush them first (half the cost of a trivial hit), unless they hold text
    written some other way (a logging handler that kept the stream). `ends_cell`: the
    step is the cell being run, so the cell's end follows at once (`capture.Queued`)."""
    from IPython import get_ipython
    from IPython.display import publish_display_data

    d = formatting.duration
    if status == "hit":
        where = "team cache" if source == "remote" else "cache"
        text = f"step {name}: served from {where} in {d(duration)}"
        if age is not None and age > formatting.AGE_SHOWN_AFTER_S:
            text += f", computed {formatting.age(age)} ago"
        text += f" (saved {d(saved)})"
    elif status == "effect":
        text = f"step {name}: effect ran in {d(duration)}"
    else:
        text = f"step {name}: ran in {d(duration)}" + (f" ({reason})" if reason else "")
    style = "font-size: 11px; color: var(--jp-ui-font-color2, #777); font-family: monospace"
    bundle = {
        "text/plain": text,
        "text/html": f'<div class="rc-status" style="{style}">{html.escape(text)}</div>',
    }
    metadata = {"resumable_cells": {"status": status, "step": name}}
    if flush:
        publish_display_data(bundle, metadata=metadata)
        return
    publish_unflushed(get_ipython(), bundle, metadata, queue=ends_cell)
