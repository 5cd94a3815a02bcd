"""Widgets in a step's outputs: shown as the live run left them, where they cannot live.

A display of an ipywidgets widget (a tqdm progress bar in a notebook, `interact`'s
controls) names a model that lives in the kernel that made it, with its text form as it
was when displayed (`  0%|          | 0/5`). Replayed by a hit in a kernel where that
model does not live (after a restart), the frontend finds no model and shows an error
("model not found") where the live run showed the widget. So a live step's widget
displays record the widget's text form as the step left it (`100%|##########| 5/5 ...`),
and a hit shows a widget only where its model lives (the kernel that ran the step);
elsewhere, that text.

ipywidgets keeps its live widgets by model id: a module-level `_instances` since 8, the
`Widget.widgets` class attribute before; read without importing ipywidgets (a kernel
that never imported it holds no widget).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from typing import Any

log = logging.getLogger(__name__)

VIEW = "application/vnd.jupyter.widget-view+json"


def _live() -> Mapping[str, Any]:
    module = sys.modules.get("ipywidgets.widgets.widget")
    if module is None:
        return {}
    found = getattr(module, "_instances", None)  # ipywidgets 8
    if isinstance(found, Mapping):
        return found
    widget = getattr(module, "Widget", None)
    found = getattr(widget, "__dict__", {}).get("widgets")  # ipywidgets 7
    return found if isinstance(found, Mapping) else {}


def _model(data: Any) -> str | None:
    view = data.get(VIEW) if isinstance(data, dict) else None
    model = view.get("model_id") if isinstance(view, dict) else None
    return model if isinstance(model, str) and model else None


def settle(shell: Any, outputs: list[Any]) -> None:
    """After a live step: each widget display's text form, as the widget is now."""
    live = None
    for i, item in enumerate(outputs):
        if item[0] != "display" or (model := _model(item[1])) is None:
            continue
        live = _live() if live is None else live
        widget = live.get(model)
        if widget is None:
            continue
        try:
            text = shell.display_formatter.formatters["text/plain"](widget)
        except Exception:  # a widget whose text cannot be made keeps the one it had
            log.debug("the text of widget %s could not be made", model, exc_info=True)
            continue
        if isinstance(text, str):
            outputs[i] = (item[0], {**item[1], "text/plain": text}, *item[2:])


def shown(data: dict[str, Any], metadata: dict[str, Any]) -> tuple[dict, dict]:
    """A display to replay: without its widget view where the widget's model does not
    live in this kernel (its text form shows instead)."""
    model = _model(data)
    if model is None or model in _live():
        return data, metadata
    rest = {k: v for k, v in data.items() if k != VIEW}
    if not rest:
        rest = {"text/plain": "(a widget of the run that computed this step)"}
    return rest, {k: v for k, v in metadata.items() if k != VIEW}
