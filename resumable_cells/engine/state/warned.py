"""The warnings a step showed, and what the warning filters in effect at a hit would do
with each: a hit replays the outputs of its live run, and a warning among them is one
the filters of that run showed.

A notebook that silenced a warning since (`warnings.filterwarnings('ignore')` in its
first cell, then Run All) would see it replayed; one that made warnings errors
(`warnings.simplefilter('error')`) would see the cell succeed where its live run
raises. So while the body runs, each warning Python shows is noted (`watching`: the
standard way of showing one, `warnings._showwarnmsg_impl`, is wrapped; a warning a
`catch_warnings(record=True)` records, or a `showwarning` the notebook replaced, is
not noted and is replayed as before) with the text it wrote, unless a filter the step
added itself (a library it imported adds some) decided it. At a hit, each is matched
against the filters in effect as Python matches them: one they turn into an error makes
the step run (`restore/validity.py`); one they ignore is left out of the replayed
outputs (`replayed`); the others are replayed. Python's once-per-place registries are
not consulted: a warning a live run in the same kernel would not show again (the
`default` action) is replayed, as before.
"""

from __future__ import annotations

import logging
import sys
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import msgspec

log = logging.getLogger(__name__)


class Warned(msgspec.Struct, frozen=True, array_like=True):
    """A warning a step showed: what the warning filters match it by, and the text it
    wrote."""

    category: str  # its class, `module:qualname`
    message: str
    filename: str
    lineno: int
    module: str  # the module it was raised for, which a filter's `module` matches
    text: str


@contextmanager
def watching() -> Iterator[list[Warned]]:
    """While the body runs: yields the list each warning shown is added to."""
    shown: list[Warned] = []
    original = warnings._showwarnmsg_impl  # type: ignore[attr-defined]
    start = list(warnings.filters)

    def show(msg: Any) -> None:
        try:
            w = _noted(msg)
            if not _own(w, msg.category, start):
                shown.append(w)
        except Exception:  # never in the way of the warning itself
            log.debug("a warning could not be noted", exc_info=True)
        original(msg)

    warnings._showwarnmsg_impl = show  # type: ignore[attr-defined]
    try:
        yield shown
    finally:
        if warnings._showwarnmsg_impl is show:  # type: ignore[attr-defined]
            warnings._showwarnmsg_impl = original  # type: ignore[attr-defined]


def _noted(msg: Any) -> Warned:
    category = msg.category
    return Warned(
        f"{category.__module__}:{category.__qualname__}",
        str(msg.message),
        str(msg.filename),
        int(msg.lineno),
        _module_of(str(msg.filename), int(msg.lineno)),
        warnings._formatwarnmsg(msg),  # type: ignore[attr-defined]  # what it writes
    )


def _module_of(filename: str, lineno: int) -> str:
    """The module a warning was raised for: the `__name__` of the frame it is told of
    (Python's own choice), else its file's name without `.py` (Python's when it has no
    frame)."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename == filename and frame.f_lineno == lineno:
            name = frame.f_globals.get("__name__")
            if isinstance(name, str):
                return name
        frame = frame.f_back  # type: ignore[assignment]
    return filename[:-3] if filename.endswith(".py") else filename


def _own(w: Warned, category: type[Warning], start: list[Any]) -> bool:
    """Whether a filter the step added itself decided to show `w` (a library it
    imported adds some), or the step reordered the filters: a hit replays such a
    warning as it was shown. Else the filters it began with did, and a hit asks those
    in effect then."""
    now = list(warnings.filters)
    if len(now) < len(start) or now[len(now) - len(start) :] != start:
        return True
    added = now[: len(now) - len(start)]
    return _matching(added, w, category) is not None


def _matching(filters: list[Any], w: Warned, category: type[Warning]) -> str | None:
    """The action of the first of `filters` that matches `w`, as Python matches them
    (`warnings.warn_explicit`), or None."""
    for action, message, cls, module, lineno in filters:
        if (
            _matched(message, w.message)
            and issubclass(category, cls)
            and _matched(module, w.module)
            and (lineno == 0 or w.lineno == lineno)
        ):
            return str(action)
    return None


def _matched(pattern: Any, text: str) -> bool:
    """None matches anything, a str (Python's own default filters: `'__main__'`) only
    itself, else a compiled pattern from its start."""
    if pattern is None:
        return True
    if isinstance(pattern, str):
        return pattern == text
    return bool(pattern.match(text))


def encode(shown: Sequence[Warned]) -> list[Any]:
    """For the entry's params."""
    return msgspec.to_builtins(list(shown))  # type: ignore[no-any-return]


def decode(params: dict[str, Any]) -> list[Warned]:
    raw = params.get("warned")
    if not raw:
        return []
    try:
        return msgspec.convert(raw, list[Warned])
    except msgspec.ValidationError:
        log.warning("an entry's warnings could not be read: replayed as they were")
        return []


def action(w: Warned) -> str:
    """What the filters in effect now do with `w`: "error", "ignore" or "show" (any
    other action: Python's once-per-place registries are not consulted)."""
    category = _category(w.category)
    if category is None:  # its class cannot be found now: replayed as it was
        return "show"
    try:
        found = _matching(list(warnings.filters), w, category)
    except Exception:  # a filter not of Python's shape: replayed as it was
        log.debug("the warning filters could not be matched", exc_info=True)
        return "show"
    chosen = found if found is not None else warnings.defaultaction  # type: ignore[attr-defined]
    return chosen if chosen in ("error", "ignore") else "show"


def _category(name: str) -> type[Warning] | None:
    module, _, qualname = name.partition(":")
    value: Any = sys.modules.get(module)
    for part in qualname.split("."):
        value = getattr(value, part, None)
    if isinstance(value, type) and issubclass(value, Warning):
        return value
    return None


def raising(shown: Sequence[Warned]) -> str | None:
    """At a hit: the first warning the filters in effect make an error, said, or None."""
    for w in shown:
        if action(w) == "error":
            category = w.category.rpartition(":")[2]
            return f"the warning filters now make its {category} ({w.message!r}) an error"
    return None


def replayed(outputs: list[Any], shown: Sequence[Warned]) -> list[Any]:
    """`outputs` without the text of each warning the filters in effect ignore."""
    hidden = [w.text for w in shown if action(w) == "ignore"]
    if not hidden:
        return outputs
    out = list(outputs)
    for text in hidden:
        for i, item in enumerate(out):
            if item[0] == "stream" and item[1] == "stderr" and text in item[2]:
                out[i] = (*item[:2], item[2].replace(text, "", 1), *item[3:])
                break
    return [o for o in out if not (o[0] == "stream" and o[2] == "")]
