#!/usr/bin/env python3
"""The two frame-validation engines side by side, on every recorded frame.

``python tools/bench_schema_engines.py [--repeat N] [--version V] [--flavor F]``

For each engine -- the standard-library validator (``codexmini/_jsonschema.py``,
what the smoke run uses) and jsonschema's Draft 7 validator (what the
conformance suite uses) -- this times, over every frame of
``fixtures/*/*.frames.jsonl``:

* **load**: reading the bundle and building the engine (the stdlib one also
  compiles every definition, as ``SchemaBundle.from_directory`` does);
* **first pass**: one strict ``FrameValidator`` over all transcripts, cold
  caches (what a smoke run pays);
* **warm pass**: the same again with warm caches, best of ``--repeat``
  (what a long test run pays per frame);
* **plain**: validation alone, no strict walk, warm.

Absolute times depend on the machine; the ratio measured in one run does not
(much).  Nothing here asserts a threshold.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from codexmini import CODEX_VERSION, _schema  # noqa: E402
from conformance.schema import JSONSCHEMA, KNOWN_UNDECLARED  # noqa: E402


def transcripts():
    out = []
    for path in sorted(glob.glob(os.path.join(REPO, "fixtures", "*", "*.frames.jsonl"))):
        with open(path, encoding="utf-8") as fh:
            out.append([(line["dir"], line["frame"]) for line in map(json.loads, fh) if line])
    return out


def one_pass(bundle, runs, strict):
    start = time.perf_counter()
    problems = 0
    for frames in runs:
        validator = _schema.FrameValidator(bundle, strict=strict, allow_undeclared=KNOWN_UNDECLARED)
        for direction, frame in frames:
            validator.check(direction, frame)
        problems += len(validator.problems)
    return time.perf_counter() - start, problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--version", default=CODEX_VERSION)
    parser.add_argument("--flavor", default="experimental", choices=_schema.FLAVORS)
    args = parser.parse_args()
    directory = os.path.join(REPO, "fixtures", "schema", args.version, args.flavor)
    runs = transcripts()
    count = sum(len(frames) for frames in runs)
    python = sys.version.split()[0]
    print(f"{count} frames in {len(runs)} transcripts; codex {args.version} {args.flavor}; Python {python}")
    results = {}
    for name, engine in (("stdlib", _schema.StdlibEngine), ("jsonschema", JSONSCHEMA)):
        start = time.perf_counter()
        bundle = _schema.SchemaBundle.from_directory(directory, args.flavor, args.version, engine)
        load = time.perf_counter() - start
        first, problems = one_pass(bundle, runs, strict=True)
        warm = min(one_pass(bundle, runs, strict=True)[0] for _ in range(args.repeat))
        plain = min(one_pass(bundle, runs, strict=False)[0] for _ in range(args.repeat))
        results[name] = warm
        print(
            f"{name:>10}: load {load * 1e3:6.1f} ms, first pass {first * 1e3:7.1f} ms, "
            f"warm {warm / count * 1e6:6.1f} µs/frame strict, {plain / count * 1e6:6.1f} µs/frame plain, "
            f"{problems} problems"
        )
    print(f"jsonschema / stdlib (warm, strict): {results['jsonschema'] / results['stdlib']:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
