"""The inputs a step reaches beyond the names its cell reads.

Starting from the cell's inputs (names) and the attribute chains it reads from modules
(`AttrRef`), hashing each input finds what the functions it reaches read (`Reached`,
filled by `code` through the hasher): the notebook globals a notebook function reads or
writes are inputs by name, like the cell's own reads; an attribute chain read from a
module, by the cell or by a function (`settings.THRESHOLD`, or `SCALE` read inside
`helpers.f`, which is `helpers.SCALE`), is an input by value, and a function of a local
module it ends on is followed in turn. Repeated until nothing new is reached.

Which module attributes are inputs: of a local module (`sources`) or of the notebook's
own (`__main__.cfg`, whose dict is the namespace), any value but a module; of an
installed module, plain scalars (numbers, strings, bytes, None) and notebook functions
put there, since its version covers its constants and its mutable state (options,
registries) is process state. An attribute the cell assigns or deletes
is an input whatever its value, so that a step that changes it is seen to. A name the
notebook put among the builtins (`builtins.LIMIT = 5`), read by a cell or a function as
a global, is `builtins.LIMIT`, any value: a global the namespace does not hold (one it
replaced there, `builtins.print = log`, is process state, unseen).
"""

from __future__ import annotations

import ast
import builtins
import os
import sys
from collections import deque
from collections.abc import Callable, Iterable
from pathlib import PurePath
from types import ModuleType
from typing import Any

import msgspec
import xxhash

from .. import builtins_found
from ..errors import KeyComponentError, Unhashable
from . import sources
from .code import is_notebook_defined, is_own
from .files import could_name
from .values import Hasher

_SCALARS = frozenset({int, float, complex, str, bytes, bool, type(None)})
MISSING = object()  # an attribute that is not set


class AttrRef(msgspec.Struct, frozen=True):
    """An attribute chain read from a module: `root` names it (as the cell spells it,
    or the module's own name), `module` is the module object."""

    root: str
    module: ModuleType
    attrs: tuple[str, ...]
    written: bool = False  # the cell assigns or deletes it

    @property
    def label(self) -> str:
        return ".".join((self.root, *self.attrs))

    def resolve(self) -> tuple[AttrRef, Any] | None:
        """(the chain up to its first value that is not a module, that value or MISSING),
        or None when the chain is modules only. Reads modules' dicts, so a module's
        `__getattr__` (a lazy import) never runs for it."""
        obj = self.module
        for k, attr in enumerate(self.attrs):
            value = vars(obj).get(attr, MISSING)
            if isinstance(value, ModuleType):
                obj = value
                continue
            last = k == len(self.attrs) - 1
            ref = AttrRef(self.root, self.module, self.attrs[: k + 1], self.written and last)
            return ref, value
        return None

    def home(self) -> tuple[ModuleType, str]:
        """The module that holds the chain's last attribute, and that attribute's name."""
        obj = self.module
        for attr in self.attrs[:-1]:
            value = vars(obj).get(attr, MISSING)
            if not isinstance(value, ModuleType):
                break
            obj = value
        return obj, self.attrs[-1]


