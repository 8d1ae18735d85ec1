"""``python -m codexmini`` (also the ``codexmini`` console script).

The contract (``docs/cli.md``); other tools script against it:

* ``smoke``   -- the offline end-to-end check (see :mod:`.smoke`);
* ``run PROMPT`` -- one agent turn against the configured model, streamed;
* ``fork LOG --at SEQ NEW`` -- a new session log from a log's events 0..SEQ
  (:func:`._session.fork_log`), which an agent then resumes;
* ``doctor`` / ``install-codex`` -- what is installed and reachable, and the
  pinned codex into a user cache (see :mod:`.doctor`);
* ``version`` / ``--version``.

Exit codes: 0 the turn completed; 1 it ended otherwise (``error``,
``blocked``) or failed (a session log that cannot be written mid-run
included); 2 usage error (a log that cannot be opened, or that another writer
holds, included); 3 the codex binary is missing or failed to start; 130
interrupted (Ctrl-C, after a clean ``turn/interrupt``).

stdout carries the final answer alone; the transcript, the session log's
path and the summary go to stderr (on a terminal, with the time elapsed
while nothing streams).  With ``--json`` stdout carries only the session-log
events, one per line, exactly as written to the log.  ``--verbose`` shows
codex's own stderr and codexmini's debug log.

``run --output-schema FILE`` sends the JSON Schema in FILE with every codex
turn (``turn/start.outputSchema``) and checks the final answer against it
with the stdlib validator: stdout then carries only the parsed JSON value, on
one line, and the transcript goes to stderr.  An answer that is not JSON or
that the schema rejects prints nothing on stdout and exits 1, the reasons on
stderr.  With ``--json`` as well, stdout keeps its contract -- the session-log
events only (the answer is the text of the last ``assistant/message``) -- and
the check still decides the exit status.  An unreadable or unsupported schema
is a usage error (exit 2) before codex starts.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import logging
import os
import signal
import sys
import time
from typing import IO, Any, Callable, Dict, List, Mapping, Optional, Sequence

from ._agent import PROMPT_BUDGET, Agent, AgentConfig
from ._binary import codex_version, find_codex, in_supported_range, supported_range
from ._connect import Connect
from ._doctor import add_parsers as add_doctor_parsers
from ._doctor import doctor, install_codex
from ._endpoint import endpoint_option
from ._errors import (
    BinaryNotFound,
    CodexminiError,
    CodexTimeout,
    ConfigError,
    EndpointKeyMissing,
    ForkRefused,
    OutputValidationError,
    SchemaError,
    SessionLogError,
    StartFailed,
    TransportError,
)
from ._knobs import REASONING_SUMMARIES, check_reasoning
from ._launch import Launch
from ._permission import ACCEPT, ACCEPT_FOR_SESSION, CANCEL, DECLINE, SANDBOX_MODES, ApprovalRequest, Reply
from ._prompt import COMPACTION, TOOL_OUTPUT_BUDGET
from ._render import Console, EventPrinter, Ticker, compaction_line, isatty, use_color
from ._session import SessionLog, fork_log
from ._structured import OutputSchema
from ._version import CODEX_VERSION, __version__

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_NO_CODEX, EXIT_INTERRUPTED = 0, 1, 2, 3, 130

#: ``--approval-policy``: codex's names where the session log has a knob
#: for them, and ``ask``, the log's own word for ``on-request``.
APPROVAL_CHOICES = ("never", "on-request", "ask")
#: ... and the knob each is logged as.
APPROVAL_KNOB = {"never": "never", "on-request": "ask", "ask": "ask"}

#: turn/end reason → exit status
REASON_EXIT = {"completed": EXIT_OK, "error": EXIT_ERROR, "blocked": EXIT_ERROR, "aborted": EXIT_INTERRUPTED}


class UsageError(CodexminiError):
    """A bad command line (exit 2)."""


async def start(agent: Agent) -> None:
    """``agent.start()``, a codex that dies or hangs before answering being :class:`StartFailed`."""
    try:
        await agent.start()
    except (TransportError, CodexTimeout) as exc:
        raise StartFailed(f"codex failed to start: {exc}") from exc


def verbose_logging(stream: IO[str], verbose: bool) -> logging.Handler:
    """codexmini's log on ``stream``: warnings, or everything with ``--verbose``
    (codex's own stderr lines among it, logged as ``codexmini.codex``)."""
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    root = logging.getLogger("codexmini")
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbose else logging.WARNING)
    return handler


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="codexmini",
        description="Drive the OpenAI Codex CLI's app-server from Python.",
        epilog="exit codes: 0 completed, 1 turn error, 2 usage, 3 codex missing or failed to start, 130 interrupted",
    )
    parser.add_argument("--version", action="version", version=f"codexmini {__version__} (codex {CODEX_VERSION})")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "-v", "--verbose", action="store_true", help="show codex's stderr and codexmini's debug log on stderr"
    )

    smoke = sub.add_parser("smoke", parents=[common], help="prove the whole chain works, offline")
    smoke.add_argument("--codex-bin", metavar="PATH", help="codex binary (default: the pinned install)")
    smoke.add_argument("--keep", action="store_true", help="keep the temporary workspace and log")
    smoke.add_argument(
        "--over",
        choices=("stdio", "ws", "unix", "all"),
        default="all",
        help="how to reach the codex it starts: a child over stdio, a server over ws:// or unix://, or all three (default)",
    )
    smoke.add_argument(
        "--connect",
        metavar="URL",
        help="check a running codex app-server instead (ws://HOST:PORT or unix:///PATH): no model turn",
    )
    smoke.add_argument("--token-file", metavar="FILE", help="with --connect: the file holding its capability token")

    run = sub.add_parser("run", parents=[common], help="run one agent turn")
    run.add_argument("prompt", metavar="PROMPT", help="the user message ('-' reads it from stdin)")
    run.add_argument("--cwd", metavar="DIR", help="working directory for codex (default: .)")
    run.add_argument("--session", metavar="FILE", help="append to (and resume from) this session log")
    run.add_argument("--model", metavar="M", help="model slug passed to codex (logged: a resumed session keeps it)")
    run.add_argument("--sandbox", choices=SANDBOX_MODES, help="pin the sandbox mode")
    run.add_argument(
        "--reasoning-effort",
        metavar="E",
        help="reasoning effort, e.g. low, medium, high (logged: a resumed session keeps it)",
    )
    run.add_argument(
        "--reasoning-summary",
        choices=REASONING_SUMMARIES,
        help="reasoning summary (logged: a resumed session keeps it)",
    )
    run.add_argument(
        "--approval-policy",
        choices=APPROVAL_CHOICES,
        help="logged as an approval/policy knob (on-request, or its older name ask: workspace-write + on-request)",
    )
    run.add_argument("--auto-approve", action="store_true", help="accept every approval request")
    run.add_argument("--provider-url", metavar="URL", help="Responses API base URL for codex to use")
    run.add_argument("--api-key-env", metavar="NAME", help="environment variable holding the API key")
    run.add_argument(
        "-c", dest="config", action="append", default=[], metavar="KEY=VALUE", help="codex -c override (repeatable)"
    )
    run.add_argument(
        "--pass-env", action="append", default=[], metavar="NAME", help="pass this variable to codex (repeatable)"
    )
    run.add_argument("--codex-bin", metavar="PATH", help="codex binary to run")
    run.add_argument(
        "--connect", metavar="URL", help="a running codex app-server instead: ws://HOST:PORT or unix:///PATH"
    )
    run.add_argument("--token-file", metavar="FILE", help="with --connect: the file holding its capability token")
    run.add_argument("--image", action="append", default=[], metavar="FILE", help="attach an image (repeatable)")
    run.add_argument("--json", action="store_true", help="stdout: the session-log events only")
    run.add_argument(
        "--prompt-budget",
        type=int,
        metavar="CHARS",
        help=f"compact the session when a step's prompt would pass this many characters (default {PROMPT_BUDGET})",
    )
    run.add_argument(
        "--tool-output-budget",
        type=int,
        metavar="CHARS",
        help=f"characters of one tool output the prompt keeps, head and tail (default {TOOL_OUTPUT_BUDGET})",
    )
    run.add_argument(
        "--output-schema",
        metavar="FILE",
        help="JSON Schema for the final answer; stdout: the parsed JSON (with --json: still the log events only)",
    )

    fork = sub.add_parser("fork", help="a new session log from a log's events 0..SEQ, to resume from there")
    fork.add_argument("log", metavar="LOG", help="the session log to fork (only read: its writer may run)")
    fork.add_argument(
        "--at", metavar="SEQ", type=int, required=True, help="the last event to keep (inclusive), between two turns"
    )
    fork.add_argument("new", metavar="NEW", help="the new session log (must not exist)")

    sub.add_parser("version", help="versions and the codex binary found")
    add_doctor_parsers(sub, common)
    return parser


