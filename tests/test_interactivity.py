"""`InteractiveShell.ast_node_interactivity`: a step shows the values a plain cell shows
under each setting, live and on a hit, and a hit made under another setting runs again
(`engine/live/body.py`, `state/shown.py`)."""

from __future__ import annotations

import pytest

BODY = "q = 5\nprint('p')\nq + 1\nfor i in range(2):\n    i * 10\nq + 2"
ENDS_ASSIGNING = "w = 3\nw += 4"
SET = "get_ipython().ast_node_interactivity = {!r}"


def _shown(reply) -> list[tuple[str, str]]:
    """(output type, its text) of each output, without status lines and prompts."""
    out = []
    for o in reply.user_outputs():
        text = o.get("text") or o.get("data", {}).get("text/plain", "")
        out.append((o["output_type"], text.strip()))
    return out


@pytest.mark.parametrize("how", ["all", "last", "last_expr", "last_expr_or_assign", "none"])
@pytest.mark.parametrize("body", [BODY, ENDS_ASSIGNING], ids=["expressions", "assignment"])
def test_a_step_shows_what_a_plain_cell_shows_live_and_served(kernel, how, body):
    kernel.ok(SET.format(how))
    plain = _shown(kernel.ok(body))
    live = kernel.ok("%%step shown\n" + body)
    assert _shown(live) == plain, live.outputs
    kernel.restart()
    kernel.ok("%load_ext resumable_cells")
    kernel.ok(SET.format(how))
    served = kernel.ok("%%step shown\n" + body)
    assert "served" in served.status_lines()[-1]
    assert _shown(served) == plain, served.outputs


def test_all_shows_each_value_as_an_out_prompt_of_the_cell(kernel):
    kernel.ok(SET.format("all"))
    r = kernel.ok("%%step each\n" + BODY)
    results = [o for o in r.user_outputs() if o["output_type"] == "execute_result"]
    assert [o["data"]["text/plain"] for o in results] == ["6", "0", "10", "7"]
    assert {o["execution_count"] for o in results} == {r.execution_count}


@pytest.mark.parametrize(("first", "then"), [("last_expr", "all"), ("all", "last_expr_or_assign")])
def test_a_step_served_under_another_setting_runs_again(kernel, first, then):
    kernel.ok(SET.format(first))
    kernel.ok("%%step shown\n" + BODY)
    kernel.ok(SET.format(then))
    plain = _shown(kernel.ok(BODY))
    again = kernel.ok("%%step shown\n" + BODY)
    assert "ast_node_interactivity changed since it ran" in again.status_lines()[-1]
    assert _shown(again) == plain