class Reached(msgspec.Struct):
    """What the functions hashed so far read: filled by `code`, drained by `collect`."""

    names: list[str] = msgspec.field(default_factory=list)  # notebook globals
    chains: list[tuple[tuple[str, ...], bool]] = msgspec.field(default_factory=list)  # (chain, set)
    module_chains: list[tuple[str, tuple[str, ...], bool]] = msgspec.field(default_factory=list)
    dynamic: list[str] = msgspec.field(default_factory=list)  # "`globals()` in pick"
    environ: list[str] = msgspec.field(default_factory=list)  # environment variables read
    strings: list[str] = msgspec.field(default_factory=list)  # constants that could name files

    def notebook_function(self, qualname: str, reads: Any, defaults: Iterable[Any] = ()) -> None:
        """A notebook function reached: `reads` is its `bytecode.CodeReads`, `defaults`
        its default values (a path among them names a file it may open)."""
        self._defaults(defaults)
        self.names.extend(sorted(reads.names))
        self.chains.extend((c, False) for c in sorted(reads.chains))
        self.chains.extend((c, True) for c in sorted(reads.attr_writes))
        self.dynamic.extend(f"`{d}` in {qualname}" for d in reads.dynamic)
        self.environ.extend(sorted(reads.environ))
        self.strings.extend(sorted(reads.strings))

    def module_function(self, module: str, reads: Any, defaults: Iterable[Any] = ()) -> None:
        """A function of the local module `module` reached: what it reads, and the
        globals it assigns (inputs whatever their value, or their absence)."""
        self._defaults(defaults)
        self.module_chains.extend((module, (n,), n in reads.writes) for n in sorted(reads.names))
        self.module_chains.extend((module, c, False) for c in sorted(reads.chains))
        self.module_chains.extend((module, c, True) for c in sorted(reads.attr_writes))
        self.environ.extend(sorted(reads.environ))
        self.strings.extend(sorted(reads.strings))

    def _defaults(self, defaults: Iterable[Any]) -> None:
        paths = (str(d) for d in defaults if isinstance(d, (str, PurePath)))
        self.strings.extend(p for p in paths if could_name(p))


class Known(msgspec.Struct, frozen=True):
    """What a key takes for an input whose value is not read (a value restored lazily,
    `engine/restore/pending.py`): its stored digest, the packages that digest reached,
    and its type and size for the record. Such a value reaches no code."""

    digest: str
    modules: frozenset[str]
    type: str
    size: int


# Drawings are tracked by identity while they are open (`hashing.opaque`): restored with
# the hit, never later, and their digest stands for nothing once they are drawn again.
_EAGER_PACKAGES = frozenset({"matplotlib"})


def data_only(h: Hasher) -> tuple[str, ...] | None:
    """The packages the digest `h` took reached, when it reached no code (no function,
    no class of the notebook or elsewhere, no drawing): a digest that depends on the
    value's state alone, which stands for the value while nothing changes it. None
    otherwise."""
    if h.shared.code or h.modules & _EAGER_PACKAGES:
        return None
    return tuple(sorted(h.modules))


class Collected(msgspec.Struct):
    digests: dict[str, str] = msgspec.field(default_factory=dict)  # input (name or label) -> digest
    # the inputs (names) whose digests reached no code, as a later key may take them
    known: dict[str, Known] = msgspec.field(default_factory=dict)
    modules: set[str] = msgspec.field(default_factory=set)  # top-level modules reached
    info: dict[str, dict] = msgspec.field(default_factory=dict)  # input -> type, size, digest
    attributes: dict[str, AttrRef] = msgspec.field(default_factory=dict)  # label -> its chain
    dynamic: list[str] = msgspec.field(default_factory=list)
    # the string constants of the functions reached that could name a file the step opens
    # where Python does not see it (`engine/live/named_files.py`)
    strings: list[str] = msgspec.field(default_factory=list)


