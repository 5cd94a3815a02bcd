"""Widgets a step displays: a hit shows the widget where its model lives (the kernel
that ran the step), and elsewhere the widget's text as the step left it, not a view of
a model the frontend cannot find."""

from __future__ import annotations

VIEW = "application/vnd.jupyter.widget-view+json"
BAR = "%%step bar\nfrom tqdm.notebook import tqdm\ntotal = 0\nfor i in tqdm(range(5)):\n    total += i"


def _displays(reply) -> list[dict]:
    return [o["data"] for o in reply.user_outputs() if o.get("output_type") == "display_data"]


def test_a_progress_bar_is_served_as_its_last_text_after_a_restart(kernel):
    live = _displays(kernel.ok(BAR))
    assert len(live) == 1 and VIEW in live[0]  # a widget, live
    kernel.restart()
    kernel.ok("%load_ext resumable_cells")
    served = kernel.ok(BAR)
    assert "served from cache" in served.status_lines()[0]
    [shown] = _displays(served)
    assert VIEW not in shown  # its model lived in the kernel that ran the step
    assert shown["text/plain"].startswith("100%") and "5/5" in shown["text/plain"]
    assert kernel.value("total") == 10


def test_a_widget_whose_model_lives_is_served_as_the_widget(kernel):
    live = _displays(kernel.ok(BAR))
    served = kernel.ok(BAR)
    assert "served from cache" in served.status_lines()[0]
    [shown] = _displays(served)
    assert shown[VIEW] == live[0][VIEW]
