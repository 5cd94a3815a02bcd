"""Record a step's outputs while they stream live, and replay them on a hit.

Streams are teed (the user still sees output as it happens); display calls are recorded
at the display publisher. Both land in one list, in the order the frontend received
them, which replay keeps. In a kernel, stdout and stderr are buffered apart and sent
when the kernel flushes each (after a short interval, before a display, at the end of
the cell), so `sys.stderr.write('w'); print('r')` reaches the frontend as `r`, then `w`:
text written to such a stream is recorded when the kernel sends it, not when it is
written. Elsewhere (a terminal), when it is written.
"""

from __future__ import annotations

import io
import logging
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from . import widgets

log = logging.getLogger(__name__)

# ("stream", name, text) | ("display", data, metadata, transient, update) | ("clear", wait)
# | ("error", name, value, traceback lines[, shown while the result was formatted]): a
# traceback shown without the cell raising; | ("result", data, metadata): a value the
# displayhook showed as the body ran (`ast_node_interactivity = "all"`: each expression
# statement's), an `Out[n]` before the step's own result;
# an entry's outputs also hold the figures shown after the cell (`figures`), which
# `replay` leaves to that module.
Output = tuple


def _add_stream(sink: list, name: str, text: str) -> None:
    if sink and sink[-1][0] == "stream" and sink[-1][1] == name:
        sink[-1] = ("stream", name, sink[-1][2] + text)
    else:
        sink.append(("stream", name, text))


class _Sent:
    """The text of one kernel stream, recorded when the kernel sends it: what is written
    to the stream (its `write`, wrapped on the instance: through `sys.stdout` and
    through any other reference to it, a log handler made before the step) waits until
    its `_flush` (which the kernel's I/O thread calls) moves it into the sink."""

    def __init__(self, stream: Any, name: str, sink: list, lock: threading.Lock):
        self.stream, self.name, self.sink, self.lock = stream, name, sink, lock
        self.pending: list[str] = []
        self.wrote = False  # the block wrote to it
        self.own = stream.__dict__.get("_flush")  # (set on the instance by someone else)
        self.original = stream._flush
        self.own_write = stream.__dict__.get("write")
        self.original_write = stream.write
        stream._flush = self._flush  # looked up on the instance each time it is scheduled
        stream.write = self._write

    def _write(self, text: Any) -> Any:
        if isinstance(text, str) and text:
            self.written(text)
        return self.original_write(text)

    def written(self, text: str) -> None:
        with self.lock:
            self.pending.append(text)
            self.wrote = True

    def send_now(self) -> None:
        """What the stream holds goes to the frontend now, and into the sink first. The
        kernel's flush waits for its I/O thread (a round trip, up to a millisecond on a
        busy machine): skipped when nothing was written and nothing waits to be sent."""
        if self.wrote or unsent(self.stream):
            self.stream.flush()
        self.move()

    def _flush(self) -> Any:
        self.move()
        return self.original()

    def move(self) -> None:
        with self.lock:
            text, self.pending = "".join(self.pending), []
            if text:
                _add_stream(self.sink, self.name, text)

    def close(self) -> None:
        self.send_now()  # what is buffered goes now, in this order (stdout first)
        if self.stream.__dict__.get("write") == self._write:
            if self.own_write is not None:
                self.stream.write = self.own_write
            else:
                del self.stream.write
        if self.stream.__dict__.get("_flush") == self._flush:
            if self.own is not None:
                self.stream._flush = self.own
            else:
                del self.stream._flush


def unsent(stream: Any) -> bool:
    """Whether a kernel stream (ipykernel's `OutStream`) holds text it has not handed to
    its I/O thread yet; True when that cannot be told."""
    lock = getattr(stream, "_buffer_lock", None)
    if lock is None:
        return True
    with lock:
        buffers = getattr(stream, "_buffers", None)  # ipykernel 7: one buffer per parent
        if isinstance(buffers, dict):
            return any(buffer.tell() for buffer in buffers.values())
        buffer = getattr(stream, "_buffer", None)  # ipykernel 6
        return buffer is None or bool(buffer.tell())


