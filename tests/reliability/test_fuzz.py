"""Property-based fuzzing of the pure core: decoder, RPC core, turn fold, step fold.

Random frames (any JSON, any bytes) and schema-shaped ones (the methods,
ids and fields codex sends, each field sometimes of the wrong type) go into
:class:`~codexmini._wire.LineDecoder`, :class:`~codexmini._rpc.Connection`,
:class:`~codexmini._turnfold.TurnFold` and :class:`~codexmini._stepfold.StepFold`
fed by a ``TurnFold``.  Never an unhandled exception; never a hang (the
suite's watchdog bounds every test); and the invariants each one promises:
decoding does not depend on how the bytes are chunked, the decoder and the
unclaimed buffer stay within their caps, the step fold writes only
session-log events that encode.

Hypothesis runs derandomized (the examples come from the test's own name), so
CI sees the same examples every run and never flakes; ``max_examples`` is
sized for the suite's time budget.
"""

from __future__ import annotations

import copy
import glob
import json
import os
import random
import re
from typing import Any, Dict, List, Optional, Tuple

import figures
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codexmini import _events, _mapping, _permission, _rpc, _session, _stepfold, _turnfold, _wire
from codexmini._errors import ProtocolError

FUZZ = settings(
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=80,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# -- strategies ------------------------------------------------------------------------------

#: The frame cap of the fuzzed decoders (small, so that oversized lines are common).
CAP = 256
THREADS = ["thr-a", "thr-b", "thr-c", "thr-d", "thr-e"]
TURNS = ["turn-1", "turn-2"]
ITEMS = ["item-1", "item-2", "item-3"]
ITEM_TYPES = [
    "agentMessage",
    "reasoning",
    "userMessage",
    "plan",
    "commandExecution",
    "fileChange",
    "mcpToolCall",
    "webSearch",
    "imageView",
    "somethingNew",
]
METHODS = sorted(_mapping.NOTIFICATIONS) + ["serverRequest/resolved", "warning", "thread/started", "fake/new"]
REQUEST_METHODS = sorted(_permission.SERVER_REQUESTS) + ["fake/unknownRequest"]

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**40), 2**40), st.floats(allow_nan=False), st.text(max_size=8)
)
any_json = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)),
    max_leaves=12,
)


def sometimes(good: st.SearchStrategy) -> st.SearchStrategy:
    """Mostly the right shape, sometimes anything at all."""
    return st.one_of(good, good, good, any_json)


ids = st.one_of(
    st.integers(0, 6),
    st.sampled_from(["a", "b"]),
    st.none(),
    st.floats(0, 3),
    st.booleans(),
    st.lists(st.integers(0, 2), max_size=2),
)
counts = st.one_of(st.integers(0, 10**6), st.none(), st.text(max_size=3), st.floats(0, 10))


def some_of(
    fields: Dict[str, st.SearchStrategy], required: Optional[Dict[str, st.SearchStrategy]] = None
) -> st.SearchStrategy:
    """An object with the ``required`` fields and a few of ``fields`` (drawing
    only the chosen ones keeps generation fast)."""
    return st.lists(st.sampled_from(sorted(fields)), max_size=4, unique=True).flatmap(
        lambda keys: st.fixed_dictionaries({**(required or {}), **{k: fields[k] for k in keys}})
    )


