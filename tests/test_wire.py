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
from codexmini._errors import UnencodableInput
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


@pytest.mark.parametrize("kind", [bytearray, memoryview], ids=["bytearray", "memoryview"])
def test_line_decoder_takes_any_bytes_like_chunk(kind):
    # A transport may hand over a bytearray or a view: the same frames as bytes,
    # at every split (a cut line, whole lines, both).
    for cut in range(0, len(STREAM) + 1, 7):
        decoder = LineDecoder()
        assert feed_all(decoder, [kind(STREAM[:cut]), kind(STREAM[cut:])]) == FRAMES, f"split at {cut}"
        assert decoder.buffered == 0


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
    # codex drops these without a reply.
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


# -- the line decoder: every kind of line, cut at every offset --------------

# A stream that holds every kind of line the decoder tells apart, short frames
# right after an oversized one included (with a frame shorter than the bytes
# already skipped, so a stale offset into the chunk would drop or glue it).
CAP = 40
MIXED = [
    (b'{"method":"a"}\n', {"method": "a"}),
    (frame_line(CAP + 9) + b"\n", ("frame of 49 bytes exceeds the cap of 40 bytes", 49)),
    (b'{"id":1}\n', {"id": 1}),
    (b'{"method":"b"}\r\n', {"method": "b"}),
    (b"5\n", ("not a JSON-RPC frame (int)", 1)),
    (b'{"method":"c"} x\r\n', ("invalid JSON: Extra data: line 1 column 16 (char 15)", 16)),
    (b'x{"method":"d"}\n', ("invalid JSON: Expecting value: line 1 column 1 (char 0)", 15)),
    (b'{"method":"\xe6\x97\xa5"} \n', {"method": "日"}),
    (frame_line(CAP) + b"\r\n", json.loads(frame_line(CAP))),
    (b"\xff{}\n", ("invalid UTF-8 at byte 0", 3)),
    (frame_line(CAP + 1) + b"\r\n", ("frame of 41 bytes exceeds the cap of 40 bytes", 41)),
    (b"{}\n", {}),
]
MIXED_STREAM = b"".join(line for line, _ in MIXED)


def outcome(item: wire.Decoded):
    """A frame, or a problem's reason and size (:func:`verdict` adds the preview)."""
    return (item.reason, item.size) if isinstance(item, ProtocolError) else item


def test_line_decoder_mixed_stream_whole():
    assert [outcome(o) for o in feed_all(LineDecoder(CAP), [MIXED_STREAM])] == [want for _, want in MIXED]


def test_line_decoder_mixed_stream_at_every_two_chunk_split():
    expected = [want for _, want in MIXED]
    for cut in range(len(MIXED_STREAM) + 1):
        decoder = LineDecoder(CAP)
        out = feed_all(decoder, [MIXED_STREAM[:cut], MIXED_STREAM[cut:]])
        assert [outcome(o) for o in out] == expected, f"split at {cut}"
        assert decoder.buffered == 0


def test_line_decoder_mixed_stream_at_every_three_chunk_split_around_the_oversized_line():
    # The first four lines: a frame, an oversized line, two short frames.
    data = b"".join(line for line, _ in MIXED[:4])
    expected = [want for _, want in MIXED[:4]]
    for first in range(len(data) + 1):
        for second in range(first, len(data) + 1):
            out = feed_all(LineDecoder(CAP), [data[:first], data[first:second], data[second:]])
            assert [outcome(o) for o in out] == expected, f"split at {first}, {second}"


def test_line_decoder_mixed_stream_byte_by_byte_never_buffers_past_the_cap():
    decoder = LineDecoder(CAP)
    out: List[wire.Decoded] = []
    for byte in bytewise(MIXED_STREAM):
        out += decoder.feed(byte)
        assert decoder.buffered <= CAP + 1  # the cap, plus a "\r" that may be half of a CRLF
    assert [outcome(o) for o in out + decoder.close()] == [want for _, want in MIXED]


def test_line_decoder_line_one_byte_over_the_cap_is_never_held():
    decoder = LineDecoder(CAP)
    line = frame_line(CAP + 1)
    for byte in bytewise(line):
        decoder.feed(byte)
        assert decoder.buffered <= CAP
    assert [outcome(o) for o in decoder.feed(b"\n")] == [("frame of 41 bytes exceeds the cap of 40 bytes", 41)]


