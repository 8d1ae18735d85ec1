"""The client (``codexmini._client``): the asyncio shell over the RPC core.

In memory first: a behaviour of tests/support/behaviours.py plays codex
through :class:`codexmini.testing.FakeAppServer` (no process, no pipe):
routing, responses in any order, unknown and duplicate answers, server
requests and their handlers, big, oversized and garbage lines, timeouts,
taps and observers, closing; an overloaded request retried with backoff and
jitter until the retries run out, the rate-limit snapshot it keeps.

Then over real pipes: the fake runs as a *child process* (an executable
"codex" written by ``FakeAppServer.executable``) for what only a process
shows: ``start()`` reaching the child (argv, environment, working directory),
a refused ``initialize`` closing the child, exit codes and the stderr tail,
the close escalating to signals (a child that ignores stdin's end and
SIGTERM), stdout closed by a child that keeps running, stdin closed under a
write, a last line without a newline.  A few of them run in memory too
(``via`` = ``memory``): the in-memory fake claims to simulate these
faithfully, and the same test proves it.

The process itself (spawn errors, its group, stderr) is tested in
tests/test_process.py, a subscription's queue in tests/test_subscriptions.py,
the protocol bookkeeping without any I/O in tests/test_rpc.py.

Every frame exchanged passes through the conformance plugin's validator (it
taps every client), so the fake is held to the real protocol.  Waits are
bounded (every coroutine test has the root conftest's deadline, every ``get``
its own timeout); nothing asserts how long something took.
"""

from __future__ import annotations

import asyncio
import collections
import gc
import logging
import os
import signal
from typing import List

import pytest
from support import behaviours as b
from support.canned import Canned, client_for, client_for_behaviour, recorded
from support.fake_client import alive, codex_bin, gone, reported, run, spawned, started, until
from support.thread_behaviours import RateLimited

from codexmini import NO_RETRY, Launch, Limits, RetryPolicy, Timeouts, __version__, _rpc
from codexmini import _client as client_mod
from codexmini._client import ALL, GLOBAL, AppServerClient
from codexmini._errors import (
    ClientClosed,
    CodexTimeout,
    ProcessExited,
    ProtocolError,
    RequestTimeout,
    RpcError,
    ServerOverloaded,
    TransportError,
    WriteTimeout,
)
from codexmini._threads import Thread
from codexmini.testing import FakeAppServer, MemoryTransport
from codexmini.testing.codex_like import RATE_LIMITS_EXHAUSTED
from codexmini.testing.fake_appserver import INIT_RESULT

THREAD = b.THREAD
APPROVAL = b.APPROVAL
SNAPSHOT = RATE_LIMITS_EXHAUSTED


def sent(fake: FakeAppServer, method: str) -> bool:
    """Whether the fake has received a frame of ``method``."""
    return any(f.get("method") == method for f in fake.server.received)


# -- requests and responses -------------------------------------------------------


async def test_client_initialize_records_server_info():
    client = await started(b.echo)
    try:
        assert client.server_info == INIT_RESULT
        assert client.pid is None and client.returncode is None and client.healthy
        assert await client.request("thread/loaded/list", {}) == {"data": ["2"], "nextCursor": None}
    finally:
        await client.close()


async def test_client_out_of_order_responses_reach_their_requests():
    client = await started(b.out_of_order)
    try:
        first, second = await asyncio.gather(
            client.request("thread/loaded/list", {}), client.request("thread/loaded/list", {})
        )
        assert (first["data"], second["data"]) == (["first"], ["second"])
    finally:
        await client.close()


@pytest.mark.frame_problems("response to unknown request id 999")
async def test_client_rpc_error_carries_code_message_and_method_and_an_unknown_id_is_counted():
    client = await started(b.unknown_response)
    try:
        with pytest.raises(RpcError) as info:
            await client.request("thread/start", {})
        assert (info.value.code, info.value.message, info.value.method) == (
            -32600,
            "Not initialized",
            "thread/start",
        )
        # The answer to id 999 came right after; the next request proves it was read.
        assert await client.request("thread/loaded/list", {}) == {"data": ["3"], "nextCursor": None}
        assert client.stats["unknown_responses"] == 1
        assert client.protocol_errors[-1].reason == "an answer to unknown request id 999"
    finally:
        await client.close()


@pytest.mark.frame_problems("response to unknown request id 2: the client sent no request with this id")
async def test_client_a_response_sent_twice_settles_its_request_once():
    client = await started(b.answer_twice)
    try:
        assert await client.request("thread/loaded/list", {}) == {"data": ["once"], "nextCursor": None}
        assert await client.request("thread/loaded/list", {}) == {"data": ["3"], "nextCursor": None}
        assert client.stats["frames_in"] == 4  # initialize result, both copies, the second answer
        assert client.stats["unknown_responses"] == 1
        assert client.protocol_errors[-1].reason == "a second answer to request 2 (thread/loaded/list)"
    finally:
        await client.close()


async def test_client_request_timeout_then_the_late_answer_is_counted():
    client = await started(b.answer_late)
    try:
        with pytest.raises(RequestTimeout) as info:
            await client.request("thread/loaded/list", {}, timeout=0.1)
        assert (info.value.method, info.value.timeout) == ("thread/loaded/list", 0.1)
        assert isinstance(info.value, CodexTimeout)
        assert not client.healthy and not client.closed
        assert client.stats["timeouts"] == 1
        # The fake answers the first request only now, then the second.
        assert await client.request("thread/loaded/list", {}) == {"data": ["on time"], "nextCursor": None}
        assert client.stats["unknown_responses"] == 1
        assert "a late answer to request 2" in client.protocol_errors[-1].reason
    finally:
        await client.close()


async def test_client_request_deadline_covers_a_write_the_server_does_not_read():
    fake = FakeAppServer(b.stop_reading)
    client = await AppServerClient.start(Launch(launcher=fake.launch, timeouts=Timeouts(close=1.0)))
    try:
        assert await until(lambda: not fake.server.reading)
        # More than a pipe holds: the write itself blocks, and the deadline ends it.
        with pytest.raises(RequestTimeout):
            await client.request("thread/loaded/list", {"cursor": "c" * 100_000}, timeout=0.2)
        assert not client.healthy
    finally:
        await client.close()
    assert client.returncode == -signal.SIGTERM  # it read nothing, so stdin's end did not stop it


