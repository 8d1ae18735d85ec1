"""codexmini for code without an event loop: the same client, threads, turns,
``run()`` and agent, as blocking calls.

::

    from codexmini import sync

    result = sync.run("What does this repo do?", cwd=".")
    print(result.final_response)

Theory of operation
-------------------
There is one asyncio core; this module only carries calls to it.  Every
object here that starts something -- a :class:`Client`, an :class:`Agent`,
:func:`run` for its duration -- owns a :class:`Portal`: a private event loop
running in a daemon thread (``codexmini-sync-N``).  A call submits the core's
coroutine to that loop (``call_soon_threadsafe``) and blocks on a
``concurrent.futures.Future`` until it is done.  The calling thread's own
event loop, if it has one (a notebook cell), is never used, entered or
nested: it just waits, as for any blocking call, and the private loop -- in
another thread -- cannot need it, so nothing can deadlock on it.

* **Streaming**: iterating a :class:`Turn` fetches one event per call, so
  events arrive as codex sends them; nothing waits for the end of the turn.
* **Threads**: calls may come from any thread and run concurrently on the
  loop -- that is how another thread interrupts a turn one thread iterates
  (:meth:`Turn.interrupt`) or cancels an agent's turn (:meth:`Agent.cancel`).
  The one call that cannot work is a blocking call from the loop's own thread
  (an ``on_event`` listener calling back into this module): it would wait for
  itself, so it raises :class:`~codexmini.CodexminiError` instead.
* **Interrupts**: a ``KeyboardInterrupt`` (or the call's ``timeout``) while a
  call blocks cancels its task on the loop -- for a turn that sends
  ``turn/interrupt`` and waits briefly for ``turn/completed`` -- waits a
  bounded time for it to settle, and then raises (``CodexTimeout`` for a
  timeout).  Leaving ``with turn:`` early, or a loop over a turn that ends
  with ``break`` or an exception, interrupts the turn the same way.
* **Callbacks**: ``approvals`` handlers are plain functions, each call run
  in a short-lived daemon thread so a handler that waits for a human never
  stalls the loop; ``on_event`` listeners run on the loop's thread and must
  return quickly.
* **Shutdown**: ``close()`` (or leaving ``with``) closes the core object --
  the process ends -- then cancels whatever is left on the loop, stops it and
  joins its thread: nothing stays behind.  A call still blocked in another
  thread gets :class:`~codexmini.ClientClosed`, even one whose coroutine
  ignores its cancellation.  Open objects are held in a registry until
  closed (like a process handle, an unclosed one is not garbage), and an
  ``atexit`` hook closes what is still open at interpreter exit, newest
  first, each wait bounded; the thread is a daemon, so an object nobody
  closed can never keep the interpreter from exiting.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import functools
import itertools
import logging
import threading
import time
from typing import (
    Any,
    Callable,
    Coroutine,
    Dict,
    Iterator,
    List,
    Mapping,
    Optional,
    Protocol,
    Sequence,
    Set,
    TypeVar,
    Union,
)

from . import _agent, _run, _threads
from ._client import AppServerClient, Launcher
from ._endpoint import ModelEndpoint
from ._errors import ClientClosed, CodexminiError, CodexTimeout
from ._events import Event, TurnCompleted, Usage
from ._permission import ApprovalRequest, Reply
from ._run import EventListener, RunResult
from ._session import SessionLog
from ._threads import Input

log = logging.getLogger("codexmini.sync")

T = TypeVar("T")
#: Answers one approval (or question) codex asks, in a worker thread: ``handler(request)`` → a reply.
ApprovalHandler = Callable[[ApprovalRequest], Reply]

_names = itertools.count(1)


class _Closeable(Protocol):  # pragma: no cover - a typing Protocol: its stub never runs
    def close(self) -> None: ...


#: What is open, oldest first (a dict as an ordered set); closed at exit, newest first.
_open: Dict[_Closeable, None] = {}
_open_lock = threading.Lock()


def _opened(owner: _Closeable) -> None:
    with _open_lock:
        _open[owner] = None


def _closed(owner: _Closeable) -> None:
    with _open_lock:
        _open.pop(owner, None)


def _shut(owner: _Closeable, portal: "Portal", aclose: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """``owner.close()``: ``aclose()`` on the loop, then the loop thread, once."""
    if not portal.closed:
        try:
            portal.call(aclose())
        finally:
            _closed(owner)
            portal.close()


def close_all() -> None:
    """Close every facade object still open, newest first (the ``atexit`` hook)."""
    with _open_lock:
        owners = list(_open)
    for owner in reversed(owners):
        try:
            owner.close()
        except Exception:  # at exit nobody can act on it: log and go on
            log.exception("closing %r at exit failed", owner)


atexit.register(close_all)


#: How often a waiting call wakes (seconds).  CPython runs a signal's handler
#: between bytecodes, and its lock wait does not look for one pending before it
#: blocks: a Ctrl-C landing in that instant would wait for the call to end.
#: Waking bounds that to this long.
_POLL = 0.25


def _wait(outcome: "concurrent.futures.Future[T]", timeout: Optional[float]) -> T:
    """``outcome.result(timeout)``, in slices of at most :data:`_POLL`."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        left = _POLL if deadline is None else min(_POLL, deadline - time.monotonic())
        try:
            return outcome.result(max(left, 0.0))
        except concurrent.futures.TimeoutError:
            if outcome.done() or (deadline is not None and time.monotonic() >= deadline):
                raise  # the coroutine's own TimeoutError (the same class on 3.11+), or the deadline


