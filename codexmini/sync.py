"""codexmini for code without an event loop: the same client, threads, turns,
subscriptions, ``run()``, daemon calls and agent, as blocking calls.

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

* **Parity**: every call of the async API has a twin here, of the same name
  with the same parameters (kinds and defaults included): ``sync.Thread.resume(client,
  thread_id)`` is ``await Thread.resume(client, thread_id)``, blocking.
  ``tests/test_sync_parity.py`` compares the two APIs, with a table of the
  few members that differ and why (the constructor is the client's
  ``start``; ``Turn.aclose`` is :meth:`Turn.close`; :meth:`Client.call` runs
  a coroutine).  A call that waits for something to happen (a turn, a
  compaction, the agent going idle, the client ending) takes a ``timeout``
  more, bounding the whole call.
* **Streaming**: iterating a :class:`Turn` fetches one event per call, as
  codex sends them.  What the async API gives as an async iterator
  (``Thread.list``, ``Client.models``, a subscription) is a plain iterator
  here, each step one blocking call; leaving it early closes the async one.
* **Interrupts**: a ``KeyboardInterrupt`` (or the call's ``timeout``) while a
  call blocks cancels it on the loop -- for a turn that sends
  ``turn/interrupt`` and waits briefly for ``turn/completed`` -- then raises.
  Leaving ``with turn:`` early, or a loop over a turn that ends with
  ``break`` or an exception, interrupts the turn the same way.
* **Callbacks**: handlers that answer something -- ``approvals``,
  :meth:`Client.on_request` handlers, the agent's ``before_step`` hook --
  are plain functions, each call run in a short-lived worker thread (so one
  may wait for a human, and may call back into this module); listeners --
  ``on_event``, :meth:`Client.on_answer` observers, a frame ``tap`` -- run on
  the loop's thread, must return quickly and must not call back into this
  module.
* **Shutdown**: ``close()`` (or leaving ``with``) ends the process and the
  loop thread; an ``atexit`` hook closes what is still open.
"""

from __future__ import annotations

import collections.abc
import functools
import logging
from typing import (
    TYPE_CHECKING,
    Any,
    AsyncIterator,
    Callable,
    Coroutine,
    Deque,
    Dict,
    Iterable,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    TypeVar,
    Union,
)

from . import _agent, _run
from ._agent import AgentConfig, Blocked, TurnEnd
from ._errors import CodexminiError, CodexTimeout, ConfigError, ProtocolError
from ._events import Event, TurnCompleted, Usage
from ._inbox import Content, Message
from ._inputs import Input, InputItem
from ._launch import ALL, GLOBAL, Launch, Limits, Overflow, Timeouts
from ._permission import ApprovalPolicy, SandboxMode, install_approvals
from ._portal import (
    BlockingApprovalHandler,
    Portal,
    call_soon,
    close_all,
    hold,
    in_worker_thread,
    off_loop,
    shut,
    worker,
)

if TYPE_CHECKING:
    # The client stack, named in signatures, is imported when a Client or a daemon call
    # starts one, so that ``import codexmini.sync`` costs what the agent's import does;
    # the wire types of the pinned schema, as the async API names them.
    from . import _subscriptions, _threads, protocol
    from ._client import AnswerObserver, AppServerClient, Handler, Tap
    from ._connect import Connect
    from ._endpoint import ModelEndpoint
    from ._knobs import ReasoningSummary
    from ._retry import RetryPolicy
    from ._session import SessionLog
    from ._threads import EventListener, RunResult
    from ._wire import Frame
    from .protocol import (
        CommandExecResponse,
        ConfigReadResponse,
        ConfigWriteResponse,
        GetAccountRateLimitsResponse,
        GetAccountResponse,
        MergeStrategy,
        Model,
        RateLimitSnapshot,
        ReviewDelivery,
        ReviewTarget,
        SandboxPolicy,
    )

log = logging.getLogger("codexmini.sync")

T = TypeVar("T")
#: Answers one approval (or question) codex asks, in a worker thread: ``handler(request)`` → a reply.
ApprovalHandler = BlockingApprovalHandler
#: Answers one server request (:meth:`Client.on_request`), in a worker thread:
#: ``handler(method, params)`` → the result sent to codex.
RequestHandler = Callable[[str, Dict[str, Any]], Any]
#: ``before_step(messages)`` before each of the agent's steps, in a worker
#: thread: ``None`` lets the step run as it is, a list (of messages or texts)
#: replaces its messages, a :class:`~codexmini.Blocked` vetoes it.
PreStepHook = Callable[[List[Message]], Union[None, Sequence[Union[str, Message]], Blocked]]

