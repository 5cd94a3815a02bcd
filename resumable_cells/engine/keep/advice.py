"""What to do about a value a step bound that cannot be stored, told by what it is.

The general advice (mark the step `--effect`) fits a connection or a file handle, which
must be made again by running the step. It misleads for values that are data in passing:
a generator is consumed as it is read, a regex match is stored only when searching its
string again finds it (not a later match of `re.finditer`), and a value later cells do
not need can simply be deleted.
"""

from __future__ import annotations

import re

_KINDS = [
    (
        re.compile(r"'(generator|coroutine|async_generator)' object"),
        "A {kind} runs as it is read and cannot be stored: bind `list(...)` of it, or read "
        "it in the step that makes it",
    ),
    (
        re.compile(r"'re\.Match' object"),
        "A regex match is stored only when a search of its string finds it again (not a "
        "later match of `re.finditer`): bind what the later cells use (`m.group(1)`, "
        "`m.span()`) instead, or `del` it at the end of the step",
    ),
    (
        re.compile(r"lock|socket|SSL|Connection|Cursor|TextIOWrapper|Buffered|Session|Client"),
        "A connection or handle is made again by running the step: mark it `--effect`, or "
        "make it in a step of its own marked `--effect`",
    ),
]
GENERAL = (
    "If later cells do not need it, `del {name}` at the end of the step; if it is a "
    "connection or handle, mark the step `--effect`"
)


def unstorable(name: str, why: str) -> str:
    """The sentence that tells the user what to do about `name`, which cannot be stored
    because `why` (the pickling error)."""
    for pattern, advice in _KINDS:
        m = pattern.search(why)
        if m:
            return advice.format(kind=m.group(1) if m.groups() else "")
    if not name.isidentifier():  # the values of a unit (engine/units/stream.py): no one name
        return "Mark the step `--effect` to run it each time"
    return GENERAL.format(name=name)
