"""A session log of any length (issue 29): read back in one streaming pass,
its events read from the file when they are used.

What is checked: every way of reading a log (``read_log``, ``iter_log``,
``SessionLog.open``) accepts and refuses exactly what the former
read-everything parser did, with the same message at the same line, also
when lines straddle reads; ``LogEvents`` is a read-only sequence equal to the
list of the events; reading back holds memory that does not grow with the
log (counted with ``tracemalloc``, never timed); a file changed behind a
reader is an error, not other events; what resuming needs (next turn,
header, knobs) is folded as the log is read and appended to.
"""

from __future__ import annotations

import functools
import gc
import json
import logging
import os
import random
import tracemalloc
from typing import Any, List, Tuple

import pytest

from codexmini import LogEvents, LogStream, SessionLogError, iter_log
from codexmini import _session as session_mod
from codexmini._session import INDEX_STRIDE, SessionLog, encode_event, read_log


def line(seq: int, type_: str = "turn/start", data: Any = None, turn: Any = None) -> str:
    return encode_event({"v": 1, "seq": seq, "ts": 1.0, "type": type_, "turn": turn, "step": None, "data": data or {}})


def write(path, n: int, text: str = "") -> bytes:
    """A log of ``n`` events at ``path`` (each with ``text`` in its data); its bytes."""
    raw = "".join(line(i, data={"i": i, "text": text}) for i in range(n)).encode("utf-8")
    path.write_bytes(raw)
    return raw


@pytest.fixture
def small_reads(monkeypatch):
    """Reads of a few bytes: every line straddles reads, every boundary is met."""
    monkeypatch.setattr(session_mod, "READ_FIRST", 7)
    monkeypatch.setattr(session_mod, "READ_MAX", 50)


# -- the oracle: the read-everything parser these passes replace -------------------


def oracle(path: str, raw: bytes) -> Tuple[Any, ...]:
    """What the former ``_parse`` gave for ``raw``: ("ok", events, warnings,
    end) or ("error", message, line)."""
    lines = raw.split(b"\n")
    tail = lines.pop()
    events: List[Any] = []
    warnings: List[str] = []
    offset = 0
    for number, text in enumerate(lines, start=1):
        try:
            event = json.loads(text.decode("utf-8"))
        except ValueError as exc:
            if number == len(lines) and not tail:
                warnings.append(f"{path}:{number}: dropped a torn last line: invalid JSON ({exc})")
                return ("ok", events, warnings, offset)
            return ("error", f"{path}:{number}: corrupt session log line: {exc}", number)
        problem = old_check(event, len(events))
        if problem is not None:
            return ("error", f"{path}:{number}: bad session log event: {problem}", number)
        events.append(event)
        offset += len(text) + 1
    if tail:
        warnings.append(f"{path}:{len(lines) + 1}: dropped a torn last line: no trailing newline")
    return ("ok", events, warnings, offset)


def old_check(event: Any, expected_seq: int) -> Any:
    if not isinstance(event, dict):
        return f"not a JSON object ({type(event).__name__})"
    missing = [k for k in ("v", "seq", "ts", "type", "turn", "step", "data") if k not in event]
    if missing:
        return "missing " + ", ".join(missing)
    if event["v"] != 1:
        return f"unsupported log version {event['v']!r}"
    if event["seq"] != expected_seq or isinstance(event["seq"], bool):
        return f"seq {event['seq']!r} where {expected_seq} was expected"
    if not isinstance(event["data"], dict):
        return "data is not an object"
    return None


def outcome_of_read_log(path: str) -> Tuple[Any, ...]:
    try:
        result = read_log(path)
    except SessionLogError as exc:
        return ("error", str(exc), exc.line)
    return ("ok", list(result.events), result.warnings, None)


def outcome_of_iter_log(path: str) -> Tuple[Any, ...]:
    stream = iter_log(path)
    events = []
    try:
        for event in stream:
            events.append(event)
    except SessionLogError as exc:
        assert len(events) == exc.line - 1  # every event before the bad line was yielded
        return ("error", str(exc), exc.line)
    return ("ok", events, stream.warnings, None)


def outcome_of_open(path: str) -> Tuple[Any, ...]:
    try:
        log = SessionLog.open(path)
    except SessionLogError as exc:
        return ("error", str(exc), exc.line)
    with log:
        return ("ok", list(log.events), log.warnings, os.path.getsize(path))


CORRUPTIONS = [
    b"",
    b"{",
    b"\n",
    b" ",
    b"\xc3",
    b"\xef\xbb\xbf",
    b"[1]",
    b"}{",
    b'"x"',
    b"  \n",
    b'{"v":1}',
    b"\t",
]