class Portal:
    """A private event loop in a daemon thread, and blocking calls into it.

    :meth:`call` runs a coroutine there and returns its result (or raises its
    error) in the calling thread.  ``cancel_grace`` bounds the wait for a
    cancelled call (a ``KeyboardInterrupt``, a timeout) to settle, and for
    :meth:`close` to cancel what is left.
    """

    def __init__(self, *, cancel_grace: float = 30.0) -> None:
        self.cancel_grace = cancel_grace
        self._loop = asyncio.new_event_loop()
        self._lock = threading.Lock()
        self._closed = False
        self._pending: Set["concurrent.futures.Future[Any]"] = set()  # outcomes not delivered yet
        self._loop_thread = threading.Thread(target=self._serve, name=f"codexmini-sync-{next(_names)}", daemon=True)
        self._loop_thread.start()
        _opened(self)

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def loop_thread(self) -> threading.Thread:
        """The thread the loop runs in."""
        return self._loop_thread

    def in_loop_thread(self) -> bool:
        return threading.current_thread() is self._loop_thread

    def call(self, coro: Coroutine[Any, Any, T], timeout: Optional[float] = None) -> T:
        """Run ``coro`` on the loop and wait for it.  A ``timeout`` (seconds)
        cancels it and raises :class:`~codexmini.CodexTimeout`;
        :class:`~codexmini.ClientClosed` once the portal is closed."""
        if self.in_loop_thread():
            coro.close()
            raise CodexminiError(
                "a blocking codexmini.sync call from its own event loop's thread (an on_event listener?) "
                "would wait for itself; use the async API there"
            )
        outcome: "concurrent.futures.Future[T]" = concurrent.futures.Future()
        tasks: List["asyncio.Task[None]"] = []
        try:  # from here on a KeyboardInterrupt, wherever it lands, stops the call too
            with self._lock:
                if self._closed:
                    raise ClientClosed("the codexmini.sync object is closed")
                self._pending.add(outcome)
                self._loop.call_soon_threadsafe(self._start, coro, outcome, tasks)
            return _wait(outcome, timeout)
        except concurrent.futures.TimeoutError:
            if outcome.done():  # the coroutine's own TimeoutError (the same class on 3.11+)
                raise
            self._abandon(coro, outcome, tasks)
            raise CodexTimeout(f"the call did not finish within {timeout:g}s", float(timeout or 0)) from None
        except BaseException:
            if not outcome.done():
                self._abandon(coro, outcome, tasks)
            raise

    def _start(self, coro: Coroutine[Any, Any, T], outcome: "concurrent.futures.Future[T]", tasks: List[Any]) -> None:
        if outcome.set_running_or_notify_cancel():  # not abandoned before it could start
            tasks.append(self._loop.create_task(self._deliver(coro, outcome)))

    async def _deliver(self, coro: Coroutine[Any, Any, T], outcome: "concurrent.futures.Future[T]") -> None:
        """Run ``coro`` and hand its outcome to the waiting thread.  Whatever it
        raises goes there -- also ``KeyboardInterrupt`` or ``SystemExit``, which
        would otherwise escape the task and stop the loop for every caller."""
        try:
            result = await coro
        except asyncio.CancelledError:
            self._pending.discard(outcome)
            outcome.set_exception(ClientClosed("the call was cancelled (the codexmini.sync object closed)"))
            raise
        except (Exception, KeyboardInterrupt, SystemExit) as exc:  # not GeneratorExit: a dropped task just ends
            self._pending.discard(outcome)
            outcome.set_exception(exc)
        else:
            self._pending.discard(outcome)
            outcome.set_result(result)

    def _abandon(
        self, coro: Coroutine[Any, Any, Any], outcome: "concurrent.futures.Future[Any]", tasks: List[Any]
    ) -> None:
        """The caller stops waiting: cancel the call, and wait (bounded) for it to settle."""
        if outcome.cancel():  # _start has not run, and now never will: the coroutine never started
            self._pending.discard(outcome)
            coro.close()
            return
        # Running: _start has run (it made the outcome running), so the task exists.
        self._loop.call_soon_threadsafe(lambda: tasks[0].cancel())
        done, _ = concurrent.futures.wait([outcome], timeout=self.cancel_grace)
        if not done:
            log.warning("a cancelled codexmini.sync call did not settle within %gs", self.cancel_grace)

    def close(self) -> None:
        """Cancel what still runs on the loop, stop it and join its thread.  Idempotent."""
        if self.in_loop_thread():
            raise CodexminiError("a codexmini.sync object cannot be closed from its own event loop's thread")
        with self._lock:
            if self._closed:
                return
            self._closed = True
        _closed(self)
        done = asyncio.run_coroutine_threadsafe(self._cancel_all(), self._loop)
        concurrent.futures.wait([done], timeout=self.cancel_grace + 1.0)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._loop_thread.join(self.cancel_grace)
        if not self._loop_thread.is_alive():  # pragma: no branch - a stuck loop is left to the daemon thread
            self._loop.close()
            # Calls that ignored their cancellation: nobody will finish them now.
            for outcome in list(self._pending):
                outcome.set_exception(ClientClosed("the codexmini.sync object closed before the call settled"))

    async def _cancel_all(self) -> None:
        me = asyncio.current_task()
        left = [task for task in asyncio.all_tasks() if task is not me]
        for task in left:
            task.cancel()
        if left:
            await asyncio.wait(left, timeout=self.cancel_grace)
        await self._loop.shutdown_asyncgens()

    def __enter__(self) -> "Portal":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


