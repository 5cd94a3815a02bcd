"""Which names of the notebook's namespace are the user's: the one rule the engine
goes by when it asks what a step bound or deleted, and which other names could be
left holding an object a hit replaces.

Not the user's: dunder names (`__builtins__`), IPython's own history and output names
(`_`, `__`, `_i3`, `_3`, `In`, `Out`, `exit`, ...), and a name IPython put in the
namespace (`user_ns_hidden`) that still holds what IPython put there. A name beginning
with `_` is the user's otherwise (`_cache = {}`). Which names are a step's *inputs* is
`code/inputs.py`'s rule: reading `_` (the last result) makes it an input, and the
extension's own objects (`step`) never are.
"""

from __future__ import annotations

import re
from typing import Any

_IPYTHONS = re.compile(r"^(_+|_i+|_i?\d+|In|Out|exit|quit|get_ipython|_oh|_ih|_dh|_exit_code)$")
_MISSING = object()


def put_by_ipython(name: str, value: Any, hidden: dict[str, Any] | None) -> bool:
    """Whether `value` is what IPython put under `name` and still holds there (`hidden`
    is the shell's `user_ns_hidden`): IPython's, whatever its spelling."""
    return hidden is not None and hidden.get(name, _MISSING) is value


def is_ipythons(name: str, value: Any = _MISSING, hidden: dict[str, Any] | None = None) -> bool:
    """Whether `name` is IPython's own (or a dunder name): by its spelling, or because
    IPython put `value` there."""
    if name.startswith("__") or _IPYTHONS.match(name):
        return True
    return put_by_ipython(name, value, hidden)


def is_users(name: str, value: Any = _MISSING, hidden: dict[str, Any] | None = None) -> bool:
    """Whether `name` (holding `value`) is one of the user's names."""
    return not is_ipythons(name, value, hidden)
