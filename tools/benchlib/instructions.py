"""Instructions, not seconds: the stream contenders counted by valgrind.

    python -m tools.benchlib.instructions [--notifications N] [--small N] [raw client agent ...]

On a shared machine the stream figures of ``make bench`` move by 10-20% from
run to run (the CPU the reader gets is not constant, CPU time included).
Counting the instructions a contender executes is deterministic to a fraction
of a percent, so it is what shows whether a change to the hot path made it
cheaper.  Each contender runs twice under ``valgrind --tool=cachegrind
--cache-sim=no`` (user-space instructions only; the fake app-server, a child,
runs natively): on the 200k-notification turn of the bench and on a small one,
and the difference is the cost of the extra notifications, start-up and
imports cancelled out.  Printed: instructions per notification and the ratio
raw / contender (>1 = fewer than the raw reader, as the bench's ``× raw``).

Instructions are not time: the JSON scanner's C loops retire more
instructions per cycle than the interpreter's dispatch, so the client's
instruction ratio is below its time ratio.  Use it to compare versions of
codexmini with each other, and the bench for the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
from typing import Any

from . import workload
from .child import REPO
from .runner import child_env, run_process

IREFS = re.compile(r"I\s+refs:\s+([\d,]+)")


def parse_irefs(stderr: str) -> int:
    """The ``I refs`` total of a cachegrind run's summary."""
    found = IREFS.search(stderr)
    if found is None:
        raise RuntimeError(f"no instruction count in valgrind's output:\n{stderr[-1500:]}")
    return int(found.group(1).replace(",", ""))


def count(valgrind: str, contender: str, turn: dict[str, Any], scratch: str) -> int:
    meta = {k: turn[k] for k in ("notifications", "deltas", "delta_chars")}
    opts = {"codex": turn["codex"], "path": turn["path"], "meta": meta, "scratch": scratch, "timeout": 3000}
    out = os.path.join(scratch, "cachegrind.out")
    argv = [valgrind, "--tool=cachegrind", "--cache-sim=no", f"--cachegrind-out-file={out}"]
    argv += [sys.executable, "-m", "tools.benchlib.stream", contender, json.dumps(opts)]
    _, stderr = run_process(argv, 3600, child_env())
    return parse_irefs(stderr)


def main(argv: Any = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("contenders", nargs="*", default=["raw", "client", "agent"])
    parser.add_argument("--notifications", type=int, default=200_000)
    parser.add_argument("--small", type=int, default=20_000, help="the turn whose count is subtracted")
    args = parser.parse_args(argv)
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        print("valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 2
    scratch = tempfile.mkdtemp(prefix="codexmini-instructions-", dir="/var/tmp" if os.path.isdir("/var/tmp") else None)
    try:
        shapes = workload.recorded_shapes()
        sizes = {"big": args.notifications, "small": args.small}
        turns = workload.prepare(
            scratch, sys.executable, {k: workload.stream_turn(shapes, n) for k, n in sizes.items()}
        )
        per: dict[str, float] = {}
        for name in args.contenders:
            big, small = (count(valgrind, name, turns[k], scratch) for k in ("big", "small"))
            per[name] = (big - small) / (args.notifications - args.small)
            print(f"  {name:<8} {big:>16,} instructions · {per[name]:>9,.0f} per notification", flush=True)
        if "raw" in per:
            for name, n in per.items():
                print(f"  {name:<8} raw / {name} = {per['raw'] / n:.3f}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    os.chdir(REPO)
    sys.exit(main())
