"""The one staleness function (`resumable_cells.records.staleness`), on records written by hand:
rows are steps in cells, any later value of an input makes a row stale unless it flows
from the row itself, and staleness reaches what reads a stale row. A kernel's `Ledger`,
told of executions and changes as they come, answers as the functions do over the whole
record."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from resumable_cells.records.staleness import Change, Ledger, causes, step_rows

T = 1_000.0


def ex(step, t, *, cell=None, n=None, reads=(), binds=(), status="live", saved=0.0):
    return {
        "step": step, "cell_id": cell, "execution_count": n, "status": status, "start": t,
        "duration_s": 1.0, "saved_s": saved, "reason": None,
        "inputs": [{"name": k, "digest": d} for k, d in reads],
        "outputs": [{"name": k, "digest": d} for k, d in binds],
    }  # fmt: skip


def quickstart(*later, changes=()):
    """ridge read by fit and bootstrap; coef by evaluate; scores by report."""
    execs = [
        ex("fit", T + 1, cell="f1", n=3, reads=[("ridge", "r1")], binds=[("coef", "c1")]),
        ex("bootstrap", T + 2, cell="b", n=4, reads=[("ridge", "r1")], binds=[("boots", "b1")]),
        ex("evaluate", T + 3, cell="e1", n=5, reads=[("coef", "c1")], binds=[("scores", "s1")]),
        ex("report", T + 4, cell="r", n=6, reads=[("scores", "s1")], binds=[("worst", "w1")]),
        *later,
    ]
    return causes(execs, changes)


def test_a_parameter_cell_makes_every_reader_stale_and_what_follows():
    ridge = Change("ridge", "r10", T + 10, "In [7]")
    assert quickstart(changes=[ridge]) == {
        ("fit", "f1"): "ridge changed (In [7])",
        ("bootstrap", "b"): "ridge changed (In [7])",
        ("evaluate", "e1"): "coef comes from stale step fit",
        ("report", "r"): "scores comes from stale step evaluate",
    }


def test_rerunning_one_reader_leaves_the_other_stale():
    ridge = Change("ridge", "r10", T + 10, "In [7]")
    refit = ex("fit", T + 11, cell="f1", n=8, reads=[("ridge", "r10")], binds=[("coef", "c10")])
    stale = quickstart(refit, changes=[ridge])
    assert stale[("bootstrap", "b")] == "ridge changed (In [7])"
    assert stale[("evaluate", "e1")] == "coef changed by step fit (In [8])"
    assert stale[("report", "r")] == "scores comes from stale step evaluate"
    assert ("fit", "f1") not in stale


def test_going_back_to_the_same_value_is_fresh():
    there = Change("ridge", "r10", T + 10, "In [7]")
    back = Change("ridge", "r1", T + 11, "In [8]")
    assert quickstart(changes=[there, back]) == {}


def test_each_cell_is_its_own_row():
    execs = [
        ex("fit", T + 1, cell="f1", n=3, reads=[("ridge", "r1")], binds=[("coef", "c1")]),
        ex("fit", T + 3, cell="f2", n=5, reads=[("ridge", "r100")], binds=[("coef", "c100")]),
        ex("fit", T + 5, cell="f3", n=7, reads=[("ridge", "r1")], binds=[("coef", "c1")],
           status="hit", saved=0.6),
    ]  # fmt: skip
    changes = [Change("ridge", "r100", T + 2, "In [4]"), Change("ridge", "r1", T + 4, "In [6]")]
    rows = step_rows(execs, causes(execs, changes))
    assert [(r["step"], r["cell_id"], r["status"], r["stale"]) for r in rows] == [
        ("fit", "f1", "live", False),
        ("fit", "f2", "live", True),
        ("fit", "f3", "hit", False),
    ]
    assert rows[1]["stale_cause"] == "ridge changed (In [6])"
    assert rows[2]["saved_s"] == 0.6 and rows[0]["saved_s"] == 0.0
    assert [r["execution_count"] for r in rows] == [3, 5, 7]


def test_a_chain_that_rebinds_its_input_is_not_stale():
    execs = [
        ex("t1", T + 1, reads=[("state", "s0")], binds=[("state", "s1")]),
        ex("t2", T + 2, reads=[("state", "s1")], binds=[("state", "s2")]),
        ex("clean", T + 3, reads=[("df", "d0")], binds=[("df", "d1")]),
    ]
    assert causes(execs) == {}
    # a plain cell that goes on from a step's output continues it too
    on = Change("df", "d2", T + 4, "In [9]", reads=frozenset({"df"}))
    assert causes(execs, [on]) == {}


def test_a_producer_that_binds_another_value_makes_its_readers_stale():
    execs = [
        ex("load", T + 1, n=2, binds=[("rows", "a")]),
        ex("clean", T + 2, n=3, reads=[("rows", "a")], binds=[("kept", "k")]),
        ex("summary", T + 3, n=4, reads=[("kept", "k")], binds=[("total", "t")]),
        ex("load", T + 4, n=5, binds=[("rows", "b")]),
    ]
    assert causes(execs) == {
        (("clean", None)): "rows changed by step load (In [5])",
        (("summary", None)): "kept comes from stale step clean",
    }
    # the producer ran again and bound the same value: nothing is stale (early cutoff)
    execs.append(ex("load", T + 5, n=6, binds=[("rows", "a")]))
    assert causes(execs) == {}


def test_deleted_and_changed_in_place_say_so():
    execs = [ex("use", T + 1, reads=[("df", "d0"), ("k", "k0")], binds=[("out", "o")])]
    gone = Change("k", None, T + 2, "In [4]", how="deleted")
    assert causes(execs, [gone]) == {("use", None): "k was deleted (In [4])"}
    edited = Change("df", "d9", T + 2, how="changed in place")
    assert causes(execs, [edited]) == {("use", None): "df changed in place"}


def test_errors_and_refusals_keep_the_last_good_execution_for_staleness():
    execs = [
        ex("fit", T + 1, cell="f", reads=[("ridge", "r1")], binds=[("coef", "c1")]),
        ex("fit", T + 2, cell="f", reads=[("ridge", "r1")], status="error"),
    ]
    rows = step_rows(execs, causes(execs, [Change("ridge", "r2", T + 3, "In [5]")]))
    assert rows[0]["status"] == "error" and rows[0]["stale"] is True


def test_a_cause_quotes_prompts_of_this_kernel_session_only():
    def refit(session):
        return {
            **ex("fit", T + 11, cell="f1", n=8, reads=[("ridge", "r10")], binds=[("coef", "c10")]),
            "session": session,
        }

    execs = [
        {**ex("fit", T + 1, cell="f1", n=3, reads=[("ridge", "r1")], binds=[("coef", "c1")]),
         "session": "k-1"},
        {**ex("evaluate", T + 3, cell="e1", n=5, reads=[("coef", "c1")]), "session": "k-1"},
    ]  # fmt: skip
    now = causes([*execs, refit("k-2")], session="k-2")
    assert now[("evaluate", "e1")] == "coef changed by step fit (In [8])"
    # a restart later: In [8] is a prompt of a session that is gone
    later = causes([*execs, refit("k-2")], session="k-3")
    assert later[("evaluate", "e1")] == "coef changed by step fit (earlier session)"


# -- the Ledger: the same answers, one execution and change at a time ---------------------
NAMES = ("x", "y", "z")
DIGESTS = ("1", "2", None)


@st.composite
def histories(draw):
    """Executions (equal starts too), each arriving at its start and, most of them, again
    later with its end; changes arriving in between; and the moment a kernel first asks
    (the ledger is built from the record then, and told of the rest)."""
    pairs = st.tuples(st.sampled_from(NAMES), st.sampled_from(DIGESTS))
    execs = []
    for i in range(draw(st.integers(0, 14))):
        status = draw(st.sampled_from(("live", "hit", "effect", "error", "refused", "running")))
        execs.append({
            "id": f"e{i}", "session": draw(st.sampled_from(("k-1", "k-2"))),
            "step": draw(st.sampled_from(("a", "b", "c"))),
            "cell_id": draw(st.sampled_from((None, "c1", "c2"))),
            "execution_count": draw(st.sampled_from((None, i + 1))),
            "status": status, "reason": draw(st.sampled_from((None, "new code"))),
            "start": float(draw(st.integers(0, 20))), "computed": None, "provenance": None,
            "duration_s": draw(st.sampled_from((None, 0.5, 2.0))),
            "saved_s": draw(st.sampled_from((0.0, 0.25, 1.5))) if status == "hit" else 0.0,
            "inputs": [{"name": n, "digest": d} for n, d in draw(st.lists(pairs, max_size=3))],
            "outputs": [{"name": n, "digest": d} for n, d in draw(st.lists(pairs, max_size=2))],
        })  # fmt: skip
    events: list[tuple[str, object]] = []
    ends: list[dict] = []  # ran, not yet ended
    for e in execs:  # (starts out of order too: a clock set back)
        first = draw(st.sampled_from(("whole", "running", "running", "effect", "hit")))
        if first == "whole":  # one row, as a hit's
            events.append(("execution", e))
        else:  # a start row, or (as the journal allows) one that an end row overrides
            events.append(("execution", {**e, "status": first, "outputs": [],
                                         "duration_s": 3.0, "saved_s": 0.75}))  # fmt: skip
            ends.append(e)
        while ends and draw(st.booleans()):
            events.append(("execution", ends.pop(draw(st.integers(0, len(ends) - 1)))))
        if draw(st.booleans()):
            name, digest = draw(pairs)
            t = draw(st.integers(0, 20)) + 0.5 * draw(st.integers(0, 1))
            events.append(("change", Change(name, digest, t, "In [9]", how="changed")))
    events += [("execution", e) for e in ends]
    return events, draw(st.integers(0, len(events)))


def record_of(events) -> list[dict]:
    """What the journal reads: each execution's last state, in start order (stable in
    the order executions first appeared)."""
    latest: dict[str, dict] = {}
    for kind, ev in events:
        if kind == "execution":
            latest[ev["id"]] = ev
    return sorted(latest.values(), key=lambda e: e["start"])


@settings(max_examples=400, deadline=None)
@given(histories())
def test_a_ledger_told_as_things_happen_answers_as_the_whole_record(history):
    events, asked = history
    before, after = events[:asked], events[asked:]
    changes = [ev for kind, ev in before if kind == "change"]
    ledger = Ledger(record_of(before), changes, session="k-2")
    for kind, ev in after:
        if kind == "execution":
            ledger.execution(ev)
        else:
            ledger.change(ev)
            changes.append(ev)
    execs = record_of(events)
    expected = causes(execs, changes, session="k-2")
    assert ledger.causes() == expected
    assert ledger.rows() == step_rows(execs, expected)


def test_a_value_read_comes_from_the_last_step_that_bound_it_before():
    execs = [
        ex("load", T + 1, reads=[("p", "p1")], binds=[("x", "1")]),
        ex("other", T + 2, binds=[("x", "2")]),
        ex("fresh", T + 3, binds=[("x", "1")]),
        ex("use", T + 4, reads=[("x", "1")]),
    ]
    assert causes(execs, [Change("p", "p2", T + 5, "In [6]")]) == {
        ("load", None): "p changed (In [6])"
    }
    assert causes([*execs[:2], execs[3]], [Change("p", "p2", T + 5, "In [6]")]) == {
        ("load", None): "p changed (In [6])",
        ("use", None): "x comes from stale step load",
    }


def test_a_ledger_takes_an_execution_again_when_it_ends():
    ledger = Ledger(session="k")
    start = {**ex("fit", T + 1, cell="f", reads=[("ridge", "r1")]), "id": "e1", "session": "k"}
    ledger.execution({**start, "status": "running", "duration_s": None})
    assert ledger.rows()[0]["status"] == "running" and ledger.causes() == {}
    ledger.execution({**start, "outputs": [{"name": "coef", "digest": "c1"}]})
    ledger.change(Change("ridge", "r2", T + 2, "In [4]"))
    [row] = ledger.rows()
    assert (row["status"], row["executions"], row["duration_s"]) == ("live", 1, 1.0)
    assert row["stale_cause"] == "ridge changed (In [4])"
