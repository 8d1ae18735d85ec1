"""codexmini's own turn events: frozen values, ``Usage`` arithmetic and its wire/log forms."""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

import pytest

from codexmini import ProtocolError, TurnFailed, UsageLimitExceeded
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
    RateLimitsUpdated,
    RateLimitWindow,
    ReasoningSummaryDelta,
    ReasoningTextDelta,
    RetryingError,
    TokenUsage,
    TurnCompleted,
    Unmapped,
    Usage,
    resets_at,
)
from codexmini.testing.codex_like import RATE_LIMITS_EXHAUSTED

# ``thread/tokenUsage/updated``'s ``last`` in fixtures/0.149.1/approval_accept.frames.jsonl.
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
    # cacheWriteInputTokens has no place in the session-log usage (docs/session-log.md).
    assert "cacheWriteInputTokens" not in usage.to_log()


def test_usage_built_without_init_is_the_same_frozen_value():
    # from_wire and + build a Usage without the dataclass __init__: equal,
    # hashable, frozen and shown exactly as one built the usual way.
    built = Usage.from_wire(WIRE_BREAKDOWN) + Usage(1, 1, 1, 1, 1)
    usual = Usage(11, 3, 6, 2, 16)
    assert (built, hash(built), repr(built)) == (usual, hash(usual), repr(usual))
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.total_tokens = 0  # type: ignore[misc]


def test_usage_from_wire_of_a_subclass_builds_the_subclass():
    class Counted(Usage):
        pass

    assert type(Counted.from_wire(WIRE_BREAKDOWN)) is Counted and type(Counted.from_wire(None)) is Counted
    assert Counted.from_wire(WIRE_BREAKDOWN).total_tokens == 15


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
        RateLimitWindow(100, 300, 1796130000),
        RateLimitsUpdated("codex", RateLimitWindow(100), None, {"limitId": "codex"}),
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
    MessageDelta(message_id="m1", item_id="msg_1", delta="Hel"),
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
    shown = {MessageDelta(message_id="m1", item_id="msg_1", delta="a"): 1, MessageStreamEnd("m1", "msg_1", False): 2}
    assert (
        shown[MessageDelta(message_id="m1", item_id="msg_1", delta="a")] == 1
        and shown[MessageStreamEnd("m1", "msg_1", False)] == 2
    )


# -- failed turns: TurnCompleted.failure and raise_for_status -----------------------------

# The ``account/rateLimits/updated`` snapshot codex sent before a usage-limit failure.
SNAPSHOT = RATE_LIMITS_EXHAUSTED
USAGE_ERROR = {
    "message": "You've hit your usage limit. Try again at 1:00 PM.",
    "codexErrorInfo": "usageLimitExceeded",
    "additionalDetails": None,
}


def test_turn_completed_keeps_its_rate_limit_snapshot():
    assert TurnCompleted("t1", "completed").rate_limits is None
    done = TurnCompleted("t1", "failed", USAGE_ERROR, rate_limits=SNAPSHOT)
    assert done.rate_limits == SNAPSHOT


@pytest.mark.parametrize("status", ["completed", "interrupted", "inProgress", ""])
def test_turn_completed_failure_is_none_unless_the_turn_failed(status):
    done = TurnCompleted("t1", status, USAGE_ERROR, rate_limits=SNAPSHOT)
    assert done.failure is None
    assert done.raise_for_status() is None


@pytest.mark.parametrize(
    "error",
    [None, {}, {"message": "boom", "codexErrorInfo": "other"}, {"message": "boom", "codexErrorInfo": None}],
)
def test_turn_completed_failure_of_a_failed_turn_is_turn_failed(error):
    failure = TurnCompleted("t1", "failed", error, rate_limits=SNAPSHOT).failure
    assert type(failure) is TurnFailed
    assert (failure.turn_id, failure.error) == ("t1", error)
    assert str(failure) == (
        "turn t1 failed: boom" if error and error.get("message") else "turn t1 failed: the turn failed"
    )


def test_turn_completed_failure_on_the_usage_limit_reads_the_reset_time():
    assert events.USAGE_LIMIT_EXCEEDED == "usageLimitExceeded"
    failure = TurnCompleted("t1", "failed", USAGE_ERROR, rate_limits=SNAPSHOT).failure
    assert type(failure) is UsageLimitExceeded
    assert (failure.turn_id, failure.error, failure.info) == ("t1", USAGE_ERROR, "usageLimitExceeded")
    assert (failure.resets_at, failure.rate_limits) == (1796130000, SNAPSHOT)
    assert str(failure) == (
        "turn t1 failed: You've hit your usage limit. Try again at 1:00 PM. (the limit resets at 1796130000, Unix time)"
    )


def test_turn_completed_failure_on_the_usage_limit_without_a_snapshot():
    failure = TurnCompleted("t1", "failed", USAGE_ERROR).failure
    assert type(failure) is UsageLimitExceeded
    assert (failure.resets_at, failure.rate_limits) == (None, None)
    assert "resets at" not in str(failure)


