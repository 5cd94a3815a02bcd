"""Which names a step's key takes as inputs: the names its code reads before binding
them, that resolve in the notebook's namespace, minus what `--ignore` leaves out, dunder
names, IPython's own (`In`, `Out`, `exit`, ... when unchanged) and the extension's own
objects (`step`). The same rule decides which globals of the notebook functions a step
reaches are inputs (`acceptor`). Unlike the names a step binds (`objects/user_names.py`),
a read of IPython's history (`_`, `Out`) is an input: the step computes from it. Attribute chains the cell reads from a module
(`settings.THRESHOLD`) are inputs too (`attribute_refs`; which of them, by value, is
`hashing.reach`'s rule). The engine and `%step plan` select inputs with these."""

from __future__ import annotations

import sys
from collections.abc import Callable, Container, Iterable, Iterator
from types import ModuleType
from typing import Any

from ...hashing import sources
from ...hashing.bytecode import expression_names
from ...hashing.code import is_own
from ...hashing.reach import AttrRef
from ..objects import user_names
from .analysis import CellInfo


def candidates(reads: Iterable[str], ignore: Iterable[str]) -> Iterator[str]:
    """The names read that may be inputs, in the order they are read."""
    ignored = set(ignore)
    return (n for n in reads if n not in ignored and not n.startswith("__"))


def is_input(
    name: str, ns: dict[str, Any], hidden: dict[str, Any], pending: Container[str] = ()
) -> bool:
    """Whether `name` (a candidate) is an input: bound in `ns` to a value that is not
    IPython's own (`hidden`, the shell's `user_ns_hidden`) nor the extension's, or
    bound by a hit that has not read its value yet (`pending`)."""
    if name not in ns:
        return name in pending
    value = ns[name]
    return not user_names.put_by_ipython(name, value, hidden) and not is_own(value)


def select(
    reads: Iterable[str],
    ignore: Iterable[str],
    ns: dict[str, Any],
    hidden: dict[str, Any],
    pending: Container[str] = (),
) -> list[str]:
    """The inputs of a step that reads `reads`, in the order they are read."""
    return [n for n in candidates(reads, ignore) if is_input(n, ns, hidden, pending)]


def acceptor(
    ignore: Iterable[str], ns: dict[str, Any], hidden: dict[str, Any], pending: Container[str] = ()
) -> Callable[[str], bool]:
    """Whether a name reached through a function (a notebook global, or a module's
    attribute `module.name`) is an input: the rule of `select`, and `--ignore` of the
    attribute or of its root."""
    ignored = set(ignore)

    def accept(name: str) -> bool:
        root = name.partition(".")[0]
        if name in ignored or root in ignored:
            return False
        if name.startswith("__") and root != "__main__":  # (`__main__.cfg`: the notebook's cfg)
            return False
        return "." in name or is_input(name, ns, hidden, pending)

    return accept


def attribute_refs(info: CellInfo, names: Iterable[str], ns: dict[str, Any]) -> list[AttrRef]:
    """The attribute chains the cell reads (or assigns) from a module: rooted at one of
    its inputs `names` bound to a module, or at a module the cell imports that is loaded
    already and is the notebook's own (it may carry attributes set at run time).

    An installed module the cell imports is not a root of what it reads: the name is
    bound by the step before it is read, the module's version is in the key, and in a
    fresh kernel the module is not loaded yet, so reading its attributes would make
    the key of a step run twice in one kernel differ from a fresh kernel's (`import
    numpy as np; x = np.pi`). What it assigns there is watched all the same."""
    roots: dict[str, ModuleType] = {}
    for name in names:
        if isinstance(ns.get(name), ModuleType):
            roots[name] = ns[name]
    written = dict(roots)
    for alias, module in info.imports.items():
        loaded = sys.modules.get(module)
        if alias not in roots and isinstance(loaded, ModuleType):
            written[alias] = loaded
            if sources.is_local_module(module) or vars(loaded) is ns:
                roots[alias] = loaded  # (`import __main__`: the notebook's own names)
    refs = [AttrRef(c[0], roots[c[0]], c[1:]) for c in info.chains if c[0] in roots]
    refs += [AttrRef(c[0], written[c[0]], c[1:], True) for c in info.attr_writes if c[0] in written]
    for module in info.imports.values():  # `from helpers import f`: helpers.f, if loaded
        parent, _, attr = module.rpartition(".")
        loaded = sys.modules.get(parent) if parent else None
        own = sources.is_local_module(parent)
        if isinstance(loaded, ModuleType) and module not in sys.modules and own:
            refs.append(AttrRef(parent, loaded, (attr,)))
    return refs


def spelled(names: Iterable[str], ns: dict[str, Any]) -> tuple[str, ...]:
    """The names the strings bound to `names` spell, as expressions or formulas a
    library reads from the caller's namespace (`smf.ols(formula, data=df)`)."""
    out: list[str] = []
    for name in names:
        value = ns.get(name)
        if isinstance(value, str):
            out += expression_names(value)
    return tuple(out)


def of_cell(
    info: CellInfo,
    ignore: Iterable[str],
    ns: dict[str, Any],
    hidden: dict[str, Any],
    pending: Container[str] = (),
) -> dict[str, Any]:
    """The input arguments of `hashing.key.compute` for a cell analysed as `info`;
    `pending`, the names bound to values not read yet (taken by their stored digests:
    the caller passes them as `known`)."""
    reads = dict.fromkeys(info.reads + spelled(info.expression_vars, ns))
    names = select(reads, ignore, ns, hidden, pending)
    ignored = set(ignore)
    return {
        "inputs": names,
        "attributes": [r for r in attribute_refs(info, names, ns) if r.root not in ignored],
        "accept": acceptor(ignore, ns, hidden, pending),
        "dynamic": info.dynamic,
        "environ": [v for v in info.environ if v not in ignored],
        "cell_modules": list(info.imports.values()) + [m for m in info.star_imports if m],
    }
