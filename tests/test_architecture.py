"""The import graph keeps the layers: every import points down, never up or sideways
between rooms, and there is no cycle, lazy imports included. The layers, lowest first,
are the package's own map (CONTRIBUTING.md, "How the pieces fit")."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parent.parent / "resumable_cells"

# Top-level rooms and modules, lowest first; a module may import its own layer and the
# ones before it. `verify` drives the extension only through real kernels.
LAYERS = [
    {
        "_version",
        "errors",
        "logs",
        "settings",
        "formatting",
        "palette",
        "cells",
        "module_runs",
        "builtins_found",
    },
    {"hashing"},
    {"storage"},
    {"display"},
    {"records"},
    {"engine"},
    {"ipython"},
    {"verify"},
    {"cli", "server", "__main__", "__init__", "labextension"},
]
VERIFY_MAY_IMPORT = {"formatting", "verify", "_version", "errors", "logs", "cells"}

# The engine's rooms, lowest first (see `engine/__init__.py`).
ENGINE_LAYERS = [
    {"__init__"},
    {"collector"},
    {"objects"},
    {"code"},
    {"live"},
    {"state"},
    {"units"},
    {"restore"},
    {"kernel"},
    {"keep"},
    {"recording"},
    {"execution"},
]


def _modules() -> dict[str, Path]:
    out = {}
    for p in PACKAGE.rglob("*.py"):
        if "labextension" in p.relative_to(PACKAGE).parts:
            continue
        parts = list(p.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """The package's modules that `name` imports, anywhere in its body."""
    is_pkg = path.name == "__init__.py"
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_pkg else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("resumable_cells"):
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.add(sub if sub in MODULES else target)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("resumable_cells")}
    found.discard(name)
    return {m for m in found if m in MODULES}


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _rank(layers: list[set[str]], room: str) -> int:
    for i, layer in enumerate(layers):
        if room in layer:
            return i
    raise AssertionError(f"{room} is in no layer: add it to the layers of this test")


def _room(module: str, depth: int) -> str:
    parts = module.split(".")
    return parts[depth] if len(parts) > depth else "__init__"


def test_every_import_points_down_between_the_packages_rooms():
    upward = []
    for module, targets in GRAPH.items():
        here = _room(module, 1)
        for target in targets:
            there = _room(target, 1)
            if here == "verify":
                if there not in VERIFY_MAY_IMPORT:
                    upward.append(f"{module} -> {target}")
            elif here != there and here != "__init__":
                if _rank(LAYERS, there) > _rank(LAYERS, here) and there != "__init__":
                    upward.append(f"{module} -> {target}")
    assert upward == [], "imports that point up or sideways:\n" + "\n".join(sorted(upward))


def test_every_import_points_down_between_the_engines_rooms():
    upward = []
    for module, targets in GRAPH.items():
        if not module.startswith("resumable_cells.engine."):
            continue
        here = _room(module, 2)
        for target in targets:
            if not target.startswith("resumable_cells.engine"):
                continue
            there = _room(target, 2)
            if here != there and _rank(ENGINE_LAYERS, there) >= _rank(ENGINE_LAYERS, here):
                upward.append(f"{module} -> {target}")
    assert upward == [], "engine imports that point up or sideways:\n" + "\n".join(upward)


def test_no_import_cycles():
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in GRAPH[v]:
            if w.startswith(v + ".") and MODULES[v].name == "__init__.py":
                continue  # a package importing its own modules
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for v in GRAPH:
        if v not in index:
            visit(v)
    assert cycles == []


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_private_name_is_imported_across_modules(module):
    tree = ast.parse(MODULES[module].read_text())
    private = [
        f"{node.module}.{a.name}"
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        and (node.level or "resumable_cells" in (node.module or ""))
        for a in node.names
        if a.name.startswith("_") and not a.name.startswith("__")
    ]
    assert private == []


def test_every_module_and_room_says_what_it_owns():
    missing = [m for m, p in MODULES.items() if not ast.get_docstring(ast.parse(p.read_text()))]
    assert missing == []


def test_records_are_structs_not_dataclasses():
    # A dataclass compiles its generated methods when its module is imported (about 1 ms
    # each on Python 3.11; the first step of a kernel imported 47 of them, a third of
    # its time). A msgspec Struct is defined in C (CONTRIBUTING.md, "Rules").
    found = [
        f"{module}.{node.name}"
        for module, path in MODULES.items()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ClassDef)
        for d in node.decorator_list
        if "dataclass" in ast.unparse(d)
    ]
    assert found == []
