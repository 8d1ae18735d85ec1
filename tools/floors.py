#!/usr/bin/env python3
"""The package's floor plan, read from its own imports.

Usage::

    python tools/floors.py           # the floors, top down, and what is wrong
    python tools/floors.py --check   # exit 1 on an import cycle or an import of the package's face

A module of ``codexmini/`` stands one floor above the highest module it
imports (relatively, anywhere in the file: ``TYPE_CHECKING`` blocks and imports
inside functions count too); a module that imports none of the package is on
floor 1.  Two rules keep the plan readable: no import cycle, and no module
imports from the package's ``__init__`` (the public face stays at the top and
the leaves stay leaves).  ``docs/architecture.md`` shows this plan; a test
checks that it is current.
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
from typing import Dict, List, Optional, Sequence, Set

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, "codexmini")

Graph = Dict[str, Set[str]]


def modules(package: str = PACKAGE) -> Dict[str, str]:
    """Dotted name inside the package (``_wire``, ``testing.live``, a
    subpackage's ``__init__`` as ``testing``; the package's own as
    ``__init__``) → its file."""
    found = {}
    for folder, dirs, files in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                parts = os.path.relpath(os.path.join(folder, name), package)[:-3].split(os.sep)
                if parts[-1] == "__init__":
                    parts = parts[:-1] or ["__init__"]
                found[".".join(parts)] = os.path.join(folder, name)
    return found


def _resolve(parts: List[str], known: Dict[str, str]) -> Optional[str]:
    dotted = ".".join(parts)
    if not dotted:
        return "__init__"
    return dotted if dotted in known else None


def graph(package: str = PACKAGE) -> Graph:
    """Module → the package modules it imports."""
    known = modules(package)
    edges: Graph = {}
    for name, path in known.items():
        is_package = os.path.basename(path) == "__init__.py"
        here = name.split(".") if is_package and name != "__init__" else name.split(".")[:-1]
        if name == "__init__":
            here = []
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read(), filename=path)
        targets: Set[str] = set()
        for node in ast.walk(tree):
            if not (isinstance(node, ast.ImportFrom) and node.level):
                continue
            base = here[: len(here) - node.level + 1]
            module = [*base, *(node.module.split(".") if node.module else [])]
            for alias in node.names:  # ``from .pkg import sub``: the submodule itself
                sub = _resolve([*module, alias.name], known)
                if sub is not None:
                    targets.add(sub)
            whole = _resolve(module, known)
            if whole is not None and (node.module or not targets):
                targets.add(whole)
        targets.discard(name)
        edges[name] = targets
    return edges


def cycles(edges: Graph) -> List[List[str]]:
    """Every import cycle found by a depth-first walk, as the modules around it."""
    found: List[List[str]] = []
    state: Dict[str, int] = {}

    def visit(node: str, path: List[str]) -> None:
        state[node] = 1
        for target in sorted(edges.get(node, ())):
            if state.get(target) == 1:
                found.append(path[path.index(target) :] + [target])
            elif target not in state:
                visit(target, [*path, target])
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node, [node])
    return found


def face_imports(edges: Graph) -> List[str]:
    """Modules that import from the package's ``__init__``."""
    return sorted(name for name, targets in edges.items() if "__init__" in targets)


def floors(edges: Graph) -> Dict[str, int]:
    """Module → its floor (1 + the highest floor it imports; cycles are cut)."""
    floor: Dict[str, int] = {}

    def of(node: str, seen: Set[str]) -> int:
        if node not in floor:
            below = [of(t, seen | {node}) for t in edges.get(node, ()) if t not in seen | {node}]
            floor[node] = 1 + max(below, default=0)
        return floor[node]

    for node in edges:
        of(node, set())
    return floor


def plan(edges: Graph) -> str:
    """The floors, top down: ``floor N  module module …`` (names sorted)."""
    by_floor: Dict[int, List[str]] = {}
    for name, level in floors(edges).items():
        by_floor.setdefault(level, []).append(name)
    width = len(str(max(by_floor, default=1)))
    return "".join(
        f"floor {level:>{width}}  {' '.join(sorted(by_floor[level]))}\n" for level in sorted(by_floor, reverse=True)
    )


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="floors.py", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="print only what is wrong; exit 1 if anything is")
    args = parser.parse_args(argv)
    edges = graph()
    wrong = [f"import cycle: {' -> '.join(c)}" for c in cycles(edges)]
    wrong += [f"{name} imports from the package's __init__" for name in face_imports(edges)]
    if not args.check:
        sys.stdout.write(plan(edges))
    for line in wrong:
        print(line, file=sys.stderr)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
