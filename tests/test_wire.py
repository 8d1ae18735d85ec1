"""The wire codec with plain bytes: no process, no event loop.

Modelled on h11's receive-buffer tests: the same byte string must give the
same frames however it is cut into chunks, and a line over the cap is reported
and skipped without the buffer ever holding more than the cap.
"""

from __future__ import annotations

import json
from typing import Iterable, List

import pytest

from codexmini import ConfigError, ProtocolError
from codexmini import _wire as wire
from codexmini._wire import (
    DEFAULT_MAX_FRAME_BYTES,
    ERROR,
    NOTIFICATION,
    REQUEST,
    RESPONSE,
    LineDecoder,
    classify,
    decode_line,
    encode,
    is_valid_id,
)

# One frame of each kind, non-ASCII included so that chunk boundaries fall
# inside multi-byte UTF-8 sequences too.
FRAMES = [
    {"id": 0, "method": "item/commandExecution/requestApproval", "params": {"command": "ls é"}},
    {"method": "item/agentMessage/delta", "params": {"delta": "日本語 ✓"}, "emittedAtMs": 1},
    {"id": "req-1", "result": {"data": [], "nextCursor": None}},
    {"id": 7, "error": {"code": -32600, "message": "Not initialized"}},
]
STREAM = b"".join(encode(frame) for frame in FRAMES)


def feed_all(decoder: LineDecoder, chunks: Iterable[bytes]) -> List[wire.Decoded]:
    out: List[wire.Decoded] = []
    for chunk in chunks:
        out += decoder.feed(chunk)
    return out + decoder.close()


def bytewise(data: bytes) -> List[bytes]:
    return [data[i : i + 1] for i in range(len(data))]


def frame_line(size: int) -> bytes:
    """A valid notification line (no newline) of exactly ``size`` bytes."""
    empty = b'{"method":"m","params":{"p":""}}'
    assert size >= len(empty)
    line = b'{"method":"m","params":{"p":"' + b"x" * (size - len(empty)) + b'"}}'
    assert len(line) == size
    return line


# -- the line decoder: chunk boundaries ------------------------------------


def test_line_decoder_same_frames_at_every_two_chunk_split():
    for cut in range(len(STREAM) + 1):
        decoder = LineDecoder()
        assert feed_all(decoder, [STREAM[:cut], STREAM[cut:]]) == FRAMES, f"split at {cut}"
        assert decoder.buffered == 0


def test_line_decoder_same_frames_at_every_three_chunk_split():
    data = encode(FRAMES[0]) + encode(FRAMES[1])
    for first in range(len(data) + 1):
        for second in range(first, len(data) + 1):
            chunks = [data[:first], data[first:second], data[second:]]
            assert feed_all(LineDecoder(), chunks) == FRAMES[:2], f"split at {first}, {second}"


def test_line_decoder_same_frames_byte_by_byte():
    assert feed_all(LineDecoder(), bytewise(STREAM)) == FRAMES


def test_line_decoder_returns_frames_as_soon_as_their_newline_arrives():
    decoder = LineDecoder()
    first = encode(FRAMES[0])
    assert decoder.feed(first[:-1]) == []
    assert decoder.buffered == len(first) - 1
    assert decoder.feed(b"\n" + encode(FRAMES[1])[:5]) == [FRAMES[0]]
    assert decoder.buffered == 5


def test_line_decoder_empty_feed_is_harmless():
    decoder = LineDecoder()
    assert decoder.feed(b"") == []
    assert decoder.close() == []


def test_line_decoder_crlf_endings():
    data = b"".join(json.dumps(frame).encode() + b"\r\n" for frame in FRAMES)
    for cut in range(len(data) + 1):
        assert feed_all(LineDecoder(), [data[:cut], data[cut:]]) == FRAMES, f"split at {cut}"


def test_line_decoder_blank_lines_are_malformed_and_skipped():
    # codex never sends blank lines; one is "not JSON" like any other junk line
    # (the client logs and counts it), and the frames around it still decode.
    decoder = LineDecoder()
    out = decoder.feed(encode(FRAMES[1]) + b"\n" + b"\r\n" + encode(FRAMES[2]))
    assert out[0] == FRAMES[1]
    assert isinstance(out[1], ProtocolError) and out[1].reason.startswith("invalid JSON")
    assert out[1].size == 0
    assert isinstance(out[2], ProtocolError) and out[2].size == 0
    assert out[3] == FRAMES[2]


# -- the line decoder: the frame cap ---------------------------------------


@pytest.mark.parametrize("chunking", ["whole", "bytewise"])
def test_line_decoder_frame_exactly_at_cap_decodes(chunking):
    cap = 64
    line = frame_line(cap)
    data = line + b"\n" + b'{"method":"a"}\n'
    chunks = [data] if chunking == "whole" else bytewise(data)
    decoder = LineDecoder(cap)
    assert feed_all(decoder, chunks) == [json.loads(line), {"method": "a"}]