def _sent(stream: Any, name: str, sink: list, lock: threading.Lock) -> _Sent | None:
    """A recorder of what a kernel stream sends (ipykernel's `OutStream`), or None for a
    stream that writes through."""
    if callable(getattr(stream, "_flush", None)) and hasattr(stream, "pub_thread"):
        return _Sent(stream, name, sink, lock)
    return None


class _Tee:
    def __init__(self, stream, name: str, sink: list | None, sent: _Sent | None = None):
        self._stream = stream
        self._name = name
        self._sink = sink
        self._sent = sent

    def write(self, text):
        # (a kernel stream records what is written to it itself: `_Sent`)
        if isinstance(text, str) and text and self._sink is not None and self._sent is None:
            _add_stream(self._sink, self._name, text)
        return self._stream.write(text)

    def detach(self) -> None:
        """Write through from now on. What took `sys.stdout` while the step ran keeps
        the tee (`logging.basicConfig()` a handler on it): its later text belongs to no
        step, and would otherwise grow the ended step's outputs (a stream that writes
        through; a kernel stream records itself, only while the step runs)."""
        self._sink = self._sent = None

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def __getattr__(self, attr):
        return getattr(self._stream, attr)


@contextmanager
def capturing(shell):
    """Yields the list that fills with the outputs produced inside the block."""
    sink: list[Output] = []
    out, err = sys.stdout, sys.stderr
    pub = shell.display_pub
    publish, clear_output = pub.publish, pub.clear_output

    lock = threading.Lock()
    sent = [_sent(out, "stdout", sink, lock), _sent(err, "stderr", sink, lock)]

    def sent_now() -> None:
        """What the streams hold goes to the frontend now, and into the sink first."""
        for s in sent:
            if s is not None:
                s.send_now()

    def recording_publish(data, metadata=None, *args, **kwargs):
        transient = kwargs.get("transient")
        update = kwargs.get("update", False)
        sent_now()  # a kernel flushes its streams before it sends a display
        sink.append(("display", data, metadata or {}, transient, update))
        return publish(data, metadata, *args, **kwargs)

    def recording_clear(wait=False):
        sent_now()
        sink.append(("clear", wait))
        return clear_output(wait)

    own_traceback = shell.__dict__.get("_showtraceback")
    show_traceback = shell._showtraceback
    hook = shell.displayhook
    own_write = hook.__dict__.get("write_format_data")
    write_format_data = hook.write_format_data

    def recording_result(format_dict, md_dict=None):
        # (the kernel's displayhook flushes both streams before it sends the result)
        sent_now()
        sink.append(("result", format_dict, md_dict or {}))
        return write_format_data(format_dict, md_dict)

    def recording_traceback(etype, evalue, stb):
        # A traceback shown without the cell failing (a `_repr_html_` that raises, which
        # IPython's formatter reports; `showtraceback()` in an `except`): an output too.
        sent_now()
        sink.append(("error", getattr(etype, "__name__", str(etype)), str(evalue), list(stb)))
        return show_traceback(etype, evalue, stb)

    tees = _Tee(out, "stdout", sink, sent[0]), _Tee(err, "stderr", sink, sent[1])
    sys.stdout, sys.stderr = tees
    pub.publish, pub.clear_output = recording_publish, recording_clear
    shell._showtraceback = recording_traceback
    hook.write_format_data = recording_result
    try:
        yield sink
    finally:
        sys.stdout, sys.stderr = out, err
        for tee in tees:
            tee.detach()
        pub.publish, pub.clear_output = publish, clear_output
        if own_write is not None:
            hook.write_format_data = own_write
        else:
            del hook.write_format_data
        if own_traceback is not None:
            shell._showtraceback = own_traceback
        else:
            del shell._showtraceback
        for s in sent:
            if s is not None:
                s.close()


