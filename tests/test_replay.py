"""``codexmini.testing.replay`` on its own: what a replay reports when the
client strays from the recording, its process entry point (``from_env``),
and ``python -m codexmini.testing``'s dispatch (``codexmini/testing/__main__.py``).
The normaliser it uses is tested in tests/test_normalize.py.

The replay is driven through a bare :class:`ServerSide` whose output is a
list, so each test chooses exactly what the "client" sends and when.
"""

from __future__ import annotations

import asyncio
import io
import json
import sys
from contextlib import redirect_stderr, redirect_stdout
from typing import Any, Dict, List

import pytest

from codexmini.testing import __main__ as testing_main
from codexmini.testing.fake_appserver import FakeError, ServerSide
from codexmini.testing.normalize import Normaliser
from codexmini.testing.replay import MISMATCH_EXIT, Replay, from_env, load_transcript


class Probe(ServerSide):
    """A server side whose output is kept, and whose input the test feeds."""

    def __init__(self, env: Dict[str, str] = {}) -> None:  # noqa: B006 - never mutated
        super().__init__(["codex", "app-server"], env, None)
        self.sent: List[Any] = []
        self.errors: List[str] = []

    def _write(self, data: bytes) -> None:
        self.sent.append(json.loads(data))

    def stderr(self, text: str) -> None:
        self.errors.append(text)

    def client(self, *frames: Any, eof: bool = True) -> None:
        for frame in frames:
            self._feed(json.dumps(frame).encode() + b"\n")
        if eof:
            self._feed_eof()


HELLO = {"id": 0, "method": "initialize", "params": {"clientInfo": {"name": "t"}}}
ANSWER = {"id": 0, "result": {"userAgent": "codex/1"}}
TRANSCRIPT = [{"dir": "out", "frame": HELLO}, {"dir": "in", "frame": ANSWER}]


def play(replay: Replay, server: Probe) -> int:
    return asyncio.run(replay(server))


def test_a_replay_that_goes_as_recorded_is_ok() -> None:
    server, replay = Probe(), Replay(TRANSCRIPT, Normaliser(), wait=5)
    server.client(HELLO)
    assert play(replay, server) == 0
    assert server.sent == [ANSWER]
    assert replay.report == {"ok": True, "mismatches": [], "matched": 1, "argv": ["app-server"]}


def test_a_frame_that_never_arrives_is_a_mismatch_naming_what_came_instead() -> None:
    server, replay = Probe(), Replay(TRANSCRIPT, Normaliser(), wait=5)
    server.client({"id": 0, "method": "initialize", "params": {}})
    assert play(replay, server) == MISMATCH_EXIT
    (problem,) = replay.mismatches
    assert problem.startswith("expected client frame #1 not received")
    assert '"params": {}' in problem  # what was received instead
    assert server.sent == [] and "replay mismatch" in server.errors[0]


def test_nothing_received_at_all_is_said_so() -> None:
    server, replay = Probe(), Replay(TRANSCRIPT, Normaliser(), wait=0.0)
    assert play(replay, server) == MISMATCH_EXIT
    assert "(nothing)" in replay.mismatches[0]


def test_client_frames_left_over_at_the_end_are_mismatches() -> None:
    server, replay = Probe(), Replay(TRANSCRIPT, Normaliser(), wait=5)
    extra = {"method": "initialized"}
    server.client(HELLO, extra)
    assert play(replay, server) == MISMATCH_EXIT
    assert replay.mismatches == [f"client sent a frame the recording does not have: {json.dumps(extra)}"]
    assert not replay.ok


def test_a_replay_plays_one_conversation_only() -> None:
    replay = Replay(TRANSCRIPT, Normaliser(), wait=5)
    first = Probe()
    first.client(HELLO)
    assert play(replay, first) == 0
    with pytest.raises(FakeError, match="already ran"):
        play(replay, Probe())


def test_from_env_reads_its_settings_and_writes_the_report(tmp_path: Any) -> None:
    transcript = tmp_path / "t.frames.jsonl"
    transcript.write_text("".join(json.dumps(e) + "\n" for e in TRANSCRIPT) + "\n")
    assert load_transcript(str(transcript)) == TRANSCRIPT  # blank lines skipped
    report = tmp_path / "report.json"
    env = {
        "CODEXMINI_REPLAY_TRANSCRIPT": str(transcript),
        "CODEXMINI_REPLAY_PATHS": json.dumps({str(tmp_path): "/WS"}),
        "CODEXMINI_REPLAY_VERSION": "0.171.0",
        "CODEXMINI_REPLAY_WAIT": "5",
        "CODEXMINI_REPLAY_REPORT": str(report),
    }
    server = Probe(env)
    server.client(HELLO)
    assert asyncio.run(from_env(server)) == 0
    assert json.loads(report.read_text())["ok"] is True


def test_from_env_without_a_report_target_writes_none(tmp_path: Any) -> None:
    transcript = tmp_path / "t.frames.jsonl"
    transcript.write_text("".join(json.dumps(e) + "\n" for e in TRANSCRIPT))
    server = Probe({"CODEXMINI_REPLAY_TRANSCRIPT": str(transcript)})
    server.client(HELLO)
    assert asyncio.run(from_env(server)) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.frames.jsonl"]


def test_python_m_codexmini_testing_dispatches_or_says_how(monkeypatch: Any) -> None:
    seen: List[List[str]] = []
    monkeypatch.setitem(testing_main._COMMANDS, "model", lambda argv: seen.append(argv) or 0)
    assert testing_main.main(["model", "s.json", "--port", "1"]) == 0
    assert seen == [["s.json", "--port", "1"]]
    monkeypatch.setattr(sys, "argv", ["x", "model"])
    assert testing_main.main() == 0 and seen[-1] == []
    err, out = io.StringIO(), io.StringIO()
    with redirect_stderr(err):
        assert testing_main.main(["nope"]) == 2
        assert testing_main.main([]) == 2
    said = err.getvalue().splitlines()
    assert said[0].startswith("usage: python -m codexmini.testing [-h] COMMAND")
    assert (
        said[1] == "python -m codexmini.testing: error: unknown command 'nope': one of fake, model (--help says more)"
    )
    assert said[3] == "python -m codexmini.testing: error: a command is needed: one of fake, model (--help says more)"
    with redirect_stdout(out):
        assert testing_main.main(["--help"]) == 0
    assert (
        "serve a scripted Responses API on 127.0.0.1" in out.getvalue() and "play a fake app-server" in out.getvalue()
    )