USAGE_KEYS = ("inputTokens", "cachedInputTokens", "outputTokens", "reasoningOutputTokens", "totalTokens")
usage = st.fixed_dictionaries(dict.fromkeys(USAGE_KEYS, counts))
item = some_of(
    {
        "text": sometimes(st.text(max_size=10)),
        "summary": sometimes(st.lists(st.text(max_size=6), max_size=3)),
        "content": sometimes(st.lists(st.text(max_size=6), max_size=3)),
        "command": sometimes(st.text(max_size=10)),
        "aggregatedOutput": sometimes(st.one_of(st.none(), st.text(max_size=10))),
        "exitCode": sometimes(st.one_of(st.none(), st.integers(-1, 2))),
        "status": sometimes(st.sampled_from(["inProgress", "completed", "failed", "declined"])),
        "changes": sometimes(
            st.lists(st.dictionaries(st.sampled_from(["path", "kind", "diff"]), any_json, max_size=3), max_size=2)
        ),
        "server": sometimes(st.text(max_size=5)),
        "tool": sometimes(st.text(max_size=5)),
        "arguments": any_json,
        "result": sometimes(st.fixed_dictionaries({"content": sometimes(st.lists(any_json, max_size=3))})),
        "error": sometimes(st.one_of(st.none(), st.fixed_dictionaries({"message": sometimes(st.text(max_size=5))}))),
        "query": sometimes(st.text(max_size=5)),
        "results": sometimes(st.lists(any_json, max_size=2)),
        "path": sometimes(st.text(max_size=5)),
    },
    {"type": sometimes(st.sampled_from(ITEM_TYPES)), "id": sometimes(st.sampled_from(ITEMS))},
)
turn = some_of(
    {"error": sometimes(st.one_of(st.none(), st.fixed_dictionaries({"message": st.text(max_size=5)})))},
    {
        "id": sometimes(st.sampled_from(TURNS)),
        "status": sometimes(st.sampled_from(["completed", "interrupted", "failed", "inProgress"])),
    },
)
params = some_of(
    {
        "itemId": sometimes(st.sampled_from(ITEMS)),
        "delta": sometimes(st.text(max_size=10)),
        "summaryIndex": sometimes(st.integers(0, 3)),
        "contentIndex": sometimes(st.integers(0, 3)),
        "item": sometimes(item),
        "turn": sometimes(turn),
        "tokenUsage": sometimes(
            some_of({"last": sometimes(usage), "total": sometimes(usage), "modelContextWindow": counts})
        ),
        "error": sometimes(some_of({"message": sometimes(st.text(max_size=5)), "additionalDetails": any_json})),
        "willRetry": sometimes(st.booleans()),
        "plan": sometimes(
            st.lists(
                sometimes(
                    st.fixed_dictionaries(
                        {"step": sometimes(st.text(max_size=5)), "status": sometimes(st.text(max_size=5))}
                    )
                ),
                max_size=3,
            )
        ),
        "explanation": sometimes(st.one_of(st.none(), st.text(max_size=5))),
        "diff": sometimes(st.text(max_size=10)),
        "requestId": ids,
        "thread": sometimes(st.fixed_dictionaries({"id": sometimes(st.sampled_from(THREADS))})),
    },
    {"threadId": sometimes(st.sampled_from(THREADS)), "turnId": sometimes(st.sampled_from(TURNS))},
)
notification = st.builds(
    lambda m, p: {"method": m, "params": p}, sometimes(st.sampled_from(METHODS)), sometimes(params)
)
server_request = st.builds(
    lambda i, m, p: {"id": i, "method": m, "params": p}, ids, st.sampled_from(REQUEST_METHODS), sometimes(params)
)
response = st.one_of(
    st.builds(lambda i, r: {"id": i, "result": r}, ids, any_json),
    st.builds(
        lambda i, c, m: {"id": i, "error": {"code": c, "message": m}},
        ids,
        sometimes(st.integers(-33000, 0)),
        sometimes(st.text(max_size=5)),
    ),
)
frames = st.one_of(
    notification, notification, server_request, response, st.dictionaries(st.text(max_size=5), any_json, max_size=3)
)


def line_of(frame: Any) -> bytes:
    return json.dumps(frame).encode()


garbage = st.one_of(
    st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")),
    any_json.map(line_of),  # JSON that is not an object, or an object without a frame's shape
    st.just(b"[" * 3000 + b"]" * 3000),
    st.integers(1, 3).map(lambda k: b"x" * (CAP * k)),  # over the cap
)
lines = st.lists(st.one_of(frames.map(line_of), frames.map(line_of), garbage), max_size=12)


