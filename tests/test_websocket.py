"""WebSocket without I/O (``codexmini._websocket``): bytes in, events and bytes out.

Bytes only.  Server frames are built here from RFC 6455 section 5.2 (not
with the code under test); the client's own frames are unmasked and parsed
here too.  Every rule of the receiving side is checked with its close code
and the close frame it queues, and the decoder gives the same events for
every way the same bytes can be cut.
"""

from __future__ import annotations

import base64
import itertools
from typing import List, Optional, Tuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codexmini import AuthRejected, ConfigError, ConnectFailed, WebSocketError
from codexmini._websocket import (
    DEFAULT_UNFRAGMENTED,
    Answer,
    Closed,
    Handshake,
    Ping,
    Pong,
    Text,
    WebSocket,
    accept_for,
    new_key,
    opening_request,
)

KEY = "dGhlIHNhbXBsZSBub25jZQ=="  # RFC 6455 section 1.3's example


def counter(n: int) -> bytes:
    """A deterministic 'random' source: 0x01 0x02 0x03 ..."""
    return bytes((i % 255) + 1 for i in range(n))


def frame(opcode: int, payload: bytes = b"", fin: bool = True, rsv: int = 0, mask: Optional[bytes] = None) -> bytes:
    """A frame as a server (or, with ``mask``, a client) writes it."""
    first = (0x80 if fin else 0) | rsv | opcode
    n = len(payload)
    bit = 0x80 if mask is not None else 0
    if n < 126:
        head = bytes((first, bit | n))
    elif n < 65536:
        head = bytes((first, bit | 126)) + n.to_bytes(2, "big")
    else:
        head = bytes((first, bit | 127)) + n.to_bytes(8, "big")
    if mask is None:
        return head + payload
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def client_frames(data: bytes) -> List[Tuple[int, bool, bytes]]:
    """The client's frames in ``data``: (opcode, fin, unmasked payload); each must be masked."""
    frames, at = [], 0
    while at < len(data):
        first, second = data[at], data[at + 1]
        assert second & 0x80, "a client frame must be masked"
        n, at = second & 0x7F, at + 2
        if n == 126:
            n, at = int.from_bytes(data[at : at + 2], "big"), at + 2
        elif n == 127:
            n, at = int.from_bytes(data[at : at + 8], "big"), at + 8
        key, at = data[at : at + 4], at + 4
        payload = bytes(b ^ key[i % 4] for i, b in enumerate(data[at : at + n]))
        frames.append((first & 0x0F, bool(first & 0x80), payload))
        at += n
    return frames


def ws(**options: int) -> WebSocket:
    return WebSocket(max_message=options.pop("max_message", 1 << 20), random=counter, **options)


# -- the opening handshake -------------------------------------------------------------


def test_websocket_accept_key_is_rfc_6455s_example_and_keys_are_16_random_bytes():
    assert accept_for(KEY) == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
    assert base64.b64decode(new_key(counter)) == counter(16)
    assert len(base64.b64decode(new_key())) == 16


def test_websocket_opening_request_upgrades_and_carries_the_callers_headers():
    request = opening_request("127.0.0.1:4222", "/", KEY, [("Authorization", "Bearer tok")])
    assert request == (
        b"GET / HTTP/1.1\r\nHost: 127.0.0.1:4222\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        b"Authorization: Bearer tok\r\n\r\n"
    )
    for path in ("", "rpc", "/a b", "/a\r\nX: y"):
        with pytest.raises(ConfigError, match="a WebSocket path starts with /"):
            opening_request("h", path, KEY)
    for header in (("Bad Name", "v"), ("X", "a\r\nInjected: 1"), ("", "v")):
        with pytest.raises(ConfigError, match="cannot go in a request"):
            opening_request("h", "/", KEY, [header])


def answer_bytes(status: str = "101 Switching Protocols", *headers: str) -> bytes:
    return ("\r\n".join([f"HTTP/1.1 {status}", *headers]) + "\r\n\r\n").encode("latin-1")


UPGRADE = ("connection: Upgrade", "upgrade: websocket", f"sec-websocket-accept: {accept_for(KEY)}")