@pytest.mark.parametrize("chunking", ["whole", "bytewise"])
def test_line_decoder_frame_one_byte_over_cap_is_reported_and_skipped(chunking):
    cap = 64
    small = b'{"method":"a"}\n'
    data = frame_line(cap + 1) + b"\n" + small + small
    chunks = [data] if chunking == "whole" else bytewise(data)
    decoder = LineDecoder(cap)
    out = feed_all(decoder, chunks)
    assert len(out) == 3
    bad = out[0]
    assert isinstance(bad, ProtocolError)
    assert bad.size == cap + 1
    assert f"cap of {cap} bytes" in bad.reason
    assert str(cap + 1) in bad.reason
    assert bad.preview.startswith('{"method":"m"')
    assert out[1:] == [{"method": "a"}, {"method": "a"}]


def test_line_decoder_crlf_frame_exactly_at_cap_decodes_whole():
    cap = 64
    decoder = LineDecoder(cap)
    assert decoder.feed(frame_line(cap) + b"\r\n") == [json.loads(frame_line(cap))]


def test_line_decoder_crlf_frame_exactly_at_cap_decodes_at_every_split():
    cap = 64
    data = frame_line(cap) + b"\r\n"
    for cut in range(len(data) + 1):
        out = feed_all(LineDecoder(cap), [data[:cut], data[cut:]])
        assert out == [json.loads(frame_line(cap))], f"split at {cut}"


def test_line_decoder_oversized_line_across_many_chunks_never_buffers_past_cap():
    cap = 100
    size = 10_000
    big = b'{"method":"m","params":{"p":"' + b"z" * (size - 32) + b'"}}'
    assert len(big) == size
    decoder = LineDecoder(cap)
    out: List[wire.Decoded] = []
    for start in range(0, size, 37):
        out += decoder.feed(big[start : start + 37])
        assert decoder.buffered <= cap
    assert out == []
    after = encode(FRAMES[1])
    out = decoder.feed(b"\n" + after[:10])
    assert decoder.buffered == 10
    out += decoder.feed(after[10:])
    assert len(out) == 2
    assert isinstance(out[0], ProtocolError)
    assert out[0].size == size
    assert f"frame of {size} bytes exceeds the cap of {cap} bytes" == out[0].reason
    # The preview is what the buffer held when the line went over the cap.
    assert out[0].preview and big.decode().startswith(out[0].preview)
    assert out[1] == FRAMES[1]
    assert decoder.close() == []


def test_line_decoder_oversized_unterminated_line_reported_at_close():
    cap = 50
    decoder = LineDecoder(cap)
    assert decoder.feed(b'{"method":"m"}\n' + b"q" * 80) == [{"method": "m"}]
    assert decoder.buffered == 0
    assert decoder.feed(b"q" * 20) == []
    (bad,) = decoder.close()
    assert isinstance(bad, ProtocolError)
    assert bad.size == 100
    assert f"cap of {cap} bytes" in bad.reason
    # close() resets the decoder.
    assert decoder.close() == []
    assert decoder.feed(b'{"method":"n"}\n') == [{"method": "n"}]


def test_line_decoder_unterminated_last_line_decoded_at_close():
    decoder = LineDecoder()
    assert decoder.feed(encode(FRAMES[0]) + json.dumps(FRAMES[3]).encode()) == [FRAMES[0]]
    assert decoder.close() == [FRAMES[3]]
    assert decoder.buffered == 0
    assert decoder.close() == []


def test_line_decoder_unterminated_cr_last_line_decoded_at_close():
    decoder = LineDecoder()
    assert decoder.feed(b'{"method":"m"}\r') == []
    assert decoder.close() == [{"method": "m"}]


def test_line_decoder_whitespace_only_tail_ignored_at_close():
    decoder = LineDecoder()
    assert decoder.feed(b"  \r") == []
    assert decoder.close() == []


def test_line_decoder_junk_unterminated_last_line_is_malformed_at_close():
    decoder = LineDecoder()
    decoder.feed(b'{"method":')
    (bad,) = decoder.close()
    assert isinstance(bad, ProtocolError) and bad.reason.startswith("invalid JSON")


@pytest.mark.parametrize("cap", [0, -1])
def test_line_decoder_rejects_non_positive_cap(cap):
    with pytest.raises(ConfigError, match="positive"):
        LineDecoder(cap)


def test_line_decoder_default_cap_is_at_least_64_mib():
    assert LineDecoder().max_frame_bytes == DEFAULT_MAX_FRAME_BYTES >= 64 * 1024 * 1024


# -- decode_line: what is not a frame --------------------------------------


def test_decode_line_invalid_utf8():
    bad = decode_line(b'{"method":"\xff"}')
    assert isinstance(bad, ProtocolError)
    assert bad.reason == "invalid UTF-8 at byte 11"
    assert bad.size == 14
    assert "\ufffd" in bad.preview


def test_decode_line_invalid_json():
    bad = decode_line(b"this is not json")
    assert isinstance(bad, ProtocolError)
    assert bad.reason.startswith("invalid JSON: ")
    assert bad.preview == "this is not json"