def stream_of(items: List[bytes], crlf: List[bool], tail: bool) -> bytes:
    data = b"".join(line + (b"\r\n" if c else b"\n") for line, c in zip(items, crlf + [False] * len(items)))
    return data if tail else data.rstrip(b"\n")


def chunks(data: bytes, cuts: List[int]) -> List[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    return [data[a:b] for a, b in zip([0] + points, points + [len(data)])]


def comparable(items: List[_wire.Decoded]) -> List[Any]:
    # An oversized line's reported size may differ by its "\r" with the chunking.
    return [re.sub(r"\d+", "N", item.reason) if isinstance(item, ProtocolError) else item for item in items]


# -- the decoder ------------------------------------------------------------------------------


@FUZZ
@given(lines, st.lists(st.booleans(), max_size=12), st.booleans(), st.lists(st.integers(0, 10**6), max_size=20))
def test_fuzz_decoder_never_raises_and_does_not_depend_on_chunking(items, crlf, tail, cuts):
    data = stream_of(items, crlf, tail)
    whole = _wire.LineDecoder(CAP)
    at_once = whole.feed(data) + whole.close()
    pieces = _wire.LineDecoder(CAP)
    chunked: List[_wire.Decoded] = []
    for piece in chunks(data, cuts):
        chunked += pieces.feed(piece)
        assert pieces.buffered <= CAP + 1  # the buffer never holds more than the cap
    chunked += pieces.close()
    assert all(isinstance(x, (dict, ProtocolError)) for x in chunked)
    assert comparable(chunked) == comparable(at_once)
    figures.count("fuzzing", "frames and lines fuzzed through the decoder", len(items))


# -- the RPC core ------------------------------------------------------------------------------

answerable = st.one_of(st.integers(0, 6), st.sampled_from(["a", "b"]))  # what a ServerRequest's id can be
operations = st.lists(
    st.one_of(
        st.tuples(st.just("request"), st.sampled_from(["thread/start", "turn/start", "initialize"])),
        st.tuples(st.just("receive"), st.lists(st.one_of(frames.map(line_of), garbage), min_size=1, max_size=6)),
        st.tuples(st.just("claim"), st.sampled_from(THREADS)),
        st.tuples(st.just("release"), st.sampled_from(THREADS)),
        st.tuples(st.just("answer"), answerable),
        st.tuples(st.just("decline"), answerable),
        st.tuples(st.just("forget"), st.integers(0, 6)),
        st.tuples(st.just("eof"), st.none()),
    ),
    max_size=25,
)
EVENTS = (
    _rpc.Response,
    _rpc.ErrorResponse,
    _rpc.Notification,
    _rpc.ServerRequest,
    _rpc.ServerRequestResolved,
    _rpc.Skipped,
    _rpc.Malformed,
)


@settings(FUZZ, max_examples=200)  # cheap examples: more of them
@given(operations, st.booleans())
def test_fuzz_rpc_core_never_raises_and_keeps_its_bounds(ops, cut_into_bytes):
    conn = _rpc.Connection(max_frame_bytes=CAP, unclaimed_threads=3, unclaimed_per_thread=4, unclaimed_bytes=600)
    issued: List[int] = []
    fed = 0
    for op, arg in ops:
        if op == "request":
            rid, out = conn.request(arg, {"threadId": THREADS[0]})
            issued.append(rid)
            assert json.loads(out.data) == out.frame
        elif op == "receive":
            data = b"\n".join(arg) + b"\n"
            pieces = [data[i : i + 7] for i in range(0, len(data), 7)] if cut_into_bytes else [data]
            for piece in pieces:
                assert all(isinstance(e, EVENTS) for e in conn.receive(piece))
            fed += len(arg)
        elif op == "claim":
            assert all(n.route == arg for n in conn.claim(arg))
        elif op == "release":
            conn.release(arg)
        elif op in ("answer", "decline"):
            open_before = arg in conn.open_requests
            out = conn.answer(arg, {}) if op == "answer" else conn.decline(arg, handler_failed=True)
            assert (out is not None) == open_before  # answered once, and only if asked
        elif op == "forget":
            conn.forget(arg)
        else:
            assert all(isinstance(e, EVENTS) for e in conn.receive_eof())
        threads, held, size = conn.unclaimed
        assert threads <= 3 and size <= 600
        assert all(len(q) <= 4 for q in conn._unclaimed.values())
        assert set(conn.pending) <= set(issued)
        assert len(conn._settled) <= _rpc.SETTLED_MEMORY
        assert min(conn.stats.values()) >= 0
    figures.count("fuzzing", "frames and lines fuzzed through the RPC core", fed)


# -- the turn fold and the step fold -----------------------------------------------------------

notes = st.lists(st.tuples(sometimes(st.sampled_from(METHODS)), params), max_size=20)


def fold(stream: List[Tuple[Any, Dict[str, Any]]]) -> Tuple[_turnfold.TurnFold, List[Optional[_events.Event]]]:
    books = _turnfold.TurnFold(TURNS[0])
    out = []
    for method, p in stream:
        out.append(books.feed(str(method), p))
    return books, out


EVENT_TYPES = tuple(
    t
    for t in vars(_events).values()
    if isinstance(t, type) and t.__module__ == _events.__name__ and t is not _events.Usage
)


@FUZZ
@given(notes)
def test_fuzz_turn_fold_never_raises(stream):
    books, out = fold(stream)
    assert all(e is None or isinstance(e, EVENT_TYPES) for e in out)
    assert books.invalid == sum(isinstance(e, _events.InvalidNotification) for e in out)
    assert set(books.open) <= set(books.started)
    if books.done:
        assert books.completed is not None and books.completed.turn_id == TURNS[0]
    figures.count("fuzzing", "notifications fuzzed through the turn fold", len(stream))


@FUZZ
@given(notes, st.booleans())
def test_fuzz_step_fold_over_a_turn_fold_never_raises_and_writes_valid_events(stream, steered):
    books = _turnfold.TurnFold(TURNS[0])
    folder = _stepfold.StepFold(step=1, model="m", new_id=lambda: "id")
    if steered:
        folder.steer({"id": "s", "content": [{"type": "text", "text": "more"}], "source": {"kind": "user"}})
    writes: List[_stepfold.Write] = []
    for method, p in stream:
        event = books.feed(str(method), p)
        if event is not None:
            writes += folder.feed(event)
    writes += folder.finish(books, completed=books.done)
    step = 1
    for w in writes:
        assert w.type in _session.EVENT_TYPES and isinstance(w.data, dict)
        assert w.step >= step
        step = w.step
        _session.encode_event({"v": 1, "seq": 0, "ts": 0, "type": w.type, "turn": 1, "step": w.step, "data": w.data})
    figures.count("fuzzing", "notifications fuzzed through the step fold", len(stream))


# -- recorded conversations, mutated, through the whole core ----------------------------------

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TRANSCRIPTS = sorted(glob.glob(os.path.join(ROOT, "fixtures", "*", "*.frames.jsonl")))
ODD_VALUES = [None, True, False, 0, -1, 1.5, 2**70, "", "x", "🙂", [], [1, "a"], {}, {"a": {"b": None}}]


def recorded(path: str) -> List[Tuple[str, Dict[str, Any]]]:
    with open(path, encoding="utf-8") as fh:
        return [(line["dir"], line["frame"]) for line in map(json.loads, fh) if line]


def paths(value: Any, at: Tuple[Any, ...] = ()) -> List[Tuple[Any, ...]]:
    """Every place inside a frame a mutation can hit."""
    found = [at]
    if isinstance(value, dict):
        for key, inner in value.items():
            found += paths(inner, at + (key,))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            found += paths(inner, at + (index,))
    return found


def mutate(frame: Dict[str, Any], rng: random.Random) -> Any:
    """The frame with one place deleted, retyped or replaced by an odd value."""
    frame = copy.deepcopy(frame)
    where = rng.choice(paths(frame))
    if not where:
        return rng.choice(ODD_VALUES + [frame])
    parent = frame
    for step in where[:-1]:
        parent = parent[step]
    key = where[-1]
    if isinstance(parent, dict) and rng.random() < 0.3:
        del parent[key]
    elif rng.random() < 0.5:
        parent[key] = rng.choice(ODD_VALUES)
    else:
        parent[key] = str(parent[key]) if not isinstance(parent[key], str) else len(parent[key])
    return frame


def thread_and_turn(frames: List[Tuple[str, Dict[str, Any]]]) -> Tuple[Optional[str], Optional[str]]:
    for direction, frame in frames:
        if direction == "in" and frame.get("method") == "turn/started":
            return frame["params"]["threadId"], frame["params"]["turn"]["id"]
    return None, None


def test_fuzz_has_recorded_conversations():
    assert len(TRANSCRIPTS) >= 20


@FUZZ
@given(st.sampled_from(TRANSCRIPTS), st.randoms(use_true_random=False), st.integers(1, 5000), st.floats(0.0, 0.5))
def test_fuzz_recorded_conversations_mutated_through_the_whole_core(path, rng, chunk, rate):
    # Real frames from codex, some mutated and some lines of garbage between
    # them, chunked at random: bytes → RPC core → turn fold → step fold.
    frames = recorded(path)
    for _ in range(ROUNDS):
        play_mutated(frames, rng, chunk, rate)


#: Conversations played per example (each mutated afresh).
ROUNDS = 2


def play_mutated(frames: List[Tuple[str, Dict[str, Any]]], rng: random.Random, chunk: int, rate: float) -> None:
    thread_id, turn_id = thread_and_turn(frames)
    conn = _rpc.Connection(max_frame_bytes=64 * 1024, unclaimed_threads=2, unclaimed_bytes=4096)
    if thread_id is not None:
        conn.claim(thread_id)
    books = _turnfold.TurnFold(turn_id)
    folder = _stepfold.StepFold(step=1, model="m", new_id=lambda: "id")
    writes: List[_stepfold.Write] = []
    fed = 0

    def handle(events: List[_rpc.Incoming]) -> None:
        for event in events:
            assert isinstance(event, EVENTS)
            if isinstance(event, _rpc.Malformed):  # handled all the same: what it is
                event = event.event
            if isinstance(event, _rpc.Notification) and event.route == thread_id:
                folded = books.feed(event.method, event.params)
                if folded is not None:
                    writes.extend(folder.feed(folded))
            elif isinstance(event, _rpc.ServerRequest):
                assert conn.decline(event.id) is not None  # every request is answerable

    for direction, frame in frames:
        if direction == "out":
            if "method" in frame and "id" in frame:
                conn.request(frame["method"], frame.get("params"))
            continue
        data = line_of(mutate(frame, rng) if rng.random() < rate else frame) + b"\n"
        if rng.random() < rate / 4:
            data += rng.choice([b"garbage", b"{", b"[1]", b"\xff\xfe", b'{"id":null}', b"x" * 70000]) + b"\n"
        for start in range(0, len(data), chunk):
            handle(conn.receive(data[start : start + chunk]))
        fed += 1
    handle(conn.receive_eof())
    writes += folder.finish(books, completed=books.done)
    for w in writes:
        assert w.type in _session.EVENT_TYPES
        _session.encode_event({"v": 1, "seq": 0, "ts": 0, "type": w.type, "turn": 1, "step": w.step, "data": w.data})
    figures.count("fuzzing", "recorded codex frames fuzzed (mutated) through the whole core", fed)