class _Unshown:
    """A stream that keeps what one thread writes and passes the rest through; once
    `thread` is None, everything (what took it meanwhile, a handler a library's import
    made, writes on)."""

    def __init__(self, stream: Any, thread: int) -> None:
        self._stream, self.kept = stream, io.StringIO()
        self.thread: int | None = thread

    def write(self, text: Any) -> Any:
        if threading.get_ident() == self.thread:
            return self.kept.write(text)
        return self._stream.write(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if threading.get_ident() != self.thread:
            self._stream.flush()

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._stream, attr)


@contextmanager
def unshown(what: str) -> Iterator[None]:
    """What this thread writes to stdout and stderr inside the block is not shown (it
    is logged): what a hit writes while it loads values is not the live run's output.
    Unpickling imports a value's module again, whose import warns as it did in the live
    step (the replay shows that warning already); a `__setstate__` that prints never
    ran live. Other threads' text goes through."""
    me = threading.get_ident()
    out, err = _Unshown(sys.stdout, me), _Unshown(sys.stderr, me)
    sys.stdout, sys.stderr = out, err
    try:
        yield
    finally:
        out.thread = err.thread = None
        if sys.stdout is out:
            sys.stdout = out._stream
        if sys.stderr is err:
            sys.stderr = err._stream
        text = out.kept.getvalue() + err.kept.getvalue()
        if text:
            log.debug("not shown, written while %s: %r", what, text[:2000])


def underlying(stream: Any) -> Any:
    """The stream under this module's wrappers (a step's capture, `unshown`): where an
    object that took `sys.stderr` while a step ran writes, and the one to hand out for
    good (`stream` itself when it is not wrapped)."""
    while isinstance(stream, _Tee | _Unshown):
        stream = stream._stream
    return stream


def errors_in_display(shell: Any, outputs: list[Output], since: int) -> None:
    """The tracebacks from `since` on were shown while the cell's result was formatted:
    a kernel marks such a cell failed (as a plain cell whose `_repr_html_` raises), and
    so does a replay of them."""
    for i in range(since, len(outputs)):
        if outputs[i][0] == "error":
            outputs[i] = (*outputs[i][:4], True)
            _failed_in_display(shell)


def _failed_in_display(shell: Any) -> None:
    if hasattr(shell, "_last_traceback_during_displayhook"):  # ipykernel's flag
        shell._last_traceback_during_displayhook = True


def replay(shell, outputs: list[Output]) -> None:
    """Show `outputs` again, in order. In a kernel whose streams hold nothing unsent,
    the text goes out as the kernel's own stream messages, queued for its I/O thread in
    order with the displays that follow, and displays are published without the
    kernel's flush of both streams first: a served cell that printed does not wait for
    the I/O thread once per output (about a millisecond each on a busy machine)."""
    send = _stream_sender(shell) if any(o[0] == "stream" for o in outputs) else None
    for item in outputs:
        kind = item[0]
        if kind == "stream":
            if send is not None:
                send(item[1], item[2])
                continue
            stream = sys.stdout if item[1] == "stdout" else sys.stderr
            stream.write(item[2])
            stream.flush()
        elif kind == "display":
            _, data, metadata, transient, update = item
            data, metadata = widgets.shown(data, metadata)
            kwargs: dict[str, Any] = {}
            if transient:
                kwargs["transient"] = transient
            if update:
                kwargs["update"] = update
            publish_unflushed(shell, data, metadata, **kwargs)
        elif kind == "clear":
            shell.display_pub.clear_output(item[1])
        elif kind == "result":
            _show_result(shell, item[1], item[2])
        elif kind == "error":
            ename, evalue, stb = item[1:4]
            sys.stdout.flush()
            sys.stderr.flush()
            shell._showtraceback(type(ename, (Exception,), {}), evalue, stb)
            if len(item) > 4 and item[4]:
                _failed_in_display(shell)


