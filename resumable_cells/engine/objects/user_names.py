"""Which names of the notebook's namespace are the user's: the one rule the engine
goes by when it asks what a step bound or deleted, and which other names could be
left holding an object a hit replaces.

Not the user's: dunder names (`__builtins__`), IPython's own history and output names
(`_`, `__`, `_i3`, `_3`, `In`, `Out`, `exit`, ...), and a name IPython put in the
namespace (`user_ns_hidden`) that still holds what IPython put there. A name beginning
with `_` is the user's otherwise (`_cache = {}`). Which names are a step's *inputs* is
`code/inputs.py`'s rule: reading `_` (the last result) makes it an input, and the
extension's own objects (`step`) never are: IPython's history names (`is_history`) are
inputs although IPython put their values there, where its other names are not.
"""

from __future__ import annotations

import re
from typing import Any

_IPYTHONS = re.compile(r"^(_+|_i+|_i?\d+|In|Out|exit|quit|get_ipython|_oh|_ih|_dh|_exit_code)$")
# What IPython keeps of the cells run so far: results (`_`, `__`, `___`, `_5`, `Out`,
# `_oh`), sources (`_i`, `_ii`, `_i5`, `In`, `_ih`) and the folders `%cd` went to (`_dh`);
# and the notebook's path, which it puts there for each session (`__session__`).
_HISTORY = re.compile(r"^(_{1,3}|_i{1,3}|_i?\d+|In|Out|_oh|_ih|_dh|__session__)$")
_MISSING = object()


def put_by_ipython(name: str, value: Any, hidden: dict[str, Any] | None) -> bool:
    """Whether `value` is what IPython put under `name` and still holds there (`hidden`
    is the shell's `user_ns_hidden`): IPython's, whatever its spelling."""
    return hidden is not None and hidden.get(name, _MISSING) is value


def is_history(name: str) -> bool:
    """Whether `name` is one of IPython's history names (or `__session__`): what it
    holds depends on the cells run before, in their order, or on the session, so a step
    that reads it computes from it."""
    return _HISTORY.match(name) is not None


def is_ipythons(name: str, value: Any = _MISSING, hidden: dict[str, Any] | None = None) -> bool:
    """Whether `name` is IPython's own (or a dunder name): by its spelling, or because
    IPython put `value` there."""
    if name.startswith("__") or _IPYTHONS.match(name):
        return True
    return put_by_ipython(name, value, hidden)


def is_users(name: str, value: Any = _MISSING, hidden: dict[str, Any] | None = None) -> bool:
    """Whether `name` (holding `value`) is one of the user's names."""
    return not is_ipythons(name, value, hidden)
