"""How an entry stores a live run's names: the `StoragePlan` the sharing analysis
(`keep/sharing.py`) makes after a live run, and the unit's writer (`stream.py`), its
by-value copy (`byvalue.py`) and the entry's builder read. What each field means is
told in `keep/sharing.py`'s docstring: alone, one unit, in place, replaced."""

from __future__ import annotations

from typing import Any, TypeAlias, TypedDict

import msgspec

from ..objects import objgraph
from ..state import module_attrs

# An object the unit gives a state in place that a class's own code is handed while a hit
# builds the unit (`keep/own_code.py`): (its index in `inplace`, its digest after the live
# run, the name to blame, why it matters). A tuple: it is pickled in the stream.
Handed: TypeAlias = tuple[int, str, str, str]


class _PayloadParts(TypedDict):
    bind: dict[str, Any]  # name -> value, bound on a hit
    inplace: list[tuple[Any, Any]]  # (object, its new state), restored in place
    modules: module_attrs.Changes  # the attributes set on the notebook's modules


class Payload(_PayloadParts, total=False):
    """What a unit's stream holds (`stream.payload_of`); a by-value copy holds only the
    first three keys."""

    raw: bool  # the states are the instance dicts themselves (`stream.StateOf`)
    rooted: list[int]  # indices of `inplace` whose objects are the values of names
    orphans: list[objgraph.Path]  # paths of the objects it replaces (`replaced.py`)
    handed: list[Handed]  # objects a class's own code is handed, as the live run left them
    # names bound only because they held an object it replaces (`b = c` before
    # `next(c)`): name -> that object's path among the inputs (`stream.unalias`)
    aliases: dict[str, objgraph.Path]


class StoragePlan(msgspec.Struct):
    """How an entry stores a live run's names (see the module docstring)."""

    alone: list[str] = msgspec.field(
        default_factory=list
    )  # bound, stored by digest, bound on a hit
    alone_inplace: list[str] = msgspec.field(
        default_factory=list
    )  # changed inputs, alone, in place
    unit_bind: dict[str, Any] = msgspec.field(default_factory=dict)  # name -> value, in the unit
    unit_inplace: list[Any] = msgspec.field(default_factory=list)  # objects restored in place
    seen: list[str] = msgspec.field(default_factory=list)  # not bound; changed with the step
    replaced: set[int] = msgspec.field(default_factory=set)  # input objects stored anew
    # names the step neither read nor bound, bound to an object it replaces: name -> path
    aliases: dict[str, objgraph.Path] = msgspec.field(default_factory=dict)
    modules: module_attrs.Changes = msgspec.field(default_factory=dict)  # module attributes set
    changed_roots: dict[str, Any] = msgspec.field(
        default_factory=dict
    )  # changed inputs in the unit
    graph: objgraph.Graph | None = None  # the inputs' graph (references resolve in it)
    post: objgraph.Graph | None = None  # what the step bound or changed

    @property
    def has_unit(self) -> bool:
        return bool(self.unit_bind or self.unit_inplace or self.modules)

    def graphs(self) -> tuple[objgraph.Graph, objgraph.Graph]:
        """The inputs' graph and the graph after the step. Only a plan without
        sharing has neither (`keep/build.py`'s default, every name alone); whatever
        reads them is reached only for plans made by `sharing.analyse`, which sets both."""
        assert self.graph is not None and self.post is not None, "a plan without graphs"
        return self.graph, self.post
