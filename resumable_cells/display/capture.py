"""Record a step's outputs while they stream live, and replay them on a hit.

Streams are teed (the user still sees output as it happens); display calls are recorded
at the display publisher. Both land in one list, so replay keeps their order.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Any

# ("stream", name, text) | ("display", data, metadata, transient, update) | ("clear", wait);
# an entry's outputs also hold the figures shown after the cell (`figures`), which
# `replay` leaves to that module.
Output = tuple


class _Tee:
    def __init__(self, stream, name: str, sink: list):
        self._stream = stream
        self._name = name
        self._sink = sink

    def write(self, text):
        if isinstance(text, str) and text:
            sink = self._sink
            if sink and sink[-1][0] == "stream" and sink[-1][1] == self._name:
                sink[-1] = ("stream", self._name, sink[-1][2] + text)
            else:
                sink.append(("stream", self._name, text))
        return self._stream.write(text)

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

    def recording_publish(data, metadata=None, *args, **kwargs):
        transient = kwargs.get("transient")
        update = kwargs.get("update", False)
        sink.append(("display", data, metadata or {}, transient, update))
        return publish(data, metadata, *args, **kwargs)

    def recording_clear(wait=False):
        sink.append(("clear", wait))
        return clear_output(wait)

    sys.stdout, sys.stderr = _Tee(out, "stdout", sink), _Tee(err, "stderr", sink)
    pub.publish, pub.clear_output = recording_publish, recording_clear
    try:
        yield sink
    finally:
        sys.stdout, sys.stderr = out, err
        pub.publish, pub.clear_output = publish, clear_output


def replay(shell, outputs: list[Output]) -> None:
    from IPython.display import publish_display_data

    for item in outputs:
        kind = item[0]
        if kind == "stream":
            stream = sys.stdout if item[1] == "stdout" else sys.stderr
            stream.write(item[2])
            stream.flush()
        elif kind == "display":
            _, data, metadata, transient, update = item
            sys.stdout.flush()
            sys.stderr.flush()
            kwargs: dict[str, Any] = {}
            if transient:
                kwargs["transient"] = transient
            if update:
                kwargs["update"] = update
            publish_display_data(data, metadata, **kwargs)
        elif kind == "clear":
            shell.display_pub.clear_output(item[1])
