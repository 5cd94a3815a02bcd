"""Process state a step changes outside its namespace: recorded in its entry, set again
on a hit.

What is watched, in the order a hit sets it again:

    ipython.magics   line magics that configure the kernel (`%matplotlib`, `%config`,
                     `%load_ext`, `%autoreload`, `%precision`, `%xmode`, ...): called again
    cwd              the working directory (recorded relative to where it was)
    sys.path         entries added at the front or the end, entries removed
    environ          variables set or removed (`os.environ`)
    warnings         the warning filters (`warnings.simplefilter`, `filterwarnings`)
    recursionlimit   `sys.setrecursionlimit`
    ipython.interactivity   what IPython displays of a cell (`ast_node_interactivity`)
    random           the state of the `random` module's generator
    numpy.random     the state of numpy's global generator (`np.random.seed`, draws)
    numpy.print      numpy's print options (`np.set_printoptions`)
    numpy.errors     numpy's floating-point error handling (`np.seterr`)
    matplotlib.rc    matplotlib's rcParams, and so styles (`plt.style.use`), but the backend
    pandas.options   pandas' options (`pd.set_option`)

then what `register_state(name, get, set)` added. A library's state is watched only once
the library is imported; one imported by the step itself has its whole state recorded.

`watching(shell)` around a live step (a snapshot, and the configuring magics it calls),
`changes(watch)` after it: the changes, each as
small as it can be (the keys that changed, not the whole state). A snapshot is cheap:
where copying a state costs more than comparing it (environ, rcParams) the previous
snapshot is reused while the process still matches it, and the numpy generator is
compared by its raw state. A change that cannot be recorded (a value that does not
pickle, a state that cannot be read) raises Unfaithful: the step is not cached.
`apply(changes)` sets them again; one that fails is said and logged, never fatal.
"""

from __future__ import annotations

import copy
import io
import logging
import os
import random
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from typing import Any

from ..errors import Unfaithful
from ..storage import serialize

log = logging.getLogger(__name__)


class State:
    """One part of the process state. `take()` a snapshot; `differs(snapshot)` whether
    the process left it (cheap); `change(before, after)` what to record, given both
    snapshots (`before` None when the library was imported by the step); `put(change)`
    set it again."""

    module: str | None = None  # watched once this module is imported

    def __init__(self, name: str, take, put, differs=None, change=None, module=None):
        self.name = name
        self.take = take
        self.put = put
        self.differs = differs or (lambda snap: take() != snap)
        self.change = change or (lambda before, after: after)
        self.module = module


def _environ_take() -> dict:
    # os.environ's own dict of encoded strings copies 100x faster than os.environ
    data = getattr(os.environ, "_data", None)
    return (
        dict(data)
        if isinstance(data, dict)
        else {os.fsencode(k): os.fsencode(v) for k, v in os.environ.items()}
    )


def _environ_differs(snap: dict) -> bool:
    data = getattr(os.environ, "_data", None)
    return (data if isinstance(data, dict) else _environ_take()) != snap


def _environ_change(before: dict | None, after: dict) -> dict:
    before = before or {}
    return {
        "set": {os.fsdecode(k): os.fsdecode(v) for k, v in after.items() if before.get(k) != v},
        "unset": [os.fsdecode(k) for k in before if k not in after],
    }


def _environ_put(change: dict) -> None:
    for k, v in change["set"].items():
        os.environ[k] = v
    for k in change["unset"]:
        os.environ.pop(k, None)


def _cwd_change(before: str | None, after: str) -> str:
    return os.path.relpath(after, before) if before else after


def seq_change(before: list | None, after: list) -> dict:
    """A list's change as what was added in front, removed, and added at the end, so
    that it applies to a list that differs elsewhere (another kernel's sys.path)."""
    before = before or []
    kept = [x for x in before if x in after]
    added = [x for x in after if x not in before]
    start = after.index(kept[0]) if kept else len(after)
    if after[start : start + len(kept)] != kept:  # reordered: record the whole list
        return {"all": list(after)}
    front = [x for x in after[:start] if x in added]
    return {"front": front, "removed": [x for x in before if x not in after],
            "back": after[start + len(kept) :]}  # fmt: skip


def seq_apply(current: list, change: dict) -> list:
    if "all" in change:
        return list(change["all"])
    drop = change["removed"] + change["front"] + change["back"]
    middle = [x for x in current if x not in drop]
    return change["front"] + middle + change["back"]


def _path_put(change: dict) -> None:
    sys.path[:] = seq_apply(sys.path, change)


