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
    before in any case."""
    hook = shell.displayhook
    own = hook.__dict__.get("compute_format_data")  # (set on the instance by someone else)
    original = hook.compute_format_data

    def compute(result: Any) -> Any:
        if result is value:
            restore()
            return bundle
        return original(result)

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

    hook.compute_format_data = compute
    shell.events.register("post_run_cell", restore)
