"""Regression tests for what the reliability work fixed, one each, in memory.

The suite's table and fault tests show these over real pipes; here each fix
is pinned where it lives, with the in-memory fake (milliseconds, no process):
a frame too deep to re-measure, a flood of turn-shaping notifications, a
handler that ignores its cancel, a ``turn/steer`` answer of the wrong shape,
an agent whose launcher fails with a bug.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, List

import pytest

from codexmini import (
    Agent,
    AgentConfig,
    AppServerClient,
    Launch,
    Limits,
    SessionLog,
    Thread,
    Timeouts,
    _rpc,
    _wire,
    read_log,
)
from codexmini.testing import CodexLike, FakeAppServer, ServerSide
from codexmini.testing.codex_like import THREAD

APPROVAL = "item/commandExecution/requestApproval"
APPROVAL_PARAMS = {"threadId": THREAD, "turnId": "t", "itemId": "call_1", "startedAtMs": 1}


def test_fixes_a_frame_too_deep_to_measure_is_skipped_not_raised():
    # json.loads parsed it; json.dumps (the unclaimed buffer measures frames,
    # a skip previews them), called a few stack frames deeper, may not.  The
    # decoder now refuses what nests deeper than MAX_DEPTH whatever the stack,
    # so a frame that arrives as bytes never reaches that window (the window
    # itself is forced in tests/test_rpc.py); around the limit and far past
    # it, each line is one event, and nothing of a skipped one is held.
    limit = _wire.MAX_DEPTH
    for depth in list(range(limit - 4, limit + 2)) + list(range(900, 1100, 7)):
        inner = "[" * depth + "]" * depth
        note = '{"method":"x","params":{"threadId":"t","a":%s}}' % inner  # depth + 2 levels
        for line in (note, '{"foo":%s}' % inner):
            conn = _rpc.Connection()
            (event,) = conn.receive(line.encode() + b"\n")  # never raises
            if line is note and depth + 2 <= limit:
                assert isinstance(event, _rpc.Notification) and conn.unclaimed[:2] == (1, 1)  # held, measured
            else:
                assert isinstance(event, _rpc.Skipped) and conn.unclaimed == (0, 0, 0)
            if depth + 2 > limit and line is note:
                assert event.error.reason == f"invalid JSON: nested too deeply (more than {limit} levels)"


async def flood(server: ServerSide) -> None:
    await server.handshake()
    for i in range(1000):
        item = {
            "type": "agentMessage",
            "id": f"m{i}",
            "text": "",
            "phase": None,
            "memoryCitation": None,
            "delivery": None,
        }
        server.notify("item/started", {"threadId": THREAD, "turnId": "t", "item": item, "startedAtMs": 1})
    async for request in server.requests():
        server.send({"id": request["id"], "result": {"data": [], "nextCursor": None}})


async def test_fixes_a_flood_of_turn_shaping_notifications_is_bounded(caplog):
    # item/started passes a full dropping queue (it shapes the turn), but not forever.
    async with await AppServerClient.start(
        Launch(launcher=FakeAppServer(flood).launch, limits=Limits(queue_size=100, overflow="drop"))
    ) as client:
        sub = client.subscribe(THREAD)
        await client.request("thread/loaded/list", {})
        assert sub.pending() == 200
        assert sub.dropped == client.stats["dropped"] == 1000 - 200
        sub.close()
    assert "is full" in caplog.text


async def approval_then_report(server: ServerSide) -> None:
    await server.handshake()
    server.send({"id": 0, "method": APPROVAL, "params": APPROVAL_PARAMS})
    answer = await server.recv(timeout=10)
    server.notify("configWarning", {"summary": json.dumps(answer), "details": None})
    await server.drain()


async def test_fixes_a_handler_that_ignores_its_cancel_does_not_delay_the_answer():
    release = None
    ended: List[str] = []

    async def stubborn(method: str, params: Any) -> Any:
        while True:
            try:
                await release.wait()
                ended.append("released")
                return {"decision": "accept"}
            except asyncio.CancelledError:
                continue  # ignores its cancel

    release = asyncio.Event()
    client = await AppServerClient.start(
        Launch(launcher=FakeAppServer(approval_then_report).launch, timeouts=Timeouts(handler=0.05))
    )
    client.on_request(APPROVAL, stubborn)
    answers = []
    client.on_answer(lambda *a: answers.append(a[3]))
    try:
        report = await client.subscribe(client.GLOBAL).get(timeout=10)
        assert json.loads(report["params"]["summary"]) == {"id": 0, "result": {"decision": "decline"}}
        assert answers == ["timeout"] and ended == []  # answered while the handler still ran
    finally:
        release.set()
        await client.close()
    assert ended == ["released"]


class SteerShapes(CodexLike):
    async def on_turn_steer(self, rid: Any, params: Any) -> None:
        self.write({"id": rid, "result": []})  # not an object


@pytest.mark.frame_problems("turn/steer")
async def test_fixes_a_steer_answer_that_is_not_an_object_keeps_the_expected_turn():
    async with await AppServerClient.start(Launch(launcher=FakeAppServer(SteerShapes).launch)) as client:
        thread = await Thread.start(client)
        result = await thread.steer("more", "turn-9")
    assert result == "turn-9"


async def test_fixes_an_agent_whose_launcher_has_a_bug_logs_the_turn(tmp_path, caplog):
    async def broken(argv: Any, env: Any, cwd: Any) -> Any:
        raise RuntimeError("the launcher's own bug")

    path = str(tmp_path / "session.jsonl")

    with SessionLog.open(path) as log:
        async with Agent(log, AgentConfig(launch=Launch(launcher=broken), cwd=str(tmp_path), skills=False)) as agent:
            end = await agent.run("hello")
    assert end["reason"] == "error" and end["error"]["code"] == "CODEX_UNAVAILABLE"
    assert "the launcher's own bug" in end["error"]["message"]
    types = [e["type"] for e in read_log(path).events]
    assert types == [
        "session/header",
        "turn/start",
        "step/start",
        "user/message",
        "step/end",
        "agent/error",
        "turn/end",
    ]
    assert "cannot start codex" in caplog.text
