"""Transport faults: what a connection to a running server can do wrong, at the public API.

Through :meth:`AppServerClient.connect` over real sockets: raw asyncio servers
on 127.0.0.1 play a server that never answers the upgrade, a garbage frame, a
message over the client's limit, a reset connection and a half-open one (the
server keeps the socket and stops answering); the real codex plays a server
killed mid-turn.  Each ends as a typed error -- ``ConnectFailed``,
``WebSocketError`` (with the close code codexmini sent) or ``RequestTimeout``
-- and nothing waits for ever.  Each figure is counted by the test whose
assertions back it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import struct
from typing import Any, Iterator

import figures
import pytest
from support.raw_ws import raw_server

from codexmini import (
    AppServerClient,
    Connect,
    ConnectFailed,
    Limits,
    RequestTimeout,
    Thread,
    Timeouts,
    WebSocketError,
)
from codexmini.testing.fake_socket import TEXT, accept, server_frame
from codexmini.testing.live import LiveCodex
from conformance.versions import live_codex

SECTION = "transport faults"
KINDS = "kinds played over real sockets, each a typed error, nothing left waiting"


def text(payload: bytes) -> bytes:
    return server_frame(TEXT, payload)


async def test_transport_faults_a_server_that_never_answers_the_upgrade():
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()

    server, url = await raw_server(silent)
    async with server:
        with pytest.raises(ConnectFailed, match="no answer to the opening handshake"):
            await AppServerClient.connect(Connect(url, timeouts=Timeouts(initialize=0.3)))
    figures.count(SECTION, KINDS)


@pytest.mark.parametrize(
    "name, frame, code",
    [
        ("garbage frame", b"\x8f\x03abc", 1002),  # opcode 0xF
        ("masked frame", b"\x81\x82\x00\x00\x00\x00{}", 1002),
        ("binary message", b"\x82\x02{}", 1003),
        ("message over the limit", text(b"[" + b"1," * 600 + b"1]"), 1009),
        ("text that is no UTF-8", text(b'{"x":"\xff"}'), 1007),
    ],
)
async def test_transport_faults_a_frame_that_breaks_the_protocol(name, frame, code):
    closed = asyncio.get_running_loop().create_future()

    async def breaks(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await accept(reader, writer)
        writer.write(frame)
        await writer.drain()
        closed.set_result(await reader.read())  # all the client said back, until it hung up

    server, url = await raw_server(breaks)
    async with server:
        client = await AppServerClient.connect(Connect(url, limits=Limits(max_frame_bytes=1024)), initialize=False)
        try:
            await asyncio.wait_for(client.wait_closed(), 10)
            with pytest.raises(WebSocketError) as caught:
                await client.request("thread/loaded/list", {})
            assert caught.value.code == code
            said = await asyncio.wait_for(closed, 10)
            assert said[:2] == b"\x88\x82"  # one close frame, masked, of a 2-byte code ...
            assert int.from_bytes(bytes(b ^ m for b, m in zip(said[6:8], said[2:4])), "big") == code  # ... that one
        finally:
            await client.close()
    figures.count(SECTION, KINDS)


async def test_transport_faults_a_reset_connection():
    async def resets(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await accept(reader, writer)
        await reader.read(64)
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close sends RST

    server, url = await raw_server(resets)
    async with server:
        client = await AppServerClient.connect(url, initialize=False)
        try:
            with pytest.raises(WebSocketError):
                await client.initialize(timeout=30)
        finally:
            await client.close()
    figures.count(SECTION, KINDS)


async def test_transport_faults_a_half_open_connection_times_out_and_marks_the_client():
    async def half_open(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await accept(reader, writer)
        await reader.read()  # takes everything, answers nothing, never closes

    server, url = await raw_server(half_open)
    async with server:
        client = await AppServerClient.connect(Connect(url, timeouts=Timeouts(request=0.3)), initialize=False)
        try:
            with pytest.raises(RequestTimeout):
                await client.request("thread/loaded/list", {})
            assert not client.healthy  # the agent would replace it
        finally:
            await client.close()
    figures.count(SECTION, KINDS)


@pytest.fixture
def live() -> Iterator[LiveCodex]:
    found = live_codex()
    if isinstance(found, str):
        pytest.skip(found)
    slow = {"output": [{"type": "message", "id": "m", "deltas": ["x"] * 30}], "delay_ms": 500}
    script = {"rules": [], "default": slow}
    with LiveCodex(script, codex_bin=found.path, prefix="codexmini-faults-") as live:
        yield live


@pytest.mark.live
async def test_transport_faults_a_server_killed_mid_turn(live: Any):
    url = live.serve("ws")
    async with await AppServerClient.connect(url) as client:
        thread = await Thread.start(client, cwd=live.ws, model="gpt-fake")
        seen = 0
        with pytest.raises(WebSocketError):
            async for _ in thread.turn("stream slowly"):
                seen += 1
                if seen == 3:  # streaming: kill the server's whole group
                    os.killpg(live.pids[-1], signal.SIGKILL)
        assert seen >= 3 and not client.healthy
    live.stop_servers()
    assert live.alive() == []
    figures.count(SECTION, KINDS)
