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
from typing import (
    TYPE_CHECKING,
    Any,
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Dict,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
    cast,
)

from ._errors import (
    CodexminiError,
    CodexTimeout,
    ConfigError,
    MethodNotFound,
    ModelUnreachable,
    ProtocolError,
    RpcError,
    TransportError,
    TurnTimeout,
)
from ._events import Event, InvalidNotification, RetryingError, TurnCompleted, Usage
from ._inputs import Input, InputItem, as_input
from ._permission import ApprovalPolicy, SandboxMode

if TYPE_CHECKING:  # wire types of the pinned schema (codexmini.protocol): read through, for the checker
    from . import protocol
    from .protocol import (
        ReviewDelivery,
        ReviewStartResponse,
        ReviewTarget,
        ThreadForkResponse,
        ThreadItem,
        ThreadListResponse,
        ThreadResumeResponse,
        ThreadStartResponse,
        ThreadTurnsListResponse,
        TurnStartResponse,
        TurnSteerResponse,
    )

    #: What a thread was opened with: the response of thread/start, resume or fork.
    ThreadInfo = Union[ThreadStartResponse, ThreadResumeResponse, ThreadForkResponse]

if TYPE_CHECKING:  # the checker sees the standard library; at run time, ._dataclasses (nothing compiled)
    from dataclasses import dataclass

    from ._client import AppServerClient
    from ._rpc import Notification
    from ._structured import OutputSchema
    from ._subscriptions import Subscription
else:
    from ._dataclasses import dataclass

log = logging.getLogger("codexmini.thread")

#: Told of every event of a turn, in order, on the event loop's thread.
EventListener = Callable[[Event], None]

#: codex 0.149.1 (and older) drops turns with ``thread/rollback``; 0.171.0
#: removed it (it answers "unknown variant") in favour of ``thread/revert``,
#: which only "paginated" threads support (0.149.1 answers "thread/revert only
#: supports paginated threads" for its "legacy" ones).  A thread's
#: ``historyMode`` says which one applies (fixtures ``rollback``).
ROLLBACK = "thread/rollback"
PAGINATED = "paginated"


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


def _options(
    cwd: Optional[str], model: Optional[str], sandbox: Optional[SandboxMode], approval_policy: Optional[ApprovalPolicy]
) -> Dict[str, Any]:
    request: Dict[str, Any] = {}
    for key, value in (("cwd", cwd), ("model", model), ("sandbox", sandbox), ("approvalPolicy", approval_policy)):
        if value is not None:
            request[key] = value
    return request