async def _call(fn: Callable[..., T], *args: Any) -> T:
    """Run a plain function on the loop's thread (what touches loop state must)."""
    return fn(*args)


def in_worker_thread(handler: ApprovalHandler) -> _run.ApprovalHandler:
    """The async handler the core wants, running the blocking ``handler`` in a
    daemon thread per request (a human may take minutes; the loop must not wait)."""

    async def answer(request: ApprovalRequest) -> Reply:
        loop = asyncio.get_running_loop()
        future: "asyncio.Future[Reply]" = loop.create_future()

        def deliver(reply: Optional[Reply], error: Optional[BaseException]) -> None:
            if future.done():  # the client's deadline or the server's resolve came first
                return
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(reply)  # type: ignore[arg-type]

        def work() -> None:
            reply: Optional[Reply] = None
            error: Optional[BaseException] = None
            try:
                reply = handler(request)
            except BaseException as exc:  # delivered to the client, which answers fail-closed
                error = exc
            try:
                loop.call_soon_threadsafe(deliver, reply, error)
            except RuntimeError:  # the loop closed meanwhile: nobody waits for the answer
                pass

        threading.Thread(target=work, name="codexmini-approval", daemon=True).start()
        return await future

    return answer


def _worker(handler: Optional[ApprovalHandler]) -> Optional[_run.ApprovalHandler]:
    return None if handler is None else in_worker_thread(handler)