def _show_result(shell: Any, data: dict, metadata: dict) -> None:
    """Show a value the displayhook showed as the live body ran, as it did: an
    `execute_result` of this cell (`Out[n]`), the namespace's `_` left alone."""
    hook = shell.displayhook
    hook.start_displayhook()
    hook.write_output_prompt()
    hook.write_format_data(data, metadata)
    hook.finish_displayhook()


def publish_unflushed(
    shell: Any, data: dict, metadata: dict | None = None, *, queue: bool = False, **kwargs: Any
) -> None:
    """`publish_display_data`, without ipykernel's flush of stdout and stderr first (a
    wait for its I/O thread, each) when neither holds text it has not sent: nothing
    written before could come after the display. `queue`: the message joins the I/O
    thread's queue without waking it (`Queued`), for a step that is its cell, whose end
    follows at once; not for one a cell runs in a loop (its line would wait for the
    cell's next output)."""
    from IPython.display import publish_display_data

    pub = getattr(shell, "display_pub", None)
    if pub is None or not hasattr(pub, "_flush_streams"):
        sys.stdout.flush()  # a publisher that does not flush them itself (a terminal)
        sys.stderr.flush()
        publish_display_data(data, metadata, **kwargs)
        return
    if unsent(sys.stdout) or unsent(sys.stderr):
        publish_display_data(data, metadata, **kwargs)  # (it flushes them first)
        return
    socket = pub.pub_socket
    queued = Queued.of(socket) if queue else None
    pub._flush_streams = _nothing  # an instance attribute shadows the method for one call
    if queued is not None:
        pub.pub_socket = queued
    try:
        publish_display_data(data, metadata, **kwargs)
    finally:
        del pub._flush_streams
        if queued is not None:
            pub.pub_socket = socket


def _nothing() -> None:
    pass


def _stream_sender(shell: Any) -> Callable[[str, str], None] | None:
    """What sends a stream's text as the kernel's stream message, queued for its I/O
    thread (`Queued`), when stdout and stderr are ipykernel's streams holding nothing
    unsent, with no hook (an ipywidgets `Output`), echo or recording on them: the text
    then keeps its place among the messages that follow. None otherwise (a terminal,
    `%%capture`, `redirect_stdout`): the text is written to the streams."""
    queued = Queued.of(getattr(getattr(shell, "display_pub", None), "pub_socket", None))
    if queued is None:
        return None
    streams: dict[str, Any] = {"stdout": sys.stdout, "stderr": sys.stderr}
    for stream in streams.values():
        if (
            not hasattr(stream, "pub_thread")
            or not hasattr(stream, "session")
            or not isinstance(getattr(stream, "topic", None), bytes)
            or "_flush" in vars(stream)  # recorded (`_Sent`), or replaced by someone else
            or getattr(stream, "_hooks", True)
            or getattr(stream, "echo", None) is not None
            or unsent(stream)
        ):
            return None

    def send(name: str, text: str) -> None:
        stream = streams[name]
        msg = stream.session.msg(
            "stream", {"name": name, "text": text}, parent=stream.parent_header
        )
        stream.session.send(queued, msg, ident=stream.topic)

    return send


class Queued:
    """ipykernel's IOPub socket, for messages that join the queue of the kernel's I/O
    thread without waking it (a round of thread switches, and of the GIL, per message on
    a busy machine). The thread sends the queue in order whenever it is woken: by the
    next message sent the usual way (a served step's status line, when its cell goes
    on), at the latest by the cell's `idle` status. What is queued keeps its place among
    the outputs; it would be lost only with a kernel that dies before its cell ends."""

    def __init__(self, thread: Any) -> None:
        self.thread = thread

    @classmethod
    def of(cls, socket: Any) -> Queued | None:
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