def test_line_decoder_oversized_line_ending_mid_chunk_counts_every_byte():
    big = frame_line(500)
    decoder = LineDecoder(CAP)
    assert decoder.feed(big[:300]) == []
    out = decoder.feed(big[300:] + b'\n{"method":"m"}\n')
    assert [outcome(o) for o in out] == [("frame of 500 bytes exceeds the cap of 40 bytes", 500), {"method": "m"}]
    assert out[0].preview == big[:120].decode()


def test_line_decoder_invalid_lines_report_their_size_and_preview_without_the_cr():
    decoder = LineDecoder()
    out = decoder.feed(b"junk\r\n[1,2]\r\n")
    assert [(o.reason[:12], o.size, o.preview) for o in out] == [
        ("invalid JSON", 4, "junk"),
        ("not a JSON-R", 5, "[1,2]"),
    ]
    assert out[1].reason == "not a JSON-RPC frame (list)"


@pytest.mark.parametrize(
    "line, shape", [(b"5", "int"), (b"[1]", "list"), (b'"s"', "str"), (b"null", "NoneType"), (b"true", "bool")]
)
def test_line_decoder_json_that_is_no_object_is_no_frame(line, shape):
    for data in (line + b"\n", line + b"\r\n", b" " + line + b"\n"):
        (bad,) = LineDecoder().feed(data)
        assert isinstance(bad, ProtocolError), data
        assert bad.reason == f"not a JSON-RPC frame ({shape})"
        assert (bad.size, bad.preview) == (len(data.rstrip(b"\r\n")), data.rstrip(b"\r\n").decode())


@pytest.mark.parametrize("line", [b'x{"method":"m"}', b'{"method":"m"}x', b'{"method":"m"}}', b'-{"a":1}'])
def test_line_decoder_an_object_with_junk_around_it_is_invalid_json(line):
    assert isinstance(decode_line(line), ProtocolError)
    (bad,) = LineDecoder().feed(line + b"\n")
    assert isinstance(bad, ProtocolError) and bad.reason.startswith("invalid JSON: ")
    assert bad.size == len(line)


def test_line_decoder_whitespace_around_an_object_is_fine():
    assert decode_line(b' {"method":"m"}\t ') == {"method": "m"}
    assert LineDecoder().feed(b'{"method":"m"}  \n \t{"id":2,"result":{}}\r\n') == [
        {"method": "m"},
        {"id": 2, "result": {}},
    ]


def test_line_decoder_cap_of_one_byte():
    # The smallest cap there is: every object ({} is 2 bytes) is too big, a
    # one-byte line is judged as JSON, and nothing is ever held but a "\r".
    decoder = LineDecoder(1)
    out = feed_all(decoder, [b"7\n{}\n", b"{", b'"method":"m"}\r', b"\n\r", b"\n", b"{}"])
    assert [outcome(o) for o in out] == [
        ("not a JSON-RPC frame (int)", 1),
        ("frame of 2 bytes exceeds the cap of 1 bytes", 2),
        ("frame of 14 bytes exceeds the cap of 1 bytes", 14),
        ("invalid JSON: Expecting value: line 1 column 1 (char 0)", 0),
        ("frame of 2 bytes exceeds the cap of 1 bytes", 2),
    ]
    assert LineDecoder(1).max_frame_bytes == 1


def test_line_decoder_close_resets_a_partial_line():
    decoder = LineDecoder()
    decoder.feed(b'{"method":"a"')
    (bad,) = decoder.close()
    assert isinstance(bad, ProtocolError) and bad.size == 13
    assert decoder.buffered == 0
    assert decoder.feed(b'{"method":"b"}\n') == [{"method": "b"}]


def test_line_decoder_close_resets_an_oversized_line():
    decoder = LineDecoder(CAP)
    decoder.feed(frame_line(CAP + 5))
    assert [outcome(o) for o in decoder.close()] == [("frame of 45 bytes exceeds the cap of 40 bytes", 45)]
    # What follows is a new line, not the rest of the skipped one.
    assert decoder.feed(b'{"method":"n"}\n') == [{"method": "n"}]
    assert decoder.close() == []