async def test_client_request_without_params_and_start_without_initialize():
    fake = FakeAppServer(b.handshake_then_report)
    client = await AppServerClient.start(Launch(launcher=fake.launch), initialize=False)
    try:
        assert client.server_info == {}
        await asyncio.sleep(0)
        assert fake.server.received == []  # nothing is sent before initialize()
        sub = client.subscribe(THREAD)
        assert await client.initialize() == INIT_RESULT
        assert await client.request("config/mcpServer/reload", timeout=10) == {}
        # The method takes no params (its schema branch says ``params: null``),
        # and the fake received a frame without a params member at all.
        assert await reported(sub) == {"id": 2, "method": "config/mcpServer/reload"}
    finally:
        await client.close()


async def test_client_notify_sends_params_when_given():
    client = await started(b.handshake_then_report)
    sub = client.subscribe(THREAD)
    try:
        # The schema's initialized branch names no params; the JSON-RPC
        # envelope declares an optional ``params``, so the frame passes.
        await client.notify("initialized", {"again": True})
        assert await reported(sub) == {"method": "initialized", "params": {"again": True}}
    finally:
        await client.close()


# -- lines: big, over the cap, garbage ------------------------------------------------


async def test_client_reads_a_16_mib_line():
    client = await started(b.big_line)
    sub = client.subscribe(THREAD)
    try:
        await client.request("thread/loaded/list", {})
        big = await sub.get(timeout=30)
        assert len(big["params"]["delta"]) == 16 * 1024 * 1024
        assert (await sub.get(timeout=10))["params"]["delta"] == "after"
    finally:
        await client.close()


async def test_client_skips_a_line_over_the_cap_and_keeps_reading(caplog):
    client = await started(b.over_cap, limits=Limits(max_frame_bytes=1024 * 1024))
    sub = client.subscribe(THREAD)
    try:
        await client.request("thread/loaded/list", {})
        assert (await sub.get(timeout=10))["params"]["delta"] == "first-after"
        assert (await sub.get(timeout=10))["params"]["delta"] == "second-after"
        assert client.stats["malformed"] == 1
        assert "exceeds the cap of 1048576 bytes" in caplog.text
    finally:
        await client.close()


@pytest.mark.frame_problems("not a JSON-RPC frame: needs method", "response to unknown request id None")
async def test_client_skips_garbage_lines():
    client = await started(b.garbage)
    sub = client.subscribe(THREAD)
    try:
        await client.request("thread/loaded/list", {})
        for _ in b.GARBAGE:
            assert (await sub.get(timeout=10))["params"]["delta"] == "ok"
        assert client.stats["malformed"] == len(b.GARBAGE)
        reasons = [e.reason for e in client.protocol_errors]
        assert all(isinstance(e, ProtocolError) for e in client.protocol_errors)
        assert [r.split(":")[0] for r in reasons] == [
            "invalid JSON",
            "not a JSON-RPC frame (list)",
            "not a JSON-RPC frame (str)",
            "not a JSON-RPC frame",
            "invalid UTF-8 at byte 0",
            "not a JSON-RPC frame",
            "invalid JSON",
        ]
        assert reasons[3] == "not a JSON-RPC frame: it has neither a method nor an id"
        assert reasons[5] == "not a JSON-RPC frame: its id is null, not an integer or a string"
    finally:
        await client.close()


# -- notifications: routing and bounds ------------------------------------------------


async def test_client_routes_by_thread_and_buffers_early_notifications():
    client = await started(b.global_and_threads)
    everything = client.subscribe(ALL)
    glob = client.subscribe(GLOBAL)
    try:
        await client.request("thread/loaded/list", {})
        assert (await glob.get(timeout=10))["method"] == "configWarning"
        methods = [(await everything.get(timeout=10))["method"] for _ in range(4)]
        assert methods == ["configWarning", "warning", "warning", "item/agentMessage/delta"]
        mine = client.subscribe(THREAD)
        assert [mine.get_nowait()["params"].get("message", "delta") for _ in range(2)] == ["early", "delta"]
        assert mine.get_nowait() is None and mine.pending() == 0
        mine.close()
        mine.close()
        other = client.subscribe(b.OTHER_THREAD)
        assert other.get_nowait()["params"]["message"] == "other thread"
        assert client.stats["unrouted"] == 0
    finally:
        await client.close()


async def test_client_every_subscriber_of_a_key_gets_the_frame_until_it_leaves():
    client = await started(b.global_and_threads)
    one, two = client.subscribe(THREAD), client.subscribe(THREAD)
    everything, glob = client.subscribe(ALL), client.subscribe(GLOBAL)
    glob2 = client.subscribe(GLOBAL)
    two.close()  # the thread stays claimed by the first subscriber
    everything.close()
    glob.close()
    try:
        await client.request("thread/loaded/list", {})
        assert [one.get_nowait()["method"] for _ in range(2)] == ["warning", "item/agentMessage/delta"]
        assert (two.pending(), everything.pending(), glob.pending()) == (0, 0, 0)
        assert glob2.get_nowait()["method"] == "configWarning"
        assert client.stats["unrouted"] == 0
    finally:
        await client.close()


async def test_client_notification_for_a_thread_whose_subscriber_left_is_held_again():
    client = await started(b.global_and_threads)
    mine = client.subscribe(THREAD)
    mine.close()  # its thread's frames go back to the unclaimed buffer
    glob = client.subscribe(GLOBAL)
    try:
        await client.request("thread/loaded/list", {})
        assert (await glob.get(timeout=10))["method"] == "configWarning"
        again = client.subscribe(THREAD)
        assert [again.get_nowait()["method"] for _ in range(2)] == ["warning", "item/agentMessage/delta"]
    finally:
        await client.close()


async def test_client_global_notification_without_a_global_subscriber_is_counted_unrouted():
    client = await started(b.global_and_threads)
    try:
        await client.request("thread/loaded/list", {})
        assert client.stats["unrouted"] == 1  # configWarning; the thread frames are held
    finally:
        await client.close()


# -- server requests -------------------------------------------------------------------


@pytest.mark.frame_problems("fake/unknownRequest")
async def test_client_unknown_server_request_gets_method_not_found():
    client = await started(b.unknown_request)
    sub = client.subscribe(THREAD)
    try:
        assert await reported(sub) == {
            "id": 0,
            "error": {"code": -32601, "message": "method not found: fake/unknownRequest"},
        }
    finally:
        await client.close()


