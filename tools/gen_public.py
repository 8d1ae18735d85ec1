#!/usr/bin/env python3
"""Write the type checkers' view of ``codexmini/__init__.py`` from its one table.

Usage::

    python tools/gen_public.py            # rewrite the block (make public)
    python tools/gen_public.py --check    # exit 1 if the block is stale

The public face is one table, ``_EXPORTS`` (name → the private module that
defines it): ``__all__`` is derived from it at import time, and ``__getattr__``
imports a name's module on first use.  A type checker cannot follow that, so
the end of ``__init__.py`` is an ``if TYPE_CHECKING:`` block with one explicit
re-export per name.  This tool writes that block from the table (read with
``ast``: nothing is imported), so the table is the only list anyone edits.
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
from typing import Dict, Optional, Sequence, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INIT = os.path.join(ROOT, "codexmini", "__init__.py")
MARK = "if TYPE_CHECKING:  # written from _EXPORTS by tools/gen_public.py (make public): do not edit\n"


def exports(source: str) -> Dict[str, str]:
    """The ``_EXPORTS`` table of ``__init__.py``'s source."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == "_EXPORTS":
            table = ast.literal_eval(node.value)  # type: ignore[arg-type]
            if isinstance(table, dict):
                return {str(k): str(v) for k, v in table.items()}
    raise SystemExit("gen_public: codexmini/__init__.py has no `_EXPORTS: Dict[str, str] = {...}` table")


def _isort_key(name: str) -> Tuple[int, str]:
    """The order ruff's isort keeps names in (``order-by-type``): constants,
    then classes, then the rest, each by name with case aside."""
    kind = 0 if name.isupper() else 1 if name[:1].isupper() else 2
    return kind, name.lower()


def block(table: Dict[str, str]) -> str:
    """The ``TYPE_CHECKING`` block: one explicit re-export per name, by module then name."""
    lines = [MARK]
    for name, module in sorted(table.items(), key=lambda item: (item[1], *_isort_key(item[0]))):
        lines.append(f"    from .{module} import {name} as {name}\n")
    return "".join(lines)


def render(source: str) -> str:
    """``source`` with its block written anew (everything from the mark to the end)."""
    head, mark, _ = source.partition(MARK)
    if not mark:
        raise SystemExit(f"gen_public: the line {MARK.strip()!r} is missing from codexmini/__init__.py")
    return head + block(exports(head))


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="gen_public.py", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if the block is stale")
    args = parser.parse_args(argv)
    with open(INIT, encoding="utf-8") as fh:
        source = fh.read()
    wanted = render(source)
    if wanted == source:
        return 0
    if args.check:
        print("codexmini/__init__.py: the TYPE_CHECKING block is stale; run `make public`", file=sys.stderr)
        return 1
    with open(INIT, "w", encoding="utf-8") as fh:
        fh.write(wanted)
    print("wrote codexmini/__init__.py")
    return 0


if __name__ == "__main__":
    sys.exit(main())
