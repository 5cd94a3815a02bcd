"""The %%step engine through real kernels: hits after restart, early cutoff, function
edits, in-place mutation, failures and unhashable inputs."""

from __future__ import annotations

import pytest

PIPELINE = [
    "import numpy as np\nimport pandas as pd",
    "%%step load\nraw = pd.DataFrame({'a': np.arange(20.0), 'b': [None if i % 5 == 0 else i for i in range(20)]})\nprint('rows', len(raw))",
    "%%step clean\ndf = raw.copy()\ndf.dropna(inplace=True)\nfrom IPython.display import display, HTML\ndisplay(HTML('<b>clean</b>'))\nprint('after display')\ndf.shape",
    "%%step stats\ntotal = float(df['a'].sum())\nmean_b = float(df['b'].mean())\n(total, mean_b)",
]


def statuses(reply) -> list[str]:
    return reply.status_lines()


def run_all(kernel, cells):
    return [kernel.ok(c) for c in cells]


def test_restart_serves_every_step_with_the_same_namespace_and_outputs(kernel):
    first = run_all(kernel, PIPELINE)
    ns_before = kernel.value("(list(raw['a']), df.shape, total, mean_b)")
    kernel.restart()
    kernel.ok("%load_ext resumable_cells")
    second = run_all(kernel, PIPELINE)
    for a, b in zip(first[1:], second[1:]):
        assert "served from cache" in b.status_lines()[0]
        assert a.user_outputs() == b.user_outputs()
    assert kernel.value("(list(raw['a']), df.shape, total, mean_b)") == ns_before
    record = kernel.value(
        "[(r['step'], r['status']) for r in __import__('resumable_cells').record()]"
    )
    assert record[-3:] == [("load", "hit"), ("clean", "hit"), ("stats", "hit")]


def test_inplace_mutation_of_an_input_is_replayed_on_a_hit(kernel):
    kernel.ok("import pandas as pd\nframe = pd.DataFrame({'x': [1.0, None, 3.0]})")
    cell = "%%step drop\nframe.dropna(inplace=True)"
    kernel.ok(cell)
    assert kernel.value("len(frame)") == 2
    kernel.restart()
    kernel.ok(
        "%load_ext resumable_cells\nimport pandas as pd\nframe = pd.DataFrame({'x': [1.0, None, 3.0]})"
    )
    r = kernel.ok(cell)
    assert "served from cache" in r.status_lines()[0]
    assert kernel.value("len(frame)") == 2


def test_editing_a_middle_step_reruns_only_what_depends_on_its_values(kernel):
    cells = [
        "%%step a\nbase = list(range(10))",
        "%%step b\nevens = [x for x in base if x % 2 == 0]",
        "%%step c\ntotal = sum(evens)",
    ]
    run_all(kernel, cells)
    # An edit that produces the same value: b runs, c is served (early cutoff).
    same = "%%step b\nevens = [x for x in base if not x % 2]"
    replies = [kernel.ok(c) for c in (cells[0], same, cells[2])]
    assert "served" in replies[0].status_lines()[0]
    assert "ran" in replies[1].status_lines()[0] and "code changed" in replies[1].status_lines()[0]
    assert "served" in replies[2].status_lines()[0]
    # An edit that changes the value: b and c run.
    other = "%%step b\nevens = [x for x in base if x % 2]"
    replies = [kernel.ok(c) for c in (cells[0], other, cells[2])]
    assert "served" in replies[0].status_lines()[0]
    assert "ran" in replies[1].status_lines()[0]
    assert "input evens changed" in replies[2].status_lines()[0]
    assert kernel.value("total") == 25


def test_a_function_edit_invalidates_exactly_the_steps_that_reach_it(kernel):
    helpers = "def scale(x):\n    return x * 2\n\ndef wrap(x):\n    return scale(x) + 1\n\ndef other(x):\n    return x - 1"
    steps = [
        "%%step direct\nd = scale(3)",
        "%%step indirect\ni = wrap(3)",
        "%%step unrelated\nu = other(3)",
    ]
    kernel.ok(helpers)
    run_all(kernel, steps)
    kernel.ok(helpers.replace("x * 2", "x * 3"))
    lines = [kernel.ok(c).status_lines()[0] for c in steps]
    assert "ran" in lines[0] and "input scale changed" in lines[0]
    # wrap reads scale: a global of the function a step reaches is an input of its own
    assert "ran" in lines[1] and "input scale changed" in lines[1]
    assert "served" in lines[2]
    assert kernel.value("(d, i, u)") == (9, 10, 2)


