"""The entry: what a pure step's live run leaves under its key, as typed records.

This module is the only one that knows how an entry is laid out in the index. Every
other module reads and builds entries through these types; `Entry.blobs()` names every
blob file an entry uses (its values alone, its unit and the unit's by-value copy, its
outputs, its result, its process state), which is what eviction, discarding an entry
and the team cache go by.

The JSON row (`entry:{key}`, authenticated with the per-user key; see `store.py`):

    step, created, duration_s, source       the step's name, when it ran, how long, its cell
    bindings: [{name, digest, type, size, ...}]
        + blob[, inline][, callable]        a value stored alone, bound on a hit
        + blob[, inline], inplace: true     an input changed in place, stored alone
        + unit: true                        bound or changed by the unit
        + seen: true                        not bound; its object changed with the step
        + lazy: [package]                   read when first needed, not on the hit; the
                                            packages its digest reached
        + reached: [package]                stored alone, its digest reaching no code:
                                            the packages it reached (a hit keeps that
                                            digest for the next step's key)
    deleted: [name]                         names the step deleted
    outputs: {blob[, inline]}               the captured outputs, in order
    result: {blob[, inline][, bundle][, refs][, shown: {blob[, inline]}]}
                                            the cell's result (or its display), and the
                                            MIME bundle the live run showed, or null;
                                            `refs`: pickled with the objects names hold
                                            as references to them (`units/result_refs.py`)
    files: [{path, digest}]                 files the step read
    params: {epoch?, seed?}                 run parameters it used
    inline_backend: bool                    matplotlib's inline backend was in use
    preimage: {...}                         the key's components, readable (`why`)
    shared: {blob[, inline], roots, inner[, whole: {blob[, inline], roots, names}]}
                                            the unit, and its changed inputs stored whole
    state: {blob[, inline]}                 the process state it changed
    trace: {name: digest}                   names it read through eval/exec of strings,
                                            with their digests then (verified on lookup)
    key                                     the key it is stored under
    by: {user, host, from: {name: {step, key}}}
                                            who computed it (as they chose to share it),
                                            and the step (and its entry's key, null when
                                            it was not cached) whose run or hit bound each
                                            input with the digest the key took; absent
                                            in entries written before it was recorded

A reference with `inline` holds the pickle itself (base64): it names no file; a small
array's data is in it (`serialize.IN_BAND_MAX`). Rows written before that also had
`bufs`, the pickle's out-of-band buffers (base64 each), and are read as they were.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..errors import StoreError

__all__ = [
    "Binding",
    "Entry",
    "FileRead",
    "Producer",
    "Provenance",
    "Result",
    "Stream",
    "Unit",
    "Value",
]


class Value(msgspec.Struct, frozen=True):
    """A stored value: its digest names it; small ones are pickled inline in the entry
    (with any out-of-band buffers in `bufs`: a small array's data is in the pickle now,
    `serialize.IN_BAND_MAX`), the rest live in a blob file of that name."""

    blob: str
    inline: str | None = None
    bufs: tuple[str, ...] = ()

    def files(self) -> list[str]:
        """The blob files it uses: none when inlined."""
        return [] if self.inline is not None else [self.blob]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"blob": self.blob}
        if self.inline is not None:
            out["inline"] = self.inline
        if self.bufs:
            out["bufs"] = list(self.bufs)
        return out

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Value:
        bufs = raw.get("bufs", [])
        if not isinstance(bufs, list) or not all(isinstance(b, str) for b in bufs):
            raise StoreError("an inline value's buffers are not a list of strings")
        return cls(str(raw["blob"]), raw.get("inline"), tuple(bufs))


class Binding(msgspec.Struct, frozen=True):
    """A name the step bound, changed or left changed, with what the record shows of its
    value (type, size, digest: None when it could not be digested)."""

    name: str
    digest: str | None
    type: str
    size: int | None
    value: Value | None = None  # stored alone (bound, or restored in place)
    callable: bool = False  # a class or function: bound first, later values refer to it
    inplace: bool = False  # an input changed in place: given its state, not rebound
    unit: bool = False  # bound or changed by the unit
    seen: bool = False  # not bound; its object changed with the step
    # restored lazily: read when first needed. The packages its digest reached (their
    # versions go into the key of a step that reads it while it is unread); None: eager.
    lazy: tuple[str, ...] | None = None
    # Stored alone, its digest reaching no code: the packages that digest reached. A
    # hit that binds it keeps its stored digest for the next step's key, as for a lazy
    # value (`engine/code/carry.py`). None: its digest reached code (or an older entry).
    reached: tuple[str, ...] | None = None

    def describe(self) -> dict[str, Any]:
        """Name, type, size and digest, for the record."""
        return {"name": self.name, "type": self.type, "size": self.size, "digest": self.digest}

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = self.describe()
        if self.value is not None:
            out.update(self.value.to_json())
        for flag in ("callable", "inplace", "unit", "seen"):
            if getattr(self, flag):
                out[flag] = True
        if self.lazy is not None:
            out["lazy"] = list(self.lazy)
        if self.reached is not None:
            out["reached"] = list(self.reached)
        return out

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Binding:
        return cls(
            name=raw["name"],
            digest=raw.get("digest"),
            type=raw.get("type", ""),
            size=raw.get("size"),
            value=Value.from_json(raw) if "blob" in raw else None,
            callable=bool(raw.get("callable", False)),
            inplace=bool(raw.get("inplace", False)),
            unit=bool(raw.get("unit", False)),
            seen=bool(raw.get("seen", False)),
            lazy=tuple(raw["lazy"]) if isinstance(raw.get("lazy"), list) else None,
            reached=tuple(raw["reached"]) if isinstance(raw.get("reached"), list) else None,
        )


class Stream(msgspec.Struct, frozen=True):
    """One pickle stream of objects that share parts (`engine/units/stream.py`): where
    it is stored, the input names its references start from, and either the roots whose
    inner objects it refers to (`inner`, a unit) or the changed inputs it holds whole
    (`names`, a by-value copy)."""

    value: Value
    roots: list[str] = msgspec.field(default_factory=list)
    inner: list[str] = msgspec.field(default_factory=list)
    names: list[str] = msgspec.field(default_factory=list)

    def to_json(self, kind: str) -> dict[str, Any]:
        out = {**self.value.to_json(), "roots": list(self.roots)}
        out[kind] = list(self.inner if kind == "inner" else self.names)
        return out

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Stream:
        return cls(
            Value.from_json(raw),
            list(raw.get("roots", [])),
            list(raw.get("inner", [])),
            list(raw.get("names", [])),
        )


class Unit(msgspec.Struct, frozen=True):
    """The values of a step that share objects, stored as one stream, and (when a
    library may lay its changed inputs out anew) a second stream holding them whole."""

    stream: Stream
    byvalue: Stream | None = None

    def files(self) -> list[str]:
        return self.stream.value.files() + (self.byvalue.value.files() if self.byvalue else [])

    def to_json(self) -> dict[str, Any]:
        out = self.stream.to_json("inner")
        if self.byvalue is not None:
            out["whole"] = self.byvalue.to_json("names")
        return out

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Unit:
        whole = raw.get("whole")
        return cls(Stream.from_json(raw), Stream.from_json(whole) if whole else None)


class Result(msgspec.Struct, frozen=True):
    """The cell's result: the value, or (`bundle`) its display when the value could not
    be stored; `shown`, the MIME bundle the live run showed for it; `refs`, the value
    refers to objects the names hold, resolved once they are bound."""

    value: Value
    bundle: bool = False
    shown: Value | None = None
    refs: bool = False

    def files(self) -> list[str]:
        return self.value.files() + (self.shown.files() if self.shown is not None else [])

    def to_json(self) -> dict[str, Any]:
        out = self.value.to_json()
        if self.bundle:
            out["bundle"] = True
        if self.shown is not None:
            out["shown"] = self.shown.to_json()
        if self.refs:
            out["refs"] = True
        return out

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Result:
        shown = raw.get("shown")
        return cls(
            Value.from_json(raw),
            bool(raw.get("bundle", False)),
            Value.from_json(shown) if shown else None,
            bool(raw.get("refs", False)),
        )


class FileRead(msgspec.Struct, frozen=True):
    """A file the step read, with its digest then: the entry is valid while it holds."""

    path: str
    digest: str


class Producer(msgspec.Struct, frozen=True):
    """The step whose execution bound an input with the digest the key took, and the
    key of the entry it made or served (None: it ran uncached, or as an effect)."""

    step: str
    key: str | None


class Provenance(msgspec.Struct, frozen=True):
    """Who computed the entry (each part None when not shared) and the producer of each
    input the engine knows one of. When, the package versions and the input digests
    are the entry's `created` and its key's preimage."""

    user: str | None
    host: str | None
    producers: dict[str, Producer] = msgspec.field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "user": self.user,
            "host": self.host,
            "from": {n: {"step": p.step, "key": p.key} for n, p in self.producers.items()},
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Provenance:
        return cls(
            _text(raw.get("user")),
            _text(raw.get("host")),
            {
                str(n): Producer(str(p["step"]), _text(p.get("key")))
                for n, p in dict(raw.get("from", {})).items()
            },
        )


def _text(raw: Any) -> str | None:
    return None if raw is None else str(raw)


class Entry(msgspec.Struct):
    """What one live run of a pure step left (see the module docstring)."""

    step: str
    created: float
    duration_s: float
    bindings: list[Binding]
    deleted: list[str]
    outputs: Value
    result: Result | None
    files: list[FileRead]
    params: dict[str, Any]
    inline_backend: bool
    preimage: dict[str, Any]
    source: str
    unit: Unit | None = None
    state: Value | None = None
    trace: dict[str, str] = msgspec.field(default_factory=dict)  # read through eval: name -> digest
    key: str | None = None
    provenance: Provenance | None = None  # None: written before provenance was recorded

    def blobs(self) -> list[str]:
        """Every blob file the entry uses, each once, in a stable order."""
        return self._files(lazy=True)

    def eager_blobs(self) -> list[str]:
        """The blob files a hit reads at once: all but those that only values restored
        lazily (`Binding.lazy`) use, which are read when first needed."""
        return self._files(lazy=False)

    def _files(self, lazy: bool) -> list[str]:
        names: list[str] = []
        for b in self.bindings:
            if b.value is not None and (lazy or b.lazy is None):
                names += b.value.files()
        names += self.outputs.files()
        if self.result is not None:
            names += self.result.files()
        if self.unit is not None:
            names += self.unit.files()
        if self.state is not None:
            names += self.state.files()
        return list(dict.fromkeys(names))

    def stored_bindings(self) -> list[Binding]:
        """The bindings whose values are stored alone (bound, or given in place)."""
        return [b for b in self.bindings if b.value is not None]

    def described(self) -> list[dict[str, Any]]:
        """Name, type, size and digest of each value the entry binds, for the record."""
        return [b.describe() for b in self.bindings]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "step": self.step,
            "created": self.created,
            "duration_s": self.duration_s,
            "bindings": [b.to_json() for b in self.bindings],
            "deleted": list(self.deleted),
            "outputs": self.outputs.to_json(),
            "result": self.result.to_json() if self.result is not None else None,
            "files": [{"path": f.path, "digest": f.digest} for f in self.files],
            "params": dict(self.params),
            "inline_backend": self.inline_backend,
            "preimage": self.preimage,
            "source": self.source,
        }
        if self.unit is not None:
            out["shared"] = self.unit.to_json()
        if self.state is not None:
            out["state"] = self.state.to_json()
        if self.trace:
            out["trace"] = dict(self.trace)
        if self.key is not None:
            out["key"] = self.key
        if self.provenance is not None:
            out["by"] = self.provenance.to_json()
        return out

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Entry:
        """The entry of a row. Raises StoreError when the row is not an entry of this
        layout (a row of another format, or damaged past its authentication)."""
        try:
            result, shared, state = raw.get("result"), raw.get("shared"), raw.get("state")
            by = raw.get("by")
            return cls(
                step=raw["step"],
                created=float(raw.get("created", 0.0)),
                duration_s=float(raw.get("duration_s", 0.0)),
                bindings=[Binding.from_json(b) for b in raw.get("bindings", [])],
                deleted=list(raw.get("deleted", [])),
                outputs=Value.from_json(raw["outputs"]),
                result=Result.from_json(result) if result else None,
                files=[FileRead(f["path"], f["digest"]) for f in raw.get("files", [])],
                params=dict(raw.get("params", {})),
                inline_backend=bool(raw.get("inline_backend", False)),
                preimage=dict(raw.get("preimage", {})),
                source=raw.get("source", ""),
                unit=Unit.from_json(shared) if shared else None,
                state=Value.from_json(state) if state else None,
                trace={str(k): str(v) for k, v in raw.get("trace", {}).items()},
                key=raw.get("key"),
                provenance=Provenance.from_json(by) if by is not None else None,
            )
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise StoreError(f"an entry row has another layout ({err!r})") from None
