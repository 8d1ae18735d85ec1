"""The agent: its state machine offline against the in-memory fake
app-server, and against the real binary and the scripted model (``live``).

Offline, ``tests/support/thread_behaviours.py`` plays codex: :class:`AgentTurns`
answers each step by its newest user message, and a test that needs a turn to
*stay* running holds it (``slow …``) until it says so (``release()``) or
cancels it -- no sleeps, no timing.  The inbox, cancel, steer, idle shutdown
and restart logic all run here, so ``make test-offline`` exercises them; one
test kills a real fake child over real pipes (SIGKILL mid-step).

Live, the same behaviours a recorded transcript cannot show (a killed codex,
restarts, idle shutdown, the inbox) run against the pinned binary.  A test
that holds on both is written once and runs twice (:data:`BOTH`: ids
``memory`` and ``live``), with what differs between the fake and codex keyed
on ``kind`` inside it.  Frames of both are validated by the conformance
plugin like everywhere else.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
import shutil
import signal
import tracemalloc
from typing import Any, Callable, Dict, List, Optional, cast

import pytest
from support import thread_behaviours as tb
from support.fake_client import agent_config, reconfigured
from support.run_support import HAVE_CODEX

from codexmini import Agent, AgentConfig, Blocked, Launch, ModelEndpoint
from codexmini import _agent as agent_mod
from codexmini import _client as client_mod
from codexmini import _session as session_mod
from codexmini._errors import BinaryNotFound, ConfigError, EndpointKeyMissing, RpcError
from codexmini._events import (
    AgentMessageDelta,
    Event,
    ItemStarted,
    MessageDelta,
    MessageStreamEnd,
    MessageSummaryDelta,
    PhaseChanged,
    ReasoningSummaryDelta,
    SessionStarted,
    Usage,
)
from codexmini._permission import Reply
from codexmini._prompt import derive_messages, serialize
from codexmini._session import SessionLog, read_log
from codexmini._stepfold import StepFold
from codexmini._threads import Turn
from codexmini.testing import CodexLike, FakeAppServer
from codexmini.testing.codex_like import TURN, TURN_ERROR, USAGE_1
from codexmini.testing.live import LiveCodex, scratch_dir
from codexmini.testing.scripted_model import ScriptedModel

USAGE = {"input_tokens": 10, "cached_tokens": 2, "output_tokens": 5, "reasoning_tokens": 1}


def reply(*deltas: str, id_: str = "msg_1") -> Dict[str, Any]:
    return {"output": [{"type": "message", "id": id_, "deltas": list(deltas)}], "usage": USAGE}


def command(cmd: str, call_id: str = "call_1", **extra: Any) -> Dict[str, Any]:
    args = {"cmd": cmd, "yield_time_ms": 30000, **extra}
    return {
        "output": [{"type": "function_call", "call_id": call_id, "name": "exec_command", "arguments": args}],
        "usage": USAGE,
    }


class Watch:
    """An ``on_event`` listener a test can wait on."""

    def __init__(self) -> None:
        self.events: List[Event] = []
        self._changed: Optional["asyncio.Future[None]"] = None

    def __call__(self, event: Event) -> None:
        self.events.append(event)
        if self._changed is not None and not self._changed.done():
            self._changed.set_result(None)

    async def until(self, predicate: Callable[[Event], bool], timeout: float = 30) -> None:
        async def scan() -> None:
            while not any(predicate(e) for e in self.events):
                self._changed = asyncio.get_running_loop().create_future()
                await self._changed

        await asyncio.wait_for(scan(), timeout)

    async def held(self, said: str) -> None:
        """Until the codex turn for ``said`` streams (``AgentTurns`` holds it):
        the agent is inside a running codex turn whose id it knows."""
        await self.until(lambda e: isinstance(e, AgentMessageDelta) and e.delta == f"working on: {said}")


class Setup:
    """A scratch root (``root``, with ``ws`` and ``home`` in it), a session log, the frames."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.ws = os.path.join(self.root, "ws")
        self.home = os.path.join(self.root, "home")
        os.makedirs(self.ws, exist_ok=True)
        os.makedirs(self.home, exist_ok=True)
        self.log = SessionLog.open(os.path.join(self.root, "session.jsonl"))
        self.frames: List[Any] = []
        self.ids = iter(range(1, 10**6))
        self.watch = Watch()

    def options(self) -> Dict[str, Any]:
        return dict(
            cwd=self.ws,
            model="gpt-fake",
            codex_home=self.home,
            tap=lambda d, f: self.frames.append((d, json.loads(json.dumps(f)))),
        )

    def config(self, **overrides: Any) -> AgentConfig:
        options = self.options()
        options.update(overrides)
        return agent_config(**options)

    def agent(self, **kwargs: Any) -> Agent:
        config = kwargs.pop("config", None) or self.config()
        return Agent(self.log, config, new_id=lambda: f"id-{next(self.ids)}", **kwargs)

    def sent(self, method: str) -> List[Dict[str, Any]]:
        return [f for d, f in self.frames if d == "out" and f.get("method") == method]

    def of_type(self, type_: str) -> List[Dict[str, Any]]:
        return [e for e in self.log.events if e["type"] == type_]

    def ends(self) -> List[str]:
        return [e["data"]["reason"] for e in self.of_type("turn/end")]

    def users(self) -> List[Any]:
        """(turn, step, first text) of every user message logged."""
        return [(e["turn"], e["step"], e["data"]["content"][0]["text"]) for e in self.of_type("user/message")]

    def close(self) -> None:
        self.log.close()
        shutil.rmtree(self.root, ignore_errors=True)


class Offline(Setup):
    """The agent on the in-memory fake app-server playing ``behaviour``."""

    def __init__(self, behaviour: Any = None, *args: str) -> None:
        super().__init__(scratch_dir("codexmini-agent-"))
        self.fake = FakeAppServer(behaviour, *args)

    def options(self) -> Dict[str, Any]:
        return dict(super().options(), launcher=self.fake.launch)

    async def held(self, agent: Agent, said: str) -> None:
        """Until the codex turn for ``said`` streams and holds (:class:`AgentTurns`;
        the agent's listener is :attr:`watch`)."""
        await self.watch.held(said)


class Live(Setup):
    """The agent on the pinned codex and a scripted model (:class:`LiveCodex`)."""

    def __init__(self, script: Dict[str, Any]) -> None:
        self.live = LiveCodex(script, prefix="codexmini-agent-")
        self.model = self.live.model
        super().__init__(self.live.root)

    def options(self) -> Dict[str, Any]:
        return dict(super().options(), launch=self.live.launch)

    async def held(self, agent: Agent, said: str) -> None:
        """Until a codex turn runs (the script's ``delay_ms`` keeps it running)."""
        await codex_turn_running(agent)

    def close(self) -> None:
        super().close()
        self.live.close()


@pytest.fixture
def offline():
    made: List[Offline] = []

    def make(behaviour: Any = None, *args: str) -> Offline:
        s = Offline(behaviour, *args)
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()


@pytest.fixture
def live_setup():
    made: List[Live] = []

    def make(script: Dict[str, Any]) -> Live:
        s = Live(script)
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()


#: A twin test runs on both setups: ``memory`` (the in-memory fake playing a
#: behaviour of tests/support/thread_behaviours.py) and ``live`` (the pinned codex and
#: the scripted model).  Its ``twin`` fixture makes the setup of its kind; what
#: differs between the two is spelled out in the test, keyed on ``kind``.
BOTH = pytest.mark.parametrize(
    "kind",
    [
        pytest.param("memory", id="memory"),
        pytest.param(
            "live",
            id="live",
            marks=[
                pytest.mark.live,
                pytest.mark.skipif(not HAVE_CODEX, reason="the pinned codex is not installed (make setup)"),
            ],
        ),
    ],
)


@pytest.fixture
def twin(kind: str, offline: Any, live_setup: Any) -> Callable[[Any, Dict[str, Any]], Setup]:
    """``twin(behaviour, script)``: the setup of this test's ``kind``, the
    fake playing ``behaviour`` or codex on a model playing ``script``."""

    def make(behaviour: Any, script: Dict[str, Any]) -> Setup:
        return offline(behaviour) if kind == "memory" else live_setup(script)

    return make


async def one_turn(s: Setup, said: str, **kwargs: Any) -> Dict[str, Any]:
    """One ``agent.run(said)`` on a fresh agent of ``s`` (``kwargs`` for it)."""
    async with s.agent(**kwargs) as agent:
        return await agent.run(said)


async def codex_turn_running(agent: Agent) -> None:
    """Wait (bounded by the test's deadline) until a codex turn has started."""
    while agent._turn is None or agent._turn.id is None:
        await asyncio.sleep(0.01)


# -- pure bits -------------------------------------------------------------------


def test_agent_model_endpoint_refuses_the_chat_wire_up_front():
    with pytest.raises(ConfigError, match="wire_api 'chat' is not supported by codex 0.149.1"):
        ModelEndpoint("http://127.0.0.1:1/v1", "k", wire_api="chat")
    with pytest.raises(ConfigError, match="http"):
        ModelEndpoint("127.0.0.1:1/v1")


def test_agent_model_endpoint_flags_and_env():
    with_key = ModelEndpoint("http://127.0.0.1:5/v1", "sk-x")
    assert with_key.config() == [
        'model_provider="codexmini"',
        'model_providers.codexmini={name="codexmini",base_url="http://127.0.0.1:5/v1",wire_api="responses",env_key="CODEXMINI_API_KEY"}',
    ]
    assert with_key.env() == {"CODEXMINI_API_KEY": "sk-x"}
    assert "sk-x" not in repr(with_key)
    keyless = ModelEndpoint("http://127.0.0.1:5/v1")
    assert "env_key" not in keyless.config()[1] and keyless.env() == {}


@pytest.mark.parametrize(
    "options, message",
    [
        ({"sandbox": "sometimes"}, "sandbox must be one of"),
        ({"approval_policy": "bogus"}, "approval_policy must be one of"),
        ({"config": ["model=gpt", "no-equals-sign"]}, "config items must be KEY=VALUE, not 'no-equals-sign'"),
    ],
    ids=["sandbox", "approval_policy", "config"],
)
def test_agent_config_refuses_invalid_pins_when_built(options, message):
    # A ConfigError up front, not an agent/error mid-turn (issue 9 item 5).
    with pytest.raises(ConfigError, match=message):
        agent_config(cwd="/var/tmp", **options)


