"""The record's journal beside its rows: `record/{run}.names`, the names finished
executions read, which a kernel reads instead of every row when its first step starts.
It must say what the rows say, even when rows were appended without it."""

from __future__ import annotations

import json
import os

import pytest

from resumable_cells.records.journal import Journal, executions
from resumable_cells.records.staleness import FINAL


def execution(journal: Journal, eid: str, status: str, names: list[str]) -> None:
    journal.append({"id": eid, "status": "running", "start": 1.0, "inputs": []})
    journal.append({"id": eid, "status": status, "inputs": [{"name": n} for n in names]})


def from_rows(journal: Journal) -> set[str]:
    """What the watcher read before the names file: every finished execution's inputs."""
    execs = executions(journal.rows())
    return {i["name"] for e in execs if e["status"] in FINAL for i in e["inputs"]}


def append_raw(journal: Journal, row: dict) -> None:
    """A row appended by a kernel that does not keep the names file (an older version)."""
    with open(journal.path, "a") as f:
        f.write(json.dumps(row) + "\n")


def later(path) -> None:
    """Move a file's time on, as a write a clock tick later would."""
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000))


@pytest.fixture
def journal(tmp_path):
    j = Journal(tmp_path, "run1")
    yield j
    j.close()


def test_the_names_are_those_of_finished_executions_and_survive_a_new_kernel(journal, tmp_path):
    assert journal.input_names() == set()
    execution(journal, "a", "live", ["x", "y"])
    execution(journal, "b", "hit", ["y", "z"])
    execution(journal, "c", "failed", ["only_failed"])
    journal.append({"id": "d", "status": "running", "inputs": [{"name": "never_ended"}]})
    assert journal.input_names() == {"x", "y", "z"} == from_rows(journal)
    journal.close()

    again = Journal(tmp_path, "run1")
    try:
        again.rows = None  # a current names file is all it reads
        assert again.input_names() == {"x", "y", "z"}
    finally:
        again.close()


def test_rows_appended_without_the_names_file_make_it_rebuilt(journal, tmp_path):
    journal.input_names()
    execution(journal, "a", "live", ["x"])
    journal.close()
    append_raw(journal, {"id": "b", "status": "effect", "inputs": [{"name": "from_old"}]})
    later(journal.path)

    again = Journal(tmp_path, "run1")
    try:
        assert again.input_names() == {"x", "from_old"}
        execution(again, "c", "hit", ["after"])
    finally:
        again.close()
    third = Journal(tmp_path, "run1")
    try:
        third.rows = None  # rebuilt and kept since
        assert third.input_names() == {"x", "from_old", "after"}
    finally:
        third.close()


def test_a_store_without_the_names_file_and_a_cut_line_are_read(journal, tmp_path):
    execution(journal, "a", "live", ["x"])  # not read first: no names file is kept
    journal.close()
    assert not journal.names_path.exists()
    again = Journal(tmp_path, "run1")
    try:
        assert again.input_names() == {"x"}
        execution(again, "b", "live", ["y"])
    finally:
        again.close()
    with open(journal.names_path, "a") as f:
        f.write('"cut sho')  # a kernel killed in the middle of its write
    third = Journal(tmp_path, "run1")
    try:
        assert third.input_names() == {"x", "y"}
    finally:
        third.close()


def earlier(path, seconds: float = 1.0) -> None:
    st = os.stat(path)
    back = st.st_mtime_ns - int(seconds * 1e9)
    os.utime(path, ns=(st.st_atime_ns, back))


def test_every_row_leaves_the_names_file_current(journal, tmp_path):
    execution(journal, "a", "live", ["x"])
    journal.input_names()
    earlier(journal.names_path)  # as if written long before the next row
    execution(journal, "b", "failed", ["not_watched"])  # no new name: only touched
    journal.close()
    again = Journal(tmp_path, "run1")
    try:
        again.rows = None
        assert again.input_names() == {"x"}
    finally:
        again.close()


def test_a_row_appended_while_the_rows_are_read_leaves_the_names_file_behind(journal, tmp_path):
    execution(journal, "a", "live", ["x"])
    journal.close()
    earlier(journal.path)
    reader = Journal(tmp_path, "run1")
    read_rows = reader.rows

    def rows_then_another_kernel_appends() -> list[dict]:
        rows = read_rows()
        append_raw(reader, {"id": "b", "status": "live", "inputs": [{"name": "meanwhile"}]})
        return rows

    reader.rows = rows_then_another_kernel_appends
    try:
        assert reader.input_names() == {"x"}  # what it read
    finally:
        reader.close()
    again = Journal(tmp_path, "run1")
    try:
        assert again.input_names() == {"x", "meanwhile"}
    finally:
        again.close()


def test_a_names_file_that_cannot_be_written_leaves_the_rows_read_each_time(journal, tmp_path):
    journal.names_path.parent.mkdir(parents=True)
    journal.names_path.mkdir()  # neither read nor replaced
    execution(journal, "a", "live", ["x"])
    assert journal.input_names() == {"x"}
    execution(journal, "b", "hit", ["y"])  # appends still work: the file is not kept
    journal.close()
    again = Journal(tmp_path, "run1")
    try:
        assert again.input_names() == {"x", "y"}
    finally:
        again.close()


def lines(journal: Journal) -> list[dict]:
    """The rows in the file now, as another process reads them."""
    if not journal.path.exists():
        return []
    return [json.loads(x) for x in journal.path.read_bytes().splitlines() if x.strip()]


def test_an_end_row_waits_and_is_written_with_the_next_row_in_order(journal):
    journal.append({"id": "a", "status": "running", "start": 1.0, "inputs": []})
    merged = journal.append({"id": "a", "status": "live", "inputs": []}, later=True)
    assert merged["status"] == "live"  # this process sees it merged at once
    assert [r["status"] for r in lines(journal)] == ["running"]  # not written yet
    journal.append({"id": "b", "status": "running", "start": 2.0, "inputs": []})
    assert [(r["id"], r["status"]) for r in lines(journal)] == [
        ("a", "running"), ("a", "live"), ("b", "running")
    ]  # fmt: skip


def test_waiting_rows_are_written_by_a_flush_a_read_a_close_or_their_number(journal, tmp_path):
    journal.append({"id": "a", "status": "hit", "start": 1.0, "inputs": []}, later=True)
    journal.flush()
    assert [r["id"] for r in lines(journal)] == ["a"]
    journal.append(
        {"id": "b", "status": "hit", "start": 2.0, "inputs": [{"name": "x"}]}, later=True
    )
    assert [e["id"] for e in journal.executions()] == ["a", "b"]  # (a read writes them first)
    assert [r["id"] for r in lines(journal)] == ["a", "b"]
    assert "x" in journal.input_names()
    journal.append({"id": "c", "status": "hit", "start": 3.0, "inputs": []}, later=True)
    journal.close()
    assert [r["id"] for r in lines(journal)] == ["a", "b", "c"]
    again = Journal(tmp_path, "run1")
    try:
        for i in range(64):  # (a loop of hits: written 64 at a time at the latest)
            again.append({"id": f"h{i}", "status": "hit", "start": 4.0, "inputs": []}, later=True)
        assert len(lines(again)) == 3 + 64
    finally:
        again.close()
