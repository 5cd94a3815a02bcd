"""Why a step missed: its key's preimage against the nearest earlier entry's, component
by component (code, `--version`, each input, each package, the source of each local
module, each `--deps` file), for the miss reason in the record and the status line,
`%step why` and `resumable-cells why`."""

from __future__ import annotations

import logging

from ..errors import StoreError
from ..storage.entries import Entry
from ..storage.store import Store
from . import provenance

log = logging.getLogger(__name__)


def nearest_entry(store: Store, step: str, exclude: str | None = None) -> Entry | None:
    for k in reversed(store.history(step)):
        if k == exclude:
            continue
        try:
            e = store.get_entry(k)
        except StoreError:  # an entry that fails authentication is no evidence
            log.debug("entry %s of %s skipped", k[:12], step, exc_info=True)
            continue
        if e is not None:
            return e
    return None


def compare(old: dict, new: dict) -> list[tuple[str, str, str]]:
    """Component-by-component comparison of two preimages: (component, same|changed|added|removed, detail)."""
    rows: list[tuple[str, str, str]] = []
    if old.get("format") != new.get("format"):
        detail = f"{old.get('format')} -> {new.get('format')}"
        rows.append(("store format", "changed", detail))
    rows.append(("code", "same" if old.get("code") == new.get("code") else "changed", ""))
    if old.get("version") != new.get("version"):
        rows.append(("--version", "changed", f"{old.get('version')} -> {new.get('version')}"))
    groups = (
        ("inputs", "input"),
        ("env", "package"),
        ("settings", "settings"),
        ("sources", "source"),
        ("deps", "file"),
    )
    for group, label in groups:
        a, b = old.get(group, {}), new.get(group, {})
        for n in sorted(set(a) | set(b)):
            if n not in a:
                rows.append((f"{label} {n}", "added", ""))
            elif n not in b:
                rows.append((f"{label} {n}", "removed", ""))
            elif a[n] != b[n]:
                detail = f"{a[n]} -> {b[n]}" if group == "env" else ""
                rows.append((f"{label} {n}", "changed", detail))
            else:
                rows.append((f"{label} {n}", "same", ""))
    return rows


def miss_reason(store: Store, step: str, preimage: dict) -> str:
    """A few words on why this key has no entry: what differs from the nearest one."""
    code = preimage.get("code")
    note = store.uncached_note(step, code)
    old = nearest_entry(store, step)
    if note is not None and (old is None or old.preimage.get("code") != code):
        return note  # (the nearest entry is another cell's of the same name)
    if old is None:
        return "new step"
    return miss_reason_between(old.preimage, preimage) or "entry evicted"


def remember_uncached(store: Store, step: str, note: str | None, code: str | None) -> None:
    """Keep (or forget) why a step's last live run with this code left no entry: a miss
    then says `not cached: it wrote out.txt last time` rather than `new step`, or than
    `code changed` when another cell of the same name was cached."""
    store.note_uncached(step, note.split(". ")[0] + " last time" if note else None, code)


def miss_reason_between(old: dict, new: dict) -> str | None:
    for component, state, detail in compare(old, new):
        if state == "same":
            continue
        if component == "code":
            return "code changed"
        if component == "store format":
            return "the store's format changed (an entry of an earlier version)"
        if component.startswith("package "):
            name = component.split(" ", 1)[1]
            return f"{name} {detail}" if state == "changed" else f"{component} {state}"
        if component.startswith("file "):
            return f"{component.split(' ', 1)[1]} changed"
        if component.startswith("settings "):  # (off default, or back to it: changed)
            return f"settings of {component.split(' ', 1)[1]} changed"
        if component.startswith("source "):
            name = component.split(" ", 1)[1]
            return f"{name} changed" if state == "changed" else f"{component} {state}"
        return f"{component} {state}"
    return None


def origin_lines(store: Store, step: str, execs: list[dict], now: float) -> list[str]:
    """Where the value of `step` came from: its latest execution's provenance in the
    record `execs` (which says where a hit was served from), else that of its latest
    entry in the store. LookupError when neither says."""
    origin = provenance.latest(execs, step)
    if origin is None:
        entry = nearest_entry(store, step)
        if entry is None:
            raise LookupError(f"no cached entry of a step named {step!r}")
        origin = provenance.of_entry(entry, None)
    first, *rest = provenance.lines(origin, now)
    return [f"step {step}: {first}", *rest]


def why_lines(store: Store, step: str) -> list[str]:
    """`why`: the latest entry of `step` against the one before it, component by
    component, with a short diff when the code changed. LookupError if none."""
    latest = nearest_entry(store, step)
    if latest is None:
        raise LookupError(f"no cached entry of a step named {step!r}")
    earlier = nearest_entry(store, step, exclude=latest.key)
    if earlier is None:
        return [f"step {step}: one entry only ({(latest.key or '')[:12]}); nothing to compare yet."]
    old, new = (earlier.key or "")[:12], (latest.key or "")[:12]
    lines = [f"step {step}: {old} (earlier) vs {new} (latest)"]
    for component, state, detail in compare(earlier.preimage, latest.preimage):
        lines.append(f"  {state:8s} {component}" + (f"  {detail}" if detail else ""))
        if component == "code" and state == "changed":
            import difflib  # here: only a miss against an edited cell shows a diff

            diff = difflib.unified_diff(
                earlier.source.splitlines(),
                latest.source.splitlines(),
                "earlier",
                "latest",
                lineterm="",
                n=1,
            )
            lines.extend("           " + d for d in list(diff)[2:])
    return lines
