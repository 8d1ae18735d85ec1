"""The client over real pipes, against the hand-written fake app-server.

Every frame exchanged here passes through the conformance plugin's validator
(it taps every client), so the fake is held to the real protocol.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys

import pytest

from codexmini import _client as client_mod
from codexmini._client import ALL, GLOBAL, AppServerClient, thread_of
from codexmini._errors import ClientClosed, ProcessExited, ProtocolError, RequestTimeout, RpcError

from fake_client import FAKE, THREAD, alive, gone, run, started  # noqa: E402


def test_client_initialize_records_server_info():
    async def main():
        client = await started("echo")
        try:
            assert client.server_info["platformOs"] == "linux"
            assert await client.request("thread/loaded/list", {}) == {"data": ["2"], "nextCursor": None}
        finally:
            await client.close()

    run(main())


def test_client_out_of_order_responses_reach_their_requests():
    async def main():
        client = await started("out_of_order")
        try:
            first = asyncio.ensure_future(client.request("thread/loaded/list", {}))
            await asyncio.sleep(0)
            second = asyncio.ensure_future(client.request("thread/loaded/list", {}))
            assert (await first)["data"] == ["first"]
            assert (await second)["data"] == ["second"]
        finally:
            await client.close()

    run(main())


@pytest.mark.frame_problems("fake/unknownRequest")
def test_client_unknown_server_request_gets_method_not_found():
    async def main():
        client = await started("unknown_request")
        sub = client.subscribe(THREAD)
        try:
            frame = await sub.get(timeout=10)
            answer = json.loads(frame["params"]["delta"])
            assert answer == {"id": 0, "error": {"code": -32601, "message": "method not found: fake/unknownRequest"}}
        finally:
            await client.close()

    run(main())


def test_client_server_request_without_handler_is_declined():
    async def main():
        client = await started("approval")
        seen = []
        client.on_answer(lambda method, params, frame, by: seen.append((method, frame, by)))
        sub = client.subscribe(THREAD)
        try:
            frame = await sub.get(timeout=10)
            assert json.loads(frame["params"]["delta"]) == {"id": 0, "result": {"decision": "decline"}}
            assert seen == [("item/commandExecution/requestApproval", {"id": 0, "result": {"decision": "decline"}}, "default")]
        finally:
            await client.close()

    run(main())


@pytest.mark.parametrize(
    "behaviour, expected_by",
    [("accept", "handler"), ("raise", "error"), ("slow", "timeout")],
)
def test_client_handler_result_error_and_deadline(behaviour, expected_by):
    async def handler(method, params):
        assert method == "item/commandExecution/requestApproval"
        assert params["itemId"] == "call_cmd_1"
        if behaviour == "raise":
            raise RuntimeError("handler broke")
        if behaviour == "slow":
            await asyncio.sleep(30)
        return {"decision": "accept"}

    async def main():
        client = AppServerClient([sys.executable, FAKE, "approval"], handler_timeout=0.2)
        client.on_request("item/commandExecution/requestApproval", handler)
        bys = []
        client.on_answer(lambda m, p, f, by: bys.append(by))
        await client.spawn()
        await client.initialize()
        sub = client.subscribe(THREAD)
        try:
            answer = json.loads((await sub.get(timeout=10))["params"]["delta"])
            decision = "accept" if behaviour == "accept" else "decline"
            assert answer == {"id": 0, "result": {"decision": decision}}
            assert bys == [expected_by]
        finally:
            await client.close()

    run(main())


def test_client_resolved_request_cancels_its_handler():
    cancelled = []

    async def handler(method, params):
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(method)
            raise

    async def main():
        client = AppServerClient([sys.executable, FAKE, "approval_resolved"])
        client.on_request("item/fileChange/requestApproval", handler)
        answers = []
        client.on_answer(lambda *a: answers.append(a))
        await client.spawn()
        await client.initialize()
        sub = client.subscribe(THREAD)
        try:
            frame = await sub.get(timeout=10)
            assert frame["method"] == "serverRequest/resolved"
            await asyncio.sleep(0)
            assert cancelled == ["item/fileChange/requestApproval"]
            assert answers == []
            client.on_request("item/fileChange/requestApproval", None)
        finally:
            await client.close()

    run(main())


def test_client_reads_a_16_mib_line():
    async def main():
        client = await started("big_line")
        sub = client.subscribe(THREAD)
        try:
            await client.request("thread/loaded/list", {})
            big = await sub.get(timeout=30)
            assert len(big["params"]["delta"]) == 16 * 1024 * 1024
            assert (await sub.get(timeout=10))["params"]["delta"] == "after"
        finally:
            await client.close()

    run(main())


def test_client_skips_a_line_over_the_cap_and_keeps_reading(caplog):
    async def main():
        client = AppServerClient([sys.executable, FAKE, "over_cap"], max_frame_bytes=1024 * 1024)
        await client.spawn()
        await client.initialize()
        sub = client.subscribe(THREAD)
        try:
            await client.request("thread/loaded/list", {})
            assert (await sub.get(timeout=10))["params"]["delta"] == "first-after"
            assert (await sub.get(timeout=10))["params"]["delta"] == "second-after"
            assert client.stats["malformed"] == 1
            assert "exceeds the cap of 1048576 bytes" in caplog.text
        finally:
            await client.close()

    run(main())


def test_client_skips_garbage_lines():
    async def main():
        client = await started("garbage")
        sub = client.subscribe(THREAD)
        try:
            await client.request("thread/loaded/list", {})
            for _ in range(7):
                assert (await sub.get(timeout=10))["params"]["delta"] == "ok"
            assert client.stats["malformed"] == 7
            reasons = [str(e) for e in client.protocol_errors]
            assert len(reasons) == 7 and all(isinstance(e, ProtocolError) for e in client.protocol_errors)
            assert "invalid JSON" in reasons[0] and "not a JSON-RPC frame (list)" in reasons[1]
            assert "invalid UTF-8" in reasons[4]
        finally:
            await client.close()

    run(main())


def test_client_child_exit_fails_pending_request_with_exit_code_and_stderr():
    async def main():
        client = await started("exit_mid_request", request_timeout=60)
        sub = client.subscribe(THREAD)
        with pytest.raises(ProcessExited) as info:
            await client.request("thread/loaded/list", {})
        assert info.value.returncode == 7
        assert "fake: giving up on purpose" in info.value.stderr_tail
        assert "\x1b[" not in info.value.stderr_tail  # ANSI colours stripped
        assert "giving up on purpose" in str(info.value)
        with pytest.raises(ProcessExited):
            await sub.get(timeout=10)
        with pytest.raises(ProcessExited):
            await client.request("thread/loaded/list", {})
        assert client.closed and client.returncode == 7
        late = client.subscribe(THREAD)
        assert [f async for f in late] == []
        await client.close()

    run(main())


def test_client_close_twice_and_requests_after_close():
    async def main():
        client = await started("echo")
        pid = client.pid
        await client.close()
        await client.close()
        assert await gone(pid)
        with pytest.raises(ClientClosed):
            await client.request("thread/loaded/list", {})
        with pytest.raises(ClientClosed):
            await client.notify("initialized")

    run(main())


def test_client_close_fails_pending_requests_with_client_closed():
    async def main():
        client = await started("never_answer")
        pending = asyncio.ensure_future(client.request("thread/loaded/list", {}))
        await asyncio.sleep(0.05)
        await client.close()
        with pytest.raises(ClientClosed):
            await pending

    run(main())


def test_client_request_timeout():
    async def main():
        client = await started("never_answer")
        try:
            with pytest.raises(RequestTimeout) as info:
                await client.request("thread/loaded/list", {}, timeout=0.1)
            assert info.value.method == "thread/loaded/list"
            assert client._pending == {}
        finally:
            await client.close()

    run(main())


def test_client_close_kills_a_child_that_ignores_stdin_close_and_sigterm():
    async def main():
        client = await started("ignore_stdin_close", close_timeout=0.2)
        pid = client.pid
        await client.close()
        assert await gone(pid)
        assert client.returncode == -signal.SIGKILL

    run(main())


def test_client_no_orphan_after_close():
    async def main():
        client = await started("grandchild")
        sub = client.subscribe(THREAD)
        grandchild = int((await sub.get(timeout=10))["params"]["delta"])
        assert alive(grandchild)
        await client.close()
        assert await gone(client.pid)
        assert await gone(grandchild)

    run(main())


def test_client_no_orphan_after_child_is_sigkilled():
    async def main():
        client = await started("grandchild")
        sub = client.subscribe(THREAD)
        grandchild = int((await sub.get(timeout=10))["params"]["delta"])
        os.kill(client.pid, signal.SIGKILL)
        with pytest.raises(ProcessExited) as info:
            await client.request("thread/loaded/list", {})
        assert info.value.returncode == -signal.SIGKILL
        assert await gone(grandchild)
        await client.close()

    run(main())


def test_client_stderr_drain_survives_long_lines_and_keeps_a_tail():
    async def main():
        client = await started("stderr_flood", stderr_tail_lines=5)
        try:
            assert await client.request("thread/loaded/list", {})
            await client.close()
            tail = client.stderr_tail.splitlines()
            assert tail[-1] == "last words without newline"
            assert tail[-2] == "line 1999"
            assert len(tail) == 5
        finally:
            await client.close()

    run(main())


def test_client_routes_by_thread_and_buffers_early_notifications():
    async def main():
        client = await started("global_and_threads")
        everything = client.subscribe(ALL)
        glob = client.subscribe(GLOBAL)
        try:
            await client.request("thread/loaded/list", {})
            first = await glob.get(timeout=10)
            assert first["method"] == "configWarning"
            # Wait until the thread frames have arrived (ALL sees them all).
            methods = [(await everything.get(timeout=10))["method"] for _ in range(4)]
            assert methods == ["configWarning", "warning", "warning", "item/agentMessage/delta"]
            mine = client.subscribe(THREAD)
            assert [mine.get_nowait()["params"].get("message", "delta") for _ in range(2)] == ["early", "delta"]
            assert mine.get_nowait() is None
            mine.close()
            mine.close()
            assert client.stats["unrouted"] == 0
        finally:
            await client.close()

    run(main())


def test_client_bounded_queue_drops_deltas_but_never_turn_frames(caplog):
    async def main():
        client = await started("garbage")
        sub = client.subscribe(THREAD, maxsize=2)
        try:
            await client.request("thread/loaded/list", {})
            await asyncio.sleep(0)
            # Feed more than the bound directly: 5 deltas and a turn/completed.
            for i in range(5):
                sub._put({"method": "item/agentMessage/delta", "params": {"delta": str(i)}})
            sub._put({"method": "turn/completed", "params": {}})
            assert sub.dropped >= 3
            assert sub.pending() <= 3
            assert "is full" in caplog.text
            assert any(sub.get_nowait()["method"] == "turn/completed" for _ in range(sub.pending()))
        finally:
            await client.close()

    run(main())


def test_client_unclaimed_buffers_are_bounded():
    client = AppServerClient(["unused"], unclaimed_threads=2, unclaimed_per_thread=2)
    for tid in ("a", "b", "c"):
        for i in range(3):
            client._route({"method": "warning", "params": {"threadId": tid, "message": str(i)}})
    assert list(client._unclaimed) == ["b", "c"]
    assert [f["params"]["message"] for f in client._unclaimed["c"]] == ["1", "2"]
    assert client.stats["dropped"] == 3 + 2  # three overflows, then thread "a" evicted with two
    client._route({"method": "configWarning", "params": {}})
    assert client.stats["unrouted"] == 1


def test_client_thread_of_routing_keys():
    assert thread_of({"method": "warning", "params": {"threadId": "t"}}) == "t"
    assert thread_of({"method": "thread/started", "params": {"thread": {"id": "t2"}}}) == "t2"
    assert thread_of({"method": "other", "params": {"thread": {"id": "t2"}}}) is None
    assert thread_of({"method": "configWarning", "params": {}}) is None
    assert thread_of({"method": "configWarning"}) is None


@pytest.mark.frame_problems("response to unknown request id 999")
def test_client_rpc_error_carries_code_message_and_method():
    async def main():
        client = await started("echo")
        try:
            # The fake answers only thread/loaded/list; feed an error frame as the
            # reader would, to exercise the error path end to end.
            future = asyncio.ensure_future(client.request("thread/start", {}))
            await asyncio.sleep(0.05)
            (rid,) = list(client._pending)
            client._dispatch({"id": rid, "error": {"code": -32600, "message": "Not initialized"}})
            with pytest.raises(RpcError) as info:
                await future
            assert (info.value.code, info.value.message, info.value.method) == (-32600, "Not initialized", "thread/start")
            client._dispatch({"id": 999, "result": {}})
            assert client.stats["unknown_responses"] == 1
        finally:
            await client.close()

    run(main())


def test_client_taps_and_observers_see_both_directions():
    seen = []
    remove = client_mod.observe_clients(lambda: lambda d, f: seen.append((d, f.get("method"), f.get("id"))))

    def broken_tap(direction, frame):
        raise ValueError("a broken tap must not break the client")

    async def main():
        client = AppServerClient([sys.executable, FAKE, "echo"], tap=broken_tap)
        await client.spawn()
        await client.initialize()
        await client.request("thread/loaded/list", {})
        await client.close()

    try:
        run(main())
    finally:
        remove()
        remove()
    assert ("out", "initialize", 1) in seen
    assert ("in", None, 1) in seen
    assert ("out", "initialized", None) in seen
    assert ("out", "thread/loaded/list", 2) in seen


def test_client_requests_before_spawn_fail_clearly():
    async def main():
        client = AppServerClient(["unused"])
        with pytest.raises(ClientClosed, match="never started"):
            await client.request("initialize", {})
        await client.close()

    run(main())
