"""What a plain cell will bind when Run All reaches it, as far as `%step plan` can tell
without running it.

A parameter cell is the common case (`ridge = 20.0` edited since the kernel ran it):
names assigned a literal take that literal's digest, so the steps after it are planned
against the value Run All will give them, not the one the kernel holds. A cell the
kernel already ran with this very code is taken to bind again what it bound (its values
are in the namespace). Imports bind modules, which steps key by version, not value.
Anything else a cell binds is unknown until it runs: a step that reads it is planned to
run, saying so.

Our own commands in a plain cell change what Run All serves after them: `%step clear
NAME` (or `--all`) leaves those steps nothing to serve, `%step run --new` starts a run
whose epoch and seed no entry used (`Commands`).

A step's input may be a module attribute (`np.nan`) of a module that a cell before it
imports and this kernel has not imported yet: the plan imports that module to read it
(`imported_ref`). That runs the module's own code, as Run All will; no notebook code.
"""

from __future__ import annotations

import ast
import importlib
import logging
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import msgspec

from .. import cells
from ..engine.code import analysis, step_code
from ..errors import Unhashable
from ..hashing import reach
from ..hashing.values import Hasher
from ..records.runs import Run

log = logging.getLogger(__name__)
PLAIN = "a plain cell"


class Commands:
    """The `%step clear` and `%step run --new` lines of the plain cells planned so far."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self._cleared: set[str] = set()
        self._all = False
        self._made: set[str] = set()  # cleared steps planned to run since: they have entries again

    def read(self, source: str) -> None:
        for line in source.splitlines():
            words = line.split()
            if words[:2] == ["%step", "clear"]:
                names = [w for w in words[2:] if not w.startswith("-")]
                if "--all" in words:
                    self._all, self._made = True, set()
                self._cleared.update(names)
                self._made.difference_update(names)
            elif words[:2] == ["%step", "run"] and "--new" in words:
                # no entry used this epoch or seed: those that used the run's are not served
                self.run = msgspec.structs.replace(self.run, epoch="(a new run)", seed=-1)

    def cleared(self, step: str) -> bool:
        return (self._all or step in self._cleared) and step not in self._made

    def runs(self, step: str) -> None:
        """A cleared step is planned to run: Run All stores its entry again."""
        self._made.add(step)


def ran_here(shell: Any) -> set[str]:
    """The cells this kernel ran, as typed (stripped)."""
    hm = getattr(shell, "history_manager", None)
    return {s.strip() for s in (getattr(hm, "input_hist_raw", None) or []) if s.strip()}


class Bound:
    """The names the cells before a cell bind, as IPython's automagic asks of the cell's
    first name (a magic of that name is not called once a name shadows it): those the
    plan knows (`known`: name -> digest, None: unknown), and the public names of the
    modules they star-import (`from numpy import *` binds `load`, so a cell
    `load('m.npy')` calls numpy's, not the `%load` magic). A star-imported module is
    imported to list its names only when asked of one, as Run All will import it."""

    def __init__(self, known: dict[str, str | None]) -> None:
        self.known = known
        self.stars: list[str] = []  # modules star-imported, in order

    def __contains__(self, name: object) -> bool:
        return name in self.known or any(name in _public_names(m) for m in self.stars)

    def __iter__(self) -> Iterator[str]:
        return iter(self.known)

    def __len__(self) -> int:
        return len(self.known) + len(self.stars)


def _public_names(module_name: str) -> frozenset[str]:
    try:
        module = importlib.import_module(module_name)
    except Exception:  # it fails when the cell runs; the plan reads no names from it
        log.debug("%s could not be imported for the plan", module_name, exc_info=True)
        return frozenset()
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in vars(module) if not n.startswith("_")]
    return frozenset(n for n in names if isinstance(n, str))


def simulate(
    engine: Any,
    source: str,
    ran: set[str],
    bound: Bound,
    producer: dict[str, str],
    modules: dict[str, str],
) -> tuple[str, ...]:
    """Update `bound` (its `known`: name -> digest, None: unknown; its star imports)
    with what the plain cell `source` will bind, and `modules` (alias -> module path)
    with what it imports; returns the names it binds (none when it does not parse)."""
    known = bound.known
    try:
        info = analysis.analyse(engine.transform(source, bound))
    except SyntaxError:  # it fails when it runs; it imports and binds nothing
        log.debug("a plain cell does not parse; the plan skips it", exc_info=True)
        return ()
    modules.update(info.imports)
    bound.stars.extend(info.star_imports)
    if source.strip() in ran:
        for name in info.binds:
            known.pop(name, None)  # the namespace holds what it binds: read it there
            producer.pop(name, None)
        return info.binds
    transformed = engine.transform(source, bound)
    tree = ast.parse(transformed)  # (it parsed above)
    if cells.cell_magic(source) is not None:
        # `%%time`, `%%capture`: the code the magic runs binds names the call hides
        for name in step_code.of(engine.shell, transformed).info.binds:
            known[name] = None
            producer[name] = f"{PLAIN} the plan cannot evaluate"
        return info.binds
    for stmt in tree.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            continue
        literal = _literal_assignment(stmt)
        if literal is not None:
            names, value = literal
            digest = _digest(value)
            for name in names:
                known[name] = digest
                producer[name] = PLAIN
            continue
        for name in _stmt_binds(stmt):
            known[name] = None
            producer[name] = f"{PLAIN} the plan cannot evaluate"
    return info.binds


def _literal_assignment(stmt: ast.stmt) -> tuple[list[str], Any] | None:
    """(names, value) of `a = b = <literal>` / `a: T = <literal>`, else None."""
    if isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets):
        targets = [t.id for t in stmt.targets if isinstance(t, ast.Name)]
        value_node: ast.expr | None = stmt.value
    elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
        targets, value_node = [stmt.target.id], stmt.value
    else:
        return None
    if value_node is None:
        return None
    try:
        return targets, ast.literal_eval(value_node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _digest(value: Any) -> str | None:
    try:
        return Hasher({}).value_digest(value, "literal")
    except (Unhashable, RecursionError):
        return None


def _stmt_binds(stmt: ast.stmt) -> tuple[str, ...]:
    module = ast.Module(body=[stmt], type_ignores=[])
    try:
        return analysis.analyse(ast.unparse(module)).binds
    except SyntaxError:
        return ()


def imported_ref(label: str, modules: dict[str, str]) -> reach.AttrRef | None:
    """The attribute chain `label` (`np.nan`) names when its root is an alias a cell
    before imports (`import numpy as np`), importing that module; None otherwise."""
    root = label.split(".")[0]
    path = modules.get(root)
    if path is None:
        return None
    try:
        module: Any = importlib.import_module(path)
    except ImportError:  # `from pkg import name`: an attribute of `pkg`, maybe a module
        parent, _, attr = path.rpartition(".")
        try:
            module = getattr(importlib.import_module(parent), attr) if parent else None
        except Exception:
            log.debug("the plan could not import %s", path, exc_info=True)
            return None
    except Exception:  # a module that fails to import fails Run All too
        log.debug("the plan could not import %s", path, exc_info=True)
        return None
    if not isinstance(module, ModuleType):
        return None
    return reach.ref_of({root: module}, label)
