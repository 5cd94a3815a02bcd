"""The provenance of the value an execution left: who computed it and on which host (as
they chose to share it), when, with which package versions, from which inputs (each
with the step whose entry bound it), and where a hit was served from.

It is built from the entry when an execution ends and kept in the execution's record
row (`provenance`), so that `%step why`, the CLI's `show` and the sidebar's row read the
same thing; `sentence` writes it the way they show it ("computed by ana on gpu-3, 3 days
ago, from df@9f2c (load), served from redis://cache:6379/0"). The sidebar writes the
same sentence in TypeScript (`labextension/src/provenance.ts`), tested on the cases in
`tests/shared/provenance.json`.
"""

from __future__ import annotations

from typing import Any

import msgspec

from .. import formatting
from ..storage.entries import Entry, Provenance

#: Hex digits of a digest shown in its short form (`df@9f2c`).
SHORT_DIGEST = 4
LOCAL = "the local store"


class InputOrigin(msgspec.Struct, frozen=True):
    """An input the key took: its digest, and the step (and entry key) that bound it."""

    name: str
    digest: str | None
    step: str | None = None
    key: str | None = None

    def short(self) -> str:
        """`df@9f2c`, and the step that bound it when known: `df@9f2c (load)`."""
        text = f"{self.name}@{short_digest(self.digest)}"
        return f"{text} ({self.step})" if self.step else text


class Origin(msgspec.Struct, frozen=True):
    """The provenance of one execution's value (see the module docstring). `recorded`
    is False for an entry written before the who and the producers were recorded."""

    computed: float | None
    user: str | None = None
    host: str | None = None
    packages: tuple[tuple[str, str], ...] = ()
    inputs: tuple[InputOrigin, ...] = ()
    served_from: str | None = None  # a hit's tier (its URL), or LOCAL; None: ran live
    recorded: bool = True

    def to_json(self) -> dict[str, Any]:
        return {
            "computed": self.computed,
            "user": self.user,
            "host": self.host,
            "packages": dict(self.packages),
            "inputs": [
                {"name": i.name, "digest": i.digest, "step": i.step, "key": i.key}
                for i in self.inputs
            ],
            "served_from": self.served_from,
            "recorded": self.recorded,
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Origin:
        return cls(
            computed=raw.get("computed"),
            user=raw.get("user"),
            host=raw.get("host"),
            packages=tuple((str(k), str(v)) for k, v in dict(raw.get("packages", {})).items()),
            inputs=tuple(
                InputOrigin(str(i["name"]), i.get("digest"), i.get("step"), i.get("key"))
                for i in raw.get("inputs", [])
            ),
            served_from=raw.get("served_from"),
            recorded=bool(raw.get("recorded", True)),
        )


def of_entry(entry: Entry, served_from: str | None) -> Origin:
    """The provenance of `entry`'s value, served from `served_from` (None: this
    execution computed it)."""
    prov = entry.provenance
    return of_run(
        prov if prov is not None else Provenance(None, None),
        entry.preimage,
        entry.created,
        served_from,
        recorded=prov is not None,
    )


def of_run(
    prov: Provenance,
    preimage: dict[str, Any],
    computed: float | None,
    served_from: str | None = None,
    *,
    recorded: bool = True,
) -> Origin:
    """The provenance of a value computed by `prov`'s user from the inputs and package
    versions of the key whose preimage is `preimage`."""
    digests = preimage.get("inputs", {})
    inputs = []
    for name in sorted(digests):
        made = prov.producers.get(name)
        step, key = (made.step, made.key) if made is not None else (None, None)
        inputs.append(InputOrigin(name, digests[name], step, key))
    packages = preimage.get("env", {})
    return Origin(
        computed=computed,
        user=prov.user,
        host=prov.host,
        packages=tuple(sorted((str(k), str(v)) for k, v in packages.items())),
        inputs=tuple(inputs),
        served_from=served_from,
        recorded=recorded,
    )


def latest(execs: list[dict[str, Any]], step: str) -> Origin | None:
    """The provenance of the value `step`'s latest execution in the record left (None
    when it left none, or its record predates provenance)."""
    for e in reversed(execs):
        if e.get("step") == step and e.get("status") != "running":
            raw = e.get("provenance")
            return Origin.from_json(raw) if isinstance(raw, dict) else None
    return None


def short_digest(digest: str | None) -> str:
    """The first hex digits of a digest (after any `algorithm:` prefix); `?` for none."""
    if not digest:
        return "?"
    return digest.rpartition(":")[2][:SHORT_DIGEST]


def who(origin: Origin) -> str:
    """`ana on gpu-3`, `ana`, `someone on gpu-3`; `someone` when nothing is shared, and
    `(not recorded)` for an entry of a version that did not record it."""
    if not origin.recorded:
        return "someone (not recorded)"
    user = origin.user or "someone"
    return f"{user} on {origin.host}" if origin.host else user


def sentence(origin: Origin, now: float) -> str:
    """One line: `computed by ana on gpu-3, 3 days ago, from df@9f2c (load), served
    from redis://cache:6379/0`. A live run says `computed here`'s parts the same way."""
    parts = [f"computed by {who(origin)}"]
    if origin.computed:
        parts.append(f"{formatting.age(now - origin.computed)} ago")
    if origin.inputs:
        parts.append("from " + " ".join(i.short() for i in origin.inputs))
    if origin.served_from:
        parts.append(f"served from {origin.served_from}")
    return ", ".join(parts)


def lines(origin: Origin, now: float) -> list[str]:
    """`sentence`, then the package versions and each input's producing entry, for
    `%step why` and the CLI's `why`."""
    out = [sentence(origin, now)]
    if origin.packages:
        out.append("  packages " + ", ".join(f"{n} {v}" for n, v in origin.packages))
    for i in origin.inputs:
        if i.step is None:
            continue
        made = f"entry {i.key[:12]}" if i.key else "not cached"
        out.append(f"  input {i.name}@{short_digest(i.digest)} from step {i.step} ({made})")
    return out
