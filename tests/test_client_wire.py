"""The client (``codexmini._client``) at the edge of the wire, in memory.

What a caller gives that cannot go on the wire -- a prompt with a lone
surrogate, params holding a set, NaN, an output schema no UTF-8 can hold, a
handler's answer of the same kind -- is a typed
:class:`~codexmini._errors.UnencodableInput` raised before the request takes
an id: nothing is sent, nothing is pending, and the next request goes on as if
nothing happened.  A handler's answer that cannot be sent is replaced by the
fail-closed one.

Frames that break the schema's shape leave a trace, every one the same way:
counted in ``stats["malformed"]``, kept in ``client.protocol_errors`` and
logged -- whether they are skipped (a notification whose params is no object)
or handled all the same (a server request without params is still answered, a
response whose result is no object still ends its call).  The RPC core's half
is in tests/test_rpc.py.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from support import behaviours as b
from support.canned import Canned, client_for
from support.fake_client import reported

from codexmini import ConfigError, Launch
from codexmini._client import AppServerClient
from codexmini._errors import ProtocolError, UnencodableInput
from codexmini._threads import Thread
from codexmini.testing import FakeAppServer, ServerSide

THREAD = b.THREAD
APPROVAL = b.APPROVAL

#: Params no wire can carry, and where in the frame the encoder gives up.
UNENCODABLE = [
    pytest.param({"x": "a \ud800 b"}, "params.x", id="lone-surrogate"),
    pytest.param({"x": {1, 2}}, "params.x", id="set"),
    pytest.param({"x": [float("nan")]}, "params.x[0]", id="nan"),
    pytest.param({"x": object()}, "params.x", id="object"),
    pytest.param(["not", "a", "mapping"], "params", id="list"),
]


async def client_on(fake: FakeAppServer) -> AppServerClient:
    return await AppServerClient.start(Launch(launcher=fake.launch))


# -- requests and notifications that cannot go on the wire ---------------------------


@pytest.mark.parametrize("params, path", UNENCODABLE)
async def test_client_wire_request_and_notification_that_cannot_be_encoded_send_and_keep_nothing(params, path):
    fake = FakeAppServer(b.echo)
    async with await client_on(fake) as client:
        with pytest.raises(UnencodableInput) as raised:
            await client.request("thread/loaded/list", params)
        assert (raised.value.what, raised.value.path) == ("request thread/loaded/list", path)
        with pytest.raises(ConfigError):  # what a caller catches without naming the subclass
            await client.notify("initialized", params)
        assert client._futures == {} and client._conn.pending == {}
        assert client.healthy and client.stats["frames_out"] == 2  # initialize, initialized
        # The next request takes the id the refused one did not: 2, after initialize's 1.
        assert await client.request("thread/loaded/list", {}) == {"data": ["2"], "nextCursor": None}
    assert [f.get("method") for f in fake.server.received] == ["initialize", "initialized", "thread/loaded/list"]


async def test_client_wire_prompt_or_output_schema_that_cannot_be_encoded_is_refused_before_the_turn():
    async with await client_for(Canned({})) as client:
        thread = await Thread.start(client)
        with pytest.raises(UnencodableInput) as raised:
            await thread.run("a prompt with a lone surrogate: \ud800")
        assert (raised.value.what, raised.value.path) == ("request turn/start", "params.input[0].text")
        schema = {"type": "object", "description": "\udfff"}
        with pytest.raises(UnencodableInput) as raised:
            await thread.run("hello", output_schema=schema)
        assert raised.value.path == "params.outputSchema.description"
        assert client._futures == {} and client._conn.pending == {}
        result = await thread.run("hello")  # the thread, the client and the ids go on
        assert result.status == "completed"
        assert client._conn.pending == {}


# -- a handler's answer that cannot go on the wire ---------------------------------


@pytest.mark.parametrize(
    "answer",
    [{"decision": "accept", "note": "\ud800"}, {"decision": "accept", "note": {1}}, {"decision": float("inf")}],
    ids=["lone-surrogate", "set", "infinity"],
)
async def test_client_wire_handler_answer_that_cannot_be_encoded_gets_the_fail_closed_answer(answer, caplog):
    async def handler(method: str, params: Any) -> Any:
        return answer

    fake = FakeAppServer(b.approval)
    client = await AppServerClient.start(Launch(launcher=fake.launch), initialize=False)
    client.on_request(APPROVAL, handler)
    answers = []
    client.on_answer(lambda method, params, frame, by: answers.append((frame, by)))
    await client.initialize()
    sub = client.subscribe(THREAD)
    try:
        assert await reported(sub) == {"id": 0, "result": {"decision": "decline"}}
        assert answers == [({"id": 0, "result": {"decision": "decline"}}, "error")]
        assert client._conn.open_requests == {}
    finally:
        await client.close()
    assert f"handler for {APPROVAL} answered what cannot be sent" in caplog.text
    assert "the answer to request 0: result" in caplog.text


# -- frames that break the schema's shape: every one kept, counted and logged -----------


async def malformed(server: ServerSide) -> None:
    """A request without params, a notification whose params is a list, a
    resolution whose requestId is a list, an answer whose result is a list;
    then it reports the answer the request got."""
    await server.handshake()
    asked = await b.next_request(server)
    server.send({"id": 0, "method": APPROVAL})
    answer = await server.recv()
    server.send({"method": "warning", "params": ["threadId", THREAD]})
    server.send({"method": "serverRequest/resolved", "params": {"threadId": b.OTHER_THREAD, "requestId": [0]}})
    server.send({"id": asked["id"], "result": ["not", "an", "object"]})
    b.report(server, answer)
    await b.lists(server)


@pytest.mark.frame_problems(APPROVAL, "warning", "serverRequest/resolved", "thread/loaded/list")
async def test_client_wire_every_malformed_frame_is_kept_counted_and_logged(caplog):
    caplog.set_level(logging.WARNING, logger="codexmini.client")
    async with await client_on(FakeAppServer(malformed)) as client:
        sub = client.subscribe(THREAD)
        assert await client.request("thread/loaded/list", {}) == ["not", "an", "object"]  # for its caller to judge
        assert await reported(sub) == {"id": 0, "result": {"decision": "decline"}}  # answered all the same
        reasons = [e.reason for e in client.protocol_errors]
        assert all(isinstance(e, ProtocolError) for e in client.protocol_errors)
        assert client.stats["malformed"] == len(reasons) == 4
        assert client.stats["unrouted"] == 0 and client.stats["handler_errors"] == 0
        assert reasons == [
            f"request {APPROVAL} (id 0): params is missing",
            "notification warning: params is an array, not an object",
            "notification serverRequest/resolved: requestId is an array, not an integer or a string",
            "the answer to request 2 (thread/loaded/list): result is an array, not an object",
        ]
        held = client.subscribe(b.OTHER_THREAD)  # the resolution was routed (held) all the same
        assert (await held.get(timeout=10))["method"] == "serverRequest/resolved"
    logged = [r.getMessage() for r in caplog.records if r.name == "codexmini.client"]
    assert sum("no handler answers it" in m for m in logged) == 1  # the approval without params, answered fail-closed
    assert [m.split(":")[0] for m in logged if "frame from codex" in m] == [
        "a frame from codex breaks the schema (handled all the same)",
        "skipped a frame from codex",
        "a frame from codex breaks the schema (handled all the same)",
        "a frame from codex breaks the schema (handled all the same)",
    ]
