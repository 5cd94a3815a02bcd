"""Ctrl-C at any moment of a step (its key, its body, hashing what it bound, storing its
entry, replaying a hit) leaves the execution `interrupted` in the record, the kernel
usable, and nothing half-written that a later run would serve. Real kernels, interrupted
with `interrupt_kernel()` while the step is stalled in the phase under test."""

from __future__ import annotations

import pytest
from kernels import wait_until

SETUP = """
import os, tempfile, time
import resumable_cells

MARK = os.path.join(tempfile.gettempdir(), "stalled")
STALL_RESTORE = os.path.join(tempfile.gettempdir(), "stall-restore")

def stall():
    open(MARK, "w").close()
    while True:
        time.sleep(0.01)

class Slow:  # hashing it never ends
    pass

class SlowToStore:  # hashed at once; pickling it never ends
    def __reduce__(self):
        stall()

def rebuild():
    if os.path.exists(STALL_RESTORE):
        stall()
    return SlowToRestore()

class SlowToRestore:  # restoring it never ends once STALL_RESTORE exists
    def __reduce__(self):
        return (rebuild, ())

resumable_cells.register_hasher(Slow, lambda obj: stall())
resumable_cells.register_hasher(SlowToStore, lambda obj: "one")
resumable_cells.register_hasher(SlowToRestore, lambda obj: "one")
"""

PHASES = {
    # phase: (cells run first, the cell interrupted)
    "key": (["slow = Slow()"], "%%step use\nn = 1 if slow else 0"),
    "body": ([], "%%step body\nstall()"),
    "hashing": ([], "%%step make\nslow = Slow()"),
    "store": ([], "%%step keep\nkept = SlowToStore()"),
    "replay": (
        ["%%step back\nback = SlowToRestore()", "open(STALL_RESTORE, 'w').close()"],
        "%%step back\nback = SlowToRestore()",
    ),
}


def statuses(kernel) -> list[tuple[str, str]]:
    return kernel.value(
        "[(r['step'], r['status']) for r in __import__('resumable_cells').record()]"
    )


def interrupt_when_stalled(kernel, cell: str):
    marker = kernel.cwd / ".tmp" / "stalled"
    msg_id = kernel.submit(cell)
    wait_until(marker.exists, timeout=60, what="the step to stall")
    kernel.km.interrupt_kernel()
    return kernel.collect(msg_id, timeout=60)


@pytest.mark.parametrize("phase", list(PHASES))
def test_ctrl_c_leaves_the_execution_interrupted_and_the_kernel_usable(kernel, phase):
    before, cell = PHASES[phase]
    kernel.ok(SETUP)
    for c in before:
        kernel.ok(c)
    r = interrupt_when_stalled(kernel, cell)
    assert r.status == "error" and r.error["ename"] == "KeyboardInterrupt"
    name = cell.splitlines()[0].split()[1]
    assert statuses(kernel)[-1] == (name, "interrupted")
    # The kernel runs cells and steps as before: nothing of the step is left in place.
    assert kernel.ok("print('plain')").stdout == "plain\n"
    r = kernel.ok("%%step after\ny = 2\nprint('after')")
    assert r.stdout == "after\n" and "ran" in r.status_lines()[0]


def test_a_step_interrupted_while_storing_is_not_served_later(kernel):
    kernel.ok(SETUP)
    interrupt_when_stalled(kernel, "%%step keep\nkept = SlowToStore()")
    # A value that stores at once, under the same key: the run is live, not served
    # from anything the interrupted store left behind.
    kernel.ok("SlowToStore.__reduce__ = lambda self: (SlowToStore, ())")
    r = kernel.ok("%%step keep\nkept = SlowToStore()")
    assert "ran" in r.status_lines()[0]
    r = kernel.ok("%%step keep\nkept = SlowToStore()")
    assert "served" in r.status_lines()[0]
