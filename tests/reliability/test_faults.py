"""Faults at seven points, through the client and through the agent, over real processes.

A :class:`faulty.Faulty` child dies (``SIGKILL``), closes its stdout or stops
reading its stdin at one point of the conversation, the first time it is
launched.  At every point: the pending work fails fast with a typed error
(bounded by the test's deadline, never a hang); what was delivered before
the fault is kept (through the agent: logged, with ``turn/end`` reason
``error`` -- ``aborted`` for a close); the next turn works on a fresh child;
and no process is left -- neither the child nor its grandchild, checked in
``/proc`` by pid and by a token in the environment they inherited.
"""

from __future__ import annotations

import asyncio
import os
import signal
import uuid
from typing import Any, Callable, List, Tuple

import faulty
import figures
import hostile
import pytest

from codexmini import (
    Agent,
    AgentConfig,
    AgentMessageDelta,
    AppServerClient,
    ClientClosed,
    ItemCompleted,
    Launch,
    ProcessExited,
    Reply,
    RequestTimeout,
    SessionLog,
    Thread,
    Timeouts,
    read_log,
)
from codexmini.testing import FakeAppServer

#: For the child that stops reading: how long a request waits for its answer.
REQUEST_TIMEOUT = 0.5
#: Bound on waiting for the kernel to reap what the client killed.
REAP_S = 10.0


# -- processes -------------------------------------------------------------------------


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def carrying(token: str) -> List[int]:
    """Processes whose environment holds ``FAULT_TOKEN=token`` (the child and
    every descendant: they inherit it)."""
    found = []
    needle = f"FAULT_TOKEN={token}".encode()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as fh:
                if needle in fh.read().split(b"\0") and alive(int(name)):
                    found.append(int(name))
        except OSError:  # gone meanwhile, or not ours
            continue
    return found


def launched(directory: str) -> List[int]:
    """Every pid the fake launches recorded: children and grandchildren."""
    pids = []
    for name in sorted(os.listdir(directory)):
        if name.startswith("launch-"):
            with open(os.path.join(directory, name)) as fh:
                pids.append(int(fh.read()))
    return pids


async def until(predicate: Callable[[], Any], deadline: float = REAP_S) -> bool:
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline
    while not predicate():
        if loop.time() > end:
            return False
        await asyncio.sleep(0.02)
    return True


async def nothing_left(directory: str, token: str) -> None:
    pids = launched(directory)
    assert pids, "the fake recorded no launch"
    assert await until(lambda: not any(alive(p) for p in pids) and not carrying(token)), (
        [p for p in pids if alive(p)],
        carrying(token),
    )
    figures.count("faults", "processes checked gone in /proc (children and grandchildren)", len(pids))


def child_pid(directory: str, launch: int = 0) -> int:
    with open(os.path.join(directory, f"launch-{launch}")) as fh:
        return int(fh.read())


class Setup:
    def __init__(self, tmp_path: Any, point: str) -> None:
        self.point = point
        self.dir = str(tmp_path / "state")
        os.mkdir(self.dir)
        self.token = uuid.uuid4().hex
        self.env = {"FAULT_DIR": self.dir, "FAULT_TOKEN": self.token}
        self.exe = FakeAppServer("faulty:Faulty", point).executable(str(tmp_path), pythonpath=[faulty.HERE])
        self.cwd = str(tmp_path)
        self.handler_started = asyncio.Event()
        self.handler_cancelled = asyncio.Event()

    async def killing_handler(self) -> None:
        """An approval handler that kills the child while it runs, then waits."""
        self.handler_started.set()
        os.kill(child_pid(self.dir), signal.SIGKILL)
        try:
            await asyncio.Event().wait()
        finally:
            self.handler_cancelled.set()


POINTS = [pytest.param(p, id=p) for p in faulty.POINTS]


def test_faults_cover_the_seven_points():
    assert len(faulty.POINTS) == 7


# -- through the client ------------------------------------------------------------------


async def client_fault(setup: Setup) -> Tuple[BaseException, List[Any]]:
    """The fault, through AppServerClient + Thread: the typed error and what
    was delivered before it."""
    point = setup.point
    launch = Launch(codex_bin=setup.exe, env=setup.env, timeouts=Timeouts(request=REQUEST_TIMEOUT, close=0.5))
    events: List[Any] = []
    if point == "before_initialize":
        with pytest.raises(ProcessExited) as raised:
            await AppServerClient.start(launch)
        return raised.value, events
    client = await AppServerClient.start(launch)
    try:
        if point == "approval_pending":
            client.on_request(faulty.APPROVAL, lambda m, p: setup.killing_handler())
        if point == "during_thread_start":
            with pytest.raises(ProcessExited) as raised:
                await Thread.start(client)
            return raised.value, events
        if point == "stdin_not_read":
            with pytest.raises(RequestTimeout) as raised:
                await Thread.start(client)
            assert not client.healthy  # what tells a supervisor to replace it
            return raised.value, events
        thread = await Thread.start(client)
        turn = thread.turn("go")

        async def consume() -> None:
            async for event in turn:
                events.append(event)

        consumer = asyncio.ensure_future(consume())
        if point == "during_close":
            assert await until(lambda: any(isinstance(e, AgentMessageDelta) for e in events))
            await client.close()
        with pytest.raises((ProcessExited, ClientClosed)) as raised:
            await consumer
        if point == "approval_pending":
            assert setup.handler_started.is_set()
            # the handler does not outlive its child: cancelled before close()
            assert await until(setup.handler_cancelled.is_set)
        return raised.value, events
    finally:
        await client.close()


