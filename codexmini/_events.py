"""codexmini's own turn events: small frozen values, one closed union.

A turn (:mod:`.thread`) yields these instead of raw notifications.  The wire
keeps its camelCase names; these are snake_case and hold only what a caller
reads.  Anything a newer codex sends that :mod:`.mapping` has no row for
arrives as :class:`Unmapped`, so nothing is silently lost.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Iterable, Mapping, Optional, Sequence, Tuple, Union

from ._errors import ProtocolError, TurnFailed, UsageLimitExceeded

if TYPE_CHECKING:
    from .protocol import RateLimitSnapshot, ThreadItem, TurnError

if TYPE_CHECKING:  # the checker sees the standard library; at run time, ._dataclasses (nothing compiled)
    from dataclasses import dataclass
else:
    from ._dataclasses import dataclass

_USAGE_KEYS = ("inputTokens", "cachedInputTokens", "outputTokens", "reasoningOutputTokens", "totalTokens")
_USAGE_FIELDS = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens", "total_tokens")
_object_new = object.__new__


def _usage(counts: "Iterable[int]") -> "Usage":
    """A :class:`Usage` of five counts, in field order, built without the
    frozen dataclass ``__init__``'s five ``object.__setattr__`` calls (three
    per token-usage notification, one every ten frames of a turn)."""
    usage: Usage = _object_new(Usage)
    usage.__dict__.update(zip(_USAGE_FIELDS, counts))
    return usage


@dataclass(frozen=True)
class Usage:
    """Token counts, as in the wire's ``TokenUsageBreakdown`` (a missing or
    null count is 0): two in each :class:`TokenUsage`, the turn's sum in
    :attr:`TurnCompleted.usage`.  Two usages add up with ``+``.  Each count
    is the wire's field of the same name in camelCase:

    * ``input_tokens``: ``inputTokens``.
    * ``cached_input_tokens``: ``cachedInputTokens``.
    * ``output_tokens``: ``outputTokens``.
    * ``reasoning_output_tokens``: ``reasoningOutputTokens``.
    * ``total_tokens``: ``totalTokens``.
    """

    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0
    reasoning_output_tokens: int = 0
    total_tokens: int = 0

    def __add__(self, other: "Usage") -> "Usage":
        return _usage(
            (
                self.input_tokens + other.input_tokens,
                self.cached_input_tokens + other.cached_input_tokens,
                self.output_tokens + other.output_tokens,
                self.reasoning_output_tokens + other.reasoning_output_tokens,
                self.total_tokens + other.total_tokens,
            )
        )

    def to_log(self) -> Dict[str, int]:
        """The session-log form (``docs/session-log.md``)."""
        return {
            "inputTokens": self.input_tokens,
            "cachedInputTokens": self.cached_input_tokens,
            "outputTokens": self.output_tokens,
            "reasoningOutputTokens": self.reasoning_output_tokens,
            "totalTokens": self.total_tokens,
        }

    @classmethod
    def from_wire(cls, breakdown: Optional[Mapping[str, Any]]) -> "Usage":
        """A ``TokenUsageBreakdown``; a missing or null count is 0, a count that
        is not an integer is a :class:`~codexmini.ProtocolError`."""
        if breakdown is None:
            return cls()
        if type(breakdown) is dict and cls is Usage:  # as parsed: the common case, checked by exact type
            get = breakdown.get
            # (_USAGE_KEYS, spelled out: a tuple of five gets beats any loop over them)
            a, b, c, d, e = (
                get("inputTokens"),
                get("cachedInputTokens"),
                get("outputTokens"),
                get("reasoningOutputTokens"),
                get("totalTokens"),
            )
            if type(a) is int and type(b) is int and type(c) is int and type(d) is int and type(e) is int:
                return _usage((a, b, c, d, e))  # (a null or a bool count: the long way)
        if not isinstance(breakdown, Mapping):
            raise ProtocolError(f"a token usage breakdown is {type(breakdown).__name__}, not an object")
        counts = []
        for key in _USAGE_KEYS:
            value = breakdown.get(key)
            if value is None:
                value = 0
            elif not isinstance(value, int) or isinstance(value, bool):
                raise ProtocolError(f"token count {key} is {type(value).__name__}, not an integer")
            counts.append(value)
        return _usage(counts) if cls is Usage else cls(*counts)


@dataclass(frozen=True)
class AgentMessageDelta:
    """A piece of an agent message's text as codex streams it
    (``item/agentMessage/delta``, most frames of a turn); the finished text
    comes with the item's :class:`ItemCompleted`.

    * ``item_id``: the ``agentMessage`` item the text belongs to.
    * ``delta``: the text, to append to the item's earlier deltas.
    """

    item_id: str
    delta: str


@dataclass(frozen=True)
class ReasoningSummaryDelta:
    """A piece of a reasoning item's summary as codex streams it
    (``item/reasoning/summaryTextDelta``).

    * ``item_id``: the ``reasoning`` item.
    * ``delta``: the text, to append to the part's earlier deltas.
    * ``summary_index``: which part of the summary it extends (``summaryIndex``; 0 when absent).
    """

    item_id: str
    delta: str
    summary_index: int = 0


@dataclass(frozen=True)
class ReasoningTextDelta:
    """A piece of a reasoning item's raw text (its ``content``) as codex
    streams it (``item/reasoning/textDelta``).

    * ``item_id``: the ``reasoning`` item.
    * ``delta``: the text, to append to the part's earlier deltas.
    * ``content_index``: which part of the content it extends (``contentIndex``; 0 when absent).
    """

    item_id: str
    delta: str
    content_index: int = 0


@dataclass(frozen=True)
class PlanDelta:
    """A piece of a proposed plan item's text as codex streams it
    (``item/plan/delta``, experimental in codex: the completed ``plan`` item
    is authoritative and may not match the deltas put together).

    * ``item_id``: the ``plan`` item.
    * ``delta``: the text, to append to the item's earlier deltas.
    """

    item_id: str
    delta: str


@dataclass(frozen=True)
class PlanUpdated:
    """The turn's plan, whole, each time codex updates it (``turn/plan/updated``).

    * ``explanation``: codex's explanation, or ``None``.
    * ``plan``: the steps, in order, each a ``(step, status)`` pair of strings;
      the status is ``pending``, ``inProgress`` or ``completed``.
    """

    explanation: Optional[str]
    plan: Tuple[Tuple[str, str], ...]  # (step, status)


@dataclass(frozen=True)
class CommandOutputDelta:
    """Output of a running command as codex streams it
    (``item/commandExecution/outputDelta``); the finished item has it all
    (``aggregatedOutput``).

    * ``item_id``: the ``commandExecution`` item.
    * ``delta``: the output text, to append to the item's earlier deltas.
    """

    item_id: str
    delta: str


@dataclass(frozen=True)
class _ItemEvent:
    """An item's lifecycle event; ``item`` is the wire's ``ThreadItem``."""

    item: "ThreadItem"

    @property
    def item_id(self) -> str:
        """The item's ``id`` ("" when it has none)."""
        return str(self.item.get("id", ""))

    @property
    def item_type(self) -> str:
        """The item's ``type`` (``agentMessage``, ``commandExecution`` ...; "" when it has none)."""
        return str(self.item.get("type", ""))