async def test_client_server_request_without_handler_is_declined():
    client = await started(b.approval)
    seen = []
    client.on_answer(lambda method, params, frame, by: seen.append((method, params["itemId"], frame, by)))
    sub = client.subscribe(THREAD)
    try:
        assert await reported(sub) == {"id": 0, "result": {"decision": "decline"}}
        assert seen == [(APPROVAL, "call_cmd_1", {"id": 0, "result": {"decision": "decline"}}, "default")]
    finally:
        await client.close()


@pytest.mark.parametrize("behaviour, expected_by", [("accept", "handler"), ("raise", "error"), ("slow", "timeout")])
async def test_client_handler_result_error_and_deadline(behaviour, expected_by, caplog):
    async def handler(method, params):
        assert method == APPROVAL
        assert params["itemId"] == "call_cmd_1"
        if behaviour == "raise":
            raise RuntimeError("handler broke")
        if behaviour == "slow":
            await asyncio.sleep(30)
        return {"decision": "accept"}

    fake = FakeAppServer(b.approval)
    client = await AppServerClient.start(Launch(launcher=fake.launch, timeouts=Timeouts(handler=0.2)), initialize=False)
    client.on_request(APPROVAL, handler)
    bys = []
    client.on_answer(lambda m, p, f, by: bys.append(by))
    await client.initialize()
    sub = client.subscribe(THREAD)
    try:
        decision = "accept" if behaviour == "accept" else "decline"
        assert await reported(sub) == {"id": 0, "result": {"decision": decision}}
        assert bys == [expected_by]
    finally:
        await client.close()
    if behaviour == "raise":
        assert f"handler for {APPROVAL} failed; answering fail-closed" in caplog.text
    elif behaviour == "slow":
        assert f"handler for {APPROVAL} missed its 0.2s deadline" in caplog.text


@pytest.mark.frame_problems("fake/unknownRequest")
async def test_client_handler_for_an_unknown_method_that_raises_gets_internal_error(caplog):
    async def handler(method, params):
        raise RuntimeError("the caller's own handler broke")

    client = await AppServerClient.start(Launch(launcher=FakeAppServer(b.unknown_request).launch), initialize=False)
    client.on_request("fake/unknownRequest", handler)
    bys = []
    client.on_answer(lambda method, params, frame, by: bys.append((method, by)))
    await client.initialize()
    sub = client.subscribe(THREAD)
    try:
        assert await reported(sub) == {
            "id": 0,
            "error": {"code": -32603, "message": "handler for fake/unknownRequest failed"},
        }
        assert bys == [("fake/unknownRequest", "error")]
        assert "handler for fake/unknownRequest failed; answering fail-closed" in caplog.text
    finally:
        await client.close()


async def test_client_on_request_none_removes_the_handler():
    async def handler(method, params):  # pragma: no cover - removed before it could run
        return {"decision": "accept"}

    client = await AppServerClient.start(Launch(launcher=FakeAppServer(b.approval).launch), initialize=False)
    client.on_request(APPROVAL, handler)
    client.on_request(APPROVAL, None)
    client.on_request(APPROVAL, None)  # removing twice is harmless
    await client.initialize()
    sub = client.subscribe(THREAD)
    try:
        assert await reported(sub) == {"id": 0, "result": {"decision": "decline"}}
    finally:
        await client.close()


async def test_client_resolved_request_cancels_its_handler():
    cancelled = []
    running = asyncio.Event()

    async def handler(method, params):
        running.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(method)
            raise
        return {"decision": "accept"}  # pragma: no cover - cancelled first

    fake = FakeAppServer(b.approval_resolved)
    client = await AppServerClient.start(Launch(launcher=fake.launch), initialize=False)
    client.on_request("item/fileChange/requestApproval", handler)
    answers = []
    client.on_answer(lambda *a: answers.append(a))
    await client.initialize()
    sub = client.subscribe(THREAD)
    try:
        await asyncio.wait_for(running.wait(), 10)
        # The fake resolves the approval when this request arrives, before answering it.
        assert await client.request("thread/loaded/list", {}) == {
            "data": ["after the resolution"],
            "nextCursor": None,
        }
        assert (await sub.get(timeout=10))["method"] == "serverRequest/resolved"
        assert await until(lambda: cancelled)
        assert cancelled == ["item/fileChange/requestApproval"]
        assert answers == []
        assert not any("result" in f or "error" in f for f in fake.server.received[2:])  # nothing answered
    finally:
        await client.close()


async def test_client_handler_that_ignores_its_cancellation_is_not_answered_after_the_resolution():
    running = asyncio.Event()

    async def handler(method, params):
        running.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            pass  # a misbehaving handler: finishes anyway
        return {"decision": "accept"}

    fake = FakeAppServer(b.approval_resolved)
    client = await AppServerClient.start(Launch(launcher=fake.launch), initialize=False)
    client.on_request("item/fileChange/requestApproval", handler)
    answers = []
    client.on_answer(lambda *a: answers.append(a))
    await client.initialize()
    try:
        await asyncio.wait_for(running.wait(), 10)
        await client.request("thread/loaded/list", {})
        await client.request("thread/loaded/list", {})  # one more round trip after the handler ended
        assert answers == []
        assert not any("result" in f for f in fake.server.received)
    finally:
        await client.close()


async def test_client_handler_ending_in_cancelled_error_gets_the_fail_closed_answer():
    # A handler whose own await was cancelled (not the handler task) ends in
    # CancelledError: nobody cancelled the request, and an unanswered request
    # blocks codex, so it gets the fail-closed answer; codex's later
    # resolution is routed like any other notification.
    running = asyncio.Event()

    async def handler(method, params):
        running.set()
        raise asyncio.CancelledError()

    fake = FakeAppServer(b.approval_resolved)
    client = await AppServerClient.start(Launch(launcher=fake.launch), initialize=False)
    client.on_request("item/fileChange/requestApproval", handler)
    answers = []
    client.on_answer(lambda *a: answers.append(a))
    await client.initialize()
    sub = client.subscribe(THREAD)
    try:
        await asyncio.wait_for(running.wait(), 10)
        await client.request("thread/loaded/list", {})
        assert (await sub.get(timeout=10))["method"] == "serverRequest/resolved"
        assert [(a[2], a[3]) for a in answers] == [({"id": 0, "result": {"decision": "decline"}}, "error")]
    finally:
        await client.close()


