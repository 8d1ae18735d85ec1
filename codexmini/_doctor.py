"""``codexmini doctor`` and ``codexmini install-codex``: what is installed and
reachable here, and the pinned codex for someone without the repository.

``doctor`` prints one line per check, ``ok``, ``FAIL`` or ``--`` (not run):
the codex binary found and how, its version against the supported range,
the app-server starting and answering ``initialize``, the login codex has
(``account/read``), and one short turn against the model (skipped with
``--no-model``; bounded by ``--timeout``, past which codex's retry reason is
shown).  Exit 0 when every check held, 1 when one failed, 3 when there is no
codex or it does not start.

``install-codex`` prints the npm command it runs, then runs it: the pinned
codex into the user cache that :func:`~codexmini._binary.find_codex`
searches (``--prefix`` elsewhere, ``--dry-run`` to print only).
"""

from __future__ import annotations

import argparse
import platform
import shutil
import subprocess
import time
from typing import IO, Any, Mapping, Optional

from ._binary import codex_version, find_codex, in_supported_range, native_in_npm_root, supported_range, user_cache
from ._client import AppServerClient
from ._endpoint import endpoint_option
from ._errors import CodexminiError, CodexTimeout, ConfigError, ModelUnreachable, TransportError, TurnFailed
from ._launch import Launch, Timeouts
from ._threads import Thread
from ._version import CODEX_VERSION, __version__

#: How each source of the binary reads in the report.
SOURCES = {
    "explicit": "--codex-bin",
    "env": "$CODEXMINI_CODEX_BIN",
    "local": "a .codex/ npm install",
    "cache": "the user cache (codexmini install-codex)",
    "path": "codex on PATH",
}
#: The probe turn: the model is asked for one word.
PROBE = "Reply with the single word OK."
#: Exit statuses (the CLI's).
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_NO_CODEX = 0, 1, 2, 3


def add_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    """``doctor`` and ``install-codex`` on the CLI's subparsers."""
    doctor = sub.add_parser("doctor", parents=[common], help="check the codex binary, its login and the model")
    doctor.add_argument("--codex-bin", metavar="PATH", help="codex binary (default: the one codexmini finds)")
    doctor.add_argument("--provider-url", metavar="URL", help="probe this Responses API endpoint")
    doctor.add_argument("--api-key-env", metavar="NAME", help="environment variable holding its key")
    doctor.add_argument("--model", metavar="M", help="model slug for the probe turn")
    doctor.add_argument("--no-model", action="store_true", help="skip the probe turn (no model request)")
    doctor.add_argument(
        "--timeout", type=float, default=30.0, metavar="S", help="bound of each step (default 30 seconds)"
    )
    install = sub.add_parser("install-codex", help=f"npm install codex {CODEX_VERSION} into a user cache")
    install.add_argument("--prefix", metavar="DIR", help="install here instead of the user cache")
    install.add_argument("--dry-run", action="store_true", help="print the npm command only")


class Report:
    def __init__(self, out: IO[str]) -> None:
        self.out = out
        self.failed = 0

    def check(self, ok: Optional[bool], what: str) -> bool:
        """One line: ``ok``, ``FAIL``, or ``--`` for a check that did not run (``None``)."""
        self.out.write({True: "  ok    ", False: "  FAIL  ", None: "  --    "}[ok] + what + "\n")
        self.out.flush()
        self.failed += ok is False
        return bool(ok)


def account_line(answer: Mapping[str, Any]) -> str:
    """The login ``account/read`` reports, in a line (never a key)."""
    account = answer.get("account")
    if not isinstance(account, Mapping):
        needs = "needs one" if answer.get("requiresOpenaiAuth") else "the configured provider needs none"
        return f"login: none ({needs}; `codex login`, or a model endpoint with its key)"
    kind = account.get("type")
    who = f" {account['email']}" if account.get("email") else ""
    return f"login: {kind}{who}"