# ---------------------------------------------------------------------------
# The client, its threads and turns


class Client:
    """``codex app-server`` for synchronous code: ``with sync.Client(cwd=".") as client:``.

    Starts and initializes the process at once (the options of
    :func:`codexmini.run`; ``approvals`` is a plain function, run in a worker
    thread); :meth:`close` ends it and the loop thread.  :attr:`aio` is the
    underlying :class:`~codexmini.AppServerClient`: use it only in coroutines
    given to :meth:`call`.
    """

    def __init__(
        self,
        *,
        cwd: Optional[str] = None,
        endpoint: Optional[ModelEndpoint] = None,
        codex_bin: Optional[str] = None,
        config: Sequence[str] = (),
        env: Optional[Mapping[str, str]] = None,
        pass_env: Sequence[str] = (),
        codex_home: Optional[str] = None,
        approvals: Optional[ApprovalHandler] = None,
        launcher: Optional[Launcher] = None,
        request_timeout: float = 120.0,
        handler_timeout: float = 300.0,
        timeout: Optional[float] = None,
    ) -> None:
        self.portal = Portal()
        try:
            started = _run.connect(
                cwd=cwd,
                endpoint=endpoint,
                codex_bin=codex_bin,
                config=config,
                env=env,
                pass_env=pass_env,
                codex_home=codex_home,
                approvals=_worker(approvals),
                launcher=launcher,
                request_timeout=request_timeout,
                handler_timeout=handler_timeout,
            )
            self.aio: AppServerClient = self.portal.call(started, timeout)
        except BaseException:
            self.portal.close()
            raise
        _opened(self)

    @property
    def pid(self) -> Optional[int]:
        return self.aio.pid

    @property
    def closed(self) -> bool:
        return self.portal.closed

    def call(self, coro: Coroutine[Any, Any, T], timeout: Optional[float] = None) -> T:
        """Run a coroutine of the async API (on :attr:`aio`) on this client's loop."""
        return self.portal.call(coro, timeout)

    def request(self, method: str, params: Optional[Mapping[str, Any]] = None, timeout: Optional[float] = None) -> Any:
        """Send a JSON-RPC request; its result (see :meth:`AppServerClient.request`)."""
        return self.portal.call(self.aio.request(method, params, timeout))

    def thread(
        self,
        *,
        cwd: Optional[str] = None,
        model: Optional[str] = None,
        sandbox: Optional[str] = None,
        approval_policy: Optional[str] = None,
        params: Optional[Mapping[str, Any]] = None,
    ) -> "Thread":
        """Start a thread (``thread/start``)."""
        started = _threads.Thread.start(
            self.aio, cwd=cwd, model=model, sandbox=sandbox, approval_policy=approval_policy, params=params
        )
        return Thread(self.portal, self.portal.call(started))

    def run(
        self,
        prompt: Input,
        *,
        cwd: Optional[str] = None,
        model: Optional[str] = None,
        sandbox: Optional[str] = None,
        approval_policy: Optional[str] = None,
        output_schema: Optional[Mapping[str, Any]] = None,
        thread_params: Optional[Mapping[str, Any]] = None,
        turn_params: Optional[Mapping[str, Any]] = None,
        idle_timeout: Optional[float] = None,
        interrupt_grace: float = 5.0,
        on_event: Optional[EventListener] = None,
        timeout: Optional[float] = None,
    ) -> RunResult:
        """:func:`codexmini.run` on this client: one turn on a new thread."""
        return self.portal.call(
            _run.run(
                prompt,
                client=self.aio,
                cwd=cwd,
                model=model,
                sandbox=sandbox,
                approval_policy=approval_policy,
                output_schema=output_schema,
                thread_params=thread_params,
                turn_params=turn_params,
                idle_timeout=idle_timeout,
                interrupt_grace=interrupt_grace,
                on_event=on_event,
            ),
            timeout,
        )

    def close(self) -> None:
        """End the process and the loop thread.  Idempotent."""
        _shut(self, self.portal, self.aio.close)

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Thread:
    """One codex thread (:meth:`Client.thread`)."""

    def __init__(self, portal: Portal, aio: _threads.Thread) -> None:
        self.portal = portal
        self.aio = aio

    @property
    def id(self) -> str:
        return self.aio.id

    @property
    def info(self) -> Mapping[str, Any]:
        """The ``thread/start`` result."""
        return self.aio.info

    def turn(
        self,
        input: Input,
        *,
        params: Optional[Mapping[str, Any]] = None,
        interrupt_grace: float = 5.0,
        idle_timeout: Optional[float] = None,
        keep_items: bool = True,
    ) -> "Turn":
        """A turn; nothing is sent until iteration starts (``with thread.turn(...) as turn: for event in turn``)."""
        make = functools.partial(
            self.aio.turn,
            input,
            params=params,
            interrupt_grace=interrupt_grace,
            idle_timeout=idle_timeout,
            keep_items=keep_items,
        )
        return Turn(self.portal, self.portal.call(_call(make)))  # built on the loop, like everything it touches

    def run(
        self,
        input: Input,
        *,
        output_schema: Optional[Mapping[str, Any]] = None,
        params: Optional[Mapping[str, Any]] = None,
        idle_timeout: Optional[float] = None,
        interrupt_grace: float = 5.0,
        on_event: Optional[EventListener] = None,
        timeout: Optional[float] = None,
    ) -> RunResult:
        """One turn to its end (:meth:`codexmini.Thread.run`)."""
        running = self.aio.run(
            input,
            output_schema=output_schema,
            params=params,
            idle_timeout=idle_timeout,
            interrupt_grace=interrupt_grace,
            on_event=on_event,
        )
        return self.portal.call(running, timeout)

    def steer(self, input: Input, expected_turn_id: str) -> str:
        return self.portal.call(self.aio.steer(input, expected_turn_id))

    def interrupt(self, turn_id: str) -> None:
        self.portal.call(self.aio.interrupt(turn_id))

    def close(self) -> None:
        """Stop listening to this thread."""
        self.portal.call(_call(self.aio.close))


