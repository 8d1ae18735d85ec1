"""``python -m tools.mutation`` (``make mutation``): mutate, run, report.

Usage::

    python -m tools.mutation [--module NAME ...] [--jobs N] [--json FILE]
                             [--min-score PCT] [--timeout SECONDS] [--list]

Exit codes: 0 every module at or above ``--min-score`` (counted over the
mutants not declared equivalent); 1 a module below it, a mutant the harness
could not judge, a broken row or harness, or a stale equivalent; 2 usage.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from types import CodeType
from typing import Callable, Optional

from .equivalents import EQUIVALENTS
from .mutants import Mutant, find_mutants
from .report import BROKEN, MISSING, OK, ModuleRun, as_json, failed, stale, text
from .runner import SURVIVED, Job, Outcome, run, warm_up
from .targets import ROOT, Target, targets

BASELINE_TIMEOUT = 300.0
MIN_TIMEOUT = 10.0
TIMEOUT_FACTOR = 10.0
CANARY = "raise RuntimeError('mutation canary: this is the served module, not the file')"


def _mutant_build(tree: ast.Module, mutant: Mutant, filename: str) -> Callable[[], CodeType]:
    def build() -> CodeType:
        mutant.apply()  # in the child: its own copy of the tree
        return compile(ast.fix_missing_locations(tree), filename, "exec", dont_inherit=True)

    return build


def _canary_build(filename: str) -> Callable[[], CodeType]:
    return lambda: compile(CANARY, filename, "exec", dont_inherit=True)


Prepared = tuple[ModuleRun, Optional[ast.Module], list[Mutant]]


def _prepare(target: Target) -> Prepared:
    module_run = ModuleRun(target)
    if not target.exists():
        module_run.state, module_run.note = MISSING, f"{target.path} is not in this tree"
        return module_run, None, []
    missing = target.missing_tests()
    if missing:
        module_run.state, module_run.note = BROKEN, f"test file(s) not found: {', '.join(missing)}"
        return module_run, None, []
    with open(os.path.join(ROOT, target.path), encoding="utf-8") as f:
        source = f.read()
    tree, mutants = find_mutants(source, target.name, target.path)
    return module_run, tree, mutants


def _check_harness(runs: Sequence[ModuleRun], workers: int, logs: str) -> None:
    """Each module's tests pass unmutated, and fail when the served module raises."""
    jobs: list[Job] = []
    for module_run in runs:
        filename = os.path.join(ROOT, module_run.target.path)
        log = os.path.join(logs, module_run.target.name + ".log")
        jobs.append(Job(module_run.target, lambda: None, BASELINE_TIMEOUT, log))
        jobs.append(Job(module_run.target, _canary_build(filename), BASELINE_TIMEOUT))
    outcomes = run(jobs, workers, lambda i, o: None)
    for module_run, baseline, canary in zip(runs, outcomes[::2], outcomes[1::2]):
        module_run.baseline_seconds = baseline.seconds
        if baseline.status != SURVIVED:
            with open(os.path.join(logs, module_run.target.name + ".log"), encoding="utf-8", errors="replace") as f:
                tail = f.read()[-3000:]
            module_run.state = BROKEN
            module_run.note = f"the unmutated tests do not pass ({baseline.detail}):\n{tail}"
        elif canary.status == SURVIVED:
            module_run.state = BROKEN
            module_run.note = "the tests passed although the served module raises: the import hook is not in effect"


def _run_mutants(prepared: Sequence[Prepared], args: argparse.Namespace) -> int:
    """Run every mutant of the modules that passed the harness check; how many ran."""
    jobs: list[Job] = []
    owners: list[tuple[ModuleRun, Mutant]] = []
    for module_run, tree, mutants in prepared:
        if tree is None or module_run.state == BROKEN:
            continue
        module_run.timeout = args.timeout or max(MIN_TIMEOUT, TIMEOUT_FACTOR * module_run.baseline_seconds)
        filename = os.path.join(ROOT, module_run.target.path)
        print(
            f"{module_run.target.name}: {len(mutants)} mutants, tests {module_run.baseline_seconds:.2f} s "
            f"unmutated, timeout {module_run.timeout:.0f} s",
            file=sys.stderr,
        )
        for n, mutant in enumerate(mutants):
            log = os.path.join(args.keep_logs, f"{module_run.target.name}-{n}.log") if args.keep_logs else None
            jobs.append(Job(module_run.target, _mutant_build(tree, mutant, filename), module_run.timeout, log))
            owners.append((module_run, mutant))

    def done(index: int, outcome: Outcome) -> None:
        if (index + 1) % 100 == 0:
            print(f"  {index + 1}/{len(jobs)} mutants run", file=sys.stderr)

    for (module_run, mutant), outcome in zip(owners, run(jobs, args.jobs, done)):
        module_run.results.append((mutant, outcome))
    return len(jobs)


def main(argv: Sequence[str] | None = None) -> int:
    table = targets()
    parser = argparse.ArgumentParser(prog="python -m tools.mutation", description=__doc__.split("\n\n")[0])
    parser.add_argument("--module", action="append", choices=[t.name for t in table], help="run only this module")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="children at once (default: cores)")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--min-score", type=float, default=98.0, help="gate, over non-equivalent mutants")
    parser.add_argument(
        "--timeout",
        type=float,
        help=f"per mutant (default: max({MIN_TIMEOUT:g} s, {TIMEOUT_FACTOR:g} x the module's unmutated run))",
    )
    parser.add_argument("--list", action="store_true", help="list the mutants, run nothing")
    parser.add_argument("--keep-logs", metavar="DIR", help="keep each mutant's pytest output in DIR/<module>-<n>.log")
    args = parser.parse_args(argv)
    started = time.monotonic()

    prepared = [_prepare(t) for t in table if not args.module or t.name in args.module]
    if args.list:
        for _, _, mutants in prepared:
            for m in mutants:
                print(f"{m.where}  {m.operator}  {m.change}  | {m.source}")
        return 0
    if args.keep_logs:
        os.makedirs(args.keep_logs, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mutation-") as work:
        warm_up(pycache=os.path.join(work, "pycache"))
        _check_harness([r for r, tree, _ in prepared if tree is not None], args.jobs, work)
        count = _run_mutants(prepared, args)

    runs = [r for r, _, _ in prepared]
    declared: set[tuple[str, ...]] = {e.key for e in EQUIVALENTS}
    stale_entries = stale(runs, EQUIVALENTS)
    wall = time.monotonic() - started
    modules = sum(1 for r in runs if r.state == OK)
    print(f"mutation testing of {modules} module(s), {count} mutants, {args.jobs} worker(s), {wall:.0f} s wall")
    print(text(runs, declared, stale_entries, args.min_score))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(as_json(runs, declared, stale_entries, args.min_score, wall, args.jobs), f, indent=1)
            f.write("\n")
    return 1 if failed(runs, declared, args.min_score, len(stale_entries)) else 0


if __name__ == "__main__":
    sys.exit(main())
