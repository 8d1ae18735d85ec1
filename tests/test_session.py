from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from codexmini import SessionLogError
from codexmini import _session as session_mod
from codexmini._jsontext import Encoder
from codexmini._prompt import COMPACTION, Transcript, derive_messages, serialize
from codexmini._session import (
    EVENT_TYPES,
    LOG_VERSION,
    READ_VERSIONS,
    SessionLog,
    encode_event,
    has_header,
    iter_log,
    next_turn_number,
    read_log,
)

REPO = Path(__file__).resolve().parents[1]


class Clock:
    def __init__(self, start=1700000000.0):
        self.now = start

    def __call__(self):
        self.now += 0.0012345
        return self.now


def lines_of(path):
    return Path(path).read_bytes().decode("utf-8").splitlines(keepends=True)


def good_line(seq, type_="turn/start", data=None):
    return encode_event({"v": 1, "seq": seq, "ts": 1.0, "type": type_, "turn": None, "step": None, "data": data or {}})


# -- writing ------------------------------------------------------------------


def test_session_log_append_writes_one_compact_line(tmp_path):
    path = tmp_path / "sub" / "dir" / "s.jsonl"
    with SessionLog.open(path, clock=lambda: 12.34567) as log:
        event = log.append(
            "user/message",
            {"id": "u", "content": [{"type": "text", "text": "é"}], "source": {"kind": "user"}},
            turn=1,
            step=2,
        )
    assert event == {
        "v": 2,
        "seq": 0,
        "ts": 12.346,
        "type": "user/message",
        "turn": 1,
        "step": 2,
        "data": {"id": "u", "content": [{"type": "text", "text": "é"}], "source": {"kind": "user"}},
    }
    text = path.read_text(encoding="utf-8")
    assert text == (
        '{"v":2,"seq":0,"ts":12.346,"type":"user/message","turn":1,"step":2,'
        '"data":{"id":"u","content":[{"type":"text","text":"é"}],'
        '"source":{"kind":"user"}}}\n'
    )
    assert log.closed


def test_session_log_round_trip(tmp_path):
    path = tmp_path / "s.jsonl"
    clock = Clock()
    with SessionLog.open(path, clock=clock) as log:
        log.append("session/header", {"reason": "initial"})
        log.append("turn/start", {}, turn=1)
        log.append("turn/end", {"reason": "completed"}, turn=1)
        written = list(log.events)
    result = read_log(path)
    assert result.events == written
    assert result.warnings == []
    assert [e["seq"] for e in written] == [0, 1, 2]
    assert all(e["ts"] == round(e["ts"], 3) for e in written)
    assert written[0]["ts"] < written[1]["ts"]


def test_session_log_reopen_continues_seq(tmp_path):
    path = tmp_path / "s.jsonl"
    with SessionLog.open(path) as log:
        log.append("turn/start", {}, turn=1)
        log.append("turn/end", {"reason": "completed"}, turn=1)
    with SessionLog.open(path) as log:
        assert len(log.events) == 2
        assert log.append("turn/start", {}, turn=2)["seq"] == 2
        assert log.warnings == []
    assert [e["seq"] for e in read_log(path).events] == [0, 1, 2]


def test_session_log_rejects_unknown_type_and_non_dict_data(tmp_path):
    with SessionLog.open(tmp_path / "s.jsonl") as log:
        with pytest.raises(SessionLogError, match="unknown session log event type 'user/msg'"):
            log.append("user/msg", {})
        with pytest.raises(SessionLogError, match="must be a dict"):
            log.append("turn/start", [])
        assert log.events == []
    assert (tmp_path / "s.jsonl").read_bytes() == b""


