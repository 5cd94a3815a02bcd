"""Provenance of a served value: who computed it (as they share it), when, from which
inputs (and the steps that bound them), with which packages, shown by `%step why` and
the CLI's `show` and `why`, in real kernels. The team case (a second kernel served from
the first's push through Redis) is in test_remote.py.
"""

from __future__ import annotations

import getpass
import json
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from kernels import Kernel

from resumable_cells import settings
from resumable_cells.records import provenance
from resumable_cells.storage.entries import Entry, Producer, Provenance

LOAD = "%%step load\ndf = list(range(100))"
TOTAL = "%%step total\ns = sum(df)\nprint(s)"
AGO = r"\d+ (s|min|h|days) ago"  # (how long ago depends on the machine's speed)
SHARED = Path(__file__).parent / "shared" / "provenance.json"


def cli(store: Path, *args: str) -> str:
    got = subprocess.run(
        [sys.executable, "-m", "resumable_cells", "--dir", str(store), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert got.returncode == 0, got.stderr
    return got.stdout


def start(path: Path, identity: str | None) -> Kernel:
    env = {"JPY_SESSION_NAME": "prov.ipynb"}
    if identity is not None:
        env["RESUMABLE_CELLS_IDENTITY"] = identity
    k = Kernel(path, env=env)
    k.ok("%load_ext resumable_cells")
    return k


@pytest.fixture
def ana(tmp_path, monkeypatch):
    monkeypatch.delenv("RESUMABLE_CELLS_IDENTITY", raising=False)
    k = start(tmp_path, "ana@gpu-3")
    yield k
    k.shutdown()


def origin_line(why: str, step: str) -> str:
    """The line of `%step why` that says where the step's value came from."""
    lines = [line for line in why.splitlines() if line.startswith(f"step {step}: computed by")]
    assert len(lines) == 1, why
    return lines[0]


def digest_of(k: Kernel, step: str, name: str) -> str:
    outputs = k.value(
        f"[r['outputs'] for r in __import__('resumable_cells').record() if r['step'] == {step!r}][-1]"
    )
    return next(o["digest"] for o in outputs if o["name"] == name)


def key_of(k: Kernel, step: str) -> str:
    return k.value(
        f"[r['key'] for r in __import__('resumable_cells').record() if r['step'] == {step!r}][-1]"
    )


def test_why_and_the_cli_say_who_computed_a_value_from_which_inputs(ana, tmp_path):
    ana.ok(LOAD)
    ana.ok(TOTAL)
    df = digest_of(ana, "load", "df")[:4]
    load_key = key_of(ana, "load")
    why = ana.ok("%step why total").stdout
    assert re.fullmatch(
        rf"step total: computed by ana on gpu-3, {AGO}, from df@{df} \(load\)",
        origin_line(why, "total"),
    )
    assert f"input df@{df} from step load (entry {load_key[:12]})" in why
    assert "served from" not in why  # it ran here

    # After a restart both are served from the local store, with the provenance they had.
    ana.restart()
    ana.ok("%load_ext resumable_cells")
    ana.ok(LOAD)
    served = ana.ok(TOTAL)
    assert served.status_lines()[0].startswith("step total: served from cache")
    why = ana.ok("%step why total").stdout
    assert re.fullmatch(
        rf"step total: computed by ana on gpu-3, {AGO}, from df@{df} \(load\)",
        origin_line(why, "total"),
    )
    assert f"input df@{df} from step load (entry {load_key[:12]})" in why

    store = tmp_path / ".resumable_cells"
    ana.wait_for_writes()
    shown = cli(store, "show")
    rows = [line for line in shown.splitlines() if " total " in f" {line} "]
    assert len(rows) == 2 and all(
        re.search(rf"computed by ana on gpu-3, {AGO}, from df@{df} \(load\)$", r) for r in rows
    ), shown
    assert re.search(r"load\s+served.*computed by ana on gpu-3", shown), shown
    assert "step total: computed by ana on gpu-3" in cli(store, "why", "total")


def test_share_identity_withholds_the_user_and_host(ana):
    ana.ok("%config StepMagics.share_identity = 'none'")
    ana.ok(LOAD)
    assert origin_line(ana.ok("%step why load").stdout, "load").startswith(
        "step load: computed by someone, "
    )
    ana.ok("%config StepMagics.share_identity = '@lab-7'")
    ana.ok("%%step again\nx = 2")
    why = ana.ok("%step why again").stdout
    assert origin_line(why, "again").startswith("step again: computed by someone on lab-7, ")


def test_an_input_a_plain_cell_rebound_has_no_producer(ana):
    ana.ok(LOAD)
    ana.ok("df = list(range(100))")  # the same value, bound by a plain cell: still load's
    ana.ok(TOTAL)
    assert "(load)" in ana.ok("%step why total").stdout
    ana.ok("df = [1, 2]")  # another value: no step bound it
    ana.ok(TOTAL)
    why = ana.ok("%step why total").stdout
    first = origin_line(why, "total")
    assert re.search(r"from df@\w{4}$", first) and "input df@" not in why, why


def test_an_input_from_a_step_that_left_no_entry_names_it_as_not_cached(ana):
    ana.ok("%%step make --effect\nn = 5")
    ana.ok("%%step use\nm = n + 1")
    why = ana.ok("%step why use").stdout
    assert re.search(r"^  input n@\w{4} from step make \(not cached\)$", why, flags=re.M), why
    # and the effect, which has no entry, still says where its value came from
    assert origin_line(ana.ok("%step why make").stdout, "make").startswith(
        "step make: computed by ana on gpu-3, "
    )


def test_the_default_identity_is_the_login_user_and_host(tmp_path, monkeypatch):
    monkeypatch.delenv("RESUMABLE_CELLS_IDENTITY", raising=False)
    k = start(tmp_path, None)
    try:
        k.ok("%%step mine\nx = 1")
        first = origin_line(k.ok("%step why mine").stdout, "mine")
    finally:
        k.shutdown()
    assert first.startswith(f"step mine: computed by {getpass.getuser()} on {socket.gethostname()}")


# -- without a kernel ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("raw", "user", "host"),
    [
        ("ana@gpu-3", "ana", "gpu-3"),
        ("ana", "ana", None),
        ("@gpu-3", None, "gpu-3"),
        ("none", None, None),
        ("", None, None),
    ],
)
def test_identity_setting(raw, user, host):
    assert settings.identity(configured=raw) == settings.Identity(user, host)


def test_an_entry_keeps_its_provenance_and_an_older_one_reads_as_not_recorded():
    row = {"step": "s", "outputs": {"blob": "b"}, "preimage": {"inputs": {"df": "9f2c00"}}}
    old = Entry.from_json(row)
    assert old.provenance is None
    origin = provenance.of_entry(old, None)
    assert provenance.sentence(origin, 0.0) == "computed by someone (not recorded), from df@9f2c"
    prov = Provenance("ana", "gpu-3", {"df": Producer("load", "k" * 64)})
    new = Entry.from_json(dict(row, by=prov.to_json()))
    assert new.provenance == prov
    assert Entry.from_json(new.to_json()).provenance == prov


@pytest.mark.parametrize("case", json.loads(SHARED.read_text())["sentence"])
def test_the_sentence_the_panel_writes_too(case):
    origin = provenance.Origin.from_json(case["provenance"])
    assert provenance.sentence(origin, case["now"]) == case["expected"]


def test_a_tier_location_shows_no_credentials():
    from resumable_cells.storage.tiers import without_credentials

    assert without_credentials("redis://:s3cret@cache:6379/0") == "redis://cache:6379/0"
    assert without_credentials("redis://cache:6379/0") == "redis://cache:6379/0"
    assert without_credentials("s3://key:secret@team/cache") == "s3://team/cache"
