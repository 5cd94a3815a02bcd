"""The run: budget across restarts, effects and the intent journal, the clock and RNG,
the tripwire, step.once and the idempotency key (real kernels)."""

from __future__ import annotations

from kernels import Kernel, wait_until

LOAD = "%load_ext resumable_cells"


def test_budget_spent_before_a_restart_stays_spent_and_refuses_at_the_right_step(kernel):
    kernel.ok("%step budget --tokens 250")
    agent = "%%step call{i}\nstep.spend(tokens=100)\nanswer{i} = {i}"
    kernel.ok(agent.format(i=1))
    kernel.ok(agent.format(i=2))
    spent = kernel.value(
        "__import__('resumable_cells').ipython.magics.current_engine().budget.spent()"
    )
    kernel.restart()
    kernel.ok(LOAD)
    assert (
        kernel.value("__import__('resumable_cells').ipython.magics.current_engine().budget.spent()")
        == spent
    )
    assert spent["tokens"] == 200
    for i in (1, 2):  # hits cost nothing and are still served
        assert "served" in kernel.ok(agent.format(i=i)).status_lines()[0]
    kernel.ok(agent.format(i=3))  # starts at 200 < 250, spends to 300
    r = kernel.run(agent.format(i=4))
    assert r.status == "error"
    assert (
        "tokens budget exhausted" in r.error["evalue"]
        and "%step budget --tokens" in r.error["evalue"]
    )
    kernel.ok("%step budget --tokens 1000")
    kernel.ok(agent.format(i=4))


def test_each_execution_records_its_own_spend_and_a_hit_none(kernel):
    kernel.ok("%%step plain\nx = 1")
    kernel.ok("%%step agent\nstep.spend(tokens=100, cost=0.5)\ny = 2")
    kernel.ok("%%step plain\nx = 1")  # a hit, right after a step that spent
    rows = kernel.value(
        "[(r['step'], r['status'], r['spend']) for r in __import__('resumable_cells').record()]"
    )
    assert rows == [
        ("plain", "live", {"steps": 1, "tokens": 0, "cost": 0.0}),
        ("agent", "live", {"steps": 1, "tokens": 100, "cost": 0.5}),
        ("plain", "hit", {"steps": 0, "tokens": 0, "cost": 0.0}),
    ]


_ENGINE = "__import__('resumable_cells').ipython.magics.current_engine()"


def _spent_steps(store_dir: str, run_id: str) -> int:
    """The steps the store holds for the run, read by this process (not the kernel's)."""
    from resumable_cells.storage.store import Store

    store = Store(store_dir)
    try:
        return int(store.ledger.spent(run_id)["steps"])
    finally:
        store.close()


def test_steps_counted_without_a_limit_reach_the_store_and_every_read(kernel):
    """Without a limit a live step does not wait for its count to be written: another
    process sees it soon after, this kernel at once, a limit set meanwhile counts it."""
    where = kernel.value(f"(str({_ENGINE}.store.dir), {_ENGINE}.run.id)")
    for i in range(3):
        kernel.ok(f"%%step s{i}\nv{i} = {i}")
    wait_until(lambda: _spent_steps(*where) == 3, what="the steps written")
    # Written only when read, from here on.
    kernel.ok("import resumable_cells.records.runs as _runs\n_runs.SAVE_STEPS_AFTER_S = 3600")
    for i in range(3, 5):
        kernel.ok(f"%%step s{i}\nv{i} = {i}")
    assert _spent_steps(*where) == 3
    assert "steps 5 of unlimited" in kernel.ok("%step budget").stdout
    assert _spent_steps(*where) == 5
    kernel.ok("%%step s5\nv5 = 5")
    from resumable_cells.records import runs
    from resumable_cells.storage.store import Store

    store = Store(where[0])  # another process sets a limit the kernel has reached
    try:
        runs.Budget(store, where[1]).set_limits(steps=6)
    finally:
        store.close()
    r = kernel.run("%%step s6\nv6 = 6")
    assert r.status == "error" and "steps budget exhausted: spent 6 of 6" in r.error["evalue"]


def test_steps_not_yet_written_are_written_when_the_kernel_shuts_down(kernel):
    where = kernel.value(f"(str({_ENGINE}.store.dir), {_ENGINE}.run.id)")
    kernel.ok("import resumable_cells.records.runs as _runs\n_runs.SAVE_STEPS_AFTER_S = 3600")
    for i in range(2):
        kernel.ok(f"%%step s{i}\nv{i} = {i}")
    assert _spent_steps(*where) == 0
    kernel.restart(clean=True)
    assert _spent_steps(*where) == 2


def test_a_killed_effect_is_reported_and_earlier_steps_are_served(tmp_path):
    k = Kernel(tmp_path, env={"JPY_SESSION_NAME": "nb.ipynb"})
    try:
        k.ok(LOAD)
        k.ok("%%step before\nv = 41")
        k.kc.execute(
            "%%step send --effect\nimport time\nopen('started.flag', 'w').close()\ntime.sleep(60)"
        )
        flag = tmp_path / "started.flag"
        wait_until(flag.exists, what="the effect to start")
        k.kill()
        k.ok(LOAD)
        assert "served" in k.ok("%%step before\nv = 41").status_lines()[0]
        r = k.ok("%%step send --effect\nsent = True")
        assert "may already have happened" in r.stderr
        record = k.value(
            "[(r['step'], r['status']) for r in __import__('resumable_cells').record()]"
        )
        assert ("send", "interrupted") in record
    finally:
        k.shutdown()