@pytest.mark.parametrize(
    "data, problem",
    [
        ({"x": object()}, "Object of type object is not JSON serializable"),
        ({"x": {1, 2}}, "Object of type set is not JSON serializable"),
        ({"x": b"raw"}, "Object of type bytes is not JSON serializable"),
        ({"x": {("a",): 1}}, "keys must be str, int, float, bool or None, not tuple"),
        ({"x": "a lone \ud800"}, "'utf-8' codec can't encode character '\\\\ud800'"),  # JSON, but no UTF-8
    ],
)
def test_session_log_data_that_is_not_json_is_a_session_log_error_and_writes_nothing(tmp_path, data, problem):
    with SessionLog.open(tmp_path / "s.jsonl") as log:
        log.append("turn/start", {})
        size = (tmp_path / "s.jsonl").stat().st_size
        with pytest.raises(SessionLogError, match=f"tool/result event is not JSON or not UTF-8: {problem}") as caught:
            log.append_many([("tool/call", {"callId": "c"}, 1, 1), ("tool/result", data, 1, 1)])
        assert isinstance(caught.value.__cause__, (TypeError, UnicodeEncodeError))
        # Nothing of the batch is written or kept, and the log goes on.
        assert (tmp_path / "s.jsonl").stat().st_size == size and len(log.events) == 1
        log.append("turn/end", {"reason": "completed"})
    assert [e["seq"] for e in read_log(tmp_path / "s.jsonl").events] == [0, 1]


def test_session_log_circular_data_is_refused_and_the_encoder_recovers(tmp_path):
    # The encoder is built once: a failure inside an object must not leave it
    # believing that object is still open (the next event holding it would
    # then be refused as circular).
    loop = {"a": 1}
    loop["self"] = loop
    inner = {"ok": 1, "bad": object()}
    with SessionLog.open(tmp_path / "s.jsonl") as log:
        with pytest.raises(SessionLogError, match="Circular reference detected"):
            log.append("turn/start", {"loop": loop})
        with pytest.raises(SessionLogError, match="not JSON serializable"):
            log.append("turn/start", {"inner": inner})
        del inner["bad"]
        log.append("turn/start", {"inner": inner, "again": [inner]})
    assert read_log(tmp_path / "s.jsonl").events[0]["data"] == {"inner": {"ok": 1}, "again": [{"ok": 1}]}