def test_websocket_handshake_reads_the_answer_in_any_chunks_and_keeps_what_follows():
    data = answer_bytes("101 Switching Protocols", *UPGRADE, "x-a: 1", "X-A: 2") + frame(0x1, b"{}")
    for cut in range(len(data)):
        hs = Handshake("ws://h:1", KEY)
        first = hs.feed(data[:cut])
        got = first if first is not None else hs.feed(data[cut:])
        assert got is not None
        if first is not None:  # complete already: what was not fed yet goes to the WebSocket, after `rest`
            got = got._replace(rest=got.rest + data[cut:])
        assert got == Answer(
            101,
            "Switching Protocols",
            {"connection": "Upgrade", "upgrade": "websocket", "sec-websocket-accept": accept_for(KEY), "x-a": "1, 2"},
            data[data.index(b"\r\n\r\n") + 4 :],
        )
        assert hs.check(got) == DEFAULT_UNFRAGMENTED


@pytest.mark.parametrize(
    "limit, expected",
    [("16777216", 16777216), ("1024", 1024), ("0", DEFAULT_UNFRAGMENTED), ("lots", DEFAULT_UNFRAGMENTED)],
)
def test_websocket_handshake_reads_the_servers_unfragmented_limit(limit, expected):
    hs = Handshake("unix:///s", KEY)
    answer = hs.feed(
        answer_bytes("101 Switching Protocols", *UPGRADE, f"x-codex-websocket-max-unfragmented-message-bytes: {limit}")
    )
    assert answer is not None and hs.check(answer) == expected


def checked(data: bytes, key: str = KEY) -> int:
    hs = Handshake("ws://h:1", key)
    answer = hs.feed(data)
    assert answer is not None
    return hs.check(answer)


def test_websocket_handshake_refusals_are_typed_with_the_status():
    with pytest.raises(AuthRejected) as caught:
        checked(answer_bytes("401 Unauthorized", "content-length: 0"))
    assert (caught.value.status, caught.value.wanted) == (401, "")
    with pytest.raises(AuthRejected) as caught:
        checked(answer_bytes("403 Forbidden", 'www-authenticate: Bearer realm="codex"'))
    assert (caught.value.status, caught.value.wanted) == (403, "Bearer")
    with pytest.raises(ConnectFailed, match="the server answered 500 Internal Server Error") as failed:
        checked(answer_bytes("500 Internal Server Error"))
    assert failed.value.status == 500 and not isinstance(failed.value, AuthRejected)
    with pytest.raises(ConnectFailed, match="answered 404$"):
        checked(b"HTTP/1.0 404\r\n\r\n")


@pytest.mark.parametrize(
    "headers, problem",
    [
        (UPGRADE[1:], "no WebSocket upgrade"),
        ((UPGRADE[0], "upgrade: h2c", UPGRADE[2]), "no WebSocket upgrade"),
        (("connection: keep-alive, Upgrade", UPGRADE[1], "sec-websocket-accept: wrong="), "does not match the key"),
        (UPGRADE[:2], "does not match the key"),
    ],
)
def test_websocket_handshake_a_101_must_be_an_upgrade_with_the_right_accept(headers, problem):
    with pytest.raises(ConnectFailed, match=problem) as caught:
        checked(answer_bytes("101 Switching Protocols", *headers))
    assert caught.value.status == 101
    # the connection header is a comma list, matched without case
    assert checked(answer_bytes("101 Switching Protocols", "Connection: keep-alive, UPGRADE", *UPGRADE[1:])) > 0


def test_websocket_handshake_garbage_and_an_endless_head_are_connect_failed():
    with pytest.raises(ConnectFailed, match="not HTTP"):
        Handshake("ws://h:1", KEY).feed(b"SSH-2.0-OpenSSH\r\n\r\n")
    with pytest.raises(ConnectFailed, match="malformed header line"):
        Handshake("ws://h:1", KEY).feed(b"HTTP/1.1 101 OK\r\nno colon here\r\n\r\n")
    hs = Handshake("ws://h:1", KEY, max_head=64)
    assert hs.feed(b"HTTP/1.1 101 OK\r\n" + b"x" * 40) is None
    with pytest.raises(ConnectFailed, match="no end of headers within 64 bytes"):
        hs.feed(b"y" * 40)
    late = Handshake("ws://h:1", KEY, max_head=16)  # the end is there, but past the limit
    with pytest.raises(ConnectFailed, match="no end of headers"):
        late.feed(b"HTTP/1.1 101 Switching\r\n\r\n")


