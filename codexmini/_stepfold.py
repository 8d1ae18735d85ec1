"""The step fold: one codex turn's events → session-log writes.  Pure.

A codex turn runs the model's whole agentic loop: reasoning, text, a tool
call, its result, more reasoning, another tool, a final answer.  The session
log wants that cut into *steps*, one per assistant segment: a segment is the
reasoning and text of one model answer followed by its tool calls.
:class:`StepFold` consumes :mod:`._events` in order and returns the log
writes they imply, as :class:`Write` values; the agent appends them.  It never
touches a file, and reads no clock but the one it is given (``clock``: when a
tool starts, and at the end of a turn that left tools running).

The rules, each pinned by the recorded scenarios (``docs/session-log.md``
states them as the log's format):

* a new segment after a settled tool result ends the step (``segment``) and
  starts the next;
* one ``assistant/message`` per segment: reasoning blocks, then text, then a
  ``tool-call`` block per tool, followed by its ``tool/call`` and
  ``tool/result``;
* an agent message completed again (a retried ``response.incomplete``)
  replaces its text; one abandoned by a retried cut stream is dropped;
* the codex turn's usage, read from the turn's own books
  (:class:`~._turnfold.TurnFold`), goes on the last message written at
  completion: a model call's usage races with the tool items it started;
* steered input is logged where codex echoes it, after the answer it
  interrupted;
* a tool result carries what codex reported of the call: its status, a
  command's exit code, and for a declined call the approval answer that
  declined it (:meth:`StepFold.approval`: the agent tells the fold each
  answer it logs as ``approval/decision``);
* a tool item started and never completed gets an explicit ``abandoned``
  error result, with how the step ended and -- when the fold was given a
  ``clock`` -- how long the tool had run by then (codex has no timed-out
  status: a command that outlives its wait keeps running, and the codex turn
  may end first).

Streamed agent text is announced as :class:`~._events.MessageDelta` with the
id of the durable message it is becoming and ends with
:class:`~._events.MessageStreamEnd` (``committed`` or not);
:meth:`StepFold.signals` hands them over.  They never change the log.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Set, Tuple, cast

from ._events import (
    AgentMessageDelta,
    Event,
    ItemCompleted,
    ItemStarted,
    MessageDelta,
    MessagePlanDelta,
    MessageReasoningDelta,
    MessageStreamEnd,
    MessageSummaryDelta,
    PlanDelta,
    ReasoningSummaryDelta,
    ReasoningTextDelta,
    RetryingError,
    Usage,
)
from ._mapping import TOOL_ITEMS, ToolCall, tool_call, tool_result
from ._prompt import reasoning_block, text_block, tool_call_block
from ._turnfold import TurnFold

if TYPE_CHECKING:  # wire types (codexmini.protocol): what the fold reads of an item
    from .protocol import AgentMessageThreadItem, ReasoningThreadItem, ThreadItem

if TYPE_CHECKING:  # the checker sees the standard library; at run time, ._dataclasses (nothing compiled)
    from typing import NamedTuple
else:
    from ._dataclasses import NamedTuple

_object_new = object.__new__


class Write(NamedTuple):
    """One session-log append: ``type``/``data`` at ``step`` of the current turn
    (a tuple: five of them per tool call, built without a dataclass's per-field
    ``object.__setattr__``)."""

    type: str
    data: Dict[str, Any]
    step: int


#: The text of an abandoned tool's result.
ABANDONED = "the tool call did not finish (the turn ended first)"

#: Item types that are neither tools nor message content; counted, not logged.
_CONTENT_ITEMS = frozenset({"agentMessage", "reasoning", "userMessage", "plan"})


class StepFold:
    """Folds one codex turn into session-log writes, starting at ``step``."""

    def __init__(
        self,
        *,
        step: int,
        model: str,
        new_id: Callable[[], str] = lambda: os.urandom(16).hex(),
        clock: Optional[Callable[[], float]] = None,
        shows: bool = True,
    ) -> None:
        self.step = step
        #: Someone sees the stream events (the agent has a listener): the
        #: reasoning and plan deltas are stamped with their message id.
        self.shows = shows
        self.model = model
        self.new_id = new_id
        #: Seconds, read when a tool item starts and when the turn ends with
        #: tools still running (their ``elapsedMs``); ``None``: not timed.
        self.clock = clock
        self._tool_started: Dict[str, float] = {}  # tool item id → clock() at its first item/started
        self._approvals: Dict[str, Dict[str, str]] = {}  # item id → the last approval answer logged for it
        self.held: Optional[Dict[str, Any]] = None
        self.pending_reasoning: List[str] = []
        self.streamed: Dict[Tuple[str, str], Dict[int, str]] = {}  # (item, summary|content) → parts
        self.settled = 0
        self._tools_seen: Set[str] = set()  # tool call ids settled in this fold
        self._text_at: Dict[str, int] = {}  # agent message id → its block in the held message
        self.ignored: "Counter[str]" = Counter()  # item types that are not tools, by type
        self.messages = 0  # assistant messages written
        self.tool_calls = 0
        self._steered: List[List[Dict[str, Any]]] = []  # sent with turn/steer, not echoed yet
        self._user_items = 0
        self._reserved: Optional[str] = None  # the id the next held message takes (a stream announced it)
        #: An agent message item streaming → the id of the message announced
        #: for it (the agent's loop reads it for every delta: :meth:`stream`'s
        #: work without its call).
        self.streams: Dict[str, str] = {}
        self._committing: Dict[str, str] = {}  # item completed into the held message → its id
        self._signals: List[Event] = []

    # -- events --------------------------------------------------------------

    def feed(self, event: Event) -> List[Write]:
        out: List[Write] = []
        fold = _FOLDS.get(type(event))
        # Anything else (usage, item starts) is for display or for the turn's
        # books: the finished items carry the text.
        if fold is not None:
            fold(self, event, out)
        return out

    def _summary_delta(self, event: ReasoningSummaryDelta, out: List[Write]) -> None:
        self._begin_segment(out)
        parts = self.streamed.setdefault((event.item_id, "summary"), {})
        parts[event.summary_index] = parts.get(event.summary_index, "") + event.delta
        self._stamp(event, MessageSummaryDelta)

    def _text_delta(self, event: ReasoningTextDelta, out: List[Write]) -> None:
        self._begin_segment(out)
        parts = self.streamed.setdefault((event.item_id, "content"), {})
        parts[event.content_index] = parts.get(event.content_index, "") + event.delta
        self._stamp(event, MessageReasoningDelta)

    def _plan_delta(self, event: PlanDelta, out: List[Write]) -> None:
        self._begin_segment(out)
        self._stamp(event, MessagePlanDelta)

    def _stamp(self, event: Event, form: Callable[..., Event]) -> None:
        """Show ``event`` (a reasoning or plan delta) in its agent ``form``,
        with the id of the message the step's stream flows into, among the
        stream events, after the step rotation it may have caused."""
        message_id = self._stream_id()  # reserved all the same: the log's ids do not depend on a listener
        if self.shows:
            self._signals.append(form(**event.__dict__, message_id=message_id))

    def _item_started(self, event: ItemStarted, out: List[Write]) -> None:
        item = event.item  # (its id and type as the event's properties read them, without their calls)
        if item.get("type") in TOOL_ITEMS and self.clock is not None:
            item_id = str(item.get("id", ""))
            if item_id not in self._tool_started:
                self._tool_started[item_id] = self.clock()  # its first start

    def _item_completed(self, event: ItemCompleted, out: List[Write]) -> None:
        self._completed(event.item, out)

    def _message_delta(self, event: AgentMessageDelta, out: List[Write]) -> None:
        self._stream(event)

    def _retrying(self, event: RetryingError, out: List[Write]) -> None:
        self._abandon_streams()  # the stream was cut: codex retries with a new item

    def signals(self) -> List[Event]:
        """The stream events produced since the last call (for listeners)."""
        signals, self._signals = self._signals, []
        return signals

    def stream(self, event: AgentMessageDelta) -> MessageDelta:
        """The :class:`~._events.MessageDelta` for a streamed delta (the hot
        path: the agent calls this instead of :meth:`feed` for every delta,
        which writes nothing): the event itself, its message id filled in,
        when the turn built it as one (the agent's turns:
        :meth:`._turnfold.TurnFold.deltas_as`), else a new one."""
        item_id = event.item_id
        message_id = self.streams.get(item_id)
        if message_id is None:
            message_id = self._announce(item_id)
        if type(event) is MessageDelta:
            # Not shown to anyone yet: its one field still unset is filled here.
            event.__dict__["message_id"] = message_id
            return event
        # Built without dataclass __init__'s per-field object.__setattr__.
        delta: MessageDelta = _object_new(MessageDelta)
        fields = delta.__dict__
        fields["item_id"] = item_id
        fields["delta"] = event.delta
        fields["message_id"] = message_id
        return delta

    def streaming(self, event: AgentMessageDelta) -> None:
        """:meth:`stream` with no one to show it to (an agent without a
        listener): the stream is announced, no event is built."""
        if event.item_id not in self.streams:
            self._announce(event.item_id)

    def _announce(self, item_id: str) -> str:
        """A new stream: the message its text becomes."""
        message_id = self.streams[item_id] = self._stream_id()
        return message_id

    def _stream_id(self) -> str:
        """The message the step's stream flows into: the held one, else the
        next one's id, reserved."""
        if self.held is not None:
            held_id: str = self.held["id"]
            return held_id
        self._reserved = self._reserved or self.new_id()
        return self._reserved

    def _stream(self, event: AgentMessageDelta) -> None:
        self._signals.append(self.stream(event))

    def _abandon_streams(self) -> None:
        for item_id, message_id in self.streams.items():
            self._signals.append(MessageStreamEnd(message_id, item_id, committed=False))
        self.streams.clear()

    def steer(self, messages: List[Dict[str, Any]]) -> None:
        """User messages sent into this codex turn with one ``turn/steer`` (a
        message and the skills it invoked): logged where codex echoes them (one
        ``userMessage`` item), after what the model said before them."""
        self._steered.append(list(messages))

    def unsteer(self, messages: List[Dict[str, Any]]) -> bool:
        """codex refused the steer: forget those messages.  False when they
        are no longer pending (echoed, or handed back by :meth:`unechoed` when
        the turn ended first): then they are not the caller's to re-deliver."""
        if messages in self._steered:
            self._steered.remove(messages)
            return True
        return False

    def approval(self, item_id: str, decision: str, by: str) -> None:
        """codexmini answered an approval for ``item_id`` (logged as
        ``approval/decision``): a call codex then reports ``declined`` links
        to it in its result (``approval``: the last answer for the item)."""
        self._approvals[item_id] = {"decision": decision, "by": by}

    def unechoed(self) -> List[Dict[str, Any]]:
        """Steered messages codex never echoed (the turn ended first)."""
        pending, self._steered = self._steered, []
        return [message for group in pending for message in group]

    def finish(self, books: TurnFold, completed: bool = True, ended: Optional[str] = None) -> List[Write]:
        """The turn is over: settle the tools it started that never finished
        here, flush what is held -- with the turn's usage when the turn was
        consumed to its ``turn/completed`` (``completed``; not after a cancel
        or a dead child, where the usage is not certain).  ``ended`` is the
        reason of the ``step/end`` that follows (``completed``, ``aborted``,
        ``blocked``, ``error``): an abandoned tool's result says it."""
        out: List[Write] = []
        now: Optional[float] = None
        for call in books.started_tools():
            if call.call_id not in self._tools_seen:
                extra: Dict[str, Any] = {}
                if ended is not None:
                    extra["stepEnd"] = ended
                started = self._tool_started.get(call.call_id)
                if started is not None and self.clock is not None:
                    now = self.clock() if now is None else now
                    extra["elapsedMs"] = max(0, round((now - started) * 1000))
                self._tool(call, ABANDONED, True, "abandoned", out, extra)
        self._flush(out)
        self._abandon_streams()  # streamed, never completed: the turn ended first
        if completed and books.done and books.usage != Usage():
            for write in reversed(out):
                if write.type == "assistant/message":
                    write.data["usage"] = books.usage.to_log()
                    break
        return out

    # -- internals -----------------------------------------------------------

    def _completed(self, item: "ThreadItem", out: List[Write]) -> None:
        kind: str = item.get("type", "")
        if kind == "userMessage":
            self._user_items += 1
            # The first is the step's prompt; later ones are steered input.
            if self._user_items > 1 and self._steered:
                self._flush(out)
                out.extend(Write("user/message", message, self.step) for message in self._steered.pop(0))
        elif kind == "reasoning":
            text = self._reasoning_text(cast("ReasoningThreadItem", item))
            if text:
                self.pending_reasoning.append(text)
        elif kind == "agentMessage":
            self._agent_message(cast("AgentMessageThreadItem", item), out)
        elif kind in TOOL_ITEMS:
            call = tool_call(item)
            result = tool_result(item)
            assert call is not None and result is not None
            extra: Dict[str, Any] = {}
            if result.exit_code is not None:
                extra["exitCode"] = result.exit_code
            if result.status == "declined" and call.call_id in self._approvals:
                extra["approval"] = dict(self._approvals[call.call_id])
            self._tool(call, result.text, result.is_error, result.status, out, extra)
        elif kind not in _CONTENT_ITEMS:
            self.ignored[kind] += 1

    def _agent_message(self, item: "AgentMessageThreadItem", out: List[Write]) -> None:
        item_id = str(item.get("id"))
        text: Optional[str] = item.get("text")
        if self.held is not None and item_id in self._text_at:
            # Completed again (codex retries a response.incomplete under the
            # same item id): the last completion wins, nothing is repeated.
            self.held["content"][self._text_at[item_id]] = text_block(str(text or ""))
            self._commit_stream(item_id, self.held["id"])
            return
        if not text and not self.pending_reasoning:
            self._end_stream(item_id, committed=False)
            return  # nothing to say: no segment, no empty step
        self._begin_segment(out)
        held = self._held()
        self._fold_reasoning(held)
        if text:
            self._commit_stream(item_id, held["id"])
            self._text_at[item_id] = len(held["content"])
            held["content"].append(text_block(str(text)))

    def _tool(
        self, call: ToolCall, text: str, is_error: bool, status: str, out: List[Write], extra: Dict[str, Any]
    ) -> None:
        self._tools_seen.add(call.call_id)
        self._begin_segment(out)
        held = self._held()
        self._fold_reasoning(held)
        held["content"].append(tool_call_block(call.call_id, call.name, call.arguments))
        self._flush(out)
        out.append(
            Write(
                "tool/call",
                {"callId": call.call_id, "name": call.name, "arguments": call.arguments, "kind": call.kind},
                self.step,
            )
        )
        content = [text_block(text)] if text else []
        data = {"callId": call.call_id, "content": content, "isError": is_error, "status": status}
        data.update(extra)  # exitCode, approval, stepEnd, elapsedMs: when known
        out.append(Write("tool/result", data, self.step))
        self.settled += 1
        self.tool_calls += 1

    def _begin_segment(self, out: List[Write]) -> None:
        if self.settled:
            out.append(Write("step/end", {"reason": "segment"}, self.step))
            self.step += 1
            out.append(Write("step/start", {}, self.step))
            self.settled = 0

    def _held(self) -> Dict[str, Any]:
        if self.held is None:
            held_id, self._reserved = self._reserved or self.new_id(), None
            self.held = {"id": held_id, "content": []}
            self._text_at = {}
        return self.held

    def _commit_stream(self, item_id: str, message_id: str) -> None:
        """The item's text went into the held message: its stream (if it
        streamed) ends committed when that message is written."""
        announced = self.streams.pop(item_id, None)
        if announced is None:
            return
        if announced == message_id:
            self._committing[item_id] = message_id
        else:  # announced for a message that was written without it
            self._signals.append(MessageStreamEnd(announced, item_id, committed=False))

    def _end_stream(self, item_id: str, committed: bool) -> None:
        message_id = self.streams.pop(item_id, None)
        if message_id is not None:
            self._signals.append(MessageStreamEnd(message_id, item_id, committed))

    def _fold_reasoning(self, held: Dict[str, Any]) -> None:
        if self.pending_reasoning:  # (most segments have none)
            held["content"].extend(reasoning_block(t) for t in self.pending_reasoning)
            self.pending_reasoning = []

    def _flush(self, out: List[Write]) -> None:
        if self.pending_reasoning:
            self._fold_reasoning(self._held())
        held, self.held = self.held, None
        committing, self._committing = self._committing, {}
        if held is None or not held["content"]:
            return
        data: Dict[str, Any] = {
            "id": held["id"],
            "content": held["content"],
            "source": {"provider": "codex", "model": self.model},
        }
        out.append(Write("assistant/message", data, self.step))
        self.messages += 1
        for item_id, message_id in committing.items():
            self._signals.append(MessageStreamEnd(message_id, item_id, committed=True))

    def _reasoning_text(self, item: "ReasoningThreadItem") -> str:
        item_id = str(item.get("id"))
        summary: Optional[List[str]] = item.get("summary")
        content: Optional[List[str]] = item.get("content")
        for parts_of_item in (summary, content):
            text = "\n\n".join(str(p) for p in parts_of_item or () if p)
            if text.strip():
                return text
        for key in ("summary", "content"):  # what was streamed, when the item has nothing
            parts = self.streamed.get((item_id, key), {})
            text = "\n\n".join(parts[i] for i in sorted(parts) if parts[i])
            if text.strip():
                return text
        return ""


#: How :meth:`StepFold.feed` folds each event type (one lookup, not a chain of
#: isinstance checks per event).
_FOLDS: Dict[type, Callable[[StepFold, Any, List[Write]], None]] = {
    ReasoningSummaryDelta: StepFold._summary_delta,
    ReasoningTextDelta: StepFold._text_delta,
    PlanDelta: StepFold._plan_delta,
    ItemStarted: StepFold._item_started,
    ItemCompleted: StepFold._item_completed,
    AgentMessageDelta: StepFold._message_delta,
    RetryingError: StepFold._retrying,
}

__all__ = ["StepFold", "Write"]