async def test_client_server_request_repeated_with_the_same_id_is_answered_once():
    fake = FakeAppServer(b.approval_twice)
    client = await AppServerClient.start(Launch(launcher=fake.launch))
    answers = []
    client.on_answer(lambda m, p, f, by: answers.append(f))
    sub = client.subscribe(THREAD)
    try:
        assert await until(lambda: answers)
        await client.request("thread/loaded/list", {})
        await client.request("thread/loaded/list", {})  # the second copy was handled by now
        assert await reported(sub) == [{"id": 0, "result": {"decision": "decline"}}]
        assert answers == [{"id": 0, "result": {"decision": "decline"}}]
    finally:
        await client.close()


async def test_client_on_answer_unregister():
    client = await AppServerClient.start(Launch(launcher=FakeAppServer(b.approval).launch), initialize=False)
    kept, removed = [], []
    client.on_answer(lambda *a: kept.append(a[3]))
    remove = client.on_answer(lambda *a: removed.append(a[3]))
    remove()
    remove()  # idempotent
    await client.initialize()
    sub = client.subscribe(THREAD)
    try:
        assert await reported(sub) == {"id": 0, "result": {"decision": "decline"}}
        assert kept == ["default"]
        assert removed == []
    finally:
        await client.close()


async def test_client_an_observer_that_raises_is_logged_and_not_fatal(caplog):
    def broken(method, params, frame, by):
        raise ValueError("observer broke")

    client = await AppServerClient.start(Launch(launcher=FakeAppServer(b.approval).launch), initialize=False)
    later = []
    client.on_answer(broken)
    client.on_answer(lambda m, p, f, by: later.append(f))
    await client.initialize()
    sub = client.subscribe(THREAD)
    try:
        assert await reported(sub) == {"id": 0, "result": {"decision": "decline"}}
        assert later == [{"id": 0, "result": {"decision": "decline"}}]
        assert "answer observer failed" in caplog.text
        assert "observer broke" in caplog.text
        assert await client.request("thread/loaded/list", {}) == {"data": ["2"], "nextCursor": None}
    finally:
        await client.close()


async def test_client_close_cancels_a_handler_still_in_flight_and_answers_fail_closed():
    cancelled = []
    running = asyncio.Event()

    async def handler(method, params):
        running.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(method)
            raise
        return {"decision": "accept"}  # pragma: no cover - never reached

    fake = FakeAppServer(b.approval_then_wait)
    client = await AppServerClient.start(Launch(launcher=fake.launch, timeouts=Timeouts(close=2.0)), initialize=False)
    client.on_request(APPROVAL, handler)
    answered = []
    client.on_answer(lambda *a: answered.append(a))
    await client.initialize()
    await asyncio.wait_for(running.wait(), 10)
    await client.close()
    assert cancelled == [APPROVAL]
    # Closing answers what codex asked (a server that outlives the client
    # would keep the turn waiting for it): the fail-closed answer, by "close".
    decline = {"id": 0, "result": {"decision": "decline"}}
    assert [(a[0], a[2], a[3]) for a in answered] == [(APPROVAL, decline, "close")]
    assert fake.server.received[2:] == [decline]
    assert [f.get("method") for f in fake.server.received[:2]] == ["initialize", "initialized"]


async def test_client_a_handler_running_when_the_server_exits_is_cancelled():
    cancelled = []
    running = asyncio.Event()

    async def handler(method, params):
        running.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(method)
            raise
        return {"decision": "accept"}  # pragma: no cover - never reached

    fake = FakeAppServer(b.approval_then_wait)
    client = await AppServerClient.start(Launch(launcher=fake.launch), initialize=False)
    client.on_request(APPROVAL, handler)
    await client.initialize()
    await asyncio.wait_for(running.wait(), 10)
    fake.server.close_input()  # the fake's drain() ends: it exits 0
    await asyncio.wait_for(client.wait_closed(), 10)
    assert cancelled == [APPROVAL] and client.returncode == 0
    await client.close()


@pytest.mark.parametrize("behaviour", [b.blind_answer_at_eof, b.blind_error_at_eof])
async def test_client_answer_read_after_close_failed_its_request_is_ignored(behaviour):
    fake = FakeAppServer(behaviour)
    client = await AppServerClient.start(Launch(launcher=fake.launch, timeouts=Timeouts(close=2.0)))
    assert await until(lambda: not fake.server.reading)
    # Bigger than a pipe: the write blocks (the fake reads nothing), so
    # close() fails the request while it is still being written.
    pending = asyncio.ensure_future(client.request("thread/loaded/list", {"cursor": "c" * 100_000}, timeout=30))
    await asyncio.sleep(0)
    await client.close()
    with pytest.raises(ClientClosed):
        await pending
    assert client.stats["frames_in"] == 2  # the answer was read, and changed nothing
    assert client.stats["unknown_responses"] == 0


class Unkillable(MemoryTransport):
    """A child that survives every signal (say, stuck in uninterruptible sleep)."""

    def signal(self, sig):
        pass


async def test_client_close_gives_up_on_a_child_that_survives_sigkill():
    cancelled = []
    running = asyncio.Event()

    async def handler(method, params):
        running.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(method)
            raise
        return {"decision": "accept"}  # pragma: no cover - never reached

    async def launch(argv, env, cwd):
        return Unkillable(b.approval_then_linger, argv, env, cwd)

    client = await AppServerClient.start(Launch(launcher=launch, timeouts=Timeouts(close=0.05)), initialize=False)
    client.SIGNAL_GRACES = ((signal.SIGTERM, 0.05), (signal.SIGKILL, 0.05))
    client.on_request(APPROVAL, handler)
    await client.initialize()
    await asyncio.wait_for(running.wait(), 10)
    await client.close()  # returns, though the child never exited
    assert client.closed and client.returncode is None
    assert cancelled == [APPROVAL]
    with pytest.raises(ClientClosed):
        await client.request("thread/loaded/list", {})


# -- taps, observers, stats ---------------------------------------------------------------


async def test_client_taps_and_observers_see_both_directions(caplog):
    seen = []
    remove = client_mod.observe_clients(lambda: lambda d, f: seen.append((d, f.get("method"), f.get("id"))))
    none_remove = client_mod.observe_clients(lambda: None)  # a factory may decline to tap

    def broken_tap(direction, frame):
        raise ValueError("a broken tap must not break the client")

    try:
        client = await started(b.echo, tap=broken_tap)
        assert await client.request("thread/loaded/list", {}) == {"data": ["2"], "nextCursor": None}
        await client.close()
    finally:
        remove()
        remove()
        none_remove()
    assert seen == [
        ("out", "initialize", 1),
        ("in", None, 1),
        ("out", "initialized", None),
        ("out", "thread/loaded/list", 2),
        ("in", None, 2),
    ]
    assert "frame tap failed" in caplog.text