def test_agent_config_accepts_valid_pins():
    config = AgentConfig(launch=Launch(config=["a=1"]), cwd="/var/tmp", sandbox="read-only", approval_policy="never")
    assert (config.sandbox, config.approval_policy) == ("read-only", "never")


def test_agent_config_refuses_a_launch_that_is_not_a_launch():
    with pytest.raises(ConfigError, match="AgentConfig.launch must be a Launch, not dict"):
        AgentConfig(cwd="/var/tmp", launch=cast(Any, {"config": ["a=1"]}))


def test_agent_set_knob_refuses_an_unknown_knob(offline):
    s = offline(CodexLike)
    agent = s.agent()
    with pytest.raises(ConfigError, match="unknown knob 'model'"):
        agent.set_knob("model", "gpt-5")
    agent.set_knob("sandbox/mode", "read-only")
    assert [(e["type"], e["data"], e["turn"]) for e in s.log.events] == [("sandbox/mode", {"mode": "read-only"}, None)]


# -- offline: turns and steps ---------------------------------------------------------


@BOTH
async def test_agent_second_prompt_is_the_serialized_log(twin, kind):
    s = twin(
        tb.AgentTurns,
        {"rules": [{"when": {"user_contains": "second"}, "respond": reply("two")}], "default": reply("one")},
    )

    async with s.agent() as agent:
        assert agent.phase == agent_mod.IDLE
        first = await agent.run("first")
        await agent.run("second")
    if kind == "memory":
        assert first == {"reason": "completed", "usage": Usage.from_wire(USAGE_1).to_log()}
    starts = s.sent("turn/start")
    assert len(starts) == 2
    events = s.log.events
    for frame in starts:
        text = frame["params"]["input"][0]["text"]
        # The prompt is exactly the serialization of some prefix of the log.
        assert text in [serialize(derive_messages(events[:n])) for n in range(len(events) + 1)]
    answer = "re: first" if kind == "memory" else "one"  # AgentTurns answers "re: …"; the script "one"
    assert (
        starts[1]["params"]["input"][0]["text"]
        == f"<user>\nfirst\n</user>\n\n<assistant>\n{answer}\n</assistant>\n\n<user>\nsecond\n</user>"
    )
    # Each step is a fresh thread on the one child.
    assert len(s.sent("thread/start")) == 2 and len(s.sent("initialize")) == 1
    if kind == "memory":
        assert len(s.fake.launches) == 1
    # The header was written once per agent instance, then turns 1 and 2.
    (header,) = s.of_type("session/header")
    assert header["data"]["reason"] == "initial"
    if kind == "memory":  # the version the fake reports
        assert header["data"]["codexVersion"] == "0.149.1"
    assert [e["turn"] for e in s.of_type("turn/start")] == [1, 2]
    if kind == "memory":
        # The usage of the codex turn is on the step's last message and on turn/end.
        assert s.of_type("assistant/message")[-1]["data"]["usage"] == Usage.from_wire(USAGE_1).to_log()


@BOTH
async def test_agent_resume_writes_a_resume_header_and_continues_turn_numbers(twin):
    s = twin(tb.AgentTurns, {"rules": [], "default": reply("ok")})

    async with s.agent() as agent:
        await agent.run("one")
        await agent.start()  # started already: no second header
    async with s.agent() as agent:
        await agent.run("two")
    assert [e["data"]["reason"] for e in s.of_type("session/header")] == ["initial", "resume"]
    assert [e["turn"] for e in s.of_type("turn/end")] == [1, 2]


async def test_agent_resumed_from_a_reopened_log_streams_its_prompt_from_the_file(offline, monkeypatch):
    # A log of a few MB, closed and opened again: the agent is built without
    # reading it (what resuming needs was folded by SessionLog.open), its
    # first step streams the whole log into the prompt, a later step reads
    # only the events logged since.
    s = offline(tb.AgentTurns)
    async with s.agent(config=s.config(model=None)) as agent:
        await agent.run("one")
        agent.set_model("chosen")
    result = {"callId": "c", "content": [{"type": "text", "text": "r" * 2_000}], "isError": False, "status": "done"}
    s.log.append_many([("tool/result", result, 1, 1)] * 1_500)
    s.log.close()
    before = list(read_log(s.log.path).events)
    s.log = SessionLog.open(s.log.path)
    assert os.path.getsize(s.log.path) > 3_000_000

    tracemalloc.start()
    try:
        agent = s.agent(config=s.config(model=None, prompt_budget=None))  # the whole log, never compacted
        built, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert built < 64_000  # no event, and not the log
    read: List[int] = []
    real = session_mod._read_at

    def counted(file: Any, path: str, what: str = "") -> Callable[[int, int], bytes]:
        def read_counted(offset: int, size: int) -> bytes:
            data = real(file, path, what)(offset, size)
            read.append(len(data))
            return data

        return read_counted

    monkeypatch.setattr(session_mod, "_read_at", counted)
    async with agent:
        await agent.run("two")
        first = sum(read)
        read.clear()
        await agent.run("three")
        third = sum(read)
    prompts = [f["params"]["input"][0]["text"] for f in s.sent("turn/start")]
    assert prompts[1].startswith(serialize(derive_messages(before)))
    events = list(s.log.events)
    (three,) = [i for i, e in enumerate(events) if e["type"] == "user/message" and e["turn"] == 3]
    assert prompts[2] == serialize(derive_messages(events[: three + 1]))  # what the model sees is what is logged
    assert first >= os.path.getsize(s.log.path) - 10_000 and third < 2 * session_mod.READ_FIRST
    assert [h["data"] for h in s.of_type("session/header")][1]["reason"] == "resume"
    assert [e["turn"] for e in s.of_type("turn/start")] == [1, 2, 3]
    assert [f["params"].get("model") for f in s.sent("thread/start")] == [None, "chosen", "chosen"]


@BOTH
async def test_agent_pins_override_only_their_own_field(twin):
    s = twin(CodexLike, {"rules": [], "default": reply("ok")})

    async with s.agent(config=s.config(sandbox="workspace-write")) as agent:
        await agent.run("one")  # knobs: none → (read-only, never); the sandbox pin wins its field
        agent.set_knob("approval/policy", "ask")
        await agent.run("two")  # ask → (workspace-write, on-request)
        agent.set_knob("sandbox/mode", "danger-full-access")
        agent.set_knob("approval/policy", "bogus")  # invalid: counts as absent
        await agent.run("three")  # full access → (danger-full-access, never), but the pin keeps workspace-write
    async with s.agent(config=s.config(approval_policy="untrusted")) as agent:
        await agent.run("four")
    pairs = [(f["params"]["sandbox"], f["params"]["approvalPolicy"]) for f in s.sent("thread/start")]
    assert pairs == [
        ("workspace-write", "never"),
        ("workspace-write", "on-request"),
        ("workspace-write", "never"),
        ("danger-full-access", "untrusted"),
    ]
    assert {f["params"]["model"] for f in s.sent("thread/start")} == {"gpt-fake"}
    assert {f["params"]["cwd"] for f in s.sent("thread/start")} == {s.ws}


@BOTH
async def test_agent_skills_and_images_reach_codex(twin):
    s = twin(CodexLike, {"rules": [], "default": reply("ok")})
    with open(os.path.join(s.ws, "AGENTS.md"), "w") as fh:
        fh.write("Always answer <briefly>.\n")
    os.makedirs(os.path.join(s.ws, ".git"))

    async with s.agent() as agent:
        await agent.run(
            [
                {"type": "text", "text": "use /agents-md and /unknown"},
                {"type": "image", "path": "/nonexistent/pic.png"},
            ]
        )
    users = s.of_type("user/message")
    assert [u["data"]["source"] for u in users] == [{"kind": "user"}, {"kind": "skill-invocation", "name": "agents-md"}]
    assert "Always answer &lt;briefly&gt;." in users[1]["data"]["content"][0]["text"]
    (start,) = s.sent("turn/start")
    assert start["params"]["input"][1:] == [{"type": "localImage", "path": "/nonexistent/pic.png"}]
    assert "[image: /nonexistent/pic.png]" in start["params"]["input"][0]["text"]


@BOTH
async def test_agent_codex_refusing_turn_start_is_a_codex_error(twin, kind):
    # In memory the fake refuses every turn/start (a missing field); codex
    # refuses a remote image URL at turn/start.
    s = twin(tb.RejectTurn, {"rules": [], "default": reply("ok")})

    async with s.agent(on_event=None) as agent:
        await agent.start()
        if kind == "live":
            agent._step_input = lambda messages: [{"type": "image", "url": "https://example.com/x.png"}]
        end = await agent.run("look")
    assert end["reason"] == "error" and end["error"]["code"] == "CODEX_ERROR"
    if kind == "memory":
        assert end == {
            "reason": "error",
            "error": {"message": "Invalid request: missing field `input`", "code": "CODEX_ERROR"},
        }
    else:
        assert "remote image URLs are not supported" in end["error"]["message"]
    assert [e["data"]["reason"] for e in s.of_type("step/end")] == ["error"]


async def test_agent_codex_refusing_thread_start_is_a_codex_error_in_memory(offline):
    s = offline(tb.RejectThread)

    async with s.agent() as agent:
        end = await agent.run("hi")
    assert end["reason"] == "error" and end["error"]["code"] == "CODEX_ERROR"
    assert end["error"]["message"].startswith("Invalid request: invalid type: integer `123`")
    assert s.sent("turn/start") == []
    # Every turn-ending error is logged as agent/error too, with its cause chain.
    assert [e["type"] for e in s.log.events][-4:] == ["user/message", "step/end", "agent/error", "turn/end"]
    (error,) = s.of_type("agent/error")
    assert error["data"]["code"] == "CODEX_ERROR" and error["data"]["cause"][0].startswith(
        "RpcError: thread/start: Invalid"
    )


