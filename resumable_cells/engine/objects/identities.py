"""The identity of every value of a namespace, taken before a step runs: which names
hold another object after it (`rebound`) and which are gone (`deleted`).

A notebook's namespace holds a name for every cell IPython ran (`_i42`, `_42`), so it
grows with the session and a loop over it in Python costs a live step more the longer
the notebook runs. Here both passes run in C: a list of the names and a list of the
values' ids, compared a slice at a time and element by element only in a slice that
differs, which holds while the names are in the same order (a dict keeps the order of
insertion; new names come last). A name deleted meanwhile shifts them: then the names
are compared one by one. The tripwire reads the ids taken before a step to find the
names bound to a function it watches, rather than taking them a second time."""

from __future__ import annotations

from itertools import compress
from operator import ne
from typing import Any

_CHUNK = 512  # names whose ids are compared as one list, then one by one if they differ


class Identities:
    """The names of a namespace and the id of each one's value, when it was taken. Holds
    no value alive: a value freed during the step and an object made at its address
    share an id, as for any comparison of identities that keeps nothing."""

    def __init__(self, ns: dict[str, Any]) -> None:
        self.names = list(ns)
        self.ids = list(map(id, ns.values()))
        self._by_name: dict[str, int] | None = None

    def get(self, name: str) -> int | None:
        """The id `name`'s value had (None: the name was not bound)."""
        if self._by_name is None:
            self._by_name = dict(zip(self.names, self.ids))
        return self._by_name.get(name)

    def _same_order(self, names: list[str]) -> bool:
        return names[: len(self.names)] == self.names

    def rebound(
        self, ns: dict[str, Any], also: set[str] | frozenset[str] = frozenset()
    ) -> list[str]:
        """The names `ns` binds to another object than before (new names included), and
        those in `also` it binds, in `ns`'s order."""
        names = list(ns)
        n = len(self.names)
        if not self._same_order(names):
            return [k for k, v in ns.items() if self.get(k) != id(v) or k in also]
        ids, old = list(map(id, ns.values())), self.ids
        at: list[int] = []
        for a in range(0, n, _CHUNK):  # most are the same: compared a chunk at a time
            b = min(a + _CHUNK, n)
            if ids[a:b] != old[a:b]:
                at.extend(compress(range(a, b), map(ne, ids[a:b], old[a:b])))
        at.extend(range(n, len(names)))
        if also:  # those bound again to the object they held: found by a scan in C each
            found = {names[i] for i in at}
            more = {names.index(k) for k in also if k in ns and k not in found}
            if more:
                at = sorted(more.union(at))
        return [names[i] for i in at]

    def deleted(self, ns: dict[str, Any]) -> list[str]:
        """The names that are no longer in `ns`, in the order they were."""
        if self._same_order(list(ns)):
            return []
        return [k for k in self.names if k not in ns]
