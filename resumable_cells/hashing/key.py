"""The key of one execution of a step, and its readable preimage.

key = xxh3_128 over a typed, length-prefixed encoding of: the store format version, the
step name, the normalised code (plus --version), each input's digest (the cell's names,
the notebook globals the functions it reaches read, the module attributes it and they
read: see `reach`), the Python version and the versions of the installed modules
reached, the source of the local modules reached (`sources`), and the content of
--deps files. Run parameters (epoch, seed) and files a step read are checked against
the entry, since they are only known once the step has run.
"""

from __future__ import annotations

import glob
import os
import sys
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any

import msgspec
import xxhash

from ..errors import KeyComponentError, MissingDeps
from . import frames, reach, sources, versions
from .files import file_digest, read_digest
from .reach import AttrRef

__all__ = [
    "Key", "compute", "describe", "input_digests", "file_digest", "read_digest", "deps_digests",
    "code_id",
    "PYTHON",
]  # fmt: skip

PYTHON = ".".join(map(str, sys.version_info[:3]))


class Key(msgspec.Struct):
    address: str  # the content address entries are stored under (hex)
    preimage: dict
    digests: dict[str, str] = msgspec.field(default_factory=dict)  # input name -> digest
    attributes: dict[str, AttrRef] = msgspec.field(default_factory=dict)  # module attribute inputs
    traced: tuple[str, ...] = ()  # reads through eval/exec of strings: the run traces them
    # the string constants of the functions it reaches that could name a file it opens
    named: tuple[str, ...] = ()
    # the inputs whose digests reached no code: what a hit hands the next step's key
    known: dict[str, reach.Known] = msgspec.field(default_factory=dict)


def describe(value: Any) -> tuple[str, int]:
    """(type name, size in bytes) of an input, for the record."""
    t = type(value)
    if t is ModuleType:  # asking a module for `nbytes` may run its `__getattr__`
        return "module", 0
    tname = t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"
    size = getattr(value, "nbytes", None)
    if not isinstance(size, int):
        usage = getattr(value, "memory_usage", None)  # pandas: shallow, never per string
        try:
            if callable(usage) and t.__module__.startswith("pandas"):
                size = _frame_bytes(value) if hasattr(value, "columns") else int(usage(deep=False))
            else:
                size = sys.getsizeof(value)
        except (TypeError, ValueError):
            size = 0
    return tname, int(size)


def _frame_bytes(frame: Any) -> int:
    """A frame's shallow size, its columns' and its index's `nbytes`: what
    `memory_usage(deep=False).sum()` adds up (but for an index's hash table, when one
    was built), without the Series it builds, read from the frame's blocks where they
    can be: a step's inputs are described on every hit."""
    columns = frames.nbytes(frame)
    if columns is None:
        columns = sum(column.nbytes for _, column in frame.items())
    return int(columns + frame.index.nbytes)


DYNAMIC_WAY_OUT = (
    "Read the names directly (`cfg`, or `globals()['cfg']` with a literal name, or "
    "through `eval`/`exec` of a string, whose reads are traced), or mark the step "
    "`--effect` to run it every time"
)


def traceable(read: str) -> bool:
    """Whether a dynamic read, as shown (`` `eval(expr)` ``, `` `exec()` in f ``), is
    code made from a string, whose reads a run can trace (`engine/live/trace.py`)."""
    return read.strip("`").startswith(("eval(", "exec("))


def dynamic_error(reads: list[str]) -> KeyComponentError:
    """The refusal of a step that reads the namespace in a way its key cannot follow;
    `reads` as they are shown (`` `globals()[name]` ``, `` `globals()` in pick ``)."""
    shown = ", ".join(reads[:3])
    return KeyComponentError(
        f"it reads the namespace dynamically ({shown}), so its inputs cannot be known "
        "before it runs",
        ways_out=DYNAMIC_WAY_OUT,
    )


def input_digests(
    ns: dict, names: list[str], known: dict[str, reach.Known] | None = None
) -> tuple[dict[str, str], set[str], dict]:
    """Each input's digest as a key holds it (a name, or a module attribute's label such
    as `settings.THRESHOLD`), without following what it reaches: for staleness, which
    watches the inputs a step used. `known`: values not read yet (see `compute`).
    Returns (digests, modules reached, descriptions). Raises KeyComponentError."""
    wanted = set(names)
    known = known or {}
    plain = [n for n in names if "." not in n and (n in ns or n in known)]
    environ = [v for v in map(reach.environ_name, names) if v is not None]
    refs = []
    for label in (n for n in names if "." in n and reach.environ_name(n) is None):
        ref = reach.ref_of(ns, label)
        if ref is not None:  # taken whatever its value, as an attribute the step sets is
            refs.append(AttrRef(ref.root, ref.module, ref.attrs, written=True))
    accept = wanted.__contains__
    got = reach.collect(ns, plain, refs, accept, describe, known=known, environ=environ)
    return got.digests, got.modules, got.info


