"""The agent against the real binary and the scripted model: the behaviours a
recorded transcript cannot show (a killed child, restarts, idle shutdown, the
inbox) and the agent's error boundaries.  Frames are validated by the
conformance plugin like everywhere else."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import tempfile
from typing import Any, Dict, List

import pytest

from codexmini import _agent as agent_mod
from codexmini import Agent, AgentConfig, ModelEndpoint
from codexmini._binary import find_codex
from codexmini._errors import BinaryNotFound, ConfigError
from codexmini._events import ItemStarted
from codexmini._permission import Reply
from codexmini._prompt import derive_messages, serialize
from codexmini.testing.scripted_model import ScriptedModel
from codexmini._session import SessionLog, read_log

try:
    find_codex()
    HAVE_CODEX = True
except BinaryNotFound:
    HAVE_CODEX = False

live = [pytest.mark.live, pytest.mark.skipif(not HAVE_CODEX, reason="the pinned codex is not installed (make setup)")]

USAGE = {"input_tokens": 10, "cached_tokens": 2, "output_tokens": 5, "reasoning_tokens": 1}


def reply(*deltas: str, id_: str = "msg_1") -> Dict[str, Any]:
    return {"output": [{"type": "message", "id": id_, "deltas": list(deltas)}], "usage": USAGE}


def command(cmd: str, call_id: str = "call_1", **extra: Any) -> Dict[str, Any]:
    args = {"cmd": cmd, "yield_time_ms": 30000, **extra}
    return {"output": [{"type": "function_call", "call_id": call_id, "name": "exec_command", "arguments": args}], "usage": USAGE}


class Setup:
    """A scratch root (not under /tmp), a scripted model, a session log, frames."""

    def __init__(self, script: Dict[str, Any]) -> None:
        self.root = tempfile.mkdtemp(prefix="codexmini-agent-", dir="/var/tmp")
        self.ws = os.path.join(self.root, "ws")
        self.home = os.path.join(self.root, "home")
        os.makedirs(self.ws)
        os.makedirs(self.home)
        self.model = ScriptedModel(script).start()
        self.log = SessionLog.open(os.path.join(self.root, "session.jsonl"))
        self.frames: List[Any] = []
        self.ids = iter(range(1, 10**6))

    def config(self, **overrides: Any) -> AgentConfig:
        options = dict(
            cwd=self.ws,
            model="gpt-fake",
            env={"HOME": self.root},
            endpoint=ModelEndpoint(self.model.url, "sk-test"),
            codex_home=self.home,
            tap=lambda d, f: self.frames.append((d, json.loads(json.dumps(f)))),
        )
        options.update(overrides)
        return AgentConfig(**options)

    def agent(self, **kwargs: Any) -> Agent:
        config = kwargs.pop("config", None) or self.config()
        return Agent(self.log, config, new_id=lambda: f"id-{next(self.ids)}", **kwargs)

    def sent(self, method: str) -> List[Dict[str, Any]]:
        return [f for d, f in self.frames if d == "out" and f.get("method") == method]

    def of_type(self, type_: str) -> List[Dict[str, Any]]:
        return [e for e in self.log.events if e["type"] == type_]

    def close(self) -> None:
        self.model.stop()
        self.log.close()
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture
def setup_factory():
    made: List[Setup] = []

    def make(script: Dict[str, Any]) -> Setup:
        s = Setup(script)
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 120))


async def codex_turn_running(agent: Agent) -> None:
    """Wait (bounded by run()'s deadline) until a codex turn has started."""
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
    keyless = ModelEndpoint("http://127.0.0.1:5/v1")
    assert "env_key" not in keyless.config()[1] and keyless.env() == {}


# -- live --------------------------------------------------------------------------


@pytest.mark.parametrize("_", [0], ids=["sigkill"])
@pytest.mark.live
@pytest.mark.skipif(not HAVE_CODEX, reason="the pinned codex is not installed (make setup)")
def test_agent_child_killed_mid_step_then_next_turn_on_a_fresh_child(setup_factory, _):
    # Every step's prompt is the whole serialized log, so the rule for the
    # later turn comes first.
    s = setup_factory(
        {
            "rules": [
                {"when": {"user_contains": "are you there"}, "respond": reply("fresh ", "child")},
                {"when": {"user_contains": "sleep"}, "respond": command("sleep 30")},
            ]
        }
    )
    killed: List[int] = []

    async def main() -> None:
        agent = s.agent()

        def on_event(event: Any) -> None:
            if isinstance(event, ItemStarted) and event.item_type == "commandExecution" and not killed:
                pid = agent._client.pid
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
        return before

    before = run(main())
    assert killed
    # Everything logged before the kill is intact on disk, in order.
    on_disk = read_log(s.log.path).events
    assert on_disk[: len(before)] == before
    types = [e["type"] for e in before]
    assert types[-4:] == ["tool/call", "tool/result", "step/end", "turn/end"]
    assert s.of_type("tool/result")[0]["data"]["status"] == "abandoned"
    # The second turn ran on a new process (two initialize handshakes).
    assert len(s.sent("initialize")) == 2
    assert [b["text"] for b in s.of_type("assistant/message")[-1]["data"]["content"]] == ["fresh child"]


@pytest.mark.live
@pytest.mark.skipif(not HAVE_CODEX, reason="the pinned codex is not installed (make setup)")
def test_agent_pins_override_only_their_own_field(setup_factory):
    s = setup_factory({"rules": [], "default": reply("ok")})

    async def main() -> None:
        async with s.agent(config=s.config(sandbox="workspace-write")) as agent:
            await agent.run("one")  # knobs: none → (read-only, never); the sandbox pin wins its field
            agent.set_knob("approval/policy", "ask")
            await agent.run("two")  # ask → (workspace-write, on-request)
            agent.set_knob("sandbox/mode", "danger-full-access")
            agent.set_knob("approval/policy", "bogus")  # invalid: counts as absent
            await agent.run("three")  # full access → (danger-full-access, never), but the pin keeps workspace-write
        async with s.agent(config=s.config(approval_policy="untrusted")) as agent:
            await agent.run("four")

    run(main())
    pairs = [(f["params"]["sandbox"], f["params"]["approvalPolicy"]) for f in s.sent("thread/start")]
    assert pairs == [
        ("workspace-write", "never"),
        ("workspace-write", "on-request"),
        ("workspace-write", "never"),
        ("danger-full-access", "untrusted"),
    ]


@pytest.mark.live
@pytest.mark.skipif(not HAVE_CODEX, reason="the pinned codex is not installed (make setup)")
def test_agent_second_prompt_is_the_serialized_log(setup_factory):
    s = setup_factory({"rules": [{"when": {"user_contains": "second"}, "respond": reply("two")}], "default": reply("one")})

    async def main() -> None:
        async with s.agent() as agent:
            await agent.run("first")
            await agent.run("second")

    run(main())
    starts = s.sent("turn/start")
    assert len(starts) == 2
    events = s.log.events
    for frame in starts:
        text = frame["params"]["input"][0]["text"]
        # The prompt is exactly the serialization of some prefix of the log.
        prefixes = [serialize(derive_messages(events[:n])) for n in range(len(events) + 1)]
        assert text in prefixes
    assert starts[1]["params"]["input"][0]["text"] == "<user>\nfirst\n</user>\n\n<assistant>\none\n</assistant>\n\n<user>\nsecond\n</user>"
    # The header was written once per agent instance, then turns 1 and 2.
    assert [e["data"]["reason"] for e in s.of_type("session/header")] == ["initial"]
    assert [e["turn"] for e in s.of_type("turn/start")] == [1, 2]


@pytest.mark.live
@pytest.mark.skipif(not HAVE_CODEX, reason="the pinned codex is not installed (make setup)")
def test_agent_resume_writes_a_resume_header_and_continues_turn_numbers(setup_factory):
    s = setup_factory({"rules": [], "default": reply("ok")})

    async def main() -> None:
        async with s.agent() as agent:
            await agent.run("one")
        async with s.agent() as agent:
            await agent.run("two")

    run(main())
    assert [e["data"]["reason"] for e in s.of_type("session/header")] == ["initial", "resume"]
    assert [e["turn"] for e in s.of_type("turn/end")] == [1, 2]


@pytest.mark.live
@pytest.mark.skipif(not HAVE_CODEX, reason="the pinned codex is not installed (make setup)")
def test_agent_reuses_the_child_restarts_on_endpoint_change_and_closes_when_idle(setup_factory):
    s = setup_factory({"rules": [], "default": reply("ok")})

    async def main() -> None:
        agent = s.agent(config=s.config(child_idle_s=0.2))
        async with agent:
            await agent.run("one")
            first = agent._client
            await agent.run("two")
            assert agent._client is first  # reused across turns
            with ScriptedModel({"rules": [], "default": reply("other")}) as other:
                agent.config.endpoint = ModelEndpoint(other.url, "sk-other")
                await agent.run("three")
                assert agent._client is not first and first.closed  # restarted for the new endpoint
                assert other.requests
            second = agent._client
            for _ in range(500):  # idle shutdown after child_idle_s
                if agent.phase == agent_mod.MAINTENANCE or agent._client is None:
                    break
                await asyncio.sleep(0.01)
            await agent.wait_idle()
            assert agent._client is None and second.closed and second.returncode is not None
            assert agent.phase == agent_mod.IDLE
            agent.config.endpoint = ModelEndpoint(s.model.url, "sk-test")
            await agent.run("four")  # a fresh child on demand

    run(main())
    assert len(s.sent("initialize")) == 3
    assert [e["data"]["reason"] for e in s.of_type("turn/end")] == ["completed"] * 4


@pytest.mark.live
@pytest.mark.skipif(not HAVE_CODEX, reason="the pinned codex is not installed (make setup)")
def test_agent_inbox_followup_inject_and_cancel(setup_factory):
    s = setup_factory(
        {
            # The prompt is the whole log: the newest marker must be matched first.
            "rules": [
                {"when": {"user_contains": "<user>\ndropped"}, "respond": reply("never")},
                {"when": {"user_contains": "<user>\nslow three"}, "respond": {**reply("a", "b", "c", "d", "e", "f"), "delay_ms": 150}},
                {"when": {"user_contains": "<user>\nafter"}, "respond": reply("after")},
                {"when": {"user_contains": "<user>\nslow two"}, "respond": {**reply("a", "b", "c", "d", "e", "f"), "delay_ms": 150}},
                {"when": {"user_contains": "<user>\ninjected"}, "respond": reply("saw the injection")},
                {"when": {"user_contains": "<user>\nslow one"}, "respond": {**reply("a", "b", "c", "d", "e", "f"), "delay_ms": 150}},
            ],
        }
    )

    async def main() -> None:
        agent = s.agent()
        async with agent:
            # inject during a turn: a second step of the same turn picks it up.
            agent.followup("slow one")
            await codex_turn_running(agent)
            agent.inject("injected later")
            await agent.wait_idle()
            assert [e["turn"] for e in s.of_type("turn/end")] == [1]
            steps = sorted({e["step"] for e in s.log.events if e["turn"] == 1 and e["step"]})
            assert steps == [1, 2]
            # followups queued while running run as the next turns, in order.
            agent.followup("slow two")
            agent.followup("after")
            await codex_turn_running(agent)
            agent.cancel(keep_inbox=True)  # abort turn 2, keep "after"
            await agent.wait_idle()
            # cancel() without keep_inbox drops what is queued.
            agent.followup("slow three")
            agent.followup("dropped")
            await codex_turn_running(agent)
            agent.cancel()
            await agent.wait_idle()
            agent.cancel()  # idle: nothing to do

    run(main())
    ends = [e["data"]["reason"] for e in s.of_type("turn/end")]
    assert ends == ["completed", "aborted", "completed", "aborted"]
    users = [b["text"] for e in s.of_type("user/message") for b in e["data"]["content"]]
    assert users == ["slow one", "injected later", "slow two", "after", "slow three"]
    assert len(s.sent("turn/interrupt")) == 2


@pytest.mark.live
@pytest.mark.skipif(not HAVE_CODEX, reason="the pinned codex is not installed (make setup)")
def test_agent_listener_error_ends_the_turn_with_unknown_and_keeps_the_log(setup_factory):
    s = setup_factory({"rules": [], "default": reply("ok")})

    def boom(event: Any) -> None:
        raise RuntimeError("listener broke")

    async def main() -> Dict[str, Any]:
        async with s.agent(on_event=boom) as agent:
            return await agent.run("hello")

    end = run(main())
    assert end == {"reason": "error", "error": {"message": "RuntimeError: listener broke", "code": "UNKNOWN"}}
    assert [e["type"] for e in s.log.events][-2:] == ["agent/error", "turn/end"]
    assert read_log(s.log.path).events == s.log.events


@pytest.mark.live
@pytest.mark.skipif(not HAVE_CODEX, reason="the pinned codex is not installed (make setup)")
def test_agent_codex_refusing_turn_start_is_a_codex_error(setup_factory):
    s = setup_factory({"rules": [], "default": reply("ok")})

    async def main() -> Dict[str, Any]:
        async with s.agent(on_event=None) as agent:
            await agent.start()
            # A remote image URL is refused at turn/start (reference §3.12).
            agent._step_input = lambda messages: [{"type": "image", "url": "https://example.com/x.png"}]
            return await agent.run("look")

    end = run(main())
    assert end["reason"] == "error" and end["error"]["code"] == "CODEX_ERROR"
    assert "remote image URLs are not supported" in end["error"]["message"]


@pytest.mark.live
@pytest.mark.skipif(not HAVE_CODEX, reason="the pinned codex is not installed (make setup)")
def test_agent_steer_while_running_and_while_idle(setup_factory):
    s = setup_factory(
        {
            "rules": [
                {"when": {"user_contains": "steered"}, "respond": reply("got the steer", id_="msg_2")},
                {"when": {"user_contains": "slow"}, "respond": {**reply("a", "b", "c", "d"), "delay_ms": 150}},
            ],
            "default": reply("ok"),
        }
    )

    async def main() -> None:
        agent = s.agent()
        async with agent:
            agent.followup("slow please")
            await codex_turn_running(agent)
            await agent.steer("steered message")
            await agent.wait_idle()
            await agent.steer("idle steer starts a turn")
            await agent.wait_idle()

    run(main())
    (steer,) = s.sent("turn/steer")
    assert steer["params"]["input"] == [{"type": "text", "text": "steered message"}]
    steered = [e for e in s.of_type("user/message") if e["data"]["content"][0]["text"] == "steered message"]
    assert steered and steered[0]["turn"] == 1 and steered[0]["step"] == 1
    assert [e["data"]["reason"] for e in s.of_type("turn/end")] == ["completed", "completed"]


@pytest.mark.live
@pytest.mark.skipif(not HAVE_CODEX, reason="the pinned codex is not installed (make setup)")
def test_agent_skills_and_images_reach_codex(setup_factory):
    s = setup_factory({"rules": [], "default": reply("ok")})
    with open(os.path.join(s.ws, "AGENTS.md"), "w") as fh:
        fh.write("Always answer <briefly>.\n")
    os.makedirs(os.path.join(s.ws, ".git"))

    async def main() -> None:
        async with s.agent() as agent:
            await agent.run([{"type": "text", "text": "use /agents-md and /unknown"}, {"type": "image", "path": "/nonexistent/pic.png"}])

    run(main())
    users = s.of_type("user/message")
    assert users[1]["data"]["source"] == {"kind": "skill-invocation", "name": "agents-md"}
    assert "Always answer &lt;briefly&gt;." in users[1]["data"]["content"][0]["text"]
    (start,) = s.sent("turn/start")
    assert start["params"]["input"][1:] == [{"type": "localImage", "path": "/nonexistent/pic.png"}]
    assert "[image: /nonexistent/pic.png]" in start["params"]["input"][0]["text"]


@pytest.mark.live
@pytest.mark.skipif(not HAVE_CODEX, reason="the pinned codex is not installed (make setup)")
def test_agent_approval_handler_answers_are_logged(setup_factory):
    s = setup_factory(
        {
            "rules": [{"when": {"last_item": "function_call_output"}, "respond": reply("done")}],
            "default": command("touch ok.txt", sandbox_permissions="require_escalated", justification="test"),
        }
    )
    asked = []

    async def approve(request: Any) -> Reply:
        asked.append(request)
        return Reply("accept")

    async def main() -> None:
        async with s.agent(approvals=approve) as agent:
            agent.set_knob("approval/policy", "ask")
            await agent.run("go")

    run(main())
    assert [r.kind for r in asked] == ["command"]
    (decision,) = s.of_type("approval/decision")
    assert decision["data"] == {"method": "item/commandExecution/requestApproval", "itemId": "call_1", "decision": "accept", "by": "handler"}
    assert os.path.exists(os.path.join(s.ws, "ok.txt"))


# -- the inbox's edges ---------------------------------------------------------------


@pytest.mark.live
@pytest.mark.skipif(not HAVE_CODEX, reason="the pinned codex is not installed (make setup)")
def test_agent_refused_steer_goes_to_the_next_step(setup_factory, monkeypatch):
    from codexmini._errors import RpcError
    from codexmini._thread import Turn

    s = setup_factory(
        {
            "rules": [
                {"when": {"user_contains": "<user>\nlate words"}, "respond": reply("got them")},
                {"when": {"user_contains": "slow"}, "respond": {**reply("a", "b", "c"), "delay_ms": 100}},
            ]
        }
    )

    async def refuse(self, input):
        raise RpcError(-32600, "no active turn to steer", method="turn/steer")

    monkeypatch.setattr(Turn, "steer", refuse)

    async def main() -> None:
        async with s.agent() as agent:
            agent.followup("slow please")
            await codex_turn_running(agent)
            await agent.steer([{"type": "text", "text": "late words"}, {"type": "image", "path": "/nonexistent/x.png"}])
            await agent.wait_idle()

    run(main())
    users = s.of_type("user/message")
    assert [(u["turn"], u["step"], u["data"]["content"][0]["text"]) for u in users] == [(1, 1, "slow please"), (1, 2, "late words")]
    starts = s.sent("turn/start")
    assert starts[1]["params"]["input"][1:] == [{"type": "localImage", "path": "/nonexistent/x.png"}]


@pytest.mark.live
@pytest.mark.skipif(not HAVE_CODEX, reason="the pinned codex is not installed (make setup)")
def test_agent_cancel_while_the_child_starts_logs_no_turn(setup_factory):
    s = setup_factory({"rules": [], "default": reply("never")})

    async def main() -> Dict[str, Any]:
        async with s.agent() as agent:
            agent.followup("hello")
            await asyncio.sleep(0)  # the driver runs until it waits for the spawn
            assert agent.phase == agent_mod.RUNNING and agent._client is None
            agent.cancel()
            await agent.wait_idle()
            assert agent.phase == agent_mod.IDLE
            return await agent.run("after the cancel")

    end = run(main())
    assert end["reason"] == "completed"
    assert [e["turn"] for e in s.of_type("turn/start")] == [1]  # the cancelled one left nothing


@pytest.mark.live
@pytest.mark.skipif(not HAVE_CODEX, reason="the pinned codex is not installed (make setup)")
def test_agent_driver_cancelled_from_outside_still_ends_the_turn(setup_factory):
    s = setup_factory({"rules": [], "default": {**reply("a", "b", "c", "d"), "delay_ms": 200}})

    async def main() -> None:
        agent = s.agent()
        async with agent:
            agent.followup("slow")
            await codex_turn_running(agent)
            waiter = asyncio.ensure_future(agent.wait_idle())
            await asyncio.sleep(0)
            waiter.cancel()  # a cancelled waiter does not cancel the turn
            with pytest.raises(asyncio.CancelledError):
                await waiter
            assert not agent._driver.done()
            agent._driver.cancel()  # e.g. the event loop shutting down
            with pytest.raises(asyncio.CancelledError):
                await agent._driver
            await agent._close_child()
            agent.followup("again")
            await asyncio.sleep(0)  # now waiting for the child to spawn
            agent._driver.cancel()  # cancelled from outside before the turn began
            with pytest.raises(asyncio.CancelledError):
                await agent._driver

    run(main())
    (end,) = s.of_type("turn/end")
    assert end["data"]["reason"] == "aborted"


@pytest.mark.live
@pytest.mark.skipif(not HAVE_CODEX, reason="the pinned codex is not installed (make setup)")
def test_agent_followup_waits_for_the_idle_shutdown_and_skills_can_be_off(setup_factory):
    s = setup_factory({"rules": [], "default": reply("ok")})
    with open(os.path.join(s.ws, "AGENTS.md"), "w") as fh:
        fh.write("never injected\n")

    async def main() -> None:
        async with s.agent(config=s.config(skills=False)) as agent:
            await agent.run("one /agents-md")
            first = agent._client
            agent._idle_shutdown()  # as the idle timer would
            assert agent.phase == agent_mod.MAINTENANCE
            await agent.run("two")  # waits for the shutdown, then starts a fresh child
            assert first.closed and agent._client is not first

    run(main())
    assert [e["data"]["source"]["kind"] for e in s.of_type("user/message")] == ["user", "user"]
    assert len(s.sent("initialize")) == 2
