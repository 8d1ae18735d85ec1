"""WebSocket (RFC 6455), client side, without I/O: bytes in, events and bytes out.  Pure.

The opening handshake is :func:`opening_request` (the ``GET`` with its
``Upgrade`` headers and the caller's ``Authorization``) and a
:class:`Handshake` that reads the server's answer from whatever chunks it
arrives in and checks it: ``101`` with the right ``Sec-WebSocket-Accept``,
else :class:`~codexmini.ConnectFailed` -- :class:`~codexmini.AuthRejected`
for ``401``/``403``.

:class:`WebSocket` is the connection after it.  :meth:`WebSocket.send_text`
frames one message (masked, as a client must; fragmented when it is longer
than the server takes in one frame); :meth:`WebSocket.receive` turns bytes,
however they are cut, into :class:`Text`, :class:`Ping`, :class:`Pong` and
:class:`Closed` events, reassembling fragmented messages, and queues what the
protocol answers by itself (a pong for a ping, the reply to the server's
close) for :meth:`WebSocket.data_to_send`.  What the server may not send --
a masked frame, reserved bits, an unknown opcode, a binary message (codex
sends text), text that is no UTF-8, a message over ``max_message`` bytes
(refused from its length, before it is buffered) -- raises
:class:`~codexmini.WebSocketError` with the close code, and our close frame
with that code is queued.  A text message's payload stays bytes (checked as
UTF-8): the JSON-RPC layer decodes it as it decodes a line.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import struct
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

from ._errors import AuthRejected, ConfigError, ConnectFailed, WebSocketError

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#: What codex takes in one frame when it does not say (its unix listener says 16 MiB).
DEFAULT_UNFRAGMENTED = 16 * 1024 * 1024
#: The header a codex server announces its unfragmented limit in.
LIMIT_HEADER = "x-codex-websocket-max-unfragmented-message-bytes"

CONTINUATION, TEXT, BINARY, CLOSE, PING, PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA
_DATA = frozenset({CONTINUATION, TEXT, BINARY})
_CONTROL = frozenset({CLOSE, PING, PONG})
#: Close codes a peer may send (RFC 6455 7.4; 1004-1006 and 1015 never go on the wire).
_VALID_CLOSE = frozenset({1000, 1001, 1002, 1003, *range(1007, 1015), *range(3000, 5000)})

Random = Callable[[int], bytes]

#: A frame's first 4 bytes: its first two as one number, and what would be a 16-bit length.
_HEAD: Callable[[bytes, int], Tuple[int, int]] = struct.Struct(">HH").unpack_from
#: That number for a final, unmasked text frame whose length takes 16 bits;
#: below it, down to _TEXT7, one whose length is its low 7 bits (0-125).
_TEXT16 = 0x817E
_TEXT7 = 0x8100


def new_key(random: Random = os.urandom) -> str:
    """A ``Sec-WebSocket-Key``: 16 random bytes, base64."""
    return base64.b64encode(random(16)).decode("ascii")


def accept_for(key: str) -> str:
    """The ``Sec-WebSocket-Accept`` a server must answer ``key`` with."""
    return base64.b64encode(hashlib.sha1(key.encode("ascii") + GUID).digest()).decode("ascii")


_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")


def opening_request(host: str, path: str, key: str, headers: Sequence[Tuple[str, str]] = ()) -> bytes:
    """The client's opening handshake: ``GET path`` with the upgrade headers,
    then ``headers`` (an ``Authorization``, say)."""
    if not path.startswith("/") or any(c in path for c in " \r\n\0"):
        raise ConfigError(f"a WebSocket path starts with / and holds no space or line break: {path!r}")
    lines = [
        f"GET {path} HTTP/1.1",
        f"Host: {host}",
        "Upgrade: websocket",
        "Connection: Upgrade",
        f"Sec-WebSocket-Key: {key}",
        "Sec-WebSocket-Version: 13",
    ]
    for name, value in headers:
        if not _TOKEN.match(name) or any(c in value for c in "\r\n\0"):
            raise ConfigError(f"header {name!r} cannot go in a request (its name, or a line break in its value)")
        lines.append(f"{name}: {value}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


class Answer(NamedTuple):
    """The server's answer to the opening handshake: ``status``, ``reason``,
    ``headers`` (names lowercased, repeats joined by ``", "``) and ``rest``,
    the bytes after it (the first frames may come in the same read)."""

    status: int
    reason: str
    headers: Dict[str, str]
    rest: bytes


_STATUS = re.compile(r"^HTTP/1\.[01] (\d{3})(?: (.*))?$")


class Handshake:
    """Reads and checks the server's answer to :func:`opening_request`
    (``url`` only names the server in errors; ``key`` is the one sent)."""

    def __init__(self, url: str, key: str, max_head: int = 64 * 1024) -> None:
        self.url = url
        self.key = key
        self.max_head = max_head
        self._buffer = bytearray()

    def feed(self, data: bytes) -> Optional[Answer]:
        """The answer once its head is complete, else ``None`` (feed more)."""
        buffer = self._buffer
        buffer += data
        end = buffer.find(b"\r\n\r\n")
        if end < 0 or end > self.max_head:
            if len(buffer) > self.max_head:
                raise ConnectFailed(self.url, f"the server's answer has no end of headers within {self.max_head} bytes")
            return None
        lines = bytes(buffer[:end]).decode("latin-1").split("\r\n")
        status = _STATUS.match(lines[0])
        if status is None:
            raise ConnectFailed(self.url, f"the server answered what is not HTTP: {lines[0][:80]!r}")
        headers: Dict[str, str] = {}
        for line in lines[1:]:
            name, colon, value = line.partition(":")
            if not colon:
                raise ConnectFailed(self.url, f"a malformed header line in the server's answer: {line[:80]!r}")
            name, value = name.strip().lower(), value.strip()
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        return Answer(int(status.group(1)), status.group(2) or "", headers, bytes(buffer[end + 4 :]))

    def check(self, answer: Answer) -> int:
        """Raise unless ``answer`` accepts the upgrade; returns the longest
        message the server takes in one frame."""
        status, headers = answer.status, answer.headers
        if status in (401, 403):
            raise AuthRejected(self.url, status, headers.get("www-authenticate", "").split(" ")[0])
        if status != 101:
            raise ConnectFailed(self.url, f"the server answered {status} {answer.reason}".rstrip(), status)
        connection = {token.strip().lower() for token in headers.get("connection", "").split(",")}
        if headers.get("upgrade", "").lower() != "websocket" or "upgrade" not in connection:
            raise ConnectFailed(self.url, "the server's 101 is no WebSocket upgrade", status)
        if headers.get("sec-websocket-accept") != accept_for(self.key):
            raise ConnectFailed(self.url, "the server's Sec-WebSocket-Accept does not match the key", status)
        limit = headers.get(LIMIT_HEADER, "")
        return int(limit) if limit.isdigit() and int(limit) > 0 else DEFAULT_UNFRAGMENTED


# -- frames ----------------------------------------------------------------------


class Text(NamedTuple):
    """A text message from the server: its payload, decoded (UTF-8)."""

    data: str


class Ping(NamedTuple):
    """A ping from the server (its pong is queued)."""

    payload: bytes


class Pong(NamedTuple):
    """A pong from the server."""

    payload: bytes


class Closed(NamedTuple):
    """The server closed the connection: its close ``code`` (``None`` when it
    gave none) and ``reason``."""

    code: Optional[int]
    reason: str


Incoming = Union[Text, Ping, Pong, Closed]


def _mask(payload: bytes, key: bytes) -> bytes:
    """``payload`` XOR the repeated 4-byte ``key`` (masking is its own inverse)."""
    n = len(payload)
    if not n:
        return payload
    stream = (key * (n // 4 + 1))[:n]
    return (int.from_bytes(payload, "big") ^ int.from_bytes(stream, "big")).to_bytes(n, "big")


def _frame_size(head: bytes) -> Optional[int]:
    """The whole length of the frame ``head`` starts (header and payload;
    a mask key counted, should a server send one), or None until its
    header is all there."""
    if len(head) < 2:
        return None
    n, size = head[1] & 0x7F, 2 + (4 if head[1] & 0x80 else 0)
    if n == 126:
        if len(head) < 4:
            return None
        return size + 2 + int.from_bytes(head[2:4], "big")
    if n == 127:
        if len(head) < 10:
            return None
        return size + 8 + int.from_bytes(head[2:10], "big")
    return size + n


def _header(opcode: int, fin: bool, n: int) -> bytes:
    first = (0x80 if fin else 0) | opcode
    if n < 126:
        return bytes((first, 0x80 | n))
    if n < 1 << 16:
        return bytes((first, 0x80 | 126)) + n.to_bytes(2, "big")
    return bytes((first, 0x80 | 127)) + n.to_bytes(8, "big")


class WebSocket:
    """One client connection after the handshake, as a state machine.

    ``max_message``: the longest message accepted (reassembled);
    ``unfragmented``: the longest payload sent in one frame (longer messages
    go in several); ``random``: where mask keys come from."""

    def __init__(self, *, max_message: int, unfragmented: int = DEFAULT_UNFRAGMENTED, random: Random = os.urandom):
        self.max_message = max_message
        self.unfragmented = unfragmented
        self._random = random
        self._pending: List[bytes] = []  # the pieces of a frame the last chunks ended in
        self._pending_size = 0
        self._pending_need: Optional[int] = None  # that frame's whole size, once its header is in
        self._parts: Optional[List[bytes]] = None  # the fragments of a message under way
        self._size = 0
        self._outbox: List[bytes] = []
        self.close_sent = False
        self.close_received = False

    # -- sending -------------------------------------------------------------

    def _frame(self, opcode: int, payload: bytes, fin: bool = True) -> bytes:
        key = self._random(4)
        return _header(opcode, fin, len(payload)) + key + _mask(payload, key)

    def send_text(self, data: bytes) -> bytes:
        """The frames of one text message (``data``: UTF-8), masked; in
        pieces of at most ``unfragmented`` bytes when longer."""
        if self.close_sent or self.close_received:
            raise WebSocketError("the connection is closing: nothing more can be sent")
        step = self.unfragmented
        if len(data) <= step:
            return self._frame(TEXT, data)
        pieces = [data[i : i + step] for i in range(0, len(data), step)]
        last = len(pieces) - 1
        return b"".join(
            self._frame(TEXT if i == 0 else CONTINUATION, piece, i == last) for i, piece in enumerate(pieces)
        )

    def ping(self, payload: bytes = b"") -> bytes:
        """A ping (at most 125 bytes of payload)."""
        if len(payload) > 125:
            raise ConfigError("a ping's payload is at most 125 bytes")
        return self._frame(PING, payload)

    def close(self, code: int = 1000, reason: str = "") -> bytes:
        """Our close frame (once; ``b""`` after that): nothing is sent after it."""
        if self.close_sent:
            return b""
        self.close_sent = True
        return self._frame(CLOSE, code.to_bytes(2, "big") + reason.encode("utf-8")[:123])

    def data_to_send(self) -> bytes:
        """What the protocol answered by itself since the last call (pongs, a close)."""
        out, self._outbox = b"".join(self._outbox), []
        return out

    # -- receiving -----------------------------------------------------------

    def receive(self, data: bytes) -> List[Incoming]:
        """The events in ``data`` (and what earlier calls left unfinished)."""
        events: List[Incoming] = []
        self._parse(data, events, None)
        return events

    def receive_texts(self, data: bytes) -> Tuple[List[str], List[Incoming]]:
        """:meth:`receive`, with the text messages (decoded) apart, in order,
        from the other events (which follow them: nothing is read after a
        close).  The transport's hot path: no event per message."""
        texts: List[str] = []
        events: List[Incoming] = []
        self._parse(data, events, texts)
        return texts, events

    def _parse(self, data: bytes, events: List[Incoming], texts: Optional[List[str]]) -> None:
        if self.close_received:
            return  # the server said it is done: what follows is not read
        pending = self._pending
        if not pending:
            self._frames(data, 0, events, texts)
            return
        # A frame began in an earlier chunk: complete that one frame (copying
        # only it and the part of this chunk it takes), then read the rest of
        # this chunk where it lies.
        size, need = self._pending_size, self._pending_need
        if need is None:  # not sized yet: the last chunk's tail, or a header not all in (under 14 bytes)
            head = pending[0]
            need = self._pending_need = _frame_size(head if len(head) >= 14 else (b"".join(pending) + data[:14])[:14])
        if need is None or size + len(data) < need:
            pending.append(data)  # still not whole: keep the pieces (joined once, when whole: a
            self._pending_size += len(data)  # frame that arrives a byte at a time costs its size,
            return  # not its size squared)
        take = need - size
        pending.append(data[:take])
        whole = b"".join(pending)
        self._pending, self._pending_size, self._pending_need = [], 0, None
        if self._frames(whole, 0, events, texts):
            self._frames(data, take, events, texts)

    def _frames(self, data: bytes, at: int, events: List[Incoming], texts: Optional[List[str]]) -> bool:
        """The frames of ``data`` from ``at``; an unfinished last one is kept
        for the next chunk.  False once the server closed (read no more)."""
        end = len(data)
        try:
            while end - at >= 2 and not self.close_received:
                if data[at] == 0x81 and self._parts is None and self.max_message >= 0xFFFF:
                    # A run of the common frame, taken in one tight loop.
                    if texts is not None:
                        stop = self._texts(data, at, texts)
                    else:
                        run: List[str] = []
                        stop = self._texts(data, at, run)
                        events.extend(map(Text, run))
                    if stop > at:
                        at = stop
                        continue
                    # Not whole yet, or not a common frame (a 64-bit length, a mask): as any frame.
                first, second = data[at], data[at + 1]
                n, start = second & 0x7F, at + 2
                if n == 126:
                    if end - at < 4:
                        break
                    n, start = int.from_bytes(data[at + 2 : at + 4], "big"), at + 4
                elif n == 127:
                    if end - at < 10:
                        break
                    n, start = int.from_bytes(data[at + 2 : at + 10], "big"), at + 10
                opcode, fin = first & 0x0F, bool(first & 0x80)
                self._check_frame(first, second, opcode, fin, n)
                if end - start < n:
                    break
                payload = data[start : start + n]
                at = start + n
                event = self._on_frame(opcode, fin, payload)
                if type(event) is Text and texts is not None:
                    texts.append(event.data)
                elif event is not None:
                    events.append(event)
        finally:
            if at < end and not self.close_received:
                tail = data[at:]
                self._pending, self._pending_size, self._pending_need = [tail], len(tail), None
        return not self.close_received

    def _texts(self, data: bytes, at: int, out: List[str]) -> int:
        """The common frames of ``data`` from ``at``, one after the other: a
        whole text message each (final, unmasked, its length in 7 or 16 bits:
        under 64 KiB, never over ``max_message``, which the caller saw to).
        Their payloads, decoded, go to ``out``; returns where the run ends
        (``at`` itself when the frame there is not one, or not whole yet, or
        closer to the end than 4 bytes).  The transport's hot loop: per
        frame, one unpack of its first 4 bytes (its first two read as one
        number), the payload sliced; then the run decoded, in C (the one
        UTF-8 check each message needs, and the decoding the JSON parser
        needs)."""
        end = len(data)
        payloads: List[bytes] = []
        append, head, text16, text7 = payloads.append, _HEAD, _TEXT16, _TEXT7
        try:
            while True:
                kind, n = head(data, at)
                if kind == text16:
                    start = at + 4
                elif text7 <= kind < text16:
                    n, start = kind - text7, at + 2
                else:
                    break
                stop = start + n
                if stop > end:
                    break
                append(data[start:stop])
                at = stop
        except struct.error:  # fewer than 4 bytes from ``at``
            pass
        try:
            out.extend(map(bytes.decode, payloads))  # UTF-8, strict
        except UnicodeDecodeError:
            raise self._fail("a text message that is not UTF-8", 1007) from None
        return at

    def _fail(self, reason: str, code: int) -> WebSocketError:
        """The error to raise; our close frame with ``code`` is queued."""
        if not self.close_sent:
            self._outbox.append(self.close(code))
        self.close_received = True  # nothing more is read
        return WebSocketError(f"the server broke the protocol: {reason}", code)

    def _check_frame(self, first: int, second: int, opcode: int, fin: bool, n: int) -> None:
        if first & 0x70:
            raise self._fail("reserved bits set (no extension was agreed)", 1002)
        if second & 0x80:
            raise self._fail("a masked frame from the server", 1002)
        if n >> 63:
            raise self._fail("a frame length with its high bit set", 1002)
        if opcode in _CONTROL:
            if not fin or n > 125:
                raise self._fail("a fragmented or oversized control frame", 1002)
        elif opcode not in _DATA:
            raise self._fail(f"unknown opcode {opcode:#x}", 1002)
        elif opcode == BINARY:
            raise self._fail("a binary message (codex sends text)", 1003)
        elif (opcode == CONTINUATION) is (self._parts is None):
            raise self._fail("a continuation with no message under way, or a new message before the last ended", 1002)
        elif self._size + n > self.max_message:
            raise self._fail(f"a message over {self.max_message} bytes", 1009)

    def _on_frame(self, opcode: int, fin: bool, payload: bytes) -> Optional[Incoming]:
        if opcode == PING:
            self._outbox.append(self._frame(PONG, payload))
            return Ping(payload)
        if opcode == PONG:
            return Pong(payload)
        if opcode == CLOSE:
            return self._on_close(payload)
        if not fin:  # TEXT or CONTINUATION, more to come
            self._parts = [*(self._parts or ()), payload]
            self._size += len(payload)
            return None
        if self._parts is not None:
            payload = b"".join([*self._parts, payload])
            self._parts, self._size = None, 0
        try:
            return Text(payload.decode("utf-8"))
        except UnicodeDecodeError:
            raise self._fail("a text message that is not UTF-8", 1007) from None

    def _on_close(self, payload: bytes) -> Closed:
        code: Optional[int] = None
        reason = ""
        if payload:
            if len(payload) < 2 or int.from_bytes(payload[:2], "big") not in _VALID_CLOSE:
                raise self._fail(f"an invalid close frame {payload[:2]!r}", 1002)
            code = int.from_bytes(payload[:2], "big")
            try:
                reason = payload[2:].decode("utf-8")
            except UnicodeDecodeError:
                raise self._fail("a close reason that is not UTF-8", 1007) from None
        if not self.close_sent:
            self._outbox.append(self.close(code or 1000))
        self.close_received = True
        return Closed(code, reason)


__all__ = [
    "Answer",
    "Closed",
    "DEFAULT_UNFRAGMENTED",
    "Handshake",
    "Incoming",
    "Ping",
    "Pong",
    "Text",
    "WebSocket",
    "accept_for",
    "new_key",
    "opening_request",
]
