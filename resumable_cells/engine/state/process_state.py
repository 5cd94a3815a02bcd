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
    int_max_str_digits   `sys.set_int_max_str_digits`
    gc               the collector's thresholds (`gc.set_threshold`)
    socket.timeout   `socket.setdefaulttimeout`
    locale           `locale.setlocale`
    decimal          the settings and traps of the decimal context (`getcontext().prec`)
    logging          loggers' levels and handlers, `logging.disable` (`loggers.py`)
    ipython.interactivity   what IPython displays of a cell (`ast_node_interactivity`)
    ipython.formatters      printers registered with IPython's display formatters
                     (sympy's `init_printing()`, `formatter.for_type(...)`), and which
                     formatters are on
    ipython.plain    how the plain-text formatter writes results (`%precision`, `%pprint`),
    ipython.inline   and the inline backend's figure formats: watched for `shown.py`, not
                     recorded (the magics that set them are called again)
    random           the state of the `random` module's generator
    numpy.random     the state of numpy's global generator (`np.random.seed`, draws)
    numpy.print      numpy's print options (`np.set_printoptions`)
    numpy.errors     numpy's floating-point error handling (`np.seterr`, `np.seterrcall`)
    scipy.special.errors   scipy.special's error handling (`sc.seterr`)
    matplotlib.rc    matplotlib's rcParams, and so styles (`plt.style.use`), but the backend
    pandas.options   pandas' options (`pd.set_option`)
    sklearn.config   scikit-learn's configuration (`sklearn.set_config`)
    xarray.options   xarray's options (`xr.set_options`)
    plotly.io        plotly's default renderer and template (`pio.renderers.default = ...`)
    sympy.printing   how sympy's objects draw themselves and its printers' settings
                     (`init_printing()`, with `ipython.formatters`)

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

import functools
import io
import logging
import sys
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from typing import TYPE_CHECKING, Any

from ...errors import Unfaithful
from ...storage import serialize
from .parts import BUILTIN, State, replayed_attributes, replayed_objects

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

log = logging.getLogger(__name__)


_STATES: list[State] = list(BUILTIN)
_BUILTIN = len(_STATES)
_last: dict[str, Any] = {}
# A state not read (not in a snapshot, not in `_last`): None is a value of its own (the
# default socket timeout is None), which a step may change and need not be read again.
_UNREAD = object()


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


def replays(obj: Any, attr: str | None = None) -> bool:
    """Whether a change to the items of `obj` (`attr` None), or to its attribute `attr`,
    is recorded and set again on a hit: `obj` is one of the objects the built-in parts
    watch whole (`os.environ`, `sys.path`, the warning filters, matplotlib's rcParams),
    or the attribute one they read (IPython's `ast_node_interactivity`)."""
    if attr is None:
        return any(obj is held for held in replayed_objects())
    return any(obj is owner and attr == name for owner, name in replayed_attributes())


def _watched() -> list[State]:
    return [s for s in _STATES if s.module is None or s.module in sys.modules]


CONFIGURING = frozenset(
    {"matplotlib", "pylab", "config", "load_ext", "reload_ext", "unload_ext", "autoreload"}
    | {"aimport", "precision", "xmode", "colors", "pdb", "autocall", "automagic", "pprint"}
)


class Watch:
    """What `changes` compares with: a snapshot before the step, and the configuring
    magics the step called, in order."""

    def __init__(self, before: dict[str, Any]) -> None:
        self.before = before
        self.magics: list[tuple[str, str]] = []


@contextmanager
def watching(shell: InteractiveShell, current: bool = False) -> Iterator[Watch]:
    """Snapshot the process state and record the configuring line magics the body calls
    (`%config X` runs as `get_ipython().run_line_magic("config", "X")`). `current`:
    nothing ran since the last `changes` (see `snapshot`).

    The magics are recorded where IPython finds them, in its table of line magics,
    which stands in for the table while the block runs: the shell's own methods stay
    what they are, so that a step binding `get_ipython().run_line_magic` binds IPython's
    method, as a plain cell would, and not a wrapper that outlives the step."""
    watch = Watch(snapshot(current))
    magics = shell.magics_manager.magics
    table = magics["line"]
    recording = _RecordingTable(table, watch, type(shell).run_line_magic.__code__)
    magics["line"] = recording
    try:
        yield watch
    finally:
        if magics.get("line") is recording:
            table.clear()  # (the same dict as before, with what the step registered in it)
            table.update(dict.items(recording))
            magics["line"] = table


class _RecordingTable(dict[str, Any]):
    """IPython's line magics while a step runs: a configuring one is found wrapped, so
    that calling it records the call (its line as the caller wrote it, `$var` and all,
    as `run_line_magic` received it; the magic's own line when something else called
    it)."""

    def __init__(self, table: dict[str, Any], watch: Watch, runner: Any) -> None:
        super().__init__(table)
        self.watch = watch
        self.runner = runner  # the code of `run_line_magic`, whose frame holds the line

    def get(self, name: str, default: Any = None) -> Any:
        return self._found(name, dict.get(self, name, default))

    def __getitem__(self, name: str) -> Any:
        return self._found(name, dict.__getitem__(self, name))

    def _found(self, name: str, fn: Any) -> Any:
        if name not in CONFIGURING or not isinstance(fn, (types.FunctionType, types.MethodType)):
            return fn  # (nor a placeholder IPython loads the magic for on first use)
        watch, runner = self.watch, self.runner

        @functools.wraps(fn)  # (with its attributes: `needs_local_scope`, no `$` expansion)
        def recording(line: str = "", *args: Any, **kwargs: Any) -> Any:
            as_written = _line_as_written(runner, line)
            if not (name.endswith("_ext") and _ours(as_written)):
                watch.magics.append((name, as_written))
            return fn(line, *args, **kwargs)

        return recording


def _line_as_written(runner: Any, line: str) -> str:
    """The line `run_line_magic` was given (before it expanded `$var`), when it is the
    caller; else `line`."""
    frame: types.FrameType | None = sys._getframe(2)
    for _ in range(4):
        if frame is None:
            break
        if frame.f_code is runner:
            written = frame.f_locals.get("line")
            return written if isinstance(written, str) else line
        frame = frame.f_back
    return line


def _ours(line: str) -> bool:
    return line.strip() == "resumable_cells"


def _magics_put(calls: list[tuple[str, str]]) -> None:
    from IPython import get_ipython

    shell = get_ipython()
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):  # said live already
        for name, line in calls:
            shell.run_line_magic(name, line)


