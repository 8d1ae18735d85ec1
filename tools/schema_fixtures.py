#!/usr/bin/env python3
"""Write or check the schema fixtures: ``fixtures/schema/<version>/{stable,experimental}/``.

The fixtures are the JSON Schema bundle printed by the pinned codex binary,
verbatim, in both flavors::

    codex app-server generate-json-schema --out DIR                 # stable
    codex app-server generate-json-schema --out DIR --experimental  # experimental

``--write`` regenerates them in place (``make schema CODEX=<version>``; the
version defaults to the pin, and ``--codex`` must be a binary of it).  ``--check``
regenerates into a temporary directory and compares every file with the
fixtures; JSON files are compared canonicalised (parsed and re-dumped with
sorted keys, so a key-order change in a future generator is not drift), other
files byte for byte.  It lists added, removed and changed files and exits 1 on
any difference, printing the command that refreshes them -- the same contract
as codex's own schema-fixture test.

The generator writes a ``tmp/`` directory into ``$CODEX_HOME``, so it runs
with a throw-away ``CODEX_HOME`` under ``/var/tmp`` (not ``/tmp``: codex
refuses to create helper binaries under a temporary dir there).

Exit codes: 0 same / written, 1 differences, 2 usage error, 3 codex missing,
the wrong version, or a failed generator.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, ROOT)

from codexmini import CODEX_VERSION  # noqa: E402
from codexmini._binary import codex_version, find_codex  # noqa: E402
from codexmini._errors import BinaryNotFound  # noqa: E402

FIXTURES = os.path.join(ROOT, "fixtures", "schema")
#: flavor directory → extra generator arguments.
FLAVORS: Dict[str, List[str]] = {"stable": [], "experimental": ["--experimental"]}
REFRESH = "make schema"
REFRESH_LONG = "python tools/schema_fixtures.py --write"


class SchemaFixtureError(Exception):
    """codex is missing, has the wrong version, or its generator failed."""


@dataclass
class TreeDiff:
    """Relative paths that differ between the fixtures and a fresh bundle."""

    added: List[str] = field(default_factory=list)  # generated now, not in the fixtures
    removed: List[str] = field(default_factory=list)  # in the fixtures, not generated now
    changed: List[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed)

    def lines(self, limit: int = 40) -> List[str]:
        """One line per path, at most ``limit`` per category."""
        out = []
        for label, paths in (("added:  ", self.added), ("removed:", self.removed), ("changed:", self.changed)):
            out += [f"{label} {p}" for p in paths[:limit]]
            if len(paths) > limit:
                out.append(f"{label} … and {len(paths) - limit} more")
        return out


def resolve_codex(explicit: Optional[str], version: str) -> str:
    """The binary to run; it must report ``version`` (a bundle from another
    release written under this version's directory would be a lie)."""
    try:
        path = find_codex(explicit).path
    except BinaryNotFound as exc:
        raise SchemaFixtureError(str(exc)) from None
    found = codex_version(path)
    if found != version:
        raise SchemaFixtureError(
            f"{path} reports version {found or 'unknown'}, but the fixtures are for {version}; "
            f"pass --codex PATH to a {version} binary or --version {found}"
        )
    return path


def generate(codex: str, dest: str) -> None:
    """Write both flavors into ``dest/stable`` and ``dest/experimental``."""
    parent = "/var/tmp" if os.path.isdir("/var/tmp") else None
    home = tempfile.mkdtemp(prefix="codexmini-schema-home-", dir=parent)
    try:
        env = {**os.environ, "CODEX_HOME": home, "NO_COLOR": "1"}
        for flavor, extra in FLAVORS.items():
            argv = [codex, "app-server", "generate-json-schema", "--out", os.path.join(dest, flavor), *extra]
            done = subprocess.run(argv, env=env, capture_output=True, timeout=120, check=False)
            if done.returncode != 0:
                raise SchemaFixtureError(
                    f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode('utf-8', 'replace')[-2000:]}"
                )
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _files(top: str) -> Dict[str, str]:
    found = {}
    for here, _dirs, names in os.walk(top):
        for name in names:
            full = os.path.join(here, name)
            found[os.path.relpath(full, top).replace(os.sep, "/")] = full
    return found


def _canonical(path: str) -> bytes:
    with open(path, "rb") as fh:
        data = fh.read()
    if not path.endswith(".json"):
        return data
    try:
        return json.dumps(json.loads(data), sort_keys=True, ensure_ascii=False).encode("utf-8")
    except ValueError:
        return data  # not JSON after all: compare raw bytes


def compare_trees(expected: str, actual: str) -> TreeDiff:
    """Compare two directory trees file by file (JSON canonicalised)."""
    want, got = _files(expected), _files(actual)
    diff = TreeDiff(
        added=sorted(set(got) - set(want)),
        removed=sorted(set(want) - set(got)),
    )
    diff.changed = sorted(p for p in set(want) & set(got) if _canonical(want[p]) != _canonical(got[p]))
    return diff


def check(codex: str, version: str, fixtures: str = FIXTURES) -> TreeDiff:
    """Regenerate into a temporary directory and compare with the fixtures."""
    with tempfile.TemporaryDirectory(prefix="codexmini-schema-") as tmp:
        generate(codex, tmp)
        return compare_trees(os.path.join(fixtures, version), tmp)


def write(codex: str, version: str, fixtures: str = FIXTURES) -> str:
    """Regenerate the fixtures for ``version`` in place; returns their directory."""
    target = os.path.join(fixtures, version)
    os.makedirs(fixtures, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=f".{version}-", dir=fixtures)
    try:
        generate(codex, staging)
        os.chmod(staging, 0o755)  # mkdtemp made it private
        shutil.rmtree(target, ignore_errors=True)
        os.replace(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def report(diff: TreeDiff, version: str) -> str:
    """The message printed on drift: what differs and how to refresh it."""
    total = len(diff.added) + len(diff.removed) + len(diff.changed)
    lines = [f"schema fixtures for codex {version} differ from what the binary prints ({total} file(s)):"]
    lines += [f"  {line}" for line in diff.lines()]
    lines.append(
        f"refresh them with: {REFRESH} CODEX={version}   (runs `{REFRESH_LONG} --version {version}`), then review the diff"
    )
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="regenerate fixtures/schema/<version>/")
    mode.add_argument("--check", action="store_true", help="fail (exit 1) if the fixtures differ from the binary")
    parser.add_argument("--codex", metavar="PATH", help="codex binary (default: codexmini._binary.find_codex())")
    parser.add_argument(
        "--version", metavar="V", default=CODEX_VERSION, help=f"codex version (default {CODEX_VERSION})"
    )
    parser.add_argument("--fixtures", metavar="DIR", default=FIXTURES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        codex = resolve_codex(args.codex, args.version)
        if args.write:
            print(f"wrote {write(codex, args.version, args.fixtures)}")
            return 0
        diff = check(codex, args.version, args.fixtures)
    except SchemaFixtureError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3
    if diff:
        print(report(diff, args.version), file=sys.stderr)
        return 1
    print(f"schema fixtures for codex {args.version} match {codex}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
