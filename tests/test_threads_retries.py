"""A turn whose codex cannot reach its model ends: Timeouts.model_retry.

codex retries a model it cannot reach for ever (0.171.0 says "Reconnecting...
waiting for network" at growing intervals; see the live test at the end).  A
turn that sees only retry notices for longer than the client's
``Timeouts.model_retry`` is interrupted and raises :class:`ModelUnreachable`
with codex's reason; anything else arriving is progress and starts the count
again.  The fakes here are :class:`CodexLike` behaviours in memory.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from typing import Any, Mapping

import pytest

from codexmini import (
    Agent,
    AgentConfig,
    AgentMessageDelta,
    AppServerClient,
    ConfigError,
    Launch,
    ModelEndpoint,
    ModelUnreachable,
    RetryingError,
    SessionLog,
    Thread,
    Timeouts,
    TurnTimeout,
    run,
)
from codexmini.testing import CodexLike, FakeAppServer
from codexmini.testing.codex_like import agent_message
from codexmini.testing.live import LiveCodex
from conformance.versions import live_codex

NETWORK = {
    "message": "Reconnecting... waiting for network",
    "codexErrorInfo": {"responseStreamDisconnected": {"httpStatusCode": None}},
    "additionalDetails": "Connection failed: error sending request",
}


class Unreachable(CodexLike):
    """codex retrying a model it cannot reach: retry notices, nothing else, until interrupted."""

    async def script(self, params: Mapping[str, Any]) -> None:
        self.error("", True, NETWORK)
        self.error("", True, NETWORK)


class Recovers(CodexLike):
    """Retries, each followed by progress before the deadline, over longer than the deadline in all."""

    async def script(self, params: Mapping[str, Any]) -> None:
        for n in range(2):
            self.error("", True, NETWORK)
            await asyncio.sleep(PAUSE)
            self.message(f"msg_{n}", f"part {n}")
        self.finish(items=[agent_message("msg_1", "part 1")])


class DeltaAfterRetry(CodexLike):
    """A retry notice, then the answer's deltas straight away (no item/started first)."""

    async def script(self, params: Mapping[str, Any]) -> None:
        self.error("", True, NETWORK)
        self.delta("msg_1", "back ")
        self.delta("msg_1", "again")
        self.finish(items=[agent_message("msg_1", "back again")])


class TwoRetriesThenDelta(CodexLike):
    """Two retry notices, then a delta, then the end."""

    async def script(self, params: Mapping[str, Any]) -> None:
        self.error("", True, NETWORK)
        self.error("", True, NETWORK)
        self.delta("msg_1", "back")
        self.finish(items=[agent_message("msg_1", "back")])


#: The deadline of these tests and the pause between a retry and the progress
#: after it: a wide margin either way, on a loaded machine too.
DEADLINE, PAUSE = 4.0, 1.0


def launch(behaviour: Any, **timeouts: Any) -> Launch:
    return Launch(launcher=FakeAppServer(behaviour).launch, timeouts=Timeouts(**timeouts))


def test_threads_retries_timeouts_model_retry_is_a_positive_number_or_none():
    assert Timeouts().model_retry == 120.0
    assert Timeouts(model_retry=None).model_retry is None
    for bad in (0, -1.0, "60", True):
        with pytest.raises(ConfigError, match="Timeouts.model_retry must be a positive number of seconds"):
            Timeouts(model_retry=bad)


async def test_threads_retries_a_model_codex_cannot_reach_ends_the_turn_with_codex_reason(caplog):
    async with await AppServerClient.start(launch(Unreachable, model_retry=0.2)) as client:
        thread = await Thread.start(client)
        turn = thread.turn("hello")
        seen = []
        with caplog.at_level(logging.WARNING, logger="codexmini.thread"):
            with pytest.raises(ModelUnreachable) as caught:
                async with turn:
                    async for event in turn:
                        seen.append(event)
    error = caught.value
    assert error.reason == "Reconnecting... waiting for network (Connection failed: error sending request)"
    assert (error.retries, error.turn_id, error.timeout) == (2, turn.id, 0.2)
    assert error.info == NETWORK["codexErrorInfo"]
    assert "could not be reached: codex retried it 2 time(s) over 0.2s" in str(error)
    assert [type(e) for e in seen if isinstance(e, RetryingError)] == [RetryingError, RetryingError]
    # The turn was interrupted on the server, and ended so.
    assert turn.done and turn.completed is not None and turn.completed.status == "interrupted"
    assert "codex is retrying the model (#1): Reconnecting... waiting for network (Connection failed" in caplog.text
    assert "giving up: Reconnecting... waiting for network" in caplog.text


async def test_threads_retries_progress_starts_the_count_again():
    async with await AppServerClient.start(launch(Recovers, model_retry=DEADLINE)) as client:
        thread = await Thread.start(client)
        result = await thread.run("hello")  # longer than DEADLINE in all, never that long retrying
    assert result.status == "completed" and result.final_response == "part 1"


async def test_threads_retries_without_a_bound_the_idle_timeout_still_applies():
    async with await AppServerClient.start(launch(Unreachable, model_retry=None)) as client:
        thread = await Thread.start(client)
        with pytest.raises(TurnTimeout):
            await thread.turn("hello", idle_timeout=0.2).run()


