"""The turn fold, pure: plain notification frames in, books out.

No client, no event loop: each test feeds ``(method, params)`` pairs shaped
like codex 0.149.1's (the item shapes come from
:mod:`codexmini.testing.codex_like`) and reads the books.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Tuple

from codexmini._errors import TurnFailed, UsageLimitExceeded
from codexmini._events import (
    AgentMessageDelta,
    InvalidNotification,
    ItemCompleted,
    ItemStarted,
    RetryingError,
    TokenUsage,
    TurnCompleted,
    Unmapped,
    Usage,
)
from codexmini._mapping import to_event, tool_call
from codexmini._turnfold import TurnFold
from codexmini.testing.codex_like import (
    THREAD,
    TURN_ERROR,
    USAGE_1,
    USAGE_2,
    USAGE_SUM,
    agent_message,
    command,
    turn_object,
)

TURN = "turn-mine"
OTHER = "turn-other"
U1 = Usage.from_wire(USAGE_1)
U2 = Usage.from_wire(USAGE_2)

Frame = Tuple[str, Dict[str, Any]]


def started(item: Mapping[str, Any], turn: str = TURN) -> Frame:
    return "item/started", {"item": dict(item), "threadId": THREAD, "turnId": turn, "startedAtMs": 1}


def completed(item: Mapping[str, Any], turn: str = TURN) -> Frame:
    return "item/completed", {"item": dict(item), "threadId": THREAD, "turnId": turn, "completedAtMs": 1}


def delta(item_id: str, text: str, turn: str = TURN) -> Frame:
    return "item/agentMessage/delta", {"threadId": THREAD, "turnId": turn, "itemId": item_id, "delta": text}


def usage(last: Mapping[str, int], total: Mapping[str, int], turn: str = TURN) -> Frame:
    token_usage = {"total": dict(total), "last": dict(last), "modelContextWindow": 258400}
    return "thread/tokenUsage/updated", {"threadId": THREAD, "turnId": turn, "tokenUsage": token_usage}


def error(err: Any, will_retry: bool, turn: str = TURN) -> Frame:
    return "error", {"error": err, "willRetry": will_retry, "threadId": THREAD, "turnId": turn}


def turn_completed(status: str = "completed", err: Any = None, turn: str = TURN) -> Frame:
    return "turn/completed", {"threadId": THREAD, "turn": turn_object(turn, status, err)}


def fold(*frames: Frame, turn_id: Optional[str] = TURN, keep_items: bool = True) -> TurnFold:
    books = TurnFold(turn_id, keep_items=keep_items)
    for method, params in frames:
        books.feed(method, params)
    return books


# -- filtering ----------------------------------------------------------------------


def test_turnfold_other_turns_frames_yield_nothing_and_book_nothing():
    books = TurnFold(TURN)
    other = [
        started(agent_message("m_x"), OTHER),
        delta("m_x", "x", OTHER),
        completed(agent_message("m_x", "x"), OTHER),
        usage(USAGE_2, USAGE_2, OTHER),
        error(TURN_ERROR, False, OTHER),
        turn_completed("failed", TURN_ERROR, OTHER),
    ]
    assert [books.feed(m, p) for m, p in other] == [None] * len(other)
    assert (books.items, books.open, books.started) == ({}, {}, {})
    assert (books.usage, books.last_error, books.completed, books.done) == (Usage(), None, None, False)


def test_turnfold_frames_that_name_no_turn_are_the_thread_s_and_pass():
    # thread/status/changed and warning name no turn: mapped (both ignored
    # methods → None); a method the mapping does not know is Unmapped.
    books = TurnFold(TURN)
    assert books.feed("thread/status/changed", {"threadId": THREAD, "status": {"type": "idle"}}) is None
    assert books.feed("warning", {"threadId": THREAD, "message": "careful"}) is None
    event = books.feed("item/hologram/delta", {"threadId": THREAD, "delta": "3d"})
    assert event == Unmapped("item/hologram/delta", {"threadId": THREAD, "delta": "3d"})


def test_turnfold_without_a_turn_id_skips_every_frame_that_names_a_turn():
    # Before turn/start answered, the fold cannot tell its turn's frames: the
    # Turn holds them in its subscription until the id is known.
    books = fold(started(agent_message("m")), turn_completed(), turn_id=None)
    assert books.started == {} and not books.done


def test_turnfold_turn_completed_without_a_turn_object_is_skipped_and_counted():
    # A malformed turn/completed (no turn object) is an InvalidNotification:
    # skipped and counted, the turn goes on and a well-formed one still ends it.
    books = TurnFold(TURN)
    event = books.feed("turn/completed", {"threadId": THREAD, "turn": None})
    assert isinstance(event, InvalidNotification) and event.reason == "turn/completed: turn is null"
    assert not books.done and books.invalid == 1
    books.feed("turn/completed", {"threadId": THREAD, "turn": {"id": TURN, "status": "completed", "error": None}})
    assert books.done and books.completed is not None and books.completed.status == "completed"


# -- items -----------------------------------------------------------------------------


def test_turnfold_items_last_writer_wins_in_first_completion_order():
    books = fold(
        completed(agent_message("a", "first")),
        completed(agent_message("b", "bee")),
        completed(agent_message("a", "second")),
        completed(agent_message("a", "third")),
    )
    assert list(books.items) == ["a", "b"]
    assert books.items["a"]["text"] == "third"
    done = books.feed(*turn_completed())
    assert [(i["id"], i["text"]) for i in done.items] == [("a", "third"), ("b", "bee")]


def test_turnfold_open_items_versus_every_tool_item_started():
    cmd = command("call_1", "inProgress")
    frames = (started(agent_message("a")), started(cmd), completed(agent_message("a", "done")))
    # A fold that keeps the history keeps no calls: nothing settles its tools.
    assert fold(*frames).started_tools() == [] and fold(*frames).started == {}
    books = fold(*frames, keep_items=False)
    assert list(books.open) == ["call_1"]
    assert list(books.started) == ["call_1"]  # only tools: what the step fold settles
    # Started again (a retried stream): open again; `started` keeps the first start.
    books.feed(*started(agent_message("a", "again")))
    assert list(books.open) == ["call_1", "a"]
    books.feed(*started(command("call_1", "completed")))
    # Settled as its call (built only when asked), from the first start.
    assert books.started_tools() == [tool_call(cmd)]
    assert books.started["call_1"] == cmd  # the item, not a call built for every tool
    # Completed: the step fold folds it; nothing is left to settle, nothing held.
    books.feed(*completed(command("call_1", "completed")))
    assert books.started == {} and books.started_tools() == []
    # Started again after its completion (a retried item): open, and settled if it never ends.
    again = command("call_1", "inProgress")
    books.feed(*started(again))
    assert books.started_tools() == [tool_call(again)]


def test_turnfold_without_the_history_keeps_no_completed_items():
    books = TurnFold(TURN, keep_items=False)
    for method, params in (started(agent_message("a")), completed(agent_message("a", "done"))):
        books.feed(method, params)
    books.feed("turn/completed", {"threadId": THREAD, "turn": {"id": TURN, "status": "completed", "error": None}})
    assert books.items == {} and books.open == {}
    assert books.completed is not None and books.completed.items == () and books.completed.abandoned == ()


def test_turnfold_completed_without_started_is_booked_and_never_open():
    books = fold(completed(agent_message("late", "hi")))
    assert list(books.items) == ["late"] and books.open == {} and books.started == {}


def test_turnfold_abandoned_are_the_items_open_at_completion():
    books = fold(
        started(agent_message("cut")),
        delta("cut", "partial"),
        started(command("call_1", "inProgress")),
        started(agent_message("ok")),
        completed(agent_message("ok", "fine")),
    )
    done = books.feed(*turn_completed("interrupted"))
    assert done.abandoned == ("cut", "call_1")
    assert [i["id"] for i in done.items] == ["ok"]


# -- usage -------------------------------------------------------------------------------


def test_turnfold_usage_sums_last_of_each_model_call_not_total():
    books = TurnFold(TURN)
    first = books.feed(*usage(USAGE_1, USAGE_1))
    second = books.feed(*usage(USAGE_2, USAGE_SUM))
    assert isinstance(first, TokenUsage) and isinstance(second, TokenUsage)
    assert second.total == U1 + U2 and second.context_window == 258400
    assert books.usage == U1 + U2
    done = books.feed(*turn_completed())
    assert done.usage == U1 + U2


def test_turnfold_usage_of_a_turn_without_usage_is_zero():
    assert fold(turn_completed()).completed.usage == Usage()


# -- errors ------------------------------------------------------------------------------


def test_turnfold_last_fatal_error_fills_a_failed_turn_without_error():
    books = fold(error({"message": "first"}, False), error(TURN_ERROR, False))
    assert books.last_error == TURN_ERROR  # the last one wins
    done = books.feed(*turn_completed("failed", None))
    assert (done.status, done.error, done.error_message) == ("failed", TURN_ERROR, TURN_ERROR["message"])


def test_turnfold_turn_completed_error_wins_over_the_last_error():
    own = {"message": "from turn/completed", "codexErrorInfo": "other", "additionalDetails": None}
    done = fold(error(TURN_ERROR, False), turn_completed("failed", own)).completed
    assert done.error == own


def test_turnfold_last_error_is_not_given_to_a_turn_that_did_not_fail():
    for status in ("interrupted", "completed"):
        done = fold(error(TURN_ERROR, False), turn_completed(status)).completed
        assert (done.status, done.error) == (status, None)


def test_turnfold_retrying_errors_are_events_not_the_last_error():
    books = TurnFold(TURN)
    event = books.feed(*error({"message": "Reconnecting... 1/5", "additionalDetails": "401"}, True))
    assert event == RetryingError("Reconnecting... 1/5", "401", None)
    assert books.last_error is None
    # A fatal error is no event of its own (turn/completed carries it) ...
    assert books.feed(*error(TURN_ERROR, False)) is None
    # ... and one whose error is not an object is not kept.
    assert books.feed(*error("just a string", False)) is None
    assert books.last_error == TURN_ERROR


# -- usage-limit failures ----------------------------------------------------------------

# usage_limit (0.171.0): the account's snapshot (sent before the error, no
# thread), then the error codex will not retry and turn/completed{failed}.
USAGE_ERROR = {
    "additionalDetails": None,
    "codexErrorInfo": "usageLimitExceeded",
    "message": "You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit "
    "https://chatgpt.com/settings/usage to purchase more credits or try again at 1:00 PM.",
    "misalignment": None,
}
SNAPSHOT = {
    "credits": None,
    "individualLimit": None,
    "limitId": "codex",
    "limitName": None,
    "normalModelSlug": None,
    "planType": None,
    "primary": {"resetsAt": 1796130000, "usedPercent": 100, "windowDurationMins": 300},
    "rateLimitReachedType": None,
    "secondary": {"resetsAt": 1796216400, "usedPercent": 40, "windowDurationMins": 10080},
    "spendControlReached": None,
}


class Snapshots:
    """The client's last rate-limit snapshot, as TurnFold reads it; counts the reads."""

    def __init__(self, snapshot: Optional[Mapping[str, Any]] = SNAPSHOT) -> None:
        self.snapshot = snapshot
        self.reads = 0

    def __call__(self) -> Optional[Mapping[str, Any]]:
        self.reads += 1
        return self.snapshot