@pytest.mark.parametrize(
    "variant, end",
    [
        ("with-error", {"reason": "error", "error": {"message": TURN_ERROR["message"], "code": "CODEX_ERROR"}}),
        ("no-error", {"reason": "error", "error": {"message": TURN_ERROR["message"], "code": "CODEX_ERROR"}}),
        ("bare", {"reason": "error", "error": {"message": "boom", "code": "CODEX_ERROR"}}),
        # Interrupted, and not by us: an approval answered `cancel` stopped codex.
        (
            "interrupted",
            {"reason": "blocked", "blocked": {"by": "approval", "reason": "an approval was answered cancel"}},
        ),
    ],
)
async def test_agent_codex_turn_that_did_not_complete_ends_the_agent_turn(offline, variant, end):
    s = offline(tb.Failed, variant)

    async with s.agent() as agent:
        result = await agent.run("hi")
    assert result == end
    tail = ["step/end", "agent/error", "turn/end"] if end["reason"] == "error" else ["step/end", "turn/end"]
    assert [e["type"] for e in s.log.events][-len(tail) :] == tail
    if end["reason"] == "error":  # the cause chain is codex's details, and absent without any
        (logged,) = [e["data"] for e in s.log.events if e["type"] == "agent/error"]
        assert logged.get("cause") == (None if variant == "bare" else ["other"])


async def test_agent_cancel_while_an_interrupted_completion_is_already_queued_aborts_the_step(offline):
    # cancel() from the listener, with turn/completed (interrupted) queued behind
    # the delta: the step folds it before the cancel lands, and it is the
    # agent's abort -- not an approval answered cancel.
    s = offline(tb.CompletedRightAfterADelta)

    running: List[Agent] = []

    def listener(event: Any) -> None:
        if isinstance(event, AgentMessageDelta):
            running[0].cancel()

    async with s.agent(on_event=listener) as agent:
        running.append(agent)
        result = await agent.run("hi")
    assert result["reason"] == "aborted"
    ends = [e["data"] for e in s.log.events if e["type"] in ("step/end", "turn/end")]
    assert ends[0] == {"reason": "aborted"} and ends[-1]["reason"] == "aborted"
    assert "blocked" not in ends[-1]


def test_agent_blocked_repr_names_its_reason():
    assert repr(Blocked("no tools today")) == "Blocked('no tools today')"


@BOTH
async def test_agent_listener_error_ends_the_turn_with_unknown_and_keeps_the_log(twin, kind):
    s = twin(tb.AgentTurns, {"rules": [], "default": reply("ok")})

    def boom(event: Any) -> None:
        raise RuntimeError("listener broke")

    async with s.agent(on_event=boom) as agent:
        end = await agent.run("hello")
    expected: Dict[str, Any] = {
        "reason": "error",
        "error": {"message": "RuntimeError: listener broke", "code": "UNKNOWN"},
    }
    tail = ["agent/error", "turn/end"]
    if kind == "memory":
        # The usage counts too: leaving the turn drained it to its turn/completed.
        expected["usage"] = Usage.from_wire(USAGE_1).to_log()
        tail = ["step/end", *tail]
    elif "usage" in end:
        # Live, codex may have counted the model's tokens before the turn was
        # left (the scripted answer is instant): then they are reported too.
        assert end.pop("usage")["totalTokens"] > 0
    assert end == expected
    assert [e["type"] for e in s.log.events][-len(tail) :] == tail
    assert read_log(s.log.path).events == s.log.events


async def test_agent_listener_error_mid_turn_is_not_shown_again_and_the_step_still_ends(offline):
    # A listener that breaks on the answer's first stream event, with its stream
    # open, and raises on anything after: the step's end (its usage too) is
    # written all the same, and it is not called again (not for the stream's end).
    s = offline(tb.AgentTurns)
    shown: List[Event] = []

    def boom(event: Any) -> None:
        if isinstance(event, (PhaseChanged, SessionStarted)):
            return  # the lifecycle events (their own listener errors: test_agent_lifecycle_…)
        shown.append(event)
        if any(isinstance(e, MessageDelta) for e in shown):
            raise RuntimeError("listener broke")

    end = await one_turn(s, "tool please", on_event=boom)
    # The one MessageDelta it was shown is the last thing it was shown.
    assert [i for i, e in enumerate(shown) if isinstance(e, MessageDelta)] == [len(shown) - 1]
    assert end["reason"] == "error" and end["error"]["message"] == "RuntimeError: listener broke"
    assert end["usage"] == Usage.from_wire(USAGE_1).to_log()
    types = [e["type"] for e in s.log.events]
    assert types[-3:] == ["step/end", "agent/error", "turn/end"]
    assert "tool/result" in types  # what the step folded before the delta is written
    assert read_log(s.log.path).events == s.log.events


async def test_agent_stream_events_come_after_the_writes_they_speak_of(offline):
    # A committed stream end is shown once its assistant/message is in the log
    # file, and every event reaches the listener in the order codex sent it.
    s = offline(tb.AgentTurns)
    seen: List[Any] = []

    def listener(event: Any) -> None:
        seen.append(event)
        if isinstance(event, MessageStreamEnd) and event.committed:
            on_disk = [e["data"]["id"] for e in read_log(s.log.path).events if e["type"] == "assistant/message"]
            assert event.message_id in on_disk

    assert (await one_turn(s, "tool please", on_event=listener))["reason"] == "completed"
    kinds = [type(e).__name__ for e in seen]
    # Each delta shown once, as the MessageDelta it is (an AgentMessageDelta with its message id).
    assert "AgentMessageDelta" not in kinds
    deltas = [e for e in seen if isinstance(e, AgentMessageDelta)]
    assert deltas and all(type(e) is MessageDelta and e.message_id for e in deltas)
    assert kinds.index("MessageDelta") < kinds.index("MessageStreamEnd")
    # The answer is written when the step settles, after turn/completed; the
    # lifecycle events open and close the turn (running, the header; idle).
    assert kinds[-3:] == ["TurnCompleted", "MessageStreamEnd", "PhaseChanged"] and kinds.count("MessageStreamEnd") == 1
    assert kinds[:2] == ["PhaseChanged", "SessionStarted"]


# -- lifecycle events (issue 30.6) -------------------------------------------------------------


async def test_agent_lifecycle_events_session_started_and_every_phase_change(offline, caplog):
    s = offline(tb.AgentTurns)
    seen: List[Any] = []

    def lifecycle(event: Any) -> None:
        if isinstance(event, (PhaseChanged, SessionStarted)):
            seen.append(event)

    async with s.agent(on_event=lifecycle) as agent:
        await agent.run("one")
        await agent.run("two")
        agent.child.idle_s = 0.01  # from now on the idle child is closed: after the next turn
        await agent.run("three")
        while agent.child.client is not None:
            await asyncio.sleep(0.01)  # the idle shutdown (no time asserted: the test's deadline bounds it)
        await agent.wait_idle()
    version = seen[1].codex_version
    running, idle = PhaseChanged("running", "idle"), PhaseChanged("idle", "running")
    assert seen == [
        running,
        SessionStarted("initial", "gpt-fake", version),
        idle,
        running,
        idle,
        running,
        idle,
        PhaseChanged("maintenance", "idle"),
        PhaseChanged("idle", "maintenance"),
    ]
    (header,) = s.of_type("session/header")
    assert seen[1].codex_version == header["data"]["codexVersion"]
    # Resumed: the header says so, and so does the event.
    seen.clear()
    async with s.agent(on_event=lifecycle) as agent:
        await agent.run("three")
    assert [e for e in seen if isinstance(e, SessionStarted)] == [
        SessionStarted("resume", "gpt-fake", seen[1].codex_version)
    ]


async def test_agent_lifecycle_listener_that_raises_is_logged_and_ends_nothing(offline, caplog):
    s = offline(tb.AgentTurns)

    def breaks_on_lifecycle(event: Any) -> None:
        if isinstance(event, (PhaseChanged, SessionStarted)):
            raise RuntimeError("lifecycle listener broke")

    with caplog.at_level(logging.ERROR, logger="codexmini.agent"):
        end = await one_turn(s, "hello", on_event=breaks_on_lifecycle)
    assert end["reason"] == "completed"
    assert caplog.text.count("the on_event listener raised on PhaseChanged") == 2
    assert caplog.text.count("the on_event listener raised on SessionStarted") == 1


def write_batches(s: Offline) -> List[List[str]]:
    """The event types of each write of ``s``'s log (``append_many``, and
    the agent's own ``_write_many``: one write each), as they come."""
    batches: List[List[str]] = []
    write_many = s.log._write_many

    def spy(entries: Any, keep: bool) -> Any:
        entries = list(entries)
        batches.append([e[0] for e in entries])
        return write_many(entries, keep)

    s.log._write_many = spy  # type: ignore[method-assign]
    return batches


async def test_agent_writes_what_codex_sent_at_once_with_one_write(offline):
    # The scripted turn arrives in one write (one read): the tool call
    # (item/started), its result (item/completed) and the next step's start
    # are folded without an await and written with one append_many.
    s = offline(tb.AgentTurns)
    batches = write_batches(s)
    assert (await one_turn(s, "burst please", on_event=s.watch))["reason"] == "completed"
    assert any({"tool/call", "tool/result", "step/start"} <= set(batch) for batch in batches), batches


async def test_agent_folds_one_read_at_a_time(offline, monkeypatch):
    # Frame by frame (the in-memory fake: one read a frame), each read is its
    # own burst when the reader lets the consumer run after each read: as it
    # does once a read brought FRAMES_PER_WAKE frames (a pipe's read brings a
    # hundred), here after every frame.
    monkeypatch.setattr(client_mod, "FRAMES_PER_WAKE", 1)
    s = offline(tb.AgentTurns)
    batches = write_batches(s)
    assert (await one_turn(s, "tool please", on_event=s.watch))["reason"] == "completed"
    # The tool's result (item/completed) and the next step's start (the answer's
    # item/started) came in two reads: two writes.
    results = [batch for batch in batches if "tool/result" in batch]
    assert len(results) == 1 and "step/start" not in results[0], batches
    assert any("step/start" in batch for batch in batches[batches.index(results[0]) + 1 :]), batches


async def test_agent_start_without_a_codex_binary_raises_before_anything_is_logged(offline):
    s = offline()

    async with s.agent(config=s.config(launcher=None, codex_bin=os.path.join(s.root, "no-codex"))) as agent:
        with pytest.raises(BinaryNotFound):
            await agent.start()
        assert agent.phase == agent_mod.IDLE
    assert s.log.events == []


