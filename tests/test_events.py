"""codexmini's own turn events: frozen values, ``Usage`` arithmetic and its wire/log forms."""

from __future__ import annotations

import dataclasses

import pytest

from codexmini import ProtocolError
from codexmini import _events as events
from codexmini._events import (
    AgentMessageDelta,
    CommandOutputDelta,
    DiffUpdated,
    InvalidNotification,
    ItemCompleted,
    ItemStarted,
    MessageDelta,
    MessageStreamEnd,
    PlanDelta,
    PlanUpdated,
    ReasoningSummaryDelta,
    ReasoningTextDelta,
    RetryingError,
    TokenUsage,
    TurnCompleted,
    Unmapped,
    Usage,
)

# ``thread/tokenUsage/updated`` of scenario approval_accept (codex-0.149.1-frames.md).
WIRE_BREAKDOWN = {
    "totalTokens": 15,
    "inputTokens": 10,
    "cachedInputTokens": 2,
    "cacheWriteInputTokens": 0,
    "outputTokens": 5,
    "reasoningOutputTokens": 1,
}


def test_usage_defaults_to_zero():
    assert Usage() == Usage(0, 0, 0, 0, 0)
    assert Usage().to_log() == {
        "inputTokens": 0,
        "cachedInputTokens": 0,
        "outputTokens": 0,
        "reasoningOutputTokens": 0,
        "totalTokens": 0,
    }


def test_usage_addition_is_fieldwise():
    a = Usage(input_tokens=10, cached_input_tokens=2, output_tokens=5, reasoning_output_tokens=1, total_tokens=15)
    b = Usage(input_tokens=100, cached_input_tokens=20, output_tokens=50, reasoning_output_tokens=10, total_tokens=150)
    assert a + b == Usage(110, 22, 55, 11, 165)
    assert a + Usage() == a
    assert Usage() + a == a
    # Values, not accumulators: the operands are unchanged.
    assert a == Usage(10, 2, 5, 1, 15)


def test_usage_to_log_uses_the_session_log_camelcase_keys():
    log = Usage(1, 2, 3, 4, 5).to_log()
    assert log == {
        "inputTokens": 1,
        "cachedInputTokens": 2,
        "outputTokens": 3,
        "reasoningOutputTokens": 4,
        "totalTokens": 5,
    }
    assert list(log) == ["inputTokens", "cachedInputTokens", "outputTokens", "reasoningOutputTokens", "totalTokens"]


def test_usage_from_wire_reads_a_real_breakdown_and_ignores_extra_keys():
    usage = Usage.from_wire(WIRE_BREAKDOWN)
    assert usage == Usage(
        input_tokens=10, cached_input_tokens=2, output_tokens=5, reasoning_output_tokens=1, total_tokens=15
    )
    # cacheWriteInputTokens has no place in the session-log usage (SPEC §5).
    assert "cacheWriteInputTokens" not in usage.to_log()


def test_usage_from_wire_round_trips_through_to_log():
    usage = Usage(7, 1, 3, 2, 10)
    assert Usage.from_wire(usage.to_log()) == usage


@pytest.mark.parametrize(
    "breakdown",
    [None, {}, {"inputTokens": None, "outputTokens": None}],
    ids=["none", "empty", "null-fields"],
)
def test_usage_from_wire_missing_or_null_is_zero(breakdown):
    assert Usage.from_wire(breakdown) == Usage()


def test_usage_from_wire_partial_fields():
    assert Usage.from_wire({"outputTokens": 4, "totalTokens": None}) == Usage(output_tokens=4)


@pytest.mark.parametrize(
    "event",
    [
        Usage(),
        AgentMessageDelta("msg_1", "Hello"),
        ReasoningSummaryDelta("rs_1", "**Planning** ", 0),
        ReasoningTextDelta("rs_1", "raw chain ", 0),
        PlanDelta("t-plan", "# Fix the bug\n"),
        PlanUpdated("Three steps.", (("Inspect repository", "inProgress"),)),
        CommandOutputDelta("call_cmd_1", "done\n"),
        ItemStarted({"type": "agentMessage", "id": "msg_1", "text": ""}),
        ItemCompleted({"type": "agentMessage", "id": "msg_1", "text": "hi"}),
        TokenUsage(Usage(), Usage(), 258400),
        DiffUpdated("diff --git a/x b/x\n"),
        RetryingError("Reconnecting... 1/5"),
        TurnCompleted("turn", "completed"),
        Unmapped("fake/new", {"x": 1}),
    ],
    ids=lambda e: type(e).__name__,
)
def test_events_are_frozen(event):
    field = dataclasses.fields(event)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(event, field, "changed")


