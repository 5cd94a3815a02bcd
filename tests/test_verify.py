"""`resumable-cells verify` on small notebooks written here: real kernels, real passes.

Each call runs a notebook four times (plain, plain again, stepped, replay), so the
notebooks are small and several checks share one call where they can.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import nbformat
import pytest
from kernels import kernel_processes, no_kernels_left

from resumable_cells import cli
from resumable_cells.verify.compare import difference, normalise, user_outputs


def write_notebook(path: Path, *cells: str) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell(c[3:])
        if c.startswith("md:")
        else nbformat.v4.new_code_cell(c)
        for c in cells
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


def verify(tmp_path: Path, capsys, *args: str) -> tuple[int, dict, str]:
    """Run the CLI; returns the exit status, the JSON report and the text report."""
    out = tmp_path / "report.json"
    rc = cli.main(["verify", *args, "--json", str(out)])
    text = capsys.readouterr().out
    return rc, json.loads(out.read_text()), text


def cells_of(report: dict, notebook: int = 0) -> list[dict]:
    return report["notebooks"][notebook]["cells"]


def test_clean_notebooks_pass_and_every_step_is_served(tmp_path, capsys):
    first = write_notebook(
        tmp_path / "nbs" / "first.ipynb",
        "md:# A title",
        "x = 1\nprint('x is', x)",
        "y = [x, 2]\ny",
        "",
        "def total(v):\n    return sum(v)\n\ntotal(y)",
        "import math\nmath.sqrt(16)",
    )
    second = write_notebook(tmp_path / "nbs" / "second.ipynb", "s = 'abc'\ns.upper()")
    rc, report, text = verify(tmp_path, capsys, str(first), str(second), "--jobs", "2")
    assert rc == 0, text
    assert report["ok"] and "nothing differs and nothing hung" in text
    assert [Path(n["notebook"]).name for n in report["notebooks"]] == [
        "first.ipynb",
        "second.ipynb",
    ]
    s = report["notebooks"][0]["summary"]
    assert (s["cells"], s["wrapped"], s["nondeterministic"]) == (4, 4, 0)
    assert s["identical"] == s["compared"] == 4
    assert s["replay_identical"] == 4 and s["served"] == 4 and s["not_served"] == {}
    assert s["hung"] == 0
    assert all(set(c["seconds"]) == {"plain_1", "plain_2", "stepped", "replay"}
               for c in cells_of(report))  # fmt: skip
    assert report["totals"]["served"] == 5 and report["totals"]["notebooks"] == 2
    assert set(s["pass_wall_s"]) == {"plain_1", "plain_2", "stepped", "replay"}
    # Each stepped pass against the faster plain pass, per notebook and over them all.
    walls = s["pass_wall_s"]
    assert s["plain_s"] == min(walls["plain_1"], walls["plain_2"])
    assert s["ratios"] == {k: round(walls[k] / s["plain_s"], 3) for k in ("stepped", "replay")}
    assert set(s["load_s"]) == {"stepped", "replay"}
    assert all(r > 0 for r in report["totals"]["ratios"].values())
    # The plan asked before the replay (in a kernel of its own: the replay's first step
    # starts the engine itself) said what Run All then did: every step served.
    assert [(c["plan"], c["plan_differs"]) for c in cells_of(report)] == [("serve", None)] * 4
    replay_cells = sum(c["seconds"]["replay"] for c in cells_of(report))
    assert replay_cells <= walls["replay"]  # (the load cell's time is in the pass too)
    assert text.count("under %%step: first run ") == 3  # each notebook, then all of them
    # Nothing was written next to the notebooks: no store, no scratch copies.
    assert sorted(p.name for p in (tmp_path / "nbs").iterdir()) == ["first.ipynb", "second.ipynb"]


def test_nondeterminism_cell_magics_and_effects_are_reported_not_counted(tmp_path, capsys):
    kernels = kernel_processes()
    nb = write_notebook(
        tmp_path / "mixed.ipynb",
        "import random\nr = random.random()\nprint(r)",  # unseeded: differs between runs
        "%%writefile notes.txt\nsome notes",  # another cell magic: left plain
        "with open('out.txt', 'w') as f:\n    f.write('hi')",  # an effect: never cached
        "print(open('out.txt').read())",
    )
    rc, report, text = verify(tmp_path, capsys, str(nb))
    assert rc == 0, text
    rand, magic, effect, reader = cells_of(report)
    assert rand["nondeterministic"] and rand["differs"] is None
    assert rand["served"] and rand["replay_differs"] is None  # the replay shows the live value
    assert not magic["wrapped"] and magic["magic"] == "%%writefile"
    assert "not wrapped (%%writefile)" in text
    assert not effect["served"] and effect["reason"].startswith("not cached: it wrote")
    assert "out.txt" in effect["reason"]
    assert reader["differs"] is None and reader["replay_differs"] is None
    s = report["notebooks"][0]["summary"]
    assert (s["nondeterministic"], s["not_wrapped"], s["hung"]) == (1, 1, 0)
    assert not (tmp_path / "out.txt").exists() and not (tmp_path / "notes.txt").exists()
    no_kernels_left(kernels)


def test_cells_left_plain_are_not_in_the_ratios(tmp_path, capsys):
    # A cell under another cell magic runs alike in every pass (`%%timeit` jumps tenfold
    # by its own choice of a loop count): the passes are timed without it.
    nb = write_notebook(
        tmp_path / "magic.ipynb",
        "x = 1",
        "%%capture\nimport time\ntime.sleep(1.5)",
        "y = x + 1",
    )
    rc, report, text = verify(tmp_path, capsys, str(nb))
    assert rc == 0, text
    _, slept, _ = cells_of(report)
    assert not slept["wrapped"] and slept["magic"] == "%%capture"
    walls = report["notebooks"][0]["summary"]["pass_wall_s"]
    assert set(walls) == set(slept["seconds"])
    assert all(walls[k] < slept["seconds"][k] for k in walls), (walls, slept["seconds"])


def test_cells_that_run_timeit_are_not_in_the_ratios(tmp_path, capsys):
    # `%timeit` picks how long it runs (its loop count) as `%%timeit` does: a cell with
    # it is a step like any other, but no pass is timed with it.
    nb = write_notebook(
        tmp_path / "timed.ipynb",
        "import time\nx = 1",
        "%timeit -n 1 -r 1 time.sleep(1.5)",
        "y = x + 1",
    )
    rc, report, text = verify(tmp_path, capsys, str(nb))
    assert rc == 0, text
    _, timed, _ = cells_of(report)
    assert timed["wrapped"] and timed["served"]
    walls = report["notebooks"][0]["summary"]["pass_wall_s"]
    for label in ("plain_1", "plain_2", "stepped"):
        assert timed["seconds"][label] >= 1.5
        assert walls[label] < timed["seconds"][label], (walls, timed["seconds"])


def test_a_hung_cell_is_interrupted_and_the_pass_goes_on(tmp_path, capsys):
    kernels = kernel_processes()
    nb = write_notebook(
        tmp_path / "hangs.ipynb",
        "x = 41",
        "while True:\n    pass",
        "print(x + 1)",
    )
    rc, report, text = verify(tmp_path, capsys, str(nb), "--timeout", "3")
    assert rc == 1
    before, hung, after = cells_of(report)
    assert hung["hung"] == ["plain_1", "plain_2", "stepped", "replay"]
    assert "hung in plain_1, plain_2, stepped, replay" in text
    # The kernel was interrupted, not restarted: the next cell still sees x.
    assert after["hung"] == [] and after["differs"] is None and after["replay_differs"] is None
    assert after["served"] and after["plain_error"] is None
    assert report["notebooks"][0]["passes"]["plain_1"]["restarts"] == 0
    assert report["notebooks"][0]["summary"]["hung"] == 1
    assert "differ or hung" in text
    no_kernels_left(kernels)


def test_a_kernel_that_dies_is_restarted_and_reported(tmp_path, capsys):
    kernels = kernel_processes()
    nb = write_notebook(
        tmp_path / "dies.ipynb",
        "import os",
        "os._exit(1)",
        "print('after the restart')",
    )
    rc, report, text = verify(tmp_path, capsys, str(nb), "--timeout", "30")
    assert rc == 1
    problems = report["notebooks"][0]["problems"]
    assert "the kernel died at cell 2 in the plain_1 pass" in problems
    assert "the kernel died at cell 2 in the replay pass" in problems
    after = cells_of(report)[2]
    assert after["plain_error"] is None and after["differs"] is None  # it ran, in a new kernel
    assert report["notebooks"][0]["passes"]["stepped"]["restarts"] == 1
    assert "problem: the kernel died at cell 2" in text
    no_kernels_left(kernels)  # the restarted ones too


def test_a_difference_between_plain_and_stepped_fails(tmp_path, capsys):
    # A cell that prints its own input as IPython received it: under %%step that input
    # is the magic's call. Deterministic, so the stepped output is compared and differs.
    # The last cell reads an earlier result by its execution count, which every pass
    # gives the same cell (the plain passes run a cell doing nothing where the others
    # load the extension): a count off by one would show another result, or none.
    nb = write_notebook(
        tmp_path / "differs.ipynb", "a = 1", "print(In[-1])", "a + 41", "(Out[4], _4)"
    )
    rc, report, text = verify(tmp_path, capsys, str(nb))
    assert rc == 1
    first, echo, last, by_count = cells_of(report)
    assert echo["differs"].startswith("output 1: stdout: line 1: 'print(In[-1])' became")
    assert "run_cell_magic" in echo["differs"]
    assert first["differs"] is None and last["differs"] is None
    assert by_count["plain_error"] is None and not by_count["nondeterministic"]
    assert by_count["differs"] is None and by_count["replay_differs"] is None
    assert report["notebooks"][0]["summary"]["identical"] == 3
    assert "differs: output 1: stdout" in text and not report["ok"]


def test_in_place_runs_in_the_notebook_folder_with_the_store_apart(tmp_path, capsys):
    nb = write_notebook(
        tmp_path / "here" / "writes.ipynb",
        "with open('marker.txt', 'a') as f:\n    f.write('x')",
        "print(len(open('marker.txt').read()) > 0)",
    )
    rc, report, text = verify(tmp_path, capsys, str(nb), "--in-place")
    assert rc == 0, text
    writer, reader = cells_of(report)
    assert writer["reason"].startswith("not cached: it wrote") and reader["differs"] is None
    # Each pass appended to the notebook's own marker.txt; the store was elsewhere.
    assert (tmp_path / "here" / "marker.txt").read_text() == "xxxx"
    assert sorted(p.name for p in (tmp_path / "here").iterdir()) == ["marker.txt", "writes.ipynb"]


def test_a_folder_too_big_to_copy_is_refused_before_any_kernel(tmp_path, capsys, monkeypatch):
    from resumable_cells.verify import workspace

    monkeypatch.setattr(workspace, "MAX_COPY_FILES", 3)
    nb = write_notebook(tmp_path / "big" / "nb.ipynb", "x = 1")
    for n in range(4):
        (tmp_path / "big" / f"data{n}.csv").write_text("1\n")
    assert cli.main(["verify", str(nb)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("resumable-cells: the folder") and "verify it with --in-place" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.ipynb"], "no notebook at missing.ipynb"),
        (["not-a-notebook.txt"], "cannot read not-a-notebook.txt as a notebook"),
        (["empty-folder"], "no notebooks (*.ipynb) in empty-folder"),
        (["ok.ipynb", "--timeout", "0"], "--timeout takes a number of seconds above 0"),
        (["ok.ipynb", "--jobs", "0"], "--jobs takes a number of notebooks above 0"),
        (["ok.ipynb", "--json", "nowhere/r.json"], "cannot write nowhere/r.json"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(tmp_path, capsys, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "not-a-notebook.txt").write_text("hello")
    (tmp_path / "empty-folder").mkdir()
    write_notebook(tmp_path / "ok.ipynb", "x = 1")
    assert cli.main(["verify", *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"resumable-cells: {message}")
    assert captured.err.count("\n") == 1


# -- the comparison itself, on outputs as nbclient records them ----------------------
def stream(name: str, text: str) -> dict:
    return {"output_type": "stream", "name": name, "text": text}


STATUS = {
    "output_type": "display_data",
    "data": {"text/plain": "step v: ran in 0.01 s (new step)"},
    "metadata": {"resumable_cells": {"status": "live", "step": "v"}},
}


def test_streams_merge_and_the_extension_output_is_set_aside():
    plain = [stream("stdout", "a\n"), stream("stderr", "warn\n"), stream("stdout", "b\n")]
    stepped = [
        stream("stderr", "warn\nstep v: calls random.random() directly: ...\n"),
        stream("stdout", "a\nb\n"),
        STATUS,
    ]
    got, step = user_outputs(stepped, plain_stderr="warn\n")
    assert difference(normalise(plain), got) is None
    assert (step.status, step.name, step.reason) == ("live", "v", "new step")
    assert step.messages == ["step v: calls random.random() directly: ..."]


def test_a_stream_that_held_only_the_extensions_messages_is_no_output():
    # (a replay said `step v: ...` on stderr where the live run printed nothing: found as
    # an "extra output: stderr ''" on a loaded machine)
    said = stream("stderr", "step v: the value of x is read from the store now\n")
    got, step = user_outputs([said, stream("stdout", "a\n"), STATUS])
    assert got == normalise([stream("stdout", "a\n")])
    assert step.messages == ["step v: the value of x is read from the store now"]


def test_a_message_that_arrived_in_two_stream_messages_is_still_a_message():
    # print() writes the line and its newline apart: a flush between them splits it
    parts = [stream("stderr", "step G1: not cached: G1 cannot be stored"), stream("stderr", "\n")]
    got, step = user_outputs([*parts, STATUS])
    assert got == [] and step.messages == ["step G1: not cached: G1 cannot be stored"]


def test_a_line_the_cell_prints_itself_is_never_taken_for_a_message():
    line = "step 1: loading\n"
    got, step = user_outputs([stream("stderr", line)], plain_stderr=line)
    assert got == [stream("stderr", line)] and step.messages == []


def test_addresses_are_normalised_and_differences_described():
    a = [{"output_type": "execute_result", "data": {"text/plain": "<F at 0x7f3a9c2b1d60>"},
          "metadata": {}}]  # fmt: skip
    b = [{"output_type": "execute_result", "data": {"text/plain": "<F at 0x7f11aa00bb20>"},
          "metadata": {}}]  # fmt: skip
    assert difference(normalise(a), normalise(b)) is None
    err = [{"output_type": "error", "ename": "ValueError", "evalue": "bad", "traceback": ["x"]}]
    assert difference(normalise(a), normalise(err)) == (
        "output 1: execute_result [text/plain] '<F at 0x…>' became error ValueError: 'bad'"
    )
    assert difference(normalise(a), []) == (
        "output 1 missing: execute_result [text/plain] '<F at 0x…>'"
    )


def test_the_cell_file_in_a_warning_is_normalised():
    warn = "/tmp/x/ipykernel_{}/2197516680.py:{}: FutureWarning: old\n  y = f(x)\n"
    plain = normalise([stream("stderr", warn.format(4711, 11))])
    stepped = normalise([stream("stderr", warn.format(4802, 12))])
    assert difference(plain, stepped) is None
    assert plain[0]["text"].startswith("<cell>: FutureWarning: old")


@pytest.mark.parametrize(
    "line, reason",
    [
        ("step v: ran in 0.01 s (new step)", "new step"),
        ("step v: ran in 133 ms (input s1 changed)", "input s1 changed"),
        (
            "step v: ran in 2 min 3 s (expired (computed 3 h ago, ttl 60 min))",
            "expired (computed 3 h ago, ttl 60 min)",
        ),
    ],
)
def test_the_reason_a_step_ran_is_read_whatever_its_duration(line, reason):
    status = {**STATUS, "data": {"text/plain": line}}
    _, step = user_outputs([status])
    assert step.reason == reason


def test_the_replay_is_run_all_alone_and_the_plan_has_a_kernel_of_its_own(tmp_path, capsys):
    # Asked in the replay's kernel, `%step plan` started the engine (its imports, the
    # store) that the replay's first step then found started: the resume looked cheaper.
    nb = write_notebook(tmp_path / "one.ipynb", "a = 2\na * 3")
    out = tmp_path / "report.json"
    rc = cli.main(["verify", str(nb), "--keep", "--json", str(out)])
    text, err = capsys.readouterr()
    report = json.loads(out.read_text())
    scratch = Path(re.search(r"scratch directory kept: (\S+)", err)[1])
    try:
        assert rc == 0, text
        kept = next(scratch.glob("*-one"))
        sources = {
            label: [c.source for c in nbformat.read(kept / f"{label}.ipynb", 4).cells]
            for label in ("stepped", "plan", "replay")
        }
        assert (
            sources["replay"]
            == sources["stepped"]
            == [
                "%load_ext resumable_cells",
                "%%step\na = 2\na * 3",
            ]
        )
        assert sources["plan"][0] == "%load_ext resumable_cells"
        assert sources["plan"][1].startswith("%step plan --notebook ")
        assert cells_of(report)[0]["plan"] == "serve" and cells_of(report)[0]["served"]
        assert set(report["notebooks"][0]["summary"]["pass_wall_s"]) == {
            "plain_1", "plain_2", "stepped", "replay"
        }  # fmt: skip
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