# -- sending ------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [0, 1, 125, 126, 65535, 65536])
def test_websocket_send_text_masks_with_the_minimal_length(n):
    data = bytes(range(97, 123)) * (n // 26 + 1)
    data = data[:n]
    out = ws().send_text(data)
    header = {True: 2, False: 4 if n < 65536 else 10}[n < 126]
    assert len(out) == header + 4 + n
    assert out[header : header + 4] == counter(4)  # the mask key, from `random`
    assert client_frames(out) == [(0x1, True, data)]


def test_websocket_send_text_fragments_past_the_unfragmented_limit():
    conn = ws(unfragmented=4)
    assert client_frames(conn.send_text(b"abcd")) == [(0x1, True, b"abcd")]  # exactly at it: one frame
    assert client_frames(conn.send_text(b"abcde")) == [(0x1, False, b"abcd"), (0x0, True, b"e")]
    assert client_frames(conn.send_text(b"abcdefghij")) == [
        (0x1, False, b"abcd"),
        (0x0, False, b"efgh"),
        (0x0, True, b"ij"),
    ]


def test_websocket_ping_and_close_once_then_nothing_more_is_sent():
    conn = ws()
    assert client_frames(conn.ping(b"hi")) == [(0x9, True, b"hi")]
    with pytest.raises(ConfigError, match="at most 125 bytes"):
        conn.ping(b"x" * 126)
    assert client_frames(conn.close(1001, "going")) == [(0x8, True, b"\x03\xe9going")]
    assert conn.close() == b""  # once
    with pytest.raises(WebSocketError, match="closing"):
        conn.send_text(b"{}")


# -- receiving ----------------------------------------------------------------------------


def test_websocket_receive_text_ping_pong_and_a_fragmented_message():
    conn = ws()
    data = (
        frame(0x1, b'{"a":1}')
        + frame(0x1, b"frag", fin=False)
        + frame(0x9, b"p")  # a control frame between fragments
        + frame(0x0, b"ment", fin=False)
        + frame(0x0, "ed é".encode(), fin=True)
        + frame(0xA, b"q")
    )
    assert conn.receive(data) == [Text('{"a":1}'), Ping(b"p"), Text("fragmented é"), Pong(b"q")]
    assert client_frames(conn.data_to_send()) == [(0xA, True, b"p")]  # the pong, queued
    assert conn.data_to_send() == b""


SAMPLE = (
    frame(0x1, b"x" * 200)
    + frame(0x1, b"a", fin=False)
    + frame(0x9, b"")
    + frame(0x0, b"b" * 70000)
    + frame(0x1, b"")
    + frame(0x8, b"\x03\xe8bye")
)


def cut_into(data: bytes, cuts: List[int]) -> List[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)])]


@settings(max_examples=200, derandomize=True, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=len(SAMPLE)), max_size=12))
def test_websocket_receive_gives_the_same_events_however_the_bytes_are_cut(cuts):
    whole = ws().receive(SAMPLE)
    conn = ws()
    pieces = [event for chunk in cut_into(SAMPLE, cuts) for event in conn.receive(chunk)]
    assert pieces == whole == [Text("x" * 200), Ping(b""), Text("a" + "b" * 70000), Text(""), Closed(1000, "bye")]


def test_websocket_receive_texts_keeps_the_texts_apart_in_order_and_the_rest_after():
    texts, events = ws().receive_texts(SAMPLE)
    assert texts == ["x" * 200, "a" + "b" * 70000, ""]
    assert events == [Ping(b""), Closed(1000, "bye")]
    first = frame(0x1, b"z" * 200, fin=False)  # a fragment with a 16-bit length, cut inside it
    conn = ws()
    assert conn.receive_texts(first[:3]) == ([], [])
    assert conn.receive_texts(first[3:] + frame(0x0, b"!")) == (["z" * 200 + "!"], [])
    long_ = frame(0x1, b"y" * 126)  # a chunk that ends inside a 16-bit length, then an empty one
    conn = ws()
    assert conn.receive_texts(frame(0x1, b"a") + long_[:3]) == (["a"], [])
    assert conn.receive_texts(b"") == ([], [])
    assert conn.receive_texts(long_[3:]) == (["y" * 126], [])
    longer = frame(0x1, b"w" * 65536)  # the same inside a 64-bit length
    assert conn.receive_texts(frame(0x1, b"b") + longer[:5]) == (["b"], [])
    assert conn.receive_texts(longer[5:]) == (["w" * 65536], [])
    assert conn.receive_texts(b"\x81") == ([], [])  # one byte of a header, then nothing more yet
    assert conn.receive_texts(b"") == ([], [])
    assert conn.receive_texts(b"\x01c") == (["c"], [])
    accented = "é"  # not ASCII: decoded
    assert ws().receive_texts(frame(0x1, accented.encode()) + frame(0x1, b"\xff")[:1]) == ([accented], [])