def test_line_decoder_oversized_crlf_line_size_leaves_out_the_cr_wherever_it_is_cut():
    line = frame_line(CAP + 5)
    for chunks in ([line + b"\r", b"", b"\n"], [line, b"\r", b"\n"], [line + b"\r\n"], [line[:3], line[3:] + b"\r\n"]):
        out = LineDecoder(CAP).feed(b"".join(chunks)) if len(chunks) == 1 else feed_all(LineDecoder(CAP), chunks)
        assert [outcome(o) for o in out] == [("frame of 45 bytes exceeds the cap of 40 bytes", 45)], chunks
    out = feed_all(LineDecoder(CAP), [line[:-2], line[-2:] + b"\r", b"\n"])
    assert [outcome(o) for o in out] == [("frame of 45 bytes exceeds the cap of 40 bytes", 45)]
    # A "\r" inside the skipped line still counts; so does one at the end of an unterminated line, as at close().
    out = feed_all(LineDecoder(CAP), [line + b"\r", b"x\n"])
    assert [outcome(o) for o in out] == [("frame of 47 bytes exceeds the cap of 40 bytes", 47)]
    out = feed_all(LineDecoder(CAP), [line, b"\r"])
    assert [outcome(o) for o in out] == [("frame of 45 bytes exceeds the cap of 40 bytes", 45)]


def test_line_decoder_crlf_split_between_chunks():
    decoder = LineDecoder()
    assert decoder.feed(b'{"method":"a"}\r') == []
    assert decoder.buffered == len(b'{"method":"a"}\r')
    assert decoder.feed(b'\n{"method":"b"}\r') == [{"method": "a"}]
    assert decoder.feed(b"\n") == [{"method": "b"}]
    assert decoder.buffered == 0


def test_line_decoder_default_cap_is_64_mib():
    # The documented default (the module's comment: room for 4 MiB frames and more).
    assert DEFAULT_MAX_FRAME_BYTES == 64 * 1024 * 1024
    assert LineDecoder().max_frame_bytes == 67_108_864


def test_request_id_is_the_value_only_when_codex_accepts_it():
    assert [wire.request_id(v) for v in (0, 7, "", "req-1")] == [0, 7, "", "req-1"]
    assert [wire.request_id(v) for v in (None, True, 1.0, [1], {"id": 1})] == [None] * 5


@pytest.mark.parametrize(
    "obj", [{"result": {}}, {"error": {"code": -32600, "message": "x"}}, {"result": None, "emittedAtMs": 1}]
)
def test_classify_an_answer_without_an_id_is_no_frame(obj):
    # An answer names the request it answers; without an id it answers nothing.
    assert classify(obj) is None


@pytest.mark.parametrize("crlf", [b"", b"\r"])
def test_line_decoder_json_nested_deeper_than_the_stack_is_a_protocol_error(crlf):
    deep = b"[" * 100_000 + b"]" * 100_000
    for line in (deep, b'{"a":' + deep + b"}"):
        d = LineDecoder()
        (got,) = d.feed(line + crlf + b"\n")  # the block path
        assert isinstance(got, ProtocolError) and got.reason == TOO_DEEP
        (again,) = LineDecoder(max_frame_bytes=len(line) - 1 + len(crlf) + 1).feed(line + crlf + b"\n")
        assert isinstance(again, ProtocolError) and again.reason == TOO_DEEP
        assert wire.decode_line(line).reason == TOO_DEEP


# -- the verdict does not depend on how the bytes arrive ---------------------
#
# A line read whole goes through the hot loop's direct scan; a line cut by a
# chunk boundary is assembled in the buffer and judged by _verdict.  At each
# limit the decoder has (the nesting depth, the frame cap, the preview's
# length), at the limit, one below and one above, every way of cutting the
# bytes in two gives the same verdict -- reason, size and preview included.

D = wire.MAX_DEPTH
TOO_DEEP = f"invalid JSON: nested too deeply (more than {D} levels)"
NEXT = b'{"method":"next"}\n'  # what follows each line must decode too


def verdict(item: wire.Decoded):
    """A frame, or everything a problem says (reason, size, preview)."""
    return (item.reason, item.size, item.preview) if isinstance(item, ProtocolError) else item


def same_at_every_cut(data: bytes, cap: int = DEFAULT_MAX_FRAME_BYTES, cuts: Iterable[int] = ()) -> list:
    """The verdicts on ``data`` read whole, after checking that reading it in
    two pieces, cut at each of ``cuts`` (default: every offset), gives the same."""
    whole = [verdict(o) for o in feed_all(LineDecoder(cap), [data])]
    for cut in list(cuts) or range(len(data) + 1):
        split = [verdict(o) for o in feed_all(LineDecoder(cap), [data[:cut], data[cut:]])]
        assert split == whole, f"cut at {cut} of {len(data)}"
    return whole