def snapshot(current: bool = False) -> dict[str, Any]:
    """The watched state now, before a live step. `current`: nothing ran since the last
    `changes` (the step before was the execution before, a whole `%%step` cell, and no
    message that may run the notebook's code came between: `code/carry.py`'s rule), so
    what it left is the state now, not compared again (half of what the process state
    costs a step, in a chain of live steps)."""
    out = {}
    for s in _watched():
        try:
            last = _last.get(s.name, _UNREAD)
            if last is _UNREAD or (not current and s.differs(last)):
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
    out: list[tuple[str, Any, bool]] = [("ipython.magics", list(magics), False)] if magics else []
    for s in _watched():
        prior = before.get(s.name, _UNREAD)
        try:
            if prior is not _UNREAD and not s.differs(prior):
                continue
            after = _last[s.name] = s.take()
        except Exception as err:
            _last.pop(s.name, None)  # not known now: the next snapshot reads it
            if prior is _UNREAD:  # it could not be read before either: not watched here
                log.debug("process state %s could not be read", s.name, exc_info=True)
                continue
            raise Unfaithful(
                s.name, f"it cannot be read after the step ({err})", "mark the step `--effect`"
            ) from None
        try:
            change = s.change(None if prior is _UNREAD else prior, after)
            if s.whole or change or prior is _UNREAD:
                serialize.dumps(change, s.name)
                # (a whole value newly watched, a library the step imported: as before,
                # None or {} is not recorded)
                out.append((s.name, change, s.whole and prior is not _UNREAD))
        except Exception as err:
            raise Unfaithful(
                s.name,
                f"the step changed it and the change cannot be recorded ({err})",
                "mark the step `--effect`",
            ) from None
    # (a change of its own saying "nothing" is {} or None; a whole value is what it is)
    return [(n, c) for n, c, whole in out if whole or c not in ({}, None)]


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
