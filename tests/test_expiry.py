"""Expiry (`--ttl`), the age of what is served, and the cache at a glance: in a real
kernel, through the status line, `%step status`, `%step why`, `%step plan`, the rows the
sidebar gets and the CLI."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time

from kernels import wait_until

ENGINE = "__import__('resumable_cells').ipython.magics.current_engine()"
FETCH = "%%step fetch --ttl 1s\nprice = 41 + 1"


def line_of(reply) -> str:
    return reply.status_lines()[0]


def test_an_expired_entry_runs_again_with_the_reason_and_is_replaced(kernel, tmp_path):
    assert "ran in" in line_of(kernel.ok(FETCH))
    created = kernel.value(f"{ENGINE}.store.get_entry({ENGINE}.store.history('fetch')[-1]).created")
    assert "served from cache" in line_of(kernel.ok(FETCH))  # younger than its TTL
    wait_until(lambda: time.time() > created + 1.05, what="the TTL to pass")
    line = line_of(kernel.ok(FETCH))
    assert re.search(r"ran in .* \(expired \(computed 1 s ago, ttl 1 s\)\)$", line), line
    assert kernel.value("price") == 42

    # The TTL is not part of the key: one key, one entry, replaced in place.
    keys = kernel.value(f"[e['key'] for e in {ENGINE}.record()]")
    assert len(keys) == 3 and len(set(keys)) == 1
    assert kernel.value(f"{ENGINE}.store.history('fetch')") == [keys[0]]
    assert kernel.value(f"{ENGINE}.store.entry_count()") == 1
    assert "served from cache" in line_of(kernel.ok("%%step fetch\nprice = 41 + 1"))
    assert "served from cache" in line_of(kernel.ok("%%step fetch --ttl 2h\nprice = 41 + 1"))

    # The reason, wherever a miss is explained: the record (and so the sidebar's rows)
    # and `%step why`.
    reasons = kernel.value(f"[e['reason'] for e in {ENGINE}.record()]")
    assert reasons[2] == "expired (computed 1 s ago, ttl 1 s)"
    rows = kernel.value(
        "__import__('resumable_cells').records.staleness.step_rows(" + ENGINE + ".record())"
    )
    assert rows[0]["step"] == "fetch" and rows[0]["status"] == "hit"


def test_why_and_plan_say_a_step_expired(kernel, tmp_path):
    kernel.ok(FETCH)
    nb = {
        "cells": [{"cell_type": "code", "id": "c1", "metadata": {}, "source": FETCH}],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
    }  # fmt: skip
    (tmp_path / "test.ipynb").write_text(json.dumps(nb))
    plan = kernel.ok("%step plan").result()
    assert re.search(r"serve\s+fetch", plan), plan
    created = kernel.value(f"{ENGINE}.store.get_entry({ENGINE}.store.history('fetch')[-1]).created")
    wait_until(lambda: time.time() > created + 1.05, what="the TTL to pass")
    plan = kernel.ok("%step plan").result()
    assert re.search(r"run\s+fetch\s+\(expired \(computed 1 s ago, ttl 1 s\)\)", plan), plan
    kernel.ok(FETCH)
    why = kernel.ok("%step why fetch").stdout
    assert why.startswith("step fetch last ran because: expired (computed 1 s ago, ttl 1 s)")


def test_a_ttl_that_is_not_an_age_is_refused_with_what_to_write(kernel):
    r = kernel.run("%%step fetch --ttl 2\nprice = 1")
    assert r.status == "error" and r.error["ename"] == "UsageError"
    assert "give a number and a unit: 45s, 30m, 2h or 1d" in r.error["evalue"]
    assert kernel.value("'price' in dir()") is False


def age_entry(kernel, step: str, seconds: float) -> None:
    """Make `step`'s latest entry look `seconds` older (re-signed, as the store does)."""
    kernel.ok(
        f"_s = {ENGINE}.store\n_k = _s.history({step!r})[-1]\n_e = _s.get_entry(_k)\n"
        f"_e.created -= {seconds}\n_s.put_entry(_k, _e)\ndel _s, _k, _e"
    )


def test_a_hit_says_how_old_its_value_is_when_that_is_more_than_a_few_minutes(kernel):
    step = "%%step model\nweights = [1, 2, 3]"
    kernel.ok(step)
    assert ", computed" not in line_of(kernel.ok(step))  # seconds old: not said
    age_entry(kernel, "model", 3 * 86400 + 60)
    line = line_of(kernel.ok(step))
    assert re.fullmatch(
        r"step model: served from cache in \S+ \S+, computed 3 days ago \(saved \S+ \S+\)", line
    ), line
    status = kernel.ok("%step status").result()
    assert re.search(r"model\s+In \[\d+\]\s+served\s.*3 days ago", status), status
    computed = kernel.value(f"{ENGINE}.record()[-1]['computed']")
    assert time.time() - computed > 3 * 86400


def test_status_shows_the_hit_rate_and_the_store_at_a_glance(kernel, tmp_path):
    kernel.ok("%%step a\nx = list(range(100_000))")  # a blob file, not inlined
    kernel.ok("%%step b\ny = 2")
    kernel.ok("%%step a\nx = list(range(100_000))")
    kernel.ok("%%step c --effect\nprint(len(x))")
    status = kernel.ok("%step status").result()
    assert "hit rate of the run: 33% served (1 of 3 pure executions)" in status
    store = re.search(r"store (\S+): (\S+ \S+) of 10\.0 GiB, 2 entries", status)
    assert store and store.group(1) == str(tmp_path / ".resumable_cells"), status
    used = kernel.value(f"{ENGINE}.store.used_bytes()")
    assert used > 100_000 and store.group(2) == kernel.value(
        f"__import__('resumable_cells').formatting.size({used})"
    )
    commands = "__import__('resumable_cells').ipython.commands"
    html = kernel.value(f"{commands}.dispatch({ENGINE}, ['status'])._repr_html_()")
    assert "hit rate of the run: 33% served" in html and "2 entries" in html


def test_the_cli_ls_shows_the_same_per_store(kernel, tmp_path):
    kernel.ok("%%step a\nx = 1")
    kernel.ok("%%step a\nx = 1")
    kernel.ok("%%step b\ny = 2")
    out = subprocess.run(
        [sys.executable, "-m", "resumable_cells", "--dir", str(tmp_path / ".resumable_cells"), "ls"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert re.search(r"test\.ipynb\s+\S+ \S+\s+3\s+1\s+2\s+33%", out), out
    assert re.search(r"store \S+: \S+ \S+ of 10\.0 GiB, 2 entries", out), out


def test_a_step_with_a_ttl_may_read_a_live_source_over_the_network(kernel):
    kernel.ok(
        "import socket\n_srv = socket.socket()\n_srv.bind(('127.0.0.1', 0))\n_srv.listen(8)\n"
        "port = _srv.getsockname()[1]"
    )
    body = "with socket.create_connection(('127.0.0.1', port)):\n    pass\ngot = 1"
    pure = kernel.ok(f"%%step plain --ignore port\n{body}")
    assert "not cached: it opened a network connection" in pure.stderr
    assert "ran in" in line_of(kernel.ok(f"%%step plain --ignore port\n{body}"))
    live = kernel.ok(f"%%step quote --ttl 1h --ignore port\n{body}")
    assert "not cached" not in live.stderr
    assert "served from cache" in line_of(kernel.ok(f"%%step quote --ttl 1h --ignore port\n{body}"))