def variants(raw: bytes, rng: random.Random, count: int) -> List[bytes]:
    """``raw`` damaged in ``count`` random ways: bytes put in, cut out, replaced; the end cut off."""
    out = [raw, raw[:-1], raw + b"{", raw + b"\n", raw + b" \n", raw + b"x", b"\n" + raw, raw.replace(b"\n", b" \n", 1)]
    for _ in range(count):
        at = rng.randrange(len(raw) + 1)
        way = rng.randrange(4)
        if way == 0:
            out.append(raw[:at] + rng.choice(CORRUPTIONS) + raw[at:])
        elif way == 1:
            out.append(raw[:at] + raw[at + rng.randrange(1, 30) :])
        elif way == 2:
            out.append(raw[:at])
        else:
            out.append(raw[:at] + rng.choice(CORRUPTIONS) + raw[at + 1 :])
    return out


def test_every_reader_accepts_and_refuses_what_the_former_parser_did(tmp_path, small_reads, caplog):
    # Same events, same warnings, same message at the same line; and open()
    # cuts a torn tail back to where the former parser said the good lines end.
    base = "".join(
        [
            line(0, "session/header", {"reason": "initial"}),
            line(1, "turn/start", {}, turn=1),
            line(2, "user/message", {"content": [{"type": "text", "text": "é — ✓ \u2028"}]}, turn=1),
            line(3, "turn/end", {"reason": "completed"}, turn=1),
            line(4, "model/choice", {"model": "m"}),
        ]
    ).encode("utf-8")
    rng = random.Random(29)
    path = tmp_path / "s.jsonl"
    checked = {"ok": 0, "error": 0, "torn": 0}
    with caplog.at_level(logging.CRITICAL, logger="codexmini.session"):
        for raw in variants(base, rng, 400):
            expected = oracle(str(path), raw)
            for read in (outcome_of_read_log, outcome_of_iter_log):
                path.write_bytes(raw)
                got = read(str(path))
                assert got[:3] == expected[:3], raw
            path.write_bytes(raw)
            got = outcome_of_open(str(path))
            assert got[:3] == expected[:3], raw
            if expected[0] == "ok":
                assert got[3] == expected[3] and path.read_bytes() == raw[: expected[3]]  # the torn tail cut
                checked["torn" if expected[2] else "ok"] += 1
            else:
                assert path.read_bytes() == raw  # nothing cut, nothing appended
                checked["error"] += 1
    assert min(checked.values()) > 20, checked  # every kind of outcome was met, many times


@pytest.mark.parametrize("reads", ["small", "default"])
def test_lines_longer_than_a_read_are_read_whole(tmp_path, monkeypatch, reads):
    if reads == "small":
        monkeypatch.setattr(session_mod, "READ_FIRST", 3)
        monkeypatch.setattr(session_mod, "READ_MAX", 11)
    texts = ["x" * n for n in (0, 1, 100, session_mod.READ_MAX * 3 + 5, 7)]
    path = tmp_path / "s.jsonl"
    path.write_text("".join(line(i, data={"t": t}) for i, t in enumerate(texts)), encoding="utf-8")
    assert [e["data"]["t"] for e in iter_log(path)] == texts
    events = read_log(path).events
    assert [e["data"]["t"] for e in events] == texts
    assert [events[i]["data"]["t"] for i in (3, 4, 0, -2)] == [texts[3], texts[4], texts[0], texts[3]]
    assert [e["data"]["t"] for e in reversed(events)] == texts[::-1]


@pytest.mark.skipif(not os.path.exists("/proc/self/mem"), reason="needs Linux's /proc/self/mem")
def test_a_read_that_fails_is_a_session_log_error_naming_the_path():
    # /proc/self/mem opens for reading and fails to read at offset 0 (EIO): a
    # real read fault, after the open.
    for read in (read_log, lambda p: list(iter_log(p))):
        with pytest.raises(
            SessionLogError, match=r"^/proc/self/mem: cannot read the session log: .*Input/output"
        ) as info:
            read("/proc/self/mem")
        assert isinstance(info.value.__cause__, OSError) and info.value.path == "/proc/self/mem"


# -- iter_log ------------------------------------------------------------------------


