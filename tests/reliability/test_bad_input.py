"""Bad server input, one kind per row, over real pipes and through the public API.

Each row of :data:`TABLE` names a kind of bad input that :class:`hostile.Hostile`
sends from a real child process in the middle of a turn, between a message
``before`` and a message ``after``.  Played twice -- through
``AppServerClient`` + ``Thread`` and through the ``Agent`` over a session log
-- each case must, under a deadline: not crash, not hang, become what its row
says (a typed error, a typed event, a counted and logged skip, an answer), and
lose nothing: ``before`` and ``after`` both arrive (and are logged), the turn
completes, and the conversation goes on (one more request is answered).
Every frame the schema's shape rejects leaves the same trace, whatever else
its row says: kept in ``client.protocol_errors``, counted and logged.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

import figures
import hostile
import pytest

import codexmini
from codexmini import (
    Agent,
    AgentConfig,
    AgentMessageDelta,
    AppServerClient,
    CodexminiError,
    ItemCompleted,
    Launch,
    Limits,
    ProtocolError,
    Reply,
    SessionLog,
    Thread,
    Timeouts,
    Unmapped,
    read_log,
)
from codexmini.testing import FakeAppServer

#: Every case, whatever it does, is over within this (a hang fails the row).
DEADLINE = 30.0
#: The handler deadline for the kinds whose handler never returns.
HANDLER_TIMEOUT = 0.3
MIB = 1024 * 1024


@dataclass(frozen=True)
class Kind:
    """One row: the kind, what it must become, how the client is set up."""

    name: str
    #: skip | invalid | unmapped | ignored | held | answered | delivered | waited | dropped | phase
    expect: str
    #: frame problems the conformance validator reports for it, on purpose
    problems: Tuple[str, ...] = ()
    #: AppServerClient.start options for this row
    options: Mapping[str, Any] = field(default_factory=dict)
    #: the approval handler: raise | hang | cancel | accept
    handler: Optional[str] = None
    #: for ``answered``: what codex receives; for ``skip``: how many lines are skipped
    answer: Any = None
    #: how many problems the client keeps (``protocol_errors``), counts and logs:
    #: by default the skipped lines of a ``skip`` row, none for the others
    kept: Optional[int] = None

    @property
    def traces(self) -> int:
        if self.kept is not None:
            return self.kept
        return (self.answer or 1) if self.expect == "skip" else 0


DECLINE = {"result": {"decision": "decline"}}

TABLE = [
    # lines that are not frames: a counted, logged skip (ProtocolError in client.protocol_errors)
    Kind("not_json", "skip"),
    Kind("truncated_json", "skip"),
    Kind("json_array", "skip"),
    Kind("json_scalar", "skip", answer=3),
    Kind("invalid_utf8", "skip"),
    Kind("nul_and_control_bytes", "skip"),
    Kind("deeply_nested_json", "skip"),
    Kind("over_the_frame_cap", "skip", options={"limits": Limits(max_frame_bytes=MIB)}),
    Kind("object_without_jsonrpc_shape", "skip", ("needs method",)),
    # odd ids and answers nobody asked for: skipped the same way
    Kind("id_null", "skip", ("response to unknown request id None",)),
    Kind("id_float", "skip", ("response to unknown request id 1.5",)),
    Kind("id_bool", "skip", ("response to unknown request id True",)),
    Kind("id_object", "skip", ("response to unknown request id {",)),
    Kind("method_not_a_string", "skip", ("method is not a string",)),
    Kind("result_and_error_together", "skip", ("needs method, or id with exactly one of result/error",)),
    Kind("error_not_an_object", "skip", ("error for unknown request id 1", "'boom' is not of type")),
    Kind("answer_to_an_unknown_id", "skip", ("unknown request id 4242", "unknown request id 'never-sent'"), answer=2),
    Kind("duplicate_response", "skip", ("response to unknown request id 3",)),
    # notifications of the wrong shape: a typed InvalidNotification, counted and logged; the turn goes on
    Kind("item_missing", "invalid", ("item/completed",)),
    Kind("item_not_an_object", "invalid", ("item/started",)),
    Kind("item_field_wrong_type", "invalid", ("item/completed",)),
    Kind("delta_missing", "invalid", ("item/agentMessage/delta",)),
    Kind("delta_wrong_type", "invalid", ("item/agentMessage/delta",)),
    Kind("token_count_not_a_number", "invalid", ("thread/tokenUsage/updated",)),
    Kind("turn_not_an_object", "invalid", ("turn/completed",)),
    Kind("plan_not_an_array", "invalid", ("turn/plan/updated",)),
    # notifications whose params is no object: a skip like a line that is no frame
    Kind("params_not_an_object", "skip", ("item/agentMessage/delta",)),
    Kind("params_missing", "skip", ("turn/diff/updated",)),
    Kind("resolved_params_not_an_object", "skip", ("serverRequest/resolved",), answer=2),  # [0] and 7
    # routed elsewhere or ignored by the turn, never fatal
    Kind("unknown_method", "unmapped", ("item/hologram/delta",)),
    Kind("resolved_unhashable_request_id", "ignored", ("serverRequest/resolved",), kept=2),  # routed, and kept
    Kind("resolved_unknown_request", "ignored"),
    Kind("other_turn_completed", "ignored"),
    Kind("unknown_thread", "held"),
    # frames that are fine, however they come: delivered intact
    Kind("line_of_16_mib", "delivered"),
    Kind("crlf_and_split_writes", "delivered"),
    Kind("delta_flood_over_the_queue", "waited", options={"limits": Limits(queue_size=50)}),
    Kind("delta_flood_over_a_dropping_queue", "dropped", options={"limits": Limits(queue_size=50, overflow="drop")}),
    # server requests: every one with an id and a method is answered
    Kind("approval_params_null", "answered", ("item/commandExecution/requestApproval",), answer=DECLINE, kept=1),
    Kind("approval_params_missing", "answered", ("item/commandExecution/requestApproval",), answer=DECLINE, kept=1),
    Kind(
        "request_unknown_method",
        "answered",
        ("fake/unknownRequest",),
        answer={"error": {"code": -32601, "message": "method not found: fake/unknownRequest"}},
    ),
    Kind("approval_handler_raises", "answered", handler="raise", answer=DECLINE),
    Kind(
        "approval_handler_hangs",
        "answered",
        handler="hang",
        answer=DECLINE,
        options={"timeouts": Timeouts(handler=HANDLER_TIMEOUT)},
    ),
    Kind("approval_handler_raises_cancelled", "answered", handler="cancel", answer=DECLINE),
    Kind("approval_string_id", "answered", handler="accept", answer={"result": {"decision": "accept"}}),
    # a bad answer to the client's own requests: a typed error from the call, and the next call works
    Kind("initialize_result_not_object", "phase", ("initialize",)),
    Kind("thread_start_without_thread_id", "phase", ("thread/start",)),
    Kind("turn_start_without_turn_id", "phase", ("turn/start",)),
]


def test_bad_input_table_has_one_row_per_kind_the_fake_plays():
    names = [k.name for k in TABLE]
    assert len(names) == len(set(names)) >= 30
    phases = {"initialize_result_not_object", "thread_start_without_thread_id", "turn_start_without_turn_id"}
    assert set(names) == set(hostile.KINDS) | phases


def rows():
    return [
        pytest.param(k, id=k.name, marks=[pytest.mark.frame_problems(*k.problems)] if k.problems else []) for k in TABLE
    ]


def executable(tmp_path: Any, kind: Kind) -> str:
    return FakeAppServer("hostile:Hostile", kind.name).executable(str(tmp_path), pythonpath=[hostile.HERE])


# -- the handlers -------------------------------------------------------------------------


async def _hang() -> None:
    await asyncio.Event().wait()


async def client_handler(kind: str, method: str, params: Dict[str, Any]) -> Any:
    if kind == "raise":
        raise RuntimeError("the handler's own bug")
    if kind == "hang":
        await _hang()
    if kind == "cancel":
        raise asyncio.CancelledError()
    return {"decision": "accept"}


async def agent_handler(kind: str, request: Any) -> Reply:
    await client_handler(kind, request.method, dict(request.params))
    return Reply("accept")


# -- through the client --------------------------------------------------------------------


@dataclass
class Played:
    client: AppServerClient
    events: List[Any]
    completed: Any
    listed: Any
    errors: List[BaseException]


async def play_client(kind: Kind, exe: str) -> Played:
    errors: List[BaseException] = []
    if kind.name == "initialize_result_not_object":
        with pytest.raises(CodexminiError) as raised:
            await AppServerClient.start(Launch(codex_bin=exe, **kind.options))
        errors.append(raised.value)
        return Played(None, [], None, None, errors)  # type: ignore[arg-type]
    client = await AppServerClient.start(Launch(codex_bin=exe, **kind.options))
    try:
        if kind.handler:
            client.on_request(hostile.APPROVAL, lambda m, p: client_handler(kind.handler, m, p))
        if kind.name == "thread_start_without_thread_id":
            with pytest.raises(CodexminiError) as raised:
                await Thread.start(client)
            errors.append(raised.value)
        thread = await Thread.start(client)
        if kind.name == "turn_start_without_turn_id":
            with pytest.raises(CodexminiError) as raised:
                await thread.turn("go").run()
            errors.append(raised.value)
        events = []
        async with thread.turn("go") as turn:
            async for event in turn:
                events.append(event)
        listed = await client.request("thread/loaded/list", {})
        return Played(client, events, turn.completed, listed, errors)
    finally:
        await client.close()


def texts(events: List[Any]) -> Dict[str, str]:
    return {
        e.item_id: e.item.get("text")
        for e in events
        if isinstance(e, ItemCompleted) and e.item.get("type") == "agentMessage"
    }


def check_client(kind: Kind, played: Played, warnings: List[logging.LogRecord]) -> None:
    """Through AppServerClient + Thread: what the row says, and nothing lost."""
    if kind.name == "initialize_result_not_object":
        assert isinstance(played.errors[0], ProtocolError)
        return
    client, events = played.client, played.events
    # nothing lost, the turn completed, the conversation went on
    said = texts(events)
    assert said["msg_before"] == "before"
    assert said["msg_after"].startswith("after")
    assert played.completed.status == "completed"
    assert [i["id"] for i in played.completed.items if i["type"] == "agentMessage"] == ["msg_before", "msg_after"]
    assert played.listed["data"]  # the reader is alive: one more request was answered
    assert client.stats.get("handler_errors", 0) == 0
    expect = kind.expect
    # Every frame the shape rejects, skipped or handled all the same: kept, counted, logged.
    n = kind.traces
    assert len(client.protocol_errors) == n
    assert all(isinstance(e, ProtocolError) for e in client.protocol_errors)
    assert client.stats["malformed"] + client.stats["unknown_responses"] == n
    assert len([r for r in warnings if r.name == "codexmini.client"]) >= n
    invalid = [e for e in events if type(e).__name__ == "InvalidNotification"]
    if expect == "invalid":
        assert len(invalid) == 1 and isinstance(invalid[0], codexmini.InvalidNotification)
        assert [r for r in warnings if r.name == "codexmini.thread"]  # logged, not only counted
    else:
        assert invalid == []
    if expect == "unmapped":
        assert [e.method for e in events if isinstance(e, Unmapped)] == ["item/hologram/delta"]
    if expect == "held":
        assert all(getattr(e, "item_id", None) != "msg_x" for e in events)
    if expect == "answered":
        assert json.loads(said["msg_after"][len("after ") :]) == kind.answer
    if expect == "delivered":
        deltas = [e.delta for e in events if isinstance(e, AgentMessageDelta) and e.item_id in ("msg_big", "msg_split")]
        assert deltas == (["x" * hostile.BIG] if kind.name == "line_of_16_mib" else ["split"])
    if expect == "waited":  # back-pressure: every delta reached the consumer, none dropped
        delivered = [e for e in events if isinstance(e, AgentMessageDelta) and e.item_id == "msg_flood"]
        assert len(delivered) == hostile.FLOOD
        assert client.stats["dropped"] == 0 and client.stats["paused"] > 0
    if expect == "dropped":
        delivered = [e for e in events if isinstance(e, AgentMessageDelta) and e.item_id == "msg_flood"]
        assert client.stats["dropped"] > 0
        # every drop counted: the flood's deltas, and the two droppable frames
        # after it (the after-message's delta, a status change) if they met a full queue too
        assert hostile.FLOOD <= len(delivered) + client.stats["dropped"] <= hostile.FLOOD + 2
        assert [r for r in warnings if "dropped" in r.getMessage()]
    if expect == "phase":
        assert len(played.errors) == 1 and isinstance(played.errors[0], ProtocolError)


# -- through the agent ---------------------------------------------------------------------


async def play_agent(kind: Kind, exe: str, path: str, cwd: str) -> Tuple[Dict[str, Any], Optional[Dict[str, Any]]]:
    config = AgentConfig(
        launch=Launch(codex_bin=exe, timeouts=Timeouts(handler=HANDLER_TIMEOUT, request=DEADLINE)),
        cwd=cwd,
        skills=False,
    )
    approvals = (lambda request: agent_handler(kind.handler, request)) if kind.handler else None
    with SessionLog.open(path) as log:
        async with Agent(log, config, approvals=approvals) as agent:
            first = await agent.run("go")
            second = await agent.run("again") if kind.expect == "phase" else None
    return first, second


def logged_texts(events: List[Mapping[str, Any]], turn: int) -> List[str]:
    return [
        b["text"]
        for e in events
        if e["type"] == "assistant/message" and e["turn"] == turn
        for b in e["data"]["content"]
        if b["type"] == "text"
    ]


def check_agent(kind: Kind, path: str, first: Dict[str, Any], second: Optional[Dict[str, Any]]) -> None:
    """Through the Agent: the turn ends as it should, and what was said is logged."""
    events = read_log(path).events
    ends = [e["data"] for e in events if e["type"] == "turn/end"]
    if kind.name == "initialize_result_not_object":
        # no usable child: each turn is logged all the same and ends in error
        assert [e["reason"] for e in ends] == ["error", "error"]
        assert {e["error"]["code"] for e in ends} == {"CODEX_UNAVAILABLE"}
        assert [e["data"]["content"][0]["text"] for e in events if e["type"] == "user/message"] == ["go", "again"]
    elif kind.expect == "phase":
        # the bad answer fails the first turn (typed, logged); the next one works on the same child
        assert first["reason"] == "error" and "answered without" in first["error"]["message"]
        assert second is not None and second["reason"] == "completed"
        assert logged_texts(events, 2)[:1] == ["before"]
    else:
        assert first["reason"] == "completed", first
        said = logged_texts(events, 1)
        assert said[0] == "before" and said[-1].startswith("after"), said
        if kind.expect == "answered":
            assert json.loads(said[-1][len("after ") :]) == kind.answer
            decisions = [e["data"] for e in events if e["type"] == "approval/decision"]
            assert [d["decision"] for d in decisions] == [kind.answer.get("result", {}).get("decision", "decline")]
    assert ends == [first] + ([second] if second else [])


# -- the table, played both ways at once -----------------------------------------------------


@pytest.mark.parametrize("kind", rows())
async def test_bad_input(kind, tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger="codexmini")
    exe = executable(tmp_path, kind)
    path = str(tmp_path / "session.jsonl")

    # Two conversations with two children, independent: played side by side.
    played, (first, second) = await asyncio.gather(play_client(kind, exe), play_agent(kind, exe, path, str(tmp_path)))
    check_client(kind, played, [r for r in caplog.records if r.levelno >= logging.WARNING])
    check_agent(kind, path, first, second)
    figures.count("bad server input", "kinds played, each through AppServerClient + Thread and through the Agent")
    if kind.traces and played.client is not None:
        figures.count(
            "bad server input",
            "lines and frames rejected, each kept in protocol_errors, counted and logged",
            kind.traces,
        )


# -- a flood for threads nobody claimed -------------------------------------------------------


async def test_bad_input_a_flood_for_threads_nobody_claimed_is_bounded_in_bytes(tmp_path, caplog):
    # codex may name a thread before anyone subscribed to it, so the client
    # holds such notifications -- within a bound in bytes too, not only in
    # threads and frames (32 x 512 frames of 8 KiB would be 128 MiB).
    exe = FakeAppServer("hostile:unclaimed_flood").executable(str(tmp_path), pythonpath=[hostile.HERE])
    sent = hostile.UNCLAIMED_THREADS * hostile.UNCLAIMED_FRAMES

    async with await AppServerClient.start(Launch(codex_bin=exe)) as client:
        await client.request("thread/loaded/list", {})  # answered after the flood: all of it was read
        held = held_bytes = 0
        for n in range(hostile.UNCLAIMED_THREADS):
            sub = client.subscribe(hostile.unclaimed_thread(n))  # what was held for it comes first
            while sub.pending():
                held += 1
                held_bytes += len(sub.get_nowait()["params"]["delta"])
        assert held + client.stats["dropped"] == sent  # every frame not held is counted
    assert held < sent and held_bytes <= 8 * MIB
    figures.record(
        "bad server input",
        "unclaimed flood held (frames, MiB) of 1200 frames, 9.4 MiB sent",
        (held, round(held_bytes / MIB, 1)),
    )