#: The async agent's own ``new_id`` default (a fresh uuid4 hex), the same object.
_NEW_ID: Callable[[], str] = (_agent.Agent.__init__.__kwdefaults__ or {})["new_id"]


class _End:
    """The end of an async iterator (a sentinel: StopAsyncIteration must not cross threads)."""


_END = _End()


async def _step(events: AsyncIterator[T]) -> Union[T, _End]:
    try:
        return await events.__anext__()
    except StopAsyncIteration:
        return _END


async def _aclose(events: "collections.abc.AsyncGenerator[Any, Any]") -> None:
    await events.aclose()


def _blocking(portal: Portal, events: AsyncIterator[T]) -> Iterator[T]:
    """``events`` (an async iterator of the core) as a plain iterator: each
    step one blocking call on ``portal``.  Left early (a ``break``, an
    exception, the iterator dropped), an async generator is closed on the loop."""
    ended = False
    try:
        while True:
            item = portal.call(_step(events))
            if isinstance(item, _End):
                ended = True
                return
            yield item
    finally:
        if not ended and isinstance(events, collections.abc.AsyncGenerator):
            try:
                portal.call(_aclose(events))
            except CodexminiError as exc:  # closed meanwhile, or dropped on the loop's thread: the loop's close ends it
                log.debug("closing an async iterator: %s", exc)


def _off_loop_handler(handler: RequestHandler) -> Handler:
    async def answer(method: str, params: Dict[str, Any]) -> Any:
        return await off_loop(handler, method, params, name="codexmini-handler", what=f"the handler of {method}")

    return answer


def _off_loop_hook(hook: PreStepHook) -> _agent.PreStepHook:
    async def before_step(messages: List[Message]) -> Union[None, Sequence[Union[str, Message]], Blocked]:
        return await off_loop(hook, messages, name="codexmini-pre-step", what="the pre-step hook")

    return before_step


# ---------------------------------------------------------------------------
# The client


async def _start(
    launch: Optional[Launch], connect: Optional[Union[str, Connect]], token: Optional[str], options: Dict[str, Any]
) -> AppServerClient:
    from ._client import AppServerClient  # here, not with the module: when a client starts

    if connect is None:
        if token is not None:
            raise ConfigError("token: a capability token goes with connect (a running server), not a launch")
        return await AppServerClient.start(launch, **options)
    if launch is not None:
        raise ConfigError("launch and connect: a Client starts codex or connects to one, not both")
    return await AppServerClient.connect(connect, token=token, **options)


async def _with_approvals(
    opening: Coroutine[Any, Any, AppServerClient], approvals: Optional[ApprovalHandler]
) -> AppServerClient:
    client = await opening
    handler = worker(approvals)
    if handler is not None:
        install_approvals(client, handler)
    return client


