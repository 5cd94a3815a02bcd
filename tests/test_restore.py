"""`%step restore` in real kernels: after a restart, the executions of the last kernel
session are served again in the order they ran (cells run out of order, in auto mode),
so a probe prints what it printed before the restart; the restore stops at a cell edited
since it ran, at an effect and at a cell that is gone, and says which and why; nothing
is run. The record says `served` for each restored cell, under its own cell id."""

from __future__ import annotations

import ast

import nbformat

CELLS = {
    "c1": "base = 10",
    "c2": "import time\ntime.sleep(0.3)\nvalues = [base * i for i in range(5)]",
    "c3": "total = sum(values)",
    "c4": "%%step report --effect\nprint('total is', total)",
}
PROBE = "print(repr((base, values, total)))"


def _probe(kernel, code: str = PROBE):
    """A silent execution: not a step in auto mode, not in the record."""
    msg_id = kernel.kc.execute(code, silent=True, store_history=False)
    return ast.literal_eval(kernel.collect(msg_id).stdout.strip())


def _notebook(tmp_path, cells: dict[str, str]) -> None:
    nb = nbformat.v4.new_notebook()
    for cid, source in cells.items():
        cell = nbformat.v4.new_code_cell(source)
        cell["id"] = cid
        nb.cells.append(cell)
    nbformat.write(nb, tmp_path / "test.ipynb")


def _run(kernel, *ids: str, cells: dict[str, str] = CELLS) -> None:
    for cid in ids:
        kernel.ok(cells[cid], cell_id=cid)


def _served(kernel) -> list[tuple[str, str]]:
    record = "__import__('resumable_cells').record()"
    return [
        tuple(r) for r in _probe(kernel, f"print([(e['cell_id'], e['status']) for e in {record}])")
    ]


def _restart(kernel) -> None:
    assert _probe(kernel, "print(__import__('resumable_cells').wait_for_writes(60))")
    kernel.restart()
    kernel.ok("%load_ext resumable_cells")


def test_restore_serves_the_session_again_in_the_order_it_ran(kernel, tmp_path):
    _notebook(tmp_path, CELLS)
    kernel.ok("%step auto on")
    _run(kernel, "c1", "c2", "c3")
    _run(kernel, "c1")  # again, out of notebook order: served
    before = _probe(kernel)
    _restart(kernel)
    dry = kernel.ok("%step restore --dry-run").stdout
    assert "3 cells" in dry and dry.count("\n  ") == 4, dry
    said = kernel.ok("%step restore").stdout
    assert "restored 4 of 4 executions" in said, said
    assert _probe(kernel) == before
    assert _served(kernel)[-4:] == [("c1", "hit"), ("c2", "hit"), ("c3", "hit"), ("c1", "hit")]


def test_restore_stops_at_a_cell_edited_since_it_ran(kernel, tmp_path):
    _notebook(tmp_path, CELLS)
    kernel.ok("%step auto on")
    _run(kernel, "c1", "c2", "c3")
    _restart(kernel)
    _notebook(tmp_path, {**CELLS, "c2": CELLS["c2"].replace("range(5)", "range(6)")})
    said = kernel.ok("%step restore").stdout
    assert "restored 1 of 3 executions" in said, said
    assert "stopped at time,values" in said and "edited since it ran" in said, said
    assert _probe(kernel, "print(repr(base))") == 10
    assert _probe(kernel, "print(repr('values' in globals()))") is False


def test_restore_stops_at_an_effect_and_at_a_cell_that_is_gone(kernel, tmp_path):
    _notebook(tmp_path, CELLS)
    kernel.ok("%step auto on")
    _run(kernel, "c1", "c2", "c3", "c4")
    _restart(kernel)
    said = kernel.ok("%step restore").stdout
    assert "restored 3 of 4" in said and "stopped at report" in said, said
    assert "an effect" in said, said
    _restart(kernel)
    _notebook(tmp_path, {k: v for k, v in CELLS.items() if k != "c3"})
    said = kernel.ok("%step restore").stdout
    # the session restored is now the one just ended: c1, c2, c3 served there
    assert "stopped at total" in said and "not in the notebook" in said, said


def test_nothing_to_restore_in_a_first_session(kernel, tmp_path):
    _notebook(tmp_path, CELLS)
    said = kernel.ok("%step restore").stdout
    assert said.startswith("nothing to restore"), said


def _with_cells(kernel, code: str, cells: dict[str, str]):
    """Run `code` as the sidebar sends `%step plan` / `%step restore`: the notebook's
    code cells, unsaved edits included, in the request's metadata."""
    kc = kernel.kc
    content = {"code": code, "silent": False, "store_history": True,
               "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}  # fmt: skip
    sent = [{"id": cid, "source": src} for cid, src in cells.items()]
    msg = kc.session.msg("execute_request", content, metadata={"resumable_cells": {"cells": sent}})
    kc.shell_channel.send(msg)
    return kernel.collect(msg["header"]["msg_id"])


def test_plan_and_restore_use_the_cells_sent_with_the_request(kernel, tmp_path):
    _notebook(tmp_path, CELLS)  # the file on disk: as run
    kernel.ok("%step auto on")
    _run(kernel, "c1", "c2", "c3")
    on_disk = kernel.ok("%step plan").result()
    assert "serve  time,values" in on_disk, on_disk
    edited = {**CELLS, "c1": "base = 11"}  # unsaved: only the frontend has it
    plan = _with_cells(kernel, "%step plan", edited).result()
    assert "run    base  (code changed)" in plan, plan  # (in auto mode it is a step too)
    assert "run    time,values  (input base comes from step base, which runs)" in plan, plan
    _restart(kernel)
    said = _with_cells(kernel, "%step restore", edited).stdout
    assert "restored 0 of 3" in said and "stopped at base" in said, said
    assert "edited since it ran" in said, said


def test_a_cell_edited_and_run_again_is_restored_as_it_last_ran(kernel, tmp_path):
    kernel.ok("%step auto on")
    _run(kernel, "c1", "c2", "c3")
    wider = {**CELLS, "c1": "base = 12"}  # edited, run again, and what reads it too
    _run(kernel, "c1", "c2", "c3", cells=wider)
    before = _probe(kernel)
    _notebook(tmp_path, wider)
    _restart(kernel)
    said = kernel.ok("%step restore").stdout
    assert "restored 3 of 6 executions" in said and "3 superseded" in said, said
    assert "stopped" not in said, said
    assert _probe(kernel) == before


def test_without_cell_ids_a_magic_named_cell_is_found_as_it_ran(kernel, tmp_path):
    # nbclient sends no cell ids: the restore finds each execution's cell by its step
    # name, from the cell transformed as it ran, after `from numpy import *` bound
    # `save` (in a new kernel IPython would take `save(...)` for the `%save` magic).
    cells = {
        "n1": "from numpy import *",
        "n2": "M = arange(4.0)",
        "n3": "save('m.npy', M)",
        "n4": "total = M.sum()",
    }
    _notebook(tmp_path, cells)
    kernel.ok("%step auto on")
    for cid in cells:
        kernel.ok(cells[cid])  # no cell id
    _restart(kernel)
    said = kernel.ok("%step restore").stdout
    assert "restored 2 of 4" in said and "it wrote m.npy" in said, said
    assert "not in the notebook" not in said, said
