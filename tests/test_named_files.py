"""Files a step names, read where Python does not see it (polars' compiled readers), are
inputs of its entry (`engine/live/named_files.py`): through real kernels, a step whose
file changed runs again and says so, whichever way its code names the file; an unchanged
one is served after a restart. And the parts, without a kernel: what counts as a name,
a folder joined to a name, a glob pattern and its digest."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest
from steps import restart, served, status, write

from resumable_cells.engine.live import named_files
from resumable_cells.hashing import files

pytest.importorskip("polars")


def _runs_again_when_the_file_changes(kernel, cell: str, path: Path, first: str, then: str, *setup):
    write(path, first)
    for c in setup:
        kernel.ok(c)
    kernel.ok(cell)
    assert kernel.value("int(total)") == 4
    restart(kernel, "import polars as pl", *setup)
    assert served(kernel.ok(cell)) and kernel.value("int(total)") == 4
    write(path, then)
    line = status(kernel.ok(cell))
    assert "ran" in line and f"{path.name} changed" in line, line
    assert kernel.value("int(total)") == 40


CSV, CSV2 = "a,b\n1,2\n3,4\n", "a,b\n10,2\n30,4\n"


def test_a_file_polars_reads_by_a_literal_path(kernel, tmp_path):
    kernel.ok("import polars as pl")
    cell = "%%step load\ntotal = pl.read_csv('data.csv')['a'].sum()"
    _runs_again_when_the_file_changes(kernel, cell, tmp_path / "data.csv", CSV, CSV2)


def test_a_file_a_notebook_function_names_in_its_body_or_default(kernel, tmp_path):
    kernel.ok("import polars as pl")
    body = "def load():\n    return pl.read_csv('in/body.csv')"
    cell = "%%step viabody\ntotal = load()['a'].sum()"
    _runs_again_when_the_file_changes(kernel, cell, tmp_path / "in" / "body.csv", CSV, CSV2, body)
    default = "def load2(path='in/default.csv'):\n    return pl.read_csv(path)"
    cell = "%%step viadefault\ntotal = load2()['a'].sum()"
    _runs_again_when_the_file_changes(
        kernel, cell, tmp_path / "in" / "default.csv", CSV, CSV2, default
    )


def test_a_path_an_input_holds_or_a_folder_it_names_joined_to_a_name(kernel, tmp_path):
    kernel.ok("import polars as pl")
    setup = "from pathlib import Path\nDATA = Path('sub')\ncfg = {'train': 'sub/train.csv'}"
    cell = "%%step joined\ntotal = pl.read_csv(DATA / 'joined.csv')['a'].sum()"
    _runs_again_when_the_file_changes(
        kernel, cell, tmp_path / "sub" / "joined.csv", CSV, CSV2, setup
    )
    cell = "%%step held\ntotal = pl.read_csv(cfg['train'])['a'].sum()"
    _runs_again_when_the_file_changes(
        kernel, cell, tmp_path / "sub" / "train.csv", CSV, CSV2, setup
    )


def test_a_glob_pattern_runs_again_when_a_file_it_matches_is_added(kernel, tmp_path):
    write(tmp_path / "parts" / "p1.csv", "a,b\n1,2\n")
    write(tmp_path / "parts" / "p2.csv", "a,b\n3,4\n")
    kernel.ok("import polars as pl")
    cell = "%%step parts\ntotal = pl.scan_csv('parts/*.csv').collect()['a'].sum()"
    kernel.ok(cell)
    restart(kernel, "import polars as pl")
    assert served(kernel.ok(cell)) and kernel.value("int(total)") == 4
    write(tmp_path / "parts" / "p3.csv", "a,b\n36,0\n")
    line = status(kernel.ok(cell))
    assert "ran" in line and "parts/*.csv changed" in line, line
    assert kernel.value("int(total)") == 40


def test_a_file_the_step_only_names_does_not_keep_it_from_being_served(kernel, tmp_path):
    write(tmp_path / "notes.txt", "about the run\n")
    cell = "%%step named\nlabel = 'see notes.txt'.split()[1]"
    kernel.ok(cell)
    restart(kernel)
    assert served(kernel.ok(cell)) and kernel.value("label") == "notes.txt"


# -- the parts ------------------------------------------------------------------------------
def test_what_the_strings_and_values_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for p in ("a.csv", "d/b.parquet", "d/c.txt", "cfg.json", "parts/x1.csv", "m.csv", "n.csv"):
        write(tmp_path / p, "x")
    settings = type("Settings", (), {"__module__": "__main__"})()  # a notebook's class
    settings.path = "m.csv"
    found = named_files.candidates(
        ["a.csv", "d", "b.parquet", "missing.csv", "parts/*.csv", "*" * 3, "multi\nline"],
        [Path("cfg.json"), ["d/c.txt", 3], {"k": "nope.csv"}, SimpleNamespace(p="a.csv"), 7]
        + [settings, type("Other", (), {"path": "n.csv"})()],  # (a library's: not looked in)
    )
    assert sorted(found) == ["a.csv", "cfg.json", "d/b.parquet", "d/c.txt", "m.csv", "parts/*.csv"]


def test_a_pattern_s_digest_follows_the_files_it_matches(tmp_path):
    write(tmp_path / "p" / "1.csv", "1")
    pattern = str(tmp_path / "p" / "*.csv")
    first = files.read_digest(pattern)
    assert files.read_digest(pattern) == first
    write(tmp_path / "p" / "2.csv", "2")
    second = files.read_digest(pattern)
    assert second != first
    write(tmp_path / "p" / "2.csv", "22")
    assert files.read_digest(pattern) not in (first, second)
    os.remove(tmp_path / "p" / "1.csv")
    os.remove(tmp_path / "p" / "2.csv")
    with pytest.raises(FileNotFoundError):
        files.read_digest(pattern)


def test_strings_that_cannot_name_a_file():
    assert files.could_name("data/x.csv") and files.could_name("x")
    assert not files.could_name("") and not files.could_name("two\nlines")
    assert not files.could_name("x" * (files.NAME_MAX + 1)) and not files.could_name("   ")
