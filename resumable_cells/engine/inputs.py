"""Which names a step's key takes as inputs: the names its code reads before binding
them, that resolve in the notebook's namespace, minus what `--ignore` leaves out, dunder
names, IPython's own (`In`, `Out`, `exit`, ... when unchanged) and the extension's own
objects (`step`). The engine and `%step plan` select inputs with the same rule."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ..hashing.code import is_own


def candidates(reads: Iterable[str], ignore: Iterable[str]) -> Iterator[str]:
    """The names read that may be inputs, in the order they are read."""
    ignored = set(ignore)
    return (n for n in reads if n not in ignored and not n.startswith("__"))


def is_input(name: str, ns: dict, hidden: dict) -> bool:
    """Whether `name` (a candidate) is an input: bound in `ns` to a value that is not
    IPython's own (`hidden`, the shell's `user_ns_hidden`) nor the extension's."""
    if name not in ns:
        return False
    value = ns[name]
    if name in hidden and hidden[name] is value:
        return False
    return not is_own(value)


def select(reads: Iterable[str], ignore: Iterable[str], ns: dict, hidden: dict) -> list[str]:
    """The inputs of a step that reads `reads`, in the order they are read."""
    return [n for n in candidates(reads, ignore) if is_input(n, ns, hidden)]
