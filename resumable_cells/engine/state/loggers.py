"""The logging configuration a step changes, a part of the process state: the root
logger's or a named one's level (`logging.basicConfig(level=logging.INFO)`,
`logging.getLogger("urllib3").setLevel(logging.WARNING)`), its handlers, whether it
propagates or is disabled, and `logging.disable(...)`. Without it a hit of the step that
configured logging leaves the later cells' messages unshown, or shown as they were not.

A snapshot holds the root logger and each logger set apart from the defaults, their
handlers compared as objects (with each one's level, formatter and filters): a cheap
comparison, as `differs` runs before and after every step. A change says, for each
logger that changed, its settings and, when they changed, its handlers as a hit builds
them again: a `StreamHandler` on the kernel's stdout or stderr or a `NullHandler`, with
its level and a plain `logging.Formatter`'s format. Handlers of other kinds (a file, a
socket, a library's own class) or with filters cannot be built from a description: the
change cannot be recorded and the step is not cached (`process_state` says so), but for
a handler of a library's own class on a logger the step created: the library set up its
own logger as it was imported, which its import on a hit does again, and it is left as
it is.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

from ...display import capture

# (level, propagate, disabled, filters, ((handler, level, formatter, filters), ...))
_Config = tuple[Any, ...]
_DEFAULT: _Config = (logging.NOTSET, True, False, (), ())
_STREAMS = ("stdout", "stderr", "__stdout__", "__stderr__")


class Snapshot(NamedTuple):
    disable: int  # `logging.disable`'s level
    loggers: dict[str, _Config]  # the root logger ("") and those set apart from defaults
    names: frozenset[str]  # every logger that exists


class Handler(NamedTuple):
    """A handler as a hit builds it again."""

    kind: str  # "stream" or "null"
    stream: str | None  # for "stream": one of _STREAMS
    level: int
    format: tuple[str | None, str | None, str] | None  # (fmt, datefmt, style); None: none


class Settings(NamedTuple):
    level: int
    propagate: bool
    disabled: bool
    handlers: tuple[Handler, ...] | None  # None: left as they are


class Change(NamedTuple):
    disable: int | None  # None: unchanged
    loggers: dict[str, Settings]


def _config(logger: logging.Logger) -> _Config:
    handlers = tuple((h, h.level, h.formatter, tuple(h.filters)) for h in logger.handlers)
    return (logger.level, logger.propagate, logger.disabled, tuple(logger.filters), handlers)


def _configured() -> dict[str, _Config]:
    out = {"": _config(logging.root)}
    for name, logger in list(logging.root.manager.loggerDict.items()):
        if isinstance(logger, logging.Logger) and _set_apart(logger):  # (not a PlaceHolder)
            out[name] = _config(logger)
    return out


def _set_apart(logger: logging.Logger) -> bool:
    """Whether a logger is configured away from a new one's defaults."""
    return (
        bool(logger.level or logger.handlers or logger.filters or logger.disabled)
        or not logger.propagate
    )


def take() -> Snapshot:
    manager = logging.root.manager
    return Snapshot(manager.disable, _configured(), frozenset(manager.loggerDict))


def differs(snap: Snapshot) -> bool:
    return logging.root.manager.disable != snap.disable or _configured() != snap.loggers


class Effective(Mapping[str, tuple[Any, ...]]):
    """What decides, in a snapshot, which records a logger's calls make and how they are
    written: by logger name, the loggers its records go through (itself and its
    ancestors set apart from the defaults, up to the first that does not propagate),
    each one's level, whether it is disabled, its filters' count and its handlers as
    descriptions (kind, level, format, stream), and `logging.disable`'s level; what
    `shown.py` compares for the loggers a step's code called (`settings_read.py`)."""

    def __init__(self, snap: Snapshot) -> None:
        self.snap = snap

    def __getitem__(self, name: str) -> tuple[Any, ...]:
        dotted = [] if name in ("", "root") else name.split(".")
        chain = []
        for ancestor in [".".join(dotted[:i]) for i in range(len(dotted), 0, -1)] + [""]:
            config = self.snap.loggers.get(ancestor)
            if config is None:
                continue  # (a logger at the defaults, or a placeholder: adds nothing)
            level, propagate, disabled, filters, handlers = config
            shown = tuple(
                _shown(h, h_level, form, h_filters) for h, h_level, form, h_filters in handlers
            )
            chain.append((ancestor, level, disabled, len(filters), shown))
            if not propagate:
                break
        return (self.snap.disable, tuple(chain))

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str)

    def __iter__(self) -> Iterator[str]:
        return iter(self.snap.names)

    def __len__(self) -> int:
        return len(self.snap.names)


def effective(snap: Snapshot | None = None) -> Effective:
    """The loggers' configuration as `Effective` describes it, in `snap` (None: now)."""
    return Effective(snap if snap is not None else take())