def _warnings_put(change: dict) -> None:
    warnings.filters[:] = seq_apply(list(warnings.filters), change)  # the tuples as they were
    # what filterwarnings() does after changing the list: forget the verdicts cached per
    # module (the function has no public name; without it a filter applies to new code only)
    mutated = getattr(warnings, "_filters_mutated", None) or getattr(
        warnings, "_filters_mutated_lock_held", None
    )
    if mutated is not None:
        mutated()


def _mapping_change(before: dict | None, after: dict) -> dict:
    before = before or {}
    return {k: v for k, v in after.items() if k not in before or before[k] != v}


# -- numpy ----------------------------------------------------------------------------------
def _np_rng_take():
    """The raw state of numpy's global generator (its Mersenne Twister's words) as a
    token to compare: reading it is 100x cheaper than `np.random.get_state()`."""
    np = sys.modules["numpy"]
    bitgen = np.random.get_bit_generator()
    if type(bitgen).__name__ == "MT19937":
        import ctypes

        return ctypes.string_at(bitgen.ctypes.state_address, 624 * 4 + 4)
    return bitgen.state


def _np_rng_change(before, after):
    return sys.modules["numpy"].random.get_state()


def _np_rng_put(state) -> None:
    sys.modules["numpy"].random.set_state(state)


def _np_print_take() -> dict:
    return sys.modules["numpy"].get_printoptions()


def _np_print_put(change: dict) -> None:
    sys.modules["numpy"].set_printoptions(**change)


def _np_err_take() -> dict:
    return sys.modules["numpy"].geterr()


def _np_err_put(change: dict) -> None:
    sys.modules["numpy"].seterr(**change)


def _interactivity() -> str | None:
    """What IPython displays of a cell (`InteractiveShell.ast_node_interactivity = "all"`
    is a common first cell)."""
    from IPython import get_ipython

    shell = get_ipython()
    return None if shell is None else shell.ast_node_interactivity


def _set_interactivity(value: str | None) -> None:
    from IPython import get_ipython

    shell = get_ipython()
    if shell is not None and value is not None:
        shell.ast_node_interactivity = value


# -- matplotlib and pandas -------------------------------------------------------------------
def _rc():
    return sys.modules["matplotlib"].rcParams


def _rc_take() -> dict:
    # rcParams' own items: its __getitem__ resolves the backend, which would pick one
    return dict(dict.items(_rc()))


def _rc_differs(snap: dict) -> bool:
    return not dict.__eq__(_rc(), snap)


def _rc_change(before: dict | None, after: dict) -> dict:
    change = _mapping_change(before, after)
    change.pop("backend", None)  # choosing a backend is not state a step's value carries
    return change


def _rc_put(change: dict) -> None:
    rc = _rc()
    for k, v in change.items():
        if k in rc and dict.__getitem__(rc, k) != v:
            rc[k] = v


def _pd_config() -> dict:
    from pandas._config import config  # the options' one dict: pandas has no public copy

    return config._global_config


def _pd_take() -> dict:
    return copy.deepcopy(_pd_config())


def _pd_differs(snap: dict) -> bool:
    return _pd_config() != snap