def test_turn_completed_raise_for_status_raises_the_failure():
    done = TurnCompleted("t1", "failed", {"message": "boom", "codexErrorInfo": "other"})
    with pytest.raises(TurnFailed) as info:
        done.raise_for_status()
    assert type(info.value) is TurnFailed and str(info.value) == "turn t1 failed: boom"
    with pytest.raises(UsageLimitExceeded, match=r"resets at 1796130000"):
        TurnCompleted("t1", "failed", USAGE_ERROR, rate_limits=SNAPSHOT).raise_for_status()


def test_turn_completed_failure_of_other_turns() -> None:
    assert TurnCompleted("t", "completed").failure is None
    TurnCompleted("t", "interrupted").raise_for_status()  # not a failure
    failed = TurnCompleted("t", "failed", {"message": "boom", "codexErrorInfo": "other"})
    assert type(failed.failure) is TurnFailed and str(failed.failure) == "turn t failed: boom"
    with pytest.raises(TurnFailed):
        failed.raise_for_status()
    bare = TurnCompleted("t", "failed").failure
    assert type(bare) is TurnFailed and bare.message == "the turn failed" and bare.info is None
    unknown = TurnCompleted("t", "failed", {"message": "x", "codexErrorInfo": "usageLimitExceeded"}).failure
    assert isinstance(unknown, UsageLimitExceeded) and unknown.resets_at is None and "resets at" not in str(unknown)


# -- rate limits: RateLimitWindow, RateLimitsUpdated and resets_at ------------------------


def test_rate_limit_window_defaults_to_unknown_span_and_reset():
    assert RateLimitWindow(40) == RateLimitWindow(40, None, None)
    window = RateLimitWindow(100, 300, 1796130000)
    assert (window.used_percent, window.window_minutes, window.resets_at) == (100, 300, 1796130000)
    assert hash(window) == hash(RateLimitWindow(100, 300, 1796130000))


def test_rate_limits_updated_resets_at_reads_its_snapshot():
    event = RateLimitsUpdated("codex", RateLimitWindow(100, 300, 1796130000), RateLimitWindow(40), SNAPSHOT)
    assert (event.limit_id, event.snapshot) == ("codex", SNAPSHOT)
    assert event.resets_at == 1796130000
    assert RateLimitsUpdated(None, None, None, {}).resets_at is None


def window(used, at):
    return {"usedPercent": used, "windowDurationMins": 300, "resetsAt": at}


@pytest.mark.parametrize(
    "snapshot, expected",
    [
        (None, None),
        ("junk", None),
        ([window(100, 5)], None),
        ({}, None),
        ({"primary": None, "secondary": None}, None),
        ({"primary": window(100, 5)}, 5),
        ({"secondary": window(100, 9)}, 9),
        ({"primary": window(100, 5), "secondary": window(40, 9)}, 5),
        ({"primary": window(40, 5), "secondary": window(100, 9)}, 9),
        # Both used up: the later reset is when the account can go on.
        ({"primary": window(100, 9), "secondary": window(100, 5)}, 9),
        ({"primary": window(100, 5), "secondary": window(100, 9)}, 9),
        ({"primary": window(101, 5)}, 5),
        ({"primary": window(100.0, 5)}, 5),
        ({"primary": window(99.5, 5)}, None),
        ({"primary": window(99, 5)}, None),
        ({"primary": window(0, 5)}, None),
        ({"primary": window("100", 5)}, None),
        ({"primary": window(None, 5)}, None),
        ({"primary": {"usedPercent": 100}}, None),
        ({"primary": window(100, None)}, None),
        ({"primary": window(100, 5.5)}, None),
        ({"primary": window(100, "5")}, None),
        ({"primary": [100, 5], "secondary": window(100, 9)}, 9),
        ({"primary": window(100, 0)}, 0),
    ],
)
def test_resets_at_is_the_latest_reset_of_a_used_up_window(snapshot, expected):
    assert events.resets_at(snapshot) == expected


@pytest.mark.parametrize(
    "snapshot, expected",
    [
        (None, None),
        ("junk", None),
        ({}, None),
        ({"primary": {"usedPercent": 100, "resetsAt": 5}, "secondary": {"usedPercent": 100, "resetsAt": 9}}, 9),
        ({"primary": {"usedPercent": 99, "resetsAt": 5}}, None),
        ({"primary": {"usedPercent": 100}}, None),
        ({"primary": {"usedPercent": 100.0, "resetsAt": 5}, "secondary": []}, 5),
        ({"primary": {"usedPercent": "100", "resetsAt": 5}}, None),
    ],
)
def test_resets_at_is_the_latest_reset_of_an_exhausted_window(snapshot: Any, expected: Optional[int]) -> None:
    assert resets_at(snapshot) == expected
