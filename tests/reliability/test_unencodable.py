"""Input that cannot go on the wire is refused before anything is registered.

Over real pipes, through the public API: a caller's value that is not JSON or
not UTF-8 -- a lone surrogate in a prompt, a set, NaN or an infinity, an
object, bytes, a key that is no string, a cycle, nesting too deep to encode,
an integer too long to write, params that are no mapping -- given as a prompt,
turn params, an output schema, request or notification params, or a thread's
options, is a typed :class:`~codexmini._errors.UnencodableInput` (a
``ConfigError``) raised before the request takes an id.  After each one:
nothing was written (the frame tap saw nothing, ``frames_out`` did not move),
nothing is pending, the client is healthy, and the next turn on the same child
completes.  A handler's answer (the client's, or an ``Agent``'s ``Reply``)
that cannot go on the wire reaches codex as the fail-closed answer, and the
turn goes on.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, List, Tuple

import edges
import figures
import hostile
import pytest

import codexmini
from codexmini import (
    Agent,
    AgentConfig,
    ConfigError,
    ItemCompleted,
    Launch,
    Reply,
    SchemaError,
    SessionLog,
    Thread,
    read_log,
)
from codexmini._client import AppServerClient
from codexmini._errors import UnencodableInput
from codexmini.testing import FakeAppServer


def cycle() -> Dict[str, Any]:
    loop: Dict[str, Any] = {"a": 1}
    loop["self"] = loop
    return loop


def deep() -> List[Any]:
    value: List[Any] = []
    for _ in range(100_000):
        value = [value]
    return value


#: What a caller might pass that no wire carries: (name, call on a thread, what is refused).
Call = Callable[[AppServerClient, Thread], Any]
CASES: List[Tuple[str, Call, type]] = [
    ("prompt with a lone surrogate", lambda c, t: t.run("hello \ud800 world"), UnencodableInput),
    ("prompt of a lone low surrogate", lambda c, t: t.run("\udfff"), UnencodableInput),
    ("input item with a lone surrogate", lambda c, t: t.run([{"type": "text", "text": "\ud83d"}]), UnencodableInput),
    ("turn params holding a set", lambda c, t: t.run("hi", params={"tags": {1, 2}}), UnencodableInput),
    ("turn params holding NaN", lambda c, t: t.run("hi", params={"x": float("nan")}), UnencodableInput),
    ("turn params holding +infinity", lambda c, t: t.run("hi", params={"x": [float("inf")]}), UnencodableInput),
    ("turn params holding -infinity", lambda c, t: t.run("hi", params={"x": -float("inf")}), UnencodableInput),
    ("turn params holding an object", lambda c, t: t.run("hi", params={"x": object()}), UnencodableInput),
    ("turn params holding bytes", lambda c, t: t.run("hi", params={"x": b"raw"}), UnencodableInput),
    ("turn params with a tuple key", lambda c, t: t.run("hi", params={"x": {(1, 2): 3}}), UnencodableInput),
    ("turn params with a cycle", lambda c, t: t.run("hi", params={"x": cycle()}), UnencodableInput),
    ("turn params nested 100,000 deep", lambda c, t: t.run("hi", params={"x": deep()}), UnencodableInput),
    ("turn params holding a 5,000-digit int", lambda c, t: t.run("hi", params={"x": 10**5000}), UnencodableInput),
    (
        "output schema with a lone surrogate",
        lambda c, t: t.run("hi", output_schema={"title": "\ud800"}),
        UnencodableInput,
    ),
    ("output schema holding NaN", lambda c, t: t.run("hi", output_schema={"maximum": float("nan")}), SchemaError),
    ("thread options with a lone surrogate", lambda c, t: Thread.start(c, cwd="/tmp/\udc80"), UnencodableInput),
    (
        "request params with a lone surrogate",
        lambda c, t: c.request("thread/list", {"searchTerm": "\ud800"}),
        UnencodableInput,
    ),
    ("request params that are a list", lambda c, t: c.request("thread/list", ["limit", 1]), UnencodableInput),
    ("notification params holding a set", lambda c, t: c.notify("initialized", {"x": {1}}), UnencodableInput),
]


async def test_unencodable_input_is_refused_before_anything_is_sent_and_the_next_turn_works(tmp_path):
    exe = FakeAppServer("hostile:Hostile").executable(str(tmp_path), pythonpath=[hostile.HERE])
    written: List[Dict[str, Any]] = []
    tap = lambda direction, frame: written.append(frame) if direction == "out" else None  # noqa: E731
    async with await AppServerClient.start(Launch(codex_bin=exe), tap=tap) as client:
        thread = await Thread.start(client)
        for name, call, error in CASES:
            before = (len(written), client.stats["frames_out"])
            with pytest.raises(error) as raised:
                await call(client, thread)
            assert type(raised.value) is error and isinstance(raised.value, (ConfigError, SchemaError)), name
            assert (len(written), client.stats["frames_out"]) == before, name  # nothing went out
            assert client._conn.pending == {} and client._futures == {}, name  # nothing kept
            assert client.healthy, name
            result = await thread.run("go")  # the same child, the next turn
            assert result.status == "completed" and result.final_response.startswith("after"), name
            figures.count("unencodable inputs", "refused before an id was taken (AppServerClient + Thread)")
    with pytest.raises(UnencodableInput):
        await codexmini.run("\ud800", launch=Launch(codex_bin=exe))  # one call: refused, its child closed
    figures.count("unencodable inputs", "refused before an id was taken (AppServerClient + Thread)")


#: Answers a caller gives that no wire carries, for each question :class:`edges.Asks` asks.
ANSWERS = [
    ("user_input", {"answers": {"color": {"answers": ["\ud800"]}}}, Reply("accept", answers={"color": "Red \ud800"})),
    ("user_input", {"answers": {"color": {"answers": {"Red"}}}}, Reply("accept", answers={"color": ["\udfff"]})),
    ("elicitation", {"action": "accept", "content": {"x": {1}}}, Reply("accept", content={"x": {1, 2}})),
    ("elicitation", {"action": "accept", "content": float("nan")}, Reply("accept", content={"n": float("inf")})),
]
FAIL_CLOSED = {
    "user_input": {"result": {"answers": {}}},
    "elicitation": {"result": {"action": "decline"}},
}


@pytest.mark.parametrize("variant, result, reply", ANSWERS, ids=[f"{a[0]}-{i}" for i, a in enumerate(ANSWERS)])
async def test_unencodable_answers_reach_codex_as_the_fail_closed_answer(variant, result, reply, tmp_path):
    exe = FakeAppServer("edges:Asks", variant).executable(str(tmp_path), pythonpath=[hostile.HERE])

    # Through the client: a handler that answers what cannot be sent.
    async def handler(method: str, params: Any) -> Any:
        return result

    async with await AppServerClient.start(Launch(codex_bin=exe)) as client:
        client.on_request(edges.USER_INPUT if variant == "user_input" else edges.ELICITATION, handler)
        thread = await Thread.start(client)
        for _ in range(2):  # and again: the conversation goes on
            events = []
            async with thread.turn("go") as turn:
                async for event in turn:
                    events.append(event)
            said = [e.item["text"] for e in events if isinstance(e, ItemCompleted) and e.item["type"] == "agentMessage"]
            assert json.loads(said[-1][len("after ") :]) == FAIL_CLOSED[variant]
            assert turn.completed.status == "completed" and client._conn.open_requests == {}
    figures.count("unencodable inputs", "handler answers sent as the fail-closed answer instead (client)")

    # Through the Agent: a Reply whose answers or content cannot be sent.
    async def approve(request: Any) -> Reply:
        return reply

    path = str(tmp_path / "session.jsonl")
    with SessionLog.open(path) as log:
        config = AgentConfig(launch=Launch(codex_bin=exe), cwd=str(tmp_path), skills=False)
        async with Agent(log, config, approvals=approve) as agent:
            ends = [await agent.run("go"), await agent.run("again")]
    assert [e["reason"] for e in ends] == ["completed", "completed"]
    logged = read_log(path).events
    assert [e["data"]["decision"] for e in logged if e["type"] == "approval/decision"] == ["decline", "decline"]
    figures.count("unencodable inputs", "Reply answers sent as the fail-closed answer instead (Agent)", 2)


#: What a caller might give an Agent as a message that no log and no wire carries.
MESSAGES = [
    "a lone \ud800 in a prompt",
    [{"type": "text", "text": "a lone \udfff in a block"}],
    [{"type": "text", "text": "fine"}, {"type": "text", "text": "\ud83d on its own"}],
]


async def test_unencodable_agent_messages_are_refused_before_anything_is_queued_or_logged(tmp_path):
    exe = FakeAppServer("hostile:Hostile", "").executable(str(tmp_path), pythonpath=[hostile.HERE])
    path = str(tmp_path / "session.jsonl")
    with SessionLog.open(path) as log:
        config = AgentConfig(launch=Launch(codex_bin=exe), cwd=str(tmp_path), skills=False)
        async with Agent(log, config) as agent:
            assert (await agent.run("go"))["reason"] == "completed"
            logged = len(log.events)
            refused = 0
            for message in MESSAGES:
                for give in (agent.run, agent.steer):
                    with pytest.raises(UnencodableInput, match=r"^a user message: ") as caught:
                        await give(message)
                    assert isinstance(caught.value, ConfigError) and "[" in caught.value.path
                    refused += 1
                for queue in (agent.followup, agent.inject):
                    with pytest.raises(UnencodableInput):
                        queue(message)
                    refused += 1
            assert len(log.events) == logged and len(agent.inbox) == 0  # nothing logged, nothing queued
            assert (await agent.run("again"))["reason"] == "completed"  # and the session goes on
    assert [e["type"] for e in read_log(path).events].count("turn/end") == 2
    figures.count("unencodable inputs", "Agent messages refused before anything was queued or logged", refused)
