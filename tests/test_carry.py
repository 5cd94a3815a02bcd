"""The digest a live step took of a value at its end is the next step's digest of it
only when nothing ran in between (engine/code/carry.py, docs/guarantees.md), through
real kernels: a value changed between two steps, by a plain cell, a silent execution, a
widget's comm callback or the opening of a comm, a callback of IPython's cell events or
code after a step in the same cell, is digested afresh (the next step keys on its new
value); with nothing in between the digest is taken, and the key is the one a new kernel
computes. A hit hands on the stored digests of what it bound or read and what was
handed to it, unless it gave an object a state in place.
"""

from __future__ import annotations

import pytest
from steps import restart, served

ENGINE = "__import__('resumable_cells').ipython.magics.current_engine()"
S1 = "%%step s1\nimport numpy as np\na = np.zeros(100_000)"
S2 = "%%step s2\nb = a * 2"


def _taken(kernel) -> int:
    return kernel.value(f"{ENGINE}.carry.taken")


def _comm_target(kernel, body: str) -> None:
    """A comm target whose messages run `body` (as a widget's callback would), and a
    comm open on it (opened before the steps: its messages are what is tested)."""
    kernel.ok(
        "def _on_msg(m):\n"
        f"    {body}\n"
        "    print('callback ran')\n"
        "def _target(comm, msg):\n    comm.on_msg(_on_msg)\n"
        "get_ipython().kernel.comm_manager.register_target('carry-test', _target)"
    )
    kc = kernel.kc
    kc.shell_channel.send(kc.session.msg("comm_open", {"comm_id": "w1", "target_name": "carry-test", "data": {}}))  # fmt: skip
    kernel.ok("pass")  # (the open is handled before this cell)


def _send_comm_message(kernel) -> None:
    kc = kernel.kc
    kc.shell_channel.send(kc.session.msg("comm_msg", {"comm_id": "w1", "data": {}}))
    kernel.printed_until("callback ran")


def _silent(kernel, code: str) -> None:
    kc = kernel.kc
    msg_id = kc.execute(code, silent=True, store_history=False)
    reply = kc.get_shell_msg(timeout=60)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = kc.get_shell_msg(timeout=60)
    assert reply["content"]["status"] == "ok", reply["content"]


def _by_plain_cell(kernel) -> None:
    kernel.ok(S1)
    kernel.ok("a[0] = 1.0")


def _by_silent_execution(kernel) -> None:
    kernel.ok(S1)
    _silent(kernel, "a[0] = 1.0")


def _by_widget_callback(kernel) -> None:
    kernel.ok(S1)
    _send_comm_message(kernel)


def _opener_target(kernel) -> None:
    """A comm target whose opening runs code (as a widget library's target does)."""
    kernel.ok(
        "def _opened(comm, msg):\n    a[0] = 1.0\n    print('callback ran')\n"
        "get_ipython().kernel.comm_manager.register_target('carry-open', _opened)"
    )


def _by_comm_opened(kernel) -> None:
    kernel.ok(S1)
    kc = kernel.kc
    opened = {"comm_id": "w2", "target_name": "carry-open", "data": {}}
    kc.shell_channel.send(kc.session.msg("comm_open", opened))
    kernel.printed_until("callback ran")


def _by_code_after_the_step_in_its_cell(kernel) -> None:
    kernel.ok("get_ipython().run_cell_magic('step', 's1', " + repr(S1.split("\n", 1)[1]) + ")\na[0] = 1.0")  # fmt: skip


def _by_a_cell_event_callback(kernel) -> None:
    kernel.ok(S1)  # its own post_run_cell changes `a` once the step has digested it


def _bump_after_cells(kernel) -> None:
    kernel.ok(
        "def _bump(*_):\n    if 'a' in globals(): a[0] = 1.0\n"
        "get_ipython().events.register('post_run_cell', _bump)"
    )


# each: (what it sets up first, the first step and the change after it)
CHANGED_BETWEEN = {
    "plain cell": (None, _by_plain_cell),
    "silent execution": (None, _by_silent_execution),
    "widget comm callback": (lambda k: _comm_target(k, "a[0] = 1.0"), _by_widget_callback),
    "comm opened": (_opener_target, _by_comm_opened),
    "code after the step in its cell": (None, _by_code_after_the_step_in_its_cell),
    "cell event callback": (_bump_after_cells, _by_a_cell_event_callback),
}