async def test_agent_run_without_a_codex_binary_logs_the_turn_and_ends_it_in_error(offline):
    # The queued prompt is not dropped and nothing escapes run(): the turn is
    # logged with the user's message and ends CODEX_UNAVAILABLE.
    s = offline()

    async with s.agent(config=s.config(launcher=None, codex_bin=os.path.join(s.root, "no-codex"))) as agent:
        end = await agent.run("hello")
        assert agent.phase == agent_mod.IDLE
    assert end["reason"] == "error" and end["error"]["code"] == "CODEX_UNAVAILABLE"
    assert end["error"]["message"].startswith("BinaryNotFound: codex binary")
    types = [e["type"] for e in s.log.events]
    assert types == [
        "session/header",
        "turn/start",
        "step/start",
        "user/message",
        "step/end",
        "agent/error",
        "turn/end",
    ]
    assert s.log.events[0]["data"]["codexVersion"] == "unknown"
    assert s.log.events[3]["data"]["content"] == [{"type": "text", "text": "hello"}]
    error = s.log.events[5]["data"]
    assert {k: error[k] for k in ("message", "code")} == end["error"]
    assert error["cause"][0].startswith("BinaryNotFound: codex binary")


async def test_agent_tool_then_answer_is_two_steps_in_memory(offline):
    s = offline(tb.AgentTurns)

    async with s.agent() as agent:
        await agent.run("tool please")
    # One step per segment: the command, then the answer after its result.
    steps = [(e["type"], e["step"]) for e in s.log.events if e["turn"] == 1 and e["type"] != "user/message"]
    assert steps == [
        ("turn/start", None),
        ("step/start", 1),
        ("assistant/message", 1),
        ("tool/call", 1),
        ("tool/result", 1),
        ("step/end", 1),
        ("step/start", 2),
        ("assistant/message", 2),
        ("step/end", 2),
        ("turn/end", None),
    ]
    assert [e["data"]["reason"] for e in s.of_type("step/end")] == ["segment", "completed"]
    assert agent.stats == {"steps": 2, "tool_calls": 1, "approvals": 0, "ignored_items": 0}


@pytest.mark.parametrize(
    "handler, decision, by, status",
    [(True, "accept", "handler", "completed"), (False, "decline", "default", "declined")],
    ids=["handler", "no-handler"],
)
async def test_agent_approval_answers_are_logged_in_memory(offline, handler, decision, by, status):
    s = offline(tb.Approving)
    asked: List[Any] = []

    async def approve(request: Any) -> Reply:
        asked.append(request)
        return Reply("accept")

    async with s.agent(approvals=approve if handler else None) as agent:
        await agent.run("approve this")
    # Without a handler codex gets the fail-closed answer; either way it is logged.
    assert [r.kind for r in asked] == (["command"] if handler else [])
    (logged,) = s.of_type("approval/decision")
    method = "item/commandExecution/requestApproval"
    assert logged["data"] == {"method": method, "itemId": "call_cmd_1", "decision": decision, "by": by}
    assert (logged["turn"], logged["step"]) == (1, 1)
    assert s.of_type("tool/result")[0]["data"]["status"] == status
    assert agent.stats["approvals"] == 1


#: What the step after each kind of command end reads of it (issue 30): a
#: declined command, one that failed with an exit code and no output, one still
#: running when the turn ended, one that printed nothing.
REASON_SECTIONS = [
    """<assistant>
[tool call: bash({"command":"/bin/bash -lc 'touch ok.txt'"})]
</assistant>

<tool-result-error>
[declined by the user (approval: decline)]
</tool-result-error>""",
    """<assistant>
[tool call: bash({"command":"/bin/bash -lc 'exit 1'"})]
</assistant>

<tool-result-error>
[exit code 1]
(no output)
</tool-result-error>""",
    """<assistant>
ok
[tool call: bash({"command":"/bin/bash -lc 'sleep 3'"})]
</assistant>

<tool-result-error>
[timed out after 2.5 s: still running when the turn ended]
the tool call did not finish (the turn ended first)
</tool-result-error>""",
    """<assistant>
[tool call: bash({"command":"/bin/bash -lc true"})]
</assistant>

<tool-result>
(no output)
</tool-result>""",
]

REASONS_SCRIPT = {
    # One command a turn, in this order (the prompt holds every earlier
    # message, so the turns are told apart by count, not by text); the
    # command's output is always answered "ok".
    "rules": [
        {"when": {"last_item": "function_call_output"}, "respond": reply("ok")},
        {
            "times": 1,
            "respond": command(
                "touch ok.txt", "call_decline", sandbox_permissions="require_escalated", justification="test"
            ),
        },
        {"times": 1, "respond": command("exit 1", "call_fail")},
        {"times": 1, "respond": command("sleep 3", "call_timeout", yield_time_ms=500)},
        {"times": 1, "respond": command("true", "call_empty")},
    ],
    "default": reply("ok"),
}


@BOTH
async def test_agent_the_next_prompt_tells_each_end_of_a_command_apart(kind, twin, monkeypatch):
    # The same four turns on the fake and on codex itself: the log keeps what
    # codex reported (status, exit code, the approval that declined), the
    # next step's prompt says it in one line each.  The fold's clock moves
    # 2.5 s a reading: the command that outlived the turn ran one step of it.
    s = twin(tb.Reasons, REASONS_SCRIPT)
    monkeypatch.setattr(agent_mod, "_clock", itertools.count(0.0, 2.5).__next__)

    async def decline(request: Any) -> Reply:
        return Reply("decline")

    async with s.agent(approvals=decline) as agent:
        agent.set_knob("approval/policy", "ask")
        ends = [await agent.run(said) for said in ("decline it", "fail it", "timeout it", "empty it", "and now?")]
    assert [end["reason"] for end in ends] == ["completed"] * 5
    results = [e["data"] for e in s.of_type("tool/result")]
    assert [(r["callId"], r["status"], r.get("exitCode")) for r in results] == [
        ("call_decline", "declined", None),
        ("call_fail", "failed", 1),
        ("call_timeout", "abandoned", None),
        ("call_empty", "completed", 0),
    ]
    assert results[0]["approval"] == {"decision": "decline", "by": "handler"}
    assert (results[2]["stepEnd"], results[2]["elapsedMs"]) == ("completed", 2500)
    prompt = s.sent("turn/start")[-1]["params"]["input"][0]["text"]
    last_user = max(i for i, e in enumerate(s.log.events) if e["type"] == "user/message")
    assert prompt == serialize(derive_messages(s.log.events[: last_user + 1]))  # a pure function of the log
    for section in REASON_SECTIONS:
        assert section in prompt


def test_agent_an_answer_links_to_the_call_of_the_running_step_only(offline):
    # The client answers a request when no step runs (it closed with one
    # pending: `close`), or one that names no item: logged, linked to no call.
    s = offline(tb.AgentTurns)
    agent = s.agent()
    method, frame = "item/commandExecution/requestApproval", {"result": {"decision": "decline"}}
    agent._log_answer(method, {"itemId": "call_1"}, frame, "close")
    folder = agent._folder = StepFold(step=1, model="m")
    agent._log_answer(method, {}, frame, "default")
    agent._log_answer(method, {"itemId": "call_2"}, frame, "handler")
    assert [(e["data"]["itemId"], e["data"]["by"]) for e in s.of_type("approval/decision")] == [
        ("call_1", "close"),
        (None, "default"),
        ("call_2", "handler"),
    ]
    assert folder._approvals == {"call_2": {"decision": "decline", "by": "handler"}}


@pytest.mark.parametrize("transport", ["memory", "pipes"])
async def test_agent_child_dead_mid_step_then_next_turn_on_a_fresh_child(offline, transport):
    # In memory the child exits by itself once the command started; over
    # pipes a real fake child is killed with SIGKILL, as a user's OOM killer would.
    if transport == "memory":
        s = offline(tb.AgentTurns, "die")
        config = s.config()
    else:
        s = offline()
        codex_bin = FakeAppServer("support.thread_behaviours:AgentTurns").executable(s.root, [tb.TESTS])
        config = s.config(launcher=None, codex_bin=codex_bin)
    killed: List[int] = []

    agent = s.agent(config=config)

    def on_event(event: Any) -> None:
        if transport == "pipes" and isinstance(event, ItemStarted) and event.item_type == "commandExecution":
            pid = agent.child.client.pid
            killed.append(pid)
            os.kill(pid, signal.SIGKILL)

    agent.on_event = on_event
    async with agent:
        first = await agent.run("sleep please")
        before = list(s.log.events)
        second = await agent.run("are you there?")
    assert first["reason"] == "error" and first["error"]["code"] == "CODEX_NO_RESULT"
    assert f"exited with code {3 if transport == 'memory' else -9}" in first["error"]["message"]
    assert second["reason"] == "completed"
    assert len(killed) == (transport == "pipes")
    # Everything logged before the death is intact on disk, in order.
    assert read_log(s.log.path).events[: len(before)] == before
    types = [e["type"] for e in before]
    assert types[-5:] == ["tool/call", "tool/result", "step/end", "agent/error", "turn/end"]
    assert s.of_type("tool/result")[0]["data"]["status"] == "abandoned"
    assert s.of_type("agent/error")[0]["data"]["code"] == "CODEX_NO_RESULT"
    # The second turn ran on a new child (two initialize handshakes).
    assert len(s.sent("initialize")) == 2
    assert [b["text"] for b in s.of_type("assistant/message")[-1]["data"]["content"]] == ["re: are you there?"]


# -- offline: the child ---------------------------------------------------------------


async def test_agent_reuses_the_child_and_restarts_it_when_the_config_changes(offline):
    s = offline(tb.AgentTurns)
    one = ModelEndpoint("http://127.0.0.1:9/v1", "sk-one")

    agent = s.agent(config=s.config(endpoint=one))
    async with agent:
        await agent.run("one")
        first = agent.child.client
        assert agent._client is first  # the compat name
        await agent.run("two")
        assert agent.child.client is first  # reused across turns
        agent.config = reconfigured(agent.config, endpoint=ModelEndpoint("http://127.0.0.1:9/v2", "sk-two"))
        await agent.run("three")
        second = agent.child.client
        assert second is not first and first.closed  # restarted for the new endpoint
        agent.config = reconfigured(agent.config, config=['model_reasoning_effort="low"'])
        await agent.run("four")
        assert agent.child.client is not second and second.closed  # and for new -c flags
        assert agent.child.restarts == 2
    assert s.ends() == ["completed"] * 4
    launches = s.fake.launches
    assert len(launches) == 3
    # The endpoint: a provider of codexmini's own on the command line, the key
    # only in the child's environment.
    assert launches[0].argv[1:] == ["app-server", "-c", 'model_provider="codexmini"', "-c", one.config()[1]]
    assert [launch.env.get("CODEXMINI_API_KEY") for launch in launches] == ["sk-one", "sk-two", "sk-two"]
    assert launches[0].env["CODEX_HOME"] == s.home
    assert not [w for launch in launches for w in launch.argv if "sk-" in w]
    assert launches[2].argv[-2:] == ["-c", 'model_reasoning_effort="low"']


