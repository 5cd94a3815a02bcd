"""Figures under `%%step` with matplotlib's inline backend (ipykernel's default). The
figures a step draws are outputs of the step: live they come where the plain cell shows
them (after the result: the backend flushes them after the cell), a hit replays them in
the same place, with the same mime bundles and metadata, and the figures are closed as
the backend closes them. Real kernels: each cell runs plain, then as a live step, then
served after a restart."""

from __future__ import annotations

import re

SETUP = "import matplotlib.pyplot as plt\nimport numpy as np\nx = np.arange(20.0)\ny = x ** 0.5"

# Cells that draw without binding a matplotlib object or returning one.
DRAWING = {
    "hist-quiet": "plt.hist(x); plt.title('counts');",
    "order": "print('a')\nplt.plot([1, 2]);\nprint('b')\n42",
    "show": "plt.plot([1]); plt.show(); print('after')",
    "several": "for i in range(3):\n    plt.figure(); plt.plot([i, 0]);",
    "magic-inside": "%matplotlib inline\nplt.plot([2, 1]);",
    "effect": ("--effect", "plt.plot([3, 1]);"),
}
# Cells whose result or bindings are figures or artists: their key and entry hash them.
BINDING = {
    "plot": "plt.plot([1, 2, 3])",
    "subplots": "fig, ax = plt.subplots()\nax.plot([3, 1, 2])",
    "scatter": "plt.scatter(x, y)",
    "fig-last": "fig = plt.figure(); plt.plot([1, 3]); fig",
}
_ADDRESS = re.compile(r" at 0x[0-9a-f]+")


def shown(reply) -> list[tuple]:
    """The user's outputs as a frontend keeps them (kind, data, metadata): consecutive
    stream messages of one stream joined, object addresses in reprs blanked."""
    out = []
    for o in reply.user_outputs():
        if o["output_type"] == "stream":
            if out and out[-1][:2] == ("stream", o["name"]):
                out[-1] = ("stream", o["name"], out[-1][2] + o["text"])
            else:
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


def three_ways(kernel, cells: dict) -> tuple[dict, dict, dict]:
    """(plain, live step, hit after a restart) outputs of each cell; a cell is its
    source, or (%%step flags, source)."""
    cells = {case: c if isinstance(c, tuple) else ("", c) for case, c in cells.items()}
    kernel.ok(SETUP)
    plain = {case: shown(kernel.ok(cell, timeout=60)) for case, (_, cell) in cells.items()}
    steps = {
        case: f"%%step fig{i} {flags}\n{cell}"
        for i, (case, (flags, cell)) in enumerate(cells.items())
    }
    live = {}
    for case, step in steps.items():
        r = kernel.ok(step, timeout=60)
        assert "not cached" not in r.stderr, case
        assert fignums(kernel) == [], case  # closed, as the backend closes them
        live[case] = shown(r)
    kernel.restart()
    kernel.ok("%load_ext resumable_cells")
    kernel.ok(SETUP)
    hit = {}
    for case, step in steps.items():
        r = kernel.ok(step, timeout=60)
        if "--effect" not in step:
            assert "served" in r.status_lines()[0], case
        assert fignums(kernel) == [], case  # a restored figure is not shown again
        hit[case] = shown(r)
    for case in cells:
        assert "figure" in kinds(plain[case]), case
        assert live[case] == plain[case], case
        assert hit[case] == live[case], case
    return plain, live, hit


def test_steps_show_and_replay_their_figures_as_the_plain_cells_do(kernel):
    plain, live, hit = three_ways(kernel, DRAWING)
    # The plain cell's order: what the body wrote, the result, then the figures.
    assert kinds(hit["order"]) == ["stream", "execute_result", "figure"]
    assert kinds(hit["show"]) == ["figure", "stream"]  # plt.show() draws where it is called
    assert kinds(hit["several"]) == ["figure"] * 3


def test_steps_binding_figures_and_artists_finish_and_replay_them(kernel):
    plain, live, hit = three_ways(kernel, BINDING)
    assert kinds(hit["fig-last"]) == ["execute_result", "figure"]
    assert hit["fig-last"][0][1]["image/png"]  # the restored figure shows as an image


def test_a_step_that_fails_after_drawing_shows_the_figure_after_the_error(kernel):
    kernel.ok(SETUP)
    cell = "plt.plot([1]);\nraise ValueError('after drawing')"
    plain = kernel.run(cell)
    step = kernel.run(f"%%step bad\n{cell}")
    assert step.status == "error" and step.error["ename"] == "ValueError"
    assert kinds(shown(step)) == kinds(shown(plain)) == ["error", "figure"]
    assert kernel.value("plt.get_fignums()") == []


def test_figures_left_open_stay_open_and_are_shown_once(kernel):
    kernel.ok("%config InlineBackend.close_figures = False")
    kernel.ok(SETUP)
    cell = "%%step keep\nplt.figure()\nplt.plot([1, 2]);"
    live = shown(kernel.ok(cell))
    assert kinds(live) == ["figure"]
    assert kernel.value("len(plt.get_fignums())") == 1  # left open, as the backend does
    kernel.ok("plt.close('all')")
    hit = kernel.ok(cell)
    assert "served" in hit.status_lines()[0]
    assert shown(hit) == live


def test_a_restored_open_figure_is_open_again_and_not_drawn_twice(kernel):
    kernel.ok("%config InlineBackend.close_figures = False")
    kernel.ok(SETUP)
    cell = "%%step keep\nfig = plt.figure()\nplt.plot([1, 2]);"
    live = shown(kernel.ok(cell, timeout=60))
    kernel.ok("plt.close('all')")
    hit = kernel.ok(cell, timeout=60)
    assert "served" in hit.status_lines()[0]
    assert shown(hit) == live
    assert kernel.value("len(plt.get_fignums())") == 1  # open again, as the live run left it


def test_the_first_figure_of_the_kernel_drawn_inside_a_step(kernel):
    # pyplot loads the inline backend at its first figure: here, inside the step.
    cell = "%%step first\nimport matplotlib.pyplot as plt\nplt.plot([1, 2]);"
    live = shown(kernel.ok(cell, timeout=60))
    assert kinds(live) == ["figure"] and live[0][1]["image/png"]
    kernel.restart()
    kernel.ok("%load_ext resumable_cells")
    hit = kernel.ok(cell, timeout=60)
    assert "served" in hit.status_lines()[0]
    assert shown(hit) == live
    assert kernel.value("plt.get_fignums()") == []
