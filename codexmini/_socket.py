"""A running app-server over WebSocket: the transport of a :class:`~codexmini.Connect`.

:func:`open_websocket` opens the socket (TCP for ``ws://``, a unix socket
for ``unix://``), runs the opening handshake of :mod:`._websocket` with the
connection's credentials, all within ``Timeouts.initialize``, and returns a
:class:`WebSocketTransport`: the client reads and writes it as it does a
child's pipes.  ``read()`` gives the server's text messages as JSON lines
(one message, one line), ``write(lines)`` sends each line as one text
message (fragmented past what the server takes unfragmented),
``close_input()`` starts the closing handshake, ``signal()`` and
``aclose()`` drop the connection.  The socket is read and written through
:class:`_Connection`, an asyncio protocol of our own.  There is no process:
``pid`` and ``returncode`` are ``None``; :meth:`WebSocketTransport.ended` is
the :class:`~codexmini.WebSocketError` saying how the connection ended.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from typing import Optional

from ._connect import Address, Connect
from ._deadline import within
from ._errors import ConfigError, ConnectFailed, TransportError, WebSocketError
from ._process import READ_CHUNK, Chunks, wake
from ._transport import Chunk
from ._websocket import Answer, Closed, Handshake, WebSocket, new_key, opening_request

log = logging.getLogger("codexmini.client")


def _read_file(path: str) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None


def _reason(exc: OSError) -> str:
    """What went wrong, in the system's words ("Connection refused")."""
    if exc.errno:
        return os.strerror(exc.errno)
    return str(exc) or type(exc).__name__


def _host_header(address: Address) -> str:
    if address.family == "unix":
        return "localhost"
    host = f"[{address.host}]" if ":" in address.host else address.host
    return f"{host}:{address.port}"


#: The most one read of the socket takes: 64 KiB, what asyncio's pipe to a
#: child held (its socket transports read up to 256 KiB at once).  By 256 KiB
#: asyncio's stream buffer drew fresh pages from the system again and again:
#: on the bench's 200,000-notification turn over TCP, 17,000-18,000 page
#: faults in the reader's window and twice the system time; at 64 KiB about
#: 2,000 (``make bench``'s ``client_ws``).  The transport hands the codec
#: what one read brought, whole: taken 32 KiB at a time (the pipe's
#: ``READ_CHUNK``), each read was copied out in two slices, and the codec
#: called twice.  Twelve interleaved runs of 100,000 notifications, 3.11,
#: CPU seconds, median: TCP 0.380-0.437 -> 0.358-0.369, unix socket
#: 0.372-0.426 -> 0.365-0.367 (stdio 0.337-0.358), in two batches of six.
SOCKET_READ = 2 * READ_CHUNK
#: How much of what the socket brought is kept, not yet taken, before reading
#: it pauses (it resumes at half): then the kernel's buffer fills, and TCP's
#: window makes the server wait.
SOCKET_HELD = 1 << 18


