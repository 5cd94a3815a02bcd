"""A store written by an earlier store format, opened by today's code: every step is a
clean miss (it runs live, with the right values, and no error or warning in the cell),
and the store keeps working afterwards (today's entries are served after a restart, the
CLI reads it).

The stores are in tests/fixtures/stores/format-N, each written by the commit its README
names with make_fixture.py, together with the key that authenticates its entries and the
cells that wrote it. The key is used here too, so an old entry passes authentication:
only the store format tells it apart. The kernel runs as the same notebook, so it also
continues the run the old code recorded.

Only public entry points are used: the magic in a real kernel, and the CLI.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from kernels import Kernel

FIXTURES = Path(__file__).parent / "fixtures" / "stores"
FORMATS = sorted(FIXTURES.glob("format-*/cells.json"), key=lambda p: int(p.parent.name[7:]))

# Runs the cells without the extension, in a fresh interpreter: what each step prints
# and returns, and the check expression's value.
PLAIN = """
import ast, contextlib, io, json, sys
meta = json.load(sys.stdin)
ns, steps = {}, []
for cell in meta["setup"]:
    exec(cell, ns)
for cell in meta["steps"]:
    tree = ast.parse(cell.partition("\\n")[2])
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(tree, "<cell>", "exec"), ns)
        value = eval(compile(ast.Expression(last.value), "<cell>", "eval"), ns) if last else None
    steps.append([out.getvalue(), None if value is None else repr(value)])
print(json.dumps({"steps": steps, "check": repr(eval(meta["check"], ns))}))
"""


def plain(meta: dict) -> dict:
    got = subprocess.run(
        [sys.executable, "-c", PLAIN],
        input=json.dumps(meta),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert got.returncode == 0, got.stderr
    return json.loads(got.stdout)


def copy_fixture(fixture: Path, to: Path) -> dict:
    """The fixture's store and key under `to`, private as the extension makes them;
    returns the environment that points at them."""
    store, key = to / "store", to / "secret.key"
    shutil.copytree(fixture / "store", store)
    for d in [store, *(p for p in store.rglob("*") if p.is_dir())]:
        os.chmod(d, 0o700)
    shutil.copyfile(fixture / "secret.key", key)
    os.chmod(key, 0o600)
    return {"RESUMABLE_CELLS_DIR": str(store), "RESUMABLE_CELLS_KEY_FILE": str(key)}


def statuses(reply) -> list[tuple[str, str]]:
    """(status, text) of each status line the reply shows."""
    return [
        (o["metadata"]["resumable_cells"]["status"], o["data"]["text/plain"])
        for o in reply.outputs
        if "resumable_cells" in (o.get("metadata") or {})
    ]


def assert_clean(cell: str, reply) -> None:
    """The cell succeeded, and nothing (no error, no warning) was written to stderr."""
    errors = [o for o in reply.outputs if o["output_type"] == "error"]
    assert reply.status == "ok" and not errors, f"{cell!r} failed:\n" + "\n".join(
        (reply.error or errors[0]).get("traceback", [])
    )
    assert reply.stderr == "", f"{cell!r} warned: {reply.stderr}"


def run_steps(k: Kernel, meta: dict, want: str, plain_steps: list) -> None:
    """Run the fixture's cells; every step must have status `want` and print and
    return what the cells compute."""
    for cell in meta["setup"]:
        assert_clean(cell, k.run(cell))
    for cell, (stdout, result) in zip(meta["steps"], plain_steps):
        r = k.run(cell)
        assert_clean(cell, r)
        lines = statuses(r)
        assert [s for s, _ in lines] == [want], f"{cell!r}: {lines}"
        if want == "live":  # the reason names the format, or knows no earlier entry
            text = lines[0][1]
            assert "format changed" in text or "new step" in text, text
        assert r.stdout == stdout, cell
        assert r.result() == result, cell


def cli(env: dict, *args: str) -> str:
    got = subprocess.run(
        [sys.executable, "-m", "resumable_cells", *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert got.returncode == 0, f"resumable-cells {' '.join(args)}: {got.stderr}"
    assert "Traceback" not in got.stderr, got.stderr
    return got.stdout


@pytest.mark.parametrize("cells_json", FORMATS, ids=[p.parent.name for p in FORMATS])
def test_an_old_store_is_a_clean_miss_and_keeps_working(cells_json, tmp_path):
    meta = json.loads(cells_json.read_text())
    expected = plain(meta)
    # The fixture was written by these cells: its old code computed the same values.
    assert ast.literal_eval(meta["expected"]) == ast.literal_eval(expected["check"])
    env = copy_fixture(cells_json.parent, tmp_path)
    cwd = tmp_path / "nb"
    (cwd / ".tmp").mkdir(parents=True)
    notebook = meta["notebook"]  # as the old kernel was: it continues the run stored
    k = Kernel(cwd, env={**env, "JPY_SESSION_NAME": notebook, "TMPDIR": str(cwd / ".tmp")})
    try:
        # Today's code does not upgrade old entries, so each step must be a miss and run
        # live: a step served from an old entry fails here even when its values are
        # right. Code that upgrades old entries would let the first pass be served; the
        # values, outputs and stderr are checked either way.
        for want in ("live", "hit"):  # then, after a restart, today's own entries serve
            assert_clean("%load_ext resumable_cells", k.run("%load_ext resumable_cells"))
            run_steps(k, meta, want, expected["steps"])
            assert k.value(meta["check"]) == ast.literal_eval(expected["check"])
            if want == "live":
                k.restart()
    finally:
        k.shutdown()

    steps = sorted(cell.split("\n")[0].split()[1] for cell in meta["steps"])
    listed = cli(env, "ls")
    assert notebook in listed
    for name in steps:
        assert f"\n{name} " in listed, listed
        # today's entry against the old one before it (or alone, if the old one is not
        # read): either way no traceback and exit status 0
        assert f"step {name}:" in cli(env, "why", name)
    shown = cli(env, "show")
    assert shown.count(" served ") >= len(steps), shown
    assert isinstance(json.loads(cli(env, "export")), list)
    cli(env, "gc")
    cli(env, "clear", "--all")
    assert ", 0 entries" in cli(env, "ls")
