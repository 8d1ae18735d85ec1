"""The two sides of a comparison: where each side's schema bundle comes from.

A side is a codex version or a path.  A version with checked-in fixtures
(``fixtures/schema/<version>/``, verbatim output of that binary, checked by
``conformance/test_schema_fixture.py``) is read from there; any other version
is installed from the npm registry into ``.cache/codex/<version>/``
(``npm install --prefix``, once) and its schema is generated next to it
(``.cache/codex/<version>/schema/<flavor>/``, once).  A path is a bundle file,
a directory holding ``codex_app_server_protocol.schemas.json``, or one holding
``<flavor>/`` with it.

An argument that is neither raises :class:`UsageError`; a bundle that cannot be
obtained (npm missing or failing, a codex that reports another version, a
failing generator) raises :class:`DriftError`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from typing import Callable, Dict

from codexmini import CODEX_VERSION
from codexmini._binary import codex_version, native_in_npm_root

from .paths import CACHE, LOCAL_CODEX, SCHEMA_FIXTURES, relative

BUNDLE_FILE = "codex_app_server_protocol.schemas.json"
FLAVORS = ("experimental", "stable")
VERSION_RE = re.compile(r"^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?$")
NPM_TIMEOUT = 900
GENERATE_TIMEOUT = 120


class DriftError(Exception):
    """A bundle could not be obtained (exit 3)."""


class UsageError(Exception):
    """An argument is neither a version nor a path (exit 2)."""


@dataclass(frozen=True)
class Side:
    """One side of the comparison: where its bundle file is and where it came from."""

    label: str
    flavor: str
    path: str
    origin: str

    def to_json(self) -> Dict[str, str]:
        return {"label": self.label, "flavor": self.flavor, "path": relative(self.path), "origin": self.origin}


def _stderr(message: str) -> None:
    print(message, file=sys.stderr)


def locate(arg: str, flavor: str, cache: str = CACHE, log: Callable[[str], None] = _stderr) -> Side:
    """The bundle for a command-line side: a path, or a version (fixtures, else the npm cache)."""
    if os.path.exists(arg):
        candidates = (
            [arg] if os.path.isfile(arg) else [os.path.join(arg, BUNDLE_FILE), os.path.join(arg, flavor, BUNDLE_FILE)]
        )
        for candidate in candidates:
            if os.path.isfile(candidate):
                return Side(arg, flavor, candidate, "path")
        raise UsageError(f"{arg} holds no {BUNDLE_FILE} (nor {flavor}/{BUNDLE_FILE})")
    if not VERSION_RE.match(arg):
        raise UsageError(f"{arg!r} is neither an existing path nor a codex version like {CODEX_VERSION}")
    fixture = os.path.join(SCHEMA_FIXTURES, arg, flavor, BUNDLE_FILE)
    if os.path.isfile(fixture):
        return Side(arg, flavor, fixture, "checked-in fixtures")
    return Side(arg, flavor, ensure_generated(arg, flavor, cache, log), "npm cache")


def ensure_generated(version: str, flavor: str, cache: str = CACHE, log: Callable[[str], None] = _stderr) -> str:
    """``<cache>/<version>/schema/<flavor>/<bundle>``, installing and generating on first use."""
    root = os.path.join(cache, version)
    out = os.path.join(root, "schema", flavor)
    bundle = os.path.join(out, BUNDLE_FILE)
    if os.path.isfile(bundle):
        return bundle
    codex = ensure_installed(version, root, log)
    log(f"generating the {flavor} schema of codex {version} into {relative(out)}")
    generate(codex, out, flavor, scratch=root)
    return bundle


def ensure_installed(version: str, root: str, log: Callable[[str], None] = _stderr) -> str:
    """The native codex of ``version`` under ``root``, installed from npm if missing."""
    codex = native_in_npm_root(root) if os.path.isdir(root) else None
    if codex is None:
        npm = shutil.which("npm")
        if npm is None:
            raise DriftError(
                f"npm is not on PATH, so codex {version} cannot be installed; pass a schema directory instead"
            )
        log(f"installing codex {version} from the npm registry into {relative(root)} (once)")
        os.makedirs(root, exist_ok=True)
        argv = [npm, "install", "--silent", "--no-audit", "--no-fund", "--prefix", root, f"@openai/codex@{version}"]
        try:
            done = subprocess.run(argv, capture_output=True, timeout=NPM_TIMEOUT, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise DriftError(f"{' '.join(argv)} failed: {exc}") from None
        if done.returncode != 0:
            tail = done.stderr.decode("utf-8", "replace")[-2000:]
            raise DriftError(f"{' '.join(argv)} exited {done.returncode}: {tail}")
        codex = native_in_npm_root(root)
        if codex is None:
            raise DriftError(f"npm installed @openai/codex@{version} into {root}, but no codex binary is in it")
    found = codex_version(codex)
    if found != version:
        raise DriftError(f"{codex} reports version {found or 'unknown'}, not {version}; remove {root} and retry")
    return codex


def binary_for(version: str, cache: str = CACHE, log: Callable[[str], None] = _stderr) -> str:
    """A native codex binary of ``version``: the project's ``.codex/`` when it
    holds that version (the pin), else ``<cache>/<version>/``, installed from
    npm on first use."""
    local = native_in_npm_root(LOCAL_CODEX) if os.path.isdir(LOCAL_CODEX) else None
    if local is not None and codex_version(local) == version:
        return local
    return ensure_installed(version, os.path.join(cache, version), log)


def generate(codex: str, out: str, flavor: str, scratch: str) -> None:
    """``codex app-server generate-json-schema`` into ``out``, atomically.

    CODEX_HOME is a throw-away directory under ``scratch`` (not ``/tmp``:
    codex refuses to create helper binaries under a temporary dir there)."""
    os.makedirs(scratch, exist_ok=True)
    home = tempfile.mkdtemp(prefix=".home-", dir=scratch)
    staging = tempfile.mkdtemp(prefix=".schema-", dir=scratch)
    try:
        argv = [codex, "app-server", "generate-json-schema", "--out", staging]
        if flavor == "experimental":
            argv.append("--experimental")
        env = {**os.environ, "CODEX_HOME": home, "NO_COLOR": "1"}
        try:
            done = subprocess.run(argv, env=env, capture_output=True, timeout=GENERATE_TIMEOUT, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise DriftError(f"{' '.join(argv)} failed: {exc}") from None
        if done.returncode != 0 or not os.path.isfile(os.path.join(staging, BUNDLE_FILE)):
            tail = done.stderr.decode("utf-8", "replace")[-2000:]
            raise DriftError(f"{' '.join(argv)} exited {done.returncode} without writing {BUNDLE_FILE}: {tail}")
        os.chmod(staging, 0o755)  # mkdtemp made it private
        os.makedirs(os.path.dirname(out), exist_ok=True)
        shutil.rmtree(out, ignore_errors=True)
        os.replace(staging, out)
    finally:
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(staging, ignore_errors=True)
