"""What one digest remembers: the objects it visited (`Memo`) and what all of its
digest states share (`Shared`: the memo's owner, the budget, the digests of functions).
"""

from __future__ import annotations

from typing import Any

from .budget import Meter


class Memo:
    """The objects one digest has visited: id -> (order of the first visit, object).

    A set's elements are hashed each in a memo of its own chained to the set's, so that
    an element's encoding does not depend on the elements hashed before it (their
    order depends on PYTHONHASHSEED): it sees what the walk visited before the set, and
    nothing of its siblings.
    """

    __slots__ = ("seen", "parent", "base")

    def __init__(self, parent: Memo | None = None):
        self.seen: dict[int, tuple[int, Any]] = {}
        self.parent = parent
        self.base = parent.count() if parent is not None else 0

    def count(self) -> int:
        return self.base + len(self.seen)

    def find(self, oid: int) -> int | None:
        memo: Memo | None = self
        while memo is not None:
            hit = memo.seen.get(oid)
            if hit is not None:
                return hit[0]
            memo = memo.parent
        return None


class Shared:
    """What every state of one digest shares."""

    __slots__ = (
        "main_ns",
        "modules",
        "meter",
        "callables",
        "visiting",
        "reach",
        "inline",
        "stand_ins",
        "plain",
        "code",
    )

    def __init__(self, main_ns: dict | None):
        self.main_ns = main_ns
        self.modules: set[str] = set()
        self.meter = Meter()
        # Digests of functions and classes, each computed once per digest (the object
        # is kept so that its id stays its own), and those being computed: recursion
        # (f calls g calls f) refers back by name instead of recursing forever.
        self.callables: dict[int, tuple[bytes, Any]] = {}
        self.visiting: dict[int, bytes] = {}
        self.reach: Any = None  # what reached functions read (`reach.Reached`), if asked
        self.inline: set[int] = set()  # objects compared by value being written out
        self.stand_ins: dict[int, Any] = {}  # id -> the object read in its place (`ReadAs`)
        # Classes whose instances are their class and their __dict__ (`objects.plain_class`)
        # -> the bytes every instance starts with, once the first one was written: a list
        # of 10,000 records pays the class's route to its encoding once, not each time.
        self.plain: dict[type, bytes] = {}
        # Whether it reached a function or a class (`callables` holds those digested
        # whole; a function whose state the digest walked is not there): a digest of
        # code is not one of data alone (`engine/keep/changes.py`).
        self.code = False
