"""Life on a shared server: several clients connected to one codex (issue 28).

Recorded over ``ws`` (``Scenario.transport``): the live run starts one
``codex app-server --listen ws://127.0.0.1:0`` and every
:meth:`~conformance.harness.Run.start_client` is a connection to it
(connection n is ``"conn": n`` of the transcript); the replay plays each
connection's frames to the client started in the same order.  What codex did
on both ends of the supported range (0.149.1, 0.171.0), measured:

* **A thread's turns stream to every connection subscribed to it**: the one
  that started it, and each that resumed it (``thread/resume`` on a loaded
  thread subscribes, and returns the thread without a second load).  A
  connection that is not subscribed hears only the broadcasts about threads
  (``thread/started``, ``thread/status/changed``), never a turn's items.
* **``thread/unsubscribe`` stops it** for that connection
  (``{"status": "unsubscribed"}``); codexmini sends it when a ``Thread`` of a
  connected client is closed.
* **A request whose connection is gone stays open**: a connection that
  dropped while codex waited for its approval leaves the turn waiting
  (``waitingOnApproval``), and codex asks again -- a new request, same item --
  the next connection that resumes the thread; its answer goes on with the
  turn.  (A codexmini client that *closes* answers first, fail-closed: see
  :meth:`AppServerClient.close <codexmini.AppServerClient.close>`.)
"""

from __future__ import annotations

import asyncio
from typing import Any, Dict, List, Set

from codexmini._client import ALL
from codexmini._events import ItemCompleted, TurnCompleted
from codexmini._threads import Thread

from .harness import Run, Scenario, ScenarioResult, answer, message
from .thread_scenarios import _thread, _turn, exchanges, model_inputs

FIRST, SECOND, THIRD, FOURTH = "First, from A.", "Second, from B.", "Third, from A.", "Fourth, from B."
TURN_PREFIXES = ("turn/", "item/")


def _notes_of(result: ScenarioResult, conn: int) -> List[Dict[str, Any]]:
    """The notifications one connection received, in order."""
    return [f for d, f in result.frames_of(conn) if d == "in" and "method" in f and "id" not in f]


def _turn_ids(result: ScenarioResult, conn: int) -> List[str]:
    """The ids of the turns one connection started (``turn/start`` answers)."""
    return [
        frame["result"]["turn"]["id"]
        for (_, frame), c in zip(exchanges(result, "turn/start"), _starters(result))
        if c == conn
    ]


def _starters(result: ScenarioResult) -> List[int]:
    conns = result.conns or [0] * len(result.frames)
    return [c for (d, f), c in zip(result.frames, conns) if d == "out" and f.get("method") == "turn/start"]


def _until_sent(result: ScenarioResult, conn: int, method: str) -> List[str]:
    """The methods of what one connection received before it sent ``method``."""
    out = []
    for d, f in result.frames_of(conn):
        if d == "out" and f.get("method") == method:
            return out
        if d == "in" and "method" in f:
            out.append(f["method"])
    raise AssertionError(f"connection {conn} never sent {method}")


def _heard(result: ScenarioResult, conn: int, turn_id: str) -> List[str]:
    """The methods of the notifications about ``turn_id`` one connection received."""
    out = []
    for note in _notes_of(result, conn):
        params = note.get("params") or {}
        if params.get("turnId") == turn_id or (params.get("turn") or {}).get("id") == turn_id:
            out.append(note["method"])
    return out


# -- a thread's turns reach every connection subscribed to it -----------------------------


async def _drive_shared_stream(run: Run) -> None:
    a = await run.start_client()
    b = await run.start_client()
    thread = await _thread(run, a)
    await _turn(run, thread, FIRST)
    run.notes["thread_id"] = thread.id
    on_b = await Thread.resume(b, thread.id)  # B subscribes: from now on both hear every turn
    await _turn(run, on_b, SECOND)
    third = await _turn(run, thread, THIRD)  # A's own turn, after B's events reached A's thread
    run.notes["third_text"] = [i.get("text") for i in third.items if i.get("type") == "agentMessage"]
    thread.close()  # A lets go of the thread: codexmini unsubscribes
    await _settled(a)
    await _turn(run, on_b, FOURTH)
    on_b.close()
    await _settled(b)


async def _settled(client: Any) -> None:
    """Until the client's ``thread/unsubscribe`` was answered (bounded)."""
    for _ in range(500):
        if not client._unsubscribing:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("thread/unsubscribe was not answered")


def _check_shared_stream(result: ScenarioResult) -> None:
    assert [e.status for e in result.events_of(TurnCompleted)] == ["completed"] * 4
    first, third = _turn_ids(result, 0)
    second, fourth = _turn_ids(result, 1)
    # B, not subscribed, heard of A's thread but nothing of its first turn
    # (once B resumed, codex told it the thread's token usage so far).
    before = _until_sent(result, 1, "thread/resume")
    assert "thread/started" in before and not [m for m in before if m.startswith(TURN_PREFIXES)], before
    assert _heard(result, 1, first) == ["thread/tokenUsage/updated"]
    # Subscribed, each hears the other's turn, from start to end.
    for conn, turn in ((0, second), (1, third)):
        heard = _heard(result, conn, turn)
        assert heard[0] == "turn/started" and heard[-1] == "turn/completed", (conn, heard)
        assert "item/agentMessage/delta" in heard
    # A's turn after B's took only its own answer, not what B's turn left queued.
    assert result.notes["third_text"] == ["Noted three."]
    # Unsubscribed, A hears nothing of B's last turn.
    assert _heard(result, 0, fourth) == []
    unsubscribed = exchanges(result, "thread/unsubscribe")
    assert [(p, f["result"]) for p, f in unsubscribed] == [
        ({"threadId": result.notes["thread_id"]}, {"status": "unsubscribed"})
    ] * 2
    if result.mode == "live":  # one thread, one history: B's turn saw A's, A's third saw B's
        inputs = model_inputs(result)
        assert FIRST in inputs[1] and SECOND in inputs[2] and THIRD in inputs[3]