async def test_agent_child_environment_gets_codex_home_only_when_configured(offline):
    s = offline(CodexLike)

    async with s.agent(config=s.config(codex_home=None, env={"CODEXMINI_TEST_VAR": "given"})) as agent:
        await agent.start()
    (launch,) = s.fake.launches
    assert launch.env.get("CODEX_HOME") == os.environ.get("CODEX_HOME")  # the parent's, if any
    assert launch.env["CODEXMINI_TEST_VAR"] == "given"
    assert launch.argv[1:] == ["app-server"]  # no endpoint, no -c flags
    assert launch.cwd == s.ws


async def test_agent_closes_the_idle_child_and_starts_a_fresh_one_on_demand(offline):
    s = offline(tb.AgentTurns)

    async with s.agent(config=s.config(child_idle_s=0.01)) as agent:
        await agent.run("one")
        first = agent.child.client
        await asyncio.wait_for(first.wait_closed(), 30)  # the idle timer closed it
        await agent.wait_idle()
        assert agent.child.client is None and first.closed
        assert agent.phase == agent_mod.IDLE
        await agent.run("two")  # a fresh child on demand
        assert agent.child.client is not None and agent.child.client is not first
        assert agent.child.restarts == 0  # an idle shutdown is no restart
    assert len(s.fake.launches) == 2
    assert s.ends() == ["completed", "completed"]


@BOTH
async def test_agent_followup_waits_for_the_idle_shutdown_and_skills_can_be_off(twin, kind):
    s = twin(tb.AgentTurns, {"rules": [], "default": reply("ok")})
    with open(os.path.join(s.ws, "AGENTS.md"), "w") as fh:
        fh.write("never injected\n")

    async with s.agent(config=s.config(skills=False)) as agent:
        await agent.run("one /agents-md")
        first = agent.child.client
        agent.child._idle_shutdown(lambda: True)  # as the idle timer would
        assert agent.phase == agent_mod.MAINTENANCE
        await agent.run("two")  # waits for the shutdown, then starts a fresh child
        assert first.closed and agent.child.client is not first
    assert [e["data"]["source"]["kind"] for e in s.of_type("user/message")] == ["user", "user"]
    assert len(s.sent("initialize")) == 2
    if kind == "memory":
        assert len(s.fake.launches) == 2


@BOTH
async def test_agent_cancel_while_the_child_starts_logs_no_turn(twin, kind):
    # In memory the child's initialize waits for the test (SlowHandshake);
    # codex is caught spawning, before the driver's first await returns.
    behaviour = tb.SlowHandshake()
    s = twin(behaviour, {"rules": [], "default": reply("never")})

    async with s.agent() as agent:
        if kind == "memory":
            running = asyncio.ensure_future(agent.run("hello"))
            await asyncio.wait_for(behaviour.initializing.wait(), 30)
        else:
            agent.followup("hello")
            await asyncio.sleep(0)  # the driver runs until it waits for the spawn
        assert agent.phase == agent_mod.RUNNING and agent.child.client is None
        agent.cancel()
        if kind == "memory":
            behaviour.gate.set()
            assert await asyncio.wait_for(running, 30) == {"reason": "aborted"}  # nothing ran
        else:
            await agent.wait_idle()
        assert agent.phase == agent_mod.IDLE
        assert s.log.events == []  # not even the header
        end = await agent.run("after the cancel")
    assert end["reason"] == "completed"
    assert [e["turn"] for e in s.of_type("turn/start")] == [1]  # the cancelled one left nothing
    assert s.users() == [(1, 1, "after the cancel")]


@BOTH
async def test_agent_driver_cancelled_from_outside_still_ends_the_turn(twin, kind):
    behaviour = tb.SlowHandshake()
    behaviour.gate.set()  # in memory, the first child answers at once
    s = twin(behaviour, {"rules": [], "default": {**reply("a", "b", "c", "d"), "delay_ms": 200}})

    agent = s.agent(on_event=s.watch)
    async with agent:
        agent.followup("slow")
        await s.held(agent, "slow")
        waiter = asyncio.ensure_future(agent.wait_idle())
        await asyncio.sleep(0)
        waiter.cancel()  # a cancelled waiter does not cancel the turn
        with pytest.raises(asyncio.CancelledError):
            await waiter
        assert not agent._driver.done()
        agent._driver.cancel()  # e.g. the event loop shutting down
        with pytest.raises(asyncio.CancelledError):
            await agent._driver
        assert s.ends() == ["aborted"]
        await agent.child.close()
        if kind == "memory":
            behaviour.gate.clear()
            behaviour.initializing.clear()
        agent.followup("again")
        if kind == "memory":
            await asyncio.wait_for(behaviour.initializing.wait(), 30)  # the child is starting
            idle = asyncio.ensure_future(agent.wait_idle())
        await asyncio.sleep(0)  # memory: the waiter waits; live: the driver waits for the child's spawn
        agent._driver.cancel()  # cancelled from outside before the turn began
        if kind == "memory":
            behaviour.gate.set()
        with pytest.raises(asyncio.CancelledError):
            await agent._driver
        if kind == "memory":
            await asyncio.wait_for(idle, 30)  # waiting for a driver that got cancelled ends
            assert agent.phase == agent_mod.IDLE
    (end,) = s.of_type("turn/end")
    assert end["data"]["reason"] == "aborted"
    if kind == "memory":
        assert len(s.sent("turn/interrupt")) == 1


# -- offline: the inbox ---------------------------------------------------------------


@BOTH
async def test_agent_inbox_followup_inject_and_cancel(twin, kind):
    # In memory a "slow" turn holds until released or interrupted; live, the
    # scripted model streams it slowly.
    behaviour = tb.AgentTurns()
    slow = {**reply("a", "b", "c", "d", "e", "f"), "delay_ms": 400}  # slow, and still completes
    # The turns the test cancels stream for far longer than any scheduling
    # delay on a loaded machine (the stream is abandoned when codex interrupts).
    cancelled = {**slow, "delay_ms": 5000}
    s = twin(
        behaviour,
        {
            # The prompt is the whole log: the newest marker must be matched first.
            "rules": [
                {"when": {"user_contains": "<user>\ndropped"}, "respond": reply("never")},
                {"when": {"user_contains": "<user>\nslow three"}, "respond": cancelled},
                {"when": {"user_contains": "<user>\nafter"}, "respond": reply("after")},
                {"when": {"user_contains": "<user>\nslow two"}, "respond": cancelled},
                {"when": {"user_contains": "<user>\ninjected"}, "respond": reply("saw the injection")},
                {"when": {"user_contains": "<user>\nslow one"}, "respond": slow},
            ],
        },
    )

    agent = s.agent(on_event=s.watch)
    async with agent:
        # inject during a turn: a second step of the same turn picks it up.
        agent.followup("slow one")
        await s.held(agent, "slow one")
        assert agent.phase == agent_mod.RUNNING
        agent.inject("injected later")
        if kind == "memory":
            behaviour.release()
        await agent.wait_idle()
        assert s.ends() == ["completed"]
        assert [e["turn"] for e in s.of_type("turn/end")] == [1]
        steps = sorted({e["step"] for e in s.log.events if e["turn"] == 1 and e["step"]})
        assert steps == [1, 2]
        # followups queued while running run as the next turns, in order.
        agent.followup("slow two")
        agent.followup("after")
        await s.held(agent, "slow two")
        agent.cancel(keep_inbox=True)  # abort turn 2, keep "after"
        await agent.wait_idle()
        # cancel() without keep_inbox drops what is queued.
        agent.followup("slow three")
        agent.followup("dropped")
        await s.held(agent, "slow three")
        agent.cancel()
        await agent.wait_idle()
        agent.cancel()  # idle: nothing to do
        assert agent.phase == agent_mod.IDLE
    assert s.ends() == ["completed", "aborted", "completed", "aborted"]
    users = [b["text"] for e in s.of_type("user/message") for b in e["data"]["content"]]
    assert users == ["slow one", "injected later", "slow two", "after", "slow three"]
    if kind == "memory":
        assert s.users() == [
            (1, 1, "slow one"),
            (1, 2, "injected later"),
            (2, 1, "slow two"),
            (3, 1, "after"),
            (4, 1, "slow three"),
        ]
    assert len(s.sent("turn/interrupt")) == 2
    if kind == "memory":
        # An aborted step settles what it held: the interrupted message is not lost.
        aborted = [e for e in s.of_type("step/end") if e["data"]["reason"] == "aborted"]
        assert [e["turn"] for e in aborted] == [2, 4]


async def test_agent_inject_while_idle_waits_for_the_next_turn(offline):
    s = offline(tb.AgentTurns)

    async with s.agent() as agent:
        agent.inject("injected while idle")
        assert agent._driver is None and agent.phase == agent_mod.IDLE  # nothing woke
        await agent.run("hello")
    # The next turn's first step delivers its followup, then what was injected.
    assert s.users() == [(1, 1, "hello"), (1, 1, "injected while idle")]
    assert s.ends() == ["completed"]