def test_iter_log_yields_each_event_and_ends_with_the_torn_line_warned(tmp_path, caplog):
    path = tmp_path / "s.jsonl"
    path.write_text(line(0) + line(1) + '{"v":1,"seq":2', encoding="utf-8")
    stream = iter_log(path)
    assert isinstance(stream, LogStream) and iter(stream) is stream and stream.path == str(path)
    assert next(stream)["seq"] == 0
    assert stream.warnings == []  # not known before the end
    with caplog.at_level(logging.WARNING, logger="codexmini.session"):
        assert [e["seq"] for e in stream] == [1]
    assert stream.warnings == [f"{path}:3: dropped a torn last line: no trailing newline"]
    assert stream.warnings[0] in caplog.text
    assert stream._file is None or stream._file.closed  # closed at the end
    with pytest.raises(StopIteration):
        next(stream)


def test_iter_log_opens_the_file_at_the_call(tmp_path):
    with pytest.raises(SessionLogError, match=r"nope\.jsonl: cannot read the session log: .*No such file") as info:
        iter_log(tmp_path / "nope.jsonl")
    assert isinstance(info.value.__cause__, FileNotFoundError)
    del info
    gc.collect()  # the stream that failed to open is finalized here, quietly


def test_iter_log_closes_its_file_when_closed_left_or_dropped(tmp_path):
    path = tmp_path / "s.jsonl"
    write(path, 3)
    with iter_log(path) as stream:
        file = stream._file
        assert next(stream)["seq"] == 0
    try:
        assert file.closed and stream._file is None
    finally:
        file.close()  # (closed already, unless that failed: then not left for the collector)
    assert list(stream) == []  # closed: nothing more
    stream.close()  # idempotent

    unstarted = iter_log(path)
    file = unstarted._file
    del unstarted
    gc.collect()
    assert file.closed

    broken = tmp_path / "b.jsonl"
    broken.write_text(line(0) + "{\n" + line(1), encoding="utf-8")
    stream = iter_log(broken)
    file = stream._file
    with pytest.raises(SessionLogError, match=":2: corrupt"):
        list(stream)
    assert file.closed


# -- LogEvents: a read-only sequence over the file ---------------------------------


def test_log_events_is_a_sequence_equal_to_the_list_of_events(tmp_path):
    path = tmp_path / "s.jsonl"
    n = INDEX_STRIDE * 3 + 5
    write(path, n)
    expected = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    events = read_log(path).events
    assert isinstance(events, LogEvents)
    assert len(events) == n and bool(events) and events == expected and expected == events
    assert list(events) == expected and events == read_log(path).events
    assert events != expected[:-1] and events != expected[::-1] and events != (tuple(expected))
    assert (events == 5) is False and events.__eq__(5) is NotImplemented
    for i in (0, 1, INDEX_STRIDE - 1, INDEX_STRIDE, INDEX_STRIDE + 1, n - 1, -1, -n):
        assert events[i] == expected[i]
    for bad in (n, -n - 1):
        with pytest.raises(IndexError, match="session log index out of range"):
            events[bad]
    for cut in (
        slice(None),
        slice(3, 40),
        slice(INDEX_STRIDE, None, 7),
        slice(None, None, -1),
        slice(-3, 2, -5),
        slice(50, 10),
        slice(None, None, -INDEX_STRIDE - 1),
    ):
        part = events[cut]
        assert isinstance(part, LogEvents) and part == expected[cut] and len(part) == len(expected[cut])
        assert list(part) == expected[cut]
        assert list(reversed(part)) == expected[cut][::-1]
    assert events[10:20][2:5] == expected[12:15]
    assert list(reversed(events)) == expected[::-1]
    assert events.index(expected[40]) == 40 and events.index(expected[40], 30, 50) == 40
    assert events.index(expected[0]) == 0
    with pytest.raises(ValueError, match="is not in the session log"):
        events.index(expected[40], 41)
    assert events.count(expected[7]) == 1 and expected[7] in events and {"x": 1} not in events
    assert repr(events) == f"<LogEvents of {path}: {n} event(s)>"
    with pytest.raises(TypeError):
        hash(events)
    assert not read_log(path).events[n:]


def test_log_events_of_an_empty_log(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"")
    events = read_log(path).events
    assert len(events) == 0 and not events and events == [] and list(events) == [] and list(reversed(events)) == []


def test_read_log_events_are_those_there_were(tmp_path):
    # A writer appending afterwards changes nothing: the events are a snapshot.
    path = tmp_path / "s.jsonl"
    with SessionLog.open(path) as log:
        log.append("turn/start", {}, turn=1)
        result = read_log(path)
        log.append("turn/end", {"reason": "completed"}, turn=1)
        assert [e["type"] for e in result.events] == ["turn/start"]
        assert [e["type"] for e in log.events] == ["turn/start", "turn/end"]


