"""A step's result as the frontend saw it: formatted when a plain cell would format it,
and on a hit shown as the MIME bundle the live run showed.

A plain cell's result is formatted by IPython's displayhook when the cell ends, before
the inline backend draws the cell's figures (which can change what a matplotlib
`Text` shows). A step draws its figures before it returns its result, so it formats
the result first (`bundle_of`) and has the displayhook show that bundle (`show_as`).
A hit shows the bundle its entry keeps, whatever the formatters of the serving kernel
would make of the value; `_` and `Out` get the value itself, as they would live.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)

Bundle = tuple[dict[str, Any], dict[str, Any]]  # (format data by MIME type, metadata by MIME type)


def bundle_of(shell: Any, value: Any) -> Bundle | None:
    """What the displayhook would show for `value` now (None: nothing)."""
    try:
        data, metadata = shell.displayhook.compute_format_data(value)
    except Exception:  # the displayhook says it itself when it shows the value
        log.debug("the result could not be formatted ahead", exc_info=True)
        return None
    return dict(data), dict(metadata)


def show_as(shell: Any, value: Any, bundle: Bundle) -> None:
    """The next time the displayhook shows `value` (this cell's result), it shows
    `bundle` instead of formatting the value again; after the cell, it formats as
    before in any case. The steps of one cell (a loop of them) share one wrapper, which
    finds each value by its identity: a wrapper a step, each over the one before, left
    all but the last in place after the cell (a later cell showing one of those objects,
    changed since, showed its old formatting) and had each step's formatting walk
    through all of them."""
    hook = shell.displayhook
    current = hook.__dict__.get("compute_format_data")
    if isinstance(current, _ShownAs):  # this cell's wrapper, set by a step before
        current.shown[id(value)] = (value, bundle)
        return
    wrapper = _ShownAs(shell, current, {id(value): (value, bundle)})
    hook.compute_format_data = wrapper
    shell.events.register("post_run_cell", wrapper.restore)


class _ShownAs:
    """The displayhook's `compute_format_data` for one cell: the bundles of the values
    the cell's steps showed, by identity (each value kept alive, so its id stays its
    own), and the formatting before. An object rather than two closures that refer to
    each other: such a pair is a cycle, and the values (a frame the step showed) would
    stay in memory after the cell until the garbage collector ran."""

    def __init__(self, shell: Any, own: Any, shown: dict[int, tuple[Any, Bundle]]) -> None:
        self.shell = shell
        self.own = own  # (set on the instance by someone else)
        self.original = shell.displayhook.compute_format_data
        self.shown = shown

    def __call__(self, result: Any) -> Any:
        found = self.shown.get(id(result))
        if found is None or found[0] is not result:
            return self.original(result)
        del self.shown[id(result)]
        if not self.shown:
            self.restore()
        return found[1]

    def restore(self, *_: Any) -> None:
        hook = self.shell.displayhook
        if hook.__dict__.get("compute_format_data") is self:
            if self.own is not None:
                hook.compute_format_data = self.own
            else:
                del hook.compute_format_data
        self.shown.clear()  # (values a cell's displayhook never showed: `;`, an error)
        try:
            self.shell.events.unregister("post_run_cell", self.restore)
        except ValueError:
            pass  # (already gone)