@BOTH
async def test_agent_steer_while_running_and_while_idle(twin, kind):
    s = twin(
        tb.EchoSteer,
        {
            "rules": [
                {"when": {"user_contains": "steered"}, "respond": reply("got the steer", id_="msg_2")},
                {"when": {"user_contains": "slow"}, "respond": {**reply("a", "b", "c", "d"), "delay_ms": 150}},
            ],
            "default": reply("ok"),
        },
    )

    agent = s.agent(on_event=s.watch)
    async with agent:
        agent.followup("slow please")
        await s.held(agent, "slow please")
        await agent.steer("steered message")
        await agent.wait_idle()
        await agent.steer("idle steer starts a turn")
        await agent.wait_idle()
    (steer,) = s.sent("turn/steer")
    assert steer["params"]["input"] == [{"type": "text", "text": "steered message"}]
    steered = [e for e in s.of_type("user/message") if e["data"]["content"][0]["text"] == "steered message"]
    assert steered and steered[0]["turn"] == 1 and steered[0]["step"] == 1
    if kind == "memory":
        assert steer["params"]["expectedTurnId"] == TURN  # the running codex turn's id
        # Logged where codex echoed it: after what the model said before it.
        assert s.users() == [(1, 1, "slow please"), (1, 1, "steered message"), (2, 1, "idle steer starts a turn")]
        turn1 = [e["type"] for e in s.log.events if e["turn"] == 1]
        assert turn1[turn1.index("user/message") + 1 :][:3] == [
            "assistant/message",
            "user/message",
            "assistant/message",
        ]
    assert s.ends() == ["completed", "completed"]


@BOTH
async def test_agent_refused_steer_goes_to_the_next_step(twin, kind, monkeypatch):
    # In memory the fake refuses turn/steer; live, the steer is refused before
    # it reaches codex (as codex refuses one whose turn is over).
    behaviour = tb.RefuseSteer()
    s = twin(
        behaviour,
        {
            "rules": [
                {"when": {"user_contains": "<user>\nlate words"}, "respond": reply("got them")},
                {"when": {"user_contains": "slow"}, "respond": {**reply("a", "b", "c"), "delay_ms": 100}},
            ]
        },
    )
    if kind == "live":

        async def refuse(self: Turn, input: Any) -> None:
            raise RpcError(-32600, "no active turn to steer", method="turn/steer")

        monkeypatch.setattr(Turn, "steer", refuse)

    agent = s.agent(on_event=s.watch)
    async with agent:
        agent.followup("slow please")
        await s.held(agent, "slow please")
        await agent.steer([{"type": "text", "text": "late words"}, {"type": "image", "path": "/nonexistent/x.png"}])
        if kind == "memory":
            behaviour.release()
        await agent.wait_idle()
    assert s.users() == [(1, 1, "slow please"), (1, 2, "late words")]
    starts = s.sent("turn/start")
    assert starts[1]["params"]["input"][1:] == [{"type": "localImage", "path": "/nonexistent/x.png"}]
    if kind == "memory":
        (steer,) = s.sent("turn/steer")  # sent with its image, refused
        assert steer["params"]["input"] == [
            {"type": "text", "text": "late words"},
            {"type": "localImage", "path": "/nonexistent/x.png"},
        ]


async def test_agent_steer_into_a_dying_child_goes_to_the_next_turn(offline):
    # The child dies before it answers turn/steer: the step ends without a
    # result (CODEX_NO_RESULT) and the message is not lost -- nor raised at
    # the caller, who would send it twice.
    s = offline(tb.DieOnSteer)

    agent = s.agent(on_event=s.watch)
    async with agent:
        agent.followup("slow please")
        await s.watch.held("slow please")
        await agent.steer("are you still there?")
        await agent.wait_idle()
    assert s.ends() == ["error", "completed"]
    assert s.of_type("turn/end")[0]["data"]["error"]["code"] == "CODEX_NO_RESULT"
    assert s.users() == [(1, 1, "slow please"), (2, 1, "are you still there?")]
    assert len(s.fake.launches) == 2


async def test_agent_steer_refused_after_its_step_requeued_it_is_delivered_once(offline):
    # The step ends (and hands the unechoed steer back to the inbox) before
    # turn/steer's refusal reaches steer(): steer() must not queue it again.
    # (Python 3.13's scheduling made DieOnSteer hit this order by itself.)
    behaviour = tb.EndThenRefuseSteer()
    s = offline(behaviour)

    agent = s.agent(on_event=s.watch)
    async with agent:
        agent.followup("slow please")
        await s.watch.held("slow please")
        steering = asyncio.ensure_future(agent.steer("are you still there?"))
        for _ in range(3000):  # until step 2 has logged it (bounded: no hang)
            if (1, 2, "are you still there?") in s.users():
                break
            await asyncio.sleep(0.01)
        behaviour.gate.set()
        await steering
        await agent.wait_idle()
        await asyncio.gather(*behaviour.refusals)
    assert s.users() == [(1, 1, "slow please"), (1, 2, "are you still there?")]
    assert s.ends() == ["completed"]


async def test_agent_steer_codex_never_echoed_goes_to_the_next_step(offline):
    behaviour = tb.AgentTurns()  # accepts turn/steer, never echoes it
    s = offline(behaviour)

    agent = s.agent(on_event=s.watch)
    async with agent:
        agent.followup("slow please")
        await s.watch.held("slow please")
        # A reasoning block is not shown to the model: not steered either.
        await agent.steer([{"type": "text", "text": "unechoed words"}, {"type": "reasoning", "text": "hm"}])
        behaviour.release()
        await agent.wait_idle()
    (steer,) = s.sent("turn/steer")
    assert steer["params"]["input"] == [{"type": "text", "text": "unechoed words"}]
    assert s.users() == [(1, 1, "slow please"), (1, 2, "unechoed words")]
    assert s.ends() == ["completed"]


async def test_agent_cancel_drops_a_steer_codex_never_echoed(offline):
    # cancel() promises to drop the inbox: a steer in flight is part of it
    # (issue 15's first race; the inbox's generations keep the promise).
    behaviour = tb.AgentTurns()
    s = offline(behaviour)

    agent = s.agent(on_event=s.watch)
    async with agent:
        agent.followup("slow please")
        await s.watch.held("slow please")
        await agent.steer("never to be seen")
        agent.cancel()
        await agent.wait_idle()
        assert len(agent.inbox) == 0
        await agent.run("next")
    assert s.ends() == ["aborted", "completed"]
    assert s.users() == [(1, 1, "slow please"), (2, 1, "next")]
    assert "never to be seen" not in s.sent("turn/start")[-1]["params"]["input"][0]["text"]


async def test_agent_cancel_keeping_the_inbox_keeps_a_steer_codex_never_echoed(offline):
    behaviour = tb.AgentTurns()
    s = offline(behaviour)

    agent = s.agent(on_event=s.watch)
    async with agent:
        agent.followup("slow please")
        await s.watch.held("slow please")
        await agent.steer("kept words")
        agent.cancel(keep_inbox=True)
        await agent.wait_idle()
    # Kept, it is the current turn's: with nothing running it starts a turn.
    assert s.ends() == ["aborted", "completed"]
    assert s.users() == [(1, 1, "slow please"), (2, 1, "kept words")]


# -- live --------------------------------------------------------------------------


@pytest.mark.parametrize("_", [0], ids=["sigkill"])
@pytest.mark.live
@pytest.mark.skipif(not HAVE_CODEX, reason="the pinned codex is not installed (make setup)")
async def test_agent_child_killed_mid_step_then_next_turn_on_a_fresh_child(live_setup, _):
    # Every step's prompt is the whole serialized log, so the rule for the
    # later turn comes first.
    s = live_setup(
        {
            "rules": [
                {"when": {"user_contains": "are you there"}, "respond": reply("fresh ", "child")},
                {"when": {"user_contains": "sleep"}, "respond": command("sleep 30")},
            ]
        }
    )
    killed: List[int] = []

    agent = s.agent()

    def on_event(event: Any) -> None:
        if isinstance(event, ItemStarted) and event.item_type == "commandExecution" and not killed:
            pid = agent.child.client.pid
            killed.append(pid)
            os.kill(pid, signal.SIGKILL)

    agent.on_event = on_event
    async with agent:
        first = await agent.run("sleep please")
        before = list(s.log.events)
        second = await agent.run("are you there?")
    assert first["reason"] == "error" and first["error"]["code"] == "CODEX_NO_RESULT"
    assert "exited with code -9" in first["error"]["message"]
    assert second["reason"] == "completed"
    assert killed
    # Everything logged before the kill is intact on disk, in order.
    on_disk = read_log(s.log.path).events
    assert on_disk[: len(before)] == before
    types = [e["type"] for e in before]
    assert types[-5:] == ["tool/call", "tool/result", "step/end", "agent/error", "turn/end"]
    assert s.of_type("tool/result")[0]["data"]["status"] == "abandoned"
    # The second turn ran on a new process (two initialize handshakes).
    assert len(s.sent("initialize")) == 2
    assert [b["text"] for b in s.of_type("assistant/message")[-1]["data"]["content"]] == ["fresh child"]


@pytest.mark.live
@pytest.mark.skipif(not HAVE_CODEX, reason="the pinned codex is not installed (make setup)")
async def test_agent_reuses_the_child_restarts_on_endpoint_change_and_closes_when_idle(live_setup):
    s = live_setup({"rules": [], "default": reply("ok")})

    agent = s.agent(config=s.config(child_idle_s=0.2))
    async with agent:
        await agent.run("one")
        first = agent.child.client
        await agent.run("two")
        assert agent.child.client is first  # reused across turns
        with ScriptedModel({"rules": [], "default": reply("other")}) as other:
            agent.config = reconfigured(agent.config, endpoint=ModelEndpoint(other.url, "sk-other"))
            await agent.run("three")
            assert agent.child.client is not first and first.closed  # restarted for the new endpoint
            assert other.requests
        second = agent.child.client
        for _ in range(500):  # idle shutdown after child_idle_s
            if agent.phase == agent_mod.MAINTENANCE or agent.child.client is None:
                break
            await asyncio.sleep(0.01)
        await agent.wait_idle()
        assert agent.child.client is None and second.closed and second.returncode is not None
        assert agent.phase == agent_mod.IDLE
        agent.config = reconfigured(agent.config, endpoint=ModelEndpoint(s.model.url, "sk-test"))
        await agent.run("four")  # a fresh child on demand
    assert len(s.sent("initialize")) == 3
    assert [e["data"]["reason"] for e in s.of_type("turn/end")] == ["completed"] * 4


