"""The fake app-server over a real WebSocket (:mod:`codexmini.testing.fake_socket`).

codexmini's own client drives it over TCP and over a unix socket (a whole
turn of :class:`CodexLike`, every frame validated by the conformance tap);
the ``websockets`` package drives it as an independent client (ping, a
fragmented message, messages of every length encoding, the closing
handshake); raw sockets check what no client would send.
"""

from __future__ import annotations

import asyncio
import os
import struct
from typing import Any, List

import pytest
from support.fake_client import until

from codexmini import AppServerClient, Thread, WebSocketError
from codexmini.testing import CodexLike
from codexmini.testing.fake_appserver import FakeError
from codexmini.testing.fake_socket import (
    CLOSE,
    PING,
    TEXT,
    SocketServerSide,
    accept_key,
    read_frame,
    serve,
    server_frame,
)
from codexmini.testing.live import scratch_dir

websockets = pytest.importorskip("websockets", minversion="13")
from websockets.asyncio.client import connect as ws_connect  # noqa: E402


def test_fake_socket_accept_key_is_rfc_6455s_example():
    assert accept_key(b"dGhlIHNhbXBsZSBub25jZQ==") == b"s3pPLMBiTxaQ9kYGzzhZRbK+xOo="


@pytest.mark.parametrize("size, head", [(5, b"\x81\x05"), (300, b"\x81\x7e\x01\x2c"), (70000, b"\x81\x7f")])
def test_fake_socket_server_frame_uses_each_length_encoding(size, head):
    frame = server_frame(TEXT, b"x" * size)
    assert frame.startswith(head) and frame.endswith(b"x" * size)
    assert len(frame) == size + {5: 2, 300: 4, 70000: 10}[size]


@pytest.mark.parametrize("listen", ["ws", "unix"])
async def test_fake_socket_a_turn_over_a_real_socket(listen):
    root = scratch_dir("codexmini-fake-socket-")
    where = "ws" if listen == "ws" else f"unix://{os.path.join(root, 'fake.sock')}"
    async with await serve(CodexLike, listen=where) as server:
        assert server.url.startswith(f"{listen}://")
        async with await AppServerClient.connect(server.url) as client:
            thread = await Thread.start(client)
            completed = await thread.turn("hello").run()
            assert completed.status == "completed"
            thread.close()  # a connected client unsubscribes: CodexLike answers it
            assert await until(lambda: not client._unsubscribing)
        methods = [f.get("method") for f in server.server.received]
        assert methods[:3] == ["initialize", "initialized", "thread/start"]
        assert "turn/start" in methods
    assert not os.path.exists(server.url[len("unix://") :]) or listen == "ws"
    os.rmdir(root)


async def test_fake_socket_every_connection_gets_its_own_behaviour():
    async with await serve(CodexLike) as server:
        first = await AppServerClient.connect(server.url)
        second = await AppServerClient.connect(server.url)
        await first.close()
        await second.close()
        assert len(server.sides) == 2 and server.server is server.sides[1]


async def test_fake_socket_an_independent_client_pings_fragments_and_closes():
    got: List[Any] = []

    async def echo(side: SocketServerSide) -> None:
        while True:
            frame = await side.recv()
            if frame is None:
                return
            got.append(frame)
            side.send({"echo": len(frame["pad"])})

    async with await serve(echo, headers=["x-fake: yes"]) as server:
        async with ws_connect(server.url) as ws:
            assert ws.response.headers["x-fake"] == "yes"
            await asyncio.wait_for(await ws.ping(b"p"), 5)  # the pong came back
            for size in (10, 300, 70000):
                await ws.send('{"pad": "%s"}' % ("a" * size))
                assert await ws.recv() == '{"echo": %d}' % size
            await ws.send(['{"pad": ', '"ab"}'])  # fragmented: reassembled
            assert await ws.recv() == '{"echo": 2}'
        assert ws.close_code == 1000  # our close, answered with its code
    assert [len(f["pad"]) for f in got] == [10, 300, 70000, 2]


