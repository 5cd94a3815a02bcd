"""Digests a live step took of values at its end, taken by the next step's key in
place of digesting those values again, when nothing can have changed them in between;
and, by the same rule, whether the process state it read at its end is the next step's
starting state (`state/process_state.py` does not read it again).

A hit keeps digests too (`keep_known`), of the values whose digests reached no code:
the stored digests of the values it bound and read (at once, under 1 MB, or to show its
result), the digests its key took of its inputs, and those the step before handed it,
for the names it neither bound nor deleted. A hit runs none of the notebook's code, so
they hold as after a live step; a hit that gives an object a state in place (a unit, an
input restored in place) keeps none. Without them a resume digested, at nearly every
step, the frame the step before had restored or read: 0.4-1 ms a step in a pandas
chapter, for a value whose digest the entry holds or the key before had just taken.

In a chain of steps each input is usually the output of the step just before: digested
as that step's output (or re-digested after it, to see whether it changed its input in
place), then digested again as the next step's input. Between the two nothing ran when
the next step's cell is the very next execution of the shell and nothing else was
handled meanwhile, so the first digest is the second's value: a key takes it instead
(as it takes a pending value's stored digest), and a 200 MB array is read once less.

The rule (docs/guarantees.md), all of it checked when the next step starts:

- the step that took the digests ran as a whole `%%step` cell (not nested in another
  step's body, nor called from a cell with other code), and its body ran no other
  execution (`get_ipython().run_cell(...)`);
- the next step's cell is the next execution after that cell, itself a whole `%%step`
  cell: a plain cell between them, or a silent execution (a frontend's variable
  inspector), forgets every digest;
- the kernel handled no message that may run the notebook's code meanwhile (a widget's
  comm message, an inspection, a completion), and IPython's cell events have no callback
  of the notebook's own (only IPython's, ipykernel's, matplotlib's and this package's);
  `ipython/outside.py` tells these;
- the name still holds the very object digested, its digest reached no code, and storing
  it runs none either (`keep/value_check.exact`: arrays and frames of plain dtypes,
  atoms, plain containers of them): its digest depends on nothing but its state, which
  nothing after the digest (pickling it, loading it back) can have changed.

What the rule cannot see is code the notebook left running in the background: a thread,
an asyncio task, a timer, a signal handler changing a value in place between two cells.
The digests kept hold their objects only until the next execution starts or the next
step takes them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import msgspec

from ...hashing import key as step_key
from ...hashing.reach import Known

_MISSING = object()


class _Kept(msgspec.Struct, frozen=True):
    obj: Any  # the object digested (identity: the next key takes it only for this one)
    known: Known


class Carry:
    """The digests the last live step took at its end, and what has run since."""

    def __init__(self) -> None:
        self._kept: dict[str, _Kept] = {}
        self._kept_in = -1  # the execution they were kept in
        self._executions = 0  # executions started (IPython's pre_execute), silent ones too
        self._step_cell = False  # the current execution is a whole `%%step` cell
        self._depth = 0  # steps running (a step's body may run another)
        self._began = -1  # the execution the outermost running step began in
        self.taken = 0  # digests keys took from here (tests read it: whether the rule held)
        self._state_in = -1  # the execution whose step read the process state at its end

    # -- what the frontend tells (`ipython/outside.py`) -------------------------------------
    def execution_started(self) -> None:
        """An execution begins (a cell, silent or not)."""
        self._executions += 1
        self._step_cell = False
        if self._executions > self._kept_in + 1:
            self.forget()  # a whole execution ran since they were taken

    def step_cell(self) -> None:
        """The execution that began is a whole `%%step` cell, and no callback of the
        notebook's own runs around cells."""
        self._step_cell = True

    def outside_code(self) -> None:
        """Something that may run the notebook's code is about to run (a widget's comm
        message, an inspection): the digests kept, and the process state read, may no
        longer hold."""
        self.forget()
        self._state_in = -1

    def forget(self) -> None:
        self._kept = {}
        self._kept_in = -1

    # -- the engine -------------------------------------------------------------------------
    @contextmanager
    def step(self) -> Iterator[None]:
        """Around one execution of a step."""
        if self._depth == 0:
            self._began = self._executions
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1

    def take(self, ns: dict[str, Any]) -> dict[str, Known]:
        """At a step's start, within `step()`: the digests its key may take (name ->
        what it knows of its value), those of the names that still hold the objects
        digested when the rule holds, else none. Forgets them all in any case: a
        digest is taken once."""
        kept, self._kept = self._kept, {}
        if not kept or not self._whole_step_cell() or self._kept_in != self._executions - 1:
            return {}
        return {n: k.known for n, k in kept.items() if ns.get(n, _MISSING) is k.obj}

    def used(self, carried: dict[str, Known], inputs: dict[str, str]) -> None:
        """The key took the digests of `inputs` (name -> digest); count those carried."""
        self.taken += sum(1 for n, d in inputs.items() if n in carried and carried[n].digest == d)

    def keep(
        self, ns: dict[str, Any], digested: Iterable[tuple[str, Any, str, tuple[str, ...]]]
    ) -> None:
        """At the end of a live step, within `step()`: keep the digests it took of the
        namespace's values whose digest reached no code, `digested` (name, the object
        digested, its digest, the packages it reached: `keep/changes.py`), when it ran
        as a whole `%%step` cell."""
        self.keep_known(
            ns,
            (
                (name, obj, Known(digest, frozenset(modules), *step_key.describe(obj)))
                for name, obj, digest, modules in digested
                if ns.get(name, _MISSING) is obj
            ),
        )

    def keep_known(self, ns: dict[str, Any], known: Iterable[tuple[str, Any, Known]]) -> None:
        """At the end of a step, within `step()`: keep what is known of the namespace's
        values (name, the object, its `Known`: a digest taken, a stored one, or one
        handed to a hit and still holding), when it ran as a whole `%%step` cell."""
        self.forget()
        if not self._whole_step_cell():
            return
        for name, obj, k in known:
            if ns.get(name, _MISSING) is obj:
                self._kept[name] = _Kept(obj, k)
        self._kept_in = self._executions

    def state_read(self) -> None:
        """At the end of a live step, within `step()`: it read the whole process state
        (`process_state.changes`), when it ran as a whole `%%step` cell."""
        self._state_in = self._executions if self._whole_step_cell() else -1

    def state_current(self) -> bool:
        """At a step's start, within `step()`: whether the process state the last step
        read at its end is the state now, by the same rule as the digests."""
        return self._whole_step_cell() and self._state_in == self._executions - 1

    def _whole_step_cell(self) -> bool:
        """Whether the step running is the outermost, in a whole `%%step` cell, and no
        other execution began since it did."""
        return self._depth == 1 and self._step_cell and self._began == self._executions