@dataclass(frozen=True)
class ItemStarted(_ItemEvent):
    """An item of the turn has started (``item/started``): a message,
    reasoning, a command, a file change, a tool call ...

    * ``item``: the wire's ``ThreadItem`` as sent, an object whose ``id`` and
      ``type`` are strings (:attr:`item_id`, :attr:`item_type`).
    """


@dataclass(frozen=True)
class ItemCompleted(_ItemEvent):
    """An item of the turn has finished (``item/completed``), in its final
    form.  An id can complete more than once (a retried response): in
    :attr:`TurnCompleted.items` the last completion wins.

    * ``item``: the wire's ``ThreadItem`` as sent, an object whose ``id`` and
      ``type`` are strings (:attr:`item_id`, :attr:`item_type`).
    """


@dataclass(frozen=True)
class TokenUsage:
    """Token usage, after each model call (``thread/tokenUsage/updated``).

    * ``last``: the latest model call's (``tokenUsage.last``).
    * ``total``: the thread's so far (``tokenUsage.total``).
    * ``context_window``: the model's context window in tokens
      (``modelContextWindow``), or ``None``.
    """

    last: Usage
    total: Usage
    context_window: Optional[int] = None


@dataclass(frozen=True)
class DiffUpdated:
    """The turn's diff has changed (``turn/diff/updated``).

    * ``diff``: the latest unified diff of all the turn's file changes, whole.
    """

    diff: str