def main(
    argv: Optional[Sequence[str]] = None,
    *,
    stdin: Optional[IO[str]] = None,
    stdout: Optional[IO[str]] = None,
    stderr: Optional[IO[str]] = None,
    env: Optional[Mapping[str, str]] = None,
) -> int:
    return _main(
        argv, stdin or sys.stdin, stdout or sys.stdout, stderr or sys.stderr, os.environ if env is None else env
    )


def _main(
    argv: Optional[Sequence[str]], stdin: IO[str], stdout: IO[str], stderr: IO[str], env: Mapping[str, str]
) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help/--version exit 0, errors exit 2
        return int(exc.code or 0)
    handler = verbose_logging(stderr, getattr(args, "verbose", False))
    try:
        return COMMANDS[args.command](args, stdin, stdout, stderr, env)
    except (KeyboardInterrupt, asyncio.CancelledError):  # a second Ctrl-C
        stderr.write("codexmini: interrupted\n")
        return EXIT_INTERRUPTED
    except CodexminiError as exc:
        return _failed(exc, stderr, getattr(args, "verbose", False))
    finally:
        logging.getLogger("codexmini").removeHandler(handler)


#: A typed error that ends a command → its exit status (else EXIT_ERROR).
ERROR_EXIT = {
    UsageError: EXIT_USAGE,
    # A resumed session whose endpoint's key variable is unset: the same mistake as
    # `--api-key-env K` with K unset, so the same exit.
    EndpointKeyMissing: EXIT_USAGE,
    BinaryNotFound: EXIT_NO_CODEX,
    StartFailed: EXIT_NO_CODEX,
}


