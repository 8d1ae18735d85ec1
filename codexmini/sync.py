"""codexmini for code without an event loop: the same client, threads, turns,
``run()`` and agent, as blocking calls.

::

    from codexmini import sync

    result = sync.run("What does this repo do?", cwd=".")
    print(result.final_response)

There is one asyncio core; this module only carries calls to it.  Every
object here that starts something -- a :class:`Client`, an :class:`Agent`,
:func:`run` for its duration -- owns a :class:`Portal` (:mod:`._portal`): a
private event loop in a daemon thread, which never touches the calling
thread's own loop.  Calls may come from any thread and run concurrently on
that loop, which is how another thread interrupts a turn one thread iterates
(:meth:`Turn.interrupt`) or cancels an agent's turn (:meth:`Agent.cancel`).

* **Streaming**: iterating a :class:`Turn` fetches one event per call, as
  codex sends them.
* **Interrupts**: a ``KeyboardInterrupt`` (or the call's ``timeout``) while a
  call blocks cancels it on the loop -- for a turn that sends
  ``turn/interrupt`` and waits briefly for ``turn/completed`` -- then raises.
  Leaving ``with turn:`` early, or a loop over a turn that ends with
  ``break`` or an exception, interrupts the turn the same way.
* **Callbacks**: ``approvals`` handlers are plain functions, each call run in
  a short-lived worker thread; ``on_event`` listeners run on the loop's
  thread, must return quickly and must not call back into this module.
* **Shutdown**: ``close()`` (or leaving ``with``) ends the process and the
  loop thread; an ``atexit`` hook closes what is still open.
"""

from __future__ import annotations

import functools
import logging
from typing import TYPE_CHECKING, Any, Callable, Coroutine, Dict, Iterator, Mapping, Optional, TypeVar, Union

from . import _agent, _run, _threads
from ._errors import CodexminiError, CodexTimeout, ConfigError
from ._events import Event, TurnCompleted, Usage
from ._inbox import Content
from ._inputs import Input
from ._launch import Launch
from ._permission import ApprovalPolicy, SandboxMode, install_approvals
from ._portal import BlockingApprovalHandler, Portal, call_soon, close_all, hold, in_worker_thread, shut, worker
from ._session import SessionLog
from ._threads import EventListener, RunResult

if TYPE_CHECKING:
    from ._client import AppServerClient
    from ._connect import Connect

log = logging.getLogger("codexmini.sync")

T = TypeVar("T")
#: Answers one approval (or question) codex asks, in a worker thread: ``handler(request)`` → a reply.
ApprovalHandler = BlockingApprovalHandler


# ---------------------------------------------------------------------------
# The client, its threads and turns


async def _start(
    launch: Optional[Launch], connect: Optional[Union[str, Connect]], approvals: Optional[ApprovalHandler]
) -> AppServerClient:
    from ._client import AppServerClient  # here, not with the package: only a started client needs it

    if connect is not None:
        if launch is not None:
            raise ConfigError("launch and connect: a Client starts codex or connects to one, not both")
        client = await AppServerClient.connect(connect)
    else:
        client = await AppServerClient.start(launch)
    handler = worker(approvals)
    if handler is not None:
        install_approvals(client, handler)
    return client