def nested(depth: int, kinds: str = "a") -> str:
    """A JSON object ``depth`` levels deep (itself the first): its members
    nest arrays (``a``), objects (``o``) or both in turn (``ao``)."""
    text = "0"
    for level in range(depth - 1, 0, -1):
        text = f"[{text}]" if kinds[level % len(kinds)] == "a" else f'{{"k":{text}}}'
    return '{"":' + text + "}"


def shortest(depth: int) -> str:
    """The shortest object ``depth`` levels deep: 2 × depth + 3 characters."""
    return '{"":' + "[" * (depth - 1) + "]" * (depth - 1) + "}"


def test_nested_builders_build_what_they_say():
    for depth in (1, 2, 5):
        value = json.loads(nested(depth, "ao"))
        levels = 0
        while isinstance(value, (dict, list)):
            levels += 1
            value = next(iter(value.values())) if isinstance(value, dict) else value[0]
        assert levels == depth
    assert json.loads(shortest(3)) == {"": [[]]} and len(shortest(D + 1)) == 2 * D + 5


@pytest.mark.parametrize("ending", [b"\n", b"\r\n"], ids=["lf", "crlf"])
@pytest.mark.parametrize("depth", [D - 1, D, D + 1], ids=["below", "at", "above"])
def test_verdict_on_nesting_is_the_same_at_every_cut(depth, ending):
    # The shortest object of each depth: the one line at the hot loop's
    # length threshold (a longer one is measured there, a shorter cannot be deep).
    line = shortest(depth).encode()
    got = same_at_every_cut(line + ending + NEXT)
    expected = json.loads(line) if depth <= D else (TOO_DEEP, len(line), line[:120].decode())
    assert got == [expected, {"method": "next"}]