def test_log_events_refuses_a_file_changed_since_it_was_read(tmp_path):
    path = tmp_path / "s.jsonl"
    raw = write(path, 40)
    events = read_log(path).events

    path.write_bytes(raw[:-10])  # truncated, same file: the last line cut
    with pytest.raises(
        SessionLogError,
        match=r"s\.jsonl:40: the session log changed since it was read \(it ends in the middle of a line\): event 39 is not there",
    ) as info:
        list(events)
    assert (info.value.line, info.value.path) == (40, str(path))
    assert events[0]["seq"] == 0  # what is still there reads

    path.write_bytes(b"".join(raw.splitlines(keepends=True)[:38]))  # whole lines cut
    with pytest.raises(
        SessionLogError, match=r":39: the session log changed since it was read \(it is shorter\)"
    ) as info:
        list(events)
    assert info.value.line == 39

    # The last two lines made one of the same length, and event 39 appended
    # after it: the index's end is reached at event 39, which is not read from
    # past it.
    lines = raw.splitlines(keepends=True)
    merged = line(38, data={"pad": ""})
    merged = line(38, data={"pad": "x" * (len(lines[38]) + len(lines[39]) - len(merged.encode()))})
    path.write_bytes(b"".join(lines[:38]) + merged.encode() + line(39).encode())
    assert len(merged.encode()) == len(lines[38]) + len(lines[39])
    with pytest.raises(SessionLogError, match=r":40: the session log changed since it was read \(it is shorter\)"):
        list(events)

    lines = raw.splitlines(keepends=True)
    lines[7] = lines[8]
    path.write_bytes(b"".join(lines))  # rewritten in place
    with pytest.raises(SessionLogError, match=":8: bad session log event: seq 8 where 7 was expected"):
        events[7]

    os.rename(path, tmp_path / "elsewhere.jsonl")
    with pytest.raises(SessionLogError, match="cannot read the session log: .*No such file"):
        events[0]
    assert len(events) == 40  # counting needs no file

    write(path, 40)  # another file at the path, with the same bytes
    with pytest.raises(SessionLogError, match="is not the file that was read any more"):
        list(events)


# -- SessionLog.events --------------------------------------------------------------


def test_session_log_events_are_read_from_the_file_the_appended_ones_included(tmp_path):
    path = tmp_path / "s.jsonl"
    write(path, 5)
    with SessionLog.open(path) as log:
        before = log.events[:]
        appended = log.append("turn/start", {"tuple": (1, 2)}, turn=1)
        assert appended["data"] == {"tuple": (1, 2)}  # the event as given ...
        assert log.events[-1]["data"] == {"tuple": [1, 2]}  # ... and as logged: the JSON
        assert len(before) == 5 and len(log.events) == 6
        live = log.events
        seen = []
        for event in live:  # iterating sees the events there were when it began
            seen.append(event["seq"])
            if len(seen) == 1:
                log.append("turn/end", {"reason": "completed"}, turn=1)
        assert seen == [0, 1, 2, 3, 4, 5] and len(live) == 7
        assert [e["seq"] for e in log.events[-2:]] == [5, 6]
    # Closed: read by the path again.
    assert [e["seq"] for e in log.events] == list(range(7)) and log.events == read_log(path).events


def test_session_log_events_after_close_need_the_same_file(tmp_path):
    path = tmp_path / "s.jsonl"
    with SessionLog.open(path) as log:
        log.append("turn/start", {})
    os.rename(path, tmp_path / "elsewhere.jsonl")
    write(path, 1)
    with pytest.raises(SessionLogError, match="is not the file that was read any more"):
        log.events[0]
    assert len(log.events) == 1


def test_session_log_events_read_through_a_writer_closed_mid_iteration(tmp_path, small_reads):
    path = tmp_path / "s.jsonl"
    write(path, INDEX_STRIDE * 2)
    log = SessionLog.open(path)
    events = iter(log.events)
    assert next(events)["seq"] == 0
    log.close()
    assert [e["seq"] for e in events] == list(range(1, INDEX_STRIDE * 2))


def test_session_log_never_opened_has_no_events_to_read(tmp_path):
    log = SessionLog(tmp_path / "never.jsonl")
    assert len(log.events) == 0 and list(log.events) == [] and log.next_turn == 1 and not log.has_header


