"""Figures under `%%step` with matplotlib's inline backend (ipykernel's default). The
figures a step draws are outputs of the step: live they come where the plain cell shows
them (after the result: the backend flushes them after the cell), a hit replays them in
the same place, with the same mime bundles and metadata, and the figures are closed as
the backend closes them. Real kernels: each cell runs plain, then as a live step, then
served after a restart."""

from __future__ import annotations

import re

SETUP = "import matplotlib.pyplot as plt\nimport numpy as np\nx = np.arange(20.0)\ny = x ** 0.5"

CELLS = {
    "plot": "plt.plot([1, 2, 3])",
    "subplots": "fig, ax = plt.subplots()\nax.plot([3, 1, 2])",
    "hist-quiet": "plt.hist(x); plt.title('counts');",
    "scatter": "plt.scatter(x, y)",
    "order": "print('a')\nplt.plot([1, 2]);\nprint('b')\n42",
    "show": "plt.plot([1]); plt.show(); print('after')",
    "several": "for i in range(3):\n    plt.figure(); plt.plot([i, 0])",
    "fig-last": "fig = plt.figure(); plt.plot([1, 3]); fig",
    "magic-inside": "%matplotlib inline\nplt.plot([2, 1]);",
}

_ADDRESS = re.compile(r" at 0x[0-9a-f]+")


def shown(reply) -> list[tuple]:
    """The user's outputs as a frontend keeps them (kind, data, metadata), object
    addresses in reprs blanked."""
    out = []
    for o in reply.user_outputs():
        if o["output_type"] == "stream":
            out.append(("stream", o["name"], o["text"]))
        elif o["output_type"] in ("display_data", "execute_result"):
            data = {k: _ADDRESS.sub(" at 0x", v) for k, v in o["data"].items()}
            out.append((o["output_type"], data, o.get("metadata") or {}))
        else:
            out.append((o["output_type"], o.get("ename")))
    return out


def kinds(outputs: list[tuple]) -> list[str]:
    return [o[0] if o[0] != "display_data" else "figure" for o in outputs]


def fignums(kernel) -> list[int]:
    return kernel.value("plt.get_fignums()")


def test_steps_show_and_replay_their_figures_as_the_plain_cells_do(kernel):
    kernel.ok(SETUP)
    plain = {case: shown(kernel.ok(cell, timeout=60)) for case, cell in CELLS.items()}
    steps = {case: f"%%step fig{i}\n{cell}" for i, (case, cell) in enumerate(CELLS.items())}
    live = {}
    for case, step in steps.items():
        r = kernel.ok(step, timeout=60)
        assert "ran" in r.status_lines()[0] and "not cached" not in r.stderr, case
        assert fignums(kernel) == [], case  # closed, as the backend closes them
        live[case] = shown(r)
    kernel.restart()
    kernel.ok("%load_ext resumable_cells")
    kernel.ok(SETUP)
    hit = {}
    for case, step in steps.items():
        r = kernel.ok(step, timeout=60)
        assert "served" in r.status_lines()[0], case
        assert fignums(kernel) == [], case  # a restored figure is not shown again
        hit[case] = shown(r)
    for case in CELLS:
        assert "figure" in kinds(plain[case]), case
        assert live[case] == plain[case], case
        assert hit[case] == live[case], case
    # The plain cell's order: what the body wrote, the result, then the figures.
    assert kinds(hit["order"]) == ["stream", "execute_result", "figure"]
    assert kinds(hit["fig-last"]) == ["execute_result", "figure"]
    assert kinds(hit["several"]) == ["figure"] * 3


def test_a_step_that_fails_after_drawing_shows_the_figure_after_the_error(kernel):
    kernel.ok(SETUP)
    cell = "plt.plot([1]);\nraise ValueError('after drawing')"
    plain = kernel.run(cell)
    step = kernel.run(f"%%step bad\n{cell}")
    assert step.status == "error" and step.error["ename"] == "ValueError"
    assert kinds(shown(step)) == kinds(shown(plain)) == ["error", "figure"]
    assert kernel.value("plt.get_fignums()") == []


def test_figures_left_open_stay_open_and_a_hit_does_not_show_them_twice(kernel):
    kernel.ok("%config InlineBackend.close_figures = False")
    kernel.ok(SETUP)
    cell = "%%step keep\nfig = plt.figure()\nplt.plot([1, 2]);"
    live = shown(kernel.ok(cell))
    assert kinds(live) == ["figure"]
    assert kernel.value("len(plt.get_fignums())") == 1
    kernel.ok("plt.close('all')")
    hit = kernel.ok(cell)
    assert "served" in hit.status_lines()[0]
    assert shown(hit) == live
    assert kernel.value("len(plt.get_fignums())") == 1  # open again, as the live run left it