@dataclass(frozen=True)
class RetryingError:
    """An ``error`` with ``willRetry: true``: codex is retrying; not fatal,
    the turn goes on.  (An error codex will not retry is no event: the
    ``turn/completed`` of the failed turn carries it.)

    * ``message``: the error's ``message`` (``""`` when null).
    * ``details``: its ``additionalDetails``, or ``None``.
    * ``info``: its ``codexErrorInfo`` as sent (the kind of error), or ``None``.
    """

    message: str
    details: Optional[str] = None
    info: Any = None


@dataclass(frozen=True)
class TurnCompleted:
    """The end of a turn, whatever its status (``turn/completed``): a turn's
    last event.  ``items``, ``abandoned`` and ``usage`` are the books of the
    turn that saw the ``item/*`` and usage notifications; ``error_message`` is
    the error's message (``""`` when none).

    * ``turn_id``: the turn's id.
    * ``status``: ``completed``, ``interrupted`` or ``failed``.
    * ``error``: the wire's ``TurnError``: the turn's own, else (a failed turn)
      the last ``error`` codex did not retry; ``None`` when there is neither.
    * ``items``: the turn's history built from ``item/*`` notifications -- not
      the wire's ``turn.items``, which holds only the last agent message --
      in order of first completion, the last completion of each id winning;
      empty for a turn started with ``keep_items=False`` (the agent's).  A
      read-only sequence kept compact (compressed JSON) and decoded on
      access: each access returns fresh dicts; it equals a tuple or list of
      the same items.
    * ``abandoned``: the ids of the items that started but never completed.
    * ``usage``: the turn's token usage, each model call's ``last`` summed.
    * ``rate_limits``: the account's last rate-limit snapshot when the turn
      failed on a usage limit (:attr:`failure` reads the reset time from it);
      else ``None``.
    """

    turn_id: str
    status: str
    error: Optional["TurnError"] = None
    items: Sequence[Mapping[str, Any]] = ()
    abandoned: Tuple[str, ...] = ()
    usage: Usage = Usage()
    #: The account's last rate-limit snapshot when a turn failed on a usage
    #: limit (what :attr:`failure` reads the reset time from); else ``None``.
    rate_limits: Optional["RateLimitSnapshot"] = None

    @property
    def error_message(self) -> str:
        """The error's ``message`` ("" when there is none)."""
        return str(self.error.get("message") or "") if self.error else ""

    @property
    def failure(self) -> Optional[TurnFailed]:
        """``None`` unless the turn ``failed``; then a :class:`~codexmini.TurnFailed`
        value -- a :class:`~codexmini.UsageLimitExceeded`, with the reset time,
        when codex said the usage limit was hit (``codexErrorInfo:
        "usageLimitExceeded"``, fixture ``usage_limit``)."""
        if self.status != "failed":
            return None
        if self.error is not None and self.error.get("codexErrorInfo") == USAGE_LIMIT_EXCEEDED:
            return UsageLimitExceeded(self.turn_id, self.error, resets_at(self.rate_limits), self.rate_limits)
        return TurnFailed(self.turn_id, self.error)

    def raise_for_status(self) -> None:
        """Raise :attr:`failure` if the turn failed (``interrupted`` is not a failure)."""
        failure = self.failure
        if failure is not None:
            raise failure


