"""The anchors: what a user would otherwise pick, called the way that user would.

marimo is optional (`pip install marimo`); every anchor that needs it returns None
when it is not installed, and its rows are then left out of the table.
"""

from __future__ import annotations

import hashlib


def joblib_hash(value) -> str:
    import joblib

    return joblib.hash(value)


def marimo_available() -> bool:
    try:
        import marimo._save.encode  # noqa: F401
    except Exception:
        return False
    return True


def marimo_hash(value) -> bytes:
    """marimo's content hash of one value, as its cache does for a cell's reference:
    primitives, numeric arrays (`data_to_buffer`), containers of those, else its
    deterministic pickle; then the default hash (sha256)."""
    from marimo._runtime.primitives import is_data_primitive, is_primitive
    from marimo._save import encode
    from marimo._save.hash import DEFAULT_HASH

    if is_primitive(value):
        data = encode.primitive_to_bytes(value)
    elif is_data_primitive(value):
        data = encode.data_to_buffer(value)
    else:
        try:
            data = encode.common_container_to_bytes(value)
        except (TypeError, ValueError):
            data = encode.deterministic_dumps(value, DEFAULT_HASH)
    return hashlib.new(DEFAULT_HASH, data, usedforsecurity=False).digest()


MARIMO_CACHE_SRC = '''
def make_marimo_work(save_path):
    """marimo's persistent_cache on `a * 2`. Called from inside a function: the
    decorator reads the caller's frame locals as the cell scope, and a module's
    `__builtins__` (a module, not a dict, outside marimo's runtime) breaks it."""
    import marimo as mo

    @mo.persistent_cache(save_path=save_path)
    def work(a):
        return a * 2

    return work
'''