def _failed(exc: CodexminiError, stderr: IO[str], verbose: bool) -> int:
    """One line for a typed error (the traceback too with ``--verbose``)."""
    stderr.write(f"codexmini: {exc}\n")
    if verbose:
        import traceback

        traceback.print_exception(type(exc), exc, exc.__traceback__, file=stderr)
    return next((code for kind, code in ERROR_EXIT.items() if isinstance(exc, kind)), EXIT_ERROR)


def version(out: IO[str], env: Mapping[str, str]) -> int:
    out.write(f"codexmini {__version__}\npinned codex {CODEX_VERSION} (supported: {supported_range()})\n")
    try:
        found = find_codex(env=env)
    except BinaryNotFound as exc:
        out.write(f"codex binary: not found ({exc})\n")
        return EXIT_NO_CODEX
    reported = codex_version(found.path)
    verdict = "supported" if in_supported_range(reported) else f"outside the supported {supported_range()}"
    out.write(f"codex binary: {found.path} ({found.source}), version {reported or 'unknown'} ({verdict})\n")
    return EXIT_OK


def default_session_path(env: Mapping[str, str], now: datetime.datetime) -> str:
    state = env.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(state, "codexmini", "sessions", now.strftime("%Y%m%dT%H%M%S-%f") + ".jsonl")


