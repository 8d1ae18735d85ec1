#!/usr/bin/env python3
"""Schema drift: which changes between two codex releases touch what codexmini uses.

Usage::

    python tools/schema_drift.py OLD NEW [--flavor experimental|stable] [--json] [--verbose]
    python tools/schema_drift.py PINNED NEW --behaviour [--scenario NAME …]
    python tools/schema_drift.py --surface [OLD] [--json]
    make drift TO=0.171.0          # the pinned version against TO, schema and behaviour

OLD and NEW are each a codex version or a path: a version is read from the
checked-in fixtures, else installed from the npm registry into
``.cache/codex/<version>/`` and its schema generated there, once
(``tools/drift/sides.py`` has the details).  The flavor is ``experimental`` by
default: codexmini initializes with ``experimentalApi: true``.

This file is the command line: arguments in, a report out, and the exit code.
The package ``tools/drift/`` does the work; its ``__init__`` outlines how, and
``tools/drift/classify.py`` holds the rules that make a change breaking.

``--behaviour`` adds the behavioural section (``tools/drift/behaviour.py``):
every recorded scenario of the pinned version run live against NEW (a
version: its binary comes from ``.codex/`` or the npm cache), frames validated
against NEW's own schema, each normalised transcript and session log compared
with the pinned goldens -- same / differs (the first differing lines) / fails.
OLD must then be the pinned version: its goldens are what is compared.

Exit codes: 0 nothing breaking touches the surface (and, with
``--behaviour``, no scenario fails), 1 something does, 2 usage error, 3 a
bundle or binary could not be obtained (npm missing or failing, a codex that
reports another version, a failing generator).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Optional, Sequence

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, ROOT)

from codexmini import CODEX_VERSION  # noqa: E402
from tools.drift import (  # noqa: E402
    CACHE,
    FLAVORS,
    Bundle,
    DriftError,
    UsageError,
    binary_for,
    compare,
    derive_surface,
    format_report,
    format_surface,
    locate,
    report_json,
)
from tools.drift.sides import VERSION_RE  # noqa: E402


def main(argv: Optional[Sequence[str]] = None, out: Any = None) -> int:
    out = out or sys.stdout
    parser = argparse.ArgumentParser(
        prog="schema_drift.py",
        description="Classify the schema changes between two codex releases against the surface codexmini uses.",
    )
    parser.add_argument("old", nargs="?", metavar="OLD", help="a codex version or a schema directory/file")
    parser.add_argument("new", nargs="?", metavar="NEW", help="a codex version or a schema directory/file")
    parser.add_argument(
        "--flavor", choices=FLAVORS, default="experimental", help="schema flavor (default experimental)"
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument(
        "--verbose", action="store_true", help="also list docs changes and why changes are not breaking"
    )
    parser.add_argument(
        "--surface", action="store_true", help=f"print codexmini's surface on OLD (default {CODEX_VERSION}) and exit"
    )
    parser.add_argument(
        "--cache", default=CACHE, metavar="DIR", help="where versions are installed (default .cache/codex)"
    )
    parser.add_argument(
        "--behaviour",
        action="store_true",
        help="also run every recorded scenario live against NEW and compare with the goldens",
    )
    parser.add_argument(
        "--scenario", action="append", default=[], metavar="NAME", help="with --behaviour: only these scenarios"
    )
    args = parser.parse_args(argv)
    if args.surface and args.new is not None:
        parser.error("--surface takes at most one side (OLD)")
    if not args.surface and (args.old is None or args.new is None):
        parser.error("OLD and NEW are required (or --surface)")
    if args.behaviour and (args.old != CODEX_VERSION or not VERSION_RE.match(args.new or "")):
        parser.error(
            f"--behaviour compares the pinned goldens with a version: OLD must be {CODEX_VERSION}, NEW a codex version"
        )
    if args.scenario and not args.behaviour:
        parser.error("--scenario needs --behaviour")
    try:
        old = locate(args.old or CODEX_VERSION, args.flavor, args.cache)
        if args.surface:
            surface = derive_surface(Bundle.load(old.path, old.label))
            if args.json:
                json.dump({"side": old.to_json(), **surface.to_json()}, out, indent=1, sort_keys=True)
                out.write("\n")
            else:
                print(format_surface(surface, old), file=out)
            return 0
        new = locate(args.new, args.flavor, args.cache)
        binary = binary_for(args.new, args.cache) if args.behaviour else None
        bundle = locate(args.new, "experimental", args.cache).path if args.behaviour else None
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except DriftError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3
    report = compare(old, new)
    behaviour = None
    if binary is not None and bundle is not None:
        from conformance.scenarios import SCENARIOS
        from conformance.schema import SchemaBundle
        from tools.drift.behaviour import run_behaviour

        unknown = [n for n in args.scenario if n not in SCENARIOS]
        if unknown:
            parser.error(f"unknown scenario(s): {', '.join(unknown)}")
        behaviour = run_behaviour(
            args.new,
            binary,
            SchemaBundle.from_file(bundle, args.new, "experimental"),
            names=args.scenario or None,
            progress=lambda line: print(line, file=sys.stderr, flush=True),
        )
    if args.json:
        data = report_json(report, args.verbose)
        if behaviour is not None:
            from tools.drift.behaviour import behaviour_json

            data["behaviour"] = behaviour_json(behaviour)
            data["exit"] = max(data["exit"], int(behaviour.failed))
        json.dump(data, out, indent=1, sort_keys=True)
        out.write("\n")
    else:
        print(format_report(report, args.verbose), file=out)
        if behaviour is not None:
            from tools.drift.behaviour import format_behaviour

            print("", file=out)
            print(format_behaviour(behaviour), file=out)
    return max(report.exit_code, int(behaviour is not None and behaviour.failed))


if __name__ == "__main__":
    sys.exit(main())