@pytest.mark.parametrize("kinds", ["a", "o", "ao"], ids=["arrays", "objects", "both"])
@pytest.mark.parametrize("depth", [D - 1, D, D + 1], ids=["below", "at", "above"])
def test_verdict_on_nesting_of_arrays_and_objects_at_a_sample_of_cuts(depth, kinds):
    line = nested(depth, kinds).encode()
    padded = b'{"pad":"' + b"[{" * 3000 + b'",' + line[1:]  # as deep, longer: brackets in a string do not nest
    for data in (line, padded, b" " + line + b" "):
        cuts = [0, 1, 5, len(data) // 3, len(data) // 2, len(data) - 3, len(data) - 1, len(data)]
        got = same_at_every_cut(data + b"\n" + NEXT, cuts=cuts)
        expected = json.loads(data) if depth <= D else (TOO_DEEP, len(data), data[:120].decode())
        assert got == [expected, {"method": "next"}], data[:20]
        assert verdict(decode_line(data)) == expected  # the same as the function itself says


@pytest.mark.parametrize("depth", [D - 1, D, D + 1], ids=["below", "at", "above"])
def test_verdict_on_nesting_of_what_is_no_frame_is_the_same_at_every_cut(depth):
    arrays = ("[" * depth + "]" * depth).encode()  # JSON, but not an object
    broken = ("[" * depth + "x").encode()  # invalid JSON after the nesting
    deep_too = TOO_DEEP if depth > D else None
    for line, otherwise in (
        (arrays, "not a JSON-RPC frame (list)"),
        (broken, "invalid JSON: Expecting value: line 1 column %d (char %d)" % (depth + 1, depth)),
    ):
        cuts = range(0, len(line) + 2, 3) if line is arrays else ()
        got = same_at_every_cut(line + b"\n" + NEXT, cuts=cuts)
        assert got == [(deep_too or otherwise, len(line), line[:120].decode()), {"method": "next"}]


def test_verdict_on_nesting_counts_brackets_outside_strings_only():
    # Lines that do not parse, with more than MAX_DEPTH brackets: only those
    # outside strings nest (an escaped quote does not end a string, an
    # escaped backslash before a quote does), and closing ones close.
    many = "[" * (D + 1)
    cases = [
        ('{"s":"' + many + '"} x', "invalid JSON: Extra data"),  # in a string
        ('{"s":"\\"' + many + '"} x', "invalid JSON: Extra data"),  # an escaped quote inside
        ('{"s":"\\\\"' + many + "x", TOO_DEEP),  # the string ended: the brackets open
        ("[" + "[]," * (D + 1) + "x]", "invalid JSON: Expecting value"),  # shallow, many arrays
        ("[" + "{}," * (D + 1) + "x]", "invalid JSON: Expecting value"),  # shallow, many objects
        ("{" * (D + 1) + "x", TOO_DEEP),  # objects opening
        ("[" * D + "x", "invalid JSON: Expecting value"),  # exactly MAX_DEPTH: not too deep
    ]
    for text, reason in cases:
        line = text.encode()
        (got, following) = same_at_every_cut(line + b"\n" + NEXT, cuts=[0, 7, len(line) // 2, len(line)])
        assert got[0].startswith(reason) and got[1:] == (len(line), line[:120].decode()), text[:30]
        assert following == {"method": "next"}


def test_verdict_on_nesting_of_a_value_the_stack_cannot_parse_is_too_deep():
    # Far past the stack: the parse itself runs out, on every path.
    line = shortest(50_000).encode()
    assert same_at_every_cut(line + b"\n", cuts=[0, 10, len(line)]) == [(TOO_DEEP, len(line), line[:120].decode())]


def test_verdict_on_nesting_near_the_stack_limit_is_the_same_in_one_read_or_two():
    # The case that showed the fault: a frame about 994 levels deep that the
    # direct scan took in one read and the buffered path, a few calls deeper
    # on the stack, refused in two.  Where exactly depends on the caller's
    # stack, so every depth around it is tried.
    for depth in range(900, 1001):
        line = shortest(depth).encode() + b"\n"
        decoder = LineDecoder()
        two_reads = decoder.feed(line[:5]) + decoder.feed(line[5:])
        expected = [(TOO_DEEP, len(line) - 1, line[:120].decode())]
        assert [verdict(o) for o in LineDecoder().feed(line)] == [verdict(o) for o in two_reads] == expected, depth


@pytest.mark.parametrize("ending", [b"\n", b"\r\n"], ids=["lf", "crlf"])
@pytest.mark.parametrize("size", [63, 64, 65], ids=["below", "at", "above"])
def test_verdict_on_the_frame_cap_is_the_same_at_every_cut(size, ending):
    line = frame_line(size)
    got = same_at_every_cut(line + ending + NEXT, cap=64)
    if size <= 64:
        assert got == [json.loads(line), {"method": "next"}]
    else:
        assert got == [(f"frame of {size} bytes exceeds the cap of 64 bytes", size, line.decode()), {"method": "next"}]


@pytest.mark.parametrize("size", [-1, 0, 1], ids=["below", "at", "above"])
def test_verdict_on_the_frame_cap_of_a_big_frame_at_a_sample_of_cuts(size):
    cap = 1024 * 1024
    line = frame_line(cap + size)
    cuts = [0, 1, 119, 120, 121, cap // 2, cap - 1, cap, cap + 1, len(line) - 1, len(line), len(line) + 1]
    got = same_at_every_cut(line + b"\r\n" + NEXT, cap=cap, cuts=cuts)
    if size <= 0:
        assert got == [json.loads(line), {"method": "next"}]
    else:
        reason = f"frame of {cap + 1} bytes exceeds the cap of {cap} bytes"
        assert got == [(reason, cap + 1, line[:120].decode()), {"method": "next"}]


@pytest.mark.parametrize("ending", [b"\n", b"\r\n"], ids=["lf", "crlf"])
@pytest.mark.parametrize("size", [119, 120, 121], ids=["below", "at", "above"])
def test_verdict_on_the_preview_is_the_same_at_every_cut(size, ending):
    # The preview shows a line's first 120 bytes, however it arrived: an
    # invalid line, and one over a cap shorter than a preview (whose first
    # bytes arrive while it is being skipped).
    junk = b"\xc3\xa9" + b"x" * (size - 2)  # invalid JSON, its preview starting with a 2-byte character
    got = same_at_every_cut(junk + ending + NEXT)
    assert got[0][1:] == (size, junk[:120].decode()) and got[1] == {"method": "next"}
    over = frame_line(size)
    for cap in (40, 64):
        got = same_at_every_cut(over + ending + NEXT, cap=cap)
        reason = f"frame of {size} bytes exceeds the cap of {cap} bytes"
        assert got == [(reason, size, over[:120].decode()), {"method": "next"}]


def test_verdict_on_a_short_oversized_line_leaves_its_cr_out_of_the_preview():
    for data, size in ((b"abcdef\r\n", 6), (b"abc\rdef\r\n", 7)):
        assert same_at_every_cut(data + b"{}\n", cap=4) == [
            (f"frame of {size} bytes exceeds the cap of 4 bytes", size, data[:size].decode()),
            {},
        ]
    # Unterminated (close() reports it): the last "\r" is left out the same way.
    assert [verdict(o) for o in feed_all(LineDecoder(4), [b"abcdef", b"\r"])] == [
        ("frame of 6 bytes exceeds the cap of 4 bytes", 6, "abcdef")
    ]


def test_verdict_on_the_preview_of_a_line_arriving_byte_by_byte_under_a_small_cap():
    # Its first bytes arrive while it is skipped, one at a time.
    for size in (50, 119, 120, 121, 300):
        line = frame_line(size)
        out = feed_all(LineDecoder(40), bytewise(line + b"\r\n" + NEXT))
        assert [verdict(o) for o in out] == [
            (f"frame of {size} bytes exceeds the cap of 40 bytes", size, line[:120].decode()),
            {"method": "next"},
        ]


def test_nesting_limit_is_512_levels():
    # Spelled out: the tests above are written against MAX_DEPTH.
    assert wire.MAX_DEPTH == 512
    assert decode_line(shortest(512).encode()) == json.loads(shortest(512))
    assert decode_line(shortest(513).encode()).reason == "invalid JSON: nested too deeply (more than 512 levels)"
    assert wire._nests_deeper(json.loads(shortest(512))) is False
    assert wire._nests_deeper(json.loads(shortest(513))) is True


@pytest.mark.parametrize(
    "value, deeper",
    [
        (0, False),
        ("[[[[", False),
        ({}, False),
        ([[]] * 1000, False),  # wide, two levels
        (json.loads(nested(D, "o")), False),
        (json.loads(nested(D + 1, "o")), True),
        (json.loads(nested(D + 1, "ao")), True),
        ({"a": [1, "x", None, {"b": json.loads(shortest(D - 1))}]}, True),  # the deep part behind scalars
    ],
    ids=["scalar", "string", "empty", "wide", "objects-at", "objects-above", "both-above", "behind-scalars"],
)
def test_nests_deeper_measures_a_decoded_value(value, deeper):
    assert wire._nests_deeper(value) is deeper


def test_verdict_on_nesting_counts_closing_brackets_before_the_deep_part():
    # What closes before the deep part no longer counts: one level, then D
    # more, is too deep whatever came and went in between.
    for closed in ("[],", "{},", '"]",'):
        line = ("[" + closed * 3 + "[" * D + "x").encode()
        (got,) = LineDecoder().feed(line + b"\n")
        assert got.reason == TOO_DEEP, closed
        shallower = ("[" + closed * 3 + "[" * (D - 1) + "x").encode()
        (got,) = LineDecoder().feed(shallower + b"\n")
        assert got.reason.startswith("invalid JSON: Expecting value"), closed
    for quote in ('"', '"a\\\\"'):  # a quote that opens no string; a string ending in an escaped backslash
        line = ("[" * D + quote + "[x").encode()
        (got,) = LineDecoder().feed(line + b"\n")
        assert got.reason == TOO_DEEP, quote


def test_the_hot_loop_measures_only_lines_long_enough_to_be_too_deep(monkeypatch):
    # The depth of a line the direct scan took is measured only when it is
    # longer than the shortest too-deep object: nine lines in ten (deltas) are
    # shorter, and take no call at all; nor does a long one go the long way.
    measured, judged = [], []
    monkeypatch.setattr(wire, "_nests_deeper", lambda value: measured.append(value) or False)
    real = wire._verdict
    monkeypatch.setattr(wire, "_verdict", lambda text, line=None: judged.append(text) or real(text, line))
    edge = 2 * D + 4  # no object this long or shorter nests deeper than D
    for size, calls in ((frame_line(edge), 0), (frame_line(edge + 1), 1), (frame_line(5000), 1)):
        measured.clear()
        assert LineDecoder().feed(size + b"\n") == [json.loads(size)]
        assert (len(measured), judged) == (calls, []), len(size)
    assert wire._SHALLOW == edge


# -- shape: the kinds, and what the schema asks of each ----------------------


@pytest.mark.parametrize(
    "obj, kind, problem",
    [
        ({"id": 0, "method": "item/tool/call", "params": {}}, REQUEST, ""),
        ({"id": 0, "method": "item/tool/call"}, REQUEST, "params is missing"),
        ({"id": 0, "method": "item/tool/call", "params": None}, REQUEST, "params is null, not an object"),
        ({"id": "a", "method": "m", "params": [1]}, REQUEST, "params is an array, not an object"),
        ({"method": "turn/started", "params": {"threadId": "t"}}, NOTIFICATION, ""),
        ({"method": "initialized"}, NOTIFICATION, "params is missing"),
        ({"method": "m", "params": "s"}, NOTIFICATION, "params is a string, not an object"),
        ({"method": "m", "params": 1.5}, NOTIFICATION, "params is a number, not an object"),
        ({"method": "m", "params": True}, NOTIFICATION, "params is a boolean, not an object"),
        ({"id": 1, "result": {}}, RESPONSE, ""),
        ({"id": 1, "result": None}, RESPONSE, "result is null, not an object"),
        ({"id": 1, "result": 7}, RESPONSE, "result is an integer, not an object"),
        ({"id": 1, "error": {"code": -32600, "message": "x"}}, ERROR, ""),
        ({"id": 1, "error": {"code": -32600, "message": "x", "data": [1]}}, ERROR, ""),
    ],
)
def test_shape_is_the_kind_and_what_its_member_breaks(obj, kind, problem):
    assert wire.shape(obj) == (kind, problem)
    assert classify(obj) == kind


@pytest.mark.parametrize(
    "obj, problem",
    [
        ([], "not a JSON-RPC frame (list)"),
        ({}, "not a JSON-RPC frame: it has neither a method nor an id"),
        ({"params": {}}, "not a JSON-RPC frame: it has neither a method nor an id"),
        ({"method": None}, "not a JSON-RPC frame: its method is null, not a string"),
        ({"id": 1, "method": ["m"]}, "not a JSON-RPC frame: its method is an array, not a string"),
        ({"id": {"n": 1}, "result": {}}, "not a JSON-RPC frame: its id is an object, not an integer or a string"),
        ({"id": False, "method": "m"}, "not a JSON-RPC frame: its id is a boolean, not an integer or a string"),
        ({"id": (1,), "result": {}}, "not a JSON-RPC frame: its id is tuple, not an integer or a string"),
        ({"id": 1}, "not a JSON-RPC frame: an answer holds exactly one of result and error"),
        ({"id": 1, "error": {"code": True, "message": "x"}}, "not a JSON-RPC frame: its error is not an object"),
        ({"id": 1, "error": {"code": 1}}, "not a JSON-RPC frame: its error is not an object"),
        ({"id": 1, "error": []}, "not a JSON-RPC frame: its error is not an object"),
    ],
)
def test_shape_says_why_an_object_is_no_frame(obj, problem):
    kind, why = wire.shape(obj)
    assert kind is None and why.startswith(problem)


def test_shape_members_table_is_every_kind_with_an_object_member():
    # The schema's shape: params of what codex asks or tells, the result of what it answers.
    assert wire.MEMBERS == {REQUEST: "params", NOTIFICATION: "params", RESPONSE: "result"}


def test_is_valid_id_refuses_a_string_no_answer_could_echo():
    assert is_valid_id("日本") is True and is_valid_id("") is True
    assert is_valid_id("a\ud800") is False and is_valid_id("\udfff") is False
    assert wire.shape({"id": "\ud800", "result": {}}) == (
        None,
        "not a JSON-RPC frame: its id is a string that is not UTF-8 text, not an integer or a string",
    )
    assert decode_line(b'{"id":"\\ud800","result":{}}') == {"id": "\ud800", "result": {}}  # JSON, no frame
    assert classify({"id": "\ud800", "result": {}}) is None


# -- encode: what cannot go on the wire is refused, saying where -------------


@pytest.mark.parametrize(
    "frame, what, path, reason",
    [
        (
            {"id": 3, "method": "turn/start", "params": {"input": [{"type": "text", "text": "ab\ud800"}]}},
            "request turn/start",
            "params.input[0].text",
            "'utf-8' codec can't encode character '\\ud800' in position 2: surrogates not allowed",
        ),
        ({"method": "initialized", "params": {"s": {1}}}, "notification initialized", "params.s", "Object of type set"),
        ({"id": 0, "result": {"content": float("nan")}}, "the answer to request 0", "result.content", "Out of range"),
        ({"id": "r", "result": [1, (2, float("inf"))]}, "the answer to request 'r'", "result[1][1]", "Out of range"),
        ({"id": 1, "method": "m", "params": {"a-b": object()}}, "request m", "params['a-b']", "Object of type object"),
        ({"id": 1, "method": "m", "params": {7: b"x"}}, "request m", "params[7]", "Object of type bytes"),
        ({"id": 1, "method": "m", "params": {"k": {(1,): 2}}}, "request m", "params.k", "keys must be str"),
        ({"id": 1, "method": "m", "params": {"\udc80": 2}}, "request m", "params", "'utf-8' codec can't encode"),
        ({"id": 1, "method": "m\ud800"}, "request m\ud800", "method", "'utf-8' codec can't encode character"),
        ({"id": 1, "method": "m", "params": {"ok": 1, "big": 10**5000}}, "request m", "params.big", "Exceeds the"),
    ],
    ids=["surrogate", "set", "nan", "infinity", "object", "bytes", "tuple-key", "surrogate-key", "method", "huge-int"],
)
def test_encode_refuses_what_is_not_json_or_not_utf8_and_says_where(frame, what, path, reason):
    with pytest.raises(UnencodableInput) as raised:
        encode(frame)
    err = raised.value
    assert (err.what, err.path) == (what, path)
    assert err.reason.startswith(reason), err.reason
    assert isinstance(err.__cause__, (TypeError, ValueError))


def test_encode_refuses_a_cycle_where_it_closes():
    loop: dict = {"a": 1}
    loop["again"] = loop
    with pytest.raises(UnencodableInput) as raised:
        encode({"id": 1, "method": "m", "params": {"x": [loop]}})
    assert (raised.value.path, raised.value.reason) == ("params.x[0].again", "Circular reference detected")
    assert encode({"id": 1, "method": "m", "params": {"x": [{"a": 1}]}})  # the encoder is still usable


def test_encode_refuses_nesting_too_deep_to_encode_without_looking_for_where():
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(UnencodableInput) as raised:
        encode({"id": 1, "method": "m", "params": {"x": deep}})
    assert (raised.value.path, raised.value.reason) == ("", "nested too deeply to encode")
    assert isinstance(raised.value.__cause__, RecursionError)
    assert str(raised.value) == "request m: the frame cannot go on the wire (nested too deeply to encode)"


def test_encode_of_a_frame_whose_members_each_encode_blames_the_frame():
    # A str subclass whose text is no UTF-8 at the top: nothing smaller to blame.
    class Text(str):
        pass

    frame = {Text("\ud800"): 1}
    with pytest.raises(UnencodableInput) as raised:
        encode(frame)
    assert raised.value.path == "" and raised.value.what == "the answer to request None"


def test_encode_blames_the_first_part_that_does_not_encode():
    # Two bad members: the first, as the encoder meets it, and the innermost part of it.
    frame = {"id": 1, "method": "m", "params": {"ok": [1], "a": {"b": {1}, "c": object()}, "d": {2}}}
    with pytest.raises(UnencodableInput) as raised:
        encode(frame)
    assert (raised.value.path, raised.value.reason) == ("params.a.b", "Object of type set is not JSON serializable")


def test_fault_is_empty_for_what_encodes():
    assert wire._fault({"a": [1, "é", None]}) == "" and wire._fault("text") == ""
    assert wire._fault("\ud800").startswith("'utf-8' codec can't encode")


def test_wire_messages_are_whole_frames_each_held_to_the_cap():
    # What a WebSocket delivers: no line to cut, a line break between tokens is whitespace.
    decoder = LineDecoder(max_frame_bytes=64)
    out = decoder.messages(['{"a":1}', '{"b":\n2}', '{"c":"' + "x" * 80 + '"}'])
    assert out[:2] == [{"a": 1}, {"b": 2}]
    assert isinstance(out[2], ProtocolError) and "exceeds the cap of 64 bytes" in str(out[2])
    (wide,) = decoder.messages(['{"e":"' + "é" * 70 + '"}'])  # its size said in bytes, as on the wire
    assert isinstance(wide, ProtocolError) and "frame of 148 bytes exceeds the cap of 64 bytes" in str(wide)
    assert decoder.buffered == 0
    assert LineDecoder().messages(['{"d":3}', "[1]"])[0] == {"d": 3}
