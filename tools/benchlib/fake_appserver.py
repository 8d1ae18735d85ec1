"""A fake ``codex app-server`` for the bench: stdlib only, one file, no codexmini.

``python fake_appserver.py --spec SERVER.json --turn TURN.jsonl [codex args…]``

It answers ``initialize``, ``thread/start``, ``turn/start`` and
``turn/interrupt`` with the results recorded from codex 0.149.1 (copied into
``SERVER.json`` by :mod:`tools.benchlib.workload`), then, after each
``turn/start`` result, writes the pre-built turn: ``TURN.jsonl``, whose thread
and turn ids are placeholders replaced here by the ids of this thread and turn
(so a turn's frames name that turn, as codex's do).  The substitution happens
*before* the ``turn/start`` result is written; the readers start their clocks
at the first notification, so it is not measured.  Any other request gets the
-32600 error codex uses for everything.  Arguments it does not know (the
``app-server -c key=value`` the client adds) are ignored.

It never outlives its reader: stdin EOF ends it, a broken pipe ends it, and an
alarm ends it after ``--lifetime`` seconds whatever happens.

``--interleave`` (stdio only) streams the turns that are open at once as codex
does, a line of each in turn, instead of one whole turn after the other: the
bodies queue up, and between reads of stdin (``select``, not waiting while a
turn streams) it writes one chunk of about :data:`CHUNK` bytes made of the
next line of every open turn, round after round.  A client running many turns
at once then sees every one of them advance in every read, and the per-read
work of routing frames to many subscriptions is what it measures.

``--listen ws`` or ``--listen unix:PATH`` serves the same over WebSocket, as
``codex app-server --listen`` does: one JSON-RPC message per text frame, a
fresh server per connection, the unix listener's 101 announcing codex's
unfragmented limit.  It prints ``listening on: URL`` and serves until it is
killed (or the alarm goes off).  Every write is framed before its first byte
goes out, so the framing of a turn is not in the readers' window either.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import json
import os
import select
import signal
import struct
import sys


def thread_id(n: int) -> str:
    return f"019a22cd-86d8-7bb1-a4b3-{n:012x}"


def turn_id(n: int) -> str:
    return f"019a22cd-86f6-7ad1-910f-{n:012x}"


#: About how many bytes ``--interleave`` writes at once (a pipe read takes 32 KiB).
CHUNK = 32 << 10


class FakeServer:
    def __init__(self, spec: dict, turn: bytes, out, interleave: bool = False) -> None:
        self.spec = spec
        self.turn = turn
        self.out = out
        self.threads = 0
        self.turns = 0
        self.interleave = interleave
        #: ``--interleave``: the open turns' lines not written yet, each reversed (pop() takes the next).
        self.streams: list[list[bytes]] = []

    def _ids(self, text: str, thread: str, turn: str = "") -> str:
        text = text.replace(self.spec["thread_placeholder"], thread)
        return text.replace(self.spec["turn_placeholder"], turn) if turn else text

    def _write(self, data: bytes) -> None:
        self.out.write(data)
        self.out.flush()

    def _result(self, rid, method: str, thread: str = "", turn: str = "") -> bytes:
        result = json.dumps(self.spec["responses"][method], separators=(",", ":"), ensure_ascii=False)
        line = f'{{"id":{json.dumps(rid)},"result":{self._ids(result, thread, turn)}}}\n'
        return line.encode("utf-8")

    def handle(self, msg: dict) -> None:
        method, rid = msg.get("method"), msg.get("id")
        if rid is None:
            return  # a notification (initialized): nothing to answer
        params = msg.get("params") or {}
        if method == "initialize":
            self._write(self._result(rid, method))
        elif method == "thread/start":
            self.threads += 1
            tid = thread_id(self.threads)
            after = "".join(
                self._ids(json.dumps(f, separators=(",", ":"), ensure_ascii=False), tid) + "\n"
                for f in self.spec["after_thread_start"]
            )
            self._write(self._result(rid, method, tid) + after.encode("utf-8"))
        elif method == "turn/start":
            self.turns += 1
            tid, uid = str(params.get("threadId", "")), turn_id(self.turns)
            body = self.turn.replace(self.spec["thread_placeholder_bytes"], tid.encode())
            body = body.replace(self.spec["turn_placeholder_bytes"], uid.encode())
            self._write(self._result(rid, method, tid, uid))
            if self.interleave:
                lines = body.splitlines(keepends=True)
                lines.reverse()
                self.streams.append(lines)
            else:
                self._write(body)
        elif method == "thread/unsubscribe":
            self._write(b'{"id":%s,"result":{"status":"unsubscribed"}}\n' % json.dumps(rid).encode())
        elif method == "turn/interrupt":
            self._write(b'{"id":%s,"result":{}}\n' % json.dumps(rid).encode())
        else:
            error = {"code": -32600, "message": f"unsupported by the bench's fake: {method}"}
            self._write(json.dumps({"id": rid, "error": error}).encode() + b"\n")

    def round_robin(self) -> None:
        """``--interleave``: write the next chunk, a line of each open turn in turn."""
        chunk: list[bytes] = []
        size = 0
        streams = self.streams
        while streams and size < CHUNK:
            for lines in streams:
                line = lines.pop()
                chunk.append(line)
                size += len(line)
            if not all(streams):
                streams[:] = [lines for lines in streams if lines]
        self._write(b"".join(chunk))


def serve_stdio(server: FakeServer) -> None:
    """Answer stdin's requests until EOF; with ``--interleave``, stream the
    open turns between reads, never blocking on stdin while one streams."""
    if not server.interleave:
        for line in sys.stdin.buffer:
            if line.strip():
                server.handle(json.loads(line))
        return
    fd, pending = sys.stdin.fileno(), b""
    while True:
        if not server.streams or select.select([fd], [], [], 0)[0]:
            data = os.read(fd, 1 << 16)
            if not data:
                return
            *lines, pending = (pending + data).split(b"\n")
            for line in lines:
                if line.strip():
                    server.handle(json.loads(line))
        if server.streams:
            server.round_robin()


# -- the same server over WebSocket (--listen), as codex app-server --listen serves ----------

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#: What codex's unix listener announces in its 101 (its TCP listener sends nothing of the kind).
UNIX_HEADER = b"x-codex-websocket-max-unfragmented-message-bytes: 16777216\r\n"


def text_frames(data: bytes) -> bytes:
    """Each JSON line of ``data`` as one unmasked text frame (a server's)."""
    out = []
    for line in data.split(b"\n"):
        if not line:
            continue
        n = len(line)
        if n < 126:
            out.append(struct.pack("!BB", 0x81, n))
        elif n < 65536:
            out.append(struct.pack("!BBH", 0x81, 126, n))
        else:
            out.append(struct.pack("!BBQ", 0x81, 127, n))
        out.append(line)
    return b"".join(out)


#: The most of a framed turn handed to the socket at once (``--listen``): the
#: stdio fake's pipe takes 64 KiB at a time too.
SEND_CHUNK = 1 << 16


class FrameWriter:
    """The file-like ``out`` of a :class:`FakeServer` on a WebSocket: every
    write is framed at once (the whole turn before its first byte goes out),
    and :meth:`send` hands it to the socket a slice at a time."""

    def __init__(self) -> None:
        self.framed: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.framed.append(text_frames(data))

    def flush(self) -> None:
        pass

    async def send(self, writer) -> None:
        """What was written, :data:`SEND_CHUNK` bytes at a time, each taken
        before the next goes (the transport never holds a turn).  Handed the
        whole turn at once, asyncio buffered it and shrank its buffer of tens
        of MiB by copies into fresh pages as the socket took it: on the
        200,000-notification turn the fake spent 0.10 s (TCP) and 0.12 s (unix)
        of CPU inside the reader's window, the stdio fake's blocking write
        0.02 s; now 0.02 s and 0.05 s.  On a machine where the two compete
        for the cores, that was the reader's time too."""
        for data in self.framed:
            view = memoryview(data)
            for at in range(0, len(data), SEND_CHUNK):
                writer.write(view[at : at + SEND_CHUNK])
                await writer.drain()
        self.framed.clear()


async def serve_websocket(reader, writer, spec: dict, turn: bytes, unix: bool) -> None:
    head = await reader.readuntil(b"\r\n\r\n")
    key = next(
        line.split(b":", 1)[1].strip() for line in head.split(b"\r\n") if line.lower().startswith(b"sec-websocket-key:")
    )
    accept = base64.b64encode(hashlib.sha1(key + GUID).digest())
    writer.write(
        b"HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: upgrade\r\nsec-websocket-accept: "
        + accept
        + b"\r\n"
        + (UNIX_HEADER if unix else b"")
        + b"\r\n"
    )
    out = FrameWriter()
    server = FakeServer(spec, turn, out)
    message = []
    while True:
        try:
            first, second = await reader.readexactly(2)
            n = second & 0x7F
            if n == 126:
                (n,) = struct.unpack("!H", await reader.readexactly(2))
            elif n == 127:
                (n,) = struct.unpack("!Q", await reader.readexactly(8))
            mask = await reader.readexactly(4)
            payload = await reader.readexactly(n)
        except (asyncio.IncompleteReadError, ConnectionError):
            break
        payload = _unmask(payload, mask)
        opcode = first & 0x0F
        if opcode == 0x8:  # close: answer it, end
            writer.write(struct.pack("!BB", 0x88, 2) + payload[:2])
            break
        if opcode in (0x1, 0x0):
            message.append(payload)
            if first & 0x80:
                server.handle(json.loads(b"".join(message)))
                message = []
        await out.send(writer)
    writer.close()


def _unmask(payload: bytes, mask: bytes) -> bytes:
    n = len(payload)
    key = int.from_bytes((mask * (n // 4 + 1))[:n], "big")
    return (int.from_bytes(payload, "big") ^ key).to_bytes(n, "big")


async def listen(where: str, spec: dict, turn: bytes) -> None:
    """Serve every connection (a fresh server each) until killed; say where on stdout."""
    unix = where.startswith("unix:")

    async def connection(reader, writer) -> None:
        await serve_websocket(reader, writer, spec, turn, unix)

    if unix:
        path = where[len("unix:") :]
        listener = await asyncio.start_unix_server(connection, path, limit=1 << 26)
        url = f"unix://{path}"
    else:
        listener = await asyncio.start_server(connection, "127.0.0.1", 0, limit=1 << 26)
        url = f"ws://127.0.0.1:{listener.sockets[0].getsockname()[1]}"
    sys.stdout.write(f"listening on: {url}\n")
    sys.stdout.flush()
    async with listener:
        await listener.serve_forever()


def load(args) -> tuple:
    with open(args.spec, encoding="utf-8") as fh:
        spec = json.load(fh)
    spec["thread_placeholder_bytes"] = spec["thread_placeholder"].encode()
    spec["turn_placeholder_bytes"] = spec["turn_placeholder"].encode()
    with open(args.turn, "rb") as fh:
        turn = fh.read()
    return spec, turn


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", required=True)
    parser.add_argument("--turn", required=True)
    parser.add_argument("--lifetime", type=int, default=900)
    parser.add_argument("--listen", help="serve WebSocket instead of stdio: ws (127.0.0.1, a free port) or unix:PATH")
    parser.add_argument("--interleave", action="store_true", help="stdio: stream the open turns a line each in turn")
    args, _codex_args = parser.parse_known_args(argv)
    signal.alarm(args.lifetime)  # default action: terminate
    spec, turn = load(args)
    if args.listen:
        asyncio.run(listen(args.listen, spec, turn))
        return 0
    server = FakeServer(spec, turn, sys.stdout.buffer, args.interleave)
    try:
        serve_stdio(server)
    except (BrokenPipeError, ConnectionResetError):
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