SHARED_STREAM = Scenario(
    name="shared_stream",
    description=(
        "two connections to one codex: A's thread, resumed by B; each hears the other's turns, "
        "A unsubscribes (Thread.close) and hears no more"
    ),
    script={
        "rules": [
            {"when": {"user_contains": SECOND}, "respond": answer(message("msg_2", "Noted ", "two."))},
            {"when": {"user_contains": THIRD}, "respond": answer(message("msg_3", "Noted ", "three."))},
            {"when": {"user_contains": FOURTH}, "respond": answer(message("msg_4", "Noted ", "four."))},
        ],
        "default": answer(message("msg_1", "Noted ", "one.")),
    },
    driver=_drive_shared_stream,
    check=_check_shared_stream,
    transport="ws",
)


# -- a dropped connection's approval is asked again of the next one ------------------------

APPROVE_Q = "Write outside, please."
ESCALATED = "echo handed-over > {OUTSIDE}/handed-over.txt; echo done"


async def _drive_shared_approval(run: Run) -> None:
    a = await run.start_client()
    asked = asyncio.Event()

    async def never(method: str, params: Dict[str, Any]) -> Any:  # A is gone before it answers
        asked.set()
        await asyncio.sleep(3600)

    a.on_request("item/commandExecution/requestApproval", never)
    thread = await Thread.start(
        a, cwd=run.paths.ws, model=run.scenario.model, sandbox="workspace-write", approval_policy="on-request"
    )
    turn = thread.turn(APPROVE_Q)
    await turn.__aenter__()
    reading = asyncio.ensure_future(_drain(turn))
    await asyncio.wait_for(asked.wait(), 60)
    await run.drop(a)  # as a crash would: no answer, no close handshake
    await asyncio.gather(reading, return_exceptions=True)
    b = await run.start_client()
    answered: List[Dict[str, Any]] = []

    async def accept(method: str, params: Dict[str, Any]) -> Any:
        answered.append(params)
        return {"decision": "accept"}

    b.on_request("item/commandExecution/requestApproval", accept)
    everything = b.subscribe(ALL)
    await Thread.resume(b, thread.id)
    async for event in everything.events():  # the turn A started goes on, on B
        run.events.append(event)
        if isinstance(event, TurnCompleted):
            break
    run.notes["answered"] = answered


async def _drain(turn: Any) -> None:
    async for _ in turn:
        pass


def _approvals(result: ScenarioResult, conn: int) -> List[Dict[str, Any]]:
    return [
        f for d, f in result.frames_of(conn) if d == "in" and f.get("method") == "item/commandExecution/requestApproval"
    ]


def _answered_ids(result: ScenarioResult, conn: int) -> Set[Any]:
    return {f["id"] for d, f in result.frames_of(conn) if d == "out" and "method" not in f and "id" in f}


def _check_shared_approval(result: ScenarioResult) -> None:
    (asked_a,) = _approvals(result, 0)
    (asked_b,) = _approvals(result, 1)
    # A never answered (it dropped); codex asked B the same question again.
    assert asked_a["id"] not in _answered_ids(result, 0)
    assert asked_b["id"] in _answered_ids(result, 1)
    same = ("threadId", "turnId", "itemId")
    assert [asked_a["params"][k] for k in same] == [asked_b["params"][k] for k in same]
    (params,) = result.notes["answered"]
    assert params["itemId"] == "call_handover"
    (completed,) = result.events_of(TurnCompleted)
    assert completed.status == "completed" and completed.turn_id == asked_a["params"]["turnId"]
    texts = [e.item.get("text") for e in result.events_of(ItemCompleted) if e.item_type == "agentMessage"]
    assert texts == ["Handed over."]
    (command,) = [e.item for e in result.events_of(ItemCompleted) if e.item_type == "commandExecution"]
    assert command["status"] == "completed" and command["exitCode"] == 0  # B's accept let it run


SHARED_APPROVAL = Scenario(
    name="shared_approval",
    description=(
        "A's connection drops while codex waits for A's approval; B resumes the thread, "
        "is asked the same question, accepts, and the turn A started completes"
    ),
    script={
        "rules": [
            {"when": {"last_call_id": "call_handover"}, "respond": answer(message("msg_done", "Handed over."))},
        ],
        "default": answer(
            {
                "type": "function_call",
                "call_id": "call_handover",
                "name": "exec_command",
                "arguments": {
                    "cmd": ESCALATED,
                    "yield_time_ms": 10000,
                    "sandbox_permissions": "require_escalated",
                    "justification": "Hand the question over",
                },
            }
        ),
    },
    driver=_drive_shared_approval,
    check=_check_shared_approval,
    transport="ws",
)

SHARED_SCENARIOS = [SHARED_STREAM, SHARED_APPROVAL]

__all__ = ["SHARED_SCENARIOS"]