class _Connection(asyncio.Protocol):
    """One socket, both ways, for :class:`WebSocketTransport`.

    What the socket brings is kept as the transport read it
    (:class:`~._process.Chunks`) and taken ``n`` bytes at a time; reading
    pauses while :data:`SOCKET_HELD` bytes wait.  Writes go to the transport, with its
    flow control (:meth:`drain`)."""

    def __init__(self) -> None:
        self._chunks = Chunks()  # what the socket brought, not yet taken
        self._paused = False
        self._ended = False
        self._error: Optional[Exception] = None
        self._reading: "Optional[asyncio.Future[None]]" = None
        self._writing: "Optional[asyncio.Future[None]]" = None
        self._closed: "asyncio.Future[None]" = asyncio.get_running_loop().create_future()
        self.transport: Optional[asyncio.Transport] = None

    # -- asyncio's calls -----------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self._chunks.append(data)
        if self._chunks.held >= SOCKET_HELD and not self._paused:
            self._paused = True
            self._transport().pause_reading()
        wake(self._reading)

    def eof_received(self) -> None:
        self._ended = True  # and the transport closes
        wake(self._reading)

    def connection_lost(self, exc: Optional[Exception]) -> None:
        self._ended, self._error = True, exc
        wake(self._reading)
        wake(self._writing)
        wake(self._closed)

    def pause_writing(self) -> None:
        self._writing = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        wake(self._writing)
        self._writing = None

    # -- reading -------------------------------------------------------------

    async def read(self, n: int) -> bytes:
        """Up to ``n`` bytes, as soon as there are any; ``b""`` once the
        server closed; what broke the connection once nothing is left."""
        while not self._chunks:
            if self._error is not None:
                raise self._error
            if self._ended:
                return b""
            self._reading = waiter = asyncio.get_running_loop().create_future()
            try:
                await waiter
            finally:
                self._reading = None
        data = self._chunks.take(n)
        if self._paused and self._chunks.held <= SOCKET_HELD // 2:
            self._paused = False
            self._transport().resume_reading()
        return data

    # -- writing -------------------------------------------------------------

    def write(self, data: bytes) -> None:
        self._transport().write(data)

    async def drain(self) -> None:
        """Until the transport takes more (asyncio's flow control); raises
        ``ConnectionResetError`` once the connection is lost."""
        if self._writing is not None:
            await asyncio.shield(self._writing)
        if self._closed.done():
            raise ConnectionResetError("the connection was lost")

    def is_closing(self) -> bool:
        return self._transport().is_closing()

    def close(self) -> None:
        self._transport().close()

    def abort(self) -> None:
        self._transport().abort()

    async def wait_closed(self) -> None:
        await asyncio.shield(self._closed)

    def _transport(self) -> asyncio.Transport:
        assert self.transport is not None  # connected: asyncio calls connection_made first
        return self.transport


async def _open(address: Address) -> _Connection:
    loop = asyncio.get_running_loop()
    if address.family == "unix":
        transport, connection = await loop.create_unix_connection(_Connection, address.host)
    else:
        transport, connection = await loop.create_connection(_Connection, address.host, address.port)
    _read_at_most(transport, SOCKET_READ)
    return connection


def _read_at_most(transport: asyncio.BaseTransport, size: int) -> None:
    """Set the most one read of ``transport`` takes: ``max_size``, the read
    size of asyncio's socket transports.  A transport without one keeps its
    own (uvloop's, a compiled class, takes no new attribute)."""
    try:
        transport.max_size = size  # type: ignore[attr-defined]
    except AttributeError:
        pass


async def _answer(reader: _Connection, handshake: Handshake) -> Answer:
    while True:
        data = await reader.read(READ_CHUNK)
        if not data:
            raise ConnectionResetError("the server closed the connection during the opening handshake")
        answer = handshake.feed(data)
        if answer is not None:
            return answer


async def open_websocket(target: Connect) -> "WebSocketTransport":
    """Connect to ``target`` and complete the opening handshake, within
    ``target.timeouts.initialize``.  Raises :class:`~codexmini.ConnectFailed`
    (unreachable, refused, no ``101``), :class:`~codexmini.AuthRejected`
    (``401``/``403``) and :class:`~codexmini.ConfigError` (a token or secret
    file that cannot be read)."""
    address, url, limit = target.address, target.url, target.timeouts.initialize
    headers = target.headers(_read_file, time.time())  # before any socket: a bad file is a ConfigError
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    try:
        connection = await within(_open(address), limit)
    except asyncio.TimeoutError:
        raise ConnectFailed(url, f"no connection within {limit:g}s") from None
    except OSError as exc:
        raise ConnectFailed(url, _reason(exc)) from None
    key = new_key()
    handshake = Handshake(url, key)
    try:
        connection.write(opening_request(_host_header(address), address.path, key, headers))
        answer = await within(_answer(connection, handshake), max(deadline - loop.time(), 0.001))
        unfragmented = handshake.check(answer)
    except asyncio.TimeoutError:
        connection.close()
        raise ConnectFailed(url, f"no answer to the opening handshake within {limit:g}s") from None
    except OSError as exc:
        connection.close()
        raise ConnectFailed(url, _reason(exc)) from None
    except BaseException:
        connection.close()
        raise
    ws = WebSocket(max_message=target.limits.max_frame_bytes, unfragmented=unfragmented)
    return WebSocketTransport(connection, ws, url, answer.rest)


