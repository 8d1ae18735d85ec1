"""Thread.resume against the real binary, across two codex processes (``-m live``).

What issue 13 asks to see, outside the scenario machinery: a turn in one
client process, then :meth:`Thread.resume` in a fresh process on the same
``CODEX_HOME``, and the next turn's model request carries the first turn's
messages; and the typed error for a thread that ran no turn (codex writes a
thread to disk only when its first turn runs).  The binary is the one the live
suite runs (``make test-live CODEX=<version>`` picks another); the model is
the scripted one, on loopback.  The same behaviour is recorded as the
``resume`` and ``resume_unpersisted`` scenarios.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Iterator

import pytest

from codexmini import AppServerClient, Thread, ThreadNotFound
from codexmini.testing.live import LiveCodex
from conformance.versions import live_codex

# Two codex processes one after the other: more than the one-process deadline.
pytestmark = [pytest.mark.live, pytest.mark.timeout_s(180)]

REMEMBER = "Remember the word: heron."
RECALL = "Which word was it?"
SCRIPT = {
    "rules": [
        {
            "when": {"user_contains": RECALL},
            "respond": {"output": [{"type": "message", "id": "msg_2", "deltas": ["Heron."]}]},
        }
    ],
    "default": {"output": [{"type": "message", "id": "msg_1", "deltas": ["Noted, ", "heron."]}]},
}


@pytest.fixture
def live() -> Iterator[LiveCodex]:
    found = live_codex()
    if isinstance(found, str):
        pytest.skip(found)
    with LiveCodex(SCRIPT, codex_bin=found.path, prefix="codexmini-resume-") as live:
        yield live


async def process(live: LiveCodex) -> AppServerClient:
    return await AppServerClient.start(live.launch)


async def new_thread(live: LiveCodex, client: AppServerClient) -> Thread:
    return await Thread.start(client, cwd=live.ws, model="gpt-fake", sandbox="read-only", approval_policy="never")


def _input_of(request: Dict[str, Any]) -> str:
    return json.dumps((request["body"] or {}).get("input"), ensure_ascii=False)


async def test_live_resume_in_a_fresh_process_carries_the_first_turn(live: LiveCodex) -> None:
    first = await process(live)
    try:
        thread = await new_thread(live, first)
        done = await thread.turn(REMEMBER).run()
        assert done.status == "completed"
        first_pid = first.pid
    finally:
        await first.close()
    second = await process(live)  # a fresh codex process, same CODEX_HOME
    try:
        resumed = await Thread.resume(second, thread.id)
        assert resumed.id == thread.id
        done = await resumed.turn(RECALL).run()
        assert done.status == "completed"
        requests, second_pid = live.requests, second.pid
    finally:
        await second.close()
    assert first_pid != second_pid
    recall = [r for r in requests if RECALL in _input_of(r)]
    assert len(recall) == 1
    # The second process's model request carries the first turn: the user's
    # message and the answer the model gave in the first process.
    assert REMEMBER in _input_of(recall[0]) and "Noted, heron." in _input_of(recall[0])


async def test_live_resume_of_a_thread_that_ran_no_turn_raises_thread_not_found(live: LiveCodex) -> None:
    first = await process(live)
    try:
        thread = await new_thread(live, first)  # no turn: never written to disk
    finally:
        await first.close()
    second = await process(live)
    try:
        with pytest.raises(ThreadNotFound) as caught:
            await Thread.resume(second, thread.id)
        assert caught.value.thread_id == thread.id
        assert live.requests == []
    finally:
        await second.close()
    error = caught.value
    assert "ran no turn" in str(error) and "no rollout found for thread id" in str(error)
