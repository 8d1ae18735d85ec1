"""Nothing wedges: writes codex does not take, handlers that fail, forks, silent children.

Over real processes (fake codex children over real pipes): every write to a
child that stopped reading ends within ``Timeouts.write`` (a notification,
one queued behind it, a request, the answer to an approval); every way a
server-request handler can fail still gets codex its fail-closed answer; a
process that forks with a ``codexmini.sync`` client open has a child that
is refused at once and exits at once; an agent whose child goes silent
mid-turn ends the turn and runs the next on a fresh child.  Each figure is
counted by the test whose assertions back it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
from typing import Any, Mapping

import figures
import pytest
from support import behaviours as b
from support.fake_client import reported, spawned, until

from codexmini import Agent, AgentConfig, Launch, SessionLog, Timeouts, WriteTimeout, read_log
from codexmini.testing import CodexLike, FakeAppServer

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.frame_problems("unknown method 'fake/big'", "unknown method 'fake/queued'")
async def test_wedges_every_write_to_a_child_that_stopped_reading_ends_within_its_bound(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="codexmini.client")
    client = await spawned(tmp_path, "approval_then_stop_reading", timeouts=Timeouts(write=0.3, close=0.5))
    try:
        client.on_request(b.APPROVAL, lambda method, params: asyncio.sleep(0, {"decision": "accept"}))
        big = asyncio.ensure_future(client.notify("fake/big", {"blob": "x" * 4_000_000}))
        queued = asyncio.ensure_future(client.notify("fake/queued", {}))
        ended = 0
        for write in (big, queued, client.request("thread/loaded/list", {}, timeout=60)):
            with pytest.raises(WriteTimeout):
                await asyncio.wait_for(write, 60)
            ended += 1
        assert await until(lambda: "not sent: codex did not take answer" in caplog.text)
        ended += 1
        assert not client.healthy
    finally:
        await client.close()
    figures.count("wedges", "writes to a child that stopped reading, ended within Timeouts.write", ended)


def _raises(method: str, params: Any) -> Any:
    raise RuntimeError("a handler with a bug")


def _plain(method: str, params: Any) -> Any:
    return {"decision": "accept"}


def _returning(value: Any) -> Any:
    async def handler(method: str, params: Any) -> Any:
        return value

    return handler


@pytest.mark.parametrize(
    "handler",
    [_raises, _plain, _returning({"decision": {"a set"}}), _returning({"decision": object()}), _returning("\ud800")],
    ids=["raises", "no-awaitable", "a-set", "an-object", "lone-surrogate"],
)
async def test_wedges_a_failing_handler_still_answers_codex_over_a_real_pipe(tmp_path, handler):
    client = await spawned(tmp_path, "approval", initialize=False)
    client.on_request(b.APPROVAL, handler)
    sub = client.subscribe(b.THREAD)
    await client.initialize()
    try:
        assert await reported(sub) == {"id": 0, "result": {"decision": "decline"}}
        assert client.stats["handler_errors"] == 1
    finally:
        await client.close()
    figures.count("wedges", "server requests whose handler failed, answered fail-closed")


def test_wedges_a_fork_with_a_sync_client_open_hangs_neither_process(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(TESTS), TESTS]))
    script = os.path.join(TESTS, "support", "fork_child.py")
    done = subprocess.run(
        [sys.executable, "-W", "ignore::DeprecationWarning", script],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=str(tmp_path),
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout)
    assert said["child"].startswith("ClientClosed: this codexmini.sync object belongs to process ")
    assert said["child"].endswith("a forked child cannot use it (open a new one in the child)")
    assert (said["before"], said["exit"], said["after"]) == (True, 0, "Hello")  # the child exited 0, at once
    figures.count("wedges", "forks with a sync.Client open: child refused and exited at once, parent unharmed")


class SilentFirst(CodexLike):
    """The first child goes silent mid-turn (a delta, then it stops reading and sending)."""

    silenced = 0

    async def script(self, params: Mapping[str, Any]) -> None:
        if SilentFirst.silenced:
            return await super().script(params)
        SilentFirst.silenced += 1
        self.delta("msg_1", "half")
        self.server.stop_reading()
        await asyncio.sleep(3600)


async def test_wedges_an_agent_whose_child_goes_silent_ends_the_turn_and_replaces_it(tmp_path):
    SilentFirst.silenced = 0
    fake = FakeAppServer(SilentFirst)
    launch = Launch(launcher=fake.launch, timeouts=Timeouts(close=0.2))
    config = AgentConfig(cwd=str(tmp_path), launch=launch, skills=False, liveness_s=0.2, interrupt_grace=0.2)
    path = str(tmp_path / "s.jsonl")
    with SessionLog.open(path) as log:
        async with Agent(log, config) as agent:
            first = await agent.run("hello")
            second = await agent.run("again")
    assert (first["reason"], first.get("error", {}).get("code"), second["reason"]) == (
        "error",
        "CODEX_SILENT",
        "completed",
    )
    assert len(fake.launches) == 2
    assert [e["data"]["reason"] for e in read_log(path).events if e["type"] == "turn/end"] == ["error", "completed"]
    figures.count("wedges", "silent children ended by AgentConfig.liveness_s and replaced")