def test_turnfold_usage_limit_failure_reads_the_last_snapshot_once_at_turn_completed():
    limits = Snapshots()
    books = TurnFold(TURN, rate_limits=limits)
    assert books.rate_limits is limits
    assert books.feed(*error(USAGE_ERROR, False)) is None
    assert limits.reads == 0  # not before turn/completed
    done = books.feed(*turn_completed("failed", USAGE_ERROR))
    assert limits.reads == 1
    assert (done.status, done.error, done.rate_limits) == ("failed", USAGE_ERROR, SNAPSHOT)
    failure = done.failure
    assert isinstance(failure, UsageLimitExceeded)
    assert (failure.resets_at, failure.rate_limits) == (1796130000, SNAPSHOT)


def test_turnfold_usage_limit_of_the_last_error_reads_the_snapshot_too():
    # A failed turn/completed without an error of its own takes the last fatal error.
    limits = Snapshots()
    books = TurnFold(TURN, rate_limits=limits)
    books.feed(*error(USAGE_ERROR, False))
    done = books.feed(*turn_completed("failed", None))
    assert (limits.reads, done.error, done.rate_limits) == (1, USAGE_ERROR, SNAPSHOT)
    assert done.failure.resets_at == 1796130000


def test_turnfold_other_endings_do_not_read_the_snapshot():
    for frames in (
        [turn_completed("failed", TURN_ERROR)],  # another failure: codexErrorInfo "other"
        [error(TURN_ERROR, False), turn_completed("failed", None)],
        [turn_completed("failed", dict(USAGE_ERROR, codexErrorInfo=None))],
        [turn_completed("completed")],
        [error(USAGE_ERROR, False), turn_completed("interrupted")],  # the error is not the turn's
    ):
        limits = Snapshots()
        books = TurnFold(TURN, rate_limits=limits)
        for method, params in frames:
            books.feed(method, params)
        assert (limits.reads, books.completed.rate_limits) == (0, None)
        assert books.completed.failure is None or type(books.completed.failure) is TurnFailed


