"""Import cost: ``python -X importtime`` in fresh interpreters, bytecode cached.

For each statement the interpreter writes a marker to stderr and then runs
it; the cost is the sum of the *cumulative* microseconds of the top-level
entries ``-X importtime`` prints after the marker (the statement's own
imports, not interpreter start-up).  Each statement runs once to warm the
bytecode cache, then ``runs`` times interleaved with the others; medians.
A separate interpreter per statement reports which heavy modules it pulled in.

``-X importtime`` cannot see the module that a lazy attribute imports
(``from codexmini import AppServerClient`` goes through
``importlib.import_module``, whose module gets no line of its own, only its
imports do), so each run also times the statement with ``perf_counter``: the
figure to use for such a statement.
"""

from __future__ import annotations

import ast
import statistics
import subprocess
from collections.abc import Mapping, Sequence
from typing import Any

from .child import REPO

MARK = "--bench-importtime-mark--"
HEAVY = ("asyncio", "subprocess", "threading", "dataclasses", "json")

STATEMENTS = {
    "asyncio": "import asyncio",
    "codexmini": "import codexmini",
    "codexmini._mapping": "import codexmini._mapping",
}


def parse_importtime(stderr: str) -> int:
    """Cumulative µs of the top-level imports printed after :data:`MARK`."""
    total, seen = 0, False
    for line in stderr.splitlines():
        if line.strip() == MARK:
            seen = True
            continue
        if not seen or not line.startswith("import time:"):
            continue
        _, cumulative, name = line[len("import time:") :].split("|", 2)
        if not cumulative.strip().isdigit():
            continue  # the header line
        if not name[1:2].isspace():  # one space after the bar: top level
            total += int(cumulative)
    if not seen:
        raise ValueError("importtime output has no marker")
    return total


def _run(python: str, args: Sequence[str], env: Mapping[str, str], timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(
        [python, *args], cwd=REPO, env=dict(env), capture_output=True, text=True, timeout=timeout, check=True
    )


def import_us(python: str, statement: str, env: Mapping[str, str], timeout: float = 60) -> tuple[int, int]:
    """(importtime's cumulative µs, the statement's wall-clock µs), from one fresh interpreter."""
    code = (
        f"import sys, time; sys.stderr.write({MARK!r} + '\\n'); sys.stderr.flush(); t = time.perf_counter(); "
        f"{statement}; print(round((time.perf_counter() - t) * 1e6))"
    )
    done = _run(python, ["-X", "importtime", "-c", code], env, timeout)
    return parse_importtime(done.stderr), int(done.stdout.strip().splitlines()[-1])


def pulled_in(python: str, statement: str, env: Mapping[str, str], timeout: float = 60) -> list[str]:
    """Which of :data:`HEAVY` the statement imports (beyond interpreter start-up)."""
    code = f"import sys; before = set(sys.modules); {statement}; print([m for m in {HEAVY!r} if m in set(sys.modules) - before])"
    return list(ast.literal_eval(_run(python, ["-c", code], env, timeout).stdout.strip().splitlines()[-1]))


def measure(
    python: str, env: Mapping[str, str], runs: int, statements: Mapping[str, str] = STATEMENTS
) -> dict[str, Any]:
    for statement in statements.values():  # warm the bytecode cache
        import_us(python, statement, env)
    samples: dict[str, list[int]] = {name: [] for name in statements}
    wall: dict[str, list[int]] = {name: [] for name in statements}
    for _ in range(runs):
        for name, statement in statements.items():
            cumulative, clock = import_us(python, statement, env)
            samples[name].append(cumulative)
            wall[name].append(clock)
    return {
        "us": samples,
        "median_us": {name: statistics.median(v) for name, v in samples.items()},
        "wall_us": wall,
        "median_wall_us": {name: statistics.median(v) for name, v in wall.items()},
        "pulls_in": {name: pulled_in(python, statement, env) for name, statement in statements.items()},
    }