#: The ``codexErrorInfo`` of a turn that failed on the account's usage limit.
USAGE_LIMIT_EXCEEDED = "usageLimitExceeded"


@dataclass(frozen=True)
class RateLimitWindow:
    """One window of a rate-limit snapshot (the wire's ``RateLimitWindow``),
    in :class:`RateLimitsUpdated`.

    * ``used_percent``: how much of it is used, in percent (``usedPercent``).
    * ``window_minutes``: how long it spans, in minutes (``windowDurationMins``), or ``None``.
    * ``resets_at``: when it resets, in Unix seconds (``resetsAt``), or ``None``.
    """

    used_percent: int
    window_minutes: Optional[int] = None
    resets_at: Optional[int] = None


@dataclass(frozen=True)
class RateLimitsUpdated:
    """``account/rateLimits/updated``: the account's rate-limit snapshot, which
    codex sends (a global notification, no thread) when a model response
    carries rate-limit headers.  A turn never yields it; a subscription to
    global notifications does.

    * ``limit_id``: the snapshot's ``limitId``, or ``None``.
    * ``primary``: its ``primary`` window, or ``None``.
    * ``secondary``: its ``secondary`` window, or ``None``.
    * ``snapshot``: the wire's ``RateLimitSnapshot`` as sent; the windows are read out of it.
    """

    limit_id: Optional[str]
    primary: Optional[RateLimitWindow]
    secondary: Optional[RateLimitWindow]
    snapshot: "RateLimitSnapshot"

    @property
    def resets_at(self) -> Optional[int]:
        """When the exhausted window(s) reset (the latest), or ``None`` when no window is at 100%."""
        return resets_at(self.snapshot)


def resets_at(snapshot: Optional["RateLimitSnapshot"]) -> Optional[int]:
    """The reset time (Unix seconds) of the latest-resetting window of
    ``snapshot`` that is used up (``usedPercent >= 100``); ``None`` if none is
    or the snapshot names no reset time."""
    if not isinstance(snapshot, Mapping):
        return None
    times = []
    for window in (snapshot.get("primary"), snapshot.get("secondary")):
        if isinstance(window, Mapping):
            used, at = window.get("usedPercent"), window.get("resetsAt")
            if isinstance(used, (int, float)) and used >= 100 and isinstance(at, int):
                times.append(at)
    return max(times) if times else None


@dataclass(frozen=True)
class MessageDelta(AgentMessageDelta):
    """Streamed agent text, tied to the durable assistant message it is
    becoming: the :class:`~codexmini.Agent`'s form of an
    :class:`AgentMessageDelta` (it *is* one, with the message's id), which an
    agent's listener sees once per delta in place of the raw event.

    * ``item_id``: the ``agentMessage`` item streaming.
    * ``delta``: the text, to append to the item's earlier deltas.
    * ``message_id``: that message's id in the session log.
    """

    message_id: str


@dataclass(frozen=True)
class MessageSummaryDelta(ReasoningSummaryDelta):
    """Streamed reasoning summary, tied to the durable assistant message its
    reasoning block will be part of: the :class:`~codexmini.Agent`'s form of
    a :class:`ReasoningSummaryDelta` (it *is* one), which an agent's listener
    sees in place of the raw event.

    * ``item_id``: the ``reasoning`` item.
    * ``delta``: the text, to append to the part's earlier deltas.
    * ``summary_index``: which part of the summary it extends.
    * ``message_id``: the id in the session log of the message the step's
      stream flows into (as a :class:`MessageDelta`'s).
    """

    message_id: str = ""


@dataclass(frozen=True)
class MessageReasoningDelta(ReasoningTextDelta):
    """Streamed raw reasoning text, tied to its message: the agent's form of a
    :class:`ReasoningTextDelta`.

    * ``item_id``: the ``reasoning`` item.
    * ``delta``: the text, to append to the part's earlier deltas.
    * ``content_index``: which part of the content it extends.
    * ``message_id``: as :class:`MessageSummaryDelta`'s.
    """

    message_id: str = ""