def test_turnfold_usage_limit_without_a_snapshot_source_or_a_snapshot_has_no_reset_time():
    without_source = fold(turn_completed("failed", USAGE_ERROR)).completed  # TurnFold(TURN): no rate_limits
    assert without_source.rate_limits is None
    limits = Snapshots(None)  # the client saw no account/rateLimits/updated yet
    books = TurnFold(TURN, rate_limits=limits)
    without_snapshot = books.feed(*turn_completed("failed", USAGE_ERROR))
    assert (limits.reads, without_snapshot.rate_limits) == (1, None)
    for done in (without_source, without_snapshot):
        assert isinstance(done.failure, UsageLimitExceeded) and done.failure.resets_at is None


# -- feed() and book() -------------------------------------------------------------------


def test_turnfold_feed_maps_and_books_and_returns_the_event():
    books = TurnFold(TURN)
    event = books.feed(*started(agent_message("a")))
    assert event == ItemStarted(agent_message("a"))
    assert books.feed(*delta("a", "hi")) == AgentMessageDelta("a", "hi")
    assert isinstance(books.feed(*completed(agent_message("a", "hi"))), ItemCompleted)
    done = books.feed(*turn_completed())
    # The completed event returned is the one with the books, kept on the fold.
    assert done is books.completed and books.done
    assert (done.turn_id, done.status, done.error) == (TURN, "completed", None)


