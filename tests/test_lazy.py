"""Lazy restore, through real kernels: after a restart, a hit binds big values without
reading them, and whatever reads them later (a plain cell, a live step, a hit that
refers to them, `globals()`) gets the value itself, as an eager hit would have given it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from steps import restart, served

CHAIN = [
    "%%step s1\nimport numpy as np\na = np.arange(300_000, dtype=float)",
    "%%step s2\nb = a * 2",
    "%%step s3\nd = {'x': b + 1, 'n': 3}",
]


def _unread(kernel) -> str:
    """The `%step status` line that names the values not read yet ('' when none)."""
    reply = kernel.ok("%step status")
    out = reply.stdout + (reply.result() or "")
    return next((line for line in out.splitlines() if line.startswith("not read yet")), "")


def _resume(kernel, cells: list[str]) -> None:
    restart(kernel)
    for cell in cells:
        reply = kernel.ok(cell)
        assert served(reply), reply.status_lines()


def test_a_chain_of_hits_reads_no_value_until_one_is_read(kernel):
    for cell in CHAIN:
        kernel.ok(cell)
    live = kernel.value("(float(b.sum()), d['n'], float(d['x'][7]))")
    _resume(kernel, CHAIN)
    unread = _unread(kernel)
    assert "a" in unread and "b" in unread and "d" in unread, unread
    assert kernel.value("(float(b.sum()), d['n'], float(d['x'][7]))") == live
    assert kernel.value("(type(b).__name__, type(d).__name__, id(b) == id(b))") == (
        "ndarray",
        "dict",
        True,
    )
    first = kernel.value("id(b)")
    assert kernel.value("id(b)") == first  # the same object on every read
    unread = _unread(kernel)
    assert "b" not in unread.split("(")[-1] and "a" in unread, unread


def test_a_plain_cell_calling_a_function_reads_what_the_function_reads(kernel):
    kernel.ok(CHAIN[0])
    kernel.ok("def total():\n    return float(a.sum())")
    expected = kernel.value("total()")
    restart(kernel, "def total():\n    return float(a.sum())")
    assert served(kernel.ok(CHAIN[0]))
    assert kernel.value("total()") == expected


def test_globals_and_eval_read_every_pending_value(kernel):
    for cell in CHAIN[:2]:
        kernel.ok(cell)
    _resume(kernel, CHAIN[:2])
    assert kernel.value("float(globals()['b'][3])") == 6.0
    assert kernel.value("float(eval('a')[3])") == 3.0
    assert _unread(kernel) == ""


def test_a_view_onto_a_lazily_restored_base_is_a_view_of_it(kernel):
    cells = [CHAIN[0], "%%step v\nv = a[::2]"]
    for cell in cells:
        kernel.ok(cell)
    _resume(kernel, cells)
    assert kernel.value("bool(np.shares_memory(v, a))")  # as an eager hit restores it
    kernel.ok("a[0] = -1.0")
    assert kernel.value("float(v[0])") == -1.0


def test_a_later_step_mutating_a_lazily_restored_value_in_place(kernel):
    cells = [CHAIN[0], "%%step grow\na *= 3", "%%step tail\nt = float(a[-1])"]
    for cell in cells:
        kernel.ok(cell)
    live = kernel.value("(t, float(a.sum()))")
    _resume(kernel, cells)
    assert kernel.value("(t, float(a.sum()))") == live
    # and live, in a kernel where `a` is still unread when the step runs
    restart(kernel)
    assert served(kernel.ok(cells[0]))
    reply = kernel.ok("%%step grow --force\na *= 3")
    assert "ran" in reply.status_lines()[0], reply.status_lines()
    assert kernel.value("float(a.sum())") == live[1]


def test_a_frame_and_an_object_restored_lazily_behave_as_eager_ones(kernel):
    cells = [
        "%%step f\nimport pandas as pd, numpy as np, types\n"
        "df = pd.DataFrame({'x': np.arange(200_000.0), 'y': np.arange(200_000) % 7})\n"
        "box = types.SimpleNamespace(arr=np.ones(200_000), label='ones')",
    ]
    kernel.ok(cells[0])
    live = kernel.value("(float(df.x.sum()), int(df.y.max()), box.label, float(box.arr.sum()))")
    _resume(kernel, cells)
    assert "df" in _unread(kernel)
    assert (
        kernel.value("(float(df.x.sum()), int(df.y.max()), box.label, float(box.arr.sum()))")
        == live
    )
    assert kernel.value("(type(df).__name__, type(box).__name__)") == (
        "DataFrame",
        "SimpleNamespace",
    )
    kernel.ok("import pickle\nagain = pickle.loads(pickle.dumps(df))")
    assert kernel.value("bool(again.equals(df))")


@pytest.mark.parametrize(
    "reader",
    [
        "ops['total']()",  # a lambda a dict holds
        "box.callback()",  # a function an object holds as an attribute
        "Table.rules['total']()",  # a notebook class's attribute holding a lambda
        "outer()()",  # a closure that calls another
        "float(len(frame.query('n in @a')))",  # a pandas expression naming it
        "float(len(frame.query(expr)))",  # ... held by a variable
    ],
)
def test_a_plain_cell_reaching_a_pending_value_through_held_code_reads_it(kernel, reader):
    # The cell names `ops`, `box`, `Table`, `outer` or a string, never `a`: what the
    # code they hold reads, and the names a pandas expression spells, are read first
    # (a NameError in the plain cell otherwise, where the live run worked).
    cells = [
        CHAIN[0],
        "%%step held\nimport types, pandas as pd\n"
        "ops = {'total': lambda: float(a.sum())}\n"
        "box = types.SimpleNamespace(callback=lambda: float(a.sum()))\n"
        "class Table:\n    rules = {'total': lambda: float(a.sum())}\n"
        "def outer():\n    inner = lambda: float(a.sum())\n    return lambda: inner()\n"
        "frame = pd.DataFrame({'n': [1.0, 2.0, -1.0]})\n"
        "expr = 'n in @a'",
    ]
    for cell in cells:
        kernel.ok(cell)
    expected = kernel.value(reader)
    _resume(kernel, cells)
    assert "a" in _unread(kernel)
    assert kernel.value(reader) == expected


def test_a_value_holding_a_function_with_state_is_read_with_the_hit(kernel):
    # What a function reads is an input only where the key sees the function: a value
    # that holds one (a closure a notebook function made, or one a library made) is
    # never left unread for later, as a value of data alone is.
    cells = [
        "%%step hold\nimport numpy as np, json.scanner\n"
        "def scale(k):\n    def by(x):\n        return x * k\n    return by\n"
        "mine = {'arr': np.ones(300_000), 'f': scale(2)}\n"
        "theirs = {'arr': np.ones(300_000), "
        "'f': json.scanner.py_make_scanner(json.JSONDecoder())}\n"
        "plain_box = {'arr': np.ones(300_000)}"
    ]
    kernel.ok(cells[0])
    _resume(kernel, cells)
    unread = _unread(kernel)
    assert "plain_box" in unread, unread
    assert "mine" not in unread and "theirs" not in unread, unread
    assert kernel.value("(float(mine['f'](mine['arr']).sum()), theirs['f']('[1]', 0)[0])") == (
        600_000.0,
        [1],
    )


def test_a_name_rebound_before_it_is_read_is_the_new_value(kernel):
    for cell in CHAIN[:2]:
        kernel.ok(cell)
    _resume(kernel, CHAIN[:2])
    kernel.ok("b = 'new'")
    assert kernel.value("b") == "new"
    assert "b" not in _unread(kernel).split("(")[-1]
    # a step that reads it now sees the new value: a miss, not the stored one
    reply = kernel.ok("%%step s3\nd = {'x': b, 'n': 3}")
    assert not served(reply)
    assert kernel.value("d['x']") == "new"


def test_a_blob_altered_before_the_first_read_is_never_used(kernel, tmp_path: Path):
    for cell in CHAIN[:2]:
        kernel.ok(cell)
    expected = kernel.value("float(b.sum())")
    _resume(kernel, CHAIN[:2])
    store = Path(
        kernel.value("str(__import__('resumable_cells').ipython.magics.current_engine().store.dir)")
    )
    # (that cell read every pending value: serve them lazily again)
    _resume(kernel, CHAIN[:2])
    big = max((p for p in (store / "blobs").glob("*/*")), key=lambda p: p.stat().st_size)
    data = bytearray(big.read_bytes())
    data[-100] ^= 0xFF
    big.write_bytes(bytes(data))
    reply = kernel.run("print(float(b.sum()) + float(a.sum()))")
    assert reply.status == "error"
    text = reply.error["evalue"] if reply.error else ""
    assert "could not be read" in text and "run step" in text, text
    assert reply.stdout == ""  # the cell did not run
    # the step named runs live again (its entry was dropped) and gives the right value
    which = "s2" if "step s2" in text else "s1"
    cell = CHAIN[1] if which == "s2" else CHAIN[0]
    again = kernel.ok(cell)
    assert not served(again), again.status_lines()
    if which == "s1":
        kernel.ok(CHAIN[1])
    assert kernel.value("float(b.sum())") == expected


@pytest.mark.parametrize("reader", ["%%step s3\nd = {'x': b + 1, 'n': 3}", "x = b[:2].tolist()"])
def test_an_unreadable_value_refuses_the_cell_that_reads_it(kernel, reader):
    for cell in CHAIN[:2]:
        kernel.ok(cell)
    _resume(kernel, CHAIN[:2])
    for blob in (kernel.cwd / ".resumable_cells" / "blobs").glob("*/*"):
        blob.unlink()
    reply = kernel.run(reader)
    assert reply.status == "error"
    text = reply.error["evalue"] if reply.error else ""
    assert "could not be read" in text and "run step" in text, text


def test_a_widget_callback_reads_a_pending_value_it_names(kernel):
    # ipywidgets' interact runs notebook code from a comm message, outside any cell
    kernel.ok(CHAIN[0])
    register = (
        "def total():\n    return float(a.sum())\n"
        "def _target(comm, msg):\n    comm.on_msg(lambda m: print('total', total()))\n"
        "get_ipython().kernel.comm_manager.register_target('lazy-test', _target)"
    )
    expected = kernel.value("float(a.sum())")
    restart(kernel, register)
    assert served(kernel.ok(CHAIN[0]))
    assert "a" in _unread(kernel)
    kc = kernel.kc
    opened = {"comm_id": "c1", "target_name": "lazy-test", "data": {}}
    kc.shell_channel.send(kc.session.msg("comm_open", opened))
    kc.shell_channel.send(kc.session.msg("comm_msg", {"comm_id": "c1", "data": {}}))
    printed = kernel.printed_until("total")
    assert printed.strip() == f"total {expected}", printed


def _complete(kernel, code: str) -> list[str]:
    kc = kernel.kc
    msg_id = kc.complete(code, len(code))
    reply = kc.get_shell_msg(timeout=60)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = kc.get_shell_msg(timeout=60)
    return reply["content"]["matches"]


def test_completion_offers_pending_names_and_their_attributes(kernel):
    for cell in CHAIN[:2]:
        kernel.ok(cell)
    _resume(kernel, CHAIN[:2])
    assert "b" in _unread(kernel)
    assert "b" in _complete(kernel, "b")
    attributes = _complete(kernel, "b.resh")
    assert any(m.endswith("reshape") for m in attributes), attributes
    assert "b" not in _unread(kernel).split("(")[-1]  # read for the completion