def _shown(h: Any, level: int, form: Any, filters: tuple[Any, ...]) -> tuple[Any, ...]:
    """A handler as it writes records: its kind (a stream handler on the kernel's
    stdout or stderr by that name: a new kernel's is another object), level, format
    and filters' count."""
    stream = None
    if isinstance(h, logging.StreamHandler):
        target = capture.underlying(h.stream)
        stream = next(
            (n for n in _STREAMS if target is capture.underlying(getattr(sys, n, None))),
            getattr(h.stream, "name", type(h.stream).__name__),
        )
    form_shown = _format(form) if type(form) is logging.Formatter else type(form).__qualname__
    return (type(h).__module__, type(h).__qualname__, level, form_shown, stream, len(filters))


def change(before: Snapshot | None, after: Snapshot) -> Change | None:
    """What a hit sets again. Raises ValueError for a change to a logger that existed
    before the step that a description cannot carry."""
    was = before.loggers if before is not None else {}
    existed = before.names if before is not None else frozenset()
    out: dict[str, Settings] = {}
    for name in sorted(after.loggers.keys() | was.keys()):
        now, then = after.loggers.get(name, _DEFAULT), was.get(name, _DEFAULT)
        if now == then:
            continue
        logger = _logger(name)
        old = name == "" or name in existed
        if now[3] != then[3] and old:
            raise ValueError(f"{_label(name)} got filters, which a hit cannot set again")
        handlers: tuple[Handler, ...] | None = None
        if now[4] != then[4]:
            described = [_describe(h) for h in logger.handlers]
            odd = [h for h, d in zip(logger.handlers, described, strict=True) if d is None]
            if not odd:
                handlers = tuple(d for d in described if d is not None)
            elif old or not all(map(_library_made, odd)):
                raise ValueError(
                    f"{_label(name)} got a {type(odd[0]).__name__} the step made, which a "
                    "hit cannot build again"
                )
        out[name] = Settings(logger.level, logger.propagate, logger.disabled, handlers)
    disable = None if before is not None and before.disable == after.disable else after.disable
    if not out and disable is None:
        return None
    return Change(disable, out)


def put(change: Change) -> None:
    if change.disable is not None:
        logging.disable(change.disable)
    for name, settings in change.loggers.items():
        logger = _logger(name)
        logger.setLevel(settings.level)
        logger.propagate, logger.disabled = settings.propagate, settings.disabled
        if settings.handlers is not None:
            for h in list(logger.handlers):
                logger.removeHandler(h)
            for spec in settings.handlers:
                logger.addHandler(_build(spec))


def _logger(name: str) -> logging.Logger:
    return logging.root if name == "" else logging.getLogger(name)


def _label(name: str) -> str:
    return "the root logger" if name == "" else f"logger {name!r}"


def _describe(h: logging.Handler) -> Handler | None:
    if h.filters or not _plain(h.formatter):
        return None
    form = _format(h.formatter)
    if type(h) is logging.NullHandler:
        return Handler("null", None, h.level, form)
    if type(h) is logging.StreamHandler:
        stream = capture.underlying(h.stream)
        for name in _STREAMS:
            if stream is capture.underlying(getattr(sys, name, None)):
                return Handler("stream", name, h.level, form)
    return None


def _library_made(h: logging.Handler) -> bool:
    """Whether a handler is of a library's own class (not logging's, not the notebook's):
    one a library sets up on its own logger as it is imported."""
    return type(h).__module__.partition(".")[0] not in ("logging", "__main__")


def _plain(f: logging.Formatter | None) -> bool:
    """Whether a description carries the formatter: none, or a plain Formatter without
    defaults in one of logging's three styles."""
    if f is None:
        return True
    if type(f) is not logging.Formatter or getattr(f._style, "_defaults", None):
        return False
    return _style(f) is not None


def _style(f: logging.Formatter) -> str | None:
    # read from the Formatter's own attributes: logging has no public accessor for them
    styles = getattr(logging, "_STYLES", {})
    return next((s for s, (cls, _) in styles.items() if type(f._style) is cls), None)


def _format(f: logging.Formatter | None) -> tuple[str | None, str | None, str] | None:
    if f is None:
        return None
    return (f._fmt, f.datefmt, _style(f) or "%")


def _build(spec: Handler) -> logging.Handler:
    h: logging.Handler
    if spec.kind == "null":
        h = logging.NullHandler()
    else:
        assert spec.stream in _STREAMS
        h = logging.StreamHandler(capture.underlying(getattr(sys, spec.stream)))
    h.setLevel(spec.level)
    if spec.format is not None:
        fmt, datefmt, style = spec.format
        h.setFormatter(logging.Formatter(fmt, datefmt, style))  # type: ignore[arg-type]
    return h