def test_turnfold_feed_gives_every_delta_like_notification_its_own_event():
    # The agent message delta has a hot path; the other streams with the same
    # itemId and delta fields are mapped by their own rows, exactly as to_event maps them.
    books = TurnFold(TURN)
    for method in (
        "item/commandExecution/outputDelta",
        "item/reasoning/textDelta",
        "item/reasoning/summaryTextDelta",
        "item/plan/delta",
        "item/agentMessage/delta",
    ):
        params = {"threadId": THREAD, "turnId": TURN, "itemId": "x", "delta": "d", "contentIndex": 0, "summaryIndex": 0}
        event = books.feed(method, params)
        assert event == to_event(method, params) and event is not None, method
    bad = books.feed("item/agentMessage/delta", {"threadId": THREAD, "turnId": TURN, "itemId": "x", "delta": 5})
    assert isinstance(bad, InvalidNotification) and books.invalid == 1  # the hot path's refusal is counted too


def test_turnfold_book_keeps_the_books_of_mapped_events_without_filtering():
    # book() is for events already mapped (and already known to be this
    # turn's): no turn id check, and no last-error bookkeeping -- a fatal
    # `error` maps to no event at all.
    books = TurnFold(TURN)
    assert books.book(None) is None
    delta_event = AgentMessageDelta("a", "x")
    assert books.book(delta_event) is delta_event
    books.book(ItemStarted(agent_message("a")))
    books.book(ItemStarted(command("call_1", "inProgress")))
    books.book(ItemCompleted(agent_message("a", "x")))
    books.book(TokenUsage(U1, U1))
    done = books.book(TurnCompleted(OTHER, "failed"))
    assert isinstance(done, TurnCompleted) and done is books.completed
    assert (done.turn_id, done.error, done.abandoned, done.usage) == (OTHER, None, ("call_1",), U1)
    assert [i["id"] for i in done.items] == ["a"]


def test_turnfold_feed_and_book_keep_the_same_books():
    frames = [
        started(agent_message("a")),
        delta("a", "x"),
        completed(agent_message("a", "x")),
        started(command("call_1", "inProgress")),
        usage(USAGE_1, USAGE_1),
        turn_completed("interrupted"),
    ]
    fed = fold(*frames)
    booked = TurnFold(TURN)
    for method, params in frames:
        booked.book(to_event(method, params))
    assert booked.completed == fed.completed
    assert (booked.items, booked.open, booked.started, booked.usage) == (fed.items, fed.open, fed.started, fed.usage)