def test_a_failing_step_is_not_cached_and_the_cell_errors(kernel):
    r = kernel.run("%%step boom\nvalue = 1\nraise ValueError('no')")
    assert r.status == "error"
    assert r.error["ename"] == "ValueError"
    assert any("line 3" in line for line in r.error["traceback"])
    r = kernel.run("%%step boom\nvalue = 1\nraise ValueError('no')")
    assert r.status == "error"  # ran again: nothing was cached
    statuses_ = kernel.value("[r['status'] for r in __import__('resumable_cells').record()]")
    assert statuses_ == ["error", "error"]


def test_a_failing_steps_traceback_is_the_cell_line_then_the_users_frames(kernel):
    """IPython renders a traceback twice (shown, then kept in its history) and reads the
    source file of every frame it renders: the step's own frames are left out of both."""
    import re

    def text(lines) -> str:
        return re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(lines))

    kernel.ok("def boom():\n    return 1 / 0")
    r = kernel.run("%%step tb\nx = 1\nboom()")
    shown = text(r.error["traceback"])
    assert "run_cell_magic('step', 'tb'" in shown  # the line the user's cell became
    assert "----> 3 boom()" in shown and "return 1 / 0" in shown, shown
    assert "hidden" not in shown and "resumable_cells" not in shown, shown
    kept = kernel.value(
        "(lambda e: e[max(e)]['traceback'])(get_ipython().history_manager.exceptions)"
    )
    assert text(kept) == shown  # rendered once, not again with every frame
    # the same exception raised again in a plain cell: shown whole, as IPython would
    again = text(kernel.run("import sys\nraise sys.last_value").error["traceback"])
    assert "raise sys.last_value" in again and "return 1 / 0" in again, again


def test_an_unhashable_input_runs_live_and_names_its_path(kernel):
    kernel.ok("import threading\ncfg = {'client': threading.Lock(), 'n': 3}")
    r = kernel.ok("%%step use_cfg\nn = cfg['n'] * 2")
    assert "cfg['client']" in r.stderr
    assert "--ignore" in r.stderr and "--effect" in r.stderr and "register_hasher" in r.stderr
    r = kernel.ok("%%step use_cfg\nn = cfg['n'] * 2")
    assert "ran" in r.status_lines()[0]  # never served from a partial key
    r = kernel.ok("%%step use_cfg --ignore cfg\nn = cfg['n'] * 2")
    r = kernel.ok("%%step use_cfg --ignore cfg\nn = cfg['n'] * 2")
    assert "served" in r.status_lines()[0]


def test_an_unstorable_result_runs_and_suggests_effect(kernel):
    r = kernel.ok("%%step sock\nimport socket\ns = socket.socket()\ns.close()")
    assert "s cannot be stored" in r.stderr and "--effect" in r.stderr
    r = kernel.ok("%%step sock\nimport socket\ns = socket.socket()\ns.close()")
    assert "ran" in r.status_lines()[0]


@pytest.mark.parametrize(
    "cell, advice",
    [
        ("g = (i * i for i in range(3))", "A generator runs as it is read"),
        # (a later match of finditer: a search of its string would find the first)
        ("import re\nm = list(re.finditer('a', 'aa'))[1]", "bind what the later cells use (`m.group(1)`"),
        ("class Odd:\n    def __reduce__(self):\n        raise TypeError('no')\no = Odd()",
         "`del o` at the end of the step"),
    ],
    ids=["generator", "match", "other"],
)  # fmt: skip
def test_an_unstorable_value_gets_advice_that_fits_it(kernel, cell, advice):
    r = kernel.ok(f"%%step odd\n{cell}")
    assert "cannot be stored" in r.stderr and advice in r.stderr
    if "del o" not in advice:  # data in passing: running it again is not the way out
        assert "--effect" not in r.stderr


def test_last_expression_and_outputs_replay_in_order(kernel):
    cell = "%%step show\nprint('one')\nfrom IPython.display import display\ndisplay({'k': 1}, raw=False)\nprint('two')\n40 + 2"
    live = kernel.ok(cell)
    kernel.restart()
    kernel.ok("%load_ext resumable_cells")
    hit = kernel.ok(cell)
    assert hit.user_outputs() == live.user_outputs()
    assert hit.result() == "42"
    kinds = [o["output_type"] for o in hit.user_outputs()]
    assert kinds == ["stream", "display_data", "stream", "execute_result"]


