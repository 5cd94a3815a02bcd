"""Digests: of values (`values`), of functions and classes by code (`code`), of numpy
and pandas objects (`arrays`), the key of one execution (`key`), what a step reaches
beyond its cell's names (`reach`, reading functions' `bytecode`), the versions of the
packages it reaches (`versions`) and the source of its local modules (`sources`, with
`files`).

`values` is the core and imports neither `code` nor `arrays`; both build on it and are
plugged in here (`registry`), so importing anything under `resumable_cells.hashing`
wires them.
"""

from __future__ import annotations

from . import arrays, code, registry
from .values import Hasher, Unhashable, digest, hex_digest, register_hasher

registry.use_callable_digest(code.callable_digest)
registry.add_library("numpy", arrays.register)
registry.add_library("pandas", arrays.register)

__all__ = ["Hasher", "Unhashable", "digest", "hex_digest", "register_hasher"]
