"""Digests: of values (`values`), of functions and classes by code (`code`), of numpy
and pandas objects (`arrays`), the key of one execution (`key`) and the versions of the
packages a step reaches (`versions`)."""

from __future__ import annotations

from .values import Hasher, Unhashable, digest, hex_digest, register_hasher

__all__ = ["Hasher", "Unhashable", "digest", "hex_digest", "register_hasher"]