def collect(
    ns: dict,
    names: Iterable[str],
    refs: Iterable[AttrRef],
    accept: Callable[[str], bool],
    describe: Callable[[Any], tuple[str, int]],
    given: dict[str, str | None] | None = None,
    known: dict[str, Known] | None = None,
    environ: Iterable[str] = (),
) -> Collected:
    """Digest the inputs `names` and `refs` and everything they reach. `accept(name)`
    says whether a name (or label) reached is an input; `given` holds digests known
    already (None: not known yet), taken as they are and not followed (`%step plan`'s
    names bound by earlier steps); `known`, the inputs not in `ns` whose digests are
    stored (pending values), taken as they would be digested; `environ`, the environment
    variables the cell reads, which are inputs (`os.environ['MODE']`) with those the
    functions it reaches read. Raises KeyComponentError."""
    out = Collected()
    todo: deque[str | AttrRef] = deque(names)
    todo.extend(refs)
    variables = set(environ)
    if not todo:  # a step that reads nothing of the namespace: the common trivial case
        _environ(out, variables)
        return out
    reach, given, known = Reached(), given or {}, known or {}
    strings: dict[str, None] = {}
    seen: set[Any] = set(todo)
    while todo:
        item = todo.popleft()
        if isinstance(item, str) and item in given:
            out.digests[item] = given[item]  # type: ignore[assignment]
        elif isinstance(item, str) and item in known:
            k = out.known[item] = known[item]
            out.digests[item] = k.digest
            out.modules |= k.modules
            out.info[item] = {"type": k.type, "size": k.size, "digest": k.digest}
        elif isinstance(item, str):
            _digest(out, reach, ns, item, ns[item], describe)
        else:
            _attribute(out, reach, ns, item, describe, accept)
        variables.update(reach.environ)
        reach.environ.clear()
        strings.update(dict.fromkeys(reach.strings))
        reach.strings.clear()
        for new in _drain(reach, ns, accept):
            if new not in seen:
                seen.add(new)
                todo.append(new)
    out.dynamic = list(dict.fromkeys(reach.dynamic))
    out.strings = list(strings)
    _environ(out, variables)
    return out


def environ_label(name: str) -> str:
    """How an environment variable read stands among a key's inputs."""
    return f"os.environ[{name!r}]"


def environ_name(label: str) -> str | None:
    """The variable an input label names, or None for another input."""
    if not (label.startswith("os.environ[") and label.endswith("]")):
        return None
    name = ast.literal_eval(label[len("os.environ[") : -1])
    return name if isinstance(name, str) else None


def environ_digest(name: str) -> str:
    """An environment variable's value as a key takes it: a digest, or `missing`."""
    value = os.environ.get(name)
    return "missing" if value is None else xxhash.xxh3_64_hexdigest(value.encode(errors="replace"))


def environ_names_digest() -> str:
    """The environment's variable names (not their values), as a digest."""
    return xxhash.xxh3_64_hexdigest("\0".join(sorted(os.environ)).encode(errors="replace"))


def _environ(out: Collected, names: set[str]) -> None:
    for name in sorted(names):
        label = environ_label(name)
        out.digests[label] = environ_digest(name)
        out.info[label] = {"type": "environ", "size": 0, "digest": out.digests[label]}


def _attribute(out: Collected, reach: Reached, ns: dict, ref: AttrRef, describe, accept) -> None:
    resolved = ref.resolve()
    if resolved is None:
        return
    ref, value = resolved
    label = ref.label
    if label in out.digests or not accept(label):
        return
    if not (ref.written or _is_input(value, ref, ns)):
        return
    out.attributes[label] = ref
    if value is MISSING:
        out.digests[label] = "missing"
        out.info[label] = {"type": "missing", "size": 0, "digest": "missing"}
        return
    if ref.written and not _is_input(value, ref, ns):
        # An installed module's attribute the cell sets (`sys.excepthook = hook`) that
        # holds a library's object is an input only so that the run can tell whether it
        # replaced it, which a hit could not do again (`changed_attributes`): it is told
        # by its identity in this kernel, not walked (IPython's hook reaches the whole
        # shell: half a second, then a failure that named the wrong thing).
        out.digests[label] = _identity(value)
        out.info[label] = {"type": type(value).__name__, "size": 0, "digest": out.digests[label]}
        return
    _digest(out, reach, ns, label, value, describe)


def put_in_builtins(name: str, ns: dict) -> AttrRef | None:
    """`builtins.name`, when a read of the global `name` finds a name the notebook put
    among the builtins since the extension was loaded (not the extension's own `step`,
    which it puts there as it loads); else None."""
    if name in ns or not builtins_found.added(name) or is_own(vars(builtins)[name]):
        return None
    return AttrRef("builtins", builtins, (name,))


