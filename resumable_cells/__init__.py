"""resumable-cells: make long Jupyter notebooks resumable, cell by cell.

`%load_ext resumable_cells` registers the `%%step` cell magic and the `%step` line
magic. The public Python surface is re-exported here.
"""

from __future__ import annotations

from ._version import __version__

__all__ = [
    "__version__",
    "load_ipython_extension",
    "unload_ipython_extension",
    "record",
    "register_hasher",
    "register_state",
    "step",
    "wait_for_writes",
]


def __getattr__(name: str):
    # Imported lazily so that `import resumable_cells` (server extension, CLI) does not
    # pull in IPython's kernel machinery.
    if name == "register_hasher":
        from .hashing import register_hasher

        return register_hasher
    if name == "register_state":
        from .engine.state.process_state import register_state

        return register_state
    if name == "step":
        from .engine.live.step_object import step

        return step
    raise AttributeError(name)


def load_ipython_extension(ipython) -> None:
    from .ipython.magics import load

    load(ipython)


def unload_ipython_extension(ipython) -> None:
    from .ipython.magics import unload

    unload(ipython)


def record() -> list[dict]:
    """The current run's journal: one dict per step execution, oldest first."""
    from .ipython.magics import current_engine

    return current_engine().record()


def wait_for_writes(timeout: float | None = None) -> bool:
    """Wait until the entries this kernel is writing behind are stored (or failed), at
    most `timeout` seconds (None: as long as it takes). Returns whether none is left."""
    from .ipython.magics import current_engine

    return current_engine().wait_for_writes(timeout)


def _jupyter_labextension_paths() -> list[dict]:
    return [{"src": "labextension", "dest": "resumable-cells"}]


def _jupyter_server_extension_points() -> list[dict]:
    return [{"module": "resumable_cells.server"}]