def test_the_offset_index_holds_every_strided_event(tmp_path):
    path = tmp_path / "s.jsonl"
    raw = write(path, INDEX_STRIDE * 2 + 1)
    with SessionLog.open(path) as log:
        starts = [0] + [i + 1 for i, byte in enumerate(raw) if byte == ord("\n")]
        assert list(log._index.marks) == starts[: INDEX_STRIDE * 3 : INDEX_STRIDE]
        for _ in range(INDEX_STRIDE):
            log.append("turn/start", {})
        assert len(log._index.marks) == 4 and log._index.end == os.path.getsize(path)
        assert log._index.marks[3] == starts[-1] + sum(
            len(x) + 1 for x in path.read_bytes()[starts[-1] :].split(b"\n")[: INDEX_STRIDE - 1]
        )
        assert log.events[INDEX_STRIDE * 3]["seq"] == INDEX_STRIDE * 3


# -- what resuming needs, folded as the log is read and appended to -------------------


def test_open_folds_the_next_turn_the_header_and_the_knobs(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text(
        "".join(
            [
                line(0, "session/header", {"reason": "initial"}),
                line(1, "model/choice", {"model": "gpt-a"}),
                line(2, "turn/start", turn=3),
                line(3, "model/choice", {"model": ""}),  # invalid: gpt-a stands
                line(4, "sandbox/mode", {"mode": "danger-full-access"}),
                line(5, "turn/end", {"reason": "completed"}, turn=True),  # a bool is no turn
                line(6, "turn/start", turn=2),
            ]
        ),
        encoding="utf-8",
    )
    with SessionLog.open(path) as log:
        assert (log.next_turn, log.has_header) == (4, True)
        assert log._knobs.model == "gpt-a" and log._knobs.permissions().sandbox == "danger-full-access"
        assert len(log._knobs) == 3
        log.append("model/choice", {"model": "gpt-b"})
        log.append("turn/start", {}, turn=9)
        log.append("turn/start", {}, turn=False)
        assert (log.next_turn, log._knobs.model) == (10, "gpt-b")
    with SessionLog.open(tmp_path / "new.jsonl") as log:
        assert (log.next_turn, log.has_header, len(log._knobs)) == (1, False, 0)
        log.append_many([("model/choice", {"model": "m"}, None, None), ("turn/start", {}, 5, None)])
        assert (log._knobs.model, log.next_turn, log.has_header) == ("m", 6, False)
        log.append("session/header", {"reason": "initial"})
        assert log.has_header
    with SessionLog.open(tmp_path / "new.jsonl") as log:
        assert (log._knobs.model, log.next_turn, log.has_header) == ("m", 6, True)
    headless = tmp_path / "headless.jsonl"
    headless.write_text(line(0, "turn/start", turn=1) + line(1, "step/start", turn=1), encoding="utf-8")
    with SessionLog.open(headless) as log:
        assert (log.has_header, log.next_turn) == (False, 2)


# -- memory: counted, not timed ------------------------------------------------------


def peak_of(fn) -> int:
    """The peak of memory ``fn()`` allocates (tracemalloc), ``fn``'s result dropped."""
    gc.collect()
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_reading_a_log_back_holds_memory_that_does_not_grow_with_it(tmp_path, monkeypatch):
    # A log four times as long costs no more to open, read, stream or go
    # through: the reads are the same size, the events are not kept, and the
    # offset index grows by 8 bytes every INDEX_STRIDE events.
    monkeypatch.setattr(session_mod, "READ_FIRST", 4 << 10)
    monkeypatch.setattr(session_mod, "READ_MAX", 16 << 10)
    n = 1000
    text = "é — " * 60
    short, long_ = tmp_path / "short.jsonl", tmp_path / "long.jsonl"
    size = len(write(short, n, text))
    write(long_, 4 * n, text)
    assert size > 8 * session_mod.READ_MAX  # both logs take many reads

    def opened(path):
        SessionLog.open(path).close()

    def read(path):
        read_log(path)

    def read_every(path):
        for _ in read_log(path).events:
            pass

    def streamed(path):
        for _ in iter_log(path):
            pass

    SessionLog.open(short).close()  # imports (the knobs' module) before counting
    for way in (opened, read, read_every, streamed):
        peaks = [peak_of(functools.partial(way, short)), peak_of(functools.partial(way, long_))]
        assert peaks[1] - peaks[0] < 3 * n * 8 // INDEX_STRIDE + 4096, (way.__name__, peaks)
        assert peaks[1] < 6 * session_mod.READ_MAX, (way.__name__, peaks)  # a few reads: never the log (> 1 MB)
    assert os.path.getsize(long_) > 1 << 20


def test_the_knobs_fold_keeps_one_entry_of_each_kind(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text(
        "".join(line(i, "model/choice", {"model": f"m{i}"}) for i in range(300)),
        encoding="utf-8",
    )
    with SessionLog.open(path) as log:
        assert log._knobs.model == "m299" and len(log._knobs) == 300 and len(log._knobs._last) == 1
