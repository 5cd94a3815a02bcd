"""Which names a step's key takes as inputs: the names its code reads before binding
them, that resolve in the notebook's namespace, minus what `--ignore` leaves out, dunder
names, IPython's own objects (`exit`, `get_ipython`, ... while they hold what IPython
put there) and the extension's own (`step`). The same rule decides which globals of the
notebook functions a step reaches are inputs (`acceptor`). Unlike the names a step binds
(`objects/user_names.py`), a read of IPython's history (`_`, `__`, `_5`, `_i`, `Out`,
`In`) is an input: the step computes from the cells run before it. Attribute chains the
cell reads from a module (`settings.THRESHOLD`) are inputs too (`attribute_refs`; which
of them, by value, is `hashing.reach`'s rule), and so is a name the notebook put among
the builtins (`builtins.LIMIT`). The engine and `%step plan` select inputs with these."""

from __future__ import annotations

import sys
from collections.abc import Callable, Container, Iterable, Iterator
from types import ModuleType
from typing import Any

from ...hashing import sources
from ...hashing.bytecode import expression_names
from ...hashing.code import is_own
from ...hashing.reach import AttrRef, put_in_builtins
from ..objects import user_names
from .analysis import CellInfo


def candidates(reads: Iterable[str], ignore: Iterable[str]) -> Iterator[str]:
    """The names read that may be inputs, in the order they are read."""
    ignored = set(ignore)
    return (n for n in reads if n not in ignored and not _dunder(n))


def _dunder(name: str) -> bool:
    """A dunder name of Python's own (`__builtins__`, `__name__`), not IPython's `__`,
    `___` or `__session__`, nor one the notebook (or its frontend: VS Code's
    `__vsc_ipynb_file__`) binds: those are bound in the namespace, where `is_input`
    tells IPython's from the notebook's."""
    return name in _PYTHONS


# What Python itself puts in a module's namespace (IPython puts them in the notebook's
# too, and keeps them among its own): never an input, bound or not.
_PYTHONS = frozenset(
    {"__builtins__", "__builtin__", "__name__", "__doc__", "__package__", "__loader__"}
    | {"__spec__", "__file__", "__cached__", "__annotations__", "__dict__", "__class__"}
)


def is_input(
    name: str, ns: dict[str, Any], hidden: dict[str, Any], pending: Container[str] = ()
) -> bool:
    """Whether `name` (a candidate) is an input: bound in `ns` to a value that is not
    IPython's own (`hidden`, the shell's `user_ns_hidden`) nor the extension's, or
    bound by a hit that has not read its value yet (`pending`)."""
    if name not in ns:
        return name in pending
    value = ns[name]
    if is_own(value):
        return False
    # IPython puts its history (`_`, `_5`, `Out`) where it puts its own objects, and
    # updates it after every cell: a step reading it computes from the cells before.
    return user_names.is_history(name) or not user_names.put_by_ipython(name, value, hidden)


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
        if _dunder(name):
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
    put = [r for n in reads if n not in ignored and (r := put_in_builtins(n, ns)) is not None]
    return {
        "inputs": names,
        "attributes": [r for r in attribute_refs(info, names, ns) if r.root not in ignored] + put,
        "accept": acceptor(ignore, ns, hidden, pending),
        "dynamic": info.dynamic,
        "environ": [v for v in info.environ if v not in ignored],
        "cell_modules": list(info.imports.values()) + [m for m in info.star_imports if m],
    }
