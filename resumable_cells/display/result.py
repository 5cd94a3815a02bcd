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
    shown = getattr(current, "_rc_shown", None)  # this cell's wrapper, when a step set it
    if shown is not None:
        shown[id(value)] = (value, bundle)
        return
    own = current  # (set on the instance by someone else)
    original = hook.compute_format_data
    shown = {id(value): (value, bundle)}  # (the value kept alive: its id stays its own)

    def compute(result: Any) -> Any:
        found = shown.get(id(result))
        if found is None or found[0] is not result:
            return original(result)
        del shown[id(result)]
        if not shown:
            restore()
        return found[1]

    def restore(*_: Any) -> None:
        if hook.__dict__.get("compute_format_data") is compute:
            if own is not None:
                hook.compute_format_data = own
            else:
                del hook.compute_format_data
        try:
            shell.events.unregister("post_run_cell", restore)
        except ValueError:
            pass  # (already gone)

    compute._rc_shown = shown  # type: ignore[attr-defined]
    hook.compute_format_data = compute
    shell.events.register("post_run_cell", restore)
