"""Random object graphs across steps (hypothesis): lists, dicts and numpy arrays with
shared members, bound in several steps and mutated through random aliases and views,
leave the same namespace after a restart and the same cells (every step served) as
after the live run: the same values and the same identity relations between all the
objects the names reach, and the same memory shared between arrays."""

from __future__ import annotations

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from replay import replay

# Defined in a plain cell, in both kernels: a canonical picture of what the names hold.
# Each object reached gets a number in order of first visit, so that two names, or a
# name and a member, holding one object show the same number; arrays also list which
# other arrays share their memory.
SIGNATURE = """
import numpy as np

def _signature(names):
    seen, arrays = {}, []
    def walk(v):
        if isinstance(v, (int, float, str)) or v is None:
            return repr(v)
        if id(v) in seen:
            return f"@{seen[id(v)]}"
        seen[id(v)] = len(seen)
        me = seen[id(v)]
        if isinstance(v, list):
            return f"#{me}[" + ",".join(walk(x) for x in v) + "]"
        if isinstance(v, dict):
            return f"#{me}{{" + ",".join(f"{k!r}:{walk(x)}" for k, x in v.items()) + "}"
        if isinstance(v, np.ndarray):
            arrays.append((me, v))
            return f"#{me}a{v.tolist()}"
        return f"#{me}?{type(v).__name__}"
    out = [f"{n}={walk(globals()[n])}" for n in names if n in globals()]
    mem = sorted((a, b) for a, x in arrays for b, y in arrays if a < b and np.shares_memory(x, y))
    return "; ".join(out) + f" | shared memory {mem}"
"""


@st.composite
def programs(draw) -> tuple[list[str], list[str]]:
    """(cells, names): steps of one to three lines over a few names, with a plain cell
    now and then, each line valid for the kinds the names hold at that point."""
    kinds: dict[str, str] = {}  # name -> "list" | "dict" | "array"
    lines_out: list[str] = []
    for i in range(draw(st.integers(4, 10))):
        lines_out.append(_line(draw, kinds, f"n{i}"))
    cells, pos = [], 0
    while pos < len(lines_out):
        size = draw(st.integers(1, 3))
        body = "\n".join(lines_out[pos : pos + size])
        plain = draw(st.integers(0, 5)) == 0
        cells.append(body if plain else f"%%step s{len(cells)}\n{body}")
        pos += size
    return cells, sorted(kinds)


def _line(draw, kinds: dict, new: str) -> str:
    """One line binding `new` or changing an existing name. `kinds[name]` is "list",
    "dict" or the length of an array."""
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
        member = draw(st.sampled_from(names)) if names else "0"
        return f"{new} = {{'m': {member}, 'k': {draw(st.integers(0, 9))}}}"
    if op == "array":
        kinds[new] = draw(st.integers(4, 12))
        return f"{new} = np.arange({kinds[new]}.0)"
    if op == "alias":
        src = draw(st.sampled_from(names))
        kinds[new] = kinds[src]
        return f"{new} = {src}"
    if op == "view":
        src = draw(st.sampled_from(arrays))
        start = draw(st.integers(0, kinds[src] - 1))
        step = draw(st.integers(1, 2))
        kinds[new] = len(range(start, kinds[src], step))
        return f"{new} = {src}[{start}::{step}]"
    if op == "write":
        target = draw(st.sampled_from(arrays))
        where = draw(st.sampled_from(["[0]", "", "[-1:]"]))
        return f"{target}{where} += {draw(st.integers(1, 9))}"
    if op == "member":  # what it holds is not tracked: it is only ever a value after
        target = draw(st.sampled_from(containers))
        kinds[new] = "member"
        return f"{new} = {target}[{'0' if kinds[target] == 'list' else repr('m')}]"
    target = draw(st.sampled_from(containers))
    value = draw(st.sampled_from([*names, "7"]))
    if kinds[target] == "dict":
        return f"{target}['{new}'] = {value}"
    return f"{target}.append({value})"


@given(program=programs())
@settings(
    max_examples=12,
    deadline=None,
    phases=(Phase.explicit, Phase.generate),  # no shrinking: each example takes two kernels
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_random_shared_graphs_come_back_as_they_were_live(kernel, tmp_path_factory, program):
    cells, names = program
    store = tmp_path_factory.mktemp("store")
    kernel.restart()  # each example starts from a new kernel and an empty store
    kernel.ok("%load_ext resumable_cells")
    setup = [SIGNATURE, f"%step config --dir {store}"]
    live, again = replay(kernel, [*setup, *cells], f"_signature({names!r})")
    assert again == live, "\n".join(cells)