def test_events_compare_by_value():
    assert AgentMessageDelta("msg_1", "a") == AgentMessageDelta("msg_1", "a")
    assert AgentMessageDelta("msg_1", "a") != AgentMessageDelta("msg_1", "b")
    assert hash(AgentMessageDelta("msg_1", "a")) == hash(AgentMessageDelta("msg_1", "a"))


def test_event_defaults():
    assert ReasoningSummaryDelta("rs_1", "x").summary_index == 0
    assert ReasoningTextDelta("rs_1", "x").content_index == 0
    assert TokenUsage(Usage(), Usage()).context_window is None
    assert RetryingError("m") == RetryingError("m", None, None)
    done = TurnCompleted("t1", "completed")
    assert (done.error, done.items, done.abandoned, done.usage) == (None, (), (), Usage())


@pytest.mark.parametrize("cls", [ItemStarted, ItemCompleted])
def test_item_events_expose_id_and_type(cls):
    # item/completed commandExecution of scenario approval_accept (trimmed).
    event = cls({"type": "commandExecution", "id": "call_cmd_1", "status": "completed", "exitCode": 0})
    assert event.item_id == "call_cmd_1"
    assert event.item_type == "commandExecution"


@pytest.mark.parametrize("cls", [ItemStarted, ItemCompleted])
def test_item_events_tolerate_missing_id_and_type(cls):
    event = cls({})
    assert event.item_id == ""
    assert event.item_type == ""


def test_turn_completed_error_message():
    # turn/completed status=failed of scenario err_400.
    error = {
        "message": '{"error": {"message": "Invalid \'input\': bad things."}}',
        "codexErrorInfo": "other",
        "additionalDetails": None,
    }
    assert TurnCompleted("t1", "failed", error).error_message == error["message"]


@pytest.mark.parametrize("error", [None, {}, {"message": None}, {"codexErrorInfo": "other"}])
def test_turn_completed_error_message_is_empty_without_a_message(error):
    assert TurnCompleted("t1", "interrupted", error).error_message == ""


def test_events_all_lists_every_public_name():
    public = {
        name
        for name, value in vars(events).items()
        if isinstance(value, type) and value.__module__ == events.__name__ and not name.startswith("_")
    }
    assert public | {"Event"} == set(events.__all__)


def test_event_union_holds_every_event_class():
    members = set(events.Event.__args__)
    assert members == {getattr(events, n) for n in events.__all__ if n not in ("Event", "Usage", "RateLimitWindow")}


@pytest.mark.parametrize(
    "breakdown, reason",
    [
        ({"totalTokens": "12"}, "token count totalTokens is str, not an integer"),
        ({"inputTokens": 1.5}, "token count inputTokens is float, not an integer"),
        ({"outputTokens": True}, "token count outputTokens is bool, not an integer"),
        ([1, 2], "a token usage breakdown is list, not an object"),
    ],
)
def test_usage_from_wire_refuses_what_is_not_a_count(breakdown, reason):
    with pytest.raises(ProtocolError) as info:
        Usage.from_wire(breakdown)
    assert info.value.reason == reason


AGENT_EVENTS = [
    MessageDelta("m1", "msg_1", "Hel"),
    MessageStreamEnd("m1", "msg_1", committed=True),
    InvalidNotification("item/completed", {"item": 5}, "item/completed: item is int, not an object"),
]


@pytest.mark.parametrize("event", AGENT_EVENTS, ids=lambda e: type(e).__name__)
def test_events_agent_and_invalid_events_are_frozen_values(event):
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(event, dataclasses.fields(event)[0].name, "changed")
    assert event == dataclasses.replace(event)


def test_events_stream_events_are_hashable_keys():
    # A listener may key what it showed by the stream's events.
    shown = {MessageDelta("m1", "msg_1", "a"): 1, MessageStreamEnd("m1", "msg_1", False): 2}
    assert shown[MessageDelta("m1", "msg_1", "a")] == 1 and shown[MessageStreamEnd("m1", "msg_1", False)] == 2