async def test_threads_retries_a_shorter_idle_timeout_wins():
    async with await AppServerClient.start(launch(Unreachable, model_retry=60)) as client:
        thread = await Thread.start(client)
        with pytest.raises(TurnTimeout):
            await thread.turn("hello", idle_timeout=0.2).run()


async def test_threads_retries_the_bookkeeping_counts_from_the_first_retry_until_progress():
    async with await AppServerClient.start(launch(CodexLike)) as client:
        thread = await Thread.start(client)
        turn = thread.turn("hello")
        retry = RetryingError("again", None, None)
        turn._after(retry)
        since, count, last = turn._retrying  # type: ignore[misc]
        turn._after(RetryingError("still", "why", None))
        assert turn._retrying is not None and turn._retrying[:2] == (since, count + 1)
        assert turn._retrying[2].details == "why"
        turn._after(None)  # a notification that is no event is no progress
        assert turn._retrying is not None
        await turn.run()  # the turn's own events are progress
        assert turn._retrying is None
        thread.close()


async def test_threads_retries_the_agent_logs_the_turn_as_model_unreachable(tmp_path):
    with SessionLog.open(str(tmp_path / "s.jsonl")) as log:
        config = AgentConfig(cwd=str(tmp_path), launch=launch(Unreachable, model_retry=0.2), skills=False)
        async with Agent(log, config) as agent:
            end = await agent.run("hello")
            events = list(log.events)
    assert end["reason"] == "error"
    assert end["error"] == {
        "message": "Reconnecting... waiting for network (Connection failed: error sending request)",
        "code": "MODEL_UNREACHABLE",
    }
    error = [e for e in events if e["type"] == "agent/error"][-1]["data"]
    assert error["cause"][0].startswith("ModelUnreachable: the model could not be reached")
    assert [e["data"]["reason"] for e in events if e["type"] == "step/end"] == ["error"]


def _refusing_port() -> int:
    with socket.socket() as sock:  # bound and closed at once: nothing listens there
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.live
async def test_threads_retries_live_a_model_nobody_serves_ends_within_the_bound():
    found = live_codex()
    if isinstance(found, str):
        pytest.skip(found)
    with LiveCodex({"rules": [], "default": {}}, codex_bin=found.path, prefix="codexmini-unreachable-") as live:
        unreachable = ModelEndpoint(f"http://127.0.0.1:{_refusing_port()}/v1", "sk-test")
        launch = live.launch
        launch = Launch(
            codex_bin=launch.codex_bin,
            endpoint=unreachable,
            env=launch.env,
            codex_home=launch.codex_home,
            cwd=live.ws,
            launcher=launch.launcher,
            timeouts=Timeouts(model_retry=5),
        )
        with pytest.raises(ModelUnreachable) as caught:
            await run("hello", cwd=live.ws, launch=launch, model="gpt-fake")
        assert live.alive() == []
    assert caught.value.retries >= 1 and caught.value.reason


async def test_threads_retries_a_delta_is_progress_when_iterated_and_in_bursts(tmp_path):
    async with await AppServerClient.start(launch(DeltaAfterRetry)) as client:
        thread = await Thread.start(client)
        turn = thread.turn("hello")
        retried = False
        async with turn:
            async for event in turn:
                if isinstance(event, RetryingError):
                    assert turn._retrying is not None
                    retried = True
                elif retried:
                    assert isinstance(event, AgentMessageDelta) and turn._retrying is None  # the delta ended it
                    break
        assert turn._retrying is None
        thread.close()
    with SessionLog.open(str(tmp_path / "s.jsonl")) as log:  # the agent reads in bursts
        config = AgentConfig(cwd=str(tmp_path), launch=launch(DeltaAfterRetry), skills=False)
        async with Agent(log, config) as agent:
            end = await agent.run("hello")
    assert end["reason"] == "completed"


async def test_threads_retries_a_deadline_passed_while_the_consumer_was_busy_ends_the_turn_at_once():
    async with await AppServerClient.start(launch(Unreachable, model_retry=0.05)) as client:
        thread = await Thread.start(client)
        turn = thread.turn("hello")
        with pytest.raises(ModelUnreachable):
            async with turn:
                async for event in turn:
                    if isinstance(event, RetryingError) and turn._retrying and turn._retrying[1] == 2:
                        await asyncio.sleep(0.2)  # busy past the deadline: the next wait gives up at once


async def test_threads_retries_a_delta_read_in_a_burst_ends_the_retrying():
    async with await AppServerClient.start(launch(TwoRetriesThenDelta)) as client:
        thread = await Thread.start(client)
        turn = thread.turn("hello")
        while not isinstance(await turn.__anext__(), RetryingError):  # up to the first retry
            pass
        while thread._sub.pending() < 2:  # the second retry and the delta are in
            await asyncio.sleep(0.001)
        burst = await turn._burst()  # the second retry, then the delta without a wait
        assert [type(e).__name__ for e in burst][:2] == ["RetryingError", "AgentMessageDelta"]
        assert turn._retrying is None
        await turn.run()
        thread.close()