@pytest.mark.live
@pytest.mark.skipif(not HAVE_CODEX, reason="the pinned codex is not installed (make setup)")
async def test_agent_reasoning_settings_reach_the_model_through_codex(live_setup):
    # What the binary does with turn/start's effort and summary: the model's
    # request carries them as its reasoning settings, and a resumed session
    # (a new agent on the same log, a new child) sends the session's choice.
    s = live_setup({"rules": [], "default": reply("ok")})
    async with s.agent(config=s.config(reasoning_effort="low")) as agent:
        await agent.run("one")
        agent.set_reasoning(effort="high", summary="concise")
    async with s.agent() as agent:  # resumed, nothing configured
        await agent.run("two")
    bodies = [r["body"] for r in s.model.requests if isinstance(r.get("body"), dict) and "input" in r["body"]]
    reasoning = [b.get("reasoning") or {} for b in bodies]
    assert reasoning[0].get("effort") == "low"
    assert (reasoning[-1].get("effort"), reasoning[-1].get("summary")) == ("high", "concise")
    assert [e["data"]["reason"] for e in s.of_type("turn/end")] == ["completed"] * 2


@pytest.mark.live
@pytest.mark.skipif(not HAVE_CODEX, reason="the pinned codex is not installed (make setup)")
async def test_agent_approval_handler_answers_are_logged(live_setup):
    s = live_setup(
        {
            "rules": [{"when": {"last_item": "function_call_output"}, "respond": reply("done")}],
            "default": command("touch ok.txt", sandbox_permissions="require_escalated", justification="test"),
        }
    )
    asked = []

    async def approve(request: Any) -> Reply:
        asked.append(request)
        return Reply("accept")

    async with s.agent(approvals=approve) as agent:
        agent.set_knob("approval/policy", "ask")
        await agent.run("go")
    assert [r.kind for r in asked] == ["command"]
    (decision,) = s.of_type("approval/decision")
    assert decision["data"] == {
        "method": "item/commandExecution/requestApproval",
        "itemId": "call_1",
        "decision": "accept",
        "by": "handler",
    }
    assert os.path.exists(os.path.join(s.ws, "ok.txt"))


# -- the inbox's edges ---------------------------------------------------------------


# -- the session's model and endpoint (issue: the agent, complete) ---------------------------


async def test_agent_session_model_wins_over_the_configured_one_and_survives_a_resume(offline):
    s = offline(tb.AgentTurns)
    async with s.agent(config=s.config(model="configured")) as agent:
        await agent.run("one")  # the configured model
        agent.set_model("chosen")
        await agent.run("two")  # the session's choice, from the next step on
    async with s.agent(config=s.config(model=None)) as agent:  # resumed: no --model
        await agent.run("three")
    models = [f["params"].get("model") for f in s.sent("thread/start")]
    assert models == ["configured", "chosen", "chosen"]
    assert [e["data"] for e in s.of_type("model/choice")] == [{"model": "chosen"}]
    headers = s.of_type("session/header")
    assert [h["data"]["model"] for h in headers] == ["configured", "chosen"]
    sources = [e["data"]["source"]["model"] for e in s.of_type("assistant/message")]
    assert sources == ["configured", "chosen", "chosen"]


def test_agent_set_model_refuses_what_is_not_a_model(offline):
    s = offline(tb.AgentTurns)
    agent = s.agent()
    for bad in ("", None, 3):
        with pytest.raises(ConfigError, match="non-empty string"):
            agent.set_model(bad)  # type: ignore[arg-type]
    assert s.log.events == []


async def test_agent_session_endpoint_keeps_its_key_out_of_the_log_and_restarts_the_child(offline, monkeypatch):
    s = offline(tb.AgentTurns)
    monkeypatch.setenv("CODEXMINI_TEST_KEY", "sk-from-the-environment")
    async with s.agent() as agent:
        await agent.run("one")  # codex's own configuration: no provider flags
        agent.set_endpoint(ModelEndpoint("http://127.0.0.1:9/v1", "sk-in-memory"), api_key_env="CODEXMINI_TEST_KEY")
        await agent.run("two")  # a new child, with the endpoint and the in-memory key
    async with s.agent() as agent:  # resumed
        await agent.run("three")  # the key comes from the variable the log names
    launches = s.fake.launches
    assert len(launches) == 3
    assert not any("model_provider" in arg for arg in launches[0].argv)
    for launch, key in ((launches[1], "sk-in-memory"), (launches[2], "sk-from-the-environment")):
        assert 'model_provider="codexmini"' in launch.argv and launch.env["CODEXMINI_API_KEY"] == key
    (knob,) = s.of_type("model/endpoint")
    assert knob["data"] == {
        "baseUrl": "http://127.0.0.1:9/v1",
        "wireApi": "responses",
        "apiKeyEnv": "CODEXMINI_TEST_KEY",
    }
    with open(s.log.path, encoding="utf-8") as fh:
        text = fh.read()
    assert "sk-in-memory" not in text and "sk-from-the-environment" not in text


async def test_agent_session_endpoint_none_means_codex_configuration(offline):
    s = offline(tb.AgentTurns)

    async with s.agent(config=s.config(endpoint=ModelEndpoint("http://127.0.0.1:9/v1", "sk-x"))) as agent:
        agent.set_endpoint(ModelEndpoint("http://127.0.0.1:8/v1"), api_key_env=None)  # a keyless endpoint
        await agent.run("keyless")
        agent.set_endpoint(None)
        await agent.run("default")
    first, second = s.fake.launches
    assert "CODEXMINI_API_KEY" not in first.env and 'base_url="http://127.0.0.1:8/v1"' in " ".join(first.argv)
    assert not any("model_provider" in arg for arg in second.argv)


async def test_agent_resumed_endpoint_whose_key_variable_is_unset_is_refused_once_naming_it(
    offline, monkeypatch, caplog
):
    # The session chose an endpoint whose key is in a variable; resumed where the
    # variable is unset, it must not run that endpoint without a key.
    s = offline(tb.AgentTurns)
    monkeypatch.setenv("CODEXMINI_RESUME_KEY", "sk-first-process")
    async with s.agent() as agent:
        agent.set_endpoint(ModelEndpoint("http://127.0.0.1:9/v1"), api_key_env="CODEXMINI_RESUME_KEY")
        await agent.run("one")
    monkeypatch.delenv("CODEXMINI_RESUME_KEY")
    resumed = s.agent()
    with pytest.raises(EndpointKeyMissing) as info:  # start(): the typed error, before anything is logged
        await resumed.start()
    assert info.value.variable == "CODEXMINI_RESUME_KEY" and info.value.base_url == "http://127.0.0.1:9/v1"
    assert "$CODEXMINI_RESUME_KEY, which is not set" in str(info.value)
    assert isinstance(info.value, ConfigError)
    with caplog.at_level(logging.WARNING, logger="codexmini.agent"):
        end = await resumed.run("two")  # run(): the turn ends in that error, logged once
    await resumed.close()
    assert end["reason"] == "error" and end["error"]["code"] == "ENDPOINT_KEY_MISSING"
    assert "CODEXMINI_RESUME_KEY" in end["error"]["message"]
    assert len(s.fake.launches) == 1  # no child without its key
    (error,) = [e for e in s.of_type("agent/error") if e["turn"] == 2]
    assert error["data"]["code"] == "ENDPOINT_KEY_MISSING"
    assert len(caplog.records) == 1 and "$CODEXMINI_RESUME_KEY" in caplog.text  # one warning for the turn
    # Given the key again (here in the launch's environment), the session runs on.
    monkeypatch.setenv("CODEXMINI_RESUME_KEY", "sk-back")
    async with s.agent() as agent:
        assert (await agent.run("three"))["reason"] == "completed"
    assert s.fake.launches[-1].env["CODEXMINI_API_KEY"] == "sk-back"


# -- the session's sandbox and reasoning (issue 30.4) ----------------------------------------


async def test_agent_reasoning_settings_are_sent_logged_and_survive_a_resume(offline):
    s = offline(tb.AgentTurns)
    config = s.config(reasoning_effort="low", reasoning_summary="concise")
    async with s.agent(config=config) as agent:
        await agent.run("one")  # the configured settings
        agent.set_reasoning(effort="high")  # the summary stays the configured one
        await agent.run("two")
        agent.set_reasoning(summary="detailed")  # the effort back to the configuration's
        await agent.run("three")
    async with s.agent() as agent:  # resumed with no reasoning configured: the session's choice
        await agent.run("four")
    sent = [(f["params"].get("effort"), f["params"].get("summary")) for f in s.sent("turn/start")]
    assert sent == [("low", "concise"), ("high", "concise"), ("low", "detailed"), (None, "detailed")]
    assert [e["data"] for e in s.of_type("model/reasoning")] == [
        {"effort": "high", "summary": None},
        {"effort": None, "summary": "detailed"},
    ]
    assert all(e["turn"] is None and e["step"] is None for e in s.of_type("model/reasoning"))


async def test_agent_without_reasoning_settings_sends_none(offline):
    s = offline(tb.AgentTurns)
    async with s.agent() as agent:
        await agent.run("one")
    (start,) = s.sent("turn/start")
    assert "effort" not in start["params"] and "summary" not in start["params"]


async def test_agent_set_sandbox_applies_next_step_and_survives_a_resume(offline):
    s = offline(tb.AgentTurns)
    async with s.agent() as agent:
        await agent.run("one")
        agent.set_sandbox("danger-full-access")
        await agent.run("two")
    async with s.agent() as agent:
        await agent.run("three")
    async with s.agent(config=s.config(sandbox="read-only")) as agent:  # a pin wins over the knob
        await agent.run("four")
    sandboxes = [f["params"]["sandbox"] for f in s.sent("thread/start")]
    assert sandboxes == ["read-only", "danger-full-access", "danger-full-access", "read-only"]
    assert [e["data"] for e in s.of_type("sandbox/mode")] == [{"mode": "danger-full-access"}]


def test_agent_knob_setters_refuse_bad_values_before_logging(offline):
    s = offline(tb.AgentTurns)
    agent = s.agent()
    for bad in ("", None, "full", 3):
        with pytest.raises(ConfigError, match="sandbox must be one of"):
            agent.set_sandbox(bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="effort must be a non-empty string"):
        agent.set_reasoning(effort="")
    with pytest.raises(ConfigError, match="summary must be one of"):
        agent.set_reasoning(summary="brief")  # type: ignore[arg-type]
    assert s.log.events == []
    with pytest.raises(ConfigError, match="summary must be one of"):
        s.config(reasoning_summary="verbose")
    with pytest.raises(ConfigError, match="effort must be a non-empty string"):
        s.config(reasoning_effort=7)


# -- inbox races (fail on the agent before the surface issue) ---------------------------------