async def test_client_stats_count_frames_both_ways():
    client = await started(b.echo)
    try:
        await client.request("thread/loaded/list", {})
        assert {k: client.stats[k] for k in ("frames_in", "frames_out", "malformed", "handler_errors")} == {
            "frames_in": 2,
            "frames_out": 3,
            "malformed": 0,
            "handler_errors": 0,
        }
    finally:
        await client.close()


async def test_client_a_frame_whose_handling_fails_is_counted_and_the_next_one_read(caplog):
    client = await started(b.global_and_threads)
    glob = client.subscribe(GLOBAL)

    class Broken(collections.deque):  # fault injection: no public way makes handling a frame raise
        def append(self, item):
            raise ValueError("a subscription broke")

    glob._items = Broken()  # type: ignore[assignment]
    try:
        assert await client.request("thread/loaded/list", {}) == {"data": [], "nextCursor": None}
        assert client.stats["handler_errors"] == 1
        assert "handling a frame from codex failed; skipped" in caplog.text
    finally:
        await client.close()


# -- closing -----------------------------------------------------------------------------


async def test_client_close_twice_and_requests_after_close():
    fake = FakeAppServer(b.echo)
    client = await AppServerClient.start(Launch(launcher=fake.launch))
    await client.close()
    await client.close()
    assert client.closed and not client.healthy
    assert client.returncode == 0  # stdin's end made the fake return
    with pytest.raises(ClientClosed):
        await client.request("thread/loaded/list", {})
    with pytest.raises(ClientClosed):
        await client.notify("initialized")
    late = client.subscribe(THREAD)
    with pytest.raises(ClientClosed):
        late.get_nowait()


async def test_client_close_fails_pending_requests_with_client_closed():
    fake = FakeAppServer(b.never_answer)
    client = await AppServerClient.start(Launch(launcher=fake.launch))
    pending = asyncio.ensure_future(client.request("thread/loaded/list", {}))
    assert await until(lambda: sent(fake, "thread/loaded/list"))
    await client.close()
    with pytest.raises(ClientClosed):
        await pending


async def test_client_async_with_closes_and_wait_closed_returns():
    client = await started(b.echo)
    async with client as same:
        assert same is client
        assert await client.request("thread/loaded/list", {}) == {"data": ["2"], "nextCursor": None}
    assert client.closed
    await asyncio.wait_for(client.wait_closed(), 10)
    assert client.returncode == 0


async def test_client_resolution_with_no_handler_running_only_routes_the_notification():
    # serverRequest/resolved for a request whose handler already finished (its
    # done-callback not yet run) or that has none in flight: nothing is
    # cancelled, the notification reaches its subscribers all the same.
    async with await AppServerClient.start(Launch(launcher=FakeAppServer(b.lists).launch), initialize=False) as client:
        sub = client.subscribe(GLOBAL)
        finished = asyncio.get_running_loop().create_task(asyncio.sleep(0))
        await finished
        client._inflight[7] = finished
        for rid in (7, 8):
            frame = {"method": "serverRequest/resolved", "params": {"threadId": "t", "requestId": rid}}
            note = _rpc.Notification("serverRequest/resolved", frame["params"], "t", GLOBAL, frame)
            client._on_resolved(_rpc.ServerRequestResolved(rid, note))
            assert (await sub.get(timeout=10))["params"]["requestId"] == rid
        assert not finished.cancelled() and client._inflight[7] is finished


# -- overload: retries with backoff and jitter (canned answers, from the recordings) ---


OVERLOADED = {"code": -32001, "message": "Server overloaded; retry later."}