@pytest.mark.parametrize("change", list(CHANGED_BETWEEN), ids=list(CHANGED_BETWEEN))
def test_a_value_changed_between_two_steps_is_digested_afresh(kernel, change):
    setup, step_and_change = CHANGED_BETWEEN[change]
    if setup is not None:
        setup(kernel)
    taken = _taken(kernel)
    step_and_change(kernel)
    kernel.ok(S2)  # right after the change: nothing else between
    assert kernel.value("float(b[0])") == 2.0  # (live, whatever its key)
    assert _taken(kernel) == taken  # nothing was carried past what ran in between
    kernel.ok("get_ipython().events.callbacks['post_run_cell'][:] = [c for c in get_ipython().events.callbacks['post_run_cell'] if getattr(c, '__name__', '') != '_bump']")  # fmt: skip
    # Keyed on `a` as the change left it: with `a` as the step before left it, s2 has
    # no entry, so it runs and computes from that value.
    kernel.ok("a[0] = 0.0")
    reply = kernel.ok(S2)
    assert not served(reply), reply.status_lines()
    assert kernel.value("float(b[0])") == 0.0


def test_with_nothing_in_between_the_digest_is_taken_and_the_key_is_a_new_kernels(kernel):
    chain = [S1, S2, "%%step s3\nc = b + a"]
    taken = _taken(kernel)
    for cell in chain:
        kernel.ok(cell)
    assert _taken(kernel) == taken + 3  # s2 took `a` from s1; s3 took `a` and `b` from s2
    restart(kernel)
    for cell in chain:
        reply = kernel.ok(cell)
        assert served(reply), reply.status_lines()  # the same keys as digested afresh


def test_a_step_that_changes_its_input_in_place_is_seen_to(kernel):
    # s2 keys on the digest s1 took of `a`; that it changes `a` is still found, since
    # `a` is digested again after it ran.
    cells = [S1, "%%step s2\na[0] = 5.0\nb = a + 1", "%%step s3\nc = a * 3"]
    taken = _taken(kernel)
    for cell in cells:
        kernel.ok(cell)
    assert _taken(kernel) == taken + 2  # s2 took `a` from s1, s3 took it from s2
    live = kernel.value("(float(a[0]), float(b[0]), float(c[0]))")
    assert live == (5.0, 6.0, 15.0)
    restart(kernel)
    for cell in cells:
        reply = kernel.ok(cell)
        assert served(reply), reply.status_lines()
    assert kernel.value("(float(a[0]), float(b[0]), float(c[0]))") == live


# A hit keeps digests too: the stored digests of the values it bound and of a value it
# read (`a`, 2.4 MB: restored lazily, read to show it), and those the step before kept,
# unless it gave an object a state in place.
SHOWN = "%%step s1\nimport numpy as np\na = np.zeros(300_000)\na"


def _taken_resuming(kernel, cells: list[str]) -> int:
    """Run `cells`, restart, run them again (each must be served): the digests the
    keys of the second run took from the step before."""
    for cell in cells:
        kernel.ok(cell)
    restart(kernel)
    taken = _taken(kernel)
    for cell in cells:
        reply = kernel.ok(cell)
        assert served(reply), reply.status_lines()
    return _taken(kernel) - taken


def test_a_hit_keeps_the_stored_digest_of_what_it_read_for_the_next_step(kernel):
    # s2 took `a` (read by s1's hit to show it) from s1's hit; s3 took `a` from s2's
    # hit, which kept what it took (`b`, unread, is keyed by its stored digest)
    assert _taken_resuming(kernel, [SHOWN, S2, "%%step s3\nc = b + a"]) == 2
    assert kernel.value("float(c[0])") == 0.0
    # a plain cell between a hit and the next step: digested afresh, keyed on its value
    kernel.ok(SHOWN)
    kernel.ok("a[0] = 1.0")
    reply = kernel.ok(S2)
    assert not served(reply), reply.status_lines()
    assert kernel.value("float(b[0])") == 2.0


def test_a_hit_keeps_the_stored_digests_of_the_values_it_bound(kernel):
    cells = ["%%step e1\nsmall = [1, 2, 3]\nlabel = 'x'", "%%step e2\ntotal = sum(small)"]
    assert _taken_resuming(kernel, cells) == 1  # e2 took `small` as e1's hit bound it
    assert kernel.value("total") == 6


def test_a_hit_that_changes_a_value_in_place_keeps_nothing(kernel):
    # m's hit gives `a` its state in place: the digest s1's hit kept of `a` is the one
    # before the change, and must not reach r's key (r would miss, or find another
    # value's entry). r digests `a` afresh, and its hit hands that digest to k.
    cells = [
        "%%step s1\na = [1, 2]\na",
        "%%step m\na.append(3)",
        "%%step r\nn = len(a)",
        "%%step k\nfirst = a[0]",
    ]
    assert _taken_resuming(kernel, cells) == 2  # m took `a` from s1's hit, k from r's
    assert kernel.value("(a, n, first)") == ([1, 2, 3], 3, 1)
