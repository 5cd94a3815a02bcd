"""Fast tests of the engine's object core, without a kernel: the object graph, restoring
in place, the sharing analysis, writing a unit and reading it back. Each test gets its
own per-user key (the autouse fixture of `tests/conftest.py`) and its own store."""

from __future__ import annotations

import sys

import pytest
from nokernel import Notebook

from resumable_cells.storage import serialize
from resumable_cells.storage.store import Store


@pytest.fixture(autouse=True)
def _main_namespace():
    # A notebook sets the namespace notebook functions and classes are pickled against.
    yield
    serialize.set_main_namespace({})


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "store")
    yield s
    s.close()


@pytest.fixture
def notebook(store):
    return Notebook(store)


@pytest.fixture
def notebook_module(tmp_path, monkeypatch):
    """Make a module of the notebook's own (a file on `sys.path`, outside the Python
    installation): `notebook_module(name, source)`; each is forgotten after the test."""
    made = []

    def make(name: str, source: str) -> str:
        (tmp_path / f"{name}.py").write_text(source)
        made.append(name)
        return name

    monkeypatch.syspath_prepend(str(tmp_path))
    yield make
    for name in made:
        sys.modules.pop(name, None)
