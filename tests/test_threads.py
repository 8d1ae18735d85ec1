"""Threads and turns (``codexmini._threads``) against the one fake app-server, in memory.

The turns: input, ``thread/start``, a plain turn, stopping one, steering,
invalid notifications.  The behaviours live in
``tests/support/thread_behaviours.py`` (:class:`CodexLike` subclasses with the
real binary's shapes).  Every frame exchanged here goes through the
conformance plugin's strict validator (it taps every client), so the fake's
frames must stay schema-valid.  What the client sent is read from its own
frame tap; where it matters, the fake also reports what it received
(``thread/loaded/list``).  Only the child that dies mid-turn also runs as a
real process over real pipes: that test is about a process.

The lifecycle: resume, fork, list, read, archive, name, rollback, review,
compaction, and a turn failed on the usage limit.  The recorded scenarios
(``conformance/thread_scenarios.py``, replayed for both codex versions) show
what the real binaries do; these tests pin the mechanics the recordings
cannot reach (a method one version lacks, a detached review, a compaction
that never says its turn), on :class:`support.canned.Canned`, which answers
with the recordings' own answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any, AsyncIterator, Dict, List, Mapping, Optional, Tuple

import pytest
from support import thread_behaviours as tb
from support.canned import Canned, client_for, client_for_behaviour, recorded

from codexmini import Launch, Timeouts
from codexmini._client import AppServerClient
from codexmini._errors import (
    CodexminiError,
    ConfigError,
    MethodNotFound,
    ProcessExited,
    RpcError,
    ThreadNotFound,
    TurnTimeout,
    UsageLimitExceeded,
)
from codexmini._events import (
    AgentMessageDelta,
    CommandOutputDelta,
    Event,
    ItemCompleted,
    ItemStarted,
    RateLimitsUpdated,
    RateLimitWindow,
    ReasoningSummaryDelta,
    RetryingError,
    TokenUsage,
    TurnCompleted,
    Unmapped,
    Usage,
)
from codexmini._inputs import image_input, text_input
from codexmini._threads import Thread, Turn
from codexmini.testing import CodexLike, FakeAppServer
from codexmini.testing.codex_like import (
    RATE_LIMITS_EXHAUSTED,
    THREAD,
    TURN,
    TURN_ERROR,
    TURNS,
    USAGE_1,
    USAGE_2,
    USER_ITEM,
    thread_start_result,
    turn_object,
)

U1 = Usage.from_wire(USAGE_1)
U2 = Usage.from_wire(USAGE_2)

Frames = List[Tuple[str, Dict[str, Any]]]


@contextlib.asynccontextmanager
async def server(
    behaviour: Any, *args: str, codex_bin: Optional[str] = None
) -> AsyncIterator[Tuple[AppServerClient, Frames]]:
    """A client talking to the fake (in memory, or the ``codex_bin`` it wrote);
    yields (client, frames seen by its tap)."""
    seen: Frames = []
    launcher = None if codex_bin else FakeAppServer(behaviour, *args).launch
    client = await AppServerClient.start(
        Launch(codex_bin=codex_bin, launcher=launcher, timeouts=Timeouts(initialize=30)),
        tap=lambda d, f: seen.append((d, f)),
    )
    try:
        yield client, seen
    finally:
        await client.close()


def sent(seen: Frames, method: str) -> List[Dict[str, Any]]:
    """The params of every frame the client sent with this method."""
    return [f.get("params") for d, f in seen if d == "out" and f.get("method") == method]


async def received_by_fake(client: AppServerClient) -> List[Dict[str, Any]]:
    """What the fake has received so far (it answers thread/loaded/list with it)."""
    result = await client.request("thread/loaded/list", {}, timeout=30)
    return [json.loads(entry) for entry in result["data"]]


async def collect(turn: Turn) -> List[Any]:
    return [event async for event in turn]


def kinds(events: List[Event]) -> List[str]:
    return [type(e).__name__ for e in events]


async def first_delta(turn: Turn) -> AgentMessageDelta:
    async for event in turn:
        if isinstance(event, AgentMessageDelta):
            return event
    raise AssertionError("the turn ended without a delta")


# -- input --------------------------------------------------------------------------


async def test_thread_turn_sends_image_input():
    # The localImage item is schema-checked on the way out; codex echoes it
    # in the userMessage item with detail:null.
    async with server(CodexLike) as (client, seen):
        thread = await Thread.start(client)
        done = await thread.turn(["what is this?", image_input("/abs/pixel.png")]).run()
        (params,) = sent(seen, "turn/start")
        assert params == {
            "threadId": THREAD,
            "input": [{"type": "text", "text": "what is this?"}, {"type": "localImage", "path": "/abs/pixel.png"}],
        }
        user = done.items[0]
        assert user["type"] == "userMessage"
        assert user["content"][1] == {"type": "localImage", "path": "/abs/pixel.png", "detail": None}


async def test_thread_turn_passes_other_input_items_through():
    # A mention (UserInput's MentionUserInput) is sent as given and echoed so.
    mention = {"type": "mention", "name": "repo", "path": "app://repo"}

    async with server(CodexLike) as (client, seen):
        thread = await Thread.start(client)
        done = await thread.turn(["see", mention]).run()
        assert sent(seen, "turn/start")[0]["input"][1] == mention
        assert done.items[0]["content"][1] == mention


# -- thread/start ---------------------------------------------------------------------


async def test_thread_start_sends_options_and_keeps_the_result():
    async with server(CodexLike) as (client, seen):
        thread = await Thread.start(
            client,
            cwd="/var/tmp/ws",
            model="gpt-fake",
            sandbox="workspace-write",
            approval_policy="never",
            params={"ephemeral": True, "model": "gpt-5.4"},
        )
        assert sent(seen, "thread/start") == [
            {
                "cwd": "/var/tmp/ws",
                "model": "gpt-5.4",  # params override the keyword options
                "sandbox": "workspace-write",
                "approvalPolicy": "never",
                "ephemeral": True,
            }
        ]
        assert thread.id == THREAD
        assert thread.info["approvalPolicy"] == "never"
        assert thread.info["thread"]["id"] == THREAD


async def test_thread_start_with_no_options_sends_empty_params():
    async with server(CodexLike) as (client, seen):
        await Thread.start(client)
        assert sent(seen, "thread/start") == [{}]


async def test_thread_warning_during_thread_start_reaches_the_thread():
    # codex sends it before the thread/start response.
    async with server(tb.ThreadWarning) as (client, _seen):
        thread = await Thread.start(client)
        first = await thread._sub.get(timeout=30)
        assert first["method"] == "warning"
        assert first["params"]["threadId"] == THREAD
        assert (await thread._sub.get(timeout=30))["method"] == "thread/started"
        # And the turn stream is not disturbed by it.
        done = await thread.turn("hi").run()
        assert done.status == "completed"


async def test_thread_warning_is_not_an_event_of_the_turn():
    # Left in the subscription, the warning and thread/started are ignored
    # methods (mapping.IGNORED): the turn yields neither.
    async with server(tb.ThreadWarning) as (client, _seen):
        thread = await Thread.start(client)
        events = await collect(thread.turn("hi"))
        assert kinds(events) == [
            "ItemStarted",
            "ItemCompleted",
            "ItemStarted",
            "AgentMessageDelta",
            "ItemCompleted",
            "TokenUsage",
            "TurnCompleted",
        ]


async def test_thread_close_stops_listening():
    # After close() nobody listens to the thread: what codex sends for it is
    # held for the next subscriber instead of going to the closed one.
    async with server(CodexLike) as (client, _seen):
        thread = await Thread.start(client)
        assert (await thread._sub.get(timeout=30))["method"] == "thread/started"
        thread.close()
        thread.close()  # idempotent
        await client.request("turn/start", {"threadId": THREAD, "input": [text_input("hi")]}, timeout=30)
        later = client.subscribe(THREAD)
        methods = []
        while not methods or methods[-1] != "turn/completed":
            methods.append((await later.get(timeout=30))["method"])
        assert methods[:2] == ["thread/status/changed", "turn/started"]
        assert thread._sub.pending() == 0


# -- a plain turn ---------------------------------------------------------------------


async def test_turn_plain_events_items_and_usage():
    async with server(tb.Plain) as (client, seen):
        thread = await Thread.start(client)
        turn = thread.turn("say hi")
        events = await collect(turn)
        assert kinds(events) == [
            "ItemStarted",  # userMessage
            "ItemCompleted",
            "ItemStarted",  # reasoning
            "ReasoningSummaryDelta",
            "ReasoningSummaryDelta",
            "ItemCompleted",
            "ItemStarted",  # commandExecution
            "CommandOutputDelta",
            "ItemCompleted",
            "TokenUsage",
            "ItemStarted",  # agentMessage
            "AgentMessageDelta",
            "AgentMessageDelta",
            "ItemCompleted",
            "TokenUsage",
            "TurnCompleted",
        ]
        assert [e.delta for e in events if isinstance(e, AgentMessageDelta)] == ["Hel", "lo"]
        assert [e.delta for e in events if isinstance(e, ReasoningSummaryDelta)] == ["**Planning** ", "the answer."]
        assert [e.delta for e in events if isinstance(e, CommandOutputDelta)] == ["done\n"]
        usage = [e for e in events if isinstance(e, TokenUsage)]
        assert [u.last for u in usage] == [U1, U2]
        assert usage[-1].total == U1 + U2
        assert usage[-1].context_window == 258400

        done = events[-1]
        assert done is turn.completed
        assert (done.turn_id, done.status, done.error) == (TURN, "completed", None)
        # The turn's history in completion order (not the wire's summary).
        assert [(i["type"], i["id"]) for i in done.items] == [
            ("userMessage", USER_ITEM),
            ("reasoning", "rs_1"),
            ("commandExecution", "call_cmd_1"),
            ("agentMessage", "msg_1"),
        ]
        assert done.items[-1]["text"] == "Hello"
        assert done.abandoned == ()
        assert done.usage == U1 + U2 == turn.usage
        assert turn.id == TURN and turn.done
        assert set(turn.items) == {USER_ITEM, "rs_1", "call_cmd_1", "msg_1"}
        # The books are the turn's fold, shared with whoever reads them.
        assert turn.books.done and turn.books.completed is done
        # A turn that keeps its history keeps no tool calls (only the agent's, without one, does).
        assert turn.books.started_tools() == []
        # The stream is over.
        assert await collect(turn) == []
        assert sent(seen, "turn/start") == [{"threadId": THREAD, "input": [{"type": "text", "text": "say hi"}]}]
        assert sent(seen, "turn/interrupt") == []


async def test_turn_params_are_added_to_turn_start():
    async with server(CodexLike) as (client, seen):
        thread = await Thread.start(client)
        await thread.turn("hi", params={"model": "gpt-5.4", "effort": "low"}).run()
        assert sent(seen, "turn/start") == [
            {"threadId": THREAD, "input": [{"type": "text", "text": "hi"}], "model": "gpt-5.4", "effort": "low"}
        ]


async def test_turn_run_returns_turn_completed_and_threads_outlive_turns():
    async with server(CodexLike) as (client, seen):
        thread = await Thread.start(client)
        first = await thread.turn("one").run()
        second = await thread.turn("two").run()
        assert isinstance(first, TurnCompleted) and isinstance(second, TurnCompleted)
        assert (first.turn_id, second.turn_id) == (TURNS[0], TURNS[1])
        assert first.status == second.status == "completed"
        assert first.usage == second.usage == U1
        assert sent(seen, "turn/interrupt") == []


async def test_turn_notifications_before_the_turn_start_response_are_kept():
    # codex can stream before it answers turn/start; the subscription exists first.
    async with server(tb.Early) as (client, _seen):
        thread = await Thread.start(client)
        turn = thread.turn("hi")
        events = await collect(turn)
        # The delta that came before the response -- and before its item/started.
        assert [e.delta for e in events if isinstance(e, AgentMessageDelta)] == ["early ", "late"]
        first = next(i for i, e in enumerate(events) if isinstance(e, AgentMessageDelta))
        msg_started = next(i for i, e in enumerate(events) if isinstance(e, ItemStarted) and e.item_id == "msg_1")
        assert first < msg_started
        assert events[-1].items[-1]["text"] == "early late"


async def test_turn_filters_other_turns_and_threads():
    async with server(tb.Filtering) as (client, _seen):
        thread = await Thread.start(client)
        turn = thread.turn("hi")
        events = await collect(turn)
        assert [e.delta for e in events if isinstance(e, AgentMessageDelta)] == ["mine"]
        done = events[-1]
        assert [e for e in events if isinstance(e, TurnCompleted)] == [done]
        assert (done.turn_id, done.status, done.error) == (TURN, "completed", None)
        assert [i["id"] for i in done.items] == [USER_ITEM, "msg_1"]
        assert done.usage == U1  # the other turn's usage is not counted
        assert [e.last for e in events if isinstance(e, TokenUsage)] == [U1]


class TrailingFrames(tb.Filtering):
    """Filtering's turn, then a frame of the thread's next turn right behind its turn/completed."""

    async def script(self, params: Any) -> None:
        await super().script(params)
        self.delta("msg_next", "next turn", turn="turn-next")


async def test_turn_burst_takes_every_queued_event_and_stops_at_the_turns_end():
    # The agent's loop: the events of the bursts, concatenated, are exactly the
    # turn's events as ``async for`` yields them; another turn's frames in the
    # queue are folded away; a frame queued behind turn/completed stays queued.
    async with server(tb.Filtering) as (client, _seen):
        expected = await collect((await Thread.start(client)).turn("hi"))
    async with server(TrailingFrames) as (client, _seen):
        thread = await Thread.start(client)
        turn = thread.turn("hi")
        got = await turn._burst()  # starts the turn; at least one event
        queued = thread._sub._items  # a thread's queue holds pairs: a method, then its params

        def params() -> list:
            return list(queued)[1::2]

        while not any(p.get("turnId") == "turn-next" for p in params()):
            await asyncio.sleep(0)  # until the whole script is queued
        while not turn.done:
            burst = await turn._burst()
            assert burst
            got += burst
        assert got == expected and isinstance(got[-1], TurnCompleted)
        assert await turn._burst() == []
        assert [p.get("turnId") for p in params()] == ["turn-next"]


async def test_turn_item_bookkeeping_abandoned_last_writer_and_early_delta():
    async with server(tb.Bookkeeping) as (client, _seen):
        thread = await Thread.start(client)
        events = await collect(thread.turn("hi"))
        done = events[-1]
        # Started, streamed, never completed (a cut stream that was retried).
        assert done.abandoned == ("msg_cut_1",)
        # Started and completed three times: once in items, the last payload.
        assert [i["id"] for i in done.items] == [USER_ITEM, "msg_inc", "msg_late"]
        assert done.items[1]["text"] == "attempt 3"
        assert sum(1 for e in events if isinstance(e, ItemCompleted) and e.item_id == "msg_inc") == 3
        # A delta before its item/started is still yielded, in order.
        late = [i for i, e in enumerate(events) if getattr(e, "item_id", None) == "msg_late"]
        assert isinstance(events[late[0]], AgentMessageDelta) and events[late[0]].delta == "late "
        assert isinstance(events[late[1]], ItemStarted)
        assert [e.message for e in events if isinstance(e, RetryingError)] == ["Reconnecting... 1/5"]


async def test_turn_retrying_errors_are_events_and_the_turn_goes_on():
    async with server(tb.Retrying) as (client, _seen):
        thread = await Thread.start(client)
        events = await collect(thread.turn("hi"))
        retries = [e for e in events if isinstance(e, RetryingError)]
        assert [r.message for r in retries] == ["Reconnecting... 1/5", "Reconnecting... 2/5"]
        assert retries[0].info == {"responseStreamDisconnected": {"httpStatusCode": 401}}
        assert retries[0].details.startswith("unexpected status 401")
        done = events[-1]
        assert (done.status, done.error) == ("completed", None)
        assert done.items[-1]["text"] == "recovered"


async def test_turn_failed_carries_the_turn_error():
    async with server(tb.Failed, "with-error") as (client, _seen):
        thread = await Thread.start(client)
        events = await collect(thread.turn("hi"))
        # error{willRetry:false} is not an event of its own.
        assert not [e for e in events if isinstance(e, RetryingError)]
        done = events[-1]
        assert (done.status, done.error) == ("failed", TURN_ERROR)
        assert done.error_message == TURN_ERROR["message"]


async def test_turn_failed_without_error_takes_the_error_notification():
    async with server(tb.Failed, "no-error") as (client, _seen):
        thread = await Thread.start(client)
        done = await thread.turn("hi").run()
        assert (done.status, done.error) == ("failed", TURN_ERROR)


async def test_turn_interrupted_after_a_final_error_has_no_error():
    async with server(tb.Failed, "interrupted") as (client, _seen):
        thread = await Thread.start(client)
        done = await thread.turn("hi").run()
        assert (done.status, done.error) == ("interrupted", None)


async def test_turn_start_refused_raises_rpc_error():
    async with server(tb.RejectTurn) as (client, seen):
        thread = await Thread.start(client)
        turn = thread.turn("hi")
        with pytest.raises(RpcError) as caught:
            await turn.run()
        assert (caught.value.code, caught.value.message) == (-32600, "Invalid request: missing field `input`")
        # Nothing to interrupt: the turn never got an id.
        assert turn.done and turn.id is None
        assert sent(seen, "turn/interrupt") == []


@pytest.mark.frame_problems("item/hologram/delta")
async def test_turn_unknown_notification_is_unmapped():
    async with server(tb.Unmapped) as (client, _seen):
        thread = await Thread.start(client)
        events = await collect(thread.turn("hi"))
        (unmapped,) = [e for e in events if isinstance(e, Unmapped)]
        assert unmapped.method == "item/hologram/delta"
        assert unmapped.params["delta"] == "3d"
        assert events[-1].status == "completed"


# -- stopping a turn ----------------------------------------------------------------------


async def test_turn_cancelling_the_consumer_interrupts_and_waits_for_completion():
    async with server(tb.Interruptible) as (client, seen):
        thread = await Thread.start(client)
        turn = thread.turn("hi")
        got_delta = asyncio.get_running_loop().create_future()

        async def consume():
            async for event in turn:
                if isinstance(event, AgentMessageDelta) and not got_delta.done():
                    got_delta.set_result(event)

        task = asyncio.ensure_future(consume())
        assert (await got_delta).delta == "Hel"
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert sent(seen, "turn/interrupt") == [{"threadId": THREAD, "turnId": TURN}]
        # It waited for turn/completed and kept the books.
        assert turn.done
        assert turn.completed is not None and turn.completed.status == "interrupted"
        assert turn.completed.abandoned == ("msg_1",)
        # The fake really got the interrupt.
        interrupts = [f for f in await received_by_fake(client) if f["method"] == "turn/interrupt"]
        assert interrupts == [{"method": "turn/interrupt", "params": {"threadId": THREAD, "turnId": TURN}}]
        assert await collect(turn) == []


async def test_turn_leaving_async_with_early_interrupts():
    async with server(tb.Interruptible) as (client, seen):
        thread = await Thread.start(client)
        async with thread.turn("hi") as turn:
            assert (await first_delta(turn)).delta == "Hel"
        assert sent(seen, "turn/interrupt") == [{"threadId": THREAD, "turnId": TURN}]
        assert turn.done and turn.completed.status == "interrupted"
        # The thread is free for the next turn, which gets its own id.
        async with thread.turn("again") as second:
            await first_delta(second)
        assert second.id == TURNS[1]
        assert second.completed.status == "interrupted"


async def test_turn_aclose_interrupts_once():
    async with server(tb.Interruptible) as (client, seen):
        thread = await Thread.start(client)
        turn = thread.turn("hi")
        await first_delta(turn)
        await turn.aclose()
        await turn.aclose()
        assert sent(seen, "turn/interrupt") == [{"threadId": THREAD, "turnId": TURN}]
        assert turn.completed.status == "interrupted"


async def test_turn_aclose_after_completion_sends_nothing():
    async with server(CodexLike) as (client, seen):
        thread = await Thread.start(client)
        async with thread.turn("hi") as turn:
            await collect(turn)
        await turn.interrupt()  # done: a no-op
        assert sent(seen, "turn/interrupt") == []


async def test_turn_aclose_before_start_sends_nothing():
    async with server(CodexLike) as (client, seen):
        thread = await Thread.start(client)
        turn = thread.turn("hi")
        await turn.interrupt()  # not started: a no-op
        await turn.aclose()
        assert turn.done and turn.id is None
        assert await collect(turn) == []
        assert sent(seen, "turn/start") == [] and sent(seen, "turn/interrupt") == []


async def test_turn_explicit_interrupt_ends_with_interrupted():
    async with server(tb.Interruptible) as (client, seen):
        thread = await Thread.start(client)
        turn = thread.turn("hi")
        await first_delta(turn)
        await turn.interrupt()
        rest = await collect(turn)
        assert kinds(rest) == ["TurnCompleted"]
        assert rest[-1].status == "interrupted"
        assert rest[-1].abandoned == ("msg_1",)
        assert sent(seen, "turn/interrupt") == [{"threadId": THREAD, "turnId": TURN}]


async def test_turn_interrupt_when_codex_says_no_active_turn():
    # The turn ended before the interrupt arrived: -32600 "no active turn to
    # interrupt"; the turn/completed already sent is drained.
    async with server(tb.NoActiveTurn) as (client, seen):
        thread = await Thread.start(client)
        turn = thread.turn("hi")
        await first_delta(turn)
        await turn.aclose()
        assert sent(seen, "turn/interrupt") == [{"threadId": THREAD, "turnId": TURN}]
        errors = [f["error"] for d, f in seen if d == "in" and "error" in f]
        assert errors == [{"code": -32600, "message": "no active turn to interrupt"}]
        assert turn.done and turn.completed.status == "completed"
        assert turn.completed.items[-1]["text"] == "Hello"


async def test_thread_interrupt_without_active_turn_raises_rpc_error():
    async with server(CodexLike) as (client, _seen):
        thread = await Thread.start(client)
        with pytest.raises(RpcError) as caught:
            await thread.interrupt(TURN)
        assert caught.value.code == -32600
        assert "no active turn to interrupt" in str(caught.value)


async def test_turn_interrupt_grace_expires_without_turn_completed(caplog):
    with caplog.at_level(logging.INFO, logger="codexmini.thread"):
        async with server(tb.SilentInterrupt) as (client, seen):
            thread = await Thread.start(client)
            turn = thread.turn("hi", interrupt_grace=0.3)
            await first_delta(turn)
            await turn.aclose()
            assert sent(seen, "turn/interrupt") == [{"threadId": THREAD, "turnId": TURN}]
            assert turn.done and turn.completed is None
    assert "no clean end after interrupt" in caplog.text


async def test_turn_process_exit_during_interrupt_ends_the_wait():
    async with server(tb.ExitOnInterrupt) as (client, _seen):
        thread = await Thread.start(client)
        turn = thread.turn("hi")
        await first_delta(turn)
        await turn.aclose()
        assert turn.done and turn.completed is None
        await client.wait_closed()
        assert client.returncode == 0


@pytest.mark.parametrize("transport", ["memory", "pipes"])
async def test_turn_child_exit_mid_turn_raises_process_exited(transport, tmp_path):
    # Over pipes, the exit code and the stderr tail come from a real process.
    codex_bin = None
    if transport == "pipes":
        codex_bin = FakeAppServer("support.thread_behaviours:ExitMidTurn").executable(str(tmp_path), [tb.TESTS])

    async with server(tb.ExitMidTurn, codex_bin=codex_bin) as (client, _seen):
        assert (client.pid is None) == (transport == "memory")
        thread = await Thread.start(client)
        turn = thread.turn("hi")
        with pytest.raises(ProcessExited) as caught:
            async with turn:
                await collect(turn)
        assert caught.value.returncode == 3
        assert "dying mid-turn on purpose" in caught.value.stderr_tail
        assert turn.done and turn.completed is None
        # The books keep what streamed before the exit.
        assert list(turn.books.open) == ["msg_1"]


async def test_turn_idle_timeout_raises_turn_timeout():
    async with server(tb.Silent) as (client, seen):
        thread = await Thread.start(client)
        turn = thread.turn("hi", idle_timeout=0.3)
        with pytest.raises(TurnTimeout) as caught:
            async with turn:
                await collect(turn)
        # A codexmini error, not asyncio's (issue 9 item 5), naming the turn.
        assert isinstance(caught.value, CodexminiError) and not isinstance(caught.value, asyncio.TimeoutError)
        assert (caught.value.turn_id, caught.value.timeout) == (TURN, 0.3)
        # Leaving the block interrupted the stalled turn.
        assert sent(seen, "turn/interrupt") == [{"threadId": THREAD, "turnId": TURN}]
        assert turn.completed.status == "interrupted"


async def test_a_turn_goes_on_after_an_idle_timeout_the_caller_caught():
    # The idle timeout is a question to the caller, not the end of the turn:
    # caught outside `async with` (nothing interrupts), iteration goes on where
    # it stopped -- with async for or __anext__, which share one stream.
    async with server(tb.Steer) as (client, seen):
        thread = await Thread.start(client)
        turn = thread.turn("start working", idle_timeout=0.3)
        assert isinstance(await turn.__anext__(), ItemStarted)
        seen_events = []
        with pytest.raises(TurnTimeout):
            async for event in turn:
                seen_events.append(event)
        assert type(seen_events[-1]) is AgentMessageDelta and seen_events[-1].delta == "Working"
        assert not turn.done and sent(seen, "turn/interrupt") == []
        assert turn.__aiter__() is turn.__aiter__()  # one stream again, a fresh one
        await turn.steer("also this")
        rest = [event async for event in turn]
        assert type(rest[-1]) is TurnCompleted and rest[-1].status == "completed"
        assert turn.done and [e async for e in turn] == [] and sent(seen, "turn/interrupt") == []


async def test_turn_cancelled_during_turn_start_still_interrupts():
    behaviour = tb.SlowStart()
    async with server(behaviour) as (client, seen):
        thread = await Thread.start(client)
        turn = thread.turn("hi")
        watcher = client.subscribe(AppServerClient.ALL)
        task = asyncio.ensure_future(collect(turn))
        # The fake says it got turn/start; it answers once the gate opens.
        while (await watcher.get(timeout=30))["method"] != "warning":
            pass
        task.cancel()
        await asyncio.sleep(0)  # the cancel lands while turn/start is in flight
        behaviour.gate.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert turn.id == TURN
        assert sent(seen, "turn/interrupt") == [{"threadId": THREAD, "turnId": TURN}]
        assert turn.completed.status == "interrupted"


async def test_turn_cancelled_during_turn_start_gives_up_after_the_grace():
    # The turn/start answer never comes within the grace: the turn id is
    # never learned, the request is abandoned and nothing is interrupted.
    behaviour = tb.SlowStart()
    async with server(behaviour) as (client, seen):
        thread = await Thread.start(client)
        turn = thread.turn("hi", interrupt_grace=0.01)
        watcher = client.subscribe(AppServerClient.ALL)
        task = asyncio.ensure_future(collect(turn))
        while (await watcher.get(timeout=30))["method"] != "warning":
            pass
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert turn.id is None
        assert sent(seen, "turn/interrupt") == []
        behaviour.gate.set()  # let the fake go on, so that it can exit


# -- steering ---------------------------------------------------------------------------


async def test_turn_steer_sends_expected_turn_id_and_returns_it():
    async with server(tb.Steer) as (client, seen):
        thread = await Thread.start(client)
        turn = thread.turn("start working")
        await first_delta(turn)
        assert await turn.steer(["also this", image_input("/abs/pixel.png")]) == TURN
        assert sent(seen, "turn/steer") == [
            {
                "threadId": THREAD,
                "expectedTurnId": TURN,
                "input": [{"type": "text", "text": "also this"}, {"type": "localImage", "path": "/abs/pixel.png"}],
            }
        ]
        done = (await collect(turn))[-1]
        assert done.status == "completed"
        steered = [i for i in done.items if i["type"] == "userMessage"][-1]
        assert steered["content"][0]["text"] == "also this"
        assert done.items[-1]["text"] == "Steered."


async def test_turn_steer_before_start_raises_and_sends_nothing():
    async with server(CodexLike) as (client, seen):
        thread = await Thread.start(client)
        turn = thread.turn("hi")
        with pytest.raises(CodexminiError, match="not started"):
            await turn.steer("too early")
        assert sent(seen, "turn/steer") == []


async def test_thread_steer_with_a_wrong_turn_id_is_an_rpc_error():
    async with server(tb.Steer) as (client, _seen):
        thread = await Thread.start(client)
        turn = thread.turn("hi")
        await first_delta(turn)
        with pytest.raises(RpcError) as caught:
            await thread.steer("x", "wrong-turn-id")
        assert caught.value.code == -32600
        assert f"expected active turn id `wrong-turn-id` but found `{TURN}`" in str(caught.value)
        await turn.aclose()


async def test_thread_steer_without_an_active_turn_is_an_rpc_error():
    async with server(CodexLike) as (client, _seen):
        thread = await Thread.start(client)
        with pytest.raises(RpcError, match="no active turn to steer"):
            await thread.steer("x", TURN)


# -- invalid notifications ---------------------------------------------------------------


@pytest.mark.frame_problems("'delta' is a required property")
async def test_turn_invalid_notifications_are_all_counted_and_the_first_ten_logged(caplog):
    async with server(tb.InvalidDeltas) as (client, _seen):
        thread = await Thread.start(client)
        turn = thread.turn("hi")
        with caplog.at_level(logging.WARNING, logger="codexmini.thread"):
            events = await collect(turn)
        assert kinds(events).count("InvalidNotification") == 12
        assert events[-1].status == "completed" and turn.books.invalid == 12
    logged = [r.getMessage() for r in caplog.records if "skipped invalid notification" in r.getMessage()]
    assert [m.split("#")[1].split(":")[0] for m in logged] == [str(n) for n in range(1, 11)]


# -- the lifecycle: resume, fork and list (canned answers, from the recordings) --------


async def test_thread_resume_of_an_unpersisted_thread_is_thread_not_found() -> None:
    answer = recorded("resume_unpersisted", "thread/resume")
    tid = answer["error"]["message"].rsplit(" ", 1)[1]  # "no rollout found for thread id <id>"
    fake = Canned({"thread/resume": [answer]})
    async with await client_for(fake) as client:
        with pytest.raises(ThreadNotFound) as caught:
            await Thread.resume(client, tid, cwd="/var/tmp/ws", model="m")
        assert caught.value.thread_id == tid
        (asked,) = fake.asked
        assert asked == ("thread/resume", {"threadId": tid, "cwd": "/var/tmp/ws", "model": "m"})


async def test_thread_fork_sends_its_options() -> None:
    fake = Canned({"thread/fork": [recorded("fork", "thread/fork")]})
    async with await client_for(fake) as client:
        fork = await Thread.fork(
            client,
            THREAD,
            last_turn_id="turn-1",
            ephemeral=True,
            sandbox="read-only",
            params={"approvalsReviewer": "user"},
        )
        assert fork.id == fake.answers["thread/fork"][0]["result"]["thread"]["id"]
        assert fake.asked == [
            (
                "thread/fork",
                {
                    "threadId": THREAD,
                    "sandbox": "read-only",
                    "lastTurnId": "turn-1",
                    "ephemeral": True,
                    "approvalsReviewer": "user",
                },
            )
        ]
        assert fork.history_mode == "legacy"
        fork.close()


async def test_thread_list_sends_its_filters_and_follows_the_cursor() -> None:
    first, second = recorded("list_threads", "thread/list", 0), recorded("list_threads", "thread/list", 1)
    fake = Canned({"thread/list": [first, second]})
    async with await client_for(fake) as client:
        listed = [
            t["id"]
            async for t in Thread.list(
                client, limit=2, archived=False, cwd="/w", search="x", params={"sortKey": "created_at"}
            )
        ]
        assert listed == [t["id"] for t in first["result"]["data"] + second["result"]["data"]]
        base = {"limit": 2, "archived": False, "cwd": "/w", "searchTerm": "x", "sortKey": "created_at"}
        assert fake.asked == [
            ("thread/list", base),
            ("thread/list", dict(base, cursor=first["result"]["nextCursor"])),
        ]


# -- the lifecycle: read, archive, name ------------------------------------------------


async def test_read_and_admin_helpers_send_the_thread_id() -> None:
    fake = Canned(
        {
            "thread/read": [recorded("read", "thread/read")],
            "thread/archive": [{"result": {}}],
            "thread/unarchive": [recorded("archive", "thread/unarchive")],
            "thread/name/set": [{"result": {}}],
        }
    )
    async with await client_for(fake) as client:
        thread = await Thread.start(client)
        assert (await thread.read(include_turns=False))["id"]
        await thread.archive()
        assert (await thread.unarchive())["name"] == "filed thread"
        await thread.set_name("n")
    assert fake.asked == [
        ("thread/read", {"threadId": THREAD, "includeTurns": False}),
        ("thread/archive", {"threadId": THREAD}),
        ("thread/unarchive", {"threadId": THREAD}),
        ("thread/name/set", {"threadId": THREAD, "name": "n"}),
    ]


# -- rollback: a method one version lacks ----------------------------------------------


async def test_rollback_refuses_less_than_one_turn() -> None:
    async with await client_for(Canned({})) as client:
        thread = await Thread.start(client)
        with pytest.raises(ConfigError, match=">= 1"):
            await thread.rollback(0)


async def test_rollback_without_thread_rollback_nor_a_paginated_thread_says_so() -> None:
    # codex 0.171.0's words for a method it does not have (its threads are
    # paginated, so codexmini never asks it; a legacy thread on such a codex would).
    unknown = {
        "error": {
            "code": -32600,
            "message": "Invalid request: unknown variant `thread/rollback`, expected one of `initialize`",
        }
    }

    fake = Canned({"thread/rollback": [unknown]})
    async with await client_for(fake) as client:
        thread = await Thread.start(client)
        with pytest.raises(MethodNotFound) as caught:
            await thread.rollback(2)
        assert "no thread/rollback (removed in 0.171.0)" in str(caught.value) and "legacy, not paginated" in str(
            caught.value
        )
        assert caught.value.method == "thread/rollback" and caught.value.code == -32600
        assert fake.asked == [("thread/rollback", {"threadId": THREAD, "numTurns": 2})]


async def test_rollback_of_a_thread_of_unknown_history_mode_tries_thread_rollback() -> None:
    fake = Canned({"thread/rollback": [{"error": {"code": -32601, "message": "method not found"}}]})
    async with await client_for(fake) as client:
        thread = Thread(client, THREAD, {})  # opened elsewhere: no historyMode known
        assert thread.history_mode is None
        with pytest.raises(MethodNotFound, match="of unknown history mode"):
            await thread.rollback()


def paginated_start(version: str = "0.171.0") -> Any:
    def start(fake: Canned, params: Mapping[str, Any]) -> Dict[str, Any]:
        result = thread_start_result(params)
        result["thread"]["historyMode"] = "paginated"
        return {"result": result}

    return start


async def test_rollback_of_a_paginated_thread_reverts_before_the_nth_newest_turn() -> None:
    page = recorded("rollback", "thread/turns/list", version="0.171.0")
    turn = page["result"]["data"][0]
    two = {"result": {"data": [turn, dict(turn, id="00000000-0000-7000-8000-000000000099")], "nextCursor": None}}
    fake = Canned(
        {
            "thread/start": [paginated_start()],
            "thread/turns/list": [two],
            "thread/revert": [recorded("rollback", "thread/revert", version="0.171.0")],
        },
        version="0.171.0",
    )
    async with await client_for(fake) as client:
        thread = await Thread.start(client)
        await thread.rollback(2)
        await thread.rollback(1)
    assert fake.asked[1:] == [
        ("thread/turns/list", {"threadId": THREAD, "sortDirection": "desc", "limit": 2}),
        ("thread/revert", {"threadId": THREAD, "beforeTurnId": "00000000-0000-7000-8000-000000000099"}),
        ("thread/turns/list", {"threadId": THREAD, "sortDirection": "desc", "limit": 1}),
        ("thread/revert", {"threadId": THREAD, "beforeTurnId": turn["id"]}),
    ]


async def test_rollback_of_a_paginated_thread_without_turns_sends_no_revert() -> None:
    none = {"result": {"data": [], "nextCursor": None}}
    fake = Canned({"thread/start": [paginated_start()], "thread/turns/list": [none]}, version="0.171.0")
    async with await client_for(fake) as client:
        thread = await Thread.start(client)
        await thread.rollback(3)
    assert [m for m, _ in fake.asked] == ["thread/start", "thread/turns/list"]


# -- review and compaction: turns started another way ----------------------------------


class Reviews(Canned):
    """review/start like codex 0.149.1 (recorded), detached (0.149.1 has the
    ``detached`` delivery; 0.171.0's schema only ``inline``): the review runs
    in a new thread, whose turn streams right after the response."""

    REVIEW_THREAD = "00000000-0000-7000-8000-0000000000aa"

    def __init__(self) -> None:
        super().__init__({})

    async def on_review_start(self, rid: Any, params: Mapping[str, Any]) -> None:
        self.asked.append(("review/start", dict(params)))
        answer = recorded("review", "review/start")["result"]
        answer["reviewThreadId"] = self.REVIEW_THREAD
        turn = answer["turn"]["id"]
        self.write({"id": rid, "result": answer})
        item = {"type": "exitedReviewMode", "id": "r1", "review": "Looks fine."}
        self.completed(item, turn=turn, thread=self.REVIEW_THREAD)
        self.finish(items=[], turn=turn, thread=self.REVIEW_THREAD)


async def test_review_detached_runs_in_the_review_thread() -> None:
    fake = Reviews()
    async with await client_for(fake) as client:
        thread = await Thread.start(client)
        review = thread.review({"type": "uncommittedChanges"}, delivery="detached", idle_timeout=10)
        done = await review.run()
        assert review.thread is not thread and review.thread.id == Reviews.REVIEW_THREAD
        assert done.status == "completed" and [i["type"] for i in done.items] == ["exitedReviewMode"]
        assert fake.asked == [
            ("review/start", {"threadId": THREAD, "target": {"type": "uncommittedChanges"}, "delivery": "detached"})
        ]


class Compacts(CodexLike):
    """thread/compact/start like codex: ``{}``, then a turn on the thread."""

    def __init__(self, started: bool = True) -> None:
        super().__init__()
        self.started_turn = started

    async def on_thread_compact_start(self, rid: Any, params: Mapping[str, Any]) -> None:
        self.write({"id": rid, "result": {}})
        self.status("active")
        if not self.started_turn:
            return  # never starts it: the caller's idle timeout ends the wait
        self.note("turn/started", {"threadId": THREAD, "turn": turn_object("00000000-0000-7000-8000-0000000000cc")})
        item = {"type": "contextCompaction", "id": "c1"}
        self.started(item, turn="00000000-0000-7000-8000-0000000000cc")
        self.completed(item, turn="00000000-0000-7000-8000-0000000000cc")
        self.finish(turn="00000000-0000-7000-8000-0000000000cc")


async def test_compact_learns_the_turn_id_from_turn_started() -> None:
    async with await client_for_behaviour(Compacts()) as client:
        thread = await Thread.start(client)
        done = await thread.compact(idle_timeout=10)
        assert done.turn_id == "00000000-0000-7000-8000-0000000000cc"
        assert [i["type"] for i in done.items] == ["contextCompaction"]


async def test_compact_without_a_turn_started_times_out() -> None:
    async with await client_for_behaviour(Compacts(started=False)) as client:
        thread = await Thread.start(client)
        with pytest.raises(TurnTimeout):
            await thread.compact(idle_timeout=0.2)


class BadStart(Compacts):
    """A turn/started whose turn has no id, then a good one."""

    async def on_thread_compact_start(self, rid: Any, params: Mapping[str, Any]) -> None:
        self.note("turn/started", {"threadId": THREAD, "turn": {"status": "inProgress"}})
        await super().on_thread_compact_start(rid, params)


@pytest.mark.frame_problems("turn/started")  # a turn without an id: on purpose
async def test_compact_skips_a_turn_started_without_an_id() -> None:
    async with await client_for_behaviour(BadStart()) as client:
        thread = await Thread.start(client)
        done = await thread.compact(idle_timeout=10)
        assert done.turn_id == "00000000-0000-7000-8000-0000000000cc"


# -- usage limits: a failed turn's reset time ------------------------------------------


SNAPSHOT = RATE_LIMITS_EXHAUSTED


async def test_usage_limit_failure_carries_the_reset_time_from_the_last_snapshot() -> None:
    async with await client_for_behaviour(tb.RateLimited(SNAPSHOT, fail=True)) as client:
        updates = client.subscribe(client.GLOBAL)
        thread = await Thread.start(client)
        done = await thread.turn("hi").run()
        failure = done.failure
        assert isinstance(failure, UsageLimitExceeded) and failure.resets_at == 1796130000
        assert failure.rate_limits == SNAPSHOT and client.rate_limits == SNAPSHOT
        assert failure.turn_id == done.turn_id and failure.info == "usageLimitExceeded"
        with pytest.raises(UsageLimitExceeded, match="resets at 1796130000"):
            done.raise_for_status()
        event = await asyncio.wait_for(updates.events().__anext__(), 10)
        assert event == RateLimitsUpdated(
            "codex", RateLimitWindow(100, 300, 1796130000), RateLimitWindow(40, 10080, 1796216400), SNAPSHOT
        )
        assert event.resets_at == 1796130000


async def test_turn_without_a_deadline_waits_on_the_subscriptions_future_itself(monkeypatch):
    # Many turns at once wake once an event or two: a wait with no deadline
    # awaits the subscription's future in the turn's own frame, not through
    # Turn._wait and Subscription._get (two coroutines created and resumed a
    # wake); a wait with a deadline still goes through them.
    calls: List[str] = []
    wait = Turn._wait

    async def counted(self: Turn, sub: Any) -> Any:
        calls.append("wait")
        return await wait(self, sub)

    monkeypatch.setattr(Turn, "_wait", counted)
    async with server(tb.Plain) as (client, _seen):
        thread = await Thread.start(client)
        plain = await collect(thread.turn("say hi"))
        assert calls == [] and thread._sub._waiter is None
        bounded = await collect(thread.turn("say hi", idle_timeout=30))
        assert calls and thread._sub._waiter is None
        assert kinds(bounded) == kinds(plain) and plain[-1].status == "completed"