class _End:
    """The end of a turn's events (a sentinel: StopAsyncIteration must not cross threads)."""


_END = _End()


class Turn:
    """The events of one turn, as a blocking iterator::

        with thread.turn("fix the test") as turn:
            for event in turn:
                ...

    Each step waits for the next event only.  :meth:`interrupt` may be called
    from any thread; before the turn has started it takes effect as soon as
    it does.  Leaving the ``with`` block (or the loop, with ``break`` or an
    exception) before the end interrupts the turn.
    """

    def __init__(self, portal: Portal, aio: _threads.Turn) -> None:
        self.portal = portal
        self.aio = aio
        self._stop = False  # interrupt() was asked for
        self._stop_sent = False

    @property
    def id(self) -> Optional[str]:
        return self.aio.id

    @property
    def done(self) -> bool:
        return self.aio.done

    @property
    def usage(self) -> Usage:
        return self.aio.usage

    @property
    def items(self) -> Mapping[str, Mapping[str, Any]]:
        return self.aio.items

    @property
    def completed(self) -> Optional[TurnCompleted]:
        return self.aio.completed

    def __iter__(self) -> Iterator[Event]:
        try:
            while True:
                event = self.portal.call(self._next())
                if isinstance(event, _End):
                    return
                yield event
        finally:
            if not self.aio.done:  # left early: a break, an exception, the iterator dropped
                self._close_quietly()

    async def _next(self) -> Union[Event, _End]:
        try:
            event = await self.aio.__anext__()
        except StopAsyncIteration:
            return _END
        await self._interrupt_if_asked()
        return event

    async def _interrupt_if_asked(self) -> None:
        # On the loop's thread, like every step of the turn: no race with it.
        if self._stop and not self._stop_sent and self.aio.id is not None and not self.aio.done:
            self._stop_sent = True
            await self.aio.interrupt()

    def interrupt(self) -> None:
        """Ask codex to stop the turn (from any thread); iteration ends with ``interrupted``."""

        async def ask() -> None:
            self._stop = True
            await self._interrupt_if_asked()

        self.portal.call(ask())

    def steer(self, input: Input) -> str:
        """Send more input into the running turn (``turn/steer``)."""
        return self.portal.call(self.aio.steer(input))

    def run(self, timeout: Optional[float] = None) -> TurnCompleted:
        """Consume the whole turn; its :class:`~codexmini.TurnCompleted`."""

        async def consume() -> TurnCompleted:
            async with self.aio:
                while not isinstance(await self._next(), _End):
                    pass
            assert self.aio.completed is not None  # iteration ends only after turn/completed, or raises
            return self.aio.completed

        return self.portal.call(consume(), timeout)

    def close(self) -> None:
        """Stop early: interrupt the turn if it still runs and wait briefly."""
        self.portal.call(self.aio.aclose())

    def _close_quietly(self) -> None:
        if self.portal.in_loop_thread():  # dropped by the garbage collector on the loop's thread
            self.portal._loop.create_task(self.aio.aclose())
            return
        try:
            self.close()
        except CodexminiError as exc:  # the client is gone: nothing left to interrupt
            log.debug("closing turn %s: %s", self.id, exc)

    def __enter__(self) -> "Turn":
        return self

    def __exit__(self, *exc: Any) -> None:
        self._close_quietly()


