"""Run a scenario live (real codex + scripted model) or replayed (recorded transcript).

The same scenario code drives both: :func:`execute` builds a scratch workspace,
an agent (or, for thread-level scenarios, a bare client) and a frame tap, and
runs the scenario's prompts.  Only where frames come from differs:

* ``live``: a real codex binary, talking to a :class:`~codexmini.testing.scripted_model.ScriptedModel`
  serving the scenario's script (a script error -- a tool the request did
  not offer -- fails the run with the scripted model's reason);
* ``replay``: :class:`codexmini.testing.replay.Replay`, in memory, playing
  ``fixtures/<version>/<scenario>.frames.jsonl`` and checking that the client
  sends what the binary received.

A driver may start several clients one after the other (a turn in one codex
process, ``Thread.resume`` in the next, on the same ``CODEX_HOME``): each is a
codex process of its own, and its frames are tagged with its number
(``"conn": 1`` in the transcript; the first client's frames carry no tag, so
one-process recordings read as before).  A replay plays each process's frames
to the client started in the same order (:class:`Replays`).

Every run is held to one codex version's behaviour (``version``, default
the pin): the scenario's :class:`~conformance.versions.ByVersion` values are
resolved for it (:meth:`Scenario.at`), a replay plays that version's
recording, and the checks read :attr:`ScenarioResult.version`.  A live run may use
a binary of another version (``make drift``); it is still held to
``version``.

Everything that would vary between runs is pinned or normalised: message ids
come from a counter, the session log's clock is fixed at 0, ``HOME`` points
into the scratch root (so ``bash -lc`` reads no login profile of this
machine), and paths/UUIDs/times in frames go through :class:`Normaliser`.
Scratch roots live under ``/var/tmp`` (codex refuses to create helper binaries
under ``/tmp``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import itertools
import json
import os
import shutil
import signal
import sys
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from codexmini import CODEX_VERSION, Agent, AgentConfig, Connect, Launch, ModelEndpoint, Timeouts, __version__
from codexmini._client import AppServerClient
from codexmini._events import Event
from codexmini._permission import ApprovalRequest, Reply
from codexmini._session import SessionLog
from codexmini.testing import FakeAppServer
from codexmini.testing.live import CodexServer, scratch_dir
from codexmini.testing.normalize import Normaliser, normalise_argv
from codexmini.testing.replay import Replay, load_transcript
from codexmini.testing.scripted_model import ScriptedModel

from .versions import ByVersion, at_version, fixtures_dir

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = fixtures_dir(CODEX_VERSION)

#: A step of a scenario: a user message for a new turn, or a coroutine.
Prompt = Union[str, Sequence[Mapping[str, Any]], Callable[["Run"], Awaitable[None]]]
#: How a scenario answers a server request of one kind.
Answer = Union[Reply, str, Callable[[ApprovalRequest], Awaitable[Reply]]]
DEADLINE = "deadline"  # never answer: the client's handler deadline answers fail-closed


#: The usage every scripted answer reports.
USAGE = {"input_tokens": 10, "cached_tokens": 2, "output_tokens": 5, "reasoning_tokens": 1}


def message(id_: str, *deltas: str) -> Dict[str, Any]:
    """A scripted model message streamed as ``deltas``."""
    return {"type": "message", "id": id_, "deltas": list(deltas)}


def answer(*items: Dict[str, Any], **extra: Any) -> Dict[str, Any]:
    """A scripted model response of ``items`` (and ``extra`` keys)."""
    return {"output": list(items), "usage": USAGE, **extra}


@dataclass
class Paths:
    root: str
    ws: str
    home: str
    outside: str

    @classmethod
    def create(cls, name: str) -> "Paths":
        root = scratch_dir(f"codexmini-{name}-")
        paths = cls(root, os.path.join(root, "ws"), os.path.join(root, "codex-home"), os.path.join(root, "outside"))
        for d in (paths.ws, paths.home, paths.outside):
            os.makedirs(d)
        return paths

    def placeholders(self) -> Dict[str, str]:
        return {
            self.root: "/ROOT",
            self.ws: "/WORKSPACE",
            self.home: "/CODEX_HOME",
            self.outside: "/OUTSIDE",
            REPO: "/REPO",
        }

    def substitute(self, value: Any) -> Any:
        """Fill ``{WS}``, ``{OUTSIDE}``, ``{ROOT}``, ``{REPO}``, ``{PYTHON}`` in strings."""
        if isinstance(value, dict):
            return {k: self.substitute(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.substitute(v) for v in value]
        if isinstance(value, str):
            for key, real in (
                ("{WS}", self.ws),
                ("{OUTSIDE}", self.outside),
                ("{ROOT}", self.root),
                ("{REPO}", REPO),
                ("{PYTHON}", sys.executable),
            ):
                value = value.replace(key, real)
        return value


@dataclass(frozen=True)
class Scenario:
    """One recorded behaviour of codex, and what codexmini must make of it.

    ``model`` and ``config`` may be :class:`~conformance.versions.ByVersion`
    values (a model slug that offers ``apply_patch``, a flag one version
    needs); :meth:`at` resolves them for one version."""

    name: str
    script: Mapping[str, Any]
    prompts: Sequence[Prompt] = ("say hi",)
    model: Union[str, ByVersion[str]] = "gpt-fake"
    config: Union[Sequence[str], ByVersion[Sequence[str]]] = ()
    knobs: Sequence[Tuple[str, str]] = ()
    sandbox: Optional[str] = None
    approval_policy: Optional[str] = None
    approvals: Mapping[str, Answer] = field(default_factory=dict)
    handler_timeout: float = 30.0
    files: Mapping[str, Union[str, bytes]] = field(default_factory=dict)
    on_event: Optional[Callable[["Run", Event], None]] = None
    driver: Optional[Callable[["Run"], Awaitable[None]]] = None
    check: Optional[Callable[["ScenarioResult"], None]] = None
    description: str = ""
    #: How it is recorded: ``"stdio"`` (each client a codex child of its own)
    #: or ``"ws"``/``"unix"`` (one codex server, each client a connection to it).
    transport: str = "stdio"

    @property
    def uses_agent(self) -> bool:
        return self.driver is None

    def at(self, version: str) -> "Scenario":
        """This scenario with its per-version values resolved for ``version``."""
        return dataclasses.replace(
            self, model=at_version(self.model, version), config=tuple(at_version(self.config, version))
        )

    @property
    def by_version(self) -> Dict[str, ByVersion[Any]]:
        """The fields that differ by version."""
        return {f: v for f in ("model", "config") for v in [getattr(self, f)] if isinstance(v, ByVersion)}


@dataclass
class Run:
    """The live state of one scenario run, handed to prompts, hooks and drivers."""

    scenario: Scenario
    mode: str
    paths: Paths
    config: AgentConfig
    frames: List[Tuple[str, Dict[str, Any]]] = field(default_factory=list)
    events: List[Event] = field(default_factory=list)
    approvals: List[ApprovalRequest] = field(default_factory=list)
    agent: Optional[Agent] = None
    log: Optional[SessionLog] = None
    clients: List[AppServerClient] = field(default_factory=list)
    tasks: List["asyncio.Task[Any]"] = field(default_factory=list)
    #: For each frame, the number of the client (codex process) it belongs to.
    conns: List[int] = field(default_factory=list)
    #: What a driver learned, for its check (results, errors it caught).
    notes: Dict[str, Any] = field(default_factory=dict)
    #: The codex server's URL when the clients connect to one (live, over ws/unix).
    url: Optional[str] = None
    #: How clients reach codex (:data:`TRANSPORTS`).
    transport: str = "stdio"

    def tap(self, direction: str, frame: Dict[str, Any]) -> None:
        self.record(0, direction, frame)

    def record(self, conn: int, direction: str, frame: Dict[str, Any]) -> None:
        self.frames.append((direction, json.loads(json.dumps(frame))))
        self.conns.append(conn)

    async def start_client(self, **options: Any) -> AppServerClient:
        """A bare client configured like the agent's (for thread-level drivers);
        the n-th one started is codex process n of the recording (``options``
        go to :meth:`AppServerClient.start`)."""
        cfg = self.config
        tap = functools.partial(self.record, len(self.clients))
        if self.url is not None:  # a connection to the one server of the run
            connect = Connect(self.url, timeouts=self.timeouts)
            client = await AppServerClient.connect(connect, tap=tap, **options)
        else:
            client = await AppServerClient.start(cfg.launch.for_workspace(cfg.cwd), tap=tap, **options)
            if self.transport != "stdio":
                # A replayed connection: the fake plays the server's side of
                # it, and the client owes it what it owes a shared server.
                client.url = f"{self.transport}://replay"
        self.clients.append(client)
        return client

    @property
    def timeouts(self) -> Timeouts:
        return Timeouts(handler=self.scenario.handler_timeout)

    async def drop(self, client: AppServerClient) -> None:
        """End ``client``'s conversation as a crash would: no answer, no close
        handshake (a connection dropped, a replayed child killed)."""
        client._transport.signal(signal.SIGKILL)
        await client.wait_closed()

    def later(self, coro: Awaitable[Any]) -> None:
        """Run ``coro`` beside the scenario (from a sync event hook)."""
        self.tasks.append(asyncio.ensure_future(coro))


@dataclass
class ScenarioResult:
    scenario: Scenario
    mode: str
    paths: Paths
    frames: List[Tuple[str, Dict[str, Any]]]
    events: List[Event]
    session: List[Dict[str, Any]]
    approvals: List[ApprovalRequest]
    argv: List[str]
    model_requests: List[Dict[str, Any]] = field(default_factory=list)
    report: Optional[Dict[str, Any]] = None
    #: The codex version whose behaviour this run is held to.
    version: str = CODEX_VERSION
    #: For each frame, the number of the codex process (client) it belongs to.
    conns: List[int] = field(default_factory=list)
    #: What the driver noted (:attr:`Run.notes`).
    notes: Dict[str, Any] = field(default_factory=dict)

    def at(self, value: "ByVersion[Any]") -> Any:
        """A check's per-version expectation for :attr:`version`."""
        return value.at(self.version)

    @property
    def normaliser(self) -> Normaliser:
        return Normaliser(self.paths.placeholders(), version=__version__)

    def normalised_frames(self) -> List[Dict[str, Any]]:
        norm = self.normaliser
        conns = self.conns or [0] * len(self.frames)
        return [
            {"dir": d, "frame": norm.normalise(f), **({"conn": c} if c else {})}
            for (d, f), c in zip(self.frames, conns)
        ]

    def frames_of(self, conn: int) -> List[Tuple[str, Dict[str, Any]]]:
        """The frames of one codex process (client) of the run."""
        conns = self.conns or [0] * len(self.frames)
        return [f for f, c in zip(self.frames, conns) if c == conn]

    def normalised_session(self) -> List[Dict[str, Any]]:
        norm = self.normaliser
        return [norm.normalise(e) for e in self.session]

    def of_type(self, type_: str) -> List[Dict[str, Any]]:
        return [e for e in self.session if e["type"] == type_]

    def events_of(self, cls: type) -> List[Any]:
        return [e for e in self.events if isinstance(e, cls)]