class Sleeps:
    """An injected sleep that records the delays and waits for nothing."""

    def __init__(self) -> None:
        self.delays: List[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


async def test_request_retries_an_overloaded_request_with_backoff_and_jitter() -> None:
    account = recorded("account", "account/read")
    fake = Canned({"account/read": [{"error": OVERLOADED}, {"error": OVERLOADED}, account]})
    sleeps = Sleeps()
    policy = RetryPolicy(retries=3, base_delay=0.1, max_delay=1.0, jitter=lambda: 0.5)
    async with await client_for(fake, retry=policy, retry_sleep=sleeps) as client:
        assert await client.read_account() == account["result"]
        # d = 0.1 then 0.2; waited d/2 + 0.5 * d/2
        assert sleeps.delays == [pytest.approx(0.075), pytest.approx(0.15)]
        assert (client.stats["overloaded"], client.stats["retries"]) == (2, 2)
        assert [m for m, _ in fake.asked] == ["account/read"] * 3
        assert client.healthy  # an overloaded answer is an answer


async def test_request_raises_server_overloaded_when_the_retries_run_out() -> None:
    fake = Canned({"account/read": [{"error": OVERLOADED}]})
    sleeps = Sleeps()
    async with await client_for(fake, retry=RetryPolicy(retries=2, jitter=lambda: 0.0), retry_sleep=sleeps) as client:
        with pytest.raises(ServerOverloaded) as caught:
            await client.read_account()
        assert caught.value.attempts == 3 and caught.value.code == -32001 and caught.value.method == "account/read"
        assert isinstance(caught.value, RpcError)
        assert len(sleeps.delays) == 2 and client.stats["overloaded"] == 3


async def test_request_no_retry_raises_the_first_overloaded_answer() -> None:
    fake = Canned({"account/read": [{"error": OVERLOADED}]})
    sleeps = Sleeps()
    async with await client_for(fake, retry=NO_RETRY, retry_sleep=sleeps) as client:
        with pytest.raises(ServerOverloaded) as caught:
            await client.call.account_read({})
        assert caught.value.attempts == 1 and sleeps.delays == [] and client.stats["retries"] == 0


async def test_request_other_errors_are_not_retried() -> None:
    refused = recorded("account", "account/rateLimits/read")
    fake = Canned({"account/rateLimits/read": [refused]})
    async with await client_for(fake, retry_sleep=Sleeps()) as client:
        with pytest.raises(RpcError, match="authentication required"):
            await client.read_rate_limits()
        assert len(fake.asked) == 1 and client.stats["retries"] == 0


# -- rate limits: the last valid snapshot; a request never answered --------------------


async def test_rate_limits_keep_the_last_valid_snapshot() -> None:
    async with await client_for_behaviour(RateLimited(SNAPSHOT, fail=False)) as client:
        assert client.rate_limits is None
        thread = await Thread.start(client)
        await thread.turn("hi").run()
        assert client.rate_limits == SNAPSHOT


@pytest.mark.frame_problems("account/rateLimits/updated")  # rateLimits not an object: on purpose
async def test_rate_limits_that_are_not_an_object_are_not_kept() -> None:
    async with await client_for_behaviour(RateLimited("junk", fail=False)) as client:
        thread = await Thread.start(client)
        await thread.turn("hi").run()
        assert client.rate_limits is None


async def test_a_request_codex_never_answers_times_out() -> None:
    fake = Canned({"account/read": [None]})
    async with await client_for(fake) as client:
        with pytest.raises(RequestTimeout):
            await client.read_account(timeout=0.2)


# == over real pipes (and the same in memory) ==========================================


@pytest.fixture(params=["memory", "pipes"])
def via(request, tmp_path):
    """Start a client on a behaviour in memory or as a child process."""

    async def start(behaviour: str, **options):
        if request.param == "memory":
            return await started(getattr(b, behaviour), **options)
        return await spawned(tmp_path, behaviour, **options)

    start.pipes = request.param == "pipes"
    return start


# -- start(): what reaches the child ------------------------------------------------------


async def test_client_start_spawns_codex_app_server_with_config_args_env_and_capabilities(tmp_path):
    codex = codex_bin(tmp_path, "report_argv")
    workdir = tmp_path / "work"
    workdir.mkdir()
    out = []

    client = await AppServerClient.start(
        Launch(
            codex_bin=codex,
            config=['model="gpt-5.1-codex"', "features.web_search=false"],
            args=["--extra-flag", "value"],
            env={"CODEXMINI_FAKE_MARK": "yes"},
            parent_env={"PATH": os.environ.get("PATH", ""), "OPENAI_API_KEY": "sk-not-passed"},
            cwd=str(workdir),
            timeouts=Timeouts(close=2.0),
        ),
        client_name="codexmini-test",
        experimental_api=False,
        opt_out_notifications=["thread/started", "item/agentMessage/delta"],
        tap=lambda direction, frame: out.append(frame) if direction == "out" else None,
    )
    try:
        assert client.argv == [
            codex,
            "app-server",
            "-c",
            'model="gpt-5.1-codex"',
            "-c",
            "features.web_search=false",
            "--extra-flag",
            "value",
        ]
        assert client.server_info == INIT_RESULT
        assert isinstance(client.pid, int) and alive(client.pid)
        report = await reported(client.subscribe(THREAD))
        # What the child really got: codex's argv, the filtered environment, the cwd.
        assert report["argv"] == client.argv[1:]
        assert report["env"] == {"NO_COLOR": "1", "CODEXMINI_FAKE_MARK": "yes", "OPENAI_API_KEY": None}
        assert report["cwd"] == str(workdir)
        assert await client.request("thread/loaded/list", {}) == {"data": ["2"], "nextCursor": None}
    finally:
        await client.close()
    assert out[0] == {
        "id": 1,
        "method": "initialize",
        "params": {
            "clientInfo": {"name": "codexmini-test", "version": __version__},
            "capabilities": {
                "experimentalApi": False,
                "optOutNotificationMethods": ["thread/started", "item/agentMessage/delta"],
            },
        },
    }
    assert out[1] == {"method": "initialized"}


async def test_client_start_closes_the_child_when_initialize_fails(tmp_path):
    codex = codex_bin(tmp_path, "initialize_error")
    pid_file = tmp_path / "pid"
    made = []

    class Recorded(AppServerClient):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    with pytest.raises(RpcError) as info:
        await Recorded.start(
            Launch(codex_bin=codex, env={"FAKE_PID_FILE": str(pid_file)}, timeouts=Timeouts(initialize=10))
        )
    assert (info.value.code, info.value.message, info.value.method) == (
        -32600,
        "fake: initialize refused",
        "initialize",
    )
    (client,) = made
    assert client.closed
    # The fake exits when its stdin closes, as codex does: close() reaped it.
    assert client.returncode == 0
    assert not alive(int(pid_file.read_text()))
    with pytest.raises(ClientClosed):
        await client.request("thread/loaded/list", {})


# -- exit: codes, stderr, signals -----------------------------------------------------------


async def test_client_child_exit_fails_pending_request_with_exit_code_and_stderr(via):
    client = await via("exit_mid_request", timeouts=Timeouts(request=60))
    sub = client.subscribe(THREAD)
    with pytest.raises(ProcessExited) as info:
        await client.request("thread/loaded/list", {})
    assert info.value.returncode == 7
    assert "fake: giving up on purpose" in info.value.stderr_tail
    assert "giving up on purpose" in str(info.value)
    if via.pipes:
        assert "\x1b[" not in info.value.stderr_tail  # ANSI colours stripped
    with pytest.raises(ProcessExited):
        await sub.get(timeout=10)
    with pytest.raises(ProcessExited):
        await client.request("thread/loaded/list", {})
    with pytest.raises(ProcessExited):
        await client.notify("initialized")
    assert client.closed and client.returncode == 7 and not client.healthy
    late = client.subscribe(THREAD)
    assert [f async for f in late] == []
    await asyncio.wait_for(client.wait_closed(), 10)
    await client.close()


async def test_client_close_kills_a_child_that_ignores_stdin_close_and_sigterm(tmp_path):
    client = await spawned(tmp_path, "ignore_stdin_close", timeouts=Timeouts(close=0.2))
    pid = client.pid
    await client.close()
    assert await gone(pid)
    assert client.returncode == -signal.SIGKILL


async def test_client_close_twice_reaps_the_child(tmp_path):
    client = await spawned(tmp_path, "echo")
    pid = client.pid
    await client.close()
    await client.close()
    assert await gone(pid)
    assert client.returncode == 0
    with pytest.raises(ClientClosed):
        await client.request("thread/loaded/list", {})


# -- pipes: the last line, stdout closed, stdin closed --------------------------------------


async def test_client_last_line_without_newline_is_delivered_then_exit_is_seen(via):
    client = await via("last_line_unterminated")
    try:
        result = await client.request("thread/loaded/list", {}, timeout=10)
        assert result == {"data": ["unterminated"], "nextCursor": None}
        await asyncio.wait_for(client.wait_closed(), 10)
        assert client.returncode == 0
        with pytest.raises(ProcessExited) as info:
            await client.request("thread/loaded/list", {})
        assert info.value.returncode == 0
    finally:
        await client.close()


async def test_client_kills_a_child_that_closes_stdout_but_keeps_running(via):
    client = await via("close_stdout_on_request", timeouts=Timeouts(close=0.3, request=30))
    pid = client.pid
    try:
        with pytest.raises(ProcessExited) as info:
            await client.request("thread/loaded/list", {})
        assert info.value.returncode == -signal.SIGKILL
        if via.pipes:
            assert await until(lambda: not alive(pid))
    finally:
        await client.close()


async def test_client_broken_stdin_fails_the_request_with_process_exited(tmp_path, caplog):
    caplog.set_level(logging.DEBUG, logger="codexmini.client")

    client = await spawned(tmp_path, "close_stdin_and_linger")
    sub = client.subscribe(THREAD)
    try:
        assert (await sub.get(timeout=10))["params"]["delta"] == "stdin closed"
        pending = asyncio.ensure_future(client.request("thread/loaded/list", {}, timeout=30))
        assert await until(lambda: "write failed" in caplog.text)
        assert not client.healthy  # a child that stopped reading is of no further use
        # The write error (an OSError underneath) waits for the end of the
        # conversation and becomes the terminal error.
        os.kill(client.pid, signal.SIGTERM)
        with pytest.raises(ProcessExited) as info:
            await asyncio.wait_for(pending, 10)
        assert info.value.returncode == -signal.SIGTERM
    finally:
        await client.close()


async def test_client_broken_stdin_without_an_exit_fails_the_request_after_the_close_timeout(via):
    client = await via("close_stdin_and_linger", timeouts=Timeouts(close=0.3))
    sub = client.subscribe(THREAD)
    try:
        assert (await sub.get(timeout=10))["params"]["delta"] == "stdin closed"
        with pytest.raises(TransportError, match="codex stopped reading its stdin"):
            await client.request("thread/loaded/list", {}, timeout=30)
        assert not client.healthy and not client.closed
    finally:
        await client.close()
    assert client.returncode == -signal.SIGTERM  # close() terminated it


def test_client_request_failed_by_its_write_leaves_no_unretrieved_future(tmp_path):
    # Log records hold the terminal error, whose traceback holds request()'s
    # frame and so the future: keep them away from pytest's capture, which
    # would keep the future alive until the test ends.
    writes_failed = []

    class Flag(logging.Handler):
        def emit(self, record):
            if record.getMessage().startswith("write failed"):
                writes_failed.append(True)

    logger = logging.getLogger("codexmini.client")
    flag, level, propagate = Flag(), logger.level, logger.propagate
    logger.addHandler(flag)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    reports = []

    async def main():
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: reports.append(context["message"]))
        client = await spawned(tmp_path, "close_stdin_and_linger")
        sub = client.subscribe(THREAD)
        try:
            await sub.get(timeout=10)
            pending = asyncio.ensure_future(client.request("thread/loaded/list", {}, timeout=30))
            assert await until(lambda: writes_failed)
            os.kill(client.pid, signal.SIGTERM)
            with pytest.raises(ProcessExited):
                await asyncio.wait_for(pending, 10)
        finally:
            await client.close()
        # The terminal error is shared (client, subscription, task) and its
        # traceback holds request()'s frame: drop them all, then collect.
        del pending, sub, client
        gc.collect()
        assert reports == []

    try:
        run(main())
    finally:
        logger.removeHandler(flag)
        logger.setLevel(level)
        logger.propagate = propagate