@settings(max_examples=100, derandomize=True, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=len(SAMPLE)), max_size=12))
def test_websocket_receive_texts_gives_the_same_however_the_bytes_are_cut(cuts):
    conn = ws()
    texts: List[str] = []
    events: List[object] = []
    for chunk in cut_into(SAMPLE, cuts):
        more, other = conn.receive_texts(chunk)
        texts += more
        events += other
    assert (texts, events) == ws().receive_texts(SAMPLE)


def test_websocket_receive_a_byte_at_a_time_at_every_length_encoding():
    for n in (0, 125, 126, 65535, 65536):
        conn = ws()
        data = frame(0x1, b"y" * n)
        events = [event for i in range(len(data)) for event in conn.receive(data[i : i + 1])]
        assert events == [Text("y" * n)]


def test_websocket_close_from_the_server_is_answered_and_ends_reading():
    conn = ws()
    assert conn.receive(frame(0x8, b"\x03\xe9restart") + frame(0x1, b"late")) == [Closed(1001, "restart")]
    assert client_frames(conn.data_to_send()) == [(0x8, True, b"\x03\xe9")]  # the code, echoed
    assert conn.receive(frame(0x1, b"later")) == []  # nothing is read after it
    empty = ws()
    assert empty.receive(frame(0x8)) == [Closed(None, "")]
    assert client_frames(empty.data_to_send()) == [(0x8, True, b"\x03\xe8")]
    ours = ws()
    ours.close()
    assert ours.receive(frame(0x8, b"\x03\xe8")) == [Closed(1000, "")]
    assert ours.data_to_send() == b""  # we closed first: nothing to answer


@pytest.mark.parametrize(
    "data, code, reason",
    [
        (frame(0x1, b"x", rsv=0x40), 1002, "reserved bits"),
        (frame(0x1, b"x", mask=b"\x01\x02\x03\x04"), 1002, "masked frame"),
        (bytes((0x81, 127)) + (1 << 63).to_bytes(8, "big"), 1002, "high bit"),
        (frame(0x9, b"x", fin=False), 1002, "control frame"),
        (frame(0x9, b"x" * 126), 1002, "control frame"),
        (frame(0x3, b"x"), 1002, "unknown opcode 0x3"),
        (frame(0x2, b"\x00"), 1003, "binary message"),
        (frame(0x0, b"x"), 1002, "continuation with no message"),
        (frame(0x1, b"x", fin=False) + frame(0x1, b"y"), 1002, "new message before the last ended"),
        (frame(0x1, b"\xff\xfe"), 1007, "not UTF-8"),
        (frame(0x1, b"\xc3", fin=False) + frame(0x0, b"\x28"), 1007, "not UTF-8"),
        (frame(0x8, b"\x03"), 1002, "invalid close frame"),
        (frame(0x8, b"\x03\xed"), 1002, "invalid close frame"),  # 1005 never goes on the wire
        (frame(0x8, b"\x03\xe8\xff"), 1007, "close reason"),
    ],
)
def test_websocket_protocol_violations_raise_with_their_code_and_queue_our_close(data, code, reason):
    conn = ws()
    with pytest.raises(WebSocketError, match=reason) as caught:
        conn.receive(data)
    assert caught.value.code == code
    assert client_frames(conn.data_to_send()) == [(0x8, True, code.to_bytes(2, "big"))]
    assert conn.receive(frame(0x1, b"after")) == []  # the connection is done


