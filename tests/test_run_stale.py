"""The panel's "Run stale" in a real kernel, over the sidebar's comm: the kernel answers
with the cells the plan says are out of date, from the cells the panel sends (unsaved
edits included), and running those cells leaves nothing out of date."""

from __future__ import annotations

CELLS = {
    "c1": "ridge = 1.0",
    "c2": "%%step fit\ncoef = ridge * 2",
    "c3": "%%step report\nr = coef + 1",
}


def _open(kernel) -> None:
    kc = kernel.kc
    opened = {"comm_id": "sidebar", "target_name": "resumable_cells", "data": {}}
    kc.shell_channel.send(kc.session.msg("comm_open", opened))


def _stale(kernel, cells: dict[str, str], request: int) -> dict:
    """The kernel's answer to the panel's plan request `request`."""
    kc = kernel.kc
    sent = [{"id": cid, "source": src} for cid, src in cells.items()]
    data = {"action": "plan", "cells": sent, "request": request}
    kc.shell_channel.send(kc.session.msg("comm_msg", {"comm_id": "sidebar", "data": data}))
    while True:  # (raises Empty after its timeout)
        msg = kc.get_iopub_msg(timeout=60)
        got = msg["content"].get("data", {}) if msg["msg_type"] == "comm_msg" else {}
        if got.get("type") == "plan" and got.get("request") == request:
            return got


def _run(kernel, cells: dict[str, str], *ids: str) -> None:
    for cid in ids:
        kernel.ok(cells[cid], cell_id=cid)


def test_run_stale_names_what_the_plan_would_run_and_what_is_out_of_date(kernel):
    kernel.ok("%load_ext resumable_cells")
    _open(kernel)
    _run(kernel, CELLS, "c1", "c2", "c3")
    assert _stale(kernel, CELLS, 1) == {"type": "plan", "request": 1, "run": [], "error": None}
    # edited in the notebook, not run: the parameter cell and what reads it
    edited = {**CELLS, "c1": "ridge = 20.0"}
    assert _stale(kernel, edited, 2)["run"] == ["c1", "c2", "c3"]
    _run(kernel, edited, "c1")
    assert _stale(kernel, edited, 3)["run"] == ["c2", "c3"]
    _run(kernel, edited, "c2", "c3")
    assert _stale(kernel, edited, 4)["run"] == []
    # back to the first value, run: the steps have entries for it but are out of date
    _run(kernel, CELLS, "c1")
    assert _stale(kernel, CELLS, 5)["run"] == ["c2", "c3"]
    lines = [kernel.ok(CELLS[c], cell_id=c).status_lines() for c in ("c2", "c3")]
    assert all(any("served" in x for x in ls) for ls in lines), lines  # as Run All would
    assert _stale(kernel, CELLS, 6)["run"] == []


def test_a_plan_that_fails_answers_with_its_reason(kernel):
    kernel.ok("%load_ext resumable_cells")
    _open(kernel)
    got = _stale(kernel, {"c1": "%%step --no-such-flag\nx = 1"}, 1)
    assert got["run"] == [] and "bad %%step line" in got["error"], got
    got = _stale(kernel, {"c1": "x = 1"} | {"c2": 5}, 2)  # type: ignore[dict-item]
    assert got["error"] == "the panel sent no cells", got