#: How a run reaches codex: its own child per client, or one server and a connection per client.
TRANSPORTS = ("stdio", "ws", "unix")


def listen_args(transport: str, paths: Paths) -> Tuple[str, ...]:
    """The ``app-server`` arguments of a server run: where it listens."""
    if transport == "stdio":
        return ()
    where = "ws://127.0.0.1:0" if transport == "ws" else f"unix://{os.path.join(paths.root, 'codex.sock')}"
    return ("--listen", where)


def fixture_path(name: str, suffix: str, root: str = FIXTURES) -> str:
    return os.path.join(root, f"{name}.{suffix}")


class ScriptFailed(AssertionError):
    """The scripted model refused a request of a live run: the script called a
    tool the request did not offer (the reasons are in the message)."""


def _write_files(paths: Paths, files: Mapping[str, Union[str, bytes]]) -> None:
    for rel, content in files.items():
        target = os.path.join(paths.ws, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as fh:
            fh.write(content if isinstance(content, bytes) else content.encode("utf-8"))


class Replays:
    """The server side of a recording, one :class:`Replay` per codex process:
    the n-th client a run starts plays the frames tagged ``"conn": n``."""

    def __init__(self, transcript: List[Dict[str, Any]], normaliser: Normaliser) -> None:
        self.by_conn: Dict[int, List[Dict[str, Any]]] = {}
        for entry in transcript:
            self.by_conn.setdefault(int(entry.get("conn", 0)), []).append(entry)
        self.normaliser = normaliser
        self.replays: List[Replay] = []

    async def launch(self, argv: Sequence[str], env: Mapping[str, str], cwd: Optional[str]) -> Any:
        replay = Replay(self.by_conn.get(len(self.replays), []), self.normaliser)
        self.replays.append(replay)
        return await FakeAppServer(replay).launch(argv, env, cwd)

    @property
    def report(self) -> Dict[str, Any]:
        mismatches = [m for replay in self.replays for m in replay.mismatches]
        if len(self.replays) < len(self.by_conn):
            mismatches.append(
                f"the recording has {len(self.by_conn)} codex process(es); the run started {len(self.replays)}"
            )
        return {
            "ok": not mismatches,
            "mismatches": mismatches,
            "matched": sum(replay.matched for replay in self.replays),
            "argv": self.replays[0].argv if self.replays else [],
        }


async def _answer(run: Run, request: ApprovalRequest) -> Reply:
    run.approvals.append(request)
    how = run.scenario.approvals.get(request.kind, Reply("decline"))
    if how == DEADLINE:
        await asyncio.sleep(3600)
    if callable(how):
        return await how(request)
    assert isinstance(how, Reply)
    return how


async def execute(
    scenario: Scenario,
    mode: str,
    *,
    version: str = CODEX_VERSION,
    codex_bin: Optional[str] = None,
    fixtures: Optional[str] = None,
    keep: bool = False,
    transcript: Optional[str] = None,
    transport: Optional[str] = None,
) -> ScenarioResult:
    """Run ``scenario`` in ``mode`` ("live" or "replay"), held to codex
    ``version`` (the pin by default; a replay plays ``fixtures/<version>/``
    unless ``fixtures`` says otherwise), and collect everything.  A live run
    whose scripted model refused a request raises :class:`ScriptFailed`."""
    if mode not in ("live", "replay"):
        raise ValueError(f"mode must be live or replay, not {mode!r}")
    transport = transport or scenario.transport
    if transport not in TRANSPORTS:
        raise ValueError(f"transport must be one of {', '.join(TRANSPORTS)}, not {transport!r}")
    scenario = scenario.at(version)
    fixtures = fixtures if fixtures is not None else fixtures_dir(version)
    paths = Paths.create(scenario.name)
    model: Optional[ScriptedModel] = None
    replay: Optional[Replays] = None
    server: Optional[CodexServer] = None
    try:
        _write_files(paths, scenario.files)
        env = {"HOME": paths.root}
        launcher = None
        if mode == "live":
            model = ScriptedModel(paths.substitute(dict(scenario.script))).start()
            endpoint = ModelEndpoint(model.url, "sk-fake")
        else:
            # The server side of the recording, played in memory by the one
            # fake app-server (codexmini.testing): no process, same bytes.
            endpoint = ModelEndpoint("http://127.0.0.1:9/v1", "sk-fake")  # never called
            replay = Replays(
                load_transcript(transcript or fixture_path(scenario.name, "frames.jsonl", fixtures)),
                Normaliser(paths.placeholders(), version=__version__),
            )
            launcher = replay.launch
            codex_bin = "codex"
        run = Run(
            scenario,
            mode,
            paths,
            AgentConfig(
                launch=Launch(
                    codex_bin=codex_bin,
                    config=paths.substitute(list(scenario.config)),
                    env=env,
                    endpoint=endpoint,
                    codex_home=paths.home,
                    launcher=launcher,
                    timeouts=Timeouts(handler=scenario.handler_timeout),
                    args=listen_args(transport, paths),
                ),
                cwd=paths.ws,
                model=scenario.model,
                sandbox=scenario.sandbox,
                approval_policy=scenario.approval_policy,
            ),
        )
        run.config = dataclasses.replace(run.config, tap=run.tap)
        run.transport = transport
        if mode == "live" and transport != "stdio":
            # One codex server; the agent and every client connect to it.
            server = CodexServer.start(
                run.config.launch.for_workspace(paths.ws), os.path.join(paths.root, "server.stderr")
            )
            run.url = server.url
            run.config = dataclasses.replace(
                run.config, launch=Launch(), connect=Connect(server.url, timeouts=run.timeouts)
            )
        try:
            argv = await _drive(run)
            if server is not None:
                argv = normalise_argv(
                    server.argv, Normaliser(paths.placeholders(), version=__version__), sys.executable
                )
        finally:
            # The scripted model's reason beats whatever the refusal led to.
            if model is not None and model.errors:
                raise ScriptFailed(
                    f"{scenario.name}: the scripted model refused {len(model.errors)} request(s): "
                    + "; ".join(model.errors)
                )
        session = list(run.log.events) if run.log is not None else []
        report = replay.report if replay is not None else None
        return ScenarioResult(
            scenario,
            mode,
            paths,
            run.frames,
            run.events,
            session,
            run.approvals,
            argv,
            model_requests=list(model.requests) if model else [],
            report=report,
            version=version,
            conns=run.conns,
            notes=run.notes,
        )
    finally:
        if server is not None:
            server.stop()
        if model is not None:
            model.stop()
        if not keep:
            shutil.rmtree(paths.root, ignore_errors=True)


async def _drive(run: Run) -> List[str]:
    scenario = run.scenario
    argv: List[str] = []
    ids = itertools.count(1)

    def on_event(event: Event) -> None:
        run.events.append(event)
        if scenario.on_event is not None:
            scenario.on_event(run, event)

    try:
        if scenario.driver is not None:
            await scenario.driver(run)
        else:
            run.log = SessionLog.open(os.path.join(run.paths.root, "session.jsonl"), clock=lambda: 0.0)
            run.agent = Agent(
                run.log,
                run.config,
                approvals=lambda request: _answer(run, request),
                on_event=on_event,
                new_id=lambda: f"id-{next(ids)}",
            )
            await run.agent.start()
            for kind, value in scenario.knobs:
                run.agent.set_knob(kind, value)
            for prompt in scenario.prompts:
                if callable(prompt):
                    await prompt(run)
                else:
                    await run.agent.run(run.paths.substitute(prompt))
        for task in run.tasks:
            await task
    finally:
        if run.agent is not None:
            client = run.agent._client
            if client is not None:
                argv = list(client.argv)
            await run.agent.close()
            assert run.log is not None
            run.log.close()
        for client in run.clients:
            argv = argv or list(client.argv)
            await client.close()
    norm = Normaliser(run.paths.placeholders(), version=__version__)
    return normalise_argv(argv, norm, sys.executable)


def run_sync(coro: Awaitable[Any], timeout: float = 120.0) -> Any:
    """Run a harness coroutine with an overall deadline (nothing may hang)."""
    return asyncio.run(asyncio.wait_for(coro, timeout))


__all__ = [
    "DEADLINE",
    "FIXTURES",
    "TRANSPORTS",
    "Paths",
    "Replays",
    "Run",
    "ScenarioResult",
    "Scenario",
    "ScriptFailed",
    "execute",
    "fixture_path",
    "run_sync",
]