EXPECTED_CLIENT_ERROR = {
    "before_initialize": ProcessExited,
    "during_thread_start": ProcessExited,
    "mid_stream": ProcessExited,
    "approval_pending": ProcessExited,
    "during_close": ClientClosed,
    "stdout_closed": ProcessExited,
    "stdin_not_read": RequestTimeout,
}


@pytest.mark.parametrize("point", POINTS)
async def test_fault_through_the_client(point, tmp_path):
    setup = Setup(tmp_path, point)
    error, events = await client_fault(setup)
    assert type(error) is EXPECTED_CLIENT_ERROR[point]
    if point in ("mid_stream", "approval_pending", "during_close", "stdout_closed"):
        # delivered before the fault: kept
        said = [e.item.get("text") for e in events if isinstance(e, ItemCompleted) and e.item["type"] == "agentMessage"]
        assert said == ["before"]
        assert [e.delta for e in events if isinstance(e, AgentMessageDelta)][-1] == "half a mess"
    await nothing_left(setup.dir, setup.token)
    # the next turn works, on a fresh child
    async with await AppServerClient.start(Launch(codex_bin=setup.exe, env=setup.env)) as client:
        completed = await (await Thread.start(client)).turn("again").run()
        assert completed.status == "completed"
        assert client.pid == child_pid(setup.dir, 1)
    await nothing_left(setup.dir, setup.token)
    figures.count("faults", "fault points played through AppServerClient + Thread")


# -- through the agent -----------------------------------------------------------------------


EXPECTED_AGENT_END = {
    "before_initialize": ("error", "CODEX_UNAVAILABLE"),
    "during_thread_start": ("error", "CODEX_NO_RESULT"),
    "mid_stream": ("error", "CODEX_NO_RESULT"),
    "approval_pending": ("error", "CODEX_NO_RESULT"),
    "during_close": ("aborted", None),
    "stdout_closed": ("error", "CODEX_NO_RESULT"),
    "stdin_not_read": ("error", "CODEX_NO_RESULT"),
}


@pytest.mark.parametrize("point", POINTS)
async def test_fault_through_the_agent(point, tmp_path):
    path = str(tmp_path / "session.jsonl")

    setup = Setup(tmp_path, point)
    config = AgentConfig(
        launch=Launch(codex_bin=setup.exe, env=setup.env, timeouts=Timeouts(request=REQUEST_TIMEOUT, close=0.5)),
        cwd=setup.cwd,
        skills=False,
    )

    async def approvals(request: Any) -> Reply:
        await setup.killing_handler()
        return Reply("accept")  # never reached: the handler is cancelled

    seen: List[Any] = []
    with SessionLog.open(path) as log:
        agent = Agent(log, config, approvals=approvals, on_event=seen.append)
        if point == "during_close":
            running = asyncio.ensure_future(agent.run("go"))
            assert await until(lambda: any(isinstance(e, AgentMessageDelta) for e in seen))
            await agent.close()
            first = await running
        else:
            first = await agent.run("go")
        if point == "approval_pending":
            assert setup.handler_started.is_set() and setup.handler_cancelled.is_set()
        await nothing_left(setup.dir, setup.token)  # the faulted child is gone already
        second = await agent.run("again")
        await agent.close()
    await nothing_left(setup.dir, setup.token)
    reason, code = EXPECTED_AGENT_END[point]
    assert first["reason"] == reason
    assert (first.get("error") or {}).get("code") == code
    assert second["reason"] == "completed"
    events = read_log(path).events
    assert [e["data"] for e in events if e["type"] == "turn/end"] == [first, second]
    said = [
        (e["turn"], b["text"])
        for e in events
        if e["type"] == "assistant/message"
        for b in e["data"]["content"]
        if b["type"] == "text"
    ]
    before = [(1, "before")] if point in ("mid_stream", "approval_pending", "during_close", "stdout_closed") else []
    assert said == before + [(2, "Hello")]  # committed before the fault: logged; the next turn: whole
    figures.count("faults", "fault points played through the Agent")


# -- the caller's own code failing mid-turn -----------------------------------------------------


@pytest.mark.frame_problems("item/hologram/delta")
async def test_fault_a_listener_raising_mid_turn_keeps_what_was_committed(tmp_path):
    # The agent's on_event raises at the second of three parts of a turn: the
    # turn ends in error (logged) and the message completed before is written,
    # turn after turn.  What codex sent in the same read as the part the
    # listener broke on was folded and written before the listener was shown
    # any of it: the message after is logged too when it came in that read
    # (one assistant message: the two are one segment).
    path = str(tmp_path / "session.jsonl")
    exe = FakeAppServer("hostile:Hostile", "unknown_method").executable(str(tmp_path), pythonpath=[hostile.HERE])

    def listener(event: Any) -> None:
        if type(event).__name__ == "Unmapped":
            raise RuntimeError("the listener's own bug")

    config = AgentConfig(launch=Launch(codex_bin=exe), cwd=str(tmp_path), skills=False)
    with SessionLog.open(path) as log:
        async with Agent(log, config, on_event=listener) as agent:
            first = await agent.run("go")
            second = await agent.run("again")
    assert first["reason"] == "error" and "the listener's own bug" in first["error"]["message"]
    assert second["reason"] == "error"  # the listener is still broken: the same, logged again
    events = read_log(path).events
    said = [(e["turn"], [b["text"] for b in e["data"]["content"]]) for e in events if e["type"] == "assistant/message"]
    assert [turn for turn, _ in said] == [1, 2]
    assert all(texts in (["before"], ["before", "after"]) for _, texts in said), said
    assert [e["type"] for e in events].count("agent/error") == 2
