"""A fake app-server behaviour served over a real WebSocket, as ``codex app-server --listen`` serves.

:func:`serve` listens on ``ws://127.0.0.1:<free port>`` (``listen="ws"``) or
on a unix socket (``listen="unix:///PATH"``) and plays a fresh instance of
the behaviour for every connection -- the same behaviours as
:class:`~codexmini.testing.FakeAppServer` runs in memory or over pipes
(``behaviour(server) -> status``, :class:`~.fake_appserver.ServerSide`)::

    async with await serve(CodexLike) as server:
        client = await AppServerClient.connect(server.url)

So code written for :meth:`AppServerClient.connect <codexmini.AppServerClient.connect>`
(or ``AgentConfig(connect=...)``) is tested over real sockets, without codex.
The server side speaks RFC 6455 as codex does: it accepts the opening
handshake (checking the key, answering ``Sec-WebSocket-Accept``), sends each
JSON-RPC message as one unmasked text frame, reads the client's masked
frames (fragments reassembled), answers a ping with a pong and a close with a
close.  A behaviour that returns ends its connection with a close frame
(``1000``); :meth:`~.fake_appserver.ServerSide.close_output` drops it without
one.  Only the standard library.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import os
import struct
import traceback
from typing import Any, List, Optional, Sequence, Set, Tuple, Union

from .fake_appserver import Behaviour, FakeError, ServerSide, instantiate

#: The GUID of RFC 6455's opening handshake.
_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
TEXT, CONTINUATION, CLOSE, PING, PONG = 0x1, 0x0, 0x8, 0x9, 0xA


def accept_key(key: bytes) -> bytes:
    """The ``Sec-WebSocket-Accept`` value for a client's ``Sec-WebSocket-Key``."""
    return base64.b64encode(hashlib.sha1(key.strip() + _GUID).digest())


def server_frame(opcode: int, payload: bytes = b"") -> bytes:
    """One final, unmasked frame (a server's), of any length."""
    n = len(payload)
    if n < 126:
        head = struct.pack("!BB", 0x80 | opcode, n)
    elif n < 1 << 16:
        head = struct.pack("!BBH", 0x80 | opcode, 126, n)
    else:
        head = struct.pack("!BBQ", 0x80 | opcode, 127, n)
    return head + payload


async def read_frame(reader: asyncio.StreamReader) -> Tuple[bool, int, bytes]:
    """The client's next frame: (final, opcode, unmasked payload).  Raises
    ``asyncio.IncompleteReadError`` at the end of the stream."""
    first, second = await reader.readexactly(2)
    n = second & 0x7F
    if n == 126:
        (n,) = struct.unpack("!H", await reader.readexactly(2))
    elif n == 127:
        (n,) = struct.unpack("!Q", await reader.readexactly(8))
    mask = await reader.readexactly(4) if second & 0x80 else b""
    payload = await reader.readexactly(n)
    if mask:
        payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return bool(first & 0x80), first & 0x0F, payload