def deps_digests(patterns: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pattern in patterns:
        paths = sorted(p for p in glob.glob(pattern, recursive=True) if os.path.isfile(p))
        if not paths:
            raise MissingDeps(
                f"--deps {pattern!r} matches no file; give paths or globs relative to "
                f"the working directory ({os.getcwd()})"
            )
        for p in paths:
            out[p] = file_digest(p)
    return out


def code_id(normalised: str) -> str:
    """The code component of a key's readable preimage: a short digest of the
    normalised cell."""
    return xxhash.xxh3_64_hexdigest(normalised.encode())


def compute(
    *,
    format_version: int,
    step: str,
    normalised: str,
    version_tag: str | None,
    ns: dict,
    inputs: list[str],
    cell_modules: list[str],
    deps: list[str],
    attributes: Iterable[AttrRef] = (),
    accept: Callable[[str], bool] = lambda name: False,
    dynamic: Iterable[str] = (),
    known: dict[str, reach.Known] | None = None,
    environ: Iterable[str] = (),
    settings: Callable[[set[str]], dict[str, str]] | None = None,
) -> tuple[Key, dict]:
    """The key and, separately, the input descriptions (for the record). `inputs` and
    `attributes` are what the cell reads; `accept(name)` says whether a name the
    functions it reaches read is an input too. Raises KeyComponentError (an input that
    cannot be hashed, a dynamic read, a local module edited since its import). `known`:
    the inputs whose values are not read yet, by their stored digests; `environ`, the
    environment variables the cell reads (inputs as `os.environ['NAME']`); `settings`,
    the digests of the settings of the libraries among the top-level modules it is
    given (the modules the key reaches)."""
    reads = [f"`{d}`" for d in dynamic]
    if untraceable := [r for r in reads if not traceable(r)]:
        raise dynamic_error(untraceable)
    got = reach.collect(ns, inputs, attributes, accept, describe, known=known, environ=environ)
    if untraceable := [r for r in got.dynamic if not traceable(r)]:
        raise dynamic_error(untraceable)
    traced = sorted(set(reads) | set(got.dynamic))
    digests = got.digests
    reached = sorted(got.modules) + list(cell_modules)
    found = sources.reached(reached) if reached else sources.Sources()
    modules = got.modules | found.packages | {m.partition(".")[0] for m in cell_modules}
    env = {"python": PYTHON}
    for m in sorted(modules):
        v = versions.module_version(m)
        if v is not None:
            env[m] = v
    files = deps_digests(deps) if deps else {}
    configured = settings(modules) if settings is not None else {}
    h = xxhash.xxh3_128()
    for part in (
        f"format={format_version}",
        f"step={step}",
        f"code={normalised}",
        f"version={version_tag or ''}",
        *(f"input:{n}={digests[n]}" for n in sorted(digests)),
        *(f"env:{m}={v}" for m, v in sorted(env.items())),
        *(f"source:{p}={d}" for p, d in sorted(found.files.items())),
        *(f"deps:{p}={d}" for p, d in sorted(files.items())),
        *(f"traced:{r}" for r in traced),
        *(f"settings:{n}={d}" for n, d in sorted(configured.items())),
    ):
        b = part.encode("utf-8", "surrogatepass")
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    preimage = {
        "format": format_version,
        "step": step,
        "code": code_id(normalised),
        "version": version_tag,
        "inputs": digests,
        "env": env,
        "sources": found.files,
        "deps": files,
    }
    if traced:
        preimage["traced"] = traced
    if configured:
        preimage["settings"] = configured
    key = Key(
        h.hexdigest(), preimage, digests, got.attributes, tuple(traced), tuple(got.strings),
        got.known,
    )  # fmt: skip
    return key, got.info


def matches(
    stored: dict,
    code: str,
    version: str | None,
    digest_of: Callable[[str], str | None],
    selected: Iterable[str],
    deps: list[str],
) -> bool:
    """Whether the key whose preimage is `stored` is the key `compute` would give now:
    the same code and `--version`, every input (those the key held, and `selected`,
    those it would hold now) with the same digest (`digest_of(name)`, None when the
    name is no input), the packages at the same versions, the local modules with the
    same source, the `--deps` files with the same content. `%step plan` asks this of a
    step it has not run, whose inputs earlier steps of the plan may leave."""
    if stored.get("code") != code or stored.get("version") != version:
        return False
    held = stored.get("inputs", {})
    if any(held.get(n) != digest_of(n) for n in set(held) | set(selected)):
        return False
    if not same_packages(stored.get("env", {})):
        return False
    if sources_now(stored) != stored.get("sources", {}):
        return False
    try:
        return not deps or deps_digests(deps) == stored.get("deps")
    except (OSError, KeyComponentError, MissingDeps):
        return False


def same_packages(env: dict) -> bool:
    """Whether Python and the packages a key reached have its versions still."""
    if env.get("python") != PYTHON:
        return False
    return all(versions.module_version(m) == v for m, v in env.items() if m != "python")


def sources_now(preimage: dict) -> dict | None:
    """The digests the local modules a key reached have now (None when one of them was
    edited since its import)."""
    labels = preimage.get("sources", {})
    try:
        found = sources.reached(sources.module_name(label) for label in labels).files
    except KeyComponentError:
        return None
    return {label: found.get(label) for label in labels}