def _is_input(value: Any, ref: AttrRef, ns: dict) -> bool:
    if value is MISSING:
        return False  # read but not set: the cell raises, or a lazy import sets it
    owner = _owner(ref)
    if owner is builtins and put_in_builtins(ref.attrs[-1], ns) is not None:
        return True  # (a global the notebook keeps among the builtins)
    if vars(owner) is ns or sources.is_local_module(owner.__name__):
        return True  # (`__main__.cfg`, from a cell or a local module: the notebook's cfg)
    return type(value) in _SCALARS or is_notebook_defined(value, ns)


def _owner(ref: AttrRef) -> ModuleType:
    obj = ref.module
    for attr in ref.attrs[:-1]:
        obj = vars(obj)[attr]
    return obj


def _digest(out: Collected, reach: Reached, ns: dict, label: str, value: Any, describe) -> None:
    h = Hasher(ns)
    h.reach = reach
    try:
        h.whole(value, label)
    except Unhashable as e:
        raise KeyComponentError(f"input {e.path} cannot be hashed ({e.why})", path=e.path) from None
    except RecursionError:
        raise KeyComponentError(f"input {label} is nested too deeply to hash", path=label) from None
    digest = out.digests[label] = h.digest().hex()
    out.modules |= h.modules
    tname, size = describe(value)
    out.info[label] = {"type": tname, "size": size, "digest": digest}
    reached = data_only(h)
    if reached is not None:
        out.known[label] = Known(digest, frozenset(reached), tname, size)


def _drain(reach: Reached, ns: dict, accept: Callable[[str], bool]) -> list[str | AttrRef]:
    """What the last digest reached, as inputs to digest next; empties `reach`."""
    if not (reach.names or reach.chains or reach.module_chains):
        return []
    new: list[str | AttrRef] = []
    for name in reach.names:
        if accept(name):
            new.append(name)
        elif (put := put_in_builtins(name, ns)) is not None and accept(put.label):
            new.append(put)
    for chain, written in reach.chains:
        root = ns.get(chain[0])
        if isinstance(root, ModuleType) and accept(chain[0]):
            new.append(AttrRef(chain[0], root, chain[1:], written))
    for module_name, chain, written in reach.module_chains:
        module = sys.modules.get(module_name)
        if module is not None and accept(f"{module_name}.{chain[0]}"):
            new.append(AttrRef(module_name, module, chain, written))
    reach.names.clear()
    reach.chains.clear()
    reach.module_chains.clear()
    return new


def _identity(value: Any) -> str:
    """What stands for the digest of a value that cannot be hashed: the object itself,
    in this kernel (never a digest: those are hex)."""
    return f"object {id(value):x} of this kernel"


def ref_of(ns: dict, label: str) -> AttrRef | None:
    """The attribute chain a label names (`settings.THRESHOLD`, `helpers.SCALE`): rooted
    at a module bound in `ns` under its first name, else at the longest loaded module."""
    parts = label.split(".")
    root = ns.get(parts[0])
    if isinstance(root, ModuleType):
        return AttrRef(parts[0], root, tuple(parts[1:]))
    for k in range(len(parts) - 1, 0, -1):
        module = sys.modules.get(".".join(parts[:k]))
        if module is not None:
            return AttrRef(".".join(parts[:k]), module, tuple(parts[k:]))
    return None


def changed_attributes(
    ns: dict, attributes: dict[str, AttrRef], digests: dict[str, str]
) -> list[str]:
    """The module attributes among a key's inputs whose value a run changed."""
    changed = []
    for label, ref in attributes.items():
        resolved = ref.resolve()
        value = resolved[1] if resolved is not None else MISSING
        try:
            now = "missing" if value is MISSING else Hasher(ns).value_digest(value, label)
        except (Unhashable, RecursionError):
            now = _identity(value)
        if now != digests.get(label):
            changed.append(label)
    return changed