class Client:
    """``codex app-server`` for synchronous code: ``with sync.Client() as client:``.

    The constructor is the blocking :meth:`AppServerClient.start
    <codexmini.AppServerClient.start>`: it starts and initializes the process
    ``launch`` describes (a :class:`~codexmini.Launch`) at once -- or, with
    ``connect`` (a ``ws://`` or ``unix://`` URL, or a
    :class:`~codexmini.Connect`; ``token`` beside a URL), is
    :meth:`AppServerClient.connect <codexmini.AppServerClient.connect>` --
    with the same options (``initialize``, ``client_name``,
    ``experimental_api``, ``opt_out_notifications``, ``tap``, ``retry``).
    ``approvals`` is a plain function, run in a worker thread; ``timeout``
    bounds the start.  :meth:`close` ends the process and the loop thread.
    Every method of the async client is here, blocking; threads are
    :class:`Thread` objects (``sync.Thread.start(client)``, or
    :meth:`thread`).  :attr:`aio` is the underlying
    :class:`~codexmini.AppServerClient`: use it only in coroutines given to
    :meth:`call`.
    """

    #: :meth:`subscribe` key: every notification.
    ALL = ALL
    #: :meth:`subscribe` key: notifications that name no thread.
    GLOBAL = GLOBAL

    def __init__(
        self,
        launch: Optional[Launch] = None,
        *,
        connect: Optional[Union[str, Connect]] = None,
        token: Optional[str] = None,
        approvals: Optional[ApprovalHandler] = None,
        initialize: bool = True,
        client_name: str = "codexmini",
        experimental_api: bool = True,
        opt_out_notifications: Iterable[str] = (),
        tap: Optional[Tap] = None,
        retry: Optional[RetryPolicy] = None,
        timeout: Optional[float] = None,
    ) -> None:
        options: Dict[str, Any] = {
            "initialize": initialize,
            "client_name": client_name,
            "experimental_api": experimental_api,
            "opt_out_notifications": opt_out_notifications,
            "tap": tap,
            "retry": retry,
        }
        self._open(functools.partial(_start, launch, connect, token, options), approvals, timeout)

    def _open(
        self,
        opening: Callable[[], Coroutine[Any, Any, AppServerClient]],
        approvals: Optional[ApprovalHandler],
        timeout: Optional[float],
    ) -> None:
        self.portal = Portal()
        try:
            self.aio: AppServerClient = self.portal.call(_with_approvals(opening(), approvals), timeout)
        except BaseException:
            self.portal.close()
            raise
        hold(self)

    @classmethod
    def _adopt(
        cls,
        opening: Callable[[], Coroutine[Any, Any, AppServerClient]],
        approvals: Optional[ApprovalHandler],
        timeout: Optional[float],
    ) -> "Client":
        """A client around what ``opening()`` opens on the new client's loop (:func:`connect_daemon`)."""
        client = cls.__new__(cls)
        client._open(opening, approvals, timeout)
        return client

    # -- what the async client says about itself

    @property
    def pid(self) -> Optional[int]:
        return self.aio.pid

    @property
    def returncode(self) -> Optional[int]:
        return self.aio.returncode

    @property
    def stderr_tail(self) -> str:
        return self.aio.stderr_tail

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called or the process ended."""
        return self.portal.closed or self.aio.closed

    @property
    def healthy(self) -> bool:
        return self.aio.healthy and not self.portal.closed

    @property
    def rate_limits(self) -> Optional[RateLimitSnapshot]:
        return self.aio.rate_limits

    @property
    def argv(self) -> List[str]:
        """What was started (``codex app-server …``); empty for a connection."""
        return self.aio.argv

    @property
    def url(self) -> Optional[str]:
        """Where the client connected; ``None`` for a child it started."""
        return self.aio.url

    @property
    def timeouts(self) -> Timeouts:
        return self.aio.timeouts

    @property
    def limits(self) -> Limits:
        return self.aio.limits

    @property
    def retry(self) -> RetryPolicy:
        return self.aio.retry

    @property
    def stats(self) -> Dict[str, int]:
        return self.aio.stats

    @property
    def server_info(self) -> Dict[str, Any]:
        """The ``initialize`` result."""
        return self.aio.server_info

    @property
    def protocol_errors(self) -> Deque[ProtocolError]:
        """The last few lines and frames that broke the rules (logged and skipped)."""
        return self.aio.protocol_errors

    # -- calls

    def call(self, coro: Coroutine[Any, Any, T], timeout: Optional[float] = None) -> T:
        """Run a coroutine of the async API (on :attr:`aio`) on this client's
        loop; e.g. a typed request of :attr:`AppServerClient.call
        <codexmini.AppServerClient.call>`:
        ``client.call(client.aio.call.thread_fork({"threadId": tid}))``."""
        return self.portal.call(coro, timeout)

    def initialize(
        self,
        *,
        client_name: str = "codexmini",
        experimental_api: bool = True,
        opt_out_notifications: Iterable[str] = (),
        timeout: Optional[float] = None,
    ) -> Dict[str, Any]:
        """The handshake, for a client made with ``initialize=False``
        (:meth:`AppServerClient.initialize <codexmini.AppServerClient.initialize>`)."""
        return self.portal.call(
            self.aio.initialize(
                client_name=client_name,
                experimental_api=experimental_api,
                opt_out_notifications=opt_out_notifications,
                timeout=timeout,
            )
        )

    def wait_closed(self, timeout: Optional[float] = None) -> None:
        """Wait until the conversation has ended (process exit or close)."""
        self.portal.call(self.aio.wait_closed(), timeout)

    def request(self, method: str, params: Optional[Mapping[str, Any]] = None, timeout: Optional[float] = None) -> Any:
        """Send a JSON-RPC request; its result (see :meth:`AppServerClient.request`)."""
        return self.portal.call(self.aio.request(method, params, timeout))

    def notify(self, method: str, params: Optional[Mapping[str, Any]] = None) -> None:
        self.portal.call(self.aio.notify(method, params))

    def on_request(self, method: str, handler: Optional[RequestHandler]) -> None:
        """Register (or with ``None`` remove) the handler for a server-request
        method: a plain function ``handler(method, params)`` → the result,
        run in a worker thread each call (:meth:`AppServerClient.on_request
        <codexmini.AppServerClient.on_request>`: one that raises or misses
        ``Timeouts.handler`` gets the fail-closed answer)."""
        wrapped = None if handler is None else _off_loop_handler(handler)
        self.portal.call(call_soon(self.aio.on_request, method, wrapped))

    def on_answer(self, observer: AnswerObserver) -> Callable[[], None]:
        """Be told of every answer to a server request, just before it is sent
        (:meth:`AppServerClient.on_answer <codexmini.AppServerClient.on_answer>`).
        ``observer`` runs on the loop's thread: it must return quickly and not
        call back into this module.  Returns a function that unregisters it
        (from any thread; once the client is closed there is nothing to do)."""
        remove = self.portal.call(call_soon(self.aio.on_answer, observer))

        def unregister() -> None:
            if not self.portal.closed:
                self.portal.call(call_soon(remove))

        return unregister

    def subscribe(
        self, key: Optional[str] = GLOBAL, maxsize: Optional[int] = None, overflow: Optional[Overflow] = None
    ) -> "Subscription":
        """Subscribe to one thread's notifications (``key`` = thread id), to the
        global ones (:attr:`GLOBAL`) or to all (:attr:`ALL`): a
        :class:`Subscription` read with blocking calls
        (:meth:`AppServerClient.subscribe <codexmini.AppServerClient.subscribe>`).
        Close one you stop reading: with the default ``overflow="wait"`` a full
        queue holds the client up."""
        made = self.portal.call(call_soon(self.aio.subscribe, key, maxsize, overflow))
        return Subscription(self.portal, made)

    def forget_thread(self, thread_id: str) -> None:
        self.portal.call(call_soon(self.aio.forget_thread, thread_id))

    def models(
        self,
        *,
        include_hidden: Optional[bool] = None,
        limit: Optional[int] = None,
        provider: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> Iterator[Model]:
        """Every model codex offers (``model/list``), page after page: a plain
        iterator, each page fetched when the one before is used up."""
        listed = self.aio.models(include_hidden=include_hidden, limit=limit, provider=provider, timeout=timeout)
        return _blocking(self.portal, listed)

    def read_config(
        self, *, cwd: Optional[str] = None, include_layers: Optional[bool] = None, timeout: Optional[float] = None
    ) -> ConfigReadResponse:
        return self.portal.call(self.aio.read_config(cwd=cwd, include_layers=include_layers, timeout=timeout))

    def write_config(
        self,
        key_path: str,
        value: Any,
        *,
        merge: MergeStrategy = "replace",
        file_path: Optional[str] = None,
        expected_version: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> ConfigWriteResponse:
        written = self.aio.write_config(
            key_path, value, merge=merge, file_path=file_path, expected_version=expected_version, timeout=timeout
        )
        return self.portal.call(written)

    def read_account(
        self, *, refresh_token: Optional[bool] = None, timeout: Optional[float] = None
    ) -> GetAccountResponse:
        return self.portal.call(self.aio.read_account(refresh_token=refresh_token, timeout=timeout))

    def read_rate_limits(self, *, timeout: Optional[float] = None) -> GetAccountRateLimitsResponse:
        return self.portal.call(self.aio.read_rate_limits(timeout=timeout))

    def exec(
        self,
        command: Sequence[str],
        *,
        cwd: Optional[str] = None,
        env: Optional[Mapping[str, Optional[str]]] = None,
        timeout_ms: Optional[int] = None,
        sandbox_policy: Optional[SandboxPolicy] = None,
        params: Optional[Mapping[str, Any]] = None,
        timeout: Optional[float] = None,
    ) -> CommandExecResponse:
        running = self.aio.exec(
            command,
            cwd=cwd,
            env=env,
            timeout_ms=timeout_ms,
            sandbox_policy=sandbox_policy,
            params=params,
            timeout=timeout,
        )
        return self.portal.call(running)

    # -- shorthands of the blocking API alone

    def thread(
        self,
        *,
        cwd: Optional[str] = None,
        model: Optional[str] = None,
        sandbox: Optional[SandboxMode] = None,
        approval_policy: Optional[ApprovalPolicy] = None,
        params: Optional[Mapping[str, Any]] = None,
        timeout: Optional[float] = None,
    ) -> "Thread":
        """Start a thread (``thread/start``): ``sync.Thread.start(client, …)``."""
        return Thread.start(
            self,
            cwd=cwd,
            model=model,
            sandbox=sandbox,
            approval_policy=approval_policy,
            params=params,
            timeout=timeout,
        )

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
        idle_timeout: Optional[float] = 600.0,
        interrupt_grace: float = 5.0,
        on_event: Optional[EventListener] = None,
        raise_on_failure: bool = True,
        timeout: Optional[float] = None,
    ) -> RunResult:
        """:func:`codexmini.run` on this client: one turn on a new thread
        (``sync.run(prompt, client=client, …)``)."""
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


class Subscription:
    """A bounded queue of a client's notifications (:meth:`Client.subscribe`),
    read with blocking calls: :meth:`get` waits for the next frame, iterating
    gives every frame until the client ends, :meth:`events` the same as
    codexmini events (how a caller hears of
    :class:`~codexmini.RateLimitsUpdated`).  Once the client has ended and
    the queue is empty, :meth:`get` raises the client's terminal error."""

    def __init__(self, portal: Portal, aio: _subscriptions.Subscription) -> None:
        self.portal = portal
        self.aio = aio

    @property
    def key(self) -> Optional[str]:
        """The thread id, :attr:`Client.GLOBAL` or :attr:`Client.ALL`."""
        return self.aio.key

    @property
    def maxsize(self) -> int:
        """The queue's size (``Limits.queue_size`` unless :meth:`Client.subscribe` said)."""
        return self.aio.maxsize

    @property
    def overflow(self) -> Overflow:
        """What the queue does over ``maxsize``: ``"wait"`` or ``"drop"``."""
        return self.aio.overflow

    @property
    def full(self) -> bool:
        """True while the client waits for this queue to drain (``"wait"``)."""
        return self.aio.full

    @property
    def dropped(self) -> int:
        """How many notifications this queue dropped (``"drop"``)."""
        return self.aio.dropped

    def pending(self) -> int:
        """How many frames are queued."""
        return self.portal.call(call_soon(self.aio.pending))

    def get_nowait(self) -> Optional[Frame]:
        """The next frame if one is queued, else ``None`` (raises once ended and empty)."""
        return self.portal.call(call_soon(self.aio.get_nowait))

    def get(self, timeout: Optional[float] = None) -> Frame:
        """Wait for the next frame; :class:`~codexmini.CodexTimeout` after ``timeout`` seconds."""
        return self.portal.call(self.aio.get(timeout))

    def events(self) -> Iterator[Event]:
        """The queued notifications as codexmini events, until the client ends."""
        return _blocking(self.portal, self.aio.events())

    def close(self) -> None:
        """Stop receiving (idempotent); a client waiting for this queue reads on."""
        self.portal.call(call_soon(self.aio.close))

    def __iter__(self) -> Iterator[Frame]:
        """Every frame, each step one blocking call, until the client ends."""
        return _blocking(self.portal, self.aio)


