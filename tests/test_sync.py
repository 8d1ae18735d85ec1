"""``codexmini.sync``: the blocking facade over the asyncio core.

The wrappers run against the in-memory fake (whose turns can hold until
interrupted, so nothing here waits on a clock); live tests run the pinned
codex from plain code, from inside a running event loop (a notebook cell),
interrupted from another thread, and a script that exits without closing
anything.  After each test no ``codexmini-sync`` thread and no codex process
may be left.  The portal under the wrappers (a private loop in a daemon
thread) and the approval worker thread are tested in tests/test_portal.py.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import subprocess
import sys
import threading
from typing import Any, Dict, List, Optional

import pytest
from support import thread_behaviours as tb
from support.portal_checks import BOUND, nothing_left
from support.run_support import HAVE_CODEX, SCHEMA, Echo, Live, command, message

from codexmini import (
    AgentConfig,
    AgentMessageDelta,
    BinaryNotFound,
    CodexminiError,
    CodexTimeout,
    ConfigError,
    ItemCompleted,
    ItemStarted,
    Launch,
    OutputValidationError,
    SessionLog,
    TurnCompleted,
    _portal,
    sync,
)
from codexmini._permission import Reply
from codexmini.testing import FakeAppServer
from codexmini.testing.codex_like import THREAD, TURN

live = pytest.mark.skipif(not HAVE_CODEX, reason="the pinned codex is not installed (make setup)")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(autouse=True)
def nothing_left_behind():
    with nothing_left():
        yield


def sent(fake: FakeAppServer, method: str) -> List[Dict[str, Any]]:
    return [f.get("params") or {} for s in fake.launches for f in s.received if f.get("method") == method]


# -- client, thread, turn ---------------------------------------------------------------


def test_sync_client_thread_and_turn_stream_events_one_by_one():
    fake = FakeAppServer(tb.Interruptible)
    with sync.Client(launch=Launch(launcher=fake.launch)) as client:
        assert client.pid is None and not client.closed  # in memory: no process id
        thread = client.thread(cwd="/var/tmp", model="gpt-fake", sandbox="read-only", approval_policy="never")
        assert thread.id == THREAD and thread.info["thread"]["id"] == THREAD
        seen: List[Any] = []
        with thread.turn("hi", params={"effort": "low"}) as turn:
            for event in turn:
                seen.append(event)
                if isinstance(event, AgentMessageDelta):
                    # The turn is still running (the fake holds it): the delta
                    # was delivered as it arrived, not after the turn.
                    assert turn.id == TURN and not turn.done and turn.completed is None
                    turn.interrupt()
        assert isinstance(seen[-1], TurnCompleted) and seen[-1].status == "interrupted"
        assert turn.done and turn.completed is seen[-1] and "msg_1" not in turn.items and turn.usage.total_tokens == 0
        thread.close()
    assert client.closed
    assert sent(fake, "turn/start")[0]["effort"] == "low"
    assert sent(fake, "thread/start") == [
        {"cwd": "/var/tmp", "model": "gpt-fake", "sandbox": "read-only", "approvalPolicy": "never"}
    ]


def test_sync_turn_interrupted_from_another_thread():
    fake = FakeAppServer(tb.Interruptible)
    streaming = threading.Event()
    with sync.Client(launch=Launch(launcher=fake.launch)) as client:
        turn = client.thread().turn("hi")
        stopper = threading.Thread(target=lambda: (streaming.wait(BOUND), turn.interrupt()))
        stopper.start()
        statuses = []
        for event in turn:
            if isinstance(event, AgentMessageDelta):
                streaming.set()
            if isinstance(event, TurnCompleted):
                statuses.append(event.status)
        stopper.join(BOUND)
    assert statuses == ["interrupted"]
    assert len(sent(fake, "turn/interrupt")) == 1


def test_sync_turn_interrupt_before_it_starts_takes_effect_when_it_does():
    fake = FakeAppServer(tb.Interruptible)
    with sync.Client(launch=Launch(launcher=fake.launch)) as client:
        turn = client.thread().turn("hi")
        turn.interrupt()  # nothing sent yet: remembered
        assert turn.run(timeout=BOUND).status == "interrupted"
        turn.interrupt()  # done: nothing more is sent
    assert len(sent(fake, "turn/interrupt")) == 1


def test_sync_turn_left_early_interrupts_it():
    fake = FakeAppServer(tb.Interruptible)
    with sync.Client(launch=Launch(launcher=fake.launch)) as client:
        thread = client.thread()
        for event in thread.turn("one"):  # no with: leaving the loop ends the iterator, which interrupts
            if isinstance(event, AgentMessageDelta):
                break
        with pytest.raises(RuntimeError, match="the caller's own"):
            with thread.turn("two") as turn:
                for event in turn:
                    if isinstance(event, AgentMessageDelta):
                        raise RuntimeError("the caller's own error")
        assert turn.done
    assert len(sent(fake, "turn/interrupt")) == 2


def test_sync_turn_dropped_after_the_client_closed_is_quiet():
    fake = FakeAppServer(tb.Interruptible)
    client = sync.Client(launch=Launch(launcher=fake.launch))
    events = iter(client.thread().turn("hi"))
    next(events)
    client.close()
    events.close()  # would interrupt; the client is gone, so nothing is left to do


def test_sync_turn_collected_on_the_loop_thread_schedules_its_close():
    fake = FakeAppServer(tb.Interruptible)
    with sync.Client(launch=Launch(launcher=fake.launch)) as client:
        turn = client.thread().turn("hi")
        events = iter(turn)
        next(events)

        async def drop_on_the_loop() -> None:
            turn._close_quietly()  # what the iterator's finally does when collected there
            while not turn.done:
                await asyncio.sleep(0)

        client.call(drop_on_the_loop(), timeout=BOUND)
        events.close()
    assert len(sent(fake, "turn/interrupt")) == 1


def test_sync_thread_run_steer_and_interrupt():
    fake = FakeAppServer(tb.Steer)
    with sync.Client(launch=Launch(launcher=fake.launch)) as client:
        thread = client.thread()
        with thread.turn("start") as turn:
            for event in turn:
                if isinstance(event, AgentMessageDelta) and event.delta == "Working":
                    assert turn.steer("more") == TURN
        assert turn.completed is not None and turn.completed.status == "completed"
        with pytest.raises(CodexminiError):  # no active turn: codex refuses
            thread.steer("late", TURN)
        with pytest.raises(CodexminiError):
            thread.interrupt(TURN)
    assert [p["input"][0]["text"] for p in sent(fake, "turn/steer")] == ["more", "late"]


def test_sync_run_and_client_run_with_an_output_schema():
    answer = '{"answer": 42, "why": "six times seven"}'
    assert (
        sync.run(answer, launch=Launch(launcher=FakeAppServer(Echo).launch), output_schema=SCHEMA).value["answer"] == 42
    )
    with sync.Client(launch=Launch(launcher=FakeAppServer(Echo).launch)) as client:
        assert client.run("plain", model="gpt-fake").final_response == "plain"
        assert sync.run("via client", client=client).final_response == "via client"
        thread = client.thread()
        assert thread.run(answer, output_schema=SCHEMA, timeout=BOUND).value == json.loads(answer)
        with pytest.raises(OutputValidationError) as caught:
            thread.run('{"answer": "x"}', output_schema=SCHEMA)
        assert caught.value.result.thread_id == thread.id
        with pytest.raises(ConfigError, match="launch: options of a process"):
            sync.run("x", launch=Launch(codex_bin="codex"), client=client)
        assert client.request("thread/loaded/list", {})["nextCursor"] is None


def test_sync_client_that_fails_to_start_leaves_nothing(tmp_path):
    before = set(threading.enumerate())
    with pytest.raises(BinaryNotFound, match="not an executable file"):  # raised on the loop thread
        sync.Client(Launch(codex_bin=str(tmp_path / "no-codex")))
    assert set(threading.enumerate()) <= before and not _portal._open  # its loop thread ended, nothing held
    with pytest.raises(ConfigError):  # sync.run closes its own loop too
        sync.run("x", launch=Launch(launcher=FakeAppServer(Echo).launch), sandbox="sometimes")


def test_sync_client_close_is_idempotent():
    client = sync.Client(launch=Launch(launcher=FakeAppServer(Echo).launch))
    client.close()
    client.close()
    assert client.closed


def test_sync_runs_inside_a_running_event_loop():
    async def notebook_cell() -> Optional[str]:
        # A blocking call inside a coroutine: the caller's loop waits, the
        # private loop works; no nesting (asyncio.run would refuse).
        return sync.run("from a cell", launch=Launch(launcher=FakeAppServer(Echo).launch)).final_response

    assert asyncio.run(asyncio.wait_for(notebook_cell(), BOUND)) == "from a cell"


# -- the agent ----------------------------------------------------------------------------


@pytest.fixture
def session(tmp_path):
    log = SessionLog.open(str(tmp_path / "session.jsonl"))
    yield log
    log.close()


def config(fake: FakeAppServer, **more: Any) -> AgentConfig:
    return AgentConfig(launch=Launch(launcher=fake.launch), cwd="/var/tmp", model="gpt-fake", skills=False, **more)


def test_sync_agent_runs_turns_with_a_sync_approval_handler(session):
    fake = FakeAppServer(tb.Approving)
    events: List[Any] = []
    ids = iter(range(1, 1000))
    with sync.Agent(
        session,
        config(fake),
        approvals=lambda r: Reply("accept"),
        on_event=events.append,
        new_id=lambda: f"id-{next(ids)}",
    ) as agent:
        agent.start()
        assert agent.phase == "idle" and agent.log is session
        agent.set_knob("approval/policy", "ask")
        end = agent.run("approve it")
        assert end["reason"] == "completed" and agent.last_turn_end == end
        assert agent.stats["approvals"] == 1
        agent.inject("injected")
        agent.followup("and then")
        agent.wait_idle(BOUND)
        agent.steer("nothing runs: next turn")
        agent.wait_idle(BOUND)
    texts = [e["data"]["content"][0]["text"] for e in session.events if e["type"] == "user/message"]
    # (the inbox's own order: a followup's turn takes what was injected for the current one after it)
    assert sorted(texts) == sorted(["approve it", "injected", "and then", "nothing runs: next turn"])
    assert any(isinstance(e, TurnCompleted) for e in events)
    assert [e["data"]["decision"] for e in session.events if e["type"] == "approval/decision"] == ["accept"]


def test_sync_agent_cancelled_from_another_thread(session):
    fake = FakeAppServer(tb.AgentTurns)
    holding = threading.Event()

    def on_event(event: Any) -> None:  # on the loop's thread
        if isinstance(event, AgentMessageDelta):
            holding.set()

    with sync.Agent(session, config(fake), on_event=on_event) as agent:
        canceller = threading.Thread(target=lambda: (holding.wait(BOUND), agent.cancel()))
        canceller.start()
        assert agent.run("slow please")["reason"] == "aborted"
        canceller.join(BOUND)
    assert len(sent(fake, "turn/interrupt")) == 1


def test_sync_agent_run_timeout_aborts_the_turn(session):
    fake = FakeAppServer(tb.AgentTurns)
    with sync.Agent(session, config(fake)) as agent:
        with pytest.raises(CodexTimeout):
            agent.run("slow forever", timeout=0.2)  # the fake holds the turn until interrupted
        assert agent.phase == "idle"
    assert [e["data"]["reason"] for e in session.events if e["type"] == "turn/end"] == ["aborted"]


def test_sync_agent_that_cannot_be_built_leaves_nothing():
    with pytest.raises(AttributeError):
        sync.Agent(object(), config(FakeAppServer(tb.AgentTurns)))  # type: ignore[arg-type]


def test_sync_agent_close_is_idempotent(session):
    agent = sync.Agent(session, config(FakeAppServer(tb.AgentTurns)))
    agent.close()
    agent.close()


# -- live ---------------------------------------------------------------------------------


@pytest.fixture
def live_model():
    made: List[Live] = []

    def make(script: Dict[str, Any]) -> Live:
        made.append(Live(script))
        return made[-1]

    yield make
    for setup in made:
        setup.close()


@pytest.mark.live
@live
def test_sync_live_from_plain_code(live_model):
    s = live_model(
        {
            "rules": [{"when": {"user_contains": "json"}, "respond": message('{"answer": 42, "why": "x"}')}],
            "default": message("Hel", "lo!"),
        }
    )
    assert sync.run("say hi", model="gpt-fake", cwd=s.ws, launch=s.launch).final_response == "Hello!"
    with sync.Client(s.launch) as client:
        thread = client.thread(model="gpt-fake", sandbox="read-only", approval_policy="never")
        events = list(thread.turn("say hi"))
        assert [type(e).__name__ for e in events if isinstance(e, (AgentMessageDelta, TurnCompleted))] == [
            "AgentMessageDelta",
            "AgentMessageDelta",
            "TurnCompleted",
        ]
        assert thread.run("now json", output_schema=SCHEMA).value == {"answer": 42, "why": "x"}
    assert s.alive() == [] and len(s.pids) == 2


@pytest.mark.live
@live
def test_sync_live_from_inside_a_running_event_loop(live_model):
    s = live_model({"rules": [], "default": message("from ", "the cell")})

    async def cell() -> List[Optional[str]]:
        answers = [sync.run("hi", model="gpt-fake", cwd=s.ws, launch=s.launch).final_response]
        with sync.Client(s.launch) as client:
            turn = client.thread(model="gpt-fake").turn("hi")
            answers += [
                e.item.get("text") for e in turn if isinstance(e, ItemCompleted) and e.item_type == "agentMessage"
            ]
        return answers

    assert asyncio.run(asyncio.wait_for(cell(), 90)) == ["from the cell", "from the cell"]
    assert s.alive() == []


@pytest.mark.live
@live
def test_sync_live_turn_interrupted_from_another_thread(live_model):
    s = live_model({"rules": [], "default": command("sleep 30")})
    running = threading.Event()
    with sync.Client(s.launch) as client:
        thread = client.thread(model="gpt-fake", sandbox="read-only", approval_policy="never")
        with thread.turn("sleep please", idle_timeout=60) as turn:
            stopper = threading.Thread(target=lambda: (running.wait(60), turn.interrupt()))
            stopper.start()
            for event in turn:
                if isinstance(event, ItemStarted) and event.item_type == "commandExecution":
                    running.set()
            stopper.join(BOUND)
        assert turn.completed is not None and turn.completed.status == "interrupted"
    assert s.alive() == []


EXIT_WITHOUT_CLOSING = """
import json, sys
from codexmini import Launch, ModelEndpoint, sync
url, ws, home, root = sys.argv[1:5]
client = sync.Client(Launch(cwd=ws, endpoint=ModelEndpoint(url, "k"), codex_home=home, env={"HOME": root}))
events = iter(client.thread(model="gpt-fake").turn("hi"))
next(events)
print(json.dumps({"pid": client.pid}), flush=True)
raise RuntimeError("the script dies mid-iteration")
"""


@pytest.mark.live
@live
def test_sync_live_script_exiting_without_closing_leaves_no_process(live_model):
    s = live_model({"rules": [], "default": command("sleep 30")})
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", EXIT_WITHOUT_CLOSING, s.model.url, s.ws, s.home, s.root],
        env={**os.environ, "PYTHONPATH": REPO},
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert done.returncode == 1 and "the script dies mid-iteration" in done.stderr
    assert done.stderr.count("Traceback") == 1, done.stderr  # nothing else complained on the way out
    pid = json.loads(done.stdout)["pid"]
    gc.collect()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # the atexit hook closed the client: codex ended with the script
