"""Random notebooks run the way users run them (hypothesis, `sequences.py`), in a plain
kernel and a `%%step` kernel side by side: in order, then cells run again, edited, plain
cells changing values between steps, restarts (clean and by a crash) and Run All again.
Every execution must show what the plain kernel shows (its printed text, its result, its
error), and what the names reach must be the same objects in the same relations."""

from __future__ import annotations

import os
import re

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from kernels import Kernel
from sequences import PROBE, PROBE_SETUP, Cell, Session, sessions

# No cell drawn prints such a line.
ADVICE = re.compile(r"step [\w, -]+: ")
# Where a warning says it was raised: a file named by the kernel's process and the code.
CELL_FILE = re.compile(r"\S*ipykernel_\d+/\d+\.py:(\d+)")
ADDRESS = re.compile(r" at 0x[0-9a-f]+")
EXAMPLES = int(os.environ.get("RESUMABLE_CELLS_SEQUENCES", "10"))


def shown(reply, first_line: int = 1) -> list[tuple]:
    """What a frontend shows of an execution, without the extension's status lines and
    its advice (lines on stderr naming the step: `step a: calls random.random() ...`).
    A warning names its line counted from the cell's `first_line` (2 in a `%%step` cell:
    its line 1 is the magic's, as the frontend numbers it)."""
    out: list[tuple] = []
    for o in reply.user_outputs():
        kind = o["output_type"]
        if kind == "stream":
            text = o["text"]
            if o["name"] == "stderr":
                text = "".join(line for line in text.splitlines(True) if not ADVICE.match(line))
            text = CELL_FILE.sub(lambda m: f"<cell>:{int(m[1]) - first_line + 1}", text)
            if text:
                out.append((o["name"], text))
        elif kind == "error":
            out.append(("error", o["ename"], o["evalue"]))
        else:
            out.append((kind, o["data"].get("text/plain")))
    # a container printed with a function or an iterator in it shows its address
    return [tuple(ADDRESS.sub(" at 0x", x) if isinstance(x, str) else x for x in o) for o in out]


class Pair:
    """A plain kernel and a stepped one, run alike."""

    def __init__(self, root):
        (root / "plain").mkdir()
        (root / "stepped").mkdir()
        self.plain = Kernel(root / "plain")
        self.stepped = Kernel(root / "stepped", env={"JPY_SESSION_NAME": "random.ipynb"})
        self.store = None

    def start(self, store) -> None:
        self.store = store
        for _ in range(2):  # as many cells as the stepped kernel's two: `Out[n]` is one cell's
            self.plain.ok("pass")
        self.plain.ok(PROBE_SETUP)
        self.stepped.ok("%load_ext resumable_cells")
        self.stepped.ok(f"%step config --dir {store}")
        self.stepped.ok(PROBE_SETUP)

    def restart(self, how: str) -> None:
        self.plain.restart()
        if how == "kill":
            self.stepped.kill()
        else:
            self.stepped.restart(clean=True)
        self.start(self.store)

    def both(self, plain_code: str, stepped_code: str) -> tuple[list, list, list[str]]:
        p = self.plain.run(plain_code)
        s = self.stepped.run(stepped_code)
        return shown(p), shown(s, 1 + (stepped_code != plain_code)), s.status_lines()

    def shutdown(self) -> None:
        self.plain.shutdown()
        self.stepped.shutdown()


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    p = Pair(tmp_path_factory.mktemp("pair"))
    yield p
    p.shutdown()


def play(pair: Pair, session: Session, store) -> None:
    pair.plain.restart()
    pair.stepped.restart(clean=True)
    pair.start(store)
    cells = list(session.cells)
    for n, op in enumerate(session.ops):
        if op[0] == "restart":
            pair.restart(op[1])
            continue
        if op[0] == "edit":
            cells[op[1]] = Cell(op[2], cells[op[1]].plain)
            op = ("run", op[1])
        if op[0] == "run":
            code = cells[op[1]]
            p, s, lines = pair.both(code.body, code.code())
        elif op[0] == "plain":
            p, s, lines = pair.both(op[1], op[1])
        else:
            p, s, lines = pair.both(PROBE, PROBE)
        assert s == p, (
            f"operation {n} {op!r} differs\nplain:   {p}\nstepped: {s}\nstatus: {lines}\n"
            + session.describe()
        )


@given(session=sessions())
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    phases=(Phase.explicit, Phase.generate),  # no shrinking: an example takes seconds
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_a_random_notebook_shows_under_step_what_it_shows_plain(pair, tmp_path_factory, session):
    play(pair, session, tmp_path_factory.mktemp("store"))