async def test_agent_cancel_keep_inbox_while_the_child_starts_keeps_the_followup(offline):
    s = offline()

    behaviour = tb.SlowHandshake()
    s.fake = FakeAppServer(behaviour)
    async with s.agent() as agent:
        agent.followup("keep me")
        await asyncio.wait_for(behaviour.initializing.wait(), 30)
        agent.cancel(keep_inbox=True)  # aborts the spawn, keeps what was asked
        behaviour.gate.set()
        await agent.wait_idle()
        end = agent.last_turn_end or {}
    assert end["reason"] == "completed"
    assert s.users() == [(1, 1, "keep me")]


async def test_agent_cancel_while_the_child_starts_drops_the_followup(offline):
    s = offline()

    behaviour = tb.SlowHandshake()
    s.fake = FakeAppServer(behaviour)
    async with s.agent() as agent:
        agent.followup("drop me")
        await asyncio.wait_for(behaviour.initializing.wait(), 30)
        agent.cancel()
        behaviour.gate.set()
        await agent.wait_idle()
        assert len(agent.inbox) == 0
    assert s.log.events == []


async def test_agent_cancel_aborts_the_idle_shutdown_and_close_still_ends_the_child(offline):
    s = offline()

    behaviour = tb.LingerOnClose()
    s.fake = FakeAppServer(behaviour)
    agent = s.agent()
    await agent.run("one")
    transport_server = s.fake.server
    agent.child._idle_shutdown(lambda: True)  # as the idle timer would
    await asyncio.wait_for(behaviour.closing.wait(), 30)
    assert agent.phase == agent_mod.MAINTENANCE
    agent.cancel()
    assert agent.phase == agent_mod.IDLE  # at once: the shutdown is no longer waited for
    await asyncio.wait_for(agent.wait_idle(), 5)
    assert transport_server is s.fake.server
    behaviour.gate.set()
    await agent.close()  # waits for the child whose shutdown was aborted
    assert agent.child._closing == set()
    assert s.ends() == ["completed"]


async def test_agent_batches_steer_and_inject_messages_into_one_step(offline):
    s = offline(tb.AgentTurns)

    async with s.agent() as agent:
        agent.inject("first")
        agent.inject("second")
        await agent.steer("third")  # idle: wakes the driver, all three in one step
        await agent.wait_idle()
    assert s.users() == [(1, 1, "first"), (1, 1, "second"), (1, 1, "third")]
    assert len(s.sent("turn/start")) == 1 and [e["step"] for e in s.of_type("step/start")] == [1]


# -- the pre-step hook -------------------------------------------------------------------------


async def test_agent_pre_step_hook_passes_rewrites_and_blocks(offline):
    s = offline(tb.AgentTurns)
    seen: List[List[str]] = []

    async def hook(messages: List[Dict[str, Any]]) -> Any:
        texts = [m["content"][0]["text"] for m in messages]
        seen.append(texts)
        if texts == ["pass"]:
            return None
        if texts == ["rewrite"]:
            return ["rewritten", {**messages[0], "content": [{"type": "text", "text": "kept id"}]}]
        return Blocked("not today")

    async with s.agent(before_step=hook) as agent:
        (passed, rewritten, blocked) = [await agent.run(t) for t in ("pass", "rewrite", "block")]
    assert seen == [["pass"], ["rewrite"], ["block"]]
    assert passed["reason"] == rewritten["reason"] == "completed"
    assert blocked == {"reason": "blocked", "blocked": {"by": "pre-step", "reason": "not today"}}
    assert [t for _, _, t in s.users()] == ["pass", "rewritten", "kept id"]
    # The blocked turn ran no step and sent codex nothing.
    assert len(s.sent("turn/start")) == 2
    last_turn = [e["type"] for e in s.log.events if e["turn"] == 3]
    assert last_turn == ["turn/start", "turn/end"]


# -- streams tied to messages -------------------------------------------------------------------


async def test_agent_streams_are_tied_to_messages_and_a_cut_stream_is_abandoned(offline):
    s = offline(tb.CutStream)

    async with s.agent(on_event=s.watch) as agent:
        await agent.run("cut please")
    (message,) = s.of_type("assistant/message")
    mid = message["data"]["id"]
    deltas = [(e.message_id, e.item_id, e.delta) for e in s.watch.events if isinstance(e, MessageDelta)]
    assert deltas == [(mid, "msg_cut", "Partial"), (mid, "msg_ok", "Recovered"), (mid, "msg_ok", " answer.")]
    ends = [(e.message_id, e.item_id, e.committed) for e in s.watch.events if isinstance(e, MessageStreamEnd)]
    assert ends == [(mid, "msg_cut", False), (mid, "msg_ok", True)]
    assert message["data"]["content"] == [{"type": "text", "text": "Recovered answer."}]


async def test_agent_stream_cut_short_by_the_end_of_the_turn_is_abandoned(offline):
    s = offline(tb.AgentTurns)

    async with s.agent(on_event=s.watch) as agent:
        running = asyncio.ensure_future(agent.run("slow please"))
        await s.watch.held("slow please")
        agent.cancel()
        await running
    ends = [e for e in s.watch.events if isinstance(e, MessageStreamEnd)]
    assert [(e.item_id, e.committed) for e in ends] == [("msg_1", False)]
    assert s.of_type("assistant/message") == []


# -- errors worth reading -----------------------------------------------------------------------


async def test_agent_aborted_turns_say_why(offline):
    s = offline(tb.AgentTurns)

    async def aborted(cause: Optional[str]) -> Dict[str, Any]:
        watch = Watch()
        agent = s.agent(on_event=watch)
        running = asyncio.ensure_future(agent.run("slow down"))
        await watch.held("slow down")
        if cause == "shutdown":
            await agent.close()
        elif cause is None:
            agent.cancel()
        else:
            agent.cancel(cause=cause)
        end = await running
        await agent.close()
        return end

    ends = [await aborted(c) for c in (None, "interrupt", "shutdown")]
    assert [(e["reason"], e["abortedBy"]) for e in ends] == [
        ("aborted", "cancel"),
        ("aborted", "interrupt"),
        ("aborted", "shutdown"),
    ]
    assert [e["data"]["abortedBy"] for e in s.of_type("turn/end")] == ["cancel", "interrupt", "shutdown"]


# -- images, skills, questions ---------------------------------------------------------------------


async def test_agent_bad_image_block_is_skipped_and_a_relative_path_resolved(offline, caplog):
    s = offline(tb.AgentTurns)
    with open(os.path.join(s.ws, "shot.png"), "wb") as fh:
        fh.write(b"\x89PNG")

    async with s.agent() as agent:
        with caplog.at_level(logging.WARNING, logger="codexmini.agent"):
            end = await agent.run(
                [{"type": "text", "text": "look"}, {"type": "image"}, {"type": "image", "path": "shot.png"}]
            )
    assert end["reason"] == "completed"
    assert "skipped an image block without a path" in caplog.text
    (user,) = s.of_type("user/message")
    assert user["data"]["content"] == [
        {"type": "text", "text": "look"},
        {"type": "image", "path": os.path.join(s.ws, "shot.png")},
    ]
    (start,) = s.sent("turn/start")
    assert start["params"]["input"][1:] == [{"type": "localImage", "path": os.path.join(s.ws, "shot.png")}]


async def test_agent_steered_message_gets_its_skills(offline):
    s = offline(tb.EchoSteer)
    with open(os.path.join(s.ws, "AGENTS.md"), "w", encoding="utf-8") as fh:
        fh.write("Always answer in haiku.")

    async with s.agent(on_event=s.watch) as agent:
        running = asyncio.ensure_future(agent.run("slow start"))
        await s.watch.held("slow start")
        await agent.steer("now use /agents-md please")
        await running
    steer = s.sent("turn/steer")[0]["params"]["input"]
    assert steer[0]["text"] == "now use /agents-md please"
    assert steer[1]["text"].startswith('<skill_content name="agents-md">') and "haiku" in steer[1]["text"]
    sources = [e["data"]["source"] for e in s.of_type("user/message")]
    assert sources[1:] == [{"kind": "user"}, {"kind": "skill-invocation", "name": "agents-md"}]


async def test_agent_unanswered_questions_are_logged_and_textless_ones_not_shown(offline, caplog):
    s = offline(tb.AskUser)
    asked: List[Any] = []

    async def answer(request: Any) -> Reply:
        asked.append(request)
        return Reply("accept", answers={"color": "Blue (Recommended)"})

    async with s.agent(approvals=answer) as agent:
        with caplog.at_level(logging.WARNING, logger="codexmini.agent"):
            end = await agent.run("ask me")
    assert end["reason"] == "completed"
    (request,) = asked
    assert [q["id"] for q in request.questions] == ["color", "size"]  # the question with no text is not shown
    (decision,) = s.of_type("approval/decision")
    assert decision["data"]["decision"] == "accept" and decision["data"]["unanswered"] == ["size", "blank"]
    assert "2 question(s) of call_rui_1 went unanswered: size, blank" in caplog.text
    assert [b["text"] for e in s.of_type("assistant/message") for b in e["data"]["content"]] == ["answers: color"]


async def test_agent_listener_sees_reasoning_deltas_once_each_with_the_message_id(offline):
    s = offline(tb.Plain)
    seen: List[Any] = []
    end = await one_turn(s, "hi", on_event=seen.append)
    assert end["reason"] == "completed"
    summaries = [e for e in seen if isinstance(e, ReasoningSummaryDelta)]
    assert [type(e) for e in summaries] == [MessageSummaryDelta] * 2  # never the raw event as well
    assert [e.delta for e in summaries] == ["**Planning** ", "the answer."]
    first = s.of_type("assistant/message")[0]
    assert {e.message_id for e in summaries} == {first["data"]["id"]}
    assert first["data"]["content"][0] == {"type": "reasoning", "text": "**Planning** the answer."}


def test_agent_default_ids_are_uuid4_hex():
    # The default new_id: what uuid.uuid4().hex gives -- 32 hex digits, version 4,
    # the RFC 4122 variant -- and never the same twice.
    import uuid

    ids = [agent_mod.uuid4_hex() for _ in range(2000)]
    assert len(set(ids)) == len(ids)
    for made in ids:
        parsed = uuid.UUID(hex=made)
        assert parsed.hex == made and parsed.version == 4 and parsed.variant == uuid.RFC_4122