async def test_client_answer_to_a_child_that_stopped_reading_is_dropped_quietly(via, caplog):
    caplog.set_level(logging.INFO, logger="codexmini.client")

    client = await via("close_stdin_then_approval", timeouts=Timeouts(close=0.3))
    answered = []
    client.on_answer(lambda *a: answered.append(a))
    try:
        assert await until(lambda: "not sent" in caplog.text)
        assert f"answer to {b.APPROVAL} (id 0) not sent: codex stopped reading its stdin" in caplog.text
        # The observer was told before the write (a record comes before codex
        # can act on an answer); that the write failed is logged.
        assert [a[3] for a in answered] == ["default"]
        assert not client.closed
    finally:
        await client.close()


# -- said once: an old codex, approvals nobody answers -------------------------------------


async def test_client_warns_once_per_process_of_a_codex_outside_the_supported_range(monkeypatch):
    from codexmini import CodexVersionWarning, _binary

    monkeypatch.setattr(_binary, "_warned", set())
    agent = "codex_cli_rs/0.100.0 (Debian 12; x86_64) dumb (codexmini; 0.3.0)"

    async def old_codex(server):
        await server.handshake(dict(INIT_RESULT, userAgent=agent))
        await b.lists(server)

    with pytest.warns(CodexVersionWarning, match="0.100.0") as record:
        for _ in range(2):
            client = await started(old_codex)
            await client.close()
    assert len(record) == 1


async def test_client_says_once_per_turn_that_approvals_nobody_answers_are_declined(caplog):
    with caplog.at_level(logging.WARNING, logger="codexmini.client"):
        client = await started(b.approvals_in_turns)
        sub = client.subscribe(THREAD)
        await client.request("thread/loaded/list", {})
        answers = await reported(sub)
        await client.close()
    said = [r.getMessage() for r in caplog.records if "no handler answers it" in r.getMessage()]
    # turns a, b, 64 more (a is forgotten after 64 others), then a again; the
    # auth refresh is no approval: refused without a word
    assert answers == len(b.ASKED_IN) + 1
    assert len(said) == 2 + 64 + 1
    assert said[0] == (
        "codex asked for command (/bin/bash -lc 'echo hi') and no handler answers it: declined (fail-closed); "
        "said once per turn, give an approval handler to answer"
    )


# -- every write has a deadline ---------------------------------------------------------------


@pytest.mark.frame_problems("unknown method 'fake/one'", "unknown method 'fake/two'")
async def test_client_every_write_ends_within_timeouts_write_when_codex_stops_reading(via, caplog):
    # A notification, an answer to a server request and a write queued behind
    # a stuck one: each ends within Timeouts.write with WriteTimeout, the client
    # is unhealthy, and later writes fail at once.
    caplog.set_level(logging.DEBUG, logger="codexmini.client")
    client = await via("approval_then_stop_reading", timeouts=Timeouts(write=0.3, close=0.5))
    try:
        client.on_request(b.APPROVAL, lambda method, params: asyncio.sleep(0.05, {"decision": "accept"}))
        big = {"blob": "x" * 1_000_000}  # more than any pipe holds
        first = asyncio.ensure_future(client.notify("fake/one", big))
        queued = asyncio.ensure_future(client.notify("fake/two", {}))
        for task, method in ((first, "fake/one"), (queued, "fake/two")):
            with pytest.raises(WriteTimeout, match=f"codex did not take {method} within 0.3s: it stopped reading"):
                await asyncio.wait_for(task, 30)
        assert not client.healthy and client.stats["write_timeouts"] == 2
        with pytest.raises(WriteTimeout, match="thread/loaded/list"):
            await client.request("thread/loaded/list", {}, timeout=30)  # at once, not after 30 s
        assert await until(lambda: "not sent" in caplog.text), caplog.text
        assert f"answer to {b.APPROVAL} (id 0) not sent: codex did not take answer within 0.3s" in caplog.text
    finally:
        await client.close()


