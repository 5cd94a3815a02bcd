"""Whether the team cache is worth asking: staying out of the way of a server that is
down, slow or refusing.

Every command uses short socket timeouts and no retries (`connect`); a failure marks
the server down for a back-off that doubles from BACKOFF_MIN up to BACKOFF_MAX, during
which lookups skip it and pushes wait; a success resets it. One warning per kernel says
what is wrong, printed from the user's thread.
"""

from __future__ import annotations

import threading
import time

from ... import logs

BACKOFF_MIN, BACKOFF_MAX = 1.0, 30.0
_warned = False  # one warning per kernel, whichever team cache it is about


def describe_error(err: BaseException) -> str:
    """The first line of an error, short enough for a status line."""
    text = str(err).strip() or type(err).__name__
    return text.splitlines()[0][:160]


class Health:
    """The server's state, shared by lookups (the user's thread) and the pusher (its
    own thread): changes notify `cv`, on which the pusher waits."""

    def __init__(self, url: str, cv: threading.Condition, warning: str | None = None):
        self.url = url
        self.cv = cv
        self.warning = warning  # what to tell the user, once per kernel
        self.last_error: str | None = None
        self.down_until = 0.0  # time.monotonic() before which the server is not asked
        self._backoff = BACKOFF_MIN

    def up_now(self) -> bool:
        return time.monotonic() >= self.down_until

    def down(self, err: BaseException) -> None:
        with self.cv:
            self.last_error = describe_error(err)
            self.down_until = time.monotonic() + self._backoff
            self._backoff = min(self._backoff * 2, BACKOFF_MAX)
            if self.warning is None:
                self.warning = (
                    f"the team cache {self.url} is unreachable ({self.last_error}); steps "
                    "run from the local store or live, and it is retried in the background"
                )
            self.cv.notify_all()

    def up(self) -> None:
        if self.down_until or self._backoff != BACKOFF_MIN:
            with self.cv:
                self.down_until, self._backoff = 0.0, BACKOFF_MIN
                self.cv.notify_all()

    def retry_now(self) -> None:
        """Ask the server again now, whatever the back-off says (the caller holds cv)."""
        self.down_until = 0.0

    def say_warning(self) -> None:
        """Print the pending warning, once per kernel (call from the user's thread)."""
        global _warned
        if self.warning and not _warned:
            _warned = True
            logs.warn(self.warning)
