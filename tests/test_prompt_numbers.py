"""Every `In [n]` the extension shows is the prompt of the cell it means: the record,
the status table, a failing step's traceback, a clash of step names and the reason a
step is stale. (IPython 9 raises its counter before it runs a cell, so reading the
counter inside the cell gives one more than the prompt.)"""

from __future__ import annotations

import re

RECORD = "[(e['step'], e['execution_count']) for e in __import__('resumable_cells').record()]"


def _shown(reply) -> str:
    return reply.stdout + "".join(
        o.get("data", {}).get("text/plain", "") for o in reply.outputs if "data" in o
    )


def test_the_record_and_the_status_table_quote_the_cells_prompt(kernel):
    kernel.ok("x = 1")
    live = kernel.ok("%%step a\ny = x + 1")
    assert live.execution_count is not None
    assert kernel.value(RECORD)[-1] == ("a", live.execution_count)
    served = kernel.ok("%%step a\ny = x + 1")
    assert "served" in served.status_lines()[0], served.status_lines()
    assert kernel.value(RECORD)[-1] == ("a", served.execution_count)
    status = _shown(kernel.ok("%step status"))
    assert f"In [{served.execution_count}]" in status, status
    assert f"In [{served.execution_count + 1}]" not in status, status


def test_a_failing_step_and_a_name_clash_quote_the_cells_prompt(kernel):
    failed = kernel.run("%%step bad\n1/0")
    assert failed.status == "error"
    traceback = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(failed.error["traceback"]))
    assert f"Cell In[{failed.execution_count}], line 2" in traceback, traceback
    first = kernel.ok("%%step twice\nu = 1", cell_id="one")  # ids: as JupyterLab sends them
    clash = kernel.ok("%%step twice\nu = 2", cell_id="two")
    assert f"In [{first.execution_count}]" in clash.stderr, clash.stderr
    assert f"this cell (In [{clash.execution_count}])" in clash.stderr, clash.stderr


def test_a_stale_reason_quotes_the_prompt_of_the_cell_that_rebound_the_input(kernel):
    kernel.ok("ridge = 1.0")
    kernel.ok("%%step fit\nw = ridge * 2")
    again = kernel.ok("ridge = 2.0")
    status = _shown(kernel.ok("%step status"))
    assert f"ridge changed (In [{again.execution_count}])" in status, status