async def accept(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, headers: Sequence[str] = (), then: bytes = b""
) -> bytes:
    """Read the opening handshake and answer ``101`` (with ``headers``, and
    ``then``: bytes in the same write, frames the client reads with the
    answer); the request's head.  A request with no ``Sec-WebSocket-Key``
    gets ``400`` and :class:`~.fake_appserver.FakeError`."""
    head = await reader.readuntil(b"\r\n\r\n")
    key = next(
        (line.split(b":", 1)[1] for line in head.split(b"\r\n") if line.lower().startswith(b"sec-websocket-key:")),
        None,
    )
    if key is None:
        writer.write(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")
        raise FakeError("an upgrade without Sec-WebSocket-Key")
    extra = "".join(f"{h}\r\n" for h in headers).encode("latin-1")
    writer.write(
        b"HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: upgrade\r\n"
        + b"sec-websocket-accept: "
        + accept_key(key)
        + b"\r\n"
        + extra
        + b"\r\n"
        + then
    )
    await writer.drain()
    return head


class SocketServerSide(ServerSide):
    """A behaviour's server side over one WebSocket connection."""

    def __init__(self, writer: asyncio.StreamWriter, argv: Sequence[str] = ()) -> None:
        super().__init__(argv, {}, None)
        self._writer = writer
        self.stderr_lines: List[str] = []
        self.reading = asyncio.Event()
        self.reading.set()
        self._closed = False

    def _write(self, data: bytes) -> None:
        if self._writer.is_closing():
            return
        for line in data.split(b"\n"):
            if line:
                self._writer.write(server_frame(TEXT, line))

    def send_frame(self, opcode: int, payload: bytes = b"") -> None:
        """A frame of any kind, as it is (a ping, a binary frame, ...)."""
        self._writer.write(server_frame(opcode, payload))

    def answer_close(self, payload: bytes) -> None:
        """Answer the client's close frame with its code (once)."""
        self.close(payload[:2])

    def close(self, code: bytes = struct.pack("!H", 1000)) -> None:
        """Send the close frame (once): ``code`` is its payload."""
        if not self._closed and not self._writer.is_closing():
            self._closed = True
            self._writer.write(server_frame(CLOSE, code))

    def stderr(self, text: str) -> None:
        self.stderr_lines.append(text)

    def close_output(self) -> None:
        """Drop the connection, with no close frame."""
        self._writer.close()

    def stop_reading(self) -> None:
        self.reading.clear()

    def close_input(self) -> None:
        self.stop_reading()
        self._feed_eof()


class SocketServer:
    """What :func:`serve` started: its :attr:`url`, the server side of every
    connection so far (:attr:`sides`, :attr:`server` the last one); close it
    (or ``async with``) to stop listening and end every connection."""

    def __init__(self, behaviour: Union[Behaviour, str, type], args: Sequence[str], headers: Sequence[str]) -> None:
        self._behaviour, self._args, self._headers = behaviour, list(args), list(headers)
        self.url = ""
        self.sides: List[SocketServerSide] = []
        self._server: Optional[asyncio.AbstractServer] = None
        self._tasks: "Set[asyncio.Task[Any]]" = set()

    @property
    def server(self) -> SocketServerSide:
        """The server side of the latest connection."""
        return self.sides[-1]

    async def _start(self, listen: str) -> None:
        if listen == "ws":
            self._server = await asyncio.start_server(self._connection, "127.0.0.1", 0)
            self.url = f"ws://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        elif listen.startswith("unix:///"):
            path = listen[len("unix://") :]
            self._server = await asyncio.start_unix_server(self._connection, path)
            self.url = listen
        else:
            raise ValueError(f"listen must be 'ws' or 'unix:///PATH', not {listen!r}")

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            try:
                await accept(reader, writer, self._headers)
            except (FakeError, ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
                return  # no upgrade: no behaviour
            side = SocketServerSide(writer)
            self.sides.append(side)
            await self._play(reader, writer, side)
        finally:
            writer.close()
            self._tasks.discard(task)

    async def _play(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, side: SocketServerSide) -> None:
        """Run the behaviour; it ends the connection with a close frame, or
        (raising, as a process would exit 1) drops it with its traceback kept."""
        feeding = asyncio.ensure_future(self._feed(reader, side))
        try:
            await instantiate(self._behaviour, self._args)(side)
        except FakeError as exc:
            side.stderr(f"fake app-server: {exc}")
            return
        except Exception:
            side.stderr(traceback.format_exc())
            return
        finally:
            feeding.cancel()
            await asyncio.gather(feeding, return_exceptions=True)
        side.close()

    async def _feed(self, reader: asyncio.StreamReader, side: SocketServerSide) -> None:
        message: List[bytes] = []
        try:
            while True:
                await side.reading.wait()
                final, opcode, payload = await read_frame(reader)
                if opcode == CLOSE:
                    side.answer_close(payload)
                    break
                if opcode == PING:
                    side.send_frame(PONG, payload)
                    continue
                message.append(payload)
                if final:
                    side._feed(b"".join(message) + b"\n")
                    message = []
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        side._feed_eof()

    async def aclose(self) -> None:
        """Stop listening and end every connection (their behaviours are cancelled)."""
        if self._server is not None:
            self._server.close()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            await self._server.wait_closed()
            self._server = None
        if self.url.startswith("unix://"):
            with contextlib.suppress(FileNotFoundError):  # Python 3.13's server removes it itself
                os.unlink(self.url[len("unix://") :])

    async def __aenter__(self) -> "SocketServer":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()


async def serve(
    behaviour: Union[Behaviour, str, type],
    *args: str,
    listen: str = "ws",
    headers: Sequence[str] = (),
) -> SocketServer:
    """Serve ``behaviour`` (given ``args``) over WebSocket at ``listen``:
    ``"ws"`` (``ws://127.0.0.1:<a free port>``) or ``"unix:///PATH"``;
    ``headers`` (``"name: value"``) go with every ``101``."""
    server = SocketServer(behaviour, args, headers)
    await server._start(listen)
    return server


__all__ = ["SocketServer", "SocketServerSide", "accept", "accept_key", "read_frame", "serve", "server_frame"]
