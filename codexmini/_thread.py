"""A codex thread and its turns, as async iterators of codexmini events.

Theory of operation
-------------------
:meth:`Thread.start` sends ``thread/start`` and subscribes to the new thread's
notifications (the client keeps what arrived for it before the response, such
as the ``warning`` codex sends *during* ``thread/start``).  The subscription
lives as long as the thread object, so nothing addressed to the thread is
dropped between turns.

:meth:`Thread.turn` returns a :class:`Turn`.  Iterating it sends
``turn/start`` -- after the subscription exists, since codex may stream before
it answers -- learns the turn id from the response, and then yields events:
frames of other turns are skipped, everything else goes through
:func:`.mapping.to_event`.  The turn keeps the books the wire does not:

* items by id, the last completion winning (a retried ``response.incomplete``
  starts and completes the same id several times, reference §0.5), plus the
  ids that started and never completed (interrupts, cut streams);
* usage, summed from ``thread/tokenUsage/updated`` (``last`` is one model
  call; the 0.149.1 ``Turn`` has no usage field);
* the last non-retrying ``error``, in case ``turn/completed`` is missing one.

The stream ends after :class:`~.events.TurnCompleted`.  If the process dies
first, iteration raises :class:`~.errors.ProcessExited`.  Cancelling the
consuming task, leaving ``async with turn`` early or calling
:meth:`Turn.aclose` sends ``turn/interrupt`` (best effort) and waits a short
grace period for ``turn/completed`` -- even when the cancel lands while
``turn/start`` is still in flight.  One task consumes a turn; to stop it from
another task, call :meth:`Turn.interrupt` (the consumer then sees
``interrupted``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from ._client import AppServerClient, Subscription
from ._errors import CodexminiError, RpcError, TransportError
from ._events import Event, ItemCompleted, ItemStarted, TokenUsage, TurnCompleted, Usage
from ._mapping import to_event

log = logging.getLogger("codexmini.thread")

InputItem = Dict[str, Any]
Input = Union[str, Sequence[Union[str, InputItem]]]


def text_input(text: str) -> InputItem:
    return {"type": "text", "text": text}


def image_input(path: str) -> InputItem:
    """A local image codex opens itself (``localImage``: a path, not bytes)."""
    return {"type": "localImage", "path": path}


def as_input(value: Input) -> List[InputItem]:
    """Normalise ``"text"`` or a list of strings and input items."""
    if isinstance(value, str):
        return [text_input(value)]
    return [text_input(v) if isinstance(v, str) else dict(v) for v in value]


class Thread:
    """One codex thread.  Create it with :meth:`start`."""

    def __init__(self, client: AppServerClient, thread_id: str, info: Mapping[str, Any]) -> None:
        self.client = client
        self.id = thread_id
        self.info = info
        self._sub: Subscription = client.subscribe(thread_id)

    @classmethod
    async def start(
        cls,
        client: AppServerClient,
        *,
        cwd: Optional[str] = None,
        model: Optional[str] = None,
        sandbox: Optional[str] = None,
        approval_policy: Optional[str] = None,
        params: Optional[Mapping[str, Any]] = None,
        timeout: Optional[float] = None,
    ) -> "Thread":
        """Send ``thread/start``; ``params`` adds or overrides raw fields."""
        request: Dict[str, Any] = {}
        for key, value in (("cwd", cwd), ("model", model), ("sandbox", sandbox), ("approvalPolicy", approval_policy)):
            if value is not None:
                request[key] = value
        request.update(params or {})
        result = await client.request("thread/start", request, timeout=timeout)
        return cls(client, result["thread"]["id"], result)

    def turn(
        self,
        input: Input,
        *,
        params: Optional[Mapping[str, Any]] = None,
        interrupt_grace: float = 5.0,
        idle_timeout: Optional[float] = None,
    ) -> "Turn":
        """A turn with this input; nothing is sent until iteration starts."""
        return Turn(self, as_input(input), params or {}, interrupt_grace, idle_timeout)

    async def steer(self, input: Input, expected_turn_id: str) -> str:
        """Add input to the running turn (``turn/steer``); returns its id."""
        result = await self.client.request(
            "turn/steer", {"threadId": self.id, "expectedTurnId": expected_turn_id, "input": as_input(input)}
        )
        return str(result.get("turnId", expected_turn_id))

    async def interrupt(self, turn_id: str) -> None:
        await self.client.request("turn/interrupt", {"threadId": self.id, "turnId": turn_id})

    def close(self) -> None:
        """Stop listening to this thread (the process keeps it until it exits)."""
        self._sub.close()


class Turn:
    """The events of one turn.  ``async with thread.turn(...) as turn:
    async for event in turn: ...``"""

    def __init__(
        self,
        thread: Thread,
        input: List[InputItem],
        params: Mapping[str, Any],
        interrupt_grace: float,
        idle_timeout: Optional[float],
    ) -> None:
        self.thread = thread
        self.input = input
        self.params = params
        self.interrupt_grace = interrupt_grace
        self.idle_timeout = idle_timeout
        self.id: Optional[str] = None
        self.done = False
        self.completed: Optional[TurnCompleted] = None
        self.usage = Usage()
        self.items: Dict[str, Mapping[str, Any]] = {}  # completed, last writer wins
        self._order: List[str] = []
        self._open: Dict[str, Mapping[str, Any]] = {}  # started, not (yet) completed
        self._last_error: Optional[Mapping[str, Any]] = None
        self._started = False
        self._interrupting = False

    # -- iteration ---------------------------------------------------------

    def __aiter__(self) -> "Turn":
        return self

    async def __anext__(self) -> Event:
        if self.done:
            raise StopAsyncIteration
        try:
            if not self._started:
                await self._begin()
            while True:
                event = self._take(await self.thread._sub.get(self.idle_timeout))
                if event is not None:
                    return event
        except asyncio.CancelledError:
            # The consumer was cancelled: stop the turn on the server too.
            await asyncio.shield(self._interrupt_and_wait())
            raise

    async def _begin(self) -> None:
        self._started = True
        request = {"threadId": self.thread.id, "input": self.input, **self.params}
        starting = asyncio.ensure_future(self.thread.client.request("turn/start", request))
        try:
            result = await asyncio.shield(starting)
        except asyncio.CancelledError:
            # Cancelled while turn/start is in flight: the turn may already
            # run in codex.  Learn its id (briefly) so the caller's handler
            # can interrupt it instead of leaving it running.
            done, _ = await asyncio.wait([starting], timeout=self.interrupt_grace)
            if starting in done and not starting.cancelled() and starting.exception() is None:
                self.id = str(starting.result()["turn"]["id"])
            else:
                starting.cancel()
            raise
        self.id = str(result["turn"]["id"])

    def _take(self, frame: Mapping[str, Any]) -> Optional[Event]:
        """Book-keep one notification of this thread; the event to yield, if any."""
        method = frame.get("method", "")
        params = frame.get("params") or {}
        turn_id = params.get("turnId")
        if method == "turn/completed":
            turn_id = (params.get("turn") or {}).get("id")
        if turn_id is not None and turn_id != self.id:
            return None  # another turn of this thread
        if method == "error" and not params.get("willRetry"):
            self._last_error = params.get("error")
        event = to_event(method, params)
        if isinstance(event, ItemStarted):
            self._open[event.item_id] = event.item
        elif isinstance(event, ItemCompleted):
            self._open.pop(event.item_id, None)
            if event.item_id not in self.items:
                self._order.append(event.item_id)
            self.items[event.item_id] = event.item
        elif isinstance(event, TokenUsage):
            self.usage = self.usage + event.last
        elif isinstance(event, TurnCompleted):
            event = self._finish(event)
        return event

    def _finish(self, event: TurnCompleted) -> TurnCompleted:
        self.done = True
        self.completed = dataclasses.replace(
            event,
            error=event.error or (self._last_error if event.status == "failed" else None),
            items=tuple(self.items[i] for i in self._order),
            abandoned=tuple(self._open),
            usage=self.usage,
        )
        return self.completed

    # -- control -----------------------------------------------------------

    async def steer(self, input: Input) -> str:
        """Send more input into this running turn (``turn/steer``)."""
        if self.id is None:
            raise CodexminiError("the turn has not started yet")
        return await self.thread.steer(input, self.id)

    async def interrupt(self) -> None:
        """Ask codex to stop the turn; iteration then ends with ``interrupted``."""
        if self.id is None or self.done:
            return
        await self.thread.interrupt(self.id)

    async def aclose(self) -> None:
        """Stop early: interrupt the turn if it is still running and wait briefly."""
        if self._started and not self.done:
            await self._interrupt_and_wait()
        self.done = True

    async def _interrupt_and_wait(self) -> None:
        if self._interrupting or self.id is None or self.done:
            return
        self._interrupting = True
        try:
            await asyncio.wait_for(self._interrupt_then_drain(), self.interrupt_grace)
        except (asyncio.TimeoutError, CodexminiError) as exc:
            log.info("turn %s: no clean end after interrupt (%s)", self.id, exc or type(exc).__name__)
        finally:
            self.done = True

    async def _interrupt_then_drain(self) -> None:
        try:
            await self.thread.interrupt(str(self.id))
        except RpcError as exc:  # "no active turn to interrupt": it already ended
            log.debug("turn/interrupt: %s", exc)
        while not self.done:
            try:
                self._take(await self.thread._sub.get())
            except TransportError:
                return

    async def __aenter__(self) -> "Turn":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    async def run(self) -> TurnCompleted:
        """Consume the whole turn and return its :class:`TurnCompleted`."""
        async with self:
            async for _ in self:
                pass
        if self.completed is None:  # pragma: no cover - iteration only ends on completion or raises
            raise CodexminiError("turn ended without turn/completed")
        return self.completed


__all__ = ["Input", "InputItem", "Thread", "Turn", "as_input", "image_input", "text_input"]
