#!/usr/bin/env python3
"""Record the golden fixtures from the real codex binary (``make record CODEX=<version>``).

``--version V`` (default: the pin) records ``fixtures/V/`` from a binary of
that version: ``--codex PATH``, else the project's ``.codex/`` when it holds
V, else ``.cache/codex/V/`` (installed from npm on first use).  Each end of
the supported range is recorded from its own binary.  For each scenario of
:mod:`conformance.scenarios` (or those named on the command line), with its
per-version values for V:

1. run it **live**: that codex binary, the scripted model on 127.0.0.1,
   every frame tapped;
2. write ``fixtures/<version>/<scenario>.model.json`` (the model script, with
   its ``{WS}``-style placeholders) and ``<scenario>.frames.jsonl`` (both
   directions, normalised: ids, times, paths);
3. **replay** the new transcript through the agent without the binary and
   write ``<scenario>.session.jsonl``, the golden session log (only for
   agent scenarios);
4. update ``MANIFEST.json``: codex version, schema hash, date, and per
   scenario the normalised codex command line.

Every frame is validated against V's own schema (``fixtures/schema/V/``,
``make schema CODEX=V``) while recording; a scenario whose check fails, whose
scripted model refused a request, or whose replay does not match, is not
written.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import hashlib
import json
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from codexmini import CODEX_VERSION  # noqa: E402
from codexmini._binary import codex_version, find_codex  # noqa: E402
from conformance.harness import Scenario, ScenarioResult, execute, fixture_path  # noqa: E402
from conformance.scenarios import SCENARIOS, comparable_live_session  # noqa: E402
from conformance.schema import FrameValidator, SchemaBundle  # noqa: E402
from conformance.versions import fixtures_dir  # noqa: E402
from tools.drift.sides import VERSION_RE, DriftError, binary_for  # noqa: E402


def schema_path(version: str) -> str:
    return os.path.join(REPO, "fixtures", "schema", version, "experimental", "codex_app_server_protocol.schemas.json")


def dump_jsonl(path: str, rows: list) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")


def validate(result: ScenarioResult) -> list:
    """Every frame against the version's schema: one validator per codex
    process of the run (each has its own request ids)."""
    bundle = SchemaBundle.load(result.version)
    validators = {}
    problems = []
    conns = result.conns or [0] * len(result.frames)
    for (direction, frame), conn in zip(result.frames, conns):
        validator = validators.setdefault(conn, FrameValidator(bundle, strict=True))
        problems += validator.check(direction, frame)
    return problems


async def record(scenario: Scenario, out: str, codex: str, version: str) -> dict:
    live = await execute(scenario, "live", version=version, codex_bin=codex)
    problems = validate(live)
    if problems:
        raise SystemExit(f"{scenario.name}: {len(problems)} invalid frame(s):\n" + "\n".join(map(str, problems[:5])))
    if scenario.check is not None:
        scenario.check(live)
    transcript = fixture_path(scenario.name, "frames.jsonl", out)
    tmp = transcript + ".new"
    dump_jsonl(tmp, live.normalised_frames())
    try:
        replay = await execute(scenario, "replay", version=version, fixtures=out, transcript=tmp)
        if not (replay.report and replay.report["ok"]):
            raise SystemExit(f"{scenario.name}: the replay does not match the recording: {replay.report}")
        # The golden log comes from the replay: it must pass the same check and
        # equal what the live run logged, or the recording is not written.
        if scenario.check is not None:
            scenario.check(replay)
        same = comparable_live_session(scenario.name, replay.normalised_session(), version)
        if same != comparable_live_session(scenario.name, live.normalised_session(), version):
            raise SystemExit(f"{scenario.name}: the replayed session log differs from the live one")
    except BaseException:
        os.unlink(tmp)  # nothing of a refused recording stays
        raise
    os.replace(tmp, transcript)
    with open(fixture_path(scenario.name, "model.json", out), "w", encoding="utf-8") as fh:
        json.dump(scenario.script, fh, indent=1, sort_keys=True)
        fh.write("\n")
    if scenario.uses_agent:
        dump_jsonl(fixture_path(scenario.name, "session.jsonl", out), replay.normalised_session())
    return {
        "argv": live.argv,
        "model": live.scenario.model,
        "description": scenario.description,
        "frames": len(live.frames),
    }


async def regold(scenario: Scenario, out: str, version: str) -> None:
    """Replay the recorded transcript through the agent and rewrite only its
    golden session log: for a change in what the agent logs, not in what the
    binary does (the transcript stays as recorded).  The replay must match and
    pass the scenario's check, or nothing is written."""
    replay = await execute(scenario, "replay", version=version, fixtures=out)
    if not (replay.report and replay.report["ok"]):
        raise SystemExit(f"{scenario.name}: the replay does not match the recording: {replay.report}")
    if scenario.check is not None:
        scenario.check(replay)
    dump_jsonl(fixture_path(scenario.name, "session.jsonl", out), replay.normalised_session())


