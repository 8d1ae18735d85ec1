"""A silent child cannot hold a turn forever: ``AgentConfig.liveness_s``.

A codex child that goes silent mid-turn (alive, no longer reading, sending
nothing) ends the turn in ``error`` (``CODEX_SILENT``) once the step's codex
turn has been silent for ``liveness_s``; what was logged before stays, and
the next turn runs on a fresh child.  The fakes are :class:`CodexLike`
behaviours in memory.
"""

from __future__ import annotations

import asyncio
from typing import Any, Mapping

import pytest

from codexmini import Agent, AgentConfig, ConfigError, Launch, SessionLog, Timeouts, read_log
from codexmini.testing import CodexLike, FakeAppServer


class SilentOnce(CodexLike):
    """The first child goes silent mid-turn: a delta, then it stops reading and sending."""

    silenced = 0

    async def script(self, params: Mapping[str, Any]) -> None:
        if SilentOnce.silenced:
            return await super().script(params)
        SilentOnce.silenced += 1
        self.delta("msg_1", "half an ans")
        self.server.stop_reading()
        await asyncio.sleep(3600)


async def test_agent_liveness_a_silent_child_ends_the_turn_and_the_next_one_gets_a_fresh_child(tmp_path):
    SilentOnce.silenced = 0
    fake = FakeAppServer(SilentOnce)
    path = str(tmp_path / "s.jsonl")
    launch = Launch(launcher=fake.launch, timeouts=Timeouts(close=0.2))
    config = AgentConfig(cwd=str(tmp_path), launch=launch, skills=False, liveness_s=0.3, interrupt_grace=0.2)
    with SessionLog.open(path) as log:
        async with Agent(log, config) as agent:
            first = await agent.run("hello")
            before = list(log.events)
            second = await agent.run("again")
    assert first["reason"] == "error" and first["error"]["code"] == "CODEX_SILENT"
    assert "was silent for 0.3s" in first["error"]["message"]
    assert second["reason"] == "completed"
    assert len(fake.launches) == 2  # the silent child was replaced
    events = read_log(path).events
    assert events[: len(before)] == before  # what the silent turn logged reads back intact
    assert [e["data"]["reason"] for e in events if e["type"] == "turn/end"] == ["error", "completed"]
    assert [e["data"]["reason"] for e in events if e["type"] == "step/end"] == ["error", "completed"]


@pytest.mark.parametrize("bad", [0, -1, float("inf"), True, "600"])
def test_agent_liveness_is_a_positive_number_of_seconds_or_none(tmp_path, bad):
    assert AgentConfig(cwd=str(tmp_path)).liveness_s == 600.0
    assert AgentConfig(cwd=str(tmp_path), liveness_s=None).liveness_s is None
    with pytest.raises(ConfigError, match="AgentConfig.liveness_s must be a positive number of seconds"):
        AgentConfig(cwd=str(tmp_path), liveness_s=bad)
