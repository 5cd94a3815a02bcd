"""Which of the settings that turn values into text and figures a step's code read while
it ran: numpy's print options (`str(a)`, `np.array2string`), pandas' display options
(`df.to_string()`, `f"{df}"`), matplotlib's rcParams (a figure made), the configuration
of the loggers it logged to. A value the step
binds carries them (`prompt = f"Data:\\n{df}"`) though it shows nothing, so
`shown.of_step` records those it read as it records those its outputs were shown with,
and a hit whose settings differ now runs instead (`restore/validity.py`).

Each is watched where its library reads it, and only while the body runs:
- numpy (2 and later) keeps its print options in a context variable holding a dict,
  read as `format_options.get().copy()` or `[...]`: the body runs with a copy in its
  place that notes being read. `np.set_printoptions` in the step sets another dict,
  which stays.
- pandas reads `display.*` from the `display` dict of its options' one nested dict: a
  noting copy stands in for it, and what the step set in it is written back.
- matplotlib reads rcParams through `RcParams.__getitem__` and `_get`: both are
  replaced on the class until the first read, which puts them back (a figure reads
  thousands).
- logging: each logger's calls ask `Logger.isEnabledFor` whether a record is made; the
  names of the loggers asked are noted (the step's printed log lines, or their absence,
  follow from those loggers' levels and handlers: `loggers.Effective`), by the threads
  the tripwire watches for the step (its own, those it starts, the work it submits to a
  thread pool), not by the kernel's control and I/O threads or a library's background
  thread.
Which of numpy's and pandas' settings were read is kept by name: pandas parses a date
string with `display.date_dayfirst`, and a step that parses dates depends on that one,
not on `display.max_rows` (a copy of the whole dict reads them all); any read of
rcParams counts as all of them.
Reads these miss (numpy's C code, numpy before 2, a reference to pandas' display dict
taken before the step, `rcParams.get`) are not seen: such a value is served as before.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ..live import watchpoints

log = logging.getLogger(__name__)

Undo = Callable[[], None]


class Read:
    """What the body read: for each part, the names of the settings read, or None when
    it read them all (a copy of the whole dict, any read of rcParams)."""

    Parts = dict[str, set[str] | None]

    def __init__(self) -> None:
        self.parts: Read.Parts = {}

    def note(self, part: str, name: str | None) -> None:
        if name is None or not isinstance(name, str):
            self.parts[part] = None
        else:
            names = self.parts.setdefault(part, set())
            if names is not None:
                names.add(name)


class _Noting(dict):  # type: ignore[type-arg]
    """A dict that notes the settings read from it by Python code."""

    def __init__(self, data: dict[Any, Any], read: Read, part: str) -> None:
        super().__init__(data)
        self._read, self._part = read, part

    def __getitem__(self, key: Any) -> Any:
        self._read.note(self._part, key)
        return dict.__getitem__(self, key)

    def get(self, key: Any, default: Any = None) -> Any:
        self._read.note(self._part, key)
        return dict.get(self, key, default)

    def copy(self) -> dict[Any, Any]:
        self._read.note(self._part, None)
        return dict(self)

    def items(self) -> Any:
        self._read.note(self._part, None)
        return dict.items(self)

    def values(self) -> Any:
        self._read.note(self._part, None)
        return dict.values(self)

    def __reduce__(self) -> Any:  # a copy or a pickle of it is the plain dict
        return (dict, (dict(self),))


def _numpy(read: Read) -> Undo | None:
    holder = sys.modules.get("numpy._core.printoptions")
    var = getattr(holder, "format_options", None)
    if var is None:
        return None
    current = var.get()
    noting = _Noting(current, read, "numpy.print")
    token = var.set(noting)

    def undo() -> None:
        if var.get() is not noting:
            return  # the step set print options of its own: they stay
        try:
            var.reset(token)
        except ValueError:  # (set in another context than this one)
            var.set(current)

    return undo


def _pandas(read: Read) -> Undo | None:
    config = sys.modules.get("pandas._config.config")
    options = getattr(config, "_global_config", None)
    display = options.get("display") if isinstance(options, dict) else None
    if not isinstance(display, dict) or isinstance(display, _Noting):
        return None
    assert options is not None
    noting = _Noting(display, read, "pandas.display")
    options["display"] = noting

    def undo() -> None:
        if options.get("display") is noting:
            display.update(dict.items(noting))  # what `pd.set_option` set meanwhile
            options["display"] = display

    return undo


def _matplotlib(read: Read) -> Undo | None:
    cls = getattr(sys.modules.get("matplotlib"), "RcParams", None)
    if not isinstance(cls, type):
        return None
    originals = {n: cls.__dict__[n] for n in ("__getitem__", "_get") if n in cls.__dict__}
    wrappers: dict[str, Any] = {}

    def put_back() -> None:
        for name, original in originals.items():
            if cls.__dict__.get(name) is wrappers.get(name):
                setattr(cls, name, original)
        wrappers.clear()  # (they refer to this function: a cycle, left to the collector)

    def noting(original: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
        def read_rc(self: Any, key: Any) -> Any:
            read.note("matplotlib.rc", None)
            put_back()
            return original(self, key)

        return read_rc

    for name, original in originals.items():
        wrappers[name] = noting(original)
        setattr(cls, name, wrappers[name])
    return put_back


def _logging(read: Read) -> Undo | None:
    cls = logging.Logger
    original = cls.__dict__["isEnabledFor"]

    # The kernel's own threads (its control channel, its I/O thread, the writer of
    # blobs) and the notebook's background threads (a library's, started in an earlier
    # cell) log while the body runs: their loggers are not the step's, and a handler of
    # theirs may write to a file named anew in each kernel. The step's are the threads
    # the tripwire watches for it: its own, those it starts, the work it submits to a
    # pool an earlier cell made (`watchpoints.watched`; the tripwire runs around this).
    def is_enabled_for(self: logging.Logger, level: int) -> bool:
        name = self.name
        if not name.startswith(_OWN) and watchpoints.watched():
            read.note("logging", name)  # (the engine's own debug lines: not the step's)
        return bool(original(self, level))

    cls.isEnabledFor = is_enabled_for  # type: ignore[method-assign]

    def undo() -> None:
        if cls.__dict__.get("isEnabledFor") is is_enabled_for:
            cls.isEnabledFor = original  # type: ignore[method-assign]

    return undo


_OWN = __name__.partition(".")[0] + "."
_WATCHES: tuple[tuple[str, Callable[[Read], Undo | None]], ...] = (
    ("numpy", _numpy),
    ("pandas", _pandas),
    ("matplotlib", _matplotlib),
    ("logging", _logging),
)


@contextmanager
def watching() -> Iterator[Read]:
    """While the body runs: yields what it read of the settings of the libraries
    imported as it began (parts named as `shown.py` names them: `numpy.print`,
    `pandas.display`, `matplotlib.rc`)."""
    read = Read()
    undos: list[Undo] = []
    for module, start in _WATCHES:
        if module not in sys.modules:
            continue
        try:
            undo = start(read)
        except Exception:  # a version laid out otherwise: its reads are not seen
            log.debug("the settings of %s cannot be watched", module, exc_info=True)
            continue
        if undo is not None:
            undos.append(undo)
    try:
        yield read
    finally:
        for undo in reversed(undos):
            try:
                undo()
            except Exception:
                log.warning("a library's settings could not be put back", exc_info=True)
