"""One codex turn's books, kept from its notifications.  Pure.

Theory of operation
-------------------
The wire does not hand a client the turn's history: ``turn/completed`` carries
only the last agent message (none for an interrupted or failed turn), items
can start and never complete (an interrupt, a cut stream codex retries), the
same item id can be started and completed several times (a retried
``response.incomplete``), and usage arrives per model call
(``thread/tokenUsage/updated``).  :class:`TurnFold` keeps those books, once,
for every reader of a turn: :class:`~._threads.Turn` (which yields the events)
and the agent's step fold (:mod:`._stepfold`, which reads :attr:`TurnFold.usage`
and :meth:`TurnFold.started_tools` instead of counting on its own).

* frames of other turns of the same thread are filtered out by turn id;
* items by id, the last completion winning, in the order first completed,
  kept compact (:mod:`._items`: JSON text compressed in blocks, decoded on
  access) -- or not at all for a reader that writes them elsewhere as they
  complete (``keep_items=False``: the agent);
* the items started and not (yet) completed -- *open* -- and, for that same
  reader, the open *tool* items as first started, in start order, whose calls
  the step fold settles if it never sees them finish (a reader that keeps the
  history has no step fold, and keeps none);
* usage, summed from ``tokenUsage.last`` of each model call;
* the last ``error`` that codex will not retry, in case ``turn/completed``
  carries none.

:meth:`TurnFold.feed` turns one notification into the event to yield (via
:func:`._mapping.to_event`, the one place that decides what a notification --
malformed or not -- becomes) and keeps the books; after ``turn/completed`` the
fold is :attr:`~TurnFold.done` and its :attr:`~TurnFold.completed` event holds
the items, the abandoned ids and the usage.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Type

from ._errors import ProtocolError
from ._events import (
    USAGE_LIMIT_EXCEEDED,
    AgentMessageDelta,
    Event,
    InvalidNotification,
    ItemCompleted,
    ItemStarted,
    TokenUsage,
    TurnCompleted,
    Usage,
)
from ._items import ItemArchive
from ._mapping import NOTIFICATIONS, TOOL_ITEMS, ToolCall, delta_row, to_event, tool_call

if TYPE_CHECKING:
    from dataclasses import replace

    from .protocol import RateLimitSnapshot, ThreadItem, TurnError
else:
    from ._dataclasses import replace  # a record's, without importing dataclasses


class TurnFold:
    """The books of one turn (``turn_id``); feed it the thread's notifications."""

    def __init__(
        self,
        turn_id: Optional[str] = None,
        keep_items: bool = True,
        rate_limits: Optional[Callable[[], Optional["RateLimitSnapshot"]]] = None,
    ) -> None:
        self.turn_id = turn_id
        #: Where a turn that failed on a usage limit reads the account's last
        #: rate-limit snapshot (a global notification the thread never sees:
        #: the client keeps it); called once, at ``turn/completed``.
        self.rate_limits = rate_limits
        #: Keep every completed item for :attr:`TurnCompleted.items` (the
        #: turn's history, compact); a reader that writes items elsewhere as
        #: they complete (the agent: to its log) passes False and keeps no
        #: history -- and the calls of the tools started instead (:attr:`started`).
        self.keep_items = keep_items
        self.archive: Optional[ItemArchive] = ItemArchive() if keep_items else None
        self.open: Dict[str, "ThreadItem"] = {}  # started, not completed since
        # Without a history: the tool items started and not completed since
        # (as first started), in start order: what the step fold needs to
        # settle a tool it never saw finish.  A call is built only then
        # (:meth:`started_tools`), not for every tool of the turn, and a long
        # turn holds only its open tools.
        self.started: Dict[str, "ThreadItem"] = {}
        self.usage = Usage()
        self.invalid = 0  # notifications skipped as malformed (InvalidNotification)
        self.last_error: Optional["TurnError"] = None
        self.completed: Optional[TurnCompleted] = None
        self._delta_row = _DELTA_ROW
        #: The class streamed deltas are built as (:meth:`deltas_as`).
        self.delta_type: Type[AgentMessageDelta] = AgentMessageDelta

    def deltas_as(self, cls: Type[AgentMessageDelta]) -> None:
        """Build streamed deltas as ``cls`` (a subclass of
        :class:`AgentMessageDelta`): the agent's turns build the
        :class:`~._events.MessageDelta` its listener is shown, one object a
        delta instead of two."""
        self._delta_row = _DELTA_ROW if cls is AgentMessageDelta else delta_row(cls)
        self.delta_type = cls

    @property
    def done(self) -> bool:
        """``turn/completed`` was folded."""
        return self.completed is not None

    @property
    def items(self) -> Dict[str, "ThreadItem"]:
        """The completed items so far by id, the last completion winning
        (decoded now, a snapshot; empty without a history)."""
        return {} if self.archive is None else self.archive.by_id()  # type: ignore[return-value]

    def started_tools(self) -> List[ToolCall]:
        """The call of every tool item started and not completed since, in start order."""
        return [call for call in map(tool_call, self.started.values()) if call is not None]

    def feed(self, method: str, params: Mapping[str, Any]) -> Optional[Event]:
        """Fold one notification of the thread; the event to yield, if any
        (``None`` for another turn's frames and for ignored methods)."""
        turn_id = params.get("turnId")
        if turn_id is None:
            if method == "turn/completed":
                turn = params.get("turn")
                turn_id = turn.get("id") if isinstance(turn, dict) else None
        if turn_id is not None and turn_id != self.turn_id:
            return None  # another turn of this thread
        if method == _DELTA:  # nine frames in ten: its row, and nothing to book
            try:
                return self._delta_row(params)
            except ProtocolError:
                pass  # the long way: an InvalidNotification, counted
        if method == "error" and not params.get("willRetry") and isinstance(params.get("error"), dict):
            self.last_error = params["error"]  # an ErrorNotification's TurnError
        row = NOTIFICATIONS.get(method)
        if row is None:
            return to_event(method, params)  # ignored or unmapped: the mapping decides
        try:  # the mapping's row, called here rather than through to_event (the hot path)
            event = row(params)
        except ProtocolError:
            event = to_event(method, params)  # an InvalidNotification, as to_event words it
        handler = _BOOKS.get(type(event))
        return event if handler is None else handler(self, event)

    def book(self, event: Optional[Event]) -> Optional[Event]:
        """Keep the books of one event of this turn (already mapped); returns
        it, or for ``turn/completed`` the completed event with the books."""
        handler = _BOOKS.get(type(event))
        return event if handler is None else handler(self, event)

    # -- the books, one per event type ---------------------------------------------

    def _started(self, event: ItemStarted) -> Event:
        item_id, item = event.item_id, event.item
        self.open[item_id] = item
        if self.archive is None and item.get("type") in TOOL_ITEMS and item_id not in self.started:
            self.started[item_id] = item
        return event

    def _completed(self, event: ItemCompleted) -> Event:
        item_id = event.item_id
        self.open.pop(item_id, None)
        if self.archive is not None:
            self.archive.add(item_id, event.item)
        else:
            self.started.pop(item_id, None)  # completed: the step fold folds it
        return event

    def _invalid(self, event: InvalidNotification) -> Event:
        self.invalid += 1
        return event

    def _usage(self, event: TokenUsage) -> Event:
        self.usage = self.usage + event.last
        return event

    def _finish(self, event: TurnCompleted) -> Event:
        error = event.error or (self.last_error if event.status == "failed" else None)
        limits = None
        if error is not None and error.get("codexErrorInfo") == USAGE_LIMIT_EXCEEDED and self.rate_limits is not None:
            limits = self.rate_limits()  # the reset time of TurnCompleted.failure (fixture usage_limit)
        self.completed = replace(
            event,
            error=error,
            items=() if self.archive is None else self.archive.freeze(),
            abandoned=tuple(self.open),
            usage=self.usage,
            rate_limits=limits,
        )
        return self.completed


#: The streamed delta and its row of the mapping, looked up once (the hot path of feed).
_DELTA = "item/agentMessage/delta"
_DELTA_ROW = NOTIFICATIONS[_DELTA]

_BOOKS: Dict[type, Callable[[TurnFold, Any], Event]] = {
    ItemStarted: TurnFold._started,
    ItemCompleted: TurnFold._completed,
    TokenUsage: TurnFold._usage,
    InvalidNotification: TurnFold._invalid,
    TurnCompleted: TurnFold._finish,
}

__all__ = ["TurnFold"]