def _flat(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[prefix + k] = v
    return out


def _pd_change(before: dict | None, after: dict) -> dict:
    return _mapping_change(_flat(before) if before else None, _flat(after))


def _pd_put(change: dict) -> None:
    pd = sys.modules["pandas"]
    for k, v in change.items():
        if pd.get_option(k) != v:
            pd.set_option(k, v)


_STATES: list[State] = [
    State("cwd", os.getcwd, lambda rel: os.chdir(rel), change=_cwd_change),
    State("sys.path", lambda: list(sys.path), _path_put, change=seq_change),
    State("environ", _environ_take, _environ_put, _environ_differs, _environ_change),
    State("warnings", lambda: list(warnings.filters), _warnings_put, change=seq_change),
    State("recursionlimit", sys.getrecursionlimit, sys.setrecursionlimit),
    State("ipython.interactivity", _interactivity, _set_interactivity),
    State("random", random.getstate, random.setstate),
    State("numpy.random", _np_rng_take, _np_rng_put, change=_np_rng_change, module="numpy.random"),
    State("numpy.print", _np_print_take, _np_print_put, change=_mapping_change, module="numpy"),
    State("numpy.errors", _np_err_take, _np_err_put, change=_mapping_change, module="numpy"),
    State("matplotlib.rc", _rc_take, _rc_put, _rc_differs, _rc_change, module="matplotlib"),
    State("pandas.options", _pd_take, _pd_put, _pd_differs, _pd_change, module="pandas"),
]
_BUILTIN = len(_STATES)
_last: dict[str, Any] = {}


def register_state(name: str, get: Callable[[], Any], set: Callable[[Any], None]) -> None:
    """Watch more process state: `get()` returns it (comparable with `==`, picklable),
    `set(value)` restores it. A pure step that changes it records the new value, and a
    hit calls `set` with it. Registering a name again replaces it.

    >>> register_state("torch.threads", torch.get_num_threads, torch.set_num_threads)  # doctest: +SKIP
    """
    if not isinstance(name, str) or not callable(get) or not callable(set):
        raise TypeError("register_state(name: str, get: callable, set: callable)")
    for i, s in enumerate(_STATES):
        if s.name == name:
            if i < _BUILTIN:
                raise ValueError(f"{name} is watched already")
            del _STATES[i]
            break
    _STATES.append(State(name, get, set))


def _watched() -> list[State]:
    return [s for s in _STATES if s.module is None or s.module in sys.modules]


CONFIGURING = frozenset(
    {"matplotlib", "pylab", "config", "load_ext", "reload_ext", "unload_ext", "autoreload"}
    | {"aimport", "precision", "xmode", "colors", "pdb", "autocall", "automagic", "pprint"}
)


class Watch:
    """What `changes` compares with: a snapshot before the step, and the configuring
    magics the step called, in order."""

    def __init__(self, before: dict[str, Any]):
        self.before = before
        self.magics: list[tuple[str, str]] = []


@contextmanager
def watching(shell) -> Iterator[Watch]:
    """Snapshot the process state and record the configuring line magics the body calls
    (`%config X` runs as `get_ipython().run_line_magic("config", "X")`)."""
    watch = Watch(snapshot())
    run = shell.run_line_magic
    own = shell.__dict__.get("run_line_magic")

    def recording(magic_name, line, _stack_depth=1):
        if magic_name in CONFIGURING and not (magic_name.endswith("_ext") and _ours(line)):
            watch.magics.append((magic_name, line))
        return run(magic_name, line, _stack_depth + 1)  # the caller's frame, for $var

    shell.run_line_magic = recording
    try:
        yield watch
    finally:
        if own is None:
            del shell.run_line_magic
        else:
            shell.run_line_magic = own


def _ours(line: str) -> bool:
    return line.strip() == "resumable_cells"


def _magics_put(calls: list[tuple[str, str]]) -> None:
    from IPython import get_ipython

    shell = get_ipython()
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):  # said live already
        for name, line in calls:
            shell.run_line_magic(name, line)


def snapshot() -> dict[str, Any]:
    """The watched state now, before a live step."""
    out = {}
    for s in _watched():
        try:
            last = _last.get(s.name)
            if last is None or s.differs(last):
                last = _last[s.name] = s.take()
            out[s.name] = last
        except Exception:  # a state that cannot be read now: the step is not held to it
            log.debug("process state %s could not be read", s.name, exc_info=True)
    return out


def changes(watch: Watch | dict[str, Any]) -> list[tuple[str, Any]]:
    """What the step changed since the snapshot, in order. Raises Unfaithful for a
    change that cannot be recorded."""
    before = watch.before if isinstance(watch, Watch) else watch
    magics = watch.magics if isinstance(watch, Watch) else []
    out = [("ipython.magics", list(magics))] if magics else []
    for s in _watched():
        try:
            prior = before.get(s.name)
            if prior is not None and not s.differs(prior):
                continue
            after = _last[s.name] = s.take()
            change = s.change(prior, after)
            if change or prior is None:
                serialize.dumps(change, s.name)
                out.append((s.name, change))
        except Exception as err:
            raise Unfaithful(
                s.name,
                f"the step changed it and the change cannot be recorded ({err})",
                "mark the step `--effect`",
            ) from None
    return [(n, c) for n, c in out if c not in ({}, None)]


def apply(recorded: list[tuple[str, Any]]) -> list[str]:
    """Set recorded changes again, in order. Returns a warning for each that failed."""
    states = {s.name: s for s in _STATES}
    states["ipython.magics"] = State("ipython.magics", list, _magics_put)
    problems = []
    for name, change in recorded:
        s = states.get(name)
        try:
            if s is None:
                raise LookupError("it is not watched in this kernel (register_state)")
            s.put(change)
        except Exception as err:
            log.debug("process state %s could not be set again", name, exc_info=True)
            problems.append(f"{name} could not be set again ({err})")
        _last.pop(name, None)
    return problems
