"""SIGKILL at bad moments: mid-step, mid-store of a large value (20 random moments),
mid-append of the record. A new kernel opens the store, serves what completed, never
serves anything half-written, and the record shows the interrupted step."""

from __future__ import annotations

import random
import time

import pytest
from conftest import LOAD, flag_code, flag_path, fresh_kernel, wait_until

BIG_ROWS = 25_000_000  # 200 MB of float64
KILL_POINTS = 20


def statuses(k):
    return k.value("[(r['step'], r['status']) for r in __import__('resumable_cells').record()]")


SLOW = f"import time\n{flag_code('slow')}\ntime.sleep(60)\nother = 1"


@pytest.mark.parametrize(
    "cells",
    [
        # a step done in one cell, the kernel killed in the next cell's step
        ["%%step first\nvalue = 41", f"%%step slow\n{SLOW}"],
        # an agent's turns as steps in one cell, the kernel killed in the second: the
        # first one's entry is put at the latest as the next step starts
        [
            "get_ipython().run_cell_magic('step', 'first', 'value = 41')\n"
            f"get_ipython().run_cell_magic('step', 'slow', {SLOW!r})"
        ],
    ],
    ids=["cells", "steps-in-one-cell"],
)
def test_kill_mid_step_then_resume(tmp_path, cells):
    k = fresh_kernel(tmp_path)
    try:
        for cell in cells[:-1]:
            k.ok(cell)
        k.kc.execute(cells[-1])
        wait_until(flag_path(tmp_path, "slow").exists, what="the step to start")
        k.kill()
        k.ok(LOAD)
        assert statuses(k) == [("first", "live"), ("slow", "interrupted")]
        assert "served" in k.ok("%%step first\nvalue = 41").status_lines()[0]
    finally:
        k.shutdown()


def test_kill_while_a_large_value_is_stored_at_random_moments(tmp_path):
    rng = random.Random(20261129)
    blob_dir = tmp_path / ".resumable_cells" / "blobs"
    k = fresh_kernel(tmp_path)
    outcomes = {"entry written": 0, "killed before the entry": 0}
    try:
        k.ok("%%step anchor\nanchor = list(range(100))")
        k.ok("import numpy as np")
        for i in range(KILL_POINTS):
            cell = f"%%step big{i}\nbig = np.full({BIG_ROWS}, {i}.0)\n{flag_code(f'big{i}')}"
            k.kc.execute(cell)
            wait_until(flag_path(tmp_path, f"big{i}").exists, what="the value to be computed")
            # The body is done: from here the value is hashed and written. Kill at a
            # random moment inside that window (about 0.1-0.6 s here).
            time.sleep(rng.uniform(0.0, 0.6))
            k.kill()
            k.ok(LOAD + "\nimport numpy as np")
            assert not list(blob_dir.glob("*/.*.tmp")), "a partial write was left behind"
            last = [s for s in statuses(k) if s[0] == f"big{i}"][-1]
            assert last[1] in ("live", "interrupted")
            r = k.ok(cell)
            served = "served" in r.status_lines()[0]
            outcomes["entry written" if served else "killed before the entry"] += 1
            # A kill between the entry's commit and the record's end row leaves a complete
            # entry (served) under an `interrupted` execution: both are true.
            assert k.value(f"bool((big == {i}.0).all()) and big.shape == ({BIG_ROWS},)")
            k.ok("del big")
            assert "served" in k.ok("%%step anchor\nanchor = list(range(100))").status_lines()[0]
        assert sum(outcomes.values()) == KILL_POINTS
        print(outcomes)
    finally:
        k.shutdown()


def test_kill_while_the_record_is_appended(tmp_path):
    rng = random.Random(7)
    k = fresh_kernel(tmp_path)
    try:
        for attempt in range(5):
            # The flag goes up once the first step of the loop has ended (the engine
            # starts at a kernel's first step, not when the extension loads).
            loop = (
                f"for i in range(2000):\n"
                f"    get_ipython().run_cell(f'%%step s{attempt}_{{i}}\\nx = {{i}}')\n"
                f"    if i == 0:\n"
                f"        {flag_code(f'loop{attempt}')}"
            )
            k.kc.execute(loop)
            wait_until(flag_path(tmp_path, f"loop{attempt}").exists, what="the first step to end")
            time.sleep(rng.uniform(0.2, 1.0))
            k.kill()
            k.ok(LOAD)
            execs = k.value(
                "[(r['step'], r['status']) for r in __import__('resumable_cells').record()]"
            )
            done = [s for s, st in execs if st == "live" and s.startswith(f"s{attempt}_")]
            assert done, "nothing completed before the kill"
            assert all(st in ("live", "hit", "interrupted") for _, st in execs)
            assert sum(st == "interrupted" for _, st in execs) <= attempt + 1
            # Each entry is put once its step is done, before the next one starts: all
            # but the last completed are stored; the last one too, unless the kill came
            # between its end and its put (a miss then, run again with its value).
            for step in done[-3:]:
                i = step.split("_")[1]
                r = k.ok(f"%%step {step}\nx = {i}")
                assert "served" in r.status_lines()[0] or step == done[-1], r.status_lines()
                assert k.value("x") == int(i)
    finally:
        k.shutdown()
