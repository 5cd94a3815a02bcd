"""Write-behind in real kernels: a step returns once its values are digested and their
bytes are written while the user goes on. A value changed in place before its bytes
were written is never stored under its old digest (a later kernel is served the value
as the step left it, or runs the step); a kernel killed mid-write leaves no entry and
no partial file; `%step status` and the sidebar's snapshot show what is being written;
a kernel that ends waits for its writes up to a bound, then says which steps it did
not store; a write that fails is said, never failing a cell."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kernels import Kernel, wait_until

from resumable_cells.storage.store import Store

LOAD = "%load_ext resumable_cells"
ENGINE = "__import__('resumable_cells').ipython.magics.current_engine()"
N = 4 << 20  # float64 elements: 32 MB, eight chunks of the writer


def slow_writes(per_mib: float) -> str:
    """Code that makes the kernel's blob writes take `per_mib` seconds more per MiB:
    long enough to act (or die) while a value is being written."""
    return (
        "import time as _t, resumable_cells.storage.blobs as _b\n"
        "_write = _b.BlobWriter.write\n"
        "_b.BlobWriter.write = lambda self, data: "
        f"(_t.sleep({per_mib} * memoryview(data).nbytes / (1 << 20)), _write(self, data))[1]"
    )


def step(name: str, seed: int, n: int = N) -> str:
    return f"%%step {name}\nimport numpy as np\nv = np.random.default_rng({seed}).random({n})"


def same_as_made(seed: int, n: int = N) -> str:
    return f"bool((v == np.random.default_rng({seed}).random({n})).all())"


def stored(tmp_path: Path, step_name: str) -> bool:
    store = Store(tmp_path / ".resumable_cells")
    try:
        return bool(store.history(step_name))
    finally:
        store.close()


def partial_files(tmp_path: Path) -> list[Path]:
    return list((tmp_path / ".resumable_cells" / "blobs").glob("*/.*.tmp"))


def test_a_value_changed_after_its_step_is_served_as_the_step_left_it_or_not_at_all(
    kernel, tmp_path
):
    kernel.ok(slow_writes(0.003))  # 32 MiB: about 0.1 s
    made: list[int] = []

    @settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
    @given(
        delay=st.one_of(st.just(0.0), st.floats(0.0, 0.5)),
        where=st.sampled_from(["v[0]", "v[-1]", "v[len(v) // 2]", "v[:]"]),
    )
    def change_after_the_step(delay: float, where: str) -> None:
        seed = len(made)
        made.append(seed)
        kernel.ok(step(f"m{seed}", seed))
        # The next cell changes the array in place, right away or a moment later, while
        # its bytes are (or are about to be) written.
        kernel.ok(f"import time\ntime.sleep({delay})\n{where} = -1.0")

    change_after_the_step()
    kernel.wait_for_writes()
    kernel.restart()
    kernel.ok(LOAD)
    served = 0
    for seed in made:
        r = kernel.ok(step(f"m{seed}", seed))
        served += "served" in r.status_lines()[0]
        assert kernel.value(same_as_made(seed)), f"step m{seed} gave changed values"
    print(f"{served} of {len(made)} served after the restart, the rest ran again")


def test_a_kernel_killed_while_a_value_is_written_leaves_no_entry(kernel, tmp_path):
    kernel.ok(slow_writes(0.05))  # 1.6 s
    kernel.kc.execute(step("big", 7))  # returns once digested; then written, slowly
    wait_until(lambda: partial_files(tmp_path), what="a blob being written")
    kernel.kill()
    assert not stored(tmp_path, "big")
    kernel.ok(LOAD)  # the store opens: what the dead writer left is swept
    assert partial_files(tmp_path) == []
    r = kernel.ok(step("big", 7))
    assert "ran" in r.status_lines()[0], r.status_lines()
    assert kernel.value(same_as_made(7))
    kernel.wait_for_writes()
    assert stored(tmp_path, "big")


def test_status_and_the_snapshot_show_the_entries_being_written(kernel):
    kernel.ok(slow_writes(0.025))  # 0.8 s
    kernel.ok(step("slow", 1))
    status = kernel.ok("%step status").stdout + "".join(
        o.get("data", {}).get("text/plain", "") for o in kernel.ok("%step status").outputs
    )
    assert "writing 1 entry (32.0 MiB) in the background: slow" in status, status
    writing = kernel.value(f"{ENGINE}.snapshot()['cache']['writing']")
    assert writing["entries"] == 1 and writing["steps"] == ["slow"]
    assert writing["bytes"] >= N * 8
    kernel.wait_for_writes()
    assert kernel.value(f"{ENGINE}.snapshot()['cache']['writing']['entries']") == 0
    assert "in the background" not in repr(kernel.ok("%step status").outputs)


def test_the_sidebar_is_told_when_an_entry_written_behind_is_stored(kernel, tmp_path):
    kc = kernel.kc
    opened = {"comm_id": "sidebar", "target_name": "resumable_cells", "data": {}}
    kc.shell_channel.send(kc.session.msg("comm_open", opened))
    kernel.ok(slow_writes(0.025))  # 0.8 s
    kernel.ok(step("told", 2))  # returns while its value is written
    seen = []
    while not seen or seen[-1]["writing"]["entries"]:  # (raises Empty after its timeout)
        msg = kc.get_iopub_msg(timeout=60)
        data = msg["content"].get("data", {}) if msg["msg_type"] == "comm_msg" else {}
        if data.get("type") == "cache":
            seen.append(data["cache"])
    assert seen[-1]["writing"] == {"entries": 0, "bytes": 0, "steps": []}, seen
    assert seen[-1]["store"]["entries"] >= 1
    assert stored(tmp_path, "told")  # the message came once the entry was in the store


def test_a_lookup_of_a_key_being_written_waits_for_it_and_serves_it(kernel):
    kernel.ok(slow_writes(0.025))
    kernel.ok(step("again", 3))
    r = kernel.ok(step("again", 3))  # at once: its entry is still being written
    assert "served" in r.status_lines()[0], r.status_lines()
    assert kernel.value(same_as_made(3))


@pytest.mark.parametrize(
    "wait, manager_wait",
    [("2", 10.0), ("", 5.0)],  # its own bound; Jupyter's default patience, then SIGTERM
    ids=["the write wait", "sigterm from the manager"],
)
def test_the_kernel_ending_waits_for_its_writes_then_drops_them_saying_which(
    tmp_path, wait, manager_wait
):
    log = tmp_path / "kernel-stderr.txt"
    with open(log, "w") as err:
        k = Kernel(tmp_path, env={"RESUMABLE_CELLS_WRITE_WAIT": wait}, stderr=err)
    k.km.shutdown_wait_time = manager_wait  # SIGTERM after half of it, SIGKILL after all
    try:
        k.ok(LOAD)
        k.ok(slow_writes(0.0625))
        k.ok(step("quick", 1, n=1 << 20))  # 8 MiB, about 0.5 s: within the wait
        k.ok(step("slow", 2, n=8 << 20))  # 64 MiB, about 4 s: past it
    finally:
        k.kc.stop_channels()
        k.km.shutdown_kernel(now=False)  # as Jupyter asks a kernel to shut down
    text = log.read_text()
    assert "1 entry not stored, the kernel ended before its values were written" in text, text
    assert text.split("not stored")[1].splitlines()[0].endswith(": slow"), text
    assert stored(tmp_path, "quick") and not stored(tmp_path, "slow")
    assert partial_files(tmp_path) == []  # (swept when a store opens, if not removed)
    k = Kernel(tmp_path)  # the next kernel says why it runs the step again
    try:
        k.ok(LOAD)
        again = k.ok(step("slow", 2, n=8 << 20)).status_lines()[0]
        assert "the kernel ended before its values were written" in again, again
    finally:
        k.shutdown()


def test_a_write_that_fails_never_fails_the_cell_and_is_said_at_the_next(kernel, tmp_path):
    seed = 11
    # Writes past 16 MB fail (a file-size limit, as on a full disk): the step's cell
    # succeeds; the failure is said before the next cell and by the next miss.
    kernel.ok(
        "import resource, signal\nsignal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (16 << 20, resource.RLIM_INFINITY))"
    )
    assert kernel.ok(step("full", seed)).stderr == ""
    # (said before the cell after the write failed: this one's, or the next one's)
    said = kernel.ok("__import__('resumable_cells').wait_for_writes(60)").stderr
    said += kernel.ok("x = 1").stderr
    assert said.count("step full: not cached: the store failed") == 1, said
    assert kernel.value(same_as_made(seed))
    assert not stored(tmp_path, "full") and partial_files(tmp_path) == []
    kernel.ok("resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY,) * 2)")
    again = kernel.ok(step("full", seed)).status_lines()[0]
    assert "ran" in again and "the store failed" in again, again


def test_a_small_entry_is_put_once_its_cell_is_done_not_while_the_user_waits(kernel, tmp_path):
    # Nothing of it is left to write, but its put (a SQLite transaction) waits for the
    # cell's reply: within the cell it is pending, by the next cell it is stored.
    kernel.ok(
        "get_ipython().run_cell_magic('step', 'small', 'w = 1')\n"
        f"_seen = ({ENGINE}.writing()['entries'], bool({ENGINE}.store.history('small')))"
    )
    assert kernel.value("list(_seen)") == [1, False]
    assert kernel.value(f"{ENGINE}.writing()['entries']") == 0
    assert stored(tmp_path, "small")


def test_a_step_run_again_in_the_same_cell_is_served_its_pending_entry(kernel):
    kernel.ok("for _ in range(2):\n    get_ipython().run_cell_magic('step', 'twice', 'w = 2')")
    statuses = kernel.value("[r['status'] for r in __import__('resumable_cells').record()]")
    assert statuses[-2:] == ["live", "hit"], statuses


def test_a_small_entry_whose_put_fails_is_said_at_the_next_cell(kernel, tmp_path):
    kernel.ok(
        f"_e = {ENGINE}\n"
        "def _full(*a, **k):\n"
        "    raise OSError(28, 'No space left on device')\n"
        "_e.store.put_entry = _full"
    )
    assert kernel.ok("%%step tiny\nw = 3").stderr == ""
    said = kernel.ok("del _e.store.put_entry").stderr
    assert said.count("step tiny: not cached: the store failed (No space left on device)") == 1
    assert not stored(tmp_path, "tiny")
    again = kernel.ok("%%step tiny\nw = 3").status_lines()[0]
    assert "ran" in again and "the store failed" in again, again
    kernel.settle()  # (its entry is put after the cell's reply)
    assert stored(tmp_path, "tiny")


def test_a_value_written_behind_is_freed_once_the_notebook_drops_it(kernel):
    # The writer kept the last entry it wrote (and through its buffers the value's
    # memory) until the next one came: a large value deleted or rebound stayed.
    kernel.ok(LOAD)
    kernel.ok(step("dropped", 7))
    kernel.ok("import resumable_cells, weakref\nresumable_cells.wait_for_writes()")
    kernel.ok("_held = weakref.ref(v)\ndel v")
    assert kernel.value("_held() is None") is True
    kernel.ok("import gc\ngc.collect()")  # (not cyclic garbage either: a reference)
    assert kernel.value("_held() is None") is True
