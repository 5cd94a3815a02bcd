"""Entries made by hand for the store's own tests (no kernel, no step)."""

from __future__ import annotations

import time

from resumable_cells.storage.entries import Binding, Entry, Value
from resumable_cells.storage.store import Store


def binding(name: str, value: Value) -> Binding:
    """A name bound to a value stored alone."""
    return Binding(name, value.blob, "object", None, value=value)


def entry(store: Store, step: str, bindings: list[Binding], duration_s: float = 0.0) -> Entry:
    """An entry of `step` binding `bindings`, with no outputs and no result."""
    outputs = store.put_value("00" * 16, [], "outputs")
    return Entry(
        step=step, created=time.time(), duration_s=duration_s, bindings=bindings, deleted=[],
        outputs=outputs, result=None, files=[], params={}, inline_backend=False, preimage={},
        source="",
    )  # fmt: skip
