"""What a running step reads of the namespace through code made from strings: the
trace its entry keeps and a lookup verifies.

A step whose code (or a notebook function it reaches) calls `eval` or `exec` on a
string it builds at run time has inputs the static analysis cannot name: a helper
class that shows frames side by side evaluates `eval('df1')` in its `_repr_html_`.
While such a step runs, every string compiled as code (by the builtins `eval`, `exec`
and `compile`, which the tripwire wraps meanwhile: `watchpoints.py`) is analysed, and
each name it reads that the namespace holds is recorded with the digest its value has
at that moment. A name the step bound before the read is its own output, not an input.
The entry keeps the trace; a later lookup serves the entry only while every traced name
still has its digest (verifying traces, as build systems with dynamic dependencies do).
A traced value that cannot be digested leaves the trace incomplete: the step is not
cached, and says so.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Callable
from typing import Any

from ...errors import Unhashable
from ...hashing.values import Hasher
from ..code import analysis
from ..objects.identities import Identities

log = logging.getLogger(__name__)
_MISSING = object()
_WORD = re.compile(r"\w+")


class Trace:
    """The namespace's names read through compiled strings, while one step runs."""

    def __init__(self, ns: dict[str, Any], before: Identities):
        self.ns = ns
        self.before = before
        self.reads: dict[str, str] = {}  # name -> digest of its value when first read
        self.objects: dict[str, Any] = {}  # name -> the object it held then
        self.incomplete: str | None = None  # why the trace cannot be trusted
        self._busy = False  # (digesting may compile strings too)

    def compiled(self, source: Any) -> None:
        """A string was compiled as code while the step ran: note what it reads."""
        if self._busy or self.incomplete is not None:
            return
        if isinstance(source, bytes):
            source = source.decode("utf-8", "replace")
        if not isinstance(source, str):
            return  # an AST or a code object: compiled from code the analysis saw
        self._busy = True
        try:
            self._note(source)
        finally:
            self._busy = False

    def _note(self, source: str) -> None:
        if not _mentions(source, self.ns):
            return
        try:
            reads = analysis.analyse(source).reads
        except (SyntaxError, ValueError):
            return  # it fails where it is evaluated, in the step
        for name in reads:
            value = self.ns.get(name, _MISSING)
            if name in self.reads or value is _MISSING:
                continue
            if self.before.get(name) != id(value):
                continue  # bound by the step before this read: its own, not an input
            try:
                self.reads[name] = Hasher(self.ns).value_digest(value, name)
                self.objects[name] = value
            except Unhashable as err:
                self.incomplete = f"{name}, read through eval or exec, cannot be hashed ({err})"
                return

    def finish(self, digest_of: Callable[[str], str]) -> None:
        """After the step: a traced name it rebound or changed after reading it leaves
        the trace incomplete (what it read is no longer anywhere to compare with)."""
        for name, digest in self.reads.items():
            if self.incomplete is not None:
                return
            try:
                same = self.ns.get(name, _MISSING) is self.objects[name]
                same = same and digest_of(name) == digest
            except Unhashable:
                same = False
            if not same:
                self.incomplete = f"{name} was read through eval or exec, then changed by it"
        self.objects.clear()  # (the objects stay alive no longer than the step)


def _mentions(source: str, ns: dict[str, Any]) -> bool:
    """Whether a word of `source` is a name `ns` holds: a name the code reads is one of
    its words (as Python reads identifiers: NFKC-normalised). Libraries compile code
    from strings by the hundred when they are imported inside a step (namedtuples,
    dataclasses: 131 strings for pandas), each about 0.3 ms to parse, nearly all
    mentioning no name of the notebook's."""
    words = set(_WORD.findall(source))
    if not source.isascii():
        words |= {unicodedata.normalize("NFKC", w) for w in words if not w.isascii()}
    return any(w in ns for w in words)
