"""Digests: of values (`values`), of functions and classes by code (`code`), of numpy
and pandas objects (`arrays`), of drawings by identity (`opaque`), of library objects
whose pickling carries noise (`libraries`), the key of one execution (`key`), what a
step reaches beyond its cell's names (`reach`, reading functions' `bytecode`), the
versions of the packages it reaches (`versions`) and the source of its local modules
(`sources`, with `files`).

`values` is the core and imports none of `code`, `arrays`, `opaque` or `libraries`;
they build on it and are plugged in here (`registry`), so importing anything under
`resumable_cells.hashing` wires them.
"""

from __future__ import annotations

import functools

from . import arrays, code, libraries, opaque, registry
from .values import Hasher, Unhashable, digest, hex_digest, register_hasher

registry.use_callable_digest(code.callable_digest)
registry.use_with_state(code.with_state)
registry.add_handler(code.LRU_WRAPPER, code.h_lru_wrapper)
registry.add_handler(functools.cached_property, code.h_cached_property)
registry.add_library("numpy", arrays.register)
registry.add_library("pandas", arrays.register)
registry.add_library("matplotlib", opaque.register)
registry.add_library("matplotlib", libraries.register)
registry.add_library("sklearn", libraries.register)
registry.add_library("astropy", libraries.register)
registry.add_library("plotly", libraries.register)
registry.add_library("statsmodels", libraries.register)

__all__ = ["Hasher", "Unhashable", "digest", "hex_digest", "register_hasher"]