async def test_fake_socket_a_behaviour_that_ends_closes_with_1000_and_close_output_drops():
    async def says_goodbye(side: SocketServerSide) -> None:
        await side.handshake()
        side.stderr("bye")

    async def drops(side: SocketServerSide) -> None:
        await side.handshake()
        side.close_output()
        side.send({"method": "late"})  # nothing goes out of a dropped connection
        await side.drain()

    async with await serve(says_goodbye) as server:
        client = await AppServerClient.connect(server.url)
        await client.wait_closed()
        with pytest.raises(WebSocketError) as err:
            await client.request("thread/loaded/list", {})
        assert err.value.code == 1000
        assert server.server.stderr_lines == ["bye"]
    async with await serve(drops) as server:
        client = await AppServerClient.connect(server.url)
        await client.wait_closed()
        with pytest.raises(WebSocketError, match="without a close"):
            await client.request("thread/loaded/list", {})


async def test_fake_socket_stop_reading_close_input_and_raw_frames():
    async def stubborn(side: SocketServerSide) -> None:
        await side.handshake()
        side.send_frame(PING, b"hi")  # the client answers with a pong
        side.stop_reading()
        await asyncio.sleep(0.2)
        side.reading.set()
        side.close_input()
        assert await side.recv() is None
        await asyncio.sleep(3600)  # until the server is closed

    server = await serve(stubborn)
    client = await AppServerClient.connect(server.url)
    assert await until(lambda: server.sides and server.server._eof)
    await server.aclose()  # ends the connection still running
    await client.wait_closed()
    await client.close()
    await server.aclose()  # idempotent


async def test_fake_socket_no_upgrade_no_behaviour_and_a_behaviour_that_raises_drops():
    async def raises(side: SocketServerSide) -> None:
        raise RuntimeError("the behaviour broke")

    async with await serve(raises) as server:
        port = int(server.url.rsplit(":", 1)[1])
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert (await reader.read()).startswith(b"HTTP/1.1 400")
        writer.close()
        assert server.sides == []
        client = await AppServerClient.connect(server.url, initialize=False)
        await client.wait_closed()  # dropped, as a process that crashed
        assert "RuntimeError: the behaviour broke" in server.server.stderr_lines[0]
        await client.close()


async def test_fake_socket_a_close_frame_with_no_code_is_answered_in_kind():
    async def waits(side: SocketServerSide) -> None:
        assert await side.recv() is None

    async with await serve(waits) as server:
        port = int(server.url.rsplit(":", 1)[1])
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET / HTTP/1.1\r\nHost: x\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
        await reader.readuntil(b"\r\n\r\n")
        writer.write(bytes((0x88, 0)))  # a close, unmasked and with no code
        rest = await reader.read()
        writer.close()
    assert rest == server_frame(CLOSE, b"")  # answered; the behaviour saw the end, and its close is not sent twice


async def test_fake_socket_a_behaviour_raising_fake_error_says_why():
    async def refuses(side: SocketServerSide) -> None:
        raise FakeError("not what I expected")

    async with await serve(refuses) as server:
        client = await AppServerClient.connect(server.url, initialize=False)
        await client.wait_closed()
        assert server.server.stderr_lines == ["fake app-server: not what I expected"]
        await client.close()


async def test_fake_socket_read_frame_reads_masked_and_unmasked_frames():
    reader = asyncio.StreamReader()
    mask = b"\x01\x02\x03\x04"
    payload = b"hello"
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    reader.feed_data(bytes((0x81, 0x80 | 5)) + mask + masked)
    reader.feed_data(bytes((0x08 | 0x80, 2)) + struct.pack("!H", 1000))
    reader.feed_eof()
    assert await read_frame(reader) == (True, TEXT, b"hello")
    assert await read_frame(reader) == (True, CLOSE, struct.pack("!H", 1000))
    with pytest.raises(asyncio.IncompleteReadError):
        await read_frame(reader)


async def test_fake_socket_listen_must_be_ws_or_a_unix_url():
    with pytest.raises(ValueError, match="listen must be"):
        await serve(CodexLike, listen="tcp://x")
