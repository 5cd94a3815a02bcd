"""The one-line status a step shows after it ran or was served (a `display_data` output
with metadata `{"resumable_cells": {"status", "step"}}`, so tools can tell it apart)."""

from __future__ import annotations

import html
import sys
from collections import deque
from typing import Any

from .. import formatting
from .capture import unsent


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
    step is the cell being run, so the cell's end follows at once (`_Queued`)."""
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
    pub = getattr(get_ipython(), "display_pub", None)
    flush = flush or unsent(sys.stdout) or unsent(sys.stderr)
    if flush or pub is None or not hasattr(pub, "_flush_streams"):
        publish_display_data(bundle, metadata=metadata)
        return
    socket = pub.pub_socket
    queued = _Queued.of(socket) if ends_cell else None
    pub._flush_streams = _nothing  # an instance attribute shadows the method for one call
    if queued is not None:
        pub.pub_socket = queued
    try:
        publish_display_data(bundle, metadata=metadata)
    finally:
        del pub._flush_streams
        if queued is not None:
            pub.pub_socket = socket


def _nothing() -> None:
    pass


class _Queued:
    """ipykernel's IOPub socket for the status line of a step that is its cell: the
    message joins the queue of the kernel's I/O thread without waking it (a round of
    thread switches, and of the GIL, per message on a busy machine). The thread sends the
    queue in order whenever it is woken, at the latest for the cell's `idle` status, which
    follows at once: the line keeps its place among the outputs. Not for a step a cell
    runs in a loop: its line would wait for the cell's next output, and be lost if the
    kernel died first."""

    def __init__(self, thread: Any) -> None:
        self.thread = thread

    @classmethod
    def of(cls, socket: Any) -> _Queued | None:
        """For the socket of a running I/O thread (`BackgroundSocket`), else None."""
        thread = getattr(socket, "io_thread", None)
        alive = getattr(getattr(thread, "thread", None), "is_alive", None)
        events = getattr(thread, "_events", None)
        if alive is None or not alive() or not isinstance(events, deque):
            return None
        if not callable(getattr(thread, "_really_send", None)):
            return None
        return cls(thread)

    def send_multipart(self, *args: Any, **kwargs: Any) -> None:
        thread = self.thread
        thread._events.append(lambda: thread._really_send(*args, **kwargs))