class WebSocketTransport:
    """One WebSocket connection to an app-server, as a :class:`~._transport.Transport`."""

    def __init__(self, connection: _Connection, ws: WebSocket, url: str, rest: bytes = b"") -> None:
        self.url = url
        # (one object, the socket both ways: read as the reader, written as the writer)
        self._reader = self._writer = connection
        self._ws = ws
        self._pending = rest  # what came with the handshake's answer
        self._failure: Optional[TransportError] = None
        self._gone: "asyncio.Future[None]" = asyncio.get_running_loop().create_future()

    # -- what the client reads ---------------------------------------------

    @property
    def pid(self) -> Optional[int]:
        return None

    @property
    def returncode(self) -> Optional[int]:
        return None

    @property
    def stderr_tail(self) -> str:
        return ""

    def ended(self) -> TransportError:
        """How the connection ended (once :meth:`wait_exited` returned)."""
        return self._failure or WebSocketError("the connection was closed")

    async def read(self) -> Chunk:
        """The server's next text messages, whole and decoded (one JSON-RPC
        message each); ``b""`` once the connection ended."""
        while not self._gone.done():
            data, self._pending = self._pending, b""
            if not data:
                try:
                    # What one read of the socket brought, whole: no 32 KiB
                    # slice copied out of it, half the calls down to the codec.
                    data = await self._reader.read(SOCKET_READ)
                except (ConnectionError, OSError) as exc:
                    self._end(WebSocketError(f"the connection broke: {exc}"))
                    break
                if not data:
                    self._end(WebSocketError("the server dropped the connection without a close"))
                    break
            try:
                texts, events = self._ws.receive_texts(data)
            except WebSocketError as exc:  # the server broke the protocol: our close frame says why
                self._flush()
                self._end(exc)
                break
            if events:
                self._flush()  # pongs, the reply to the server's close
                for event in events:
                    if type(event) is Closed:
                        reason = f"the server closed the connection{': ' + event.reason if event.reason else ''}"
                        self._end(WebSocketError(reason, event.code))
            if texts:
                return texts
        return b""

    async def write(self, data: bytes) -> None:
        """Send each JSON line of ``data`` as one text message; raises
        ``ConnectionError`` once the connection is gone."""
        if self._gone.done() or self._writer.is_closing():
            raise ConnectionResetError("the websocket connection is closed")
        for line in data.split(b"\n"):
            if line:
                self._writer.write(self._ws.send_text(line))
        await self._writer.drain()

    def close_input(self) -> None:
        """Start the closing handshake (the server answers, then closes)."""
        if not self._gone.done() and not self._writer.is_closing():
            try:
                self._writer.write(self._ws.close(1000))
            except WebSocketError:  # pragma: no cover - closing twice: already under way
                pass

    async def wait_exited(self) -> None:
        """Until the connection is gone."""
        await asyncio.shield(self._gone)

    def signal(self, sig: int) -> None:
        """Drop the connection (there is no process to signal)."""
        self._end(WebSocketError("the connection was dropped"))

    async def aclose(self, timeout: float) -> None:
        """Close the socket and wait (bounded) until it is closed."""
        self._end(WebSocketError("the connection was closed"))
        try:
            await within(self._writer.wait_closed(), timeout)
        except asyncio.TimeoutError:  # what we wrote never drained (the server reads nothing): drop it
            self._writer.abort()

    # -- inside --------------------------------------------------------------

    def _flush(self) -> None:
        out = self._ws.data_to_send()
        if out and not self._writer.is_closing():
            self._writer.write(out)

    def _end(self, error: TransportError) -> None:
        if not self._gone.done():
            self._failure = error
            log.debug("websocket %s ended: %s", self.url, error)
            self._writer.close()
            self._gone.set_result(None)


__all__ = ["WebSocketTransport", "open_websocket"]
