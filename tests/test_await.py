"""Top-level `await` in a step: IPython awaits the step in the kernel's event loop, as it
awaits a plain cell with `await`; served after a restart like any step; refused before
anything runs when IPython would not await the cell. Real kernels."""

from __future__ import annotations

from kernels import wait_until

HELPERS = """
import asyncio

async def triple(x):
    await asyncio.sleep(0.01)
    return x * 3

async def numbers(n):
    for i in range(n):
        await asyncio.sleep(0)
        yield i

v = 5
"""

STEP = "%%step aw\nr = await triple(v)\nprint('got', r)\nawait asyncio.sleep(0.01)\nr + 1"


def restart(kernel) -> None:
    kernel.restart()
    kernel.ok("%load_ext resumable_cells")
    kernel.ok(HELPERS)


def test_a_step_awaits_live_and_is_served_after_a_restart(kernel):
    kernel.ok(HELPERS)
    live = kernel.ok(STEP)
    assert "ran" in live.status_lines()[0]
    assert live.stdout == "got 15\n" and live.result() == "16"
    restart(kernel)
    hit = kernel.ok(STEP)
    assert "served" in hit.status_lines()[0]
    assert (hit.stdout, hit.result()) == (live.stdout, live.result())
    assert kernel.value("r") == 15
    kernel.ok("v = 6")
    r = kernel.ok(STEP)
    assert "input v changed" in r.status_lines()[0] and r.result() == "19"


def test_awaited_expressions_comprehensions_and_loops(kernel):
    kernel.ok(HELPERS)
    assert kernel.ok("%%step last\nawait triple(2)").result() == "6"
    assert kernel.ok("%%step comp\nvals = [i async for i in numbers(3)]\nvals").result() == (
        "[0, 1, 2]"
    )
    r = kernel.ok("%%step loop\ntotal = 0\nasync for i in numbers(4):\n    total += i\ntotal")
    assert r.result() == "6"
    assert kernel.ok("%%step quiet\nawait triple(2);").user_outputs() == []


def test_the_step_runs_in_the_kernels_event_loop(kernel):
    kernel.ok(HELPERS)
    kernel.ok("loop_id = id(asyncio.get_running_loop())")
    kernel.ok(
        "%%step loop --effect\nawait asyncio.sleep(0)\nsame = id(asyncio.get_running_loop()) == loop_id"
    )
    assert kernel.value("same") is True


def test_an_error_after_an_await_points_at_the_cells_line(kernel):
    kernel.ok(HELPERS)
    r = kernel.run("%%step bad\nawait asyncio.sleep(0)\nraise ValueError('no')")
    assert r.status == "error" and r.error["ename"] == "ValueError"
    assert any("line 3" in line for line in r.error["traceback"])
    statuses = kernel.value("[e['status'] for e in __import__('resumable_cells').record()]")
    assert statuses == ["error"]


def test_without_autoawait_the_step_is_refused_before_it_runs(kernel):
    kernel.ok(HELPERS)
    kernel.ok("%autoawait off")
    r = kernel.run("%%step aw\nprint('ran')\nr = await triple(v)")
    assert r.status == "error" and r.error["ename"] == "UsageError"
    assert "%autoawait on" in r.error["evalue"] and "async def" in r.error["evalue"]
    assert "ran" not in r.stdout
    assert kernel.value("__import__('resumable_cells').record()") == []


def test_ctrl_c_while_a_step_awaits_leaves_it_interrupted(kernel):
    # ipykernel turns Ctrl-C in an awaited cell into a cancel, seen when the event loop
    # next wakes up (a plain cell's `await asyncio.sleep(60)` ends only then, too).
    kernel.ok(HELPERS)
    marker = kernel.cwd / ".tmp" / "waiting"
    msg_id = kernel.submit(
        "%%step slow\nimport pathlib, tempfile\n"
        "pathlib.Path(tempfile.gettempdir(), 'waiting').touch()\n"
        "for _ in range(6000):\n    await asyncio.sleep(0.01)"
    )
    wait_until(marker.exists, timeout=60, what="the step to await")
    kernel.km.interrupt_kernel()
    r = kernel.collect(msg_id, timeout=30)
    assert r.status == "error"
    statuses = kernel.value("[e['status'] for e in __import__('resumable_cells').record()]")
    assert statuses == ["interrupted"]
    assert kernel.ok("%%step after\nx = await triple(1)").status_lines()
    assert kernel.value("x") == 3