async def doctor(args: argparse.Namespace, out: IO[str], env: Mapping[str, str]) -> int:
    report = Report(out)
    out.write(f"codexmini {__version__} on Python {platform.python_version()}; codex pinned at {CODEX_VERSION}\n")
    try:
        endpoint = endpoint_option(args.provider_url, args.api_key_env, env)
        if not args.timeout > 0:
            raise ConfigError(f"--timeout must be a positive number of seconds, not {args.timeout}")
    except ConfigError as exc:
        out.write(f"codexmini: {exc}\n")
        return EXIT_USAGE
    try:
        found = find_codex(args.codex_bin, env=env)
    except CodexminiError as exc:
        report.check(False, f"codex binary: {exc}")
        return EXIT_NO_CODEX
    report.check(True, f"codex binary: {found.path} (from {SOURCES[found.source]})")
    version = codex_version(found.path, timeout=args.timeout)
    report.check(in_supported_range(version), f"codex version {version or 'unknown'} (supported: {supported_range()})")
    launch = Launch(
        codex_bin=found.path,
        endpoint=endpoint,
        parent_env=env,
        timeouts=Timeouts(initialize=args.timeout, request=args.timeout, model_retry=args.timeout),
    )
    started = time.monotonic()
    try:
        client = await AppServerClient.start(launch)
    except (TransportError, CodexTimeout) as exc:
        report.check(False, f"app-server: {exc}")
        return EXIT_NO_CODEX
    try:
        report.check(True, f"app-server answered initialize in {time.monotonic() - started:.1f}s")
        try:
            report.check(True, account_line(await client.read_account()))
        except CodexminiError as exc:
            report.check(False, f"login: account/read failed: {exc}")
        if args.no_model:
            report.check(None, "model: not asked (--no-model)")
        else:
            await probe(client, args, report)
    finally:
        await client.close()
    return EXIT_FAILED if report.failed else EXIT_OK


async def probe(client: AppServerClient, args: argparse.Namespace, report: Report) -> None:
    """One turn asking for a word, in a thread that may not run anything."""
    started = time.monotonic()
    try:
        thread = await Thread.start(client, model=args.model, sandbox="read-only", approval_policy="never")
        result = await thread.run(PROBE)
    except ModelUnreachable as exc:
        report.check(False, f"model: unreachable after {exc.timeout:.0f}s: {exc.reason}")
    except TurnFailed as exc:
        report.check(False, f"model: the turn failed: {exc.message}")
    except CodexminiError as exc:
        report.check(False, f"model: {type(exc).__name__}: {exc}")
    else:
        answer = (result.final_response or "").strip()
        report.check(True, f"model answered in {time.monotonic() - started:.1f}s: {answer[:60]!r}")


def install_codex(args: argparse.Namespace, out: IO[str], env: Mapping[str, str]) -> int:
    prefix = args.prefix or user_cache(env)
    if not prefix:
        out.write("codexmini: no user cache (neither XDG_CACHE_HOME nor HOME is set): give --prefix DIR\n")
        return EXIT_USAGE
    npm = shutil.which("npm", path=env.get("PATH", ""))
    command = [npm or "npm", "install", "--prefix", prefix, f"@openai/codex@{CODEX_VERSION}"]
    out.write("$ " + " ".join(command) + "\n")
    out.flush()
    if args.dry_run:
        return EXIT_OK
    if npm is None:
        out.write("codexmini: npm is not on PATH: install Node.js (it brings npm), then run this again\n")
        return EXIT_NO_CODEX
    if subprocess.run(command, env=dict(env), check=False).returncode != 0:
        out.write("codexmini: npm install failed (its output is above)\n")
        return EXIT_FAILED
    found = native_in_npm_root(prefix)
    if found is None:
        out.write(f"codexmini: npm installed nothing codexmini can run under {prefix}\n")
        return EXIT_FAILED
    out.write(f"installed: {found}\n")
    if args.prefix:
        out.write(f"codexmini finds it with CODEXMINI_CODEX_BIN={found}\n")
    return EXIT_OK


__all__ = ["PROBE", "SOURCES", "account_line", "add_parsers", "doctor", "install_codex", "probe"]
