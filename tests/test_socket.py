"""A running app-server over WebSocket (``codexmini._socket``): the real binary, and raw servers.

``codex app-server --listen ws://127.0.0.1:0`` and ``--listen unix://PATH``
started by :meth:`LiveCodex.serve` on the scripted model (``-m live``): a
turn over each streams typed events and answers an approval; a listener with
``--ws-auth capability-token`` or ``signed-bearer-token`` refuses no
credentials and wrong ones with :class:`~codexmini.AuthRejected` and takes the
right ones; what cannot be reached is :class:`~codexmini.ConnectFailed`; a
server that goes away fails what waits with :class:`~codexmini.WebSocketError`.
Every frame is validated against the binary's schema, as over stdio.

Offline, raw asyncio servers on 127.0.0.1 play what codex never does: an
answer that is no ``101``, silence, a dropped or reset connection, a frame
that breaks the protocol, a line break inside a message.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import re
import socket
import stat
import struct
from typing import Any, AsyncIterator, Iterator, List, Optional, Tuple

import pytest
from support.fake_client import until
from support.raw_ws import Handler, raw_server

from codexmini import (
    Agent,
    AgentConfig,
    AgentMessageDelta,
    AppServerClient,
    AuthRejected,
    ConfigError,
    Connect,
    ConnectFailed,
    ItemCompleted,
    Launch,
    SessionLog,
    SignedToken,
    Thread,
    Timeouts,
    TurnCompleted,
    WebSocketError,
    _cli,
    _socket,
    read_log,
    run,
    sync,
)
from codexmini._connect import Address
from codexmini._errors import StartFailed
from codexmini._socket import open_websocket
from codexmini._websocket import accept_for
from codexmini.testing.fake_socket import accept, server_frame
from codexmini.testing.live import LiveCodex
from conformance.versions import live_codex

LIVE = pytest.mark.live

USAGE = {"input_tokens": 10, "output_tokens": 5}
COMMAND = {
    "type": "function_call",
    "call_id": "call_1",
    "name": "exec_command",
    "arguments": {"cmd": "echo over-the-socket", "yield_time_ms": 30000, "sandbox_permissions": "require_escalated"},
}
SLOW = {"output": [{"type": "message", "id": "msg_s", "deltas": ["slow"] * 20}], "delay_ms": 2000}
SCRIPT = {
    "rules": [
        {"when": {"user_contains": "run it"}, "times": 1, "respond": {"output": [COMMAND], "usage": USAGE}},
        {
            "when": {"user_contains": "<user>\nhello again"},
            "respond": {"output": [{"type": "message", "id": "m2", "deltas": ["Back."]}]},
        },
        {"when": {"user_contains": "<user>\nslow"}, "respond": SLOW},
    ],
    "default": {"output": [{"type": "message", "id": "msg_1", "deltas": ["Hello ", "over ", "a socket."]}]},
}


@pytest.fixture
def live() -> Iterator[LiveCodex]:
    found = live_codex()
    if isinstance(found, str):
        pytest.skip(found)
    with LiveCodex(SCRIPT, codex_bin=found.path, prefix="codexmini-socket-") as live:
        yield live
        live.stop_servers()
        assert live.alive() == []  # the server and whatever it started are gone


@LIVE
@pytest.mark.parametrize("listen", ["ws", "unix"])
async def test_socket_a_turn_streams_typed_events_and_answers_an_approval(live, listen):
    url = live.serve(listen)
    assert url.startswith(listen + "://")
    asked: List[Any] = []

    async def approve(method: str, params: Any) -> Any:
        asked.append(method)
        return {"decision": "accept"}

    async with await AppServerClient.connect(url) as client:
        assert client.url == url and client.pid is None and client.argv == []
        client.on_request("item/commandExecution/requestApproval", approve)
        thread = await Thread.start(client, cwd=live.ws, model="gpt-fake", approval_policy="on-request")
        events = [event async for event in thread.turn("hello")]
        assert "".join(e.delta for e in events if isinstance(e, AgentMessageDelta)) == "Hello over a socket."
        assert isinstance(events[-1], TurnCompleted) and events[-1].status == "completed"
        ran = [event async for event in thread.turn("run it")]
        outputs = [e.item for e in ran if isinstance(e, ItemCompleted) and e.item["type"] == "commandExecution"]
        assert asked == ["item/commandExecution/requestApproval"]
        assert outputs and "over-the-socket" in (outputs[0].get("aggregatedOutput") or "")
        assert client.healthy and len(client.protocol_errors) == 0


@LIVE
async def test_socket_run_sync_and_a_connect_value_reach_the_same_server(live):
    url = live.serve("ws")
    result = await run("hello", connect=url, cwd=live.ws, model="gpt-fake")
    assert result.final_response == "Hello over a socket."
    result = await run("hello", connect=Connect(url, timeouts=Timeouts(request=30)), cwd=live.ws, model="gpt-fake")
    assert result.status == "completed"
    said = await asyncio.to_thread(sync.run, "hello", connect=url, cwd=live.ws, model="gpt-fake")
    assert said.final_response == "Hello over a socket."

    def on_a_sync_client() -> Optional[str]:
        with sync.Client(connect=url) as client:
            return client.run("hello", cwd=live.ws, model="gpt-fake").final_response

    assert await asyncio.to_thread(on_a_sync_client) == "Hello over a socket."
    client = await AppServerClient.connect(url, initialize=False)  # the handshake when the caller says
    try:
        assert client.server_info == {}
        assert (await client.initialize())["userAgent"]
    finally:
        await client.close()


async def test_socket_launch_and_connect_together_are_refused():
    with pytest.raises(ConfigError, match="launch and connect: run"):
        await run("x", launch=Launch(), connect="ws://127.0.0.1:9")
    with pytest.raises(ConfigError, match="launch and connect: a Client"):
        await asyncio.to_thread(sync.Client, Launch(), connect="ws://127.0.0.1:9")


def _write(path: str, text: str) -> str:
    with open(path, "w") as fh:
        fh.write(text)
    return path


@LIVE
async def test_socket_the_agent_over_a_connection_logs_a_drop_and_connects_again(live):
    url = live.serve(f"ws://127.0.0.1:{_free_port()}")
    path = os.path.join(live.root, "session.jsonl")
    with SessionLog.open(path) as log:
        config = AgentConfig(cwd=live.ws, model="gpt-fake", connect=url, skills=False)
        async with Agent(log, config) as agent:
            assert (await agent.run("hello"))["reason"] == "completed"
            running = asyncio.ensure_future(agent.run("slow"))
            assert await until(lambda: any("slow" in json.dumps(r["body"]) for r in live.requests), 60)
            live.stop_servers()  # the server goes away mid-turn
            dropped = await running
            assert (dropped["reason"], dropped["error"]["code"]) == ("error", "CODEX_NO_RESULT")
            down = await agent.run("while it is down")  # logged all the same
            assert down["error"]["code"] == "CODEX_UNAVAILABLE"
            assert live.serve(url) == url  # back where it was
            assert (await agent.run("hello again"))["reason"] == "completed"  # connected again
    events = read_log(path).events
    assert [e["data"]["reason"] for e in events if e["type"] == "turn/end"] == [
        "completed",
        "error",
        "error",
        "completed",
    ]
    said = [b["text"] for e in events if e["type"] == "user/message" for b in e["data"]["content"]]
    assert said == ["hello", "slow", "while it is down", "hello again"]
    with pytest.raises(ConfigError, match="launch or connect, not both"):
        AgentConfig(cwd=live.ws, connect=url, launch=live.launch)
    with pytest.raises(ConfigError, match="the scheme must be ws:// or unix://"):
        AgentConfig(cwd=live.ws, connect="http://127.0.0.1:1")


@LIVE
async def test_socket_capability_token_refuses_none_and_a_wrong_one(live):
    token_file = _write(os.path.join(live.root, "token"), "tok-right\n")
    url = live.serve("ws", ["--ws-auth", "capability-token", "--ws-token-file", token_file])
    for refused in (Connect(url), Connect(url, token="tok-wrong")):
        with pytest.raises(AuthRejected) as caught:
            await AppServerClient.connect(refused)
        assert caught.value.status == 401 and "tok-wrong" not in str(caught.value)
    for accepted in (Connect(url, token="tok-right"), Connect(url, token_file=token_file)):
        async with await AppServerClient.connect(accepted) as client:
            assert await client.request("thread/loaded/list", {}) is not None


@LIVE
async def test_socket_a_unix_listener_takes_no_credentials_its_socket_file_is_the_guard(live):
    # Measured on 0.149.1 and 0.171.0: codex ignores --ws-auth on a unix
    # listener (no token, a wrong one and the right one are all let in); the
    # socket file is made 0600 in a directory of the caller's, so only its
    # owner can connect.  Recorded here so that a codex that changes it is seen.
    token_file = _write(os.path.join(live.root, "token"), "unix-secret")
    url = live.serve("unix", ["--ws-auth", "capability-token", "--ws-token-file", token_file])
    assert stat.S_IMODE(os.stat(url[len("unix://") :]).st_mode) == 0o600
    for token in (None, "wrong", "unix-secret"):
        client = await AppServerClient.connect(url, token=token)
        assert client.server_info
        await client.close()


@LIVE
async def test_socket_signed_bearer_token_is_minted_from_the_shared_secret(live):
    secret = _write(os.path.join(live.root, "secret"), "a-shared-secret-of-some-length-0123456789\n")
    wrong = _write(os.path.join(live.root, "wrong"), "another-secret-entirely-0123456789abcdef\n")
    args = ["--ws-auth", "signed-bearer-token", "--ws-shared-secret-file", secret]
    url = live.serve("ws", [*args, "--ws-issuer", "codexmini-tests", "--ws-audience", "codex"])
    refused = [
        Connect(url),
        Connect(url, signed=SignedToken(wrong, "codexmini-tests", "codex")),
        Connect(url, signed=SignedToken(secret, "someone-else", "codex")),
        Connect(url, signed=SignedToken(secret, "codexmini-tests", "not-codex")),
    ]
    for target in refused:
        with pytest.raises(AuthRejected):
            await AppServerClient.connect(target)
    async with await AppServerClient.connect(Connect(url, signed=SignedToken(secret, "codexmini-tests", "codex"))) as c:
        assert await c.request("thread/loaded/list", {}) is not None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@LIVE
async def test_socket_a_server_that_cannot_listen_is_start_failed_with_its_words(live):
    with pytest.raises(StartFailed, match="--ws-auth"):
        live.serve("ws", ["--ws-auth", "no-such-mode"])


@LIVE
async def test_socket_what_cannot_be_reached_is_connect_failed(live):
    with pytest.raises(ConnectFailed, match="Connection refused"):
        await AppServerClient.connect(f"ws://127.0.0.1:{_free_port()}")
    with pytest.raises(ConnectFailed):
        await AppServerClient.connect(f"unix://{os.path.join(live.root, 'nobody.sock')}")


@LIVE
async def test_socket_a_server_that_goes_away_fails_what_waits(live):
    url = live.serve("ws")
    async with await AppServerClient.connect(url) as client:
        sub = client.subscribe(client.GLOBAL)
        live.stop_servers()
        with pytest.raises(WebSocketError):
            while True:  # what came before the end, then the end
                await sub.get(timeout=30)
        with pytest.raises(WebSocketError):
            await client.request("thread/loaded/list", {})


# -- offline: raw servers play what codex never does ------------------------------------


def masked(opcode: int, payload: bytes) -> bytes:
    """A frame as no server may send it: masked (with a zero mask)."""
    return bytes((0x80 | opcode, 0x80 | len(payload))) + b"\0\0\0\0" + payload


async def test_socket_an_answer_that_is_no_101_is_connect_failed_and_401_is_auth_rejected():
    async def answer(status: bytes) -> Handler:
        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 " + status + b"\r\ncontent-length: 0\r\n\r\n")
            await writer.drain()
            writer.close()

        return handler

    server, url = await raw_server(await answer(b"500 Internal Server Error"))
    async with server:
        with pytest.raises(ConnectFailed, match="answered 500") as failed:
            await AppServerClient.connect(url)
        assert failed.value.status == 500
    server, url = await raw_server(await answer(b"401 Unauthorized"))
    async with server:
        with pytest.raises(AuthRejected, match=r"refused the credentials \(401\)"):
            await AppServerClient.connect(url, token="tok-secret-value")


async def test_socket_a_silent_or_vanishing_server_during_the_handshake_is_connect_failed():
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # reads, answers nothing

    async def hangs_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.close()

    server, url = await raw_server(silent)
    async with server:
        with pytest.raises(ConnectFailed, match="no answer to the opening handshake within 0.2s"):
            await AppServerClient.connect(Connect(url, timeouts=Timeouts(initialize=0.2)))
    server, url = await raw_server(hangs_up)
    async with server:
        with pytest.raises(ConnectFailed, match="closed the connection during the opening handshake"):
            await AppServerClient.connect(url)


async def test_socket_a_connection_that_does_not_come_is_connect_failed(monkeypatch):
    async def never(address: Address) -> Any:
        await asyncio.sleep(3600)

    monkeypatch.setattr(_socket, "_open", never)  # a black hole: nothing on this machine is one
    with pytest.raises(ConnectFailed, match="no connection within 0.1s"):
        await AppServerClient.connect(Connect("ws://10.255.255.1:9", timeouts=Timeouts(initialize=0.1)))


async def test_socket_a_token_file_that_cannot_be_read_is_a_config_error_before_any_socket(tmp_path):
    with pytest.raises(ConfigError, match="cannot read .*missing: No such file"):
        await AppServerClient.connect(Connect("ws://127.0.0.1:9", token_file=str(tmp_path / "missing")))


async def test_socket_an_answer_in_pieces_is_read_to_its_end():
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        key = re.search(rb"Sec-WebSocket-Key: (\S+)", head)
        assert key is not None
        answer = (
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + f"Sec-WebSocket-Accept: {accept_for(key.group(1).decode())}\r\n\r\n".encode()
        )
        for piece in (answer[:20], answer[20:]):  # two writes, apart
            writer.write(piece)
            await writer.drain()
            await asyncio.sleep(0.05)
        await reader.read()

    server, url = await raw_server(handler)
    async with server:
        transport = await open_websocket(Connect(url))
        transport.close_input()
        await transport.aclose(5)


async def test_socket_frames_with_the_answer_pings_and_line_breaks_inside_a_message():
    done = asyncio.get_running_loop().create_future()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # The first message comes with the 101, then a ping alone, then a
        # message with a line break between its tokens.
        await accept(reader, writer, then=server_frame(0x1, b'{"first":1}'))
        writer.write(server_frame(0x9, b"hi"))
        await writer.drain()
        done.set_result(await reader.read(6 + 2))  # our pong: a header, a mask, "hi"
        writer.write(server_frame(0x1, b'{"a":\n1}'))
        await writer.drain()
        await reader.read()

    server, url = await raw_server(handler)
    async with server:
        transport = await open_websocket(Connect(url))
        assert (transport.pid, transport.returncode, transport.stderr_tail) == (None, None, "")
        assert await transport.read() == ['{"first":1}']  # whole messages, one frame each, decoded
        assert await transport.read() == ['{"a":\n1}']  # the ping was answered on the way
        pong = await done
        assert pong[0] == 0x8A and pong[1] == 0x82  # a masked pong of 2 bytes
        transport.signal(9)
        assert await transport.read() == b""
        with pytest.raises(ConnectionResetError):
            await transport.write(b"{}\n")
        transport.close_input()  # gone already: nothing to close
        assert str(transport.ended()) == "websocket: the connection was dropped"
        await transport.aclose(5)


async def test_socket_a_read_of_the_socket_takes_what_a_pipe_read_takes_at_most():
    # asyncio's socket transports read 256 KiB at once; the stream's buffer
    # then grew and shrank by that much, on fresh pages from the system each
    # time.  A WebSocket connection reads 64 KiB at most, as a child's pipe does.
    messages = [b'{"n":%d,"pad":"%s"}' % (i, b"x" * 300) for i in range(4000)]  # 1.3 MB
    burst = b"".join(server_frame(0x1, m) for m in messages)

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await accept(reader, writer)
        await reader.read(1)  # the client is ready: all of it in one write
        writer.write(burst)
        await writer.drain()
        await reader.read()

    server, url = await raw_server(handler)
    async with server:
        transport = await open_websocket(Connect(url))
        reads: List[int] = []
        feed = transport._reader.data_received
        transport._reader.data_received = lambda data: reads.append(len(data)) or feed(data)  # type: ignore[method-assign]
        await transport.write(b"{}\n")
        got: List[str] = []
        while len(got) < len(messages):
            chunk = await transport.read()
            assert isinstance(chunk, list)
            got += chunk
        assert got == [m.decode() for m in messages]
        assert sum(reads) == len(burst) and max(reads) <= _socket.SOCKET_READ == 64 * 1024
        transport.signal(9)
        await transport.aclose(5)


MESSAGES = [b'{"n":%d,"pad":"%s"}' % (i, b"x" * 300) for i in range(4000)]  # 1.3 MB
LINES = b"\n".join(b'{"pad":"%s"}' % (b"y" * (1 << 20)) for _ in range(16))  # 16 MiB to write


async def test_socket_reading_pauses_while_socket_held_bytes_wait_and_resumes_once_taken():
    burst = b"".join(server_frame(0x1, m) for m in MESSAGES)

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await accept(reader, writer)
        writer.write(burst)
        await writer.drain()  # waits while the client reads nothing
        await reader.read()

    server, url = await raw_server(handler)
    async with server:
        transport = await open_websocket(Connect(url))
        connection = transport._reader
        assert await until(lambda: connection._paused)  # nothing taken: the socket is no longer read
        assert _socket.SOCKET_HELD <= connection._chunks.held < _socket.SOCKET_HELD + _socket.SOCKET_READ
        got: List[str] = []
        while len(got) < len(MESSAGES):
            chunk = await transport.read()
            assert isinstance(chunk, list)
            got += chunk
        assert got == [m.decode() for m in MESSAGES] and not connection._paused
        transport.signal(9)
        await transport.aclose(5)


def a_server_reading_nothing_until(go: "asyncio.Future[str]", got: "asyncio.Future[int]") -> Handler:
    """Takes nothing after the handshake until ``go`` says ``"read"`` (then
    reads what came, into ``got``) or ``"reset"`` (then resets the connection)."""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await accept(reader, writer)
        if await go == "reset":
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return
        n = 0
        while n < len(LINES):
            n += len(await reader.read(1 << 16))
        got.set_result(n)
        await reader.read()

    return handler


@contextlib.asynccontextmanager
async def a_write_waiting() -> AsyncIterator[
    Tuple[Any, "asyncio.Future[None]", "asyncio.Future[str]", "asyncio.Future[int]"]
]:
    """A connection to a server that reads nothing (until told), and a write
    of :data:`LINES` waiting on asyncio's flow control: (transport, the
    write, what tells the server, what it read)."""
    loop = asyncio.get_running_loop()
    go, got = loop.create_future(), loop.create_future()
    server, url = await raw_server(a_server_reading_nothing_until(go, got))
    async with server:
        transport = await open_websocket(Connect(url))
        writing = asyncio.ensure_future(transport.write(LINES))
        assert await until(lambda: transport._writer._writing is not None)  # asyncio's flow control paused it
        assert not writing.done()
        try:
            yield transport, writing, go, got
        finally:
            if not go.done():
                go.set_result("reset")
            transport.signal(9)
            await transport.aclose(5)


async def test_socket_a_write_waits_while_the_server_reads_nothing_and_ends_once_it_reads():
    async with a_write_waiting() as (transport, writing, go, got):
        go.set_result("read")
        await asyncio.wait_for(writing, 30)  # a hang guard, not a time limit
        assert await asyncio.wait_for(got, 30) >= len(LINES)


async def test_socket_a_write_waiting_when_the_connection_breaks_raises_connection_error():
    async with a_write_waiting() as (transport, writing, go, got):
        go.set_result("reset")
        with pytest.raises(ConnectionError):
            await asyncio.wait_for(writing, 30)


async def test_socket_aclose_of_a_connection_whose_writes_never_drain_drops_it():
    async with a_write_waiting() as (transport, writing, go, got):
        transport.signal(9)  # closes: the transport waits for what it holds to drain, which never happens
        await transport.aclose(0.2)
        assert await until(lambda: transport._writer._closed.done())  # dropped
        with pytest.raises(ConnectionError):
            await asyncio.wait_for(writing, 30)


def test_socket_a_transport_without_a_read_size_keeps_its_own():
    class Compiled:  # as uvloop's transports: no attribute can be added
        __slots__ = ()

    _socket._read_at_most(Compiled(), 1024)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "ending, error",
    [
        ("masked", "the server broke the protocol: a masked frame from the server (close code 1002)"),
        ("drop", "the server dropped the connection without a close"),
        ("reset", "the connection broke"),
    ],
)
async def test_socket_a_connection_that_breaks_ends_with_a_websocket_error(ending, error):
    sent_back = asyncio.get_running_loop().create_future()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await accept(reader, writer)
        if ending == "masked":
            writer.write(masked(0x1, b"{}"))
            await writer.drain()
            sent_back.set_result(await reader.read(8))
            return
        if ending == "reset":  # an RST, not a FIN
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.close()

    server, url = await raw_server(handler)
    async with server:
        transport = await open_websocket(Connect(url))
        assert await transport.read() == b""
        assert error in str(transport.ended())
        await asyncio.wait_for(transport.wait_exited(), 10)
        if ending == "masked":
            close = await sent_back
            assert close[:2] == b"\x88\x82" and len(close) == 8  # our close, masked: code 1002
        await transport.aclose(5)


def test_socket_host_header_of_each_address():
    assert _socket._host_header(Address("tcp", "::1", 4222, "/")) == "[::1]:4222"
    assert _socket._host_header(Address("tcp", "127.0.0.1", 80, "/")) == "127.0.0.1:80"
    assert _socket._host_header(Address("unix", "/s.sock", 0, "/")) == "localhost"
    assert _socket._reason(OSError("no errno")) == "no errno"
    assert _socket._reason(OSError()) == "OSError"


# -- the CLI -------------------------------------------------------------------------------


def cli(argv: List[str]) -> Tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = _cli.main(argv, stdin=io.StringIO(""), stdout=out, stderr=err, env=dict(os.environ))
    return code, out.getvalue(), err.getvalue()


@LIVE
def test_socket_cli_run_connects_with_a_token_file(live):
    token_file = _write(os.path.join(live.root, "token"), "tok-cli-secret\n")
    url = live.serve("ws", ["--ws-auth", "capability-token", "--ws-token-file", token_file])
    common = ["--model", "gpt-fake", "--cwd", live.ws, "--connect", url]
    code, out, err = cli(["run", "hello", *common, "--token-file", token_file, "--session", f"{live.root}/a.jsonl"])
    assert (code, out) == (0, "Hello over a socket.\n"), err
    code, out, err = cli(["run", "hello", *common, "--session", f"{live.root}/b.jsonl"])  # no token
    assert (code, out) == (3, "") and "refused the credentials (401)" in err and "tok-cli-secret" not in err


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--connect", "ws://127.0.0.1:9", "--codex-bin", "/bin/codex"], "codex is already running; --codex-bin start"),
        (["--connect", "ws://127.0.0.1:9", "-c", "a=1", "--pass-env", "X"], "-c, --pass-env start one"),
        (["--token-file", "/t"], "--token-file goes with --connect"),
        (["--connect", "http://127.0.0.1:9"], "the scheme must be ws:// or unix://"),
    ],
)
def test_socket_cli_connect_usage_errors(extra, message, tmp_path):
    code, out, err = cli(["run", "hello", "--cwd", str(tmp_path), "--session", str(tmp_path / "s.jsonl"), *extra])
    assert (code, out) == (2, "") and message in err