def test_clock_and_rng_replay_after_restart_and_change_with_a_new_run(kernel):
    timed = "%%step stamp\nwhen = step.now().isoformat()\ndraw = float(step.rng().random())\npick = step.random.randint(0, 10**9)"
    plain = "%%step plain\nsquare = 12 * 12"
    kernel.ok(timed)
    kernel.ok(plain)
    first = kernel.value("(when, draw, pick)")
    kernel.restart()
    kernel.ok(LOAD)
    assert "served" in kernel.ok(timed).status_lines()[0]
    assert kernel.value("(when, draw, pick)") == first
    kernel.ok("%step run --new")
    r = kernel.ok(timed)
    assert "ran" in r.status_lines()[0] and "run epoch changed" in r.status_lines()[0]
    assert kernel.value("(when, draw, pick)") != first
    assert "served" in kernel.ok(plain).status_lines()[0]


def test_direct_clock_and_random_calls_get_a_warning(kernel):
    r = kernel.ok("%%step noisy\nimport time, random\nt = time.time()\nr = random.random()")
    assert "time.time() directly" in r.stderr and "step.now()" in r.stderr
    assert "random.random() directly" in r.stderr and "step.random" in r.stderr
    r = kernel.ok("%%step bytes\nimport os, uuid\nb = os.urandom(4)\nu = uuid.uuid1()")
    assert "os.urandom() directly" in r.stderr and "step.random.randbytes(n)" in r.stderr
    assert "uuid.uuid1() directly" in r.stderr
    # a generator seeded from the system's entropy draws other numbers each run: warned;
    # one given a seed is the step's own, and is not
    r = kernel.ok(
        "%%step gens\nimport numpy as np\ng = np.random.default_rng()\nh = np.random.default_rng(3)"
    )
    assert "numpy.random.default_rng() directly: it seeds a generator" in r.stderr, r.stderr
    assert r.stderr.count("directly") == 1


def test_tripwire_blocks_caching_of_a_write_and_tracks_reads(kernel, tmp_path):
    r = kernel.ok("%%step writer\nwith open('out.txt', 'w') as f:\n    f.write('x')")
    assert "not cached" in r.stderr and "wrote out.txt" in r.stderr and "--effect" in r.stderr
    r = kernel.ok("%%step writer\nwith open('out.txt', 'w') as f:\n    f.write('x')")
    assert "ran" in r.status_lines()[0]

    data = tmp_path / "data.csv"
    data.write_text("a,b\n1,2\n")
    reader = "%%step reader\ntext = open('data.csv').read()"
    kernel.ok(reader)
    assert "served" in kernel.ok(reader).status_lines()[0]
    data.touch()  # a new mtime, same content: still served
    assert "served" in kernel.ok(reader).status_lines()[0]
    data.write_text("a,b\n1,3\n")
    r = kernel.ok(reader)
    assert "ran" in r.status_lines()[0] and "data.csv changed" in r.status_lines()[0]


def test_once_and_idempotency_key_survive_a_restart(kernel):
    cell = "%%step notify --effect\nfirst = step.once('mail-42')\nikey = step.idempotency_key"
    kernel.ok("seed_input = 7")
    kernel.ok(cell + "\nuse = seed_input")
    first, ikey = kernel.value("(first, ikey)")
    assert first is True
    kernel.restart()
    kernel.ok(LOAD)
    kernel.ok("seed_input = 7")
    kernel.ok(cell + "\nuse = seed_input")
    again, ikey2 = kernel.value("(first, ikey)")
    assert again is False
    assert ikey2 == ikey


def test_step_is_a_builtin_name_never_a_variable_of_the_notebook(kernel):
    # Found everywhere code runs, yet not in what the notebook lists as its own: `dir()`
    # and `globals()` show what they show without the extension.
    same = "step is __import__('resumable_cells').step"
    assert kernel.value(same) and not kernel.value("'step' in dir() or 'step' in globals()")
    kernel.ok("def stamp():\n    return step.now().isoformat()")
    kernel.ok("%%step stamped\nwhen = stamp()")
    kernel.ok("%%step direct\ndirect = step.now().isoformat()")
    assert kernel.value("when") == kernel.value("direct")
    # A variable of the user's called `step` hides it and is never overwritten by it.
    kernel.ok("step = 0.25")
    assert kernel.value("step") == 0.25
    kernel.ok("del step")
    assert kernel.value(same)
    kernel.ok("%reset -f")
    assert kernel.value(same)
    kernel.ok("%unload_ext resumable_cells")
    assert not kernel.value("hasattr(__import__('builtins'), 'step')")
    kernel.ok("step = 3")
    kernel.ok("%load_ext resumable_cells")
    assert kernel.value("step") == 3
    kernel.ok("del step")
    assert kernel.value(same)
