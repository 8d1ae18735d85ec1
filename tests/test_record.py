"""Record mode (``codexmini.testing.record``): a conversation recorded, saved, replayed.

Offline: the recorded side is the in-memory fake playing codex's shapes; the
replay must give the code under test the same answers, and a client that
sends something else fails fast.  docs/testing.md records the real codex
(its block runs in tests/test_pytest_plugin.py).
"""

from __future__ import annotations

import json

import pytest

from codexmini import AppServerClient, Launch, TransportError, run
from codexmini.testing import CodexLike, FakeAppServer, Recorder, fake_from_recording


async def ask(client: AppServerClient, prompt: str, cwd: str) -> str:
    return (await run(prompt, client=client, cwd=cwd)).final_response or ""


async def test_record_a_conversation_then_replay_it_without_the_server(tmp_path):
    recorded_ws, replay_ws = tmp_path / "then", tmp_path / "now"
    recorder = Recorder({str(recorded_ws): "{WS}"})
    async with await AppServerClient.start(Launch(launcher=FakeAppServer(CodexLike).launch), tap=recorder) as client:
        assert await ask(client, "hello", str(recorded_ws)) == "Hello"
    path = str(tmp_path / "t.jsonl")
    recorder.save(path)
    with open(path, encoding="utf-8") as f:
        lines = [json.loads(line) for line in f]
    assert lines == recorder.transcript() and {e["dir"] for e in lines} == {"in", "out"}
    starts = [e["frame"] for e in lines if e["frame"].get("method") == "thread/start"]
    assert starts[0]["params"]["cwd"] == "{WS}"  # the run's directory, as its placeholder

    fake = fake_from_recording(path, {str(replay_ws): "{WS}"})
    async with await AppServerClient.start(Launch(launcher=fake.launch)) as client:
        assert await ask(client, "hello", str(replay_ws)) == "Hello"
    assert fake.behaviour.report["ok"] and fake.behaviour.report["matched"] == len(
        [e for e in lines if e["dir"] == "out"]
    )


async def test_record_a_client_that_strays_from_the_recording_fails_fast(tmp_path):
    recorder = Recorder()
    async with await AppServerClient.start(Launch(launcher=FakeAppServer(CodexLike).launch), tap=recorder) as client:
        await ask(client, "hello", str(tmp_path))
    path = str(tmp_path / "t.jsonl")
    recorder.save(path)
    fake = fake_from_recording(path, wait=0.5)
    with pytest.raises(TransportError):
        async with await AppServerClient.start(Launch(launcher=fake.launch)) as client:
            await ask(client, "something else", str(tmp_path))
    assert not fake.behaviour.report["ok"]
    assert "expected client frame" in fake.behaviour.report["mismatches"][0]
