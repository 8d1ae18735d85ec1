"""codex's managed daemon (``codexmini._daemon``), against the real binary (``-m live``).

``connect_daemon`` starts the daemon for a ``CODEX_HOME`` (or reuses the one
running) and connects to its control socket; a turn through it streams typed
events and answers an approval; the daemon outlives its client and a second
client finds it (``start=False``); ``stop_daemon`` stops it and the updater
``daemon stop`` leaves behind, so nothing of it is left running.  What the
daemon would ignore (``-c`` items, an endpoint) is refused up front.
"""

from __future__ import annotations

import os
from typing import Any, Iterator, List

import pytest

from codexmini import (
    AgentMessageDelta,
    ConfigError,
    Launch,
    ModelEndpoint,
    StartFailed,
    Thread,
    Timeouts,
    connect_daemon,
    stop_daemon,
)
from codexmini._daemon import _stop_updater
from codexmini.testing.live import LiveCodex
from conformance.versions import live_codex

SCRIPT = {
    "rules": [
        {
            "when": {"user_contains": "run it"},
            "times": 1,
            "respond": {
                "output": [
                    {
                        "type": "function_call",
                        "call_id": "call_1",
                        "name": "exec_command",
                        "arguments": {
                            "cmd": "echo from-the-daemon",
                            "yield_time_ms": 30000,
                            "sandbox_permissions": "require_escalated",
                        },
                    }
                ]
            },
        }
    ],
    "default": {"output": [{"type": "message", "id": "msg_1", "deltas": ["Hello ", "from the daemon."]}]},
}


@pytest.fixture
def live() -> Iterator[LiveCodex]:
    found = live_codex()
    if isinstance(found, str):
        pytest.skip(found)
    with LiveCodex(SCRIPT, codex_bin=found.path, prefix="codexmini-daemon-") as live:
        yield live
        assert live.rooted() == []  # stop_daemon left nothing of the daemon running


@pytest.mark.live
@pytest.mark.timeout_s(240)
async def test_daemon_a_turn_through_it_then_a_second_client_then_stopped(live):
    launch = live.daemon_launch()
    with pytest.raises(StartFailed, match="daemon version exited 1"):
        await connect_daemon(launch, start=False)  # none runs yet
    asked: List[Any] = []

    async def approve(method: str, params: Any) -> Any:
        asked.append(method)
        return {"decision": "accept"}

    try:
        try:
            client = await connect_daemon(launch)
        except StartFailed as exc:
            if "standalone" not in str(exc):
                raise
            pytest.skip(f"this codex's daemon runs only from the standalone install (from the network): {exc}")
        async with client:
            assert client.url is not None and client.url.endswith("app-server-control.sock")
            client.on_request("item/commandExecution/requestApproval", approve)
            thread = await Thread.start(client, cwd=live.ws, model="gpt-fake", approval_policy="on-request")
            events = [event async for event in thread.turn("hello")]
            assert "".join(e.delta for e in events if isinstance(e, AgentMessageDelta)) == "Hello from the daemon."
            ran = await thread.run("run it")
            assert asked == ["item/commandExecution/requestApproval"] and ran.status == "completed"
        assert live.rooted() != []  # the daemon outlives its client
        async with await connect_daemon(launch, start=False) as again:  # found running
            assert (await Thread.start(again, cwd=live.ws, model="gpt-fake")).id
    finally:
        status = await stop_daemon(launch)
    assert status["status"] == "stopped"
    assert (await stop_daemon(launch))["status"] == "notRunning"


@pytest.mark.parametrize(
    "launch, ignored",
    [
        (Launch(config=["model=x"]), "config"),
        (Launch(args=["--strict-config"]), "args"),
        (Launch(endpoint=ModelEndpoint("http://127.0.0.1:9/v1")), "endpoint"),
    ],
)
async def test_daemon_refuses_what_it_would_ignore(launch, ignored):
    with pytest.raises(ConfigError, match=f"the codex daemon ignores {ignored}: it reads"):
        await connect_daemon(launch)


def test_daemon_updater_is_ended_only_if_it_is_one(tmp_path):
    missing = tmp_path / "none.pid"
    _stop_updater(str(missing))  # no file: nothing to do
    garbage = tmp_path / "garbage.pid"
    garbage.write_text("not json")
    _stop_updater(str(garbage))
    mine = tmp_path / "mine.pid"
    mine.write_text('{"pid": %d}' % __import__("os").getpid())  # a pid that is no updater: left alone
    _stop_updater(str(mine))


@pytest.mark.live
@pytest.mark.timeout_s(240)
async def test_daemon_left_running_is_ended_by_the_live_harness():
    found = live_codex()
    if isinstance(found, str):
        pytest.skip(found)
    live = LiveCodex(SCRIPT, codex_bin=found.path, prefix="codexmini-daemon-")
    try:
        try:
            client = await connect_daemon(live.daemon_launch())
        except StartFailed as exc:
            if "standalone" not in str(exc):
                raise
            pytest.skip(f"this codex's daemon runs only from the standalone install: {exc}")
        await client.close()
        left = live.rooted()
        assert left  # the daemon and its updater, running from the scratch root
    finally:
        live.close()  # no stop_daemon: the harness ends them
    assert [pid for pid in left if os.path.exists(f"/proc/{pid}") and not _zombie(pid)] == []


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def fake_codex(tmp_path: Any, body: str) -> str:
    path = tmp_path / "codex"
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return str(path)


async def test_daemon_a_command_that_hangs_or_says_nothing_is_start_failed(tmp_path):
    hangs = Launch(codex_bin=fake_codex(tmp_path, "exec sleep 60"), timeouts=Timeouts(initialize=0.2))
    with pytest.raises(StartFailed, match="daemon start did not end within 0.2s"):
        await connect_daemon(hangs)
    mute = Launch(codex_bin=fake_codex(tmp_path, "echo not json; echo a warning >&2"))
    with pytest.raises(StartFailed, match="daemon stop exited 0: a warning"):
        await stop_daemon(mute)
