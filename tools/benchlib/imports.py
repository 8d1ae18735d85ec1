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
figure to use for such a statement.  Each run also reports the statement's
CPU time (``process_time``), steadier than the wall clock on a shared machine.

``python -m tools.benchlib.imports [--python PATH]`` counts instead of
timing: the instructions (valgrind) each statement executes after ``import
asyncio``, as a ratio to ``import asyncio``'s own, deterministic to a
fraction of a percent.  How the import cost was brought down was judged that
way (docs/speed.md).
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any

from .child import REPO
from .instructions import parse_irefs
from .runner import child_env

MARK = "--bench-importtime-mark--"
HEAVY = ("asyncio", "subprocess", "threading", "dataclasses", "json", "random", "shutil", "hashlib", "uuid", "html")

STATEMENTS = {
    "asyncio": "import asyncio",
    "codexmini": "import codexmini",
    "codexmini._mapping": "import codexmini._mapping",
}

#: The public imports held to a bound (each imports asyncio): figure name → statement.
PUBLIC = {
    "client": "from codexmini import AppServerClient",
    "agent": "from codexmini import Agent",
    "sync": "import codexmini.sync",
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


def _run(
    python: str, args: Sequence[str], env: Mapping[str, str], timeout: float, argv: Sequence[str] = ()
) -> subprocess.CompletedProcess:
    return subprocess.run(
        list(argv) or [python, *args],
        cwd=REPO,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=True,
    )


def import_us(python: str, statement: str, env: Mapping[str, str], timeout: float = 60) -> tuple[int, int, int]:
    """(importtime's cumulative µs, the statement's wall-clock µs, its CPU µs), from one fresh interpreter."""
    code = (
        f"import sys, time; sys.stderr.write({MARK!r} + '\\n'); sys.stderr.flush(); "
        f"c = time.process_time(); t = time.perf_counter(); {statement}; "
        "print(round((time.perf_counter() - t) * 1e6), round((time.process_time() - c) * 1e6))"
    )
    done = _run(python, ["-X", "importtime", "-c", code], env, timeout)
    wall, cpu = done.stdout.strip().splitlines()[-1].split()
    return parse_importtime(done.stderr), int(wall), int(cpu)


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
    cpu: dict[str, list[int]] = {name: [] for name in statements}
    for _ in range(runs):
        for name, statement in statements.items():
            cumulative, clock, used = import_us(python, statement, env)
            samples[name].append(cumulative)
            wall[name].append(clock)
            cpu[name].append(used)
    return {
        "us": samples,
        "median_us": {name: statistics.median(v) for name, v in samples.items()},
        "wall_us": wall,
        "median_wall_us": {name: statistics.median(v) for name, v in wall.items()},
        "cpu_us": cpu,
        "median_cpu_us": {name: statistics.median(v) for name, v in cpu.items()},
        "pulls_in": {name: pulled_in(python, statement, env) for name, statement in statements.items()},
    }


# -- counting instead of timing ---------------------------------------------------------------


def instructions(valgrind: str, python: str, code: str, env: Mapping[str, str], scratch: str) -> int:
    """The instructions ``python -c code`` executes, start-up included (valgrind's cachegrind)."""
    out = os.path.join(scratch, "cachegrind.out")
    argv = [valgrind, "--tool=cachegrind", "--cache-sim=no", f"--cachegrind-out-file={out}", python, "-c", code]
    return parse_irefs(_run(python, [], env, 600, argv=argv).stderr)


def instruction_ratios(valgrind: str, python: str, statements: Mapping[str, str]) -> dict[str, float]:
    """Each statement's instructions after ``import asyncio``, as a ratio to
    ``import asyncio``'s own (start-up subtracted): the bench's figures, counted."""
    env = child_env()
    with tempfile.TemporaryDirectory(prefix="codexmini-imports-") as scratch:
        for statement in statements.values():  # the bytecode cache, written
            _run(python, ["-c", f"import asyncio; {statement}"], env, 60)
        start = instructions(valgrind, python, "pass", env, scratch)
        base = instructions(valgrind, python, "import asyncio", env, scratch) - start
        return {
            name: (instructions(valgrind, python, f"import asyncio; {statement}", env, scratch) - start) / base
            for name, statement in statements.items()
        }


def main(argv: Any = None) -> int:
    parser = argparse.ArgumentParser(description="The public imports' instructions, × import asyncio's.")
    parser.add_argument("--python", default=sys.executable, help="the interpreter to count (default: this one)")
    args = parser.parse_args(argv)
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        print("imports: valgrind is not installed", file=sys.stderr)
        return 2
    for name, ratio in instruction_ratios(valgrind, args.python, PUBLIC).items():
        print(f"{PUBLIC[name]:<40} {ratio:.3f} × import asyncio (instructions)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
