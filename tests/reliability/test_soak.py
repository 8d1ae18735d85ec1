"""Soak: 2,000 turns on one client, 200 agent turns on one log -- nothing grows.

Every turn of :class:`hostile.Steady` carries a message, an approval, usage,
a line that is not JSON and a notification for a thread nobody claims.  The
figures are taken after turn 100 and after the last one: RSS, open fds,
asyncio tasks and every internal buffer of the client (pending requests and
their futures, open server requests and their handler tasks, subscriptions
and what they hold, the not-yet-claimed buffer, the settled-id memory, the
decoder's partial line, the kept protocol errors).  Flat means: the buffers
that drain are exactly 0 at both points, the bounded ones are equal at both
points (and within their bounds), fds and tasks are equal, and RSS grows by
less than :data:`RSS_SLACK_MB` -- a bound in megabytes, not a timing.

The 2,000 turns run in memory (the fake in the same loop, bytes encoded and
decoded as on a pipe); a shorter run goes over a real pipe to a child process.
Frames are not schema-validated here (the conformance tap would be the thing
measured); the other suites validate the same shapes.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any, Dict

import figures
import hostile
import pytest

from codexmini import Agent, AgentConfig, AppServerClient, Launch, SessionLog, Thread, _client, _rpc, read_log
from codexmini.testing import FakeAppServer
from codexmini.testing.fake_socket import serve
from codexmini.testing.live import scratch_dir

TURNS = 2000
AGENT_TURNS = 200
PIPE_TURNS = 200
CHECKPOINT = 100
RSS_SLACK_MB = 16.0


def rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    raise AssertionError("no VmRSS in /proc/self/status")  # pragma: no cover - Linux has it


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def buffers(client: AppServerClient) -> Dict[str, Any]:
    """Every buffer the client holds between turns."""
    conn = client._conn
    return {
        "futures": len(client._futures),
        "inflight handlers": len(client._inflight),
        "pending requests": len(conn.pending),
        "open server requests": len(conn.open_requests),
        "subscriptions": sum(len(s) for s in client._subs.values()),
        "queued notifications": sum(s.pending() for subs in client._subs.values() for s in subs),
        "claimed threads": len(conn._claimed),
        "unclaimed (threads, frames, bytes)": conn.unclaimed,
        "decoder partial line": conn._decoder.buffered,
        "protocol errors kept": len(client.protocol_errors),
    }


DRAINED = (
    "futures",
    "inflight handlers",
    "pending requests",
    "open server requests",
    "subscriptions",
    "queued notifications",
    "claimed threads",
    "decoder partial line",
)


def snapshot(client: AppServerClient) -> Dict[str, Any]:
    return {
        "rss_mb": round(rss_mb(), 1),
        "fds": open_fds(),
        "tasks": len(asyncio.all_tasks()),
        "settled ids": len(client._conn._settled),
        **buffers(client),
    }


def assert_flat(at: Dict[str, Any], end: Dict[str, Any], client: AppServerClient) -> None:
    for key in DRAINED:
        assert at[key] == end[key] == 0, (key, at[key], end[key])
    assert at["fds"] == end["fds"]
    assert at["tasks"] == end["tasks"]
    assert at["protocol errors kept"] == end["protocol errors kept"] == client.protocol_errors.maxlen
    assert at["unclaimed (threads, frames, bytes)"] == end["unclaimed (threads, frames, bytes)"]
    threads, frames, size = end["unclaimed (threads, frames, bytes)"]
    assert threads == client._conn.unclaimed_threads and size <= client._conn.unclaimed_bytes
    assert end["settled ids"] <= _rpc.SETTLED_MEMORY
    assert end["rss_mb"] - at["rss_mb"] < RSS_SLACK_MB, (at["rss_mb"], end["rss_mb"])


@pytest.fixture
def unobserved(monkeypatch, caplog):
    """No conformance tap on these clients, and codexmini's warnings (a
    skipped line per turn) not kept in memory by pytest: what grows, if
    anything, is codexmini's."""
    monkeypatch.setattr(_client, "_observers", [])
    caplog.set_level(logging.CRITICAL, logger="codexmini")


def record(title: str, at: Dict[str, Any], end: Dict[str, Any], turns: int) -> None:
    def move(key: str, unit: str = "") -> str:
        return f"{at[key]} -> {end[key]}{unit}"

    drained = ", ".join(DRAINED)
    figures.record(
        "soak",
        f"{title}, after turn {CHECKPOINT} -> after turn {turns}",
        f"RSS {move('rss_mb', ' MB')}; fds {move('fds')}; tasks {move('tasks')}; "
        f"settled ids {move('settled ids')} (bounded at {_rpc.SETTLED_MEMORY}); "
        f"unclaimed (threads, frames, bytes) {move('unclaimed (threads, frames, bytes)')}; "
        f"protocol errors kept {move('protocol errors kept')}; {drained}: all 0 -> 0"
        + (f"; log events {move('log events')}" if "log events" in at else ""),
    )


