"""How an entry stores a live run's names: the `StoragePlan` the sharing analysis
(`keep/sharing.py`) makes after a live run, and the unit's writer (`stream.py`), its
by-value copy (`byvalue.py`) and the entry's builder read. What each field means is
told in `keep/sharing.py`'s docstring: alone, one unit, in place, replaced."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..objects import objgraph


@dataclass
class StoragePlan:
    """How an entry stores a live run's names (see the module docstring)."""

    alone: list[str] = field(default_factory=list)  # bound, stored by digest, bound on a hit
    alone_inplace: list[str] = field(default_factory=list)  # changed inputs, alone, in place
    unit_bind: dict[str, Any] = field(default_factory=dict)  # name -> value, in the unit
    unit_inplace: list[Any] = field(default_factory=list)  # objects restored in place
    seen: list[str] = field(default_factory=list)  # not bound; changed with the step
    replaced: set[int] = field(default_factory=set)  # input objects stored anew
    modules: dict[str, dict] = field(default_factory=dict)  # module attributes set (modattrs)
    changed_roots: dict[str, Any] = field(default_factory=dict)  # changed inputs in the unit
    graph: objgraph.Graph | None = None  # the inputs' graph (references resolve in it)
    post: objgraph.Graph | None = None  # what the step bound or changed

    @property
    def has_unit(self) -> bool:
        return bool(self.unit_bind or self.unit_inplace or self.modules)