class Thread:
    """One codex thread: :meth:`start` a new one, :meth:`resume` or
    :meth:`fork` a stored one; then :meth:`turn` it, :meth:`read` it,
    :meth:`rollback`, :meth:`compact`, :meth:`review`, :meth:`archive`, name it.
    :attr:`info` is the response it was opened with (``ThreadStartResponse``,
    ``ThreadResumeResponse`` or ``ThreadForkResponse``)."""

    def __init__(self, client: AppServerClient, thread_id: str, info: Mapping[str, Any]) -> None:
        self.client = client
        self.id = thread_id
        self.info = info
        self._sub: Subscription = client._subscribe(thread_id, pairs=True)
        self._closed = False

    @classmethod
    def _opened(cls, client: AppServerClient, result: "ThreadInfo", method: str) -> "Thread":
        return cls(client, _id_of(result, "thread", method), result)

    @property
    def history_mode(self) -> Optional[str]:
        """The thread's ``historyMode`` as codex reported it when the thread was
        opened: ``"legacy"`` (codex 0.149.1) or ``"paginated"`` (0.171.0)."""
        info: "ThreadInfo" = self.info  # type: ignore[assignment]
        thread: Optional["protocol.Thread"] = info.get("thread")
        mode: Optional[str] = thread.get("historyMode") if isinstance(thread, Mapping) else None
        return mode

    @classmethod
    async def start(
        cls,
        client: AppServerClient,
        *,
        cwd: Optional[str] = None,
        model: Optional[str] = None,
        sandbox: Optional[SandboxMode] = None,
        approval_policy: Optional[ApprovalPolicy] = None,
        params: Optional[Mapping[str, Any]] = None,
        timeout: Optional[float] = None,
    ) -> "Thread":
        """Send ``thread/start``; ``params`` adds or overrides raw fields.

        codex writes the thread to disk when its first turn runs: until then
        it lives in this process only (see :meth:`resume`)."""
        request = _options(cwd, model, sandbox, approval_policy)
        request.update(params or {})
        result: ThreadStartResponse = await client.request("thread/start", request, timeout=timeout)
        return cls._opened(client, result, "thread/start")

    @classmethod
    async def resume(
        cls,
        client: AppServerClient,
        thread_id: str,
        *,
        cwd: Optional[str] = None,
        model: Optional[str] = None,
        sandbox: Optional[SandboxMode] = None,
        approval_policy: Optional[ApprovalPolicy] = None,
        params: Optional[Mapping[str, Any]] = None,
        timeout: Optional[float] = None,
    ) -> "Thread":
        """Open a stored thread by id (``thread/resume``), in this process or a
        new one on the same ``CODEX_HOME``: the next turn's model request
        carries the thread's earlier messages.

        Raises :class:`~codexmini.ThreadNotFound` when codex has no rollout for
        the id -- in particular for a thread that never ran a turn, which codex
        never wrote to disk (recorded: ``resume_unpersisted``)."""
        request = {"threadId": thread_id, **_options(cwd, model, sandbox, approval_policy)}
        request.update(params or {})
        result: ThreadResumeResponse = await client.request("thread/resume", request, timeout=timeout)
        return cls._opened(client, result, "thread/resume")

    @classmethod
    async def fork(
        cls,
        client: AppServerClient,
        thread_id: str,
        *,
        last_turn_id: Optional[str] = None,
        ephemeral: Optional[bool] = None,
        cwd: Optional[str] = None,
        model: Optional[str] = None,
        sandbox: Optional[SandboxMode] = None,
        approval_policy: Optional[ApprovalPolicy] = None,
        params: Optional[Mapping[str, Any]] = None,
        timeout: Optional[float] = None,
    ) -> "Thread":
        """A new thread with a copy of a stored thread's history (``thread/fork``),
        up to ``last_turn_id`` when given; ``ephemeral`` keeps it in memory
        only.  The two threads then diverge.  Raises
        :class:`~codexmini.ThreadNotFound` like :meth:`resume`."""
        request: Dict[str, Any] = {"threadId": thread_id, **_options(cwd, model, sandbox, approval_policy)}
        if last_turn_id is not None:
            request["lastTurnId"] = last_turn_id
        if ephemeral is not None:
            request["ephemeral"] = ephemeral
        request.update(params or {})
        result: ThreadForkResponse = await client.request("thread/fork", request, timeout=timeout)
        return cls._opened(client, result, "thread/fork")

    @staticmethod
    def list(
        client: AppServerClient,
        *,
        limit: Optional[int] = None,
        archived: Optional[bool] = None,
        cwd: Optional[str] = None,
        search: Optional[str] = None,
        params: Optional[Mapping[str, Any]] = None,
        timeout: Optional[float] = None,
    ) -> AsyncIterator["protocol.Thread"]:
        """Every stored thread (``thread/list``, newest first), as the wire's
        ``Thread`` objects, page after page (``limit`` per page) following the
        server's cursor.  ``archived=True`` lists the archived ones."""
        request: Dict[str, Any] = {}
        for key, value in (("limit", limit), ("archived", archived), ("cwd", cwd), ("searchTerm", search)):
            if value is not None:
                request[key] = value
        request.update(params or {})

        async def fetch(page: Dict[str, Any]) -> "ThreadListResponse":
            result: ThreadListResponse = await client.request("thread/list", page, timeout=timeout)
            return result

        from ._extras import pages  # here, not with the package: a listing needs it

        return pages(fetch, request)

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
        on_event: Optional[EventListener] = None,
        raise_on_failure: bool = True,
    ) -> "RunResult":
        """Run one turn to its end and return its :class:`RunResult`.

        A turn that ends ``failed`` raises :class:`~codexmini.TurnFailed`
        (:class:`~codexmini.UsageLimitExceeded` for the usage limit) with the
        result as its ``result``; ``raise_on_failure=False`` returns the
        result instead (``status`` says ``failed``).  An ``interrupted`` turn
        is returned either way.

        ``output_schema`` (this turn only) asks for a structured answer: a
        *completed* turn's final answer must parse as JSON the schema accepts
        (:attr:`RunResult.value`), else :class:`~codexmini.OutputValidationError`
        is raised, carrying the raw text and the result; the schema is checked
        before anything is sent.  ``params`` adds raw ``turn/start`` fields,
        ``on_event`` sees each event as it arrives and ``idle_timeout`` bounds
        the silence between two.  Cancelling the caller interrupts the turn."""
        from ._structured import check_output_schema  # here, not with the package: at the first run

        schema = check_output_schema(output_schema)
        return await self._run(input, schema, params, idle_timeout, interrupt_grace, on_event, raise_on_failure)

    async def _run(
        self,
        input: Input,
        schema: Optional[OutputSchema],
        params: Optional[Mapping[str, Any]],
        idle_timeout: Optional[float],
        interrupt_grace: float,
        on_event: Optional[EventListener],
        raise_on_failure: bool,
    ) -> "RunResult":
        request: Dict[str, Any] = dict(params or {})
        if schema is not None:
            request["outputSchema"] = schema.wire
        turn = self.turn(input, params=request, idle_timeout=idle_timeout, interrupt_grace=interrupt_grace)
        async with turn:
            async for event in turn:  # pragma: no branch - Python 3.9 traces this loop's end as another arc
                if on_event is not None:
                    on_event(event)
        completed = turn.completed
        assert completed is not None  # iteration ends only after turn/completed, or raises
        result = RunResult.of(self.id, completed)
        failure = completed.failure
        if failure is not None and raise_on_failure:
            failure.result = result
            raise failure
        if schema is None or not result.ok:
            return result
        return RunResult.of(self.id, completed, schema.parse(result.final_response, result))

    def review(
        self,
        target: "ReviewTarget",
        *,
        delivery: Optional["ReviewDelivery"] = None,
        interrupt_grace: float = 5.0,
        idle_timeout: Optional[float] = None,
    ) -> "Turn":
        """A code review (``review/start``) as a :class:`Turn` like any other:
        iterate it or :meth:`Turn.run` it.  ``target`` is a ``ReviewTarget``
        (``{"type": "uncommittedChanges"}``, ``{"type": "custom",
        "instructions": …}`` …); the review text is the ``exitedReviewMode``
        item.  With ``delivery="detached"`` (codex 0.149.1; 0.171.0 knows only
        ``"inline"``) codex reviews in a new thread: the turn's
        :attr:`Turn.thread` becomes that thread."""
        turn = Turn(self, [], {}, interrupt_grace, idle_timeout)
        request: Dict[str, Any] = {"threadId": self.id, "target": target}
        if delivery is not None:
            request["delivery"] = delivery
        turn._starter = lambda: turn._start_review(request)
        return turn

    async def compact(self, *, idle_timeout: Optional[float] = None, interrupt_grace: float = 5.0) -> TurnCompleted:
        """Compact the thread's history (``thread/compact/start``) and wait for
        the compaction turn it starts to end; its :class:`TurnCompleted`."""
        turn = Turn(self, [], {}, interrupt_grace, idle_timeout)
        turn._starter = turn._start_compaction
        return await turn.run()

    async def read(self, *, include_turns: bool = True, timeout: Optional[float] = None) -> "protocol.Thread":
        """The stored thread (``thread/read``): the wire's ``Thread``, with its
        ``turns`` and their items when ``include_turns``."""
        result = await self.client.call.thread_read(
            {"threadId": self.id, "includeTurns": include_turns}, timeout=timeout
        )
        return result["thread"]

    async def rollback(self, turns: int = 1, *, timeout: Optional[float] = None) -> None:
        """Drop the last ``turns`` turns from the thread's history (all of them
        if it has fewer), so the next turn's model request no longer carries
        them.  Local file changes are not reverted.

        codex 0.149.1 does this with ``thread/rollback``; 0.171.0 has no such
        method and reverts a ``paginated`` thread with ``thread/revert`` to
        the turn before them instead: the thread's :attr:`history_mode`
        decides.  Raises :class:`~codexmini.MethodNotFound` when this codex has
        neither for the thread."""
        if turns < 1:
            raise ConfigError(f"rollback needs a number of turns >= 1, not {turns}")
        if self.history_mode == PAGINATED:
            await self._revert(turns, timeout)
            return
        try:
            await self.client.request(ROLLBACK, {"threadId": self.id, "numTurns": turns}, timeout=timeout)
        except MethodNotFound as exc:
            raise MethodNotFound(
                exc.code,
                f"this codex has no {ROLLBACK} (removed in 0.171.0) and thread {self.id} is "
                f"{self.history_mode or 'of unknown history mode'}, not paginated, so thread/revert cannot "
                f"replace it (codex said: {exc.message})",
                exc.data,
                exc.method,
            ) from None

    async def _revert(self, turns: int, timeout: Optional[float]) -> None:
        newest: List[str] = []
        request = {"threadId": self.id, "sortDirection": "desc", "limit": turns}

        async def fetch(page: Dict[str, Any]) -> "ThreadTurnsListResponse":
            result: ThreadTurnsListResponse = await self.client.request("thread/turns/list", page, timeout=timeout)
            return result

        from ._extras import pages

        async for turn in pages(fetch, request):  # pragma: no branch - Python 3.9 traces this loop's end as another arc
            newest.append(turn["id"])
            if len(newest) == turns:
                break
        if not newest:
            return  # nothing to drop
        await self.client.request("thread/revert", {"threadId": self.id, "beforeTurnId": newest[-1]}, timeout=timeout)

    async def archive(self, *, timeout: Optional[float] = None) -> None:
        """Move the thread's rollout to the archive (``thread/archive``); listed
        again only with ``Thread.list(client, archived=True)``."""
        await self.client.call.thread_archive({"threadId": self.id}, timeout=timeout)

    async def unarchive(self, *, timeout: Optional[float] = None) -> "protocol.Thread":
        """Move it back (``thread/unarchive``); the restored wire ``Thread``."""
        result = await self.client.call.thread_unarchive({"threadId": self.id}, timeout=timeout)
        return result["thread"]

    async def set_name(self, name: str, *, timeout: Optional[float] = None) -> None:
        """Name the thread (``thread/name/set``; names need not be unique)."""
        await self.client.call.thread_name_set({"threadId": self.id, "name": name}, timeout=timeout)

    async def steer(self, input: Input, expected_turn_id: str) -> str:
        """Add input to the running turn (``turn/steer``); returns its id."""
        result: TurnSteerResponse = await self.client.request(
            "turn/steer", {"threadId": self.id, "expectedTurnId": expected_turn_id, "input": as_input(input)}
        )
        return str(result.get("turnId", expected_turn_id)) if isinstance(result, dict) else expected_turn_id

    async def interrupt(self, turn_id: str) -> None:
        await self.client.request("turn/interrupt", {"threadId": self.id, "turnId": turn_id})

    def close(self) -> None:
        """Stop listening to this thread.  A child started for this client
        keeps the thread until it exits; a shared server (a client that
        connected) is told to stop sending it here (``thread/unsubscribe``).
        Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._sub.close()
        self.client.forget_thread(self.id)


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
        from ._turnfold import TurnFold  # here, not with the package: a turn's books (and the event mapping)

        #: The turn's books (items, open items, usage, the last fatal error),
        #: shared with whoever else folds the same turn (the agent's step fold).
        self.books = TurnFold(keep_items=keep_items, rate_limits=self._rate_limits)
        self._started = False
        self._interrupting = False
        #: Sends the request that starts the turn; its turn id, or ``None``
        #: when the response names none (compaction: the id comes with
        #: ``turn/started``).  ``turn/start`` unless a helper set another.
        self._starter: Callable[[], Awaitable[Optional[str]]] = self._start_turn
        self._events: Optional[AsyncGenerator[Event, None]] = None  # see __aiter__
        #: While codex retries the model with nothing else arriving: when the
        #: first retry came (the loop's clock), how many, the last one.
        self._retrying: Optional[Tuple[float, int, RetryingError]] = None

    def _rate_limits(self) -> Optional["protocol.RateLimitSnapshot"]:
        return self.thread.client.rate_limits

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
        """Completed items by id (the last completion wins), decoded now: a
        snapshot, empty for a turn started with ``keep_items=False``."""
        return self.books.items

    @property
    def completed(self) -> Optional[TurnCompleted]:
        """The :class:`TurnCompleted` event, once the turn ended."""
        return self.books.completed

    # -- iteration ---------------------------------------------------------

    def __aiter__(self) -> AsyncIterator[Event]:
        """The turn's events: one async generator per turn, which every
        ``async for`` and ``__anext__`` share (its frame, and what it reads,
        live across events).  One that ended by an error (a
        :class:`~codexmini.TurnTimeout`, a cancellation) is replaced: the
        next iteration goes on with the turn where the error left it."""
        if self._events is None:
            self._events = self._iterate()
        return self._events

    async def __anext__(self) -> Event:
        # A coroutine, as before (create_task takes it); async for skips it.
        return await self.__aiter__().__anext__()

    async def _iterate(self) -> AsyncGenerator[Event, None]:
        try:
            if not self.done and not self._started:
                await self._begin()
            sub = self.thread._sub
            books = self.books
            queued = sub._items
            # (Locals: a generator's code is "called" once a turn, so 3.9 caches no global lookup in it.)
            type_, delta, feed, popleft = type, books.delta_type, books.feed, queued.popleft
            create_future = asyncio.get_running_loop().create_future
            while not self.done:
                if queued:  # the thread's queue holds pairs: a method, then its params
                    event: Any = feed(popleft(), popleft())  # Any: mypy narrows by type(), not type_()
                elif self.idle_timeout is None and self._retrying is None:
                    sub._next()  # nothing queued: raises once the client ended (and lets a waiting reader read on)
                    # No deadline: await the subscription's future right here, as
                    # Subscription._get would, without its frame nor _wait's to
                    # create and resume (many turns at once wake once an event or two).
                    sub._waiter = waiter = create_future()
                    try:
                        await waiter
                    finally:
                        sub._waiter = None
                    continue
                else:
                    note = await self._wait(sub)
                    event = feed(note.method, note.params)
                if type_(event) is not delta:  # a delta needs no check (nine frames in ten)
                    self._after(event)
                    if event is None:
                        continue
                elif self._retrying is not None:  # the model answers again
                    self._retrying = None
                yield event
        except asyncio.CancelledError:
            # The consumer was cancelled: stop the turn on the server too.
            await asyncio.shield(self._interrupt_and_wait())
            raise
        finally:
            self._events = None  # ended or failed: the next iteration starts another
            self.thread._sub._took()  # what it took straight from the queue may let the client read on

    async def _burst(self) -> List[Event]:
        """The next events at once (the agent's loop): waits for one as
        ``__anext__`` does, then takes every one already queued without
        awaiting -- one await per read of codex's stdout, not one per event.
        Empty once the turn is done."""
        try:
            events = [await self.__anext__()]
        except StopAsyncIteration:
            return []
        queued = self.thread._sub._items
        books, append, type_ = self.books, events.append, type  # (locals: see _iterate)
        delta = books.delta_type
        while queued and not self.done:
            event: Any = books.feed(queued.popleft(), queued.popleft())  # a pair: Subscription(pairs=True)
            if type_(event) is not delta:  # a delta needs no check (nine frames in ten)
                self._after(event)
                if event is None:
                    continue
            elif self._retrying is not None:  # the model answers again
                self._retrying = None
            append(event)
        self.thread._sub._took()
        return events

    async def _wait(self, sub: Subscription) -> Notification:
        """The next notification of the thread, within the turn's deadlines:
        ``idle_timeout`` of silence (:class:`~codexmini.TurnTimeout`), and,
        while codex retries the model with nothing else arriving, the client's
        ``Timeouts.model_retry`` since the first retry
        (:class:`~codexmini.ModelUnreachable`, the turn interrupted)."""
        timeout, limit = self.idle_timeout, self.thread.client.timeouts.model_retry
        retry_bound = False  # the wait ends at the retry deadline, not at idle_timeout
        if self._retrying is not None and limit is not None:
            left = self._retrying[0] + limit - asyncio.get_running_loop().time()
            if left <= 0:
                raise await self._unreachable(limit)
            if timeout is None or left < timeout:
                timeout, retry_bound = left, True
        try:
            return await sub._get(timeout)
        except CodexTimeout:
            if retry_bound:
                raise await self._unreachable(limit or 0.0) from None
            raise TurnTimeout(self.id, float(self.idle_timeout or 0)) from None

    async def _unreachable(self, limit: float) -> ModelUnreachable:
        """Give up on a model codex cannot reach: interrupt the turn, then say why."""
        retrying = self._retrying
        assert retrying is not None  # only called while codex retries
        _, count, last = retrying
        reason = last.message + (f" ({last.details})" if last.details else "")
        log.warning("turn %s: codex retried the model %d time(s) for %gs; giving up: %s", self.id, count, limit, reason)
        await self._interrupt_and_wait()
        return ModelUnreachable(self.id, limit, count, reason, last.info)

    async def _begin(self) -> None:
        self._started = True
        starting = asyncio.ensure_future(self._starter())
        try:
            turn_id = await asyncio.shield(starting)
        except asyncio.CancelledError:
            # Cancelled while the start request is in flight: the turn may
            # already run in codex.  Learn its id (briefly) so the caller's
            # handler can interrupt it instead of leaving it running.
            done, _ = await asyncio.wait([starting], timeout=self.interrupt_grace)
            if starting in done and not starting.cancelled() and starting.exception() is None:
                self.books.turn_id = starting.result()
            else:
                starting.cancel()
            raise
        if turn_id is None:
            turn_id = await self._turn_started()
        self.books.turn_id = turn_id

    async def _start_turn(self) -> Optional[str]:
        request = {"threadId": self.thread.id, "input": self.input, **self.params}
        result: TurnStartResponse = await self.thread.client.request("turn/start", request)
        return self._turn_id(result, "turn/start")

    async def _start_review(self, request: Mapping[str, Any]) -> Optional[str]:
        thread = self.thread
        result: ReviewStartResponse = await thread.client.request("review/start", request)
        review_thread = result["reviewThreadId"]
        if review_thread != thread.id:  # delivery "detached": a new thread runs the review
            self.thread = Thread(thread.client, review_thread, result)
        return self._turn_id(result, "review/start")

    def _turn_id(self, result: Any, method: str) -> str:
        try:
            return _id_of(result, "turn", method)
        except ProtocolError:
            self.done = True  # no turn id to filter its frames by: nothing to wait for
            raise

    async def _start_compaction(self) -> Optional[str]:
        await self.thread.client.call.thread_compact_start({"threadId": self.thread.id})
        return None  # the compaction turn's id comes with its turn/started

    async def _turn_started(self) -> str:
        """The id of the turn the thread starts next (``turn/started``); what
        comes before it is folded as usual (none of it is the turn's)."""
        while True:
            try:
                note = await self.thread._sub._get(self.idle_timeout)
            except CodexTimeout:
                raise TurnTimeout(None, float(self.idle_timeout or 0)) from None
            if note.method == "turn/started":
                turn: Optional["protocol.Turn"] = note.params.get("turn")
                turn_id: Optional[str] = turn.get("id") if isinstance(turn, Mapping) else None
                if isinstance(turn_id, str):
                    return turn_id
            self._take(note)

    def _take(self, note: Notification) -> Optional[Event]:
        """Fold one notification of this thread; the event to yield, if any."""
        event = self.books.feed(note.method, note.params)
        self._after(event)
        return event

    def _after(self, event: Optional[Event]) -> None:
        if type(event) is RetryingError:
            self._retried(event)
        elif event is not None:
            self._retrying = None  # anything else is progress
        if self.books.completed is not None:
            self.done = True
        elif type(event) is InvalidNotification:
            count = self.books.invalid
            if count <= 10 or count % 1000 == 0:  # counted always, logged without flooding
                log.warning("turn %s: skipped invalid notification #%d: %s", self.id, count, event.reason)

    def _retried(self, event: RetryingError) -> None:
        """codex retries the model: say why, and count from the first retry."""
        since, count = (asyncio.get_running_loop().time(), 0) if self._retrying is None else self._retrying[:2]
        self._retrying = (since, count + 1, event)
        details = f" ({event.details})" if event.details else ""
        log.warning("turn %s: codex is retrying the model (#%d): %s%s", self.id, count + 1, event.message, details)

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
        from ._deadline import within  # here, not with the package: an interrupt needs it

        try:
            await within(self._interrupt_then_drain(), self.interrupt_grace)
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


@dataclass(frozen=True)
class RunResult:
    """What one turn produced (:meth:`Thread.run`, :func:`codexmini.run`).

    ``final_response``: the text of the turn's last completed agent message
    (``None`` if it had none).  ``items``: every completed item, in order of
    completion (the compact, decoded-on-access sequence of
    :attr:`TurnCompleted.items`).  ``usage``: the tokens it used.  ``status``: ``completed``,
    ``interrupted`` or ``failed``, and ``error`` the wire's ``TurnError`` of
    a failed one.  ``thread_id`` and ``turn_id``: where it ran
    (``thread/resume`` continues the conversation on a client that still has
    the thread).  ``value``: the parsed structured answer of a completed turn
    run with an ``output_schema``, else ``None``."""

    final_response: Optional[str]
    items: Sequence["ThreadItem"]
    usage: Usage
    status: str
    error: Optional[Mapping[str, Any]]
    thread_id: str
    turn_id: str
    value: Any = None

    @property
    def ok(self) -> bool:
        """The turn completed (neither failed nor interrupted)."""
        return self.status == "completed"

    @property
    def error_message(self) -> str:
        """The turn error's message ("" without one)."""
        return str((self.error or {}).get("message") or "")

    @classmethod
    def of(cls, thread_id: str, completed: TurnCompleted, value: Any = None) -> "RunResult":
        return cls(
            final_response=final_response(completed.items),
            items=cast("Sequence[ThreadItem]", completed.items),  # codex's items, as its schema types them
            usage=completed.usage,
            status=completed.status,
            error=completed.error,
            thread_id=thread_id,
            turn_id=completed.turn_id,
            value=value,
        )


def final_response(items: Sequence[Mapping[str, Any]]) -> Optional[str]:
    """The text of the last ``agentMessage`` among ``items`` (``None`` if none)."""
    for item in reversed(items):
        if item.get("type") == "agentMessage":
            return str(item.get("text") or "")
    return None


__all__ = ["EventListener", "RunResult", "Thread", "Turn", "final_response"]