def agent_config(args: argparse.Namespace, env: Mapping[str, str]) -> AgentConfig:
    cwd = os.path.abspath(args.cwd or os.getcwd())
    if not os.path.isdir(cwd):
        raise UsageError(f"--cwd {args.cwd}: not a directory")
    try:
        endpoint = endpoint_option(args.provider_url, args.api_key_env, env)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    launch, connect = Launch(), None
    try:
        if args.connect is not None:
            starting = [flag for flag, given in _STARTING if getattr(args, given)]
            if starting:
                raise UsageError(f"--connect: codex is already running; {', '.join(starting)} start one")
            connect = Connect(args.connect, token_file=args.token_file)
        elif args.token_file is not None:
            raise UsageError("--token-file goes with --connect")
        else:
            launch = Launch(codex_bin=args.codex_bin, config=args.config, pass_env=args.pass_env, endpoint=endpoint)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    schema = load_output_schema(args.output_schema) if args.output_schema else None
    try:
        check_reasoning(args.reasoning_effort, args.reasoning_summary)
    except ConfigError as exc:
        raise UsageError(f"--reasoning-effort: {exc}") from None
    for image in args.image:
        if not os.path.isfile(image) or not os.access(image, os.R_OK):
            raise UsageError(f"--image {image}: not a readable file")
    budgets = {
        name: value
        for name, value in (("prompt_budget", args.prompt_budget), ("tool_output_budget", args.tool_output_budget))
        if value is not None
    }
    try:
        return AgentConfig(
            cwd=cwd,
            model=args.model,
            sandbox=args.sandbox,
            launch=launch,
            connect=connect,
            output_schema=schema.wire if schema is not None else None,
            **budgets,
        )
    except ConfigError as exc:  # a budget below 1
        raise UsageError(str(exc)) from None


#: The options of a codex the CLI starts, refused beside --connect: (flag, argparse name).
_STARTING = (
    ("--codex-bin", "codex_bin"),
    ("--provider-url", "provider_url"),
    ("--api-key-env", "api_key_env"),
    ("-c", "config"),
    ("--pass-env", "pass_env"),
)


def load_output_schema(path: str) -> OutputSchema:
    """``--output-schema FILE``: a JSON Schema the stdlib validator supports (else a usage error)."""
    try:
        with open(path, encoding="utf-8") as fh:
            return OutputSchema(json.load(fh))
    except (OSError, ValueError, SchemaError) as exc:
        raise UsageError(f"--output-schema {path}: {exc}") from None


def final_answer(events: Sequence[Mapping[str, Any]]) -> Optional[str]:
    """The last text block of the last ``assistant/message`` among ``events``:
    the turn's final agent message (a held message may merge several)."""
    for event in reversed(events):
        if event["type"] == "assistant/message":
            texts = [b["text"] for b in event["data"]["content"] if b.get("type") == "text"]
            if texts:
                return str(texts[-1])
    return None


class Prompter:
    """Approval prompts on a terminal: y(es), n(o), a(lways, this session), c(ancel)."""

    KEYS = {
        "y": ACCEPT,
        "yes": ACCEPT,
        "n": DECLINE,
        "no": DECLINE,
        "a": ACCEPT_FOR_SESSION,
        "always": ACCEPT_FOR_SESSION,
        "c": CANCEL,
        "cancel": CANCEL,
    }

    def __init__(self, stdin: IO[str], console: Console) -> None:
        self.stdin = stdin
        self.console = console

    async def _ask(self, question: str) -> str:
        self.console.line(question, "bold")
        self.console.write("> ")
        line = await asyncio.get_running_loop().run_in_executor(None, self.stdin.readline)
        self.console.at_line_start = True
        return line.strip()

    async def __call__(self, request: ApprovalRequest) -> Reply:
        if request.kind == "user_input":
            answers: Dict[str, List[str]] = {}
            for q in request.questions:
                options = ", ".join(str(o.get("label")) for o in q.get("options") or ())
                text = await self._ask(f"? {q.get('question')}" + (f" [{options}]" if options else ""))
                if text:
                    answers[str(q.get("id"))] = [text]
            return Reply(ACCEPT if answers else DECLINE, answers=answers)
        what = {
            "command": "run",
            "file_change": "change files",
            "permissions": "get more permissions",
            "mcp_tool_call": "call an MCP tool",
        }.get(request.kind, request.kind)
        detail = request.summary or str(request.params.get("reason") or "")
        while True:
            key = (
                await self._ask(
                    f"? codex wants to {what}: {detail}\n  [y]es / [n]o / [a]lways this session / [c]ancel turn"
                )
            ).lower()
            if key in self.KEYS:
                return Reply(self.KEYS[key])
            if not key:  # end of input: fail closed
                return Reply(DECLINE)