def test_decode_line_preview_is_bounded():
    bad = decode_line(b"x" * 1000)
    assert isinstance(bad, ProtocolError)
    assert bad.size == 1000 and bad.preview == "x" * 120


@pytest.mark.parametrize(
    "line, shape",
    [
        (b"[1,2,3]", "list"),
        (b'"hello"', "str"),
        (b"42", "int"),
        (b"null", "NoneType"),
    ],
)
def test_decode_line_non_object_json(line, shape):
    bad = decode_line(line)
    assert isinstance(bad, ProtocolError)
    assert bad.reason == f"not a JSON-RPC frame ({shape})"


def test_decode_line_any_object_is_for_the_rpc_core_to_judge():
    # The JSON-RPC shape is checked once, by classify() in the RPC core.
    assert decode_line(b'{"foo":1}') == {"foo": 1}
    assert classify(decode_line(b'{"foo":1}')) is None


@pytest.mark.parametrize(
    "line",
    [b'{"id":null,"result":{}}', b'{"id":1.5,"result":{}}', b'{"id":1.0,"method":"m"}', b'{"id":true,"result":{}}'],
    ids=["null", "float", "integral-float", "bool"],
)
def test_classify_bad_ids_are_malformed(line):
    # codex drops these without a reply (protocol reference §2, "Request ids").
    assert classify(decode_line(line)) is None


@pytest.mark.parametrize("rid", [0, 7, -3, 2**53, "", "req-1", "日本"])
def test_decode_line_integer_and_string_ids(rid):
    line = json.dumps({"id": rid, "result": {}}, ensure_ascii=False).encode()
    assert decode_line(line) == {"id": rid, "result": {}}


# -- classify --------------------------------------------------------------


@pytest.mark.parametrize(
    "obj, kind",
    [
        ({"id": 0, "method": "item/tool/call", "params": {}}, REQUEST),
        ({"id": "a", "method": "initialize"}, REQUEST),
        ({"method": "initialized"}, NOTIFICATION),
        ({"method": "turn/started", "params": {"threadId": "t"}, "emittedAtMs": 1}, NOTIFICATION),
        ({"method": "m", "params": []}, NOTIFICATION),
        # Whatever the params: a request must be answered, and a
        # notification's params are for the mapping to judge.
        ({"method": "m", "params": "scalar"}, NOTIFICATION),
        ({"method": "m", "params": None}, NOTIFICATION),
        ({"id": 1, "method": "m", "params": True}, REQUEST),
        ({"id": 1, "method": "m", "params": None}, REQUEST),
        ({"id": 1, "result": {}}, RESPONSE),
        ({"id": 1, "result": None}, RESPONSE),
        ({"id": 1, "error": {"code": -32600, "message": "Not initialized"}}, ERROR),
        ({"id": 1, "error": {"code": -32600, "message": "x", "data": {"k": 1}}}, ERROR),
    ],
)
def test_classify_the_four_kinds(obj, kind):
    assert classify(obj) == kind


@pytest.mark.parametrize(
    "obj",
    [
        [],
        "x",
        None,
        {},
        {"id": 1},
        {"params": {}},
        {"method": 5},
        {"method": None, "params": {}},
        {"id": 1, "method": ["m"]},
        {"id": 1, "result": {}, "error": {"code": 1, "message": "x"}},
        {"id": 1, "error": {"message": "no code"}},
        {"id": 1, "error": {"code": -32600}},
        {"id": 1, "error": {"code": "-32600", "message": "x"}},
        {"id": 1, "error": {"code": 1.5, "message": "x"}},
        {"id": 1, "error": {"code": 1, "message": 2}},
        {"id": 1, "error": "just a string"},
        {"id": 1, "error": None},
        {"id": None, "result": {}},
        {"id": 1.5, "result": {}},
        {"id": False, "method": "m"},
        {"id": [1], "result": {}},
    ],
)
def test_classify_rejects(obj):
    assert classify(obj) is None


def test_is_valid_id():
    assert is_valid_id(0) and is_valid_id("x")
    assert not any(is_valid_id(v) for v in (None, 1.0, True, False, [], {}))


# -- encode ----------------------------------------------------------------


def test_encode_round_trip_is_one_line_with_raw_utf8():
    frame = {
        "id": 3,
        "method": "turn/start",
        "params": {"input": [{"type": "text", "text": 'line one\nline two\r\nçà 日本 \u2028 \U0001f600 "q" \\'}]},
    }
    data = encode(frame)
    assert data.endswith(b"\n")
    assert data.count(b"\n") == 1
    assert b"\r" not in data
    assert "日本".encode() in data  # not \\u-escaped: smaller lines, same meaning
    assert decode_line(data[:-1]) == frame
    decoder = LineDecoder()
    assert feed_all(decoder, bytewise(data)) == [frame]


def test_encode_is_compact():
    assert encode({"method": "initialized"}) == b'{"method":"initialized"}\n'


def test_wire_all_names_exist():
    for name in wire.__all__:
        assert hasattr(wire, name), name