class Client:
    """``codex app-server`` for synchronous code: ``with sync.Client() as client:``.

    Starts and initializes the process ``launch`` describes (a
    :class:`~codexmini.Launch`) at once, or connects to a running server
    (``connect``: a ``ws://`` or ``unix://`` URL, or a
    :class:`~codexmini.Connect`); ``approvals`` is a plain function,
    run in a worker thread; ``timeout`` bounds the start.  :meth:`close` ends
    the process and the loop thread.  :attr:`aio` is the
    underlying :class:`~codexmini.AppServerClient`: use it only in coroutines
    given to :meth:`call`.
    """

    def __init__(
        self,
        launch: Optional[Launch] = None,
        *,
        connect: Optional[Union[str, Connect]] = None,
        approvals: Optional[ApprovalHandler] = None,
        timeout: Optional[float] = None,
    ) -> None:
        self.portal = Portal()
        try:
            self.aio: AppServerClient = self.portal.call(_start(launch, connect, approvals), timeout)
        except BaseException:
            self.portal.close()
            raise
        hold(self)

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
        sandbox: Optional[SandboxMode] = None,
        approval_policy: Optional[ApprovalPolicy] = None,
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
        sandbox: Optional[SandboxMode] = None,
        approval_policy: Optional[ApprovalPolicy] = None,
        output_schema: Optional[Mapping[str, Any]] = None,
        thread_params: Optional[Mapping[str, Any]] = None,
        turn_params: Optional[Mapping[str, Any]] = None,
        idle_timeout: Optional[float] = None,
        interrupt_grace: float = 5.0,
        on_event: Optional[EventListener] = None,
        raise_on_failure: bool = True,
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
                raise_on_failure=raise_on_failure,
            ),
            timeout,
        )

    def close(self) -> None:
        """End the process and the loop thread.  Idempotent."""
        shut(self, self.portal, self.aio.close)

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
        return Turn(self.portal, self.portal.call(call_soon(make)))  # built on the loop, like everything it touches

    def run(
        self,
        input: Input,
        *,
        output_schema: Optional[Mapping[str, Any]] = None,
        params: Optional[Mapping[str, Any]] = None,
        idle_timeout: Optional[float] = None,
        interrupt_grace: float = 5.0,
        on_event: Optional[EventListener] = None,
        raise_on_failure: bool = True,
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
            raise_on_failure=raise_on_failure,
        )
        return self.portal.call(running, timeout)

    def steer(self, input: Input, expected_turn_id: str) -> str:
        return self.portal.call(self.aio.steer(input, expected_turn_id))

    def interrupt(self, turn_id: str) -> None:
        self.portal.call(self.aio.interrupt(turn_id))

    def close(self) -> None:
        """Stop listening to this thread."""
        self.portal.call(call_soon(self.aio.close))


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
    launch: Optional[Launch] = None,
    connect: Optional[Union[str, Connect]] = None,
    approvals: Optional[ApprovalHandler] = None,
    cwd: Optional[str] = None,
    model: Optional[str] = None,
    sandbox: Optional[SandboxMode] = None,
    approval_policy: Optional[ApprovalPolicy] = None,
    output_schema: Optional[Mapping[str, Any]] = None,
    thread_params: Optional[Mapping[str, Any]] = None,
    turn_params: Optional[Mapping[str, Any]] = None,
    idle_timeout: Optional[float] = 600.0,
    interrupt_grace: float = 5.0,
    on_event: Optional[EventListener] = None,
    raise_on_failure: bool = True,
    timeout: Optional[float] = None,
) -> RunResult:
    """:func:`codexmini.run`, blocking: one turn, its :class:`~codexmini.RunResult`.

    With ``client`` (a :class:`Client`) it runs on that client, else on a
    process (``launch``) or a connection to a running server (``connect``)
    and a loop thread of its own, closed before it returns.  ``approvals`` is a plain function, run in a worker thread;
    ``timeout`` bounds the whole call (:class:`~codexmini.CodexTimeout`, the
    turn interrupted); without it the call is bounded as :func:`codexmini.run`
    says (``idle_timeout``, 600 s of silence by default, the model's retries,
    every request and write).  Safe to call from a thread whose event loop is running.
    """
    portal = client.portal if client is not None else Portal()
    try:
        running = _run.run(
            prompt,
            client=client.aio if client is not None else None,
            launch=launch,
            connect=connect,
            approvals=worker(approvals),
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
            raise_on_failure=raise_on_failure,
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
        on_event: Optional[EventListener] = None,
        new_id: Optional[Callable[[], str]] = None,
    ) -> None:
        self.portal = Portal()
        options: Dict[str, Any] = {"approvals": worker(approvals), "on_event": on_event}
        if new_id is not None:
            options["new_id"] = new_id
        try:
            # Built on the loop: on Python 3.9 asyncio primitives bind to the loop current at creation.
            self.aio: _agent.Agent = self.portal.call(
                call_soon(functools.partial(_agent.Agent, log_, config, **options))
            )
        except BaseException:
            self.portal.close()
            raise
        hold(self)

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
    def last_turn_end(self) -> Optional[_agent.TurnEnd]:
        return self.aio.last_turn_end

    def start(self) -> None:
        """Start the codex child and write the session header (:meth:`codexmini.Agent.start`)."""
        self.portal.call(self.aio.start())

    def run(self, content: Content, timeout: Optional[float] = None) -> _agent.TurnEnd:
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

    def followup(self, content: Content) -> None:
        self.portal.call(call_soon(self.aio.followup, content))

    def steer(self, content: Content) -> None:
        self.portal.call(self.aio.steer(content))

    def inject(self, content: Content) -> None:
        self.portal.call(call_soon(self.aio.inject, content))

    def cancel(self, keep_inbox: bool = False) -> None:
        """Abort the running turn (from any thread)."""
        self.portal.call(call_soon(self.aio.cancel, keep_inbox))

    def wait_idle(self, timeout: Optional[float] = None) -> None:
        self.portal.call(self.aio.wait_idle(), timeout)

    def set_knob(self, kind: str, value: str) -> None:
        self.portal.call(call_soon(self.aio.set_knob, kind, value))

    def close(self) -> None:
        """Cancel anything running, end the child and the loop thread.  Idempotent."""
        shut(self, self.portal, self.aio.close)

    def __enter__(self) -> "Agent":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


__all__ = ["Agent", "ApprovalHandler", "Client", "Portal", "Thread", "Turn", "close_all", "in_worker_thread", "run"]
