"""Live, restart, the same cells again: the check every sharing and process-state case
makes (`replay`)."""

from __future__ import annotations


def replay(kernel, cells: list[str], probe: str) -> tuple[str, str]:
    """(what `print(repr(probe))` prints after `cells` run live, what it prints after a
    restart and the same cells again); asserts every step of the second pass was served."""
    for c in cells:
        kernel.ok(c)
    live = kernel.ok(f"print(repr({probe}))").stdout
    kernel.restart()
    kernel.ok("%load_ext resumable_cells")
    for c in cells:
        r = kernel.ok(c)
        if c.startswith("%%step"):
            lines = r.status_lines()
            assert lines and "served from cache" in lines[0], (c, lines, r.stderr)
    again = kernel.ok(f"print(repr({probe}))").stdout
    return live, again