def main(argv: list = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="scenarios to record (default: all)")
    parser.add_argument(
        "--version", default=CODEX_VERSION, help=f"the codex version to record (default: the pin, {CODEX_VERSION})"
    )
    parser.add_argument("--out", default=None, help="where to write (default: fixtures/<version>/)")
    parser.add_argument(
        "--codex", default=None, help="a codex binary of that version (default: .codex/ or .cache/codex/<version>/)"
    )
    parser.add_argument(
        "--goldens",
        action="store_true",
        help="rewrite only the golden session logs, from the recorded transcripts (no binary needed)",
    )
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in SCENARIOS]
    if unknown:
        parser.error(f"unknown scenario(s): {', '.join(unknown)}; known: {', '.join(SCENARIOS)}")
    if not VERSION_RE.match(args.version):
        parser.error(f"--version {args.version!r} is not a codex version")
    if not os.path.isfile(schema_path(args.version)):
        parser.error(f"no schema fixtures for codex {args.version}: run `make schema CODEX={args.version}` first")
    if args.goldens:
        out = args.out or fixtures_dir(args.version)
        names = [n for n in args.names or list(SCENARIOS) if SCENARIOS[n].uses_agent]
        for name in names:
            print(f"regenerating the golden log of {name} …", flush=True)
            asyncio.run(asyncio.wait_for(regold(SCENARIOS[name], out, args.version), 180))
        print(f"rewrote {len(names)} golden session log(s) in {out}")
        return 0
    try:
        codex = find_codex(args.codex).path if args.codex else binary_for(args.version)
    except DriftError as exc:
        parser.error(str(exc))
    found = codex_version(codex)
    if found != args.version:
        parser.error(f"codex {found} at {codex}; recordings of {args.version} must come from a {args.version} binary")
    args.out = args.out or fixtures_dir(args.version)
    os.makedirs(args.out, exist_ok=True)
    manifest_path = os.path.join(args.out, "MANIFEST.json")
    manifest = {"scenarios": {}}
    if os.path.exists(manifest_path):
        with open(manifest_path, encoding="utf-8") as fh:
            manifest = json.load(fh)
    for name in args.names or list(SCENARIOS):
        print(f"recording {name} …", flush=True)
        entry = asyncio.run(asyncio.wait_for(record(SCENARIOS[name], args.out, codex, args.version), 180))
        manifest["scenarios"][name] = entry
    with open(schema_path(args.version), "rb") as fh:
        schema_hash = hashlib.sha256(fh.read()).hexdigest()
    manifest.update(
        {
            "codexVersion": args.version,
            "schemaSha256": schema_hash,
            "recordedAt": datetime.date.today().isoformat(),
            "recorder": "tools/record_fixtures.py",
        }
    )
    # Scenarios that no longer exist leave the manifest (their files are for
    # the fixture test to flag).
    manifest["scenarios"] = {k: manifest["scenarios"][k] for k in sorted(manifest["scenarios"]) if k in SCENARIOS}
    with open(manifest_path, "w", encoding="utf-8") as fh:
        json.dump(manifest, fh, indent=1, sort_keys=True)
        fh.write("\n")
    print(f"recorded {len(args.names or SCENARIOS)} scenario(s) into {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
