"""Four kernels in four notebooks share one store and run fifty steps each at the same
time, with overlapping keys: no error, no corrupt entry, each key computed once, and
every kernel's record intact."""

from __future__ import annotations

import threading

from conftest import LOAD
from kernels import Kernel

KERNELS, STEPS = 4, 50


def step_cell(i: int) -> str:
    # The same code in every notebook: the same key, so only one kernel should run it.
    return f"%%step s{i}\nimport time\ntime.sleep(0.05)\nv{i} = sum(range({i} * 1000))"


def test_four_kernels_share_one_store(tmp_path):
    store = tmp_path / "shared-store"
    kernels = []
    for j in range(KERNELS):
        cwd = tmp_path / f"nb{j}"
        cwd.mkdir()
        k = Kernel(cwd, env={"JPY_SESSION_NAME": f"nb{j}.ipynb", "RESUMABLE_CELLS_DIR": str(store)})
        k.ok(LOAD)
        kernels.append(k)
    errors: list[str] = []
    start = threading.Barrier(KERNELS)

    def drive(k: Kernel, j: int) -> None:
        start.wait()
        order = list(range(STEPS)) if j % 2 == 0 else list(reversed(range(STEPS)))
        for i in order:
            r = k.run(step_cell(i))
            if r.status != "ok":
                errors.append(f"kernel {j} step {i}: {r.error}")

    try:
        threads = [threading.Thread(target=drive, args=(k, j)) for j, k in enumerate(kernels)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=600)
        assert not any(t.is_alive() for t in threads)
        assert errors == []
        live_per_step: dict[str, int] = {}
        for j, k in enumerate(kernels):
            rec = k.value(
                "[(r['step'], r['status']) for r in __import__('resumable_cells').record()]"
            )
            assert len(rec) == STEPS, f"kernel {j}: {len(rec)} executions recorded"
            assert {s for s, _ in rec} == {f"s{i}" for i in range(STEPS)}
            assert all(st in ("live", "hit") for _, st in rec)
            for s, st in rec:
                live_per_step[s] = live_per_step.get(s, 0) + (st == "live")
            got = k.value(f"[globals()['v' + str(i)] for i in range({STEPS})]")
            assert got == [sum(range(i * 1000)) for i in range(STEPS)]
        assert all(n == 1 for n in live_per_step.values()), live_per_step
        # Every entry in the shared store reads back and authenticates.
        check = kernels[0].value(
            "[e.step for _, e in __import__('resumable_cells').ipython.magics.current_engine().store.entries()]"
        )
        assert sorted(check) == sorted(f"s{i}" for i in range(STEPS))
    finally:
        for k in kernels:
            k.shutdown()


def test_a_key_stored_between_the_lookup_and_the_claim_is_served_not_computed_again(tmp_path):
    """The race the four kernels above can run into, forced: kernel B looks the key up
    and misses; kernel A computes it, stores it and lets go of its claim; only then does
    B take the claim (without waiting). B must serve A's entry."""
    import inprocess

    a = inprocess.engine(tmp_path / "store")
    b = inprocess.engine(tmp_path / "store", a.shell)  # a second kernel on the same store
    cell = "%%step shared\nv = sum(range(1000))"
    claim = b.store.claim

    def claim_once_a_has_stored_it(key, on_wait=None):
        inprocess.step(a, cell)
        return claim(key, on_wait)

    b.store.claim = claim_once_a_has_stored_it
    try:
        inprocess.step(b, cell)
        mine = [e["status"] for e in b.record() if e["session"] == b.session]
        theirs = [e["status"] for e in b.record() if e["session"] == a.session]
        assert theirs == ["live"]
        assert mine == ["hit"]
    finally:
        inprocess.close(a)
        inprocess.close(b)


# A process that claims a key in a store and holds the claim until its stdin closes.
_HOLDER = """
import sys
from resumable_cells.storage import claims
with claims.claim(sys.argv[1], sys.argv[2]):
    print("held", flush=True)
    sys.stdin.read()
"""
# A process that says whether a key's claim is free: exit 0 when it took it at once,
# 3 when another process holds it.
_PROBE = """
import sys
from resumable_cells.storage import claims
def held(holder):
    raise SystemExit(3)
with claims.claim(sys.argv[1], sys.argv[2], held):
    pass
"""


def _python(code: str, *args: str, **kwargs):
    import subprocess
    import sys

    return subprocess.Popen([sys.executable, "-c", code, *args], text=True, **kwargs)


def test_a_claim_waits_for_its_holder_and_is_free_when_the_holder_is_killed(tmp_path):
    """A kernel killed while it computes a key (SIGKILL: nothing of it runs again)
    leaves no claim behind: the kernel waiting on it is told who holds it, then takes it."""
    import subprocess
    import threading

    from resumable_cells.storage import claims

    holder = _python(_HOLDER, str(tmp_path), "k1", stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        told: list[dict] = []
        waiting = threading.Event()
        result: list[bool] = []

        def wait_for_it() -> None:
            def on_wait(who: dict) -> None:
                told.append(who)
                waiting.set()

            with claims.claim(tmp_path, "k1", on_wait) as waited:
                result.append(waited)

        t = threading.Thread(target=wait_for_it)
        t.start()
        assert waiting.wait(60)
        assert told == [{"pid": holder.pid, "host": __import__("socket").gethostname()}]
        with claims.claim(tmp_path, "another key") as waited:  # other keys are free
            assert waited is False
        holder.kill()
        holder.wait()
        t.join(60)
        assert result == [True]
    finally:
        holder.kill()
        holder.wait()


def test_claims_on_one_key_in_one_process_are_counted(tmp_path):
    """A step run again while its first run's entry is still written behind claims the
    key a second time in the same process: the first let-go keeps the key claimed."""
    from resumable_cells.storage import claims

    def free() -> bool:
        probe = _python(_PROBE, str(tmp_path), "k")
        return probe.wait(60) == 0

    first = claims.claim(tmp_path, "k")
    assert first.__enter__() is False
    with claims.claim(tmp_path, "k") as waited:
        assert waited is False
        assert not free()
    assert not free()
    first.__exit__(None, None, None)
    assert free()


def test_claims_in_a_store_deleted_and_made_again_exclude_other_processes(tmp_path):
    import shutil

    from resumable_cells.storage import claims

    store = tmp_path / "store"
    store.mkdir()
    with claims.claim(store, "k"):
        pass
    shutil.rmtree(store)  # the claims file this process has open is gone with it
    store.mkdir()
    claims.reopen(store)  # as a Store opened there does
    with claims.claim(store, "k"):
        assert _python(_PROBE, str(store), "k").wait(60) == 3
