"""The key of one execution of a step, and its readable preimage.

key = xxh3_128 over a typed, length-prefixed encoding of: the store format version, the
step name, the normalised code (plus --version), each input's digest (notebook functions
by code, transitively), the Python version and the versions of the modules reached, and
the content of --deps files. Run parameters (epoch, seed) and files a step read are
checked against the entry, since they are only known once the step has run.
"""

from __future__ import annotations

import glob
import os
import sys
from dataclasses import dataclass, field
from typing import Any

import xxhash

from ..errors import KeyComponentError, MissingDeps, Unhashable
from . import versions
from .values import Hasher

PYTHON = ".".join(map(str, sys.version_info[:3]))


@dataclass
class Key:
    key: str
    preimage: dict
    digests: dict[str, str] = field(default_factory=dict)  # input name -> digest


def describe(value: Any) -> tuple[str, int]:
    t = type(value)
    tname = t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"
    size = getattr(value, "nbytes", None)
    if not isinstance(size, int):
        usage = getattr(value, "memory_usage", None)  # pandas: shallow, never per string
        try:
            if callable(usage) and t.__module__.startswith("pandas"):
                size = (
                    int(usage(deep=False).sum())
                    if hasattr(value, "columns")
                    else int(usage(deep=False))
                )
            else:
                size = sys.getsizeof(value)
        except (TypeError, ValueError):
            size = 0
    return tname, int(size)


def input_digests(ns: dict, names: list[str]) -> tuple[dict[str, str], set[str], dict]:
    """Digest each input. Returns (name -> digest, modules reached, name -> description)."""
    out: dict[str, str] = {}
    modules: set[str] = set()
    info: dict[str, dict] = {}
    for name in names:
        h = Hasher(ns)
        try:
            h.value(ns[name], name)
        except Unhashable as e:
            raise KeyComponentError(
                f"input {e.path} cannot be hashed ({e.why})", path=e.path
            ) from None
        except RecursionError:
            raise KeyComponentError(
                f"input {name} is nested too deeply to hash", path=name
            ) from None
        out[name] = h.digest().hex()
        modules |= h.modules
        tname, size = describe(ns[name])
        info[name] = {"type": tname, "size": size, "digest": out[name]}
    return out, modules, info


def file_digest(path: str) -> str:
    st = os.stat(path)
    memo = _FILE_MEMO.get(path)
    if memo and memo[0] == (st.st_size, st.st_mtime_ns):
        return memo[1]
    h = xxhash.xxh3_128()
    with open(path, "rb") as f:
        while chunk := f.read(8 << 20):
            h.update(chunk)
    d = h.hexdigest()
    _FILE_MEMO[path] = ((st.st_size, st.st_mtime_ns), d)
    return d


_FILE_MEMO: dict[str, tuple[tuple[int, int], str]] = {}


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
) -> tuple[Key, dict]:
    """The key and, separately, the input descriptions (for the record)."""
    digests, modules, info = input_digests(ns, inputs)
    modules |= {m.partition(".")[0] for m in cell_modules}
    env = {"python": PYTHON}
    for m in sorted(modules):
        v = versions.module_version(m)
        if v is not None:
            env[m] = v
    files = deps_digests(deps) if deps else {}
    h = xxhash.xxh3_128()
    for part in (
        f"format={format_version}",
        f"step={step}",
        f"code={normalised}",
        f"version={version_tag or ''}",
        *(f"input:{n}={digests[n]}" for n in sorted(digests)),
        *(f"env:{m}={v}" for m, v in sorted(env.items())),
        *(f"deps:{p}={d}" for p, d in sorted(files.items())),
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
        "deps": files,
    }
    return Key(h.hexdigest(), preimage, digests), info
