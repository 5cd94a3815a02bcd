"""Library objects across a restart (tests/library_cases.py, one kernel for all cases):
a step declares an object of the class, a second step mutates it; after a restart both
steps run again. Every class whose values pickle must be served twice with a value
that digests as the live one did, unless the engine says the value does not survive
pickling. The results are the table in docs/libraries.md: set
RESUMABLE_CELLS_LIBRARY_TABLE=docs/libraries.md to write it (`make libraries-table`).
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import importlib.util
import json
import os
import re
from pathlib import Path

import pytest
from library_cases import CASES, Case

HERE = Path(__file__).parent
PROBE = """def _library_probe(name):
    import json, pickle
    from resumable_cells.hashing import hex_digest
    v = get_ipython().user_ns[name]
    try:
        pickle.dumps(v)
        pickles = True
    except Exception as e:
        pickles = f"{type(e).__name__}: {e}"[:100]
    try:
        d = hex_digest(v, main_ns=get_ipython().user_ns)
    except Exception as e:
        d = f"unhashable: {e}"[:160]
    t = type(v)
    print(json.dumps([d, pickles, f"{t.__module__}.{t.__qualname__}"]))"""
# The honest refusal: a value whose restored copy differs is not cached (value_check.py).
LOSSY = "does not survive pickling"
# Not served after the restart yet, with the start of the reason (a miss that says why,
# never a wrong value), explained in docs/libraries.md: none now.
KNOWN_MISSES: dict[str, str] = {}


def _available(case: Case) -> bool:
    return importlib.util.find_spec(case.library) is not None


def _cells(i: int, case: Case) -> tuple[str, str]:
    return f"%%step lib{i}_declare\n{case.declare}", f"%%step lib{i}_mutate\n{case.mutate}"


def _outcome(reply) -> tuple[str, str]:
    """(status, note) of one step's reply: hit, live or error, and why not cached."""
    if reply.status != "ok":
        return "error", f"{reply.error['ename']}: {reply.error['evalue']}"[:160]
    lines = " ".join(reply.status_lines())
    note = re.search(r"not cached: ([^\n]*)", reply.stderr)
    status = "hit" if "served from cache" in lines else "live"
    return status, (re.split(r"\. (?=[A-Z`])", note.group(1))[0][:200] if note else "")


def _run(kernel, cases) -> dict[int, dict]:
    kernel.ok("import matplotlib\nmatplotlib.use('agg')")
    kernel.ok(PROBE)
    out = {}
    for i, case in cases:
        steps = [_outcome(kernel.run(cell, timeout=300)) for cell in _cells(i, case)]
        probe = kernel.run(f"_library_probe({case.var!r})", timeout=300)
        try:
            digest, pickles, tname = json.loads(probe.stdout.strip().splitlines()[-1])
        except (IndexError, ValueError):
            digest, pickles, tname = "no probe", "no probe", "?"
        out[i] = {"steps": steps, "digest": digest, "pickles": pickles, "type": tname}
    return out


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    from kernels import Kernel

    cases = [(i, c) for i, c in enumerate(CASES) if _available(c)]
    cwd = tmp_path_factory.mktemp("libraries")
    tmp = cwd / ".tmp"
    tmp.mkdir()
    kernel = Kernel(cwd, env={"JPY_SESSION_NAME": "libraries.ipynb", "TMPDIR": str(tmp)})
    try:
        kernel.ok("%load_ext resumable_cells")
        first = _run(kernel, cases)
        kernel.restart()
        kernel.ok("%load_ext resumable_cells")
        second = _run(kernel, cases)
    finally:
        kernel.shutdown()
    rows = [_row(i, c, first[i], second[i]) for i, c in cases]
    table = os.environ.get("RESUMABLE_CELLS_LIBRARY_TABLE")
    if table:
        Path(table).write_text(_table(rows))
    return rows


def _row(i: int, case: Case, first: dict, second: dict) -> dict:
    (s1a, n1a), (s1b, n1b) = first["steps"]
    (s2a, n2a), (s2b, n2b) = second["steps"]
    note = n2a or n2b or n1a or n1b
    if "error" in (s1a, s1b):
        result = "error in the live run: " + (n1a if s1a == "error" else n1b)
    elif s2a == s2b == "hit" and first["digest"] == second["digest"]:
        result = "served"
    elif s2a == s2b == "hit":
        result = "served, but the value differs after the restart"
    elif note:
        result = "not cached: " + note
    else:
        result = f"not served ({s2a}, {s2b})"
    return {"case": case, "type": first["type"], "pickles": first["pickles"], "result": result}


def test_the_list_has_a_hundred_classes():
    assert len(CASES) >= 100
    assert len({c.cls for c in CASES}) == len(CASES)


def test_every_class_that_pickles_is_served_with_an_equal_value(results):
    wrong = [
        f"{r['case'].cls}: {r['result']}"
        for r in results
        if r["pickles"] is True and r["result"] != "served" and LOSSY not in r["result"]
        and not r["result"].startswith(KNOWN_MISSES.get(r["case"].cls, "\0"))
    ]  # fmt: skip
    assert wrong == [], "\n".join(wrong)
    fixed = [
        r["case"].cls for r in results if r["case"].cls in KNOWN_MISSES and r["result"] == "served"
    ]
    assert fixed == [], f"served now: take them out of KNOWN_MISSES: {fixed}"
    served = sum(r["result"] == "served" for r in results)
    assert served >= 100, f"only {served} classes served"


def test_the_docs_table_lists_every_class():
    text = (HERE.parent / "docs" / "libraries.md").read_text()
    missing = [c.cls for c in CASES if f"| {c.cls} |" not in text]
    assert missing == []


def _table(rows: list[dict]) -> str:
    served = sum(r["result"] == "served" for r in rows)
    versions = {}
    for r in rows:
        lib = r["case"].library
        dist = {"sklearn": "scikit-learn"}.get(lib, lib)
        try:
            versions[lib] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            versions[lib] = "stdlib"
    lines = [
        "# Supported libraries",
        "",
        "Generated by `tests/test_libraries.py` (`make libraries-table`) on "
        f"{dt.date.today().isoformat()}: for each class, one step declares a value, a "
        "second step mutates it, the kernel restarts and both steps run again. **served**: "
        "both steps were served and the value digests as the live one did. A value whose "
        "restored copy would differ is not cached, and the message says so. A value that "
        "the library's own pickling lays out otherwise than the live one (plotly rebuilds a "
        "figure from its dict) is served whole by the mutating step's entry, when nothing "
        "else holds a part of it. A class whose own pickling makes its parts anew "
        "(astropy's Table copies its columns) is restored in place part by part, from its "
        "instance dict rather than its pickled state.",
        "",
        f"{served} of {len(rows)} classes served.",
        "",
        "| library | class | declared | mutated | result |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        c = r["case"]
        lib = f"{c.library} {versions[c.library]}".replace(" stdlib", "")
        lines.append(
            f"| {lib} | {c.cls} | `{_short(c.declare)}` | `{_short(c.mutate)}` | {r['result']} |"
        )
    return "\n".join(lines) + "\n"


def _short(code: str) -> str:
    last = code.strip().splitlines()[-1].replace("|", "\\|")
    return last if len(last) <= 70 else last[:67] + "..."
