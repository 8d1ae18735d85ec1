"""The decoder's verdict does not depend on how the bytes arrive.

The lines at every limit the decoder has (:func:`edges.limit_lines`: nesting
at ``MAX_DEPTH`` - 1, ``MAX_DEPTH``, ``MAX_DEPTH`` + 1, the frame cap - 1, at
and + 1, LF and CRLF) are read once whole, then again cut into pieces at
random (seeded) points -- four hundred chunkings through the decoder and the RPC
core in memory, and :data:`edges.ROUNDS` more written by a child process over
a real pipe, piece by piece, to an :class:`AppServerClient`.  Every chunking
must give exactly what one read gives: the same frames, and the same problems
(reason, size and preview).  tests/test_wire.py cuts each line at every
offset; this is the whole stream at once, in many pieces.
"""

from __future__ import annotations

from typing import Any, List

import edges
import figures
import hostile

from codexmini import Launch, Limits, _rpc, _wire
from codexmini._client import AppServerClient
from codexmini._errors import ProtocolError
from codexmini.testing import FakeAppServer
from codexmini.testing.codex_like import THREAD

CHUNKINGS = 400


def verdict(item: Any) -> Any:
    return (item.reason, item.size, item.preview) if isinstance(item, ProtocolError) else item


def events(conn: _rpc.Connection, chunks: List[bytes]) -> List[Any]:
    """What the RPC core makes of the chunks: each event's frame, or its problem."""
    out: List[Any] = []
    for chunk in chunks:
        out += conn.receive(chunk)
    return [verdict(e.error) if isinstance(e, _rpc.Skipped) else (type(e).__name__, e.frame) for e in out]


def test_chunking_every_limit_line_decodes_the_same_in_400_chunkings():
    data = b"".join(edges.limit_lines())
    whole = [verdict(o) for o in _wire.LineDecoder(edges.CAP).feed(data)]
    frames = [o for o in whole if isinstance(o, dict)]
    problems = [o for o in whole if not isinstance(o, dict)]
    # What the limits say: at and under each limit a frame, over it a problem.
    assert [p[0] for p in problems] == [f"invalid JSON: nested too deeply (more than {_wire.MAX_DEPTH} levels)"] * 2 + [
        f"frame of {edges.CAP + 1} bytes exceeds the cap of {edges.CAP} bytes"
    ] * 2
    assert len(frames) == len(whole) - 4 == 21  # 12 limit lines, 13 ordinary ones
    core = events(_rpc.Connection(max_frame_bytes=edges.CAP), [data])
    for seed in range(CHUNKINGS):
        chunks = edges.pieces(data, seed)
        decoder = _wire.LineDecoder(edges.CAP)
        assert [verdict(o) for chunk in chunks for o in decoder.feed(chunk)] == whole, seed
        assert events(_rpc.Connection(max_frame_bytes=edges.CAP), chunks) == core, seed
    figures.count("chunkings", "limit streams compared in memory with one read (decoder and RPC core)", CHUNKINGS)


async def test_chunking_over_a_real_pipe_the_client_sees_what_one_read_gives(tmp_path):
    exe = FakeAppServer("edges:chunked").executable(str(tmp_path), pythonpath=[hostile.HERE])
    conn = _rpc.Connection(max_frame_bytes=edges.CAP)
    conn.claim(THREAD)
    once = conn.receive(b"".join(edges.limit_lines()))
    notes = [e.frame for e in once if isinstance(e, _rpc.Notification)]
    problems = [verdict(e.error) for e in once if isinstance(e, _rpc.Skipped)]
    assert len(notes) == 21 and len(problems) == 4

    async with await AppServerClient.start(Launch(codex_bin=exe, limits=Limits(max_frame_bytes=edges.CAP))) as client:
        sub = client.subscribe(THREAD)
        await client.request("thread/loaded/list", {})  # answered after every round: all of it was read
        got = []
        while sub.pending():
            got.append(sub.get_nowait())
        assert got == notes * edges.ROUNDS
        assert [verdict(e) for e in client.protocol_errors] == problems * edges.ROUNDS
        assert client.stats["malformed"] == len(problems) * edges.ROUNDS
    figures.count("chunkings", "limit streams written in random pieces over a real pipe, compared", edges.ROUNDS)
