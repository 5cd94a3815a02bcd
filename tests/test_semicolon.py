"""A trailing `;` suppresses a step's result, live and on a hit, as IPython decides it
for a plain cell: nothing displayed, nothing in `_` or `Out`. Real kernels."""

from __future__ import annotations


def restart(kernel) -> None:
    kernel.restart()
    kernel.ok("%load_ext resumable_cells\nv = 5")


def test_a_trailing_semicolon_shows_nothing_live_or_served(kernel):
    kernel.ok("v = 5")
    cells = ["%%step semi\nv;", "%%step semi2\nw = v + 1\nw;  # quiet", "%%step loud\nv * 2"]
    live = [kernel.ok(c) for c in cells]
    restart(kernel)
    served = [kernel.ok(c) for c in cells]
    for r in served:
        assert "served" in r.status_lines()[0]
    for r in live + served:
        assert [o["output_type"] for o in r.user_outputs()] == (
            ["execute_result"] if "loud" in r.status_lines()[0] else []
        )
    assert served[2].result() == "10"
    assert kernel.value("w") == 6


def test_a_suppressed_result_is_not_kept_in_underscore_or_out(kernel):
    kernel.ok("v = 5")
    kernel.ok("123")
    kernel.ok("%%step semi\nv;")
    assert kernel.value("_") == 123
    assert kernel.value("sorted(Out.values())") == [123]


def test_adding_a_semicolon_to_a_served_step_hides_its_result(kernel):
    kernel.ok("v = 5")
    assert kernel.ok("%%step s\nv").result() == "5"
    r = kernel.ok("%%step s\nv;")
    assert r.user_outputs() == []
    r = kernel.ok("%%step s\nv")
    assert r.result() == "5" and "served" in r.status_lines()[0]


def test_a_semicolon_inside_the_last_line_is_not_a_trailing_one(kernel):
    kernel.ok("v = 5")
    r = kernel.ok("%%step s\n'a;b'")
    assert r.result() == "'a;b'"