# ---------------------------------------------------------------------------
# Threads and turns


class Thread:
    """One codex thread: :meth:`start` a new one (or :meth:`Client.thread`),
    :meth:`resume` or :meth:`fork` a stored one, :meth:`list` them; then
    :meth:`turn` it, :meth:`read` it, :meth:`rollback`, :meth:`compact`,
    :meth:`review`, :meth:`archive`, name it -- :class:`codexmini.Thread`,
    blocking."""

    def __init__(self, client: Client, aio: _threads.Thread) -> None:
        self.client = client
        self.portal = client.portal
        self.aio = aio

    @classmethod
    def start(
        cls,
        client: Client,
        *,
        cwd: Optional[str] = None,
        model: Optional[str] = None,
        sandbox: Optional[SandboxMode] = None,
        approval_policy: Optional[ApprovalPolicy] = None,
        params: Optional[Mapping[str, Any]] = None,
        timeout: Optional[float] = None,
    ) -> "Thread":
        from . import _threads  # here, not with sync: the async thread at its first use

        started = _threads.Thread.start(
            client.aio,
            cwd=cwd,
            model=model,
            sandbox=sandbox,
            approval_policy=approval_policy,
            params=params,
            timeout=timeout,
        )
        return cls(client, client.portal.call(started))

    @classmethod
    def resume(
        cls,
        client: Client,
        thread_id: str,
        *,
        cwd: Optional[str] = None,
        model: Optional[str] = None,
        sandbox: Optional[SandboxMode] = None,
        approval_policy: Optional[ApprovalPolicy] = None,
        params: Optional[Mapping[str, Any]] = None,
        timeout: Optional[float] = None,
    ) -> "Thread":
        from . import _threads

        resumed = _threads.Thread.resume(
            client.aio,
            thread_id,
            cwd=cwd,
            model=model,
            sandbox=sandbox,
            approval_policy=approval_policy,
            params=params,
            timeout=timeout,
        )
        return cls(client, client.portal.call(resumed))

    @classmethod
    def fork(
        cls,
        client: Client,
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
        from . import _threads

        forked = _threads.Thread.fork(
            client.aio,
            thread_id,
            last_turn_id=last_turn_id,
            ephemeral=ephemeral,
            cwd=cwd,
            model=model,
            sandbox=sandbox,
            approval_policy=approval_policy,
            params=params,
            timeout=timeout,
        )
        return cls(client, client.portal.call(forked))

    @staticmethod
    def list(
        client: Client,
        *,
        limit: Optional[int] = None,
        archived: Optional[bool] = None,
        cwd: Optional[str] = None,
        search: Optional[str] = None,
        params: Optional[Mapping[str, Any]] = None,
        timeout: Optional[float] = None,
    ) -> Iterator[protocol.Thread]:
        """Every stored thread (``thread/list``, newest first), as the wire's
        ``Thread`` objects: a plain iterator, each page (``limit`` per page)
        fetched when the one before is used up.  ``archived=True`` lists the
        archived ones."""
        from . import _threads

        listed = _threads.Thread.list(
            client.aio, limit=limit, archived=archived, cwd=cwd, search=search, params=params, timeout=timeout
        )
        return _blocking(client.portal, listed)

    @property
    def id(self) -> str:
        return self.aio.id

    @property
    def info(self) -> Mapping[str, Any]:
        """The response the thread was opened with (``thread/start``, ``resume`` or ``fork``)."""
        return self.aio.info

    @property
    def history_mode(self) -> Optional[str]:
        return self.aio.history_mode

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
        return Turn(self, self.portal.call(call_soon(make)))  # built on the loop, like everything it touches

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

    def review(
        self,
        target: ReviewTarget,
        *,
        delivery: Optional[ReviewDelivery] = None,
        interrupt_grace: float = 5.0,
        idle_timeout: Optional[float] = None,
    ) -> "Turn":
        """A code review (``review/start``) as a :class:`Turn` like any other:
        iterate it or :meth:`Turn.run` it (:meth:`codexmini.Thread.review`)."""
        make = functools.partial(
            self.aio.review, target, delivery=delivery, interrupt_grace=interrupt_grace, idle_timeout=idle_timeout
        )
        return Turn(self, self.portal.call(call_soon(make)))

    def compact(
        self, *, idle_timeout: Optional[float] = None, interrupt_grace: float = 5.0, timeout: Optional[float] = None
    ) -> TurnCompleted:
        """Compact the thread's history (``thread/compact/start``) and wait for
        the compaction turn to end; ``timeout`` bounds the whole call (the
        turn is interrupted)."""
        compacting = self.aio.compact(idle_timeout=idle_timeout, interrupt_grace=interrupt_grace)
        return self.portal.call(compacting, timeout)

    def read(self, *, include_turns: bool = True, timeout: Optional[float] = None) -> protocol.Thread:
        return self.portal.call(self.aio.read(include_turns=include_turns, timeout=timeout))

    def rollback(self, turns: int = 1, *, timeout: Optional[float] = None) -> None:
        self.portal.call(self.aio.rollback(turns, timeout=timeout))

    def archive(self, *, timeout: Optional[float] = None) -> None:
        self.portal.call(self.aio.archive(timeout=timeout))

    def unarchive(self, *, timeout: Optional[float] = None) -> protocol.Thread:
        return self.portal.call(self.aio.unarchive(timeout=timeout))

    def set_name(self, name: str, *, timeout: Optional[float] = None) -> None:
        self.portal.call(self.aio.set_name(name, timeout=timeout))

    def steer(self, input: Input, expected_turn_id: str) -> str:
        return self.portal.call(self.aio.steer(input, expected_turn_id))

    def interrupt(self, turn_id: str) -> None:
        self.portal.call(self.aio.interrupt(turn_id))

    def close(self) -> None:
        """Stop listening to this thread."""
        self.portal.call(call_soon(self.aio.close))


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

    def __init__(self, thread: Thread, aio: _threads.Turn) -> None:
        self.portal = thread.portal
        self.aio = aio
        self._thread = thread
        self._stop = False  # interrupt() was asked for
        self._stop_sent = False

    @property
    def thread(self) -> Thread:
        """The thread the turn runs in: the one it was made from, or (a
        detached :meth:`Thread.review`) the new thread codex reviews in."""
        if self.aio.thread is not self._thread.aio:
            self._thread = Thread(self._thread.client, self.aio.thread)
        return self._thread

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

    @property
    def input(self) -> List[InputItem]:
        """The input items the turn starts with."""
        return self.aio.input

    @property
    def params(self) -> Mapping[str, Any]:
        """The raw ``turn/start`` fields it adds."""
        return self.aio.params

    @property
    def interrupt_grace(self) -> float:
        return self.aio.interrupt_grace

    @property
    def idle_timeout(self) -> Optional[float]:
        return self.aio.idle_timeout

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
        """Stop early: interrupt the turn if it still runs and wait briefly (``Turn.aclose``)."""
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


# ---------------------------------------------------------------------------
# One call, and codex's managed daemon


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


def connect_daemon(
    launch: Optional[Launch] = None,
    *,
    start: bool = True,
    approvals: Optional[ApprovalHandler] = None,
    timeout: Optional[float] = None,
    **options: Any,
) -> Client:
    """:func:`codexmini.connect_daemon`, blocking: a :class:`Client` of codex's
    managed daemon for ``launch``'s ``CODEX_HOME``, started first unless
    ``start`` is false.  ``options`` go to the connection as
    :class:`Client`'s do (``token``, ``client_name``, ``tap``, ``retry`` …);
    ``approvals`` is a plain function, run in a worker thread; ``timeout``
    bounds the whole call.  The daemon outlives the client: :func:`stop_daemon` stops it."""
    from ._daemon import connect_daemon  # here, not with the module: when a daemon is used

    opening = functools.partial(connect_daemon, launch, start=start, **options)
    return Client._adopt(opening, approvals, timeout)


def stop_daemon(launch: Optional[Launch] = None, *, timeout: Optional[float] = None) -> Dict[str, Any]:
    """:func:`codexmini.stop_daemon`, blocking: stop codex's managed daemon for
    ``launch``'s ``CODEX_HOME`` and its updater; the daemon's status."""
    from ._daemon import stop_daemon as stopping  # here, not with the module: when a daemon is used

    with Portal() as portal:
        return portal.call(stopping(launch), timeout)


# ---------------------------------------------------------------------------
# The agent


class Agent:
    """:class:`codexmini.Agent`, blocking: ``with sync.Agent(log, config) as agent: agent.run("...")``.

    ``approvals`` and ``before_step`` (the pre-step hook: ``None``, a list of
    messages or texts, or a :class:`~codexmini.Blocked`) are plain functions,
    each call run in a worker thread; ``on_event`` runs on the loop's thread.
    :meth:`cancel` and :meth:`steer` may be called from another thread while
    :meth:`run` blocks.  Every call of the async agent is here: the knobs
    (:meth:`set_model`, :meth:`set_endpoint`, :meth:`set_knob`), the inbox
    (:meth:`followup`, :meth:`steer`, :meth:`inject`, :meth:`run_pending`), :meth:`cancel`,
    :meth:`wait_idle`, :meth:`start`, :meth:`close`.
    """

    def __init__(
        self,
        log_: SessionLog,
        config: AgentConfig,
        *,
        approvals: Optional[ApprovalHandler] = None,
        on_event: Optional[EventListener] = None,
        before_step: Optional[PreStepHook] = None,
        new_id: Callable[[], str] = _NEW_ID,
    ) -> None:
        self.portal = Portal()
        made = functools.partial(
            _agent.Agent,
            log_,
            config,
            approvals=worker(approvals),
            on_event=on_event,
            before_step=None if before_step is None else _off_loop_hook(before_step),
            new_id=new_id,
        )
        try:
            # Built on the loop: on Python 3.9 asyncio primitives bind to the loop current at creation.
            self.aio: _agent.Agent = self.portal.call(call_soon(made))
        except BaseException:
            self.portal.close()
            raise
        hold(self)

    @property
    def log(self) -> SessionLog:
        return self.aio.log

    @property
    def config(self) -> AgentConfig:
        return self.aio.config

    @property
    def phase(self) -> str:
        return self.aio.phase

    @property
    def stats(self) -> Dict[str, int]:
        return self.aio.stats

    @property
    def last_turn_end(self) -> Optional[TurnEnd]:
        return self.aio.last_turn_end

    def start(self) -> None:
        """Start the codex child and write the session header (:meth:`codexmini.Agent.start`)."""
        self.portal.call(self.aio.start())

    def run(self, content: Content, timeout: Optional[float] = None) -> TurnEnd:
        """Queue ``content``, run until idle, return the last ``turn/end`` data.
        A ``KeyboardInterrupt`` (logged ``abortedBy: interrupt``, as the CLI's
        Ctrl-C) or the ``timeout`` (``abortedBy: cancel``) aborts the turn
        before it propagates."""
        return self._until_idle(self.aio.run(content), timeout)

    def run_pending(self, timeout: Optional[float] = None) -> Optional[TurnEnd]:
        """Run what the inbox holds (:meth:`codexmini.Agent.run_pending`: on a
        resumed log, what its writer had queued) until idle; the last
        ``turn/end`` data, or ``None`` when nothing ran.  A ``KeyboardInterrupt``
        or the ``timeout`` aborts the turn, as for :meth:`run`."""
        return self._until_idle(self.aio.run_pending(), timeout)

    def _until_idle(self, call: Coroutine[Any, Any, T], timeout: Optional[float]) -> T:
        try:
            return self.portal.call(call, timeout)
        except (KeyboardInterrupt, CodexTimeout) as exc:
            # The call waits for a driver task of its own: stop that too.
            self.cancel(cause="interrupt" if isinstance(exc, KeyboardInterrupt) else "cancel")
            self.wait_idle(self.portal.cancel_grace)
            raise

    def followup(self, content: Content) -> None:
        self.portal.call(call_soon(self.aio.followup, content))

    def steer(self, content: Content) -> None:
        self.portal.call(self.aio.steer(content))

    def inject(self, content: Content) -> None:
        self.portal.call(call_soon(self.aio.inject, content))

    def cancel(self, keep_inbox: bool = False, *, cause: str = "cancel") -> None:
        """Abort the running turn (from any thread); ``cause`` is logged as the turn's ``abortedBy``."""
        self.portal.call(call_soon(functools.partial(self.aio.cancel, keep_inbox, cause=cause)))

    def wait_idle(self, timeout: Optional[float] = None) -> None:
        self.portal.call(self.aio.wait_idle(), timeout)

    def set_knob(self, kind: str, value: str) -> None:
        self.portal.call(call_soon(self.aio.set_knob, kind, value))

    def set_model(self, model: str) -> None:
        self.portal.call(call_soon(self.aio.set_model, model))

    def set_sandbox(self, mode: SandboxMode) -> None:
        self.portal.call(call_soon(self.aio.set_sandbox, mode))

    def set_reasoning(self, effort: Optional[str] = None, summary: Optional[ReasoningSummary] = None) -> None:
        self.portal.call(call_soon(self.aio.set_reasoning, effort, summary))

    def set_endpoint(self, endpoint: Optional[ModelEndpoint], api_key_env: Optional[str] = None) -> None:
        self.portal.call(call_soon(self.aio.set_endpoint, endpoint, api_key_env))

    def close(self) -> None:
        """Cancel anything running, end the child and the loop thread.  Idempotent."""
        shut(self, self.portal, self.aio.close)

    def __enter__(self) -> "Agent":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


__all__ = [
    "Agent",
    "ApprovalHandler",
    "Client",
    "Portal",
    "PreStepHook",
    "RequestHandler",
    "Subscription",
    "Thread",
    "Turn",
    "close_all",
    "connect_daemon",
    "in_worker_thread",
    "run",
    "stop_daemon",
]
