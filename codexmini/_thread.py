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
every notification goes through the turn's :class:`~._turnfold.TurnFold`,
which skips other turns' frames, maps the rest to events and keeps the books
the wire does not (items by id, last completion winning; items that started
and never completed; usage summed per model call; the last fatal error).
:attr:`Turn.books` is that fold; the agent's step fold reads the same one.

The stream ends after :class:`~._events.TurnCompleted`.  If the process dies
first, iteration raises :class:`~._errors.ProcessExited`; if nothing arrives
for ``idle_timeout`` seconds, :class:`~._errors.TurnTimeout`.  Cancelling the
consuming task, leaving ``async with turn`` early or calling
:meth:`Turn.aclose` sends ``turn/interrupt`` (best effort) and waits a short
grace period for ``turn/completed`` -- even when the cancel lands while
``turn/start`` is still in flight.  One task consumes a turn; to stop it from
another task, call :meth:`Turn.interrupt` (the consumer then sees
``interrupted``).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

from ._client import AppServerClient, Subscription
from ._errors import CodexminiError, CodexTimeout, ProtocolError, RpcError, TransportError, TurnTimeout
from ._events import AgentMessageDelta, Event, InvalidNotification, TurnCompleted, Usage
from ._rpc import Notification
from ._turnfold import TurnFold

if TYPE_CHECKING:
    from ._run import RunResult

log = logging.getLogger("codexmini.thread")

InputItem = Dict[str, Any]
Input = Union[str, Sequence[Union[str, InputItem]]]


def text_input(text: str) -> InputItem:
    return {"type": "text", "text": text}


def image_input(path: str) -> InputItem:
    """A local image codex opens itself (``localImage``: a path, not bytes)."""
    return {"type": "localImage", "path": path}


def _id_in(result: Any, key: str) -> Optional[str]:
    """``result[key]["id"]`` of a ``thread/start`` or ``turn/start`` answer, if
    it is a string (the schema's ids are; a frame that says otherwise is not
    one to build on)."""
    value = result.get(key) if isinstance(result, dict) else None
    ident = value.get("id") if isinstance(value, dict) else None
    return ident if isinstance(ident, str) else None


def _id_of(result: Any, key: str, method: str) -> str:
    ident = _id_in(result, key)
    if ident is None:
        raise ProtocolError(f"{method} answered without a {key} id", 0, repr(result)[:120])
    return ident


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
        return cls(client, _id_of(result, "thread", "thread/start"), result)

    def turn(
        self,
        input: Input,
        *,
        params: Optional[Mapping[str, Any]] = None,
        interrupt_grace: float = 5.0,
        idle_timeout: Optional[float] = None,
        keep_items: bool = True,
    ) -> "Turn":
        """A turn with this input; nothing is sent until iteration starts.
        ``keep_items=False`` keeps no history (``TurnCompleted.items`` is
        empty): for a consumer that takes the items as they complete."""
        return Turn(self, as_input(input), params or {}, interrupt_grace, idle_timeout, keep_items)

    async def run(
        self,
        input: Input,
        *,
        output_schema: Optional[Mapping[str, Any]] = None,
        params: Optional[Mapping[str, Any]] = None,
        idle_timeout: Optional[float] = None,
        interrupt_grace: float = 5.0,
        on_event: Optional[Callable[[Event], None]] = None,
    ) -> "RunResult":
        """Run one turn to its end: its :class:`~codexmini.RunResult` (see
        :func:`codexmini.run`; ``output_schema`` applies to this turn only)."""
        from ._run import check_output_schema, run_turn  # _run builds on this module

        schema = check_output_schema(output_schema)
        return await run_turn(
            self,
            input,
            output_schema=schema,
            params=params,
            idle_timeout=idle_timeout,
            interrupt_grace=interrupt_grace,
            on_event=on_event,
        )

    async def steer(self, input: Input, expected_turn_id: str) -> str:
        """Add input to the running turn (``turn/steer``); returns its id."""
        result = await self.client.request(
            "turn/steer", {"threadId": self.id, "expectedTurnId": expected_turn_id, "input": as_input(input)}
        )
        return str(result.get("turnId", expected_turn_id)) if isinstance(result, dict) else expected_turn_id

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
        keep_items: bool = True,
    ) -> None:
        self.thread = thread
        self.input = input
        self.params = params
        self.interrupt_grace = interrupt_grace
        self.idle_timeout = idle_timeout
        self.done = False
        #: The turn's books (items, open items, usage, the last fatal error),
        #: shared with whoever else folds the same turn (the agent's step fold).
        self.books = TurnFold(keep_items=keep_items)
        self._started = False
        self._interrupting = False

    @property
    def id(self) -> Optional[str]:
        """The turn id, once ``turn/start`` answered."""
        return self.books.turn_id

    @property
    def usage(self) -> Usage:
        """Tokens used so far (summed per model call)."""
        return self.books.usage

    @property
    def items(self) -> Mapping[str, Mapping[str, Any]]:
        """Completed items by id (the last completion wins)."""
        return self.books.items

    @property
    def completed(self) -> Optional[TurnCompleted]:
        """The :class:`TurnCompleted` event, once the turn ended."""
        return self.books.completed

    # -- iteration ---------------------------------------------------------

    def __aiter__(self) -> "Turn":
        return self

    async def __anext__(self) -> Event:
        if self.done:
            raise StopAsyncIteration
        try:
            if not self._started:
                await self._begin()
            sub = self.thread._sub
            books = self.books
            queued = sub._items
            while True:
                note = queued.popleft() if queued else sub._next()  # queued already: no await
                if note is None:
                    try:
                        note = await sub._get(self.idle_timeout)
                    except CodexTimeout:
                        raise TurnTimeout(self.id, float(self.idle_timeout or 0)) from None
                event = books.feed(note.method, note.params)
                if type(event) is AgentMessageDelta:
                    return event  # nine frames in ten: nothing else to check
                self._after(event)
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
                self.books.turn_id = _id_in(starting.result(), "turn")
            else:
                starting.cancel()
            raise
        try:
            self.books.turn_id = _id_of(result, "turn", "turn/start")
        except ProtocolError:
            self.done = True  # no turn id to filter its frames by: nothing to wait for
            raise

    def _take(self, note: Notification) -> Optional[Event]:
        """Fold one notification of this thread; the event to yield, if any."""
        event = self.books.feed(note.method, note.params)
        self._after(event)
        return event

    def _after(self, event: Optional[Event]) -> None:
        if self.books.completed is not None:
            self.done = True
        elif type(event) is InvalidNotification:
            count = self.books.invalid
            if count <= 10 or count % 1000 == 0:  # counted always, logged without flooding
                log.warning("turn %s: skipped invalid notification #%d: %s", self.id, count, event.reason)

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
                self._take(await self.thread._sub._get())
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
