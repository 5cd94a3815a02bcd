"""Which step bound each name the kernel holds, with which digest: the producer of an
input, recorded in the provenance of the entries of the steps that read it.

The engine tells it of every execution that ends with values (a hit, a live run, an
effect); a name is attributed to a step only while it holds the digest that step left,
so a name a plain cell rebinds to another value has no producer rather than a wrong one
(rebound to an equal value, it is still that step's value).
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..storage.entries import Producer


class _Bound(msgspec.Struct, frozen=True):
    digest: str
    producer: Producer


class Producers:
    """Name -> the step (and its entry's key) whose execution last bound it."""

    def __init__(self) -> None:
        self._bound: dict[str, _Bound] = {}

    def note(self, step: str, key: str | None, outputs: list[dict[str, Any]]) -> None:
        """`step`'s execution bound `outputs` (name, digest, ...); `key`, the entry it
        made or served, None when it left none."""
        for out in outputs:
            name, digest = out.get("name"), out.get("digest")
            if not isinstance(name, str):
                continue
            if isinstance(digest, str):
                self._bound[name] = _Bound(digest, Producer(step, key))
            else:  # a value that could not be digested: nothing can be matched to it
                self._bound.pop(name, None)

    def of(self, digests: dict[str, str]) -> dict[str, Producer]:
        """The producer of each input whose digest is the one its producer left."""
        found = {}
        for name, digest in digests.items():
            bound = self._bound.get(name)
            if bound is not None and bound.digest == digest:
                found[name] = bound.producer
        return found