def run(
    prompt: Input,
    *,
    client: Optional[Client] = None,
    cwd: Optional[str] = None,
    model: Optional[str] = None,
    sandbox: Optional[str] = None,
    approval_policy: Optional[str] = None,
    approvals: Optional[ApprovalHandler] = None,
    endpoint: Optional[ModelEndpoint] = None,
    codex_bin: Optional[str] = None,
    config: Sequence[str] = (),
    env: Optional[Mapping[str, str]] = None,
    pass_env: Sequence[str] = (),
    codex_home: Optional[str] = None,
    output_schema: Optional[Mapping[str, Any]] = None,
    thread_params: Optional[Mapping[str, Any]] = None,
    turn_params: Optional[Mapping[str, Any]] = None,
    idle_timeout: Optional[float] = None,
    interrupt_grace: float = 5.0,
    on_event: Optional[EventListener] = None,
    launcher: Optional[Launcher] = None,
    timeout: Optional[float] = None,
) -> RunResult:
    """:func:`codexmini.run`, blocking: one turn, its :class:`~codexmini.RunResult`.

    With ``client`` (a :class:`Client`) it runs on that client, else on a
    process (and loop thread) of its own, closed before it returns.
    ``approvals`` is a plain function, run in a worker thread; ``timeout``
    bounds the whole call (:class:`~codexmini.CodexTimeout`, the turn
    interrupted).  Safe to call from a thread whose event loop is running.
    """
    portal = client.portal if client is not None else Portal()
    try:
        running = _run.run(
            prompt,
            client=client.aio if client is not None else None,
            cwd=cwd,
            model=model,
            sandbox=sandbox,
            approval_policy=approval_policy,
            approvals=_worker(approvals),
            endpoint=endpoint,
            codex_bin=codex_bin,
            config=config,
            env=env,
            pass_env=pass_env,
            codex_home=codex_home,
            output_schema=output_schema,
            thread_params=thread_params,
            turn_params=turn_params,
            idle_timeout=idle_timeout,
            interrupt_grace=interrupt_grace,
            on_event=on_event,
            launcher=launcher,
        )
        return portal.call(running, timeout)
    finally:
        if client is None:
            portal.close()


