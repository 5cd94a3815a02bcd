"""Whether an entry may be served in this run: the one check a hit and `%step plan`
both ask (`invalid_reason`).

Valid while it is younger than the step's `--ttl`, the files and folders it read are
unchanged (and, when it named one relative to the working folder, that folder is the
same: `open('data.csv')` after `%cd other` is another file), the run's epoch and seed are
the ones it used (`step.now()`, `step.rng()`), the settings its outputs were shown with
and its code read are the ones in effect (`state/shown.py`: numpy's print options,
pandas' display options, matplotlib's rcParams for figures), no warning it showed is one
the warning filters in effect make an error (`state/warned.py`), each global random
generator it drew from stands where it did, when the notebook seeded it
(`state/drawn.py`), and every name it read
through `eval`/`exec` of a string has the digest it had (its trace:
`engine/live/trace.py`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ... import formatting
from ...hashing import files, reach
from ...hashing import key as step_key
from ...records.runs import Run
from ...storage.entries import Entry
from ..state import drawn, shown, warned


def invalid_reason(
    entry: Entry,
    run: Run,
    ttl: float | None = None,
    digest_of: Callable[[str], str | None] | None = None,
    settings: bool = True,
    seeding: drawn.Seeding | None = None,
) -> str | None:
    """Why `entry` cannot be served in `run` (older than the step's `--ttl` in seconds,
    a file it read changed or is gone, the run's epoch or seed it used changed, a name
    it read through eval or exec has another digest now: `digest_of(name)`, None when
    the name is gone; the settings its outputs were shown with or its code read differ
    now, the warning filters now make a warning it showed an error, the working folder
    it read files relative to or asked for, an environment variable it read (not by a
    literal name: those are in the key), or a global random generator it drew from and
    the notebook seeded (`seeding`: `state/drawn.py`) is elsewhere, unless `settings`
    is False: the plan, which cannot know the settings, the filters, the folder, the
    environment or the generators Run All will have reached by then), or None when it
    can."""
    if ttl is not None:
        age = time.time() - entry.created
        if age > ttl:
            return f"expired (computed {formatting.age(age)} ago, ttl {formatting.age(ttl)})"
    for f in entry.files:
        try:
            if step_key.read_digest(f.path) != f.digest:
                return f"{f.path} changed"
        except OSError:
            return f"{f.path} is gone"
    params = entry.params
    if "epoch" in params and params["epoch"] != run.epoch:
        return "run epoch changed"
    if "seed" in params and params["seed"] != run.seed:
        return "run seed changed"
    if settings and "cwd" in params and params["cwd"] != files.working_folder():
        if params.get("cwd_asked"):
            return "it asked for the working folder's path, and that is another folder now"
        return "it read files relative to another working folder"
    if settings and "environ" in params:
        moved = _environ_changed(params["environ"])
        if moved is not None:
            return moved
    shown_with = params.get("shown_with")
    if settings and shown_with:
        what = shown.changed(shown_with)
        if what is not None:
            return f"{what} changed since it ran"
    if settings and "warned" in params:
        raises = warned.raising(warned.decode(params))
        if raises is not None:
            return raises
    if settings and seeding is not None and "drew" in params:
        moved = drawn.moved(params["drew"], seeding)
        if moved is not None:
            return moved
    if entry.trace and digest_of is not None:
        for name, digest in entry.trace.items():
            now = digest_of(name)
            if now != digest:
                how = "is gone" if now is None else "changed"
                return f"input {name} (read through eval or exec) {how}"
    return None


def _environ_changed(kept: dict[str, Any]) -> str | None:
    """Why the environment variables a live run read (`live/tripwire.py`) are not what
    they were, or None. Their values are not said: one may be a secret."""
    for name, digest in (kept.get("read") or {}).items():
        if reach.environ_digest(name) != digest:
            return f"it read the environment variable {name}, which is different now"
    names = kept.get("names")
    if names is not None and reach.environ_names_digest() != names:
        return "it listed the environment's variables, which are others now"
    return None
