"""The durable inbox (issue 30): what the agent queues is in the log before it
waits, what it drops is logged dropped, and an agent made on a log whose
writer died runs what was pending -- once, in order.

Offline: the in-memory fake codex (``tests/support/thread_behaviours.py``),
whose ``slow …`` turn holds until released or interrupted -- no sleeps.  One
test kills a real agent process with SIGKILL mid-turn
(``tests/support/inbox_child.py``) and resumes its log here.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import signal
import subprocess
import sys
from typing import Any, Dict, List, Optional

import pytest
from support import thread_behaviours as tb

from codexmini import Agent, AgentConfig, Blocked, Launch, SessionLog, SessionLogError
from codexmini._events import AgentMessageDelta
from codexmini._session import read_log
from codexmini.testing import FakeAppServer

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS = os.path.join(REPO, "tests")


class Session:
    """A log in ``tmp_path`` and agents on the in-memory fake playing ``behaviour``."""

    def __init__(self, tmp_path: Any, behaviour: Any = tb.AgentTurns) -> None:
        self.path = str(tmp_path / "session.jsonl")
        self.ws = str(tmp_path)
        self.behaviour = behaviour
        self.log = SessionLog.open(self.path)
        self.ids = iter(range(1, 10**6))
        self.held: Dict[str, asyncio.Event] = {}

    def agent(self, **kwargs: Any) -> Agent:
        config = AgentConfig(cwd=self.ws, skills=False, launch=Launch(launcher=FakeAppServer(self.behaviour).launch))
        return Agent(self.log, config, on_event=self.on_event, new_id=lambda: f"id-{next(self.ids)}", **kwargs)

    def on_event(self, event: Any) -> None:
        if isinstance(event, AgentMessageDelta) and event.delta.startswith("working on: "):
            self.waiting(event.delta[len("working on: ") :]).set()

    def waiting(self, said: str) -> asyncio.Event:
        return self.held.setdefault(said, asyncio.Event())

    async def until_held(self, said: str) -> None:
        """Until the codex turn for ``said`` streams and holds."""
        await asyncio.wait_for(self.waiting(said).wait(), 30)

    def reopen(self) -> None:
        self.log.close()
        self.log = SessionLog.open(self.path)

    def events(self, type_: Optional[str] = None) -> List[Dict[str, Any]]:
        return [e for e in read_log(self.path).events if type_ is None or e["type"] == type_]

    def users(self) -> List[Any]:
        """(turn, step, text) of every user message logged."""
        return [(e["turn"], e["step"], e["data"]["content"][0]["text"]) for e in self.events("user/message")]

    def queued(self) -> List[Any]:
        return [(e["data"]["kind"], e["data"]["content"][0]["text"]) for e in self.events("inbox/queued")]

    def dropped(self) -> List[Any]:
        return [(e["data"]["reason"], e["data"]["ids"]) for e in self.events("inbox/dropped")]


@pytest.fixture
def session(tmp_path: Any) -> Any:
    made: List[Session] = []

    def make(behaviour: Any = tb.AgentTurns) -> Session:
        made.append(Session(tmp_path, behaviour))
        return made[-1]

    yield make
    for s in made:
        s.log.close()


# -- queued, claimed, dropped ----------------------------------------------------------


async def test_agent_inbox_a_followup_that_waits_is_logged_then_claimed_by_its_user_message(session):
    s = session()
    async with s.agent() as agent:
        agent.followup("slow one")  # starts a turn at once: not queued
        await s.until_held("slow one")
        agent.followup("second")
        agent.inject("injected")
        assert [kind for kind, _ in s.log.pending] == ["followup", "inject"]
        agent.cancel(keep_inbox=True)  # the slow turn ends; the kept ones run
        await agent.wait_idle()
    assert s.queued() == [("followup", "second"), ("inject", "injected")]
    queued = s.events("inbox/queued")
    assert [(e["turn"], e["step"]) for e in queued] == [(None, None), (None, None)]
    assert list(queued[0]["data"]) == ["id", "kind", "content", "source"]
    assert queued[0]["data"]["source"] == {"kind": "user"}
    # Each is delivered once, by a user/message with its id: nothing is pending.
    claimed = {e["data"]["id"] for e in s.events("user/message")}
    assert {e["data"]["id"] for e in queued} <= claimed
    assert s.users() == [(1, 1, "slow one"), (2, 1, "second"), (2, 1, "injected")]
    assert s.log.pending == [] and s.dropped() == []


async def test_agent_inbox_a_run_on_an_idle_agent_logs_no_queued_event(session):
    # The logs of one turn at a time are as they were (the golden logs too).
    s = session()
    async with s.agent() as agent:
        await agent.run("one")
        await agent.run("two")
    assert [e["type"] for e in s.events()][:4] == ["session/header", "turn/start", "step/start", "user/message"]
    assert s.queued() == [] and s.dropped() == []


async def test_agent_inbox_a_followup_behind_another_is_logged_even_when_idle(session):
    s = session()
    async with s.agent() as agent:
        agent.followup("first")  # wakes the driver: taken at once
        agent.followup("second")  # waits behind it
        await agent.wait_idle()
    assert s.queued() == [("followup", "second")]
    assert s.users() == [(1, 1, "first"), (2, 1, "second")]
    assert s.log.pending == []


async def test_agent_inbox_cancel_logs_what_it_drops_and_a_resume_does_not_revive_it(session):
    s = session()
    async with s.agent() as agent:
        agent.followup("slow one")
        await s.until_held("slow one")
        agent.followup("dropped followup")
        agent.inject("dropped injection")
        agent.cancel()
        await agent.wait_idle()
        agent.cancel()  # nothing left: nothing logged
    queued = [e["data"]["id"] for e in s.events("inbox/queued")]
    assert s.queued() == [("followup", "dropped followup"), ("inject", "dropped injection")]
    assert s.dropped() == [("cancel", queued)]
    s.reopen()
    assert s.log.pending == []
    agent = s.agent()
    assert len(agent.inbox) == 0
    async with agent:
        assert await agent.run_pending() is None
    assert s.users() == [(1, 1, "slow one")]


async def test_agent_inbox_cancel_keeping_the_inbox_logs_no_drop(session):
    s = session()
    async with s.agent() as agent:
        agent.inject("kept")
        agent.cancel(keep_inbox=True)
        assert [m["content"][0]["text"] for _, m in s.log.pending] == ["kept"]
        end = await agent.run_pending()
    assert end is not None and end["reason"] == "completed"
    assert s.dropped() == [] and s.users() == [(1, 1, "kept")]


async def test_agent_inbox_close_leaves_what_was_queued_pending_as_a_crash_would(session):
    s = session()
    async with s.agent() as agent:
        agent.followup("slow one")
        await s.until_held("slow one")
        agent.followup("after the shutdown")
        agent.inject("injected before it")
    assert len(agent.inbox) == 0  # dropped in memory ...
    assert s.dropped() == []  # ... not in the log
    assert s.events("turn/end")[0]["data"]["abortedBy"] == "shutdown"
    assert [m["content"][0]["text"] for _, m in s.log.pending] == ["after the shutdown", "injected before it"]
    async with s.agent() as agent:  # the next agent on the log runs them
        assert len(agent.inbox) == 2
        end = await agent.run_pending()
    assert end is not None and end["reason"] == "completed"
    assert s.users() == [(1, 1, "slow one"), (2, 1, "after the shutdown"), (2, 1, "injected before it")]
    assert s.log.pending == []


async def test_agent_inbox_a_drop_the_log_cannot_take_keeps_them_pending_and_never_raises(session, caplog):
    s = session()
    agent = s.agent()
    agent.inject("kept pending")
    os.rename(s.path, s.path + ".moved")  # the writer's next append finds its file gone
    with caplog.at_level(logging.WARNING, logger="codexmini.agent"):
        agent.cancel()
    assert "could not log 1 dropped inbox message(s)" in caplog.text
    assert s.log.closed
    agent.cancel()  # a closed log: nothing tried
    os.rename(s.path + ".moved", s.path)
    s.log = SessionLog.open(s.path)
    assert [m["content"][0]["text"] for _, m in s.log.pending] == ["kept pending"]


async def test_agent_inbox_a_message_the_log_cannot_take_is_not_queued(session):
    s = session()
    agent = s.agent()
    s.log.close()
    with pytest.raises(SessionLogError, match="closed"):
        agent.inject("nowhere to log it")
    assert len(agent.inbox) == 0


async def test_agent_inbox_a_steer_that_goes_to_the_inbox_while_a_turn_runs_is_queued(session):
    behaviour = tb.RefuseSteer()
    s = session(behaviour)
    async with s.agent() as agent:
        agent.followup("slow one")
        await s.until_held("slow one")
        await agent.steer("late words")  # refused by codex: the next step delivers it
        assert s.queued() == [("steer", "late words")]
        behaviour.release()
        await agent.wait_idle()
        await agent.steer("idle steer")  # starts a turn at once: not queued
        await agent.wait_idle()
    assert s.users() == [(1, 1, "slow one"), (1, 2, "late words"), (2, 1, "idle steer")]
    assert s.queued() == [("steer", "late words")] and s.log.pending == []


# -- the pre-step hook ------------------------------------------------------------------


async def test_agent_inbox_messages_a_pre_step_hook_blocks_or_replaces_are_dropped(session):
    s = session()

    async def hook(messages: List[Dict[str, Any]]) -> Any:
        texts = [m["content"][0]["text"] for m in messages]
        if "block me" in texts:
            return Blocked("no")
        if "replace me" in texts:
            kept = [m for m in messages if m["content"][0]["text"] == "keep me"]
            return ["the replacement", *kept]
        return None

    async with s.agent(before_step=hook) as agent:
        agent.inject("block me")
        agent.inject("replace me")
        agent.inject("keep me")
        ends = [await agent.run_pending()]
        agent.inject("replace me")
        agent.inject("keep me")
        ends.append(await agent.run_pending())
    assert [end and end["reason"] for end in ends] == ["blocked", "completed"]
    # Blocked: all three taken, none delivered.  Replaced: "keep me" kept its id (claimed).
    assert s.dropped() == [("pre-step", ["id-1", "id-2", "id-3"]), ("pre-step", ["id-4"])]
    assert s.users() == [(2, 1, "the replacement"), (2, 1, "keep me")]
    assert s.log.pending == []


async def test_agent_inbox_messages_a_failing_pre_step_hook_took_are_dropped(session):
    s = session()

    async def hook(messages: List[Dict[str, Any]]) -> Any:
        raise RuntimeError("the hook broke")

    async with s.agent(before_step=hook) as agent:
        agent.inject("taken by a broken hook")
        end = await agent.run_pending()
    assert end is not None and end["reason"] == "error" and "the hook broke" in end["error"]["message"]
    assert s.dropped() == [("pre-step", ["id-1"])] and s.log.pending == []


@pytest.mark.parametrize("keep", [True, False], ids=["keep_inbox", "drop"])
async def test_agent_inbox_a_cancel_during_the_pre_step_hook(session, keep):
    # What the step had taken goes back with keep_inbox (and runs next), or
    # is logged dropped: in memory as in the log.
    s = session()
    entered = asyncio.Event()
    calls: List[List[str]] = []

    async def hook(messages: List[Dict[str, Any]]) -> Any:
        calls.append([m["content"][0]["text"] for m in messages])
        if len(calls) == 1:
            entered.set()
            await asyncio.Event().wait()  # until cancelled
        return None

    async with s.agent(before_step=hook) as agent:
        agent.inject("taken by the hook")
        agent.followup("first")
        await asyncio.wait_for(entered.wait(), 30)
        agent.cancel(keep_inbox=keep)
        await agent.wait_idle()
    assert calls[0] == ["first", "taken by the hook"]
    if keep:
        assert calls[1:] == [["first", "taken by the hook"]]
        assert s.users() == [(2, 1, "first"), (2, 1, "taken by the hook")]
        assert s.dropped() == []
    else:
        assert calls[1:] == [] and s.users() == []
        assert s.dropped() == [("cancel", ["id-1"])]
    assert [e["data"]["reason"] for e in s.events("turn/end")][:1] == ["aborted"]
    assert s.log.pending == []


# -- resuming ---------------------------------------------------------------------------


async def test_agent_inbox_a_resumed_agent_runs_what_was_pending_once_and_in_order(session):
    s = session()
    message = {"content": [{"type": "text", "text": "t"}], "source": {"kind": "user"}}
    s.log.append("inbox/queued", {"id": "q1", "kind": "inject", **message})
    s.log.append("inbox/queued", {"id": "q2", "kind": "followup", **message})
    s.log.append("inbox/queued", {"id": "q3", "kind": "followup", **message})
    s.log.append("inbox/queued", {"id": "q4", "kind": "inject", **message})
    s.log.append("inbox/dropped", {"ids": ["q3"], "reason": "cancel"})
    s.reopen()
    agent = s.agent()
    assert [(kind, m["id"]) for kind, m in s.log.pending] == [("inject", "q1"), ("followup", "q2"), ("inject", "q4")]
    async with agent:
        end = await agent.run_pending()
        assert end is not None and end["reason"] == "completed"
        assert await agent.run_pending() is None  # nothing twice
    # As queued again on an idle agent: the followup's turn, the injected ones with it.
    assert [(e["turn"], e["step"], e["data"]["id"]) for e in s.events("user/message")] == [
        (1, 1, "q2"),
        (1, 1, "q1"),
        (1, 1, "q4"),
    ]
    s.reopen()
    assert s.log.pending == [] and len(s.agent().inbox) == 0


async def test_agent_inbox_resumed_messages_run_before_a_new_run(session):
    s = session()
    message = {"content": [{"type": "text", "text": "from before"}], "source": {"kind": "user"}}
    s.log.append("inbox/queued", {"id": "old", "kind": "followup", **message})
    s.reopen()
    async with s.agent() as agent:
        end = await agent.run("new")
    assert end["reason"] == "completed"
    assert s.users() == [(1, 1, "from before"), (2, 1, "new")]
    assert s.queued() == [("followup", "from before"), ("followup", "new")]  # "new" waited behind it
    assert s.log.pending == []


async def test_agent_inbox_an_old_log_without_inbox_events_reads_and_resumes_with_nothing_pending(tmp_path):
    fixture = os.path.join(REPO, "fixtures", "0.171.0", "cmd_ok.session.jsonl")
    path = str(tmp_path / "old.jsonl")
    shutil.copyfile(fixture, path)  # a golden log, recorded before issue 30
    events = read_log(path).events
    assert len(events) > 5 and not any(e["type"].startswith("inbox/") for e in events)
    with SessionLog.open(path) as log:
        assert log.pending == [] and log.next_turn == 2
        config = AgentConfig(
            cwd=str(tmp_path), skills=False, launch=Launch(launcher=FakeAppServer(tb.AgentTurns).launch)
        )
        async with Agent(log, config) as agent:
            assert len(agent.inbox) == 0
            assert await agent.run_pending() is None
            assert (await agent.run("next"))["reason"] == "completed"
    after = read_log(path).events[len(events) :]
    assert [e["type"] for e in after][:3] == ["session/header", "turn/start", "step/start"]
    assert {e["turn"] for e in after if e["turn"] is not None} == {2}
    assert not any(e["type"].startswith("inbox/") for e in after)


# -- a real process, killed -------------------------------------------------------------


@pytest.mark.timeout_s(120)
async def test_agent_inbox_a_killed_agent_process_resumed_runs_its_followup_once(session, tmp_path):
    # The agent runs in a child process: it queues messages that it delivers,
    # then mid-turn a followup and an injection, and is killed with SIGKILL
    # (no cleanup, no turn/end).  An agent made here on its log runs the last
    # two, once, and never what was delivered; a second resume runs nothing.
    path = str(tmp_path / "session.jsonl")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([REPO, TESTS]))
    child = os.path.join(TESTS, "support", "inbox_child.py")
    proc = subprocess.Popen(
        [sys.executable, child, path, str(tmp_path)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        assert proc.stdout is not None and proc.stderr is not None
        said = await asyncio.get_running_loop().run_in_executor(None, proc.stdout.readline)
        assert said == b"queued\n", proc.stderr.read().decode()
    finally:
        proc.send_signal(signal.SIGKILL)
        assert await asyncio.get_running_loop().run_in_executor(None, proc.wait) == -signal.SIGKILL
        proc.stdout.close()
        proc.stderr.close()
    s = session()  # opens the log the killed writer held: the kernel dropped its lock
    assert s.path == path
    before = s.events()
    types = [e["type"] for e in before]
    assert types[:4] == ["session/header", "turn/start", "step/start", "user/message"]
    assert [e["turn"] for e in before if e["type"] == "turn/end"] == [1]  # killed mid-turn 2
    assert s.queued() == [
        ("followup", "slow two"),
        ("inject", "injected in turn 1"),
        ("followup", "after the kill"),
        ("inject", "injected mid-turn"),
    ]
    assert [(kind, m["content"][0]["text"]) for kind, m in s.log.pending] == [
        ("followup", "after the kill"),
        ("inject", "injected mid-turn"),
    ]
    delivered = [(1, 1, "slow one"), (1, 2, "injected in turn 1"), (2, 1, "slow two")]
    assert s.users() == delivered
    async with s.agent() as agent:
        end = await agent.run_pending()
    assert end is not None and end["reason"] == "completed"
    assert s.users() == [*delivered, (3, 1, "after the kill"), (3, 1, "injected mid-turn")]
    assert s.events()[: len(before)] == before  # nothing logged before was lost
    s.reopen()
    assert s.log.pending == []
    async with s.agent() as agent:
        assert await agent.run_pending() is None
    assert len(s.users()) == 5
