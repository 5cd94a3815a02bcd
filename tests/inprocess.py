"""Engines in this process, on IPython's own in-process shell: for tests of the engine's
parts (the plan, the claim) that need a real engine and store but no kernel."""

from __future__ import annotations

from pathlib import Path

from IPython.testing import globalipapp

from resumable_cells.engine.execution import run_step
from resumable_cells.engine.kernel import Engine
from resumable_cells.engine.live import step_object
from resumable_cells.ipython import stepargs
from resumable_cells.storage.store import Store


def shell():
    """IPython's shell for tests (one per process), its namespace emptied, `step` in it."""
    globalipapp.start_ipython()
    sh = globalipapp.get_ipython()
    sh.reset(new_session=False)
    sh.push({"step": step_object.step}, interactive=False)  # as %load_ext does
    return sh


def engine(store_dir: Path, sh=None) -> Engine:
    """An engine on `store_dir`, without status lines."""
    eng = Engine(sh if sh is not None else shell(), Store(store_dir))
    eng.quiet = True
    return eng


def close(eng: Engine) -> None:
    eng.close()


def step(eng: Engine, source: str):
    """Run one `%%step` cell (its first line, then its body) as the magic does."""
    line, _, body = source.partition("\n")
    line = line.removeprefix("%%step").strip()
    return run_step(eng, stepargs.parse(line), line, body)