class CtrlC:
    """SIGINT during ``run``: the first interrupts the turn (``turn/interrupt``,
    the aborted turn is logged, exit 130); a second stops waiting for that;
    none interrupts the child's shutdown, which its own timeouts bound."""

    def __init__(self, agent: Any, console: Console, main_task: Any) -> None:
        self.agent = agent
        self.console = console
        self.main_task = main_task
        self.interrupted = False
        self.cleaning = False

    def __call__(self) -> None:
        if self.cleaning:
            return
        if self.interrupted:
            self.main_task.cancel()
            return
        self.interrupted = True
        self.console.line("interrupting…", "yellow")
        self.agent.cancel(cause="interrupt")


async def _accept_all(request: ApprovalRequest) -> Reply:
    return Reply(ACCEPT)


async def run(
    args: argparse.Namespace, stdin: IO[str], stdout: IO[str], stderr: IO[str], env: Mapping[str, str]
) -> int:
    config = agent_config(args, env)
    prompt = stdin.read() if args.prompt == "-" else args.prompt
    schema = OutputSchema(config.output_schema) if config.output_schema is not None else None
    console = Console(stderr, use_color(stderr, env))
    path = args.session or default_session_path(env, datetime.datetime.now())
    try:
        log = SessionLog.open(path)
    except (SessionLogError, OSError) as exc:
        raise UsageError(f"--session {path}: {exc}") from None
    if args.json:

        def echo(event: Dict[str, Any], line: str) -> None:
            stdout.write(line)
            stdout.flush()

        log.subscribe(echo)
    log.subscribe(lambda event, line: _show_compaction(console, event))
    interactive = bool(getattr(stdin, "isatty", None) and stdin.isatty()) and args.prompt != "-"
    approvals = _accept_all if args.auto_approve else (Prompter(stdin, console) if interactive else None)
    started = time.monotonic()
    agent = Agent(log, config, approvals=approvals, on_event=EventPrinter(console))
    loop = asyncio.get_running_loop()
    ctrl_c = CtrlC(agent, console, asyncio.current_task())
    loop.add_signal_handler(signal.SIGINT, ctrl_c)
    ticker = Ticker(console) if console.tty else None
    try:
        await start(agent)
        console.line(f"session log: {path}", "dim")
        # Logged, so that `run --session S` without these flags resumes with them.
        if args.approval_policy:
            agent.set_knob("approval/policy", APPROVAL_KNOB[args.approval_policy])
        if args.model:
            agent.set_model(args.model)
        if args.reasoning_effort is not None or args.reasoning_summary is not None:
            agent.set_reasoning(args.reasoning_effort, args.reasoning_summary)
        if config.launch.endpoint is not None:
            agent.set_endpoint(config.launch.endpoint, api_key_env=args.api_key_env)
        images = [{"type": "image", "path": os.path.abspath(path)} for path in args.image]
        first = len(log.events)
        end = await agent.run([{"type": "text", "text": prompt}, *images] if images else prompt)
    finally:
        ctrl_c.cleaning = True
        if ticker is not None:
            ticker.stop()
        try:
            await agent.close()
        finally:
            loop.remove_signal_handler(signal.SIGINT)
            log.close()
    usage = end.get("usage") or {}
    summary = f"turn {end['reason']} · {agent.stats['steps']} step(s) · {agent.stats['tool_calls']} tool call(s) · {usage.get('totalTokens', 0)} tokens · {time.monotonic() - started:.1f}s"
    if end.get("error"):
        summary += f" · {end['error'].get('code')}: {end['error'].get('message')}"
    console.line(summary, "bold" if end["reason"] == "completed" else "red")
    answer = final_answer(log.events[first:])
    if schema is not None and end["reason"] == "completed":
        return structured_answer(schema, answer, None if args.json else stdout, stderr)
    if end["reason"] == "completed" and answer is not None and not args.json and not (console.tty and isatty(stdout)):
        # The answer alone (on one terminal the transcript above showed it already).
        stdout.write(answer if answer.endswith("\n") else answer + "\n")
        stdout.flush()
    return REASON_EXIT.get(end["reason"], EXIT_ERROR)