@dataclass(frozen=True)
class MessagePlanDelta(PlanDelta):
    """Streamed plan text, tied to the message the step's stream flows into:
    the agent's form of a :class:`PlanDelta`.  A plan is no content block:
    its text is shown as it streams and not logged (codex's completed
    ``plan`` item is authoritative).

    * ``item_id``: the ``plan`` item.
    * ``delta``: the text, to append to the item's earlier deltas.
    * ``message_id``: as :class:`MessageSummaryDelta`'s.
    """

    message_id: str


@dataclass(frozen=True)
class SessionStarted:
    """An agent's session header was just written (once per agent, before
    its first turn's events): ``reason`` (``initial``, or ``resume`` when the
    log already had a header), ``model`` (or ``default``) and
    ``codex_version``, as the ``session/header`` says."""

    reason: str
    model: str
    codex_version: str


@dataclass(frozen=True)
class PhaseChanged:
    """The agent's :attr:`~codexmini.Agent.phase` changed: ``phase`` is the
    new one (``idle``, ``running`` or ``maintenance``), ``previous`` the one
    before.  ``running`` comes before a turn's first event, ``idle`` after its
    ``turn/end`` is written."""

    phase: str
    previous: str


@dataclass(frozen=True)
class MessageStreamEnd:
    """The end of one streamed agent message (an agent event, after its
    :class:`MessageDelta` events).

    * ``message_id``: the message its deltas named.
    * ``item_id``: the ``agentMessage`` item that streamed.
    * ``committed``: true when its text is in the ``assistant/message``
      ``message_id`` just written; false when the stream was *abandoned* --
      cut and retried by codex, superseded, or cut short by the end of the
      turn -- so what was shown of it is not in the log.
    """

    message_id: str
    item_id: str
    committed: bool


@dataclass(frozen=True)
class InvalidNotification:
    """A notification the turn understands, but whose fields break the schema
    (a delta that is not a string, an item that is not an object, a token
    count that is not a number).  Skipped by every reader and counted
    (``turn.books.invalid``); the turn goes on.

    * ``method``: the notification's method.
    * ``params``: its params, as sent.
    * ``reason``: what is wrong, naming the method and the field
      (``"item/agentMessage/delta: delta is int, not a string"``).
    """

    method: str
    params: Mapping[str, Any]
    reason: str


@dataclass(frozen=True)
class Unmapped:
    """A notification the mapping (:mod:`._mapping`) neither maps nor ignores
    (a newer codex): kept, not dropped.

    * ``method``: the notification's method.
    * ``params``: its params, as sent.
    """

    method: str
    params: Mapping[str, Any]


#: Every event a turn or an agent yields: one closed union (match with ``isinstance``).
Event = Union[
    AgentMessageDelta,
    ReasoningSummaryDelta,
    ReasoningTextDelta,
    PlanDelta,
    PlanUpdated,
    CommandOutputDelta,
    ItemStarted,
    ItemCompleted,
    TokenUsage,
    DiffUpdated,
    RetryingError,
    TurnCompleted,
    InvalidNotification,
    Unmapped,
    MessageDelta,
    MessageSummaryDelta,
    MessageReasoningDelta,
    MessagePlanDelta,
    MessageStreamEnd,
    SessionStarted,
    PhaseChanged,
    RateLimitsUpdated,
]

__all__ = [
    "AgentMessageDelta",
    "CommandOutputDelta",
    "DiffUpdated",
    "Event",
    "InvalidNotification",
    "ItemCompleted",
    "ItemStarted",
    "MessageDelta",
    "MessagePlanDelta",
    "MessageReasoningDelta",
    "MessageStreamEnd",
    "MessageSummaryDelta",
    "PhaseChanged",
    "PlanDelta",
    "PlanUpdated",
    "RateLimitWindow",
    "RateLimitsUpdated",
    "ReasoningSummaryDelta",
    "ReasoningTextDelta",
    "RetryingError",
    "SessionStarted",
    "TokenUsage",
    "TurnCompleted",
    "Unmapped",
    "Usage",
]