def test_a_failing_store_still_runs_the_step_and_warns(kernel):
    kernel.ok(
        "import resource, signal\nsignal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.RLIM_INFINITY))"
    )
    r = kernel.ok("%%step big\nimport numpy as np\narr = np.ones(100_000)")
    assert "not cached" in r.stderr and "store failed" in r.stderr
    assert kernel.value("int(arr.sum())") == 100_000
    kernel.ok(
        "resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))"
    )
    kernel.ok("%%step big\nimport numpy as np\narr = np.ones(100_000)")
    r = kernel.ok("%%step big\nimport numpy as np\narr = np.ones(100_000)")
    assert "served" in r.status_lines()[0]


def test_force_runs_live_and_replaces_the_entry(kernel):
    kernel.ok("%%step f\nx = 1")
    r = kernel.ok("%%step f --force\nx = 1")
    assert "ran" in r.status_lines()[0] and "--force" in r.status_lines()[0]


def test_ipython_syntax_inside_a_step_is_transformed(kernel):
    r = kernel.ok("%%step shell\nout = !echo hi\nlisting = list(out)")
    assert kernel.value("listing") == ["hi"]
    assert "ran" in r.status_lines()[0]


def test_usage_errors_are_one_line(kernel):
    r = kernel.run("%%step --bogus\nx = 1")
    assert r.status == "error" and r.error["ename"] == "UsageError"
    r = kernel.run("%step frobnicate")
    assert r.status == "error" and "unknown subcommand" in r.error["evalue"]


def test_a_syntax_error_points_at_the_cell_line_and_is_recorded(kernel):
    r = kernel.run("%%step bad\nx = 1\ny = (2 +\nz = 3")
    assert r.status == "error" and r.error["ename"] == "SyntaxError"
    assert "line 3" in r.error["evalue"]
    rec = kernel.value("[(e['step'], e['status']) for e in __import__('resumable_cells').record()]")
    assert rec == [("bad", "error")]


def test_quiet_set_with_config_after_load_silences_the_status_line(kernel):
    assert kernel.ok("%%step loud\nx = 1").status_lines()
    kernel.ok("%config StepMagics.quiet = True")
    r = kernel.ok("%%step hushed\ny = 2")
    assert r.status_lines() == [] and kernel.value("y") == 2
    kernel.ok("%config StepMagics.quiet = False")
    assert kernel.ok("%%step loud\nx = 1").status_lines()


def _places(reply) -> list[str]:
    """Each output as the frontend received it: `status` for a status line, else its
    kind (and a stream's text)."""
    out = []
    for o in reply.outputs:
        if "resumable_cells" in (o.get("metadata") or {}):
            out.append("status")
        elif o["output_type"] == "stream":
            out.append(f"{o['name']}:{o['text'].strip()}")
        else:
            out.append(o["output_type"])
    return out


def test_the_status_line_comes_after_the_steps_outputs_and_before_its_result(kernel):
    """Live and served: the status line follows what the step printed and displayed,
    and precedes the cell's result; a step that printed nothing too."""
    shows = "%%step shows\nprint('one')\ndisplay({'k': 1}, raw=False)\nprint('two')\n40 + 2"
    want = ["stdout:one", "display_data", "stdout:two", "status", "execute_result"]
    assert _places(kernel.ok(shows)) == want
    assert _places(kernel.ok(shows)) == want  # served
    assert _places(kernel.ok("%%step silent\n6 * 7")) == ["status", "execute_result"]
    assert _places(kernel.ok("%%step silent\n6 * 7")) == ["status", "execute_result"]


def test_status_lines_of_steps_a_cell_runs_in_a_loop_keep_their_places(kernel):
    """Steps run from a plain cell, with prints between them: every status line
    reaches the frontend, in order with the prints, before the cell ends."""
    loop = (
        "for i in range(3):\n"
        "    get_ipython().run_cell_magic('step', f'loop{i}', f'v{i} = {i}')\n"
        "    print(i)"
    )
    want = ["status", "stdout:0", "status", "stdout:1", "status", "stdout:2"]
    assert _places(kernel.ok(loop)) == want
    assert _places(kernel.ok(loop)) == want  # served
