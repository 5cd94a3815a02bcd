"""Random object graphs across steps (hypothesis), without a kernel: lists, dicts and
numpy arrays with shared members, bound in several steps and mutated through random
aliases and views, leave the same namespace after a restart and the same cells (every
step served) as after the live run: the same values, the same identities between all
the objects the names reach, the same memory shared between arrays (the property of
tests/test_sharing_random.py, at the speed of the object core)."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from nokernel import Notebook


def signature(ns: dict, names: list[str]) -> str:
    """A canonical picture of what the names hold: each object reached gets a number in
    order of first visit, so that two holders of one object show the same number; then
    which arrays share memory."""
    seen: dict[int, int] = {}
    arrays: list[tuple[int, np.ndarray]] = []

    def walk(v) -> str:
        if isinstance(v, (int, float, str)) or v is None:
            return repr(v)
        if id(v) in seen:
            return f"@{seen[id(v)]}"
        me = seen[id(v)] = len(seen)
        if isinstance(v, list):
            return f"#{me}[" + ",".join(walk(x) for x in v) + "]"
        if isinstance(v, dict):
            return f"#{me}{{" + ",".join(f"{k!r}:{walk(x)}" for k, x in v.items()) + "}"
        if isinstance(v, np.ndarray):
            arrays.append((me, v))
            return f"#{me}a{v.tolist()}"
        return f"#{me}?{type(v).__name__}"

    out = [f"{n}={walk(ns[n])}" for n in names if n in ns]
    mem = [(a, b) for a, x in arrays for b, y in arrays if a < b and np.shares_memory(x, y)]
    return "; ".join(out) + f" | shared memory {sorted(mem)}"


@st.composite
def programs(draw) -> tuple[list[str], list[str]]:
    """(cells, names): steps of one to four lines over a few names, with a plain cell
    now and then, each line valid for the kinds the names hold at that point; a line
    takes what it uses from the names its own cell made half of the time (values that
    share objects between themselves only)."""
    kinds: dict[str, object] = {}  # name -> "list" | "dict" | "member" | an array's length
    cells, count = ["import numpy as np"], 0
    for _ in range(draw(st.integers(2, 5))):
        made: list[str] = []
        lines = []
        for _ in range(draw(st.integers(1, 4))):
            new, count = f"n{count}", count + 1
            lines.append(_line(draw, kinds, new, made))
            made += [new] if new in kinds else []
        body = "\n".join(lines)
        plain = draw(st.integers(0, 5)) == 0
        cells.append(body if plain else f"%%step s{len(cells)}\n{body}")
    return cells, sorted(kinds)


def _pick(draw, names: list[str], made: list[str]) -> str:
    """One of `names`, one of those `made` in this cell half of the time."""
    ours = [n for n in names if n in made]
    return draw(st.sampled_from(ours if ours and draw(st.booleans()) else names))


def _line(draw, kinds: dict, new: str, made: list[str]) -> str:
    names = sorted(kinds)
    containers = [n for n in names if kinds[n] in ("list", "dict")]
    arrays = [n for n in names if isinstance(kinds[n], int)]
    options = ["list", "dict", "array"]
    options += ["alias"] if names else []
    options += ["append", "setitem", "member"] if containers else []
    options += ["view", "write"] if arrays else []
    op = draw(st.sampled_from(options))
    if op == "list":
        kinds[new] = "list"
        return f"{new} = [{draw(st.integers(0, 9))}]"
    if op == "dict":
        kinds[new] = "dict"
        member = _pick(draw, names, made) if names else "0"
        return f"{new} = {{'m': {member}, 'k': {draw(st.integers(0, 9))}}}"
    if op == "array":
        kinds[new] = draw(st.integers(4, 12))
        return f"{new} = np.arange({kinds[new]}.0)"
    if op == "alias":
        src = _pick(draw, names, made)
        kinds[new] = kinds[src]
        return f"{new} = {src}"
    if op == "view":
        src = _pick(draw, arrays, made)
        start, step = draw(st.integers(0, kinds[src] - 1)), draw(st.integers(1, 2))
        kinds[new] = len(range(start, kinds[src], step))
        return f"{new} = {src}[{start}::{step}]"
    if op == "write":
        target = _pick(draw, arrays, made)
        where = draw(st.sampled_from(["[0]", "", "[-1:]"]))
        return f"{target}{where} += {draw(st.integers(1, 9))}"
    if op == "member":  # what it holds is not tracked: it is only ever a value after
        target = _pick(draw, containers, made)
        kinds[new] = "member"
        return f"{new} = {target}[{'0' if kinds[target] == 'list' else repr('m')}]"
    target = _pick(draw, containers, made)
    value = _pick(draw, names, made) if draw(st.integers(0, 3)) else "7"
    if kinds[target] == "dict":
        return f"{target}['{new}'] = {value}"
    return f"{target}.append({value})"


@given(program=programs())
@settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
def test_random_shared_graphs_come_back_as_they_were_live(store, program):
    cells, names = program
    notebook = Notebook(store)  # a new notebook, its own entries (the blobs are shared)
    live, again = notebook.replay(cells, lambda ns: signature(ns, names))
    assert again == live, "\n".join(cells)