def _show_compaction(console: Console, event: Mapping[str, Any]) -> None:
    """Say so on the console when the agent compacts the session (the log has it all)."""
    if event["type"] == COMPACTION:
        console.line(compaction_line(event["data"]), "dim")


def structured_answer(schema: OutputSchema, text: Optional[str], out: Optional[IO[str]], err: IO[str]) -> int:
    """Check the final answer; print the value on ``out`` (unless ``None``: --json)."""
    try:
        value = schema.parse(text)
    except OutputValidationError as exc:
        err.write(f"codexmini: {exc}\n")
        return EXIT_ERROR
    if out is not None:
        out.write(json.dumps(value, ensure_ascii=False) + "\n")
        out.flush()
    return EXIT_OK


def _cmd_run(args: argparse.Namespace, stdin: IO[str], stdout: IO[str], stderr: IO[str], env: Mapping[str, str]) -> int:
    return asyncio.run(run(args, stdin, stdout, stderr, env))


def _cmd_smoke(
    args: argparse.Namespace, stdin: IO[str], stdout: IO[str], stderr: IO[str], env: Mapping[str, str]
) -> int:
    from ._smoke import smoke

    if args.connect is None:
        if args.token_file is not None:
            raise UsageError("--token-file goes with --connect")
        return smoke(args, stdout, env)
    try:
        return smoke(args, stdout, env)
    except ConfigError as exc:  # a bad --connect URL, a token file that cannot be read
        raise UsageError(str(exc)) from None


def _cmd_fork(
    args: argparse.Namespace, stdin: IO[str], stdout: IO[str], stderr: IO[str], env: Mapping[str, str]
) -> int:
    try:
        count = fork_log(args.log, args.at, args.new)
    except ForkRefused as exc:
        raise UsageError(str(exc)) from None
    except SessionLogError as exc:
        if exc.path == args.log:  # LOG cannot be read, or is not a session log: as run --session's
            raise UsageError(str(exc)) from None
        raise  # writing NEW failed (and it was removed): exit 1
    stdout.write(f"forked {args.log} at seq {args.at} into {args.new}: {count} events\n")
    return EXIT_OK


def _cmd_version(
    args: argparse.Namespace, stdin: IO[str], stdout: IO[str], stderr: IO[str], env: Mapping[str, str]
) -> int:
    return version(stdout, env)


def _cmd_doctor(
    args: argparse.Namespace, stdin: IO[str], stdout: IO[str], stderr: IO[str], env: Mapping[str, str]
) -> int:
    return asyncio.run(doctor(args, stdout, env))


def _cmd_install(
    args: argparse.Namespace, stdin: IO[str], stdout: IO[str], stderr: IO[str], env: Mapping[str, str]
) -> int:
    return install_codex(args, stdout, env)


Command = Callable[[argparse.Namespace, IO[str], IO[str], IO[str], Mapping[str, str]], int]
#: The subcommands, by name.
COMMANDS: Dict[str, Command] = {
    "run": _cmd_run,
    "smoke": _cmd_smoke,
    "fork": _cmd_fork,
    "version": _cmd_version,
    "doctor": _cmd_doctor,
    "install-codex": _cmd_install,
}


__all__ = ["EXIT_ERROR", "EXIT_INTERRUPTED", "EXIT_NO_CODEX", "EXIT_OK", "EXIT_USAGE", "build_parser", "main"]
