"""codexmini's WebSocket against an independent implementation (the ``websockets`` package).

A ``websockets`` server on 127.0.0.1, and codexmini's side of the connection
as the client uses it (:func:`codexmini._socket.open_websocket`, the
:class:`WebSocketTransport`): the opening handshake, messages both ways (one
longer than the server takes unfragmented, so sent in fragments and joined
by the other side), a message the server sends in fragments, the server's
ping answered, and the closing handshake started from each side with the
codes both sides see.
"""

from __future__ import annotations

import asyncio
from typing import Any, List

import pytest

from codexmini import Connect, WebSocketError
from codexmini._socket import WebSocketTransport, open_websocket

websockets = pytest.importorskip("websockets", minversion="13")
from websockets.asyncio.server import ServerConnection, serve  # noqa: E402


async def lines(transport: WebSocketTransport, count: int) -> List[str]:
    got: List[str] = []
    while len(got) < count:
        data = await transport.read()
        assert isinstance(data, list) and data, "the connection ended early"
        got += data
    return got


async def test_websocket_independent_messages_both_ways_fragments_and_a_ping():
    seen: List[Any] = []

    async def handler(connection: ServerConnection) -> None:
        async for message in connection:
            seen.append(message)
            if message == '{"send":"fragments"}':
                await connection.send(['{"frag', 'mented":', "true}"])  # three frames, one message
            elif message == '{"send":"ping"}':
                pong = await connection.ping(b"are you there")
                await pong
                await connection.send('{"pong":"seen"}')
            else:
                await connection.send(message)

    def announce(connection: Any, request: Any, response: Any) -> Any:
        response.headers["x-codex-websocket-max-unfragmented-message-bytes"] = "16"
        return response

    async with serve(handler, "127.0.0.1", 0, process_response=announce) as server:
        port = server.sockets[0].getsockname()[1]
        transport = await open_websocket(Connect(f"ws://127.0.0.1:{port}"))
        assert transport._ws.unfragmented == 16  # read from the server's answer
        long = '{"long":"' + "x" * 100 + '"}'
        await transport.write(b'{"a":1}\n' + long.encode() + b"\n")
        assert await lines(transport, 2) == ['{"a":1}', long]
        assert seen == ['{"a":1}', long]  # the long one arrived whole: our fragments joined
        await transport.write(b'{"send":"fragments"}\n')
        assert await lines(transport, 1) == ['{"fragmented":true}']
        await transport.write(b'{"send":"ping"}\n')
        assert await lines(transport, 1) == ['{"pong":"seen"}']  # our pong reached it
        transport.close_input()
        assert await transport.read() == b""
        await asyncio.wait_for(transport.wait_exited(), 10)
        err = transport.ended()
        assert isinstance(err, WebSocketError) and err.code == 1000
        await transport.aclose(5)


async def test_websocket_independent_the_server_closes_with_its_code():
    closed: List[Any] = []

    async def handler(connection: ServerConnection) -> None:
        await connection.send('{"last":true}')
        await connection.close(1001, "going away")
        closed.append(connection.close_code)

    async with serve(handler, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        transport = await open_websocket(Connect(f"ws://127.0.0.1:{port}"))
        assert await lines(transport, 1) == ['{"last":true}']
        assert await transport.read() == b""
        err = transport.ended()
        assert isinstance(err, WebSocketError) and (err.code, err.reason) == (
            1001,
            "the server closed the connection: going away",
        )
        await asyncio.wait_for(transport.wait_exited(), 10)
        await transport.aclose(5)
    assert closed == [1001]  # it got our reply to its close
