"""codexmini's own turn events: small frozen values, one closed union.

A turn (:mod:`.thread`) yields these instead of raw notifications.  The wire
keeps its camelCase names; these are snake_case and hold only what a caller
reads.  Anything a newer codex sends that :mod:`.mapping` has no row for
arrives as :class:`Unmapped`, so nothing is silently lost.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Tuple, Union

from ._errors import ProtocolError

_USAGE_KEYS = ("inputTokens", "cachedInputTokens", "outputTokens", "reasoningOutputTokens", "totalTokens")


@dataclass(frozen=True)
class Usage:
    """Token counts, as in the wire's ``TokenUsageBreakdown``."""

    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0
    reasoning_output_tokens: int = 0
    total_tokens: int = 0

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(
            self.input_tokens + other.input_tokens,
            self.cached_input_tokens + other.cached_input_tokens,
            self.output_tokens + other.output_tokens,
            self.reasoning_output_tokens + other.reasoning_output_tokens,
            self.total_tokens + other.total_tokens,
        )

    def to_log(self) -> Dict[str, int]:
        """The session-log form (SPEC §5)."""
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
        return cls(*counts)


@dataclass(frozen=True)
class AgentMessageDelta:
    item_id: str
    delta: str


@dataclass(frozen=True)
class ReasoningSummaryDelta:
    item_id: str
    delta: str
    summary_index: int = 0


@dataclass(frozen=True)
class ReasoningTextDelta:
    item_id: str
    delta: str
    content_index: int = 0


@dataclass(frozen=True)
class PlanDelta:
    item_id: str
    delta: str


@dataclass(frozen=True)
class PlanUpdated:
    explanation: Optional[str]
    plan: Tuple[Tuple[str, str], ...]  # (step, status)


@dataclass(frozen=True)
class CommandOutputDelta:
    item_id: str
    delta: str


@dataclass(frozen=True)
class _ItemEvent:
    """An item's lifecycle event; ``item`` is the wire's ``ThreadItem``."""

    item: Mapping[str, Any]

    @property
    def item_id(self) -> str:
        return str(self.item.get("id", ""))

    @property
    def item_type(self) -> str:
        return str(self.item.get("type", ""))


@dataclass(frozen=True)
class ItemStarted(_ItemEvent):
    pass


@dataclass(frozen=True)
class ItemCompleted(_ItemEvent):
    pass


@dataclass(frozen=True)
class TokenUsage:
    """``last``: the latest model call; ``total``: the thread so far."""

    last: Usage
    total: Usage
    context_window: Optional[int] = None


@dataclass(frozen=True)
class DiffUpdated:
    diff: str


@dataclass(frozen=True)
class RetryingError:
    """An ``error`` with ``willRetry: true``: codex is retrying; not fatal."""

    message: str
    details: Optional[str] = None
    info: Any = None


@dataclass(frozen=True)
class TurnCompleted:
    """The end of a turn, whatever its status (``completed``, ``interrupted``,
    ``failed``).  ``items`` is the turn's history built from ``item/*``
    notifications -- not the wire's ``turn.items``, which holds only the last
    agent message -- with the last completion of each item id winning;
    ``abandoned`` lists the ids that started but never completed."""

    turn_id: str
    status: str
    error: Optional[Mapping[str, Any]] = None
    items: Tuple[Mapping[str, Any], ...] = ()
    abandoned: Tuple[str, ...] = ()
    usage: Usage = Usage()

    @property
    def error_message(self) -> str:
        return str((self.error or {}).get("message") or "")


@dataclass(frozen=True)
class MessageDelta:
    """Streamed agent text, tied to the durable assistant message it is
    becoming: ``message_id`` is that message's id in the session log (an
    agent event: the :class:`~codexmini.Agent` emits it beside the raw
    :class:`AgentMessageDelta`)."""

    message_id: str
    item_id: str
    delta: str


@dataclass(frozen=True)
class MessageStreamEnd:
    """The end of one streamed agent message (an agent event): ``committed``
    when its text is in the ``assistant/message`` ``message_id`` just written;
    not committed when the stream was *abandoned* -- cut and retried by codex,
    superseded, or cut short by the end of the turn -- so what was shown of it
    is not in the log."""

    message_id: str
    item_id: str
    committed: bool


@dataclass(frozen=True)
class InvalidNotification:
    """A notification the turn understands, but whose fields break the schema
    (a delta that is not a string, an item that is not an object, a token
    count that is not a number).  Skipped by every reader and counted
    (``turn.books.invalid``); the turn goes on."""

    method: str
    params: Mapping[str, Any]
    reason: str


@dataclass(frozen=True)
class Unmapped:
    """A notification :mod:`.mapping` has no row for (a newer codex)."""

    method: str
    params: Mapping[str, Any]


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
    MessageStreamEnd,
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
    "MessageStreamEnd",
    "PlanDelta",
    "PlanUpdated",
    "ReasoningSummaryDelta",
    "ReasoningTextDelta",
    "RetryingError",
    "TokenUsage",
    "TurnCompleted",
    "Unmapped",
    "Usage",
]