def test_websocket_a_message_over_the_limit_is_refused_from_its_length():
    conn = ws(max_message=10)
    assert conn.receive(frame(0x1, b"x" * 10)) == [Text("x" * 10)]  # at the limit
    header_only = frame(0x1, b"x" * 11)[:2]  # the length says it: no payload needed
    with pytest.raises(WebSocketError, match="over 10 bytes") as caught:
        conn.receive(header_only)
    assert caught.value.code == 1009
    for head in (frame(0x1, b"x" * 11)[:6], frame(0x1, b"x" * 200)[:4]):  # common frames, 7 and 16 bits
        with pytest.raises(WebSocketError, match="over 10 bytes") as caught:
            ws(max_message=10).receive_texts(head)
        assert caught.value.code == 1009
    fragments = ws(max_message=10)
    assert fragments.receive(frame(0x1, b"x" * 6, fin=False)) == []
    with pytest.raises(WebSocketError, match="over 10 bytes"):
        fragments.receive(frame(0x0, b"y" * 5)[:2])


def test_websocket_an_error_after_we_closed_queues_no_second_close():
    conn = ws()
    conn.close()
    with pytest.raises(WebSocketError):
        conn.receive(frame(0x2, b"x"))
    assert conn.data_to_send() == b""


def test_websocket_every_valid_close_code_is_taken():
    for code in itertools.chain((1000, 1001, 1002, 1003), range(1007, 1015), (3000, 4999)):
        conn = ws()
        assert conn.receive(frame(0x8, code.to_bytes(2, "big"))) == [Closed(code, "")]


def test_websocket_a_frame_cut_into_many_pieces_is_sized_once_and_joined_once(monkeypatch):
    # A frame that arrives in many small reads (a big message over slow TCP) costs its
    # size, not its size squared: its header is read until its size is known, then the
    # pieces wait to be joined once.  Before, each piece re-joined the pieces so far.
    from codexmini import _websocket

    sized: List[int] = []
    real = _websocket._frame_size
    monkeypatch.setattr(_websocket, "_frame_size", lambda head: sized.append(len(head)) or real(head))
    conn = ws()
    data = frame(0x1, b"z" * 65536)  # a 10-byte header (64-bit length)
    events = [event for i in range(len(data)) for event in conn.receive(data[i : i + 1])]
    assert events == [Text("z" * 65536)]
    assert sized == list(range(2, 11))  # header bytes 2..10: then the size is known, never asked again


def test_websocket_the_frame_a_chunk_completes_is_copied_not_the_chunk():
    # A read ends inside a frame nearly every time.  The frame the next chunk
    # completes is joined from its pieces: the ones before and the part of this
    # chunk it takes; the rest of the chunk is read where it lies.  Before, the
    # whole chunk was joined onto the pieces: a copy of every read, alive while
    # the chunk's messages were sliced out of it.
    import tracemalloc

    cut = frame(0x1, b"s" * 200)
    rest = b"".join(frame(0x1, b"x" * 1000) for _ in range(1000))  # 1 MB of whole frames after it
    conn = ws()
    assert conn.receive_texts(cut[:100]) == ([], [])
    chunk = cut[100:] + rest
    tracemalloc.start()
    try:
        texts, events = conn.receive_texts(chunk)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert texts == ["s" * 200] + ["x" * 1000] * 1000 and events == []
    # The run's payloads and the messages decoded from them (a chunk's worth
    # each, the payloads gone once decoded), not a second chunk besides.
    assert peak < 2.5 * len(chunk)


def test_websocket_common_frames_take_the_short_way_the_others_every_check(monkeypatch):
    # A final, unmasked text frame with a 7- or 16-bit length is taken in the
    # codec's hot loop, with no per-frame check or call (its length is under
    # the limit, of 64 KiB or more; its payload is checked as UTF-8 by the
    # decoding of the run); any other frame is checked in full, and so is one
    # of fewer than 4 bytes that ends a chunk.
    checked: List[int] = []
    real = WebSocket._check_frame
    monkeypatch.setattr(
        WebSocket, "_check_frame", lambda self, first, *rest: checked.append(first) or real(self, first, *rest)
    )
    common = ["", "a", "b" * 125, "c" * 126, "d" * 65535, "é"]
    data = b"".join(frame(0x1, text.encode()) for text in common)
    assert ws().receive_texts(data) == (common, [])
    assert checked == []
    others = frame(0x1, b"e" * 65536) + frame(0x1, b"f", fin=False) + frame(0x0, b"g") + frame(0x9, b"")
    data = others + frame(0x1, b"hi") + frame(0x1, b"j")
    assert ws().receive_texts(data) == (["e" * 65536, "fg", "hi", "j"], [Ping(b"")])
    assert checked == [0x81, 0x01, 0x80, 0x89, 0x81]  # not "hi": "j", 3 bytes at the end
