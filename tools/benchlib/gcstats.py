"""Seconds the instructions do not show: the cyclic garbage collector.

    python -m tools.benchlib.gcstats [--notifications N] [--rounds R] [raw client agent ...]

valgrind's count (:mod:`.instructions`) includes the collector's work, but
not what it costs in time: a full collection visits every tracked object of
the heap and every object each one refers to, a cache miss apiece, and the
agent's heap grows through a turn (its session log keeps every event it
writes, since each step's prompt is built from them), so the collector runs
full collections over it again and again.  Each contender runs on the bench's
stream turn ``rounds`` times with the collector watched (``gc.callbacks``:
collections and CPU seconds per generation) and as often with it disabled,
interleaved, each in a fresh process.  Printed per contender: the median
collections and collector seconds, the turn's CPU time both ways (minimum
and median), and both ratios to the raw reader (>1 = faster than it, as the
bench's ``× raw``).  A diagnosis, not a figure of ``make bench``: a library
must not tune its host process's collector, an application may.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from typing import Any

from . import workload
from .child import REPO
from .runner import child_env, run_process

MODES = ("watch", "off")


def run(contender: str, turn: dict[str, Any], scratch: str, mode: str) -> dict[str, Any]:
    meta = {k: turn[k] for k in ("notifications", "deltas", "delta_chars")}
    opts = {"codex": turn["codex"], "path": turn["path"], "meta": meta, "scratch": scratch, "gc": mode}
    out, _ = run_process([sys.executable, "-m", "tools.benchlib.stream", contender, json.dumps(opts)], 600, child_env())
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    if not result["all_delivered"]:
        raise RuntimeError(f"{contender} (gc {mode}) did not deliver every delta")
    if mode == "off" and any(result["gc"]["collections"]):
        raise RuntimeError(f"{contender}: the collector ran while disabled: {result['gc']}")
    return result


def summary(results: dict[str, dict[str, list[dict[str, Any]]]]) -> dict[str, dict[str, Any]]:
    """Per contender: the collector's median work, and the turn's CPU seconds
    (min, median) with the collector on and off, from each run's first turn."""
    out: dict[str, dict[str, Any]] = {}
    for name, modes in results.items():
        watched = [r["gc"] for r in modes["watch"]]
        cpu = {m: [r["turns"][0]["cpu_seconds"] for r in runs] for m, runs in modes.items()}
        out[name] = {
            "collections": [statistics.median(w["collections"][g] for w in watched) for g in range(3)],
            "collector_seconds": statistics.median(sum(w["seconds"]) for w in watched),
            "cpu_min": {m: min(v) for m, v in cpu.items()},
            "cpu_median": {m: statistics.median(v) for m, v in cpu.items()},
        }
    return out


def report(figures: dict[str, dict[str, Any]]) -> list[str]:
    lines = []
    raw = figures.get("raw")
    for name, f in figures.items():
        gen0, gen1, gen2 = f["collections"]
        watch, off = f["cpu_min"]["watch"], f["cpu_min"]["off"]
        line = (
            f"  {name:<8} collections {gen0:g}/{gen1:g}/{gen2:g} (gen 0/1/2), {f['collector_seconds'] * 1e3:.0f} ms "
            f"in the collector · turn CPU min {watch:.3f} s, collector off {off:.3f} s ({off / watch - 1:+.0%})"
        )
        if raw is not None:
            line += f" · × raw {raw['cpu_min']['watch'] / watch:.3f}, collector off {raw['cpu_min']['off'] / off:.3f}"
        lines.append(line)
    return lines


def main(argv: Any = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("contenders", nargs="*", default=["raw", "client", "agent"])
    parser.add_argument("--notifications", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", help="write the runs and the summary to this file")
    args = parser.parse_args(argv)
    scratch = tempfile.mkdtemp(prefix="codexmini-gcstats-", dir="/var/tmp" if os.path.isdir("/var/tmp") else None)
    try:
        shapes = workload.recorded_shapes()
        turn = workload.prepare(scratch, sys.executable, {"s": workload.stream_turn(shapes, args.notifications)})["s"]
        results: dict[str, dict[str, list[dict[str, Any]]]] = {n: {m: [] for m in MODES} for n in args.contenders}
        for _ in range(args.rounds):
            for name in args.contenders:
                for mode in MODES:
                    results[name][mode].append(run(name, turn, scratch, mode))
        figures = summary(results)
        print(
            f"the collector on a turn of {args.notifications:,} notifications, {args.rounds} round(s), Python "
            f"{sys.version.split()[0]}:"
        )
        for line in report(figures):
            print(line)
        if args.json:
            with open(args.json, "w", encoding="utf-8") as fh:
                json.dump({"runs": results, "summary": figures}, fh, indent=1)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    os.chdir(REPO)
    sys.exit(main())