# ---------------------------------------------------------------------------
# The agent


class Agent:
    """:class:`codexmini.Agent`, blocking: ``with sync.Agent(log, config) as agent: agent.run("...")``.

    ``approvals`` is a plain function (run in a worker thread); ``on_event``
    runs on the loop's thread.  :meth:`cancel` and :meth:`steer` may be called
    from another thread while :meth:`run` blocks.
    """

    def __init__(
        self,
        log_: SessionLog,
        config: _agent.AgentConfig,
        *,
        approvals: Optional[ApprovalHandler] = None,
        on_event: Optional[_agent.EventListener] = None,
        new_id: Optional[Callable[[], str]] = None,
    ) -> None:
        self.portal = Portal()
        options: Dict[str, Any] = {"approvals": _worker(approvals), "on_event": on_event}
        if new_id is not None:
            options["new_id"] = new_id
        try:
            # Built on the loop: on Python 3.9 asyncio primitives bind to the loop current at creation.
            self.aio: _agent.Agent = self.portal.call(_call(functools.partial(_agent.Agent, log_, config, **options)))
        except BaseException:
            self.portal.close()
            raise
        _opened(self)

    @property
    def log(self) -> SessionLog:
        return self.aio.log

    @property
    def phase(self) -> str:
        return self.aio.phase

    @property
    def stats(self) -> Dict[str, int]:
        return self.aio.stats

    @property
    def last_turn_end(self) -> Optional[Dict[str, Any]]:
        return self.aio.last_turn_end

    def start(self) -> None:
        """Start the codex child and write the session header (:meth:`codexmini.Agent.start`)."""
        self.portal.call(self.aio.start())

    def run(self, content: _agent.Content, timeout: Optional[float] = None) -> Dict[str, Any]:
        """Queue ``content``, run until idle, return the last ``turn/end`` data.
        A ``KeyboardInterrupt`` or the ``timeout`` aborts the turn (logged as
        ``aborted``) before it propagates."""
        try:
            return self.portal.call(self.aio.run(content), timeout)
        except (KeyboardInterrupt, CodexTimeout):
            # agent.run waits for a driver task of its own: stop that too (as the CLI's Ctrl-C does).
            self.cancel()
            self.wait_idle(self.portal.cancel_grace)
            raise

    def followup(self, content: _agent.Content) -> None:
        self.portal.call(_call(self.aio.followup, content))

    def steer(self, content: _agent.Content) -> None:
        self.portal.call(self.aio.steer(content))

    def inject(self, content: _agent.Content) -> None:
        self.portal.call(_call(self.aio.inject, content))

    def cancel(self, keep_inbox: bool = False) -> None:
        """Abort the running turn (from any thread)."""
        self.portal.call(_call(self.aio.cancel, keep_inbox))

    def wait_idle(self, timeout: Optional[float] = None) -> None:
        self.portal.call(self.aio.wait_idle(), timeout)

    def set_knob(self, kind: str, value: str) -> None:
        self.portal.call(_call(self.aio.set_knob, kind, value))

    def close(self) -> None:
        """Cancel anything running, end the child and the loop thread.  Idempotent."""
        _shut(self, self.portal, self.aio.close)

    def __enter__(self) -> "Agent":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


__all__ = ["Agent", "ApprovalHandler", "Client", "Portal", "Thread", "Turn", "close_all", "in_worker_thread", "run"]