def test_encode_event_is_json_dumps_compact_unescaped():
    # The encoder itself is tested in test_jsontext; this is the line format.
    value = {"type": "user/message", "text": 'é — ✓ \u2028 "q" \\ \n', "n": [1, 2.5, None]}
    assert encode_event(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n"


def test_session_log_append_after_close_fails(tmp_path):
    log = SessionLog.open(tmp_path / "s.jsonl")
    log.close()
    log.close()  # idempotent
    with pytest.raises(SessionLogError, match="closed"):
        log.append("turn/start", {})


def test_session_log_listener_receives_exact_line(tmp_path):
    path = tmp_path / "s.jsonl"
    seen = []
    with SessionLog.open(path) as log:
        unsubscribe = log.subscribe(lambda event, line: seen.append((event, line)))
        a = log.append("turn/start", {"note": "ü"}, turn=1)
        b = log.append("step/start", {}, turn=1, step=1)
        unsubscribe()
        log.append("step/end", {"reason": "completed"}, turn=1, step=1)
    assert [e for e, _ in seen] == [a, b]
    assert "".join(line for _, line in seen) == "".join(lines_of(path)[:2])
    assert seen[0][1].endswith("\n") and json.loads(seen[0][1]) == a


def test_session_log_failing_listener_does_not_fail_append(tmp_path, caplog):
    seen = []

    def bad(event, line):
        raise RuntimeError("observer broke")

    with SessionLog.open(tmp_path / "s.jsonl") as log:
        log.subscribe(bad)
        log.subscribe(lambda e, line: seen.append(e["seq"]))
        with caplog.at_level(logging.ERROR, logger="codexmini.session"):
            log.append("turn/start", {})
    assert seen == [0]
    assert "listener" in caplog.text
    assert len(read_log(tmp_path / "s.jsonl").events) == 1


def test_session_log_fsync_per_event(tmp_path, monkeypatch):
    calls = []
    real = os.fsync
    monkeypatch.setattr(session_mod.os, "fsync", lambda fd: (calls.append(fd), real(fd)))
    with SessionLog.open(tmp_path / "a.jsonl") as log:
        log.append("turn/start", {})
    assert calls == []
    with SessionLog.open(tmp_path / "b.jsonl", fsync=True) as log:
        log.append("turn/start", {})
        log.append("turn/end", {"reason": "completed"})
    assert len(calls) == 2


def test_event_types_log_version():
    # 2 since session/compaction and the cut tool outputs; 1 still reads.
    assert LOG_VERSION == 2
    assert READ_VERSIONS == (1, 2)


# -- reading back ---------------------------------------------------------------


def test_read_log_empty_file(tmp_path):
    (tmp_path / "s.jsonl").write_bytes(b"")
    assert read_log(tmp_path / "s.jsonl") == ([], [])


def test_read_log_drops_unterminated_last_line(tmp_path, caplog):
    path = tmp_path / "s.jsonl"
    path.write_text(good_line(0) + good_line(1) + '{"v":1,"seq":2,"ts":1.0,"ty', encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="codexmini.session"):
        result = read_log(path)
    assert [e["seq"] for e in result.events] == [0, 1]
    assert len(result.warnings) == 1
    assert f"{path}:3" in result.warnings[0] and "torn" in result.warnings[0]
    assert result.warnings[0] in caplog.text


def test_read_log_drops_complete_json_without_newline(tmp_path):
    # The newline is part of the one write; without it the append never finished.
    path = tmp_path / "s.jsonl"
    path.write_text(good_line(0) + good_line(1).rstrip("\n"), encoding="utf-8")
    result = read_log(path)
    assert len(result.events) == 1 and "no trailing newline" in result.warnings[0]


def test_read_log_drops_invalid_terminated_last_line(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(good_line(0).encode() + b'{"v":1,"seq":1,"t\xc3\n')
    result = read_log(path)
    assert len(result.events) == 1
    assert f"{path}:2" in result.warnings[0] and "invalid JSON" in result.warnings[0]


def test_session_log_open_truncates_torn_tail(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text(good_line(0) + good_line(1) + '{"v":1,"seq":2,"ts"', encoding="utf-8")
    with SessionLog.open(path) as log:
        assert len(log.events) == 2 and len(log.warnings) == 1
        assert path.read_text(encoding="utf-8") == good_line(0) + good_line(1)
        log.append("turn/start", {})
    result = read_log(path)
    assert [e["seq"] for e in result.events] == [0, 1, 2] and result.warnings == []


def test_session_log_open_truncates_with_fsync(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(session_mod.os, "fsync", calls.append)
    path = tmp_path / "s.jsonl"
    path.write_text(good_line(0) + "garbage\n", encoding="utf-8")
    with SessionLog.open(path, fsync=True) as log:
        assert len(log.events) == 1
    assert len(calls) == 1
    assert path.read_text(encoding="utf-8") == good_line(0)


def test_read_log_corrupt_middle_line_names_the_line(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text(good_line(0) + "{not json\n" + good_line(1), encoding="utf-8")
    with pytest.raises(SessionLogError, match=r"s\.jsonl:2: corrupt") as info:
        read_log(path)
    assert (info.value.line, info.value.path) == (2, str(path))
    with pytest.raises(SessionLogError):
        SessionLog.open(path)  # and nothing is appended to it
    assert path.read_text(encoding="utf-8").count("\n") == 3


def test_read_log_invalid_line_before_torn_tail_is_an_error(tmp_path):
    # Only the LAST line may be torn: an invalid line followed by a partial
    # one is damage in the middle.
    path = tmp_path / "s.jsonl"
    path.write_text(good_line(0) + "{bad\n" + '{"v":1', encoding="utf-8")
    with pytest.raises(SessionLogError, match=":2:"):
        read_log(path)


@pytest.mark.parametrize(
    "line, problem",
    [
        (good_line(5), "seq 5 where 1 was expected"),
        (good_line(0), "seq 0 where 1 was expected"),
        (good_line(0).replace('"seq":0', '"seq":true'), "seq True where 1 was expected"),
        ('{"v":1,"seq":1,"type":"turn/start"}\n', "missing ts, turn, step, data"),
        (good_line(1).replace('"v":1', '"v":3'), "unsupported log version 3"),
        (good_line(1).replace('"v":1', '"v":[2]'), "unsupported log version [2]"),
        (good_line(1).replace('"data":{}', '"data":[]'), "data is not an object"),
        ("[1,2]\n", "not a JSON object (list)"),
    ],
)
def test_read_log_bad_event_names_the_line(tmp_path, line, problem):
    path = tmp_path / "s.jsonl"
    path.write_text(good_line(0) + line + good_line(2), encoding="utf-8")
    with pytest.raises(SessionLogError) as info:
        read_log(path)
    assert str(info.value) == f"{path}:2: bad session log event: {problem}"
    assert info.value.line == 2


def test_read_log_bad_seq_on_last_line_is_not_torn(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text(good_line(0) + good_line(7), encoding="utf-8")
    with pytest.raises(SessionLogError, match=":2: bad session log event: seq 7"):
        read_log(path)


# -- crash --------------------------------------------------------------------

WRITER = """
import sys
from codexmini._session import SessionLog
log = SessionLog.open(sys.argv[1])
i = 0
while True:
    log.append("tool/result", {"callId": "c%d" % i, "content": [{"type": "text",
               "text": "x" * (i % 7000)}], "isError": False, "status": "completed"}, turn=1)
    i += 1
"""


def test_session_log_survives_sigkill_mid_append(tmp_path):
    path = tmp_path / "crash.jsonl"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            if path.exists() and path.read_bytes().count(b"\n") > 50:
                break
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline, "writer never reached 50 lines"
            time.sleep(0.01)
    finally:
        proc.kill()  # SIGKILL on POSIX: no cleanup, no flush
        proc.wait()
        proc.stderr.close()
    raw = path.read_bytes()
    complete = raw[: raw.rfind(b"\n") + 1].decode("utf-8").splitlines()
    result = read_log(path)
    # Nothing lost but (possibly) the torn last line; every complete line intact.
    assert len(result.events) == len(complete) > 50
    assert len(result.warnings) == (0 if raw.endswith(b"\n") else 1)
    for seq, (event, line) in enumerate(zip(result.events, complete)):
        assert event["seq"] == seq and json.loads(line) == event
        assert event["data"]["callId"] == f"c{seq}"
        assert event["data"]["content"][0]["text"] == "x" * (seq % 7000)
    with SessionLog.open(path) as log:
        assert log.append("turn/end", {"reason": "aborted"})["seq"] == len(complete)
    assert len(read_log(path).events) == len(complete) + 1


# -- queries --------------------------------------------------------------------


def e(type_, data=None, turn=None):
    return {"type": type_, "turn": turn, "data": data or {}}


def test_next_turn_number_starts_at_one_and_continues():
    assert next_turn_number([]) == 1
    assert next_turn_number([e("session/header"), e("sandbox/mode")]) == 1
    assert (
        next_turn_number(
            [
                e("turn/start", turn=1),
                e("turn/end", turn=1),
                e("session/header"),
                e("turn/start", turn=2),
                {"type": "x", "turn": True},
            ]
        )
        == 3
    )


def test_has_header():
    assert not has_header([e("turn/start")])
    assert has_header([e("turn/start"), e("session/header")])


# -- what a reader sees while the log is open, and what the table promises -------------


def test_session_log_each_append_is_visible_to_a_reader_while_open(tmp_path):
    # Another process (a tail -f, the CLI's --json consumer) reads the file,
    # not our buffer: every append must be on disk before append() returns.
    path = tmp_path / "s.jsonl"
    with SessionLog.open(path) as log:
        log.append("turn/start", {}, turn=1)
        assert [e["type"] for e in read_log(path).events] == ["turn/start"]
        log.append("turn/end", {"reason": "completed"}, turn=1)
        with open(path, "rb") as other:
            assert other.read().count(b"\n") == 2


def test_session_log_open_on_a_new_file_has_no_warnings(tmp_path):
    with SessionLog.open(tmp_path / "new.jsonl") as log:
        assert log.warnings == [] and log.events == [] and not log.closed and log.fsync is False


def test_session_log_never_opened_is_closed_and_writes_nothing(tmp_path):
    path = tmp_path / "s.jsonl"
    log = SessionLog(path)
    assert log.closed and log.warnings == [] and log.events == [] and log.fsync is False
    with pytest.raises(SessionLogError, match="is closed"):
        log.append("turn/start", {})
    assert not path.exists()


def test_session_log_torn_line_warning_goes_to_the_codexmini_session_logger(tmp_path, caplog):
    # Users route codexmini's warnings by logger name.
    path = tmp_path / "s.jsonl"
    path.write_text(good_line(0) + '{"v":1', encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        warnings = read_log(path).warnings
    assert [(r.name, r.levelno, r.getMessage()) for r in caplog.records] == [
        ("codexmini.session", logging.WARNING, warnings[0])
    ]


def test_next_turn_number_ignores_boolean_turns():
    assert next_turn_number([{"type": "x", "turn": True}]) == 1
    assert next_turn_number([{"type": "x", "turn": False}, e("turn/start", turn=1)]) == 2


def test_event_types_document_the_data_keys_of_spec_section_5_and_its_extensions():
    assert dict(EVENT_TYPES) == {
        # forkedFrom: a log fork_log started (issue 30)
        "session/header": ("reason", "provider", "model", "codexVersion", "codexminiVersion", "forkedFrom?"),
        "sandbox/mode": ("mode",),
        "approval/policy": ("policy",),
        # The session's model and endpoint (the agent issue),
        # logged like the other knobs; the endpoint's key is never logged.
        "model/choice": ("model",),
        "model/endpoint": ("baseUrl", "wireApi", "apiKeyEnv"),
        "model/reasoning": ("effort", "summary"),
        "turn/start": (),
        "step/start": (),
        "step/end": ("reason",),
        "user/message": ("id", "content", "source"),
        "assistant/message": ("id", "content", "source", "usage?"),
        "tool/call": ("callId", "name", "arguments", "kind"),
        "tool/result": ("callId", "content", "isError", "status", "exitCode?", "approval?", "stepEnd?", "elapsedMs?"),
        "approval/decision": ("method", "itemId", "decision", "by", "unanswered?"),
        "turn/end": ("reason", "error?", "usage?", "abortedBy?", "blocked?"),
        "agent/error": ("message", "code", "cause?"),
        # The durable inbox (issue 30): a message waiting, and those dropped.
        "inbox/queued": ("id", "kind", "content", "source"),
        "inbox/dropped": ("ids", "reason"),
        # Bounded prompts (issue 30): the summary that replaces the prompt before it.
        "session/compaction": ("summary", "fromSeq", "throughSeq", "replacedChars", "usage?"),
    }


RECORDED_LOGS = sorted(REPO.glob("fixtures/*/*.session.jsonl"))


def test_recorded_session_logs_exist():
    assert RECORDED_LOGS, "no fixtures/<version>/*.session.jsonl found"


@pytest.mark.parametrize("path", RECORDED_LOGS, ids=[f"{p.parent.name}/{p.stem}" for p in RECORDED_LOGS])
def test_recorded_session_logs_hold_exactly_the_documented_data_keys(path):
    # The table is what writers go by: the logs codexmini wrote against the
    # real binary have every required key of their type and nothing else.
    for event in read_log(path).events:
        documented = EVENT_TYPES[event["type"]]
        required = {k for k in documented if not k.endswith("?")}
        allowed = required | {k[:-1] for k in documented if k.endswith("?")}
        assert required <= set(event["data"]) <= allowed, (path.name, event["seq"], sorted(event["data"]))


# -- several events in one write, and the session's knobs -------------------------


def test_session_log_append_many_after_earlier_events_continues_seq_in_one_write(tmp_path):
    path = tmp_path / "s.jsonl"
    with SessionLog.open(path, clock=lambda: 5.0) as log:
        log.append("turn/start", {}, turn=1)
        log.append("step/start", {}, turn=1, step=1)
        events = log.append_many(
            [
                ("step/end", {"reason": "segment"}, 1, 1),
                ("step/start", {}, 1, 2),
                ("turn/end", {"reason": "completed"}, 1, None),
            ]
        )
    assert [e["seq"] for e in events] == [2, 3, 4]
    assert lines_of(path)[2:] == [encode_event(event) for event in events]
    assert [e["seq"] for e in read_log(path).events] == [0, 1, 2, 3, 4]


def test_session_log_open_of_a_bare_file_name_creates_no_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with SessionLog.open("here.jsonl") as log:
        log.append("turn/start", {})
        assert sorted(os.listdir(tmp_path)) == ["here.jsonl", "here.jsonl.pid"]  # the writer's pid, while open
    assert sorted(os.listdir(tmp_path)) == ["here.jsonl"]
    assert [e["type"] for e in read_log(str(tmp_path / "here.jsonl")).events] == ["turn/start"]


def test_the_c_encoder_is_the_one_in_use():
    # CPython has _json: events are encoded by the encoder built once (the
    # JSONEncoder fallback, for an interpreter without it, writes the same text).
    assert isinstance(session_mod._encode, Encoder)


@pytest.mark.parametrize("now", [1796138366.4587, 0.1 + 0.2, 1e22, 5, 0, float("nan"), float("inf"), True])
def test_the_written_envelope_is_encode_event_of_the_event(tmp_path, now):
    # append_many writes the envelope itself (the timestamp encoded once a
    # batch): byte for byte what encode_event -- json.dumps -- writes, for any
    # clock and any turn/step a caller passes.
    seen = []
    numbers = [None, 0, 7, -1, 2**70, True, False, 2.5, "3"]
    with SessionLog.open(tmp_path / "s.jsonl", clock=lambda: now) as log:
        log.subscribe(lambda event, line: seen.append((event, line)))
        log.append_many([("step/start", {"é": ["—", {"k": None}]}, turn, step) for turn in numbers for step in numbers])
    assert len(seen) == len(numbers) ** 2
    for event, line in seen:
        assert line == encode_event(event) == json.dumps(event, ensure_ascii=False, separators=(",", ":")) + "\n"
    assert (tmp_path / "s.jsonl").read_text(encoding="utf-8") == "".join(line for _, line in seen)


def test_a_turn_or_step_that_is_not_json_is_a_session_log_error(tmp_path):
    with SessionLog.open(tmp_path / "s.jsonl") as log:
        with pytest.raises(SessionLogError, match="step/start event is not JSON or not UTF-8: Object of type object"):
            log.append_many([("step/start", {}, 1, object())])
        assert log.events == []
    assert (tmp_path / "s.jsonl").read_bytes() == b""


# -- the inbox the log keeps (issue 30) -----------------------------------------------


def test_session_log_folds_the_pending_inbox_on_open_and_on_append(tmp_path):
    path = tmp_path / "inbox.jsonl"
    text = {"content": [{"type": "text", "text": "t"}], "source": {"kind": "user"}}
    with SessionLog.open(path) as log:
        log.append_many(
            [
                ("inbox/queued", {"id": "a", "kind": "followup", **text}, None, None),
                ("inbox/queued", {"id": "b", "kind": "inject", **text}, None, None),
                ("inbox/queued", {"id": "c", "kind": "followup", **text}, None, None),
            ]
        )
        log.append("user/message", {"id": "a", **text}, turn=1, step=1)
        assert [m["id"] for _, m in log.pending] == ["b", "c"]
    with SessionLog.open(path) as log:
        assert [(kind, m["id"]) for kind, m in log.pending] == [("inject", "b"), ("followup", "c")]
        log.append("inbox/dropped", {"ids": ["b"], "reason": "cancel"})
        assert [m["id"] for _, m in log.pending] == ["c"]
        assert log.pending[0][1] == {"id": "c", **text}
    with SessionLog.open(path) as log:
        assert [m["id"] for _, m in log.pending] == ["c"]
        assert log.next_turn == 2  # queued and dropped are outside any turn


def test_session_log_keeps_only_the_pending_messages_however_many_were_delivered(tmp_path):
    # The fold streams: 20 000 messages queued and delivered leave nothing held.
    path = tmp_path / "many.jsonl"
    text = {"content": [{"type": "text", "text": "x" * 100}], "source": {"kind": "user"}}
    with SessionLog.open(path) as log:
        for n in range(20):
            entries = []
            for i in range(n * 1000, (n + 1) * 1000):
                entries.append(("inbox/queued", {"id": f"m{i}", "kind": "followup", **text}, None, None))
                entries.append(("user/message", {"id": f"m{i}", **text}, i + 1, 1))
            log.append_many(entries)
        log.append("inbox/queued", {"id": "last", "kind": "followup", **text})
    with SessionLog.open(path) as log:
        assert len(log._pending) == 1 and [m["id"] for _, m in log.pending] == ["last"]


# -- bounded prompts (issue 30): the fold of the last compaction, an older log -------------


def test_the_log_folds_its_last_compaction_as_it_is_read_and_appended(tmp_path):
    path = str(tmp_path / "s.jsonl")
    with SessionLog.open(path) as log:
        assert log.compaction is None
        log.append("turn/start", {}, turn=1)
        first = log.append(COMPACTION, {"summary": "S1", "fromSeq": 0, "throughSeq": 0, "replacedChars": 5}, turn=1)
        assert log.compaction == first
        log.append(COMPACTION, {"summary": 7, "fromSeq": 1, "throughSeq": 1, "replacedChars": 5}, turn=1)
        assert log.compaction == first  # not a string: not a compaction
    with SessionLog.open(path) as log:
        assert log.compaction == first
    assert [e["type"] for e in read_log(path).events] == ["turn/start", COMPACTION, COMPACTION]
    assert [e["v"] for e in iter_log(path)] == [LOG_VERSION] * 3 == [2] * 3


def test_an_older_log_still_reads_and_resumes(tmp_path):
    # A golden log written by the format's version 1, before compactions: it
    # reads as it did, and a writer resuming it appends version-2 lines.
    golden = os.path.join(str(REPO), "fixtures", "session-log-v1", "approval_accept.session.jsonl")
    with open(golden, encoding="utf-8") as fh:
        old = [json.loads(line) for line in fh]
    assert {e["v"] for e in old} == {1}
    path = str(tmp_path / "s.jsonl")
    with open(path, "w", encoding="utf-8") as fh:  # the writer's own line format
        fh.writelines(json.dumps(e, ensure_ascii=False, separators=(",", ":")) + "\n" for e in old)
    assert list(read_log(path).events) == old
    with SessionLog.open(path) as log:
        assert log.next_turn == 2 and log.has_header and log.compaction is None
        log.append("turn/start", {}, turn=2)
    events = list(read_log(path).events)
    assert events[:-1] == old and events[-1]["v"] == 2 and events[-1]["seq"] == len(old)
    assert Transcript().extend(events).text() == serialize(derive_messages(old))