async def client_soak(client: AppServerClient, turns: int) -> Dict[int, Dict[str, Any]]:
    seen: Dict[int, Dict[str, Any]] = {}
    for n in range(1, turns + 1):
        thread = await Thread.start(client)
        completed = await thread.turn("go").run()
        assert completed.status == "completed" and [i["id"] for i in completed.items][-1] == "msg_1"
        thread.close()
        while client._unsubscribing:  # a connection unsubscribes: its answer comes back
            await asyncio.sleep(0)
        if n in (CHECKPOINT, turns):
            seen[n] = snapshot(client)
    assert client.stats["malformed"] == turns  # one skipped line per turn: every one counted
    return seen


def test_soak_2000_turns_on_one_client_in_memory(unobserved):
    async def main() -> Dict[int, Dict[str, Any]]:
        async with await AppServerClient.start(Launch(launcher=FakeAppServer(hostile.Steady).launch)) as client:
            seen = await client_soak(client, TURNS)
            assert_flat(seen[CHECKPOINT], seen[TURNS], client)
            return seen

    seen = asyncio.run(main())
    record("client, in memory", seen[CHECKPOINT], seen[TURNS], TURNS)
    figures.count("soak", "turns on one client (in memory)", TURNS)


def test_soak_200_turns_on_one_client_over_a_real_pipe(unobserved, tmp_path):
    exe = FakeAppServer("hostile:Steady").executable(str(tmp_path), pythonpath=[hostile.HERE])

    async def main() -> Dict[int, Dict[str, Any]]:
        async with await AppServerClient.start(Launch(codex_bin=exe)) as client:
            seen = await client_soak(client, PIPE_TURNS)
            assert_flat(seen[CHECKPOINT], seen[PIPE_TURNS], client)
            return seen

    seen = asyncio.run(main())
    record("client, real pipe", seen[CHECKPOINT], seen[PIPE_TURNS], PIPE_TURNS)
    figures.count("soak", "turns on one client (real pipe)", PIPE_TURNS)


@pytest.mark.parametrize("listen", ["ws", "unix"])
def test_soak_200_turns_on_one_connection_over_a_real_websocket(unobserved, listen):
    root = scratch_dir("codexmini-soak-")

    async def main() -> Dict[int, Dict[str, Any]]:
        where = "ws" if listen == "ws" else f"unix://{os.path.join(root, 'soak.sock')}"
        async with await serve(hostile.Steady, listen=where) as server:
            async with await AppServerClient.connect(server.url) as client:
                seen = await client_soak(client, PIPE_TURNS)
                assert_flat(seen[CHECKPOINT], seen[PIPE_TURNS], client)
                # The handshake, then per turn: thread/start, turn/start, the approval's answer, thread/unsubscribe.
                assert client.stats["frames_out"] == 2 + 4 * PIPE_TURNS
            assert len(server.sides) == 1  # one connection for all 200 turns
        return seen

    try:
        seen = asyncio.run(main())
    finally:
        os.rmdir(root)
    record(f"client, one {listen} connection", seen[CHECKPOINT], seen[PIPE_TURNS], PIPE_TURNS)
    figures.count("soak", f"turns on one connection ({listen})", PIPE_TURNS)


def test_soak_200_agent_turns_on_one_log(unobserved, tmp_path):
    path = str(tmp_path / "session.jsonl")
    fake = FakeAppServer(hostile.Steady)

    async def main() -> Dict[int, Dict[str, Any]]:
        seen: Dict[int, Dict[str, Any]] = {}
        config = AgentConfig(launch=Launch(launcher=fake.launch), cwd=str(tmp_path), skills=False)
        with SessionLog.open(path) as log:
            async with Agent(log, config) as agent:
                for n in range(1, AGENT_TURNS + 1):
                    end = await agent.run(f"turn {n}")
                    assert end["reason"] == "completed", end
                    if n in (CHECKPOINT, AGENT_TURNS):
                        client = agent.child.client
                        assert client is not None
                        seen[n] = {**snapshot(client), "log events": len(log.events), "inbox": len(agent.inbox.claim())}
                assert len(fake.launches) == 1  # one child for all 200 turns
        return seen

    seen = asyncio.run(main())
    at, end = seen[CHECKPOINT], seen[AGENT_TURNS]
    assert at["inbox"] == end["inbox"] == 0
    # the log is the one thing that grows, by the same events every turn
    assert end["log events"] - 1 == (at["log events"] - 1) * AGENT_TURNS // CHECKPOINT  # 1: the header
    for key in DRAINED:
        assert at[key] == end[key] == 0, key
    assert (at["fds"], at["tasks"]) == (end["fds"], end["tasks"])
    assert end["unclaimed (threads, frames, bytes)"] == at["unclaimed (threads, frames, bytes)"]
    assert end["rss_mb"] - at["rss_mb"] < RSS_SLACK_MB
    assert len(read_log(path).events) == end["log events"]
    record("agent, one log", at, end, AGENT_TURNS)
    figures.count("soak", "agent turns on one log", AGENT_TURNS)
