"""The agent when its session log fails under it: the turn ends with the
log's own typed error raised from ``run()`` (never a hang, never a secondary
"closed"), what was logged before stays readable, and a second writer on the
log is refused before an agent can use it.  In memory (the fake app-server);
the files and the faults are real: the kernel's ENOSPC of ``/dev/full`` under
the log's descriptor, another writer's truncation.  The same in child
processes, with permission bits and a file size limit, is the reliability
suite's (``tests/reliability/test_storage_faults.py``, ``test_one_writer.py``).
"""

from __future__ import annotations

import errno
import logging
import os
from typing import Any

import pytest

from codexmini import (
    Agent,
    AgentConfig,
    AgentMessageDelta,
    Launch,
    SessionLog,
    SessionLogChanged,
    SessionLogError,
    SessionLogLocked,
    read_log,
)
from codexmini.testing import CodexLike, FakeAppServer


def config(tmp_path: Any) -> AgentConfig:
    return AgentConfig(launch=Launch(launcher=FakeAppServer(CodexLike).launch), cwd=str(tmp_path), skills=False)


def under_dev_full(log: SessionLog) -> None:
    full = os.open("/dev/full", os.O_WRONLY)
    try:
        os.dup2(full, log._file.fileno())
    finally:
        os.close(full)


async def test_agent_log_faults_enospc_mid_turn_raises_the_real_error_from_run(tmp_path):
    path = str(tmp_path / "session.jsonl")

    def listener(event: Any) -> None:
        if isinstance(event, AgentMessageDelta):  # the answer streams: the disk is full now
            under_dev_full(log)

    with SessionLog.open(path) as log:
        async with Agent(log, config(tmp_path), on_event=listener) as agent:
            with pytest.raises(SessionLogError, match="No space left on device") as info:
                await agent.run("hello")
            assert info.value.__cause__.errno == errno.ENOSPC
            with pytest.raises(SessionLogError) as again:  # the next turn: the same error, at once
                await agent.run("again")
            assert again.value is info.value
            acknowledged = list(log.events)
    assert [e["type"] for e in acknowledged] == ["session/header", "turn/start", "step/start", "user/message"]
    assert read_log(path) == (acknowledged, [])


async def test_agent_log_faults_a_log_truncated_mid_turn_stops_the_turn(tmp_path):
    path = str(tmp_path / "session.jsonl")

    def listener(event: Any) -> None:
        if isinstance(event, AgentMessageDelta):
            os.truncate(path, 0)

    with SessionLog.open(path) as log:
        async with Agent(log, config(tmp_path), on_event=listener) as agent:
            with pytest.raises(SessionLogChanged) as info:
                await agent.run("hello")
    assert info.value.change == "truncated"
    assert os.path.getsize(path) == 0  # nothing written after the truncation


async def test_agent_log_faults_a_log_changed_before_the_first_turn_is_not_taken_for_a_missing_codex(tmp_path, caplog):
    path = str(tmp_path / "session.jsonl")
    with SessionLog.open(path) as log:
        with open(path, "ab") as other:
            other.write(b"x\n")
        async with Agent(log, config(tmp_path)) as agent:
            with caplog.at_level(logging.WARNING, logger="codexmini.agent"):
                with pytest.raises(SessionLogChanged) as info:
                    await agent.run("hello")
    assert info.value.change == "appended"
    assert "cannot start codex" not in caplog.text
    with open(path, "rb") as written:
        assert written.read() == b"x\n"


async def test_agent_log_faults_a_log_truncated_between_turns_stops_the_next_one(tmp_path):
    path = str(tmp_path / "session.jsonl")
    with SessionLog.open(path) as log:
        async with Agent(log, config(tmp_path)) as agent:
            assert (await agent.run("hello"))["reason"] == "completed"
            os.truncate(path, 10)
            with pytest.raises(SessionLogChanged, match="truncated"):
                await agent.run("again")
    assert os.path.getsize(path) == 10


async def test_agent_log_faults_a_second_agent_on_a_locked_log_is_refused_with_the_pid(tmp_path):
    path = str(tmp_path / "session.jsonl")
    with SessionLog.open(path) as log:
        async with Agent(log, config(tmp_path)) as agent:
            assert (await agent.run("hello"))["reason"] == "completed"
            with pytest.raises(SessionLogLocked) as info:
                SessionLog.open(path)  # what a second agent on this log would run on
            assert info.value.pid == os.getpid()
            assert (await agent.run("again"))["reason"] == "completed"  # the first goes on
    ends = [e["data"]["reason"] for e in read_log(path).events if e["type"] == "turn/end"]
    assert ends == ["completed", "completed"]