def test_client_write_timeout_names_the_frame_and_is_both_kinds_of_error():
    error = WriteTimeout("answer", 2.0)
    assert (error.method, error.timeout) == ("answer", 2.0)
    assert isinstance(error, TransportError) and isinstance(error, CodexTimeout)


# -- a server request is always answered ----------------------------------------------------


def _raises_when_called(method, params):
    raise RuntimeError("a handler with a bug")


def _no_awaitable(method, params):
    return {"decision": "accept"}  # a plain function: no awaitable to wait for


async def _returns(value):
    async def handler(method, params):
        return value

    return handler


class _Opaque:
    pass


@pytest.mark.parametrize(
    "make",
    [
        lambda: _raises_when_called,
        lambda: _no_awaitable,
        lambda: _returns({"decision": {"a", "set"}}),
        lambda: _returns({"decision": _Opaque()}),
        lambda: _returns({"decision": "\ud800"}),
    ],
    ids=["raises-when-called", "no-awaitable", "a-set", "an-object", "lone-surrogate"],
)
async def test_client_whatever_a_handler_returns_or_raises_codex_gets_the_fail_closed_answer(make):
    handler = make()
    if asyncio.iscoroutine(handler):
        handler = await handler
    client = await started(b.approval, initialize=False)
    answers = []
    client.on_answer(lambda *a: answers.append(a))
    client.on_request(b.APPROVAL, handler)
    sub = client.subscribe(THREAD)
    await client.initialize()
    try:
        assert await reported(sub) == {"id": 0, "result": {"decision": "decline"}}
        assert [a[3] for a in answers] == ["error"] and client.stats["handler_errors"] == 1
        assert await client.request("thread/loaded/list", {}) == {"data": ["2"], "nextCursor": None}  # the loop lives
    finally:
        await client.close()


# -- a shared server: what a client that connected owes the others -----------------------


async def _unsubscribes(server, answer: bool = True, fail: bool = False) -> None:
    """Answers ``thread/unsubscribe`` as codex does (or with an error, or not at all)."""
    await server.handshake()
    async for request in server.requests():
        if request.get("method") != "thread/unsubscribe":
            continue
        if fail:
            server.fail(request, "no such thread")
        elif answer:
            server.respond(request, {"status": "unsubscribed"})


async def _connected(behaviour, **timeouts: float) -> "tuple[AppServerClient, FakeAppServer]":
    """A client over the fake as if connected to a server at a URL (what
    decides what it owes a shared server is ``url``)."""
    fake = FakeAppServer(behaviour)
    transport = await fake.launch([], {}, None)
    client = AppServerClient(transport, url="ws://127.0.0.1:1", timeouts=Timeouts(**timeouts))
    await client.initialize()
    return client, fake


def _sent(fake: FakeAppServer, method: str) -> List[dict]:
    return [f for f in fake.server.received if f.get("method") == method]


async def test_client_forget_thread_unsubscribes_on_a_shared_server_only():
    client, fake = await _connected(_unsubscribes)
    try:
        client.forget_thread("t-1")
        assert await until(lambda: client._unsubscribing == set())
        (frame,) = _sent(fake, "thread/unsubscribe")
        assert frame["params"] == {"threadId": "t-1"}
    finally:
        await client.close()
    client.forget_thread("t-2")  # closed: nothing more is asked
    assert len(_sent(fake, "thread/unsubscribe")) == 1
    # A child started for this client alone is never asked.
    child = await client_for_behaviour(_unsubscribes)
    try:
        child.forget_thread("t-3")
        assert child._unsubscribing == set()
    finally:
        await child.close()


async def test_client_a_failed_unsubscribe_is_logged_not_raised(caplog):
    caplog.set_level(logging.DEBUG, logger="codexmini")
    client, fake = await _connected(lambda server: _unsubscribes(server, fail=True))
    try:
        client.forget_thread("t-1")
        assert await until(lambda: "thread/unsubscribe failed" in caplog.text)
        assert client.healthy
    finally:
        await client.close()


async def test_client_close_cancels_an_unsubscribe_still_waiting_past_the_close_timeout():
    client, fake = await _connected(lambda server: _unsubscribes(server, answer=False), close=0.2)
    client.forget_thread("t-1")
    (task,) = client._unsubscribing
    assert await until(lambda: bool(_sent(fake, "thread/unsubscribe")))
    await client.close()
    assert task.cancelled() and client._unsubscribing == set()


@pytest.mark.frame_problems("unknown method 'x/pad'")  # only there to fill the pipe
async def test_client_close_bounds_the_fail_closed_answers_by_the_close_timeout(caplog):
    # The server asks, then stops reading: the answer cannot be written, and
    # closing does not wait for it longer than Timeouts.close.
    async def asks_then_stops_reading(server) -> None:
        await server.handshake()
        server.send({"id": 0, "method": APPROVAL, "params": b.APPROVAL_PARAMS})
        server.stop_reading()
        await server.drain()

    caplog.set_level(logging.INFO, logger="codexmini")
    fake = FakeAppServer(asks_then_stops_reading)
    client = await AppServerClient.start(
        Launch(launcher=fake.launch, timeouts=Timeouts(close=0.5, write=30.0, handler=60.0)), initialize=False
    )
    asked = asyncio.Event()

    async def handler(method, params):
        asked.set()
        await asyncio.sleep(60)

    client.on_request(APPROVAL, handler)
    await client.initialize()
    await asyncio.wait_for(asked.wait(), 10)
    filler = asyncio.ensure_future(client.notify("x/pad", {"pad": "a" * (256 * 1024)}))  # fills the pipe
    await asyncio.sleep(0.05)
    await client.close()
    assert "the fail-closed answers were not all written within 0.5s" in caplog.text
    filler.cancel()
    await asyncio.gather(filler, return_exceptions=True)
