"""The client: the asyncio shell around one JSON-RPC conversation with codex.

All protocol state lives in the pure :class:`~._rpc.Connection`; this module
moves bytes through a :class:`~._transport.Transport` and runs tasks.
:meth:`AppServerClient.start` starts the child a :class:`~codexmini.Launch`
describes (:func:`._process.spawn`), wraps its transport and performs the
handshake.  Beside the caller run:

* **the reader**: transport bytes → :meth:`Connection.receive` → what came
  in, each handled by one row of :data:`_HANDLERS`: a response resolves its
  future, a notification goes to the subscriptions of its route
  (:mod:`._subscriptions`; a thread nobody subscribed to yet is held by the
  connection until one does), a server request starts a handler task (or
  gets the fail-closed answer), ``serverRequest/resolved`` cancels its
  handler, a skipped line is logged and counted.  Nothing a frame does ends
  the reader: a failure is logged, counted in ``stats["handler_errors"]``,
  and the next frame is read.  After a read the reader lets the consumers
  run, so one read's frames die young -- unless the reads so far woke many
  consumers for a few frames each (many turns at once): then it reads on
  while the transport holds more, so that a consumer wakes once for
  :data:`FRAMES_PER_WAKE` frames, not once a read, and :data:`ROUND_BYTES`
  at most between two runs of the consumers.  What a notification
  costs to route does not grow with the subscriptions open: one lookup of
  its route, its subscribers' queues and no other.
* **handler tasks**, one per server request, so a slow approval never stalls
  the reader; one that raises or misses its deadline gets the fail-closed
  answer.
* **the exit watcher**: when the child exits, what is left of its process
  group is killed, the reader drains the pipe, and every pending request and
  subscription fails with ``ProcessExited(returncode, stderr_tail)``.

:meth:`request` retries a request codex rejected unprocessed as overloaded
(``-32001``) as :attr:`retry` allows; no other error is retried, since it may
have had effects.  :meth:`close` is idempotent: stdin closed (codex exits at
once), then ``SIGTERM`` and ``SIGKILL`` to the group.  A **frame tap**,
``tap(direction, frame)``, sees every frame; :func:`observe_clients` gives
every new client one (the conformance suite validates every frame that way).
"""

from __future__ import annotations

import asyncio
import collections
import functools
import logging
import signal
from typing import (
    TYPE_CHECKING,
    Any,
    Awaitable,
    Callable,
    Deque,
    Dict,
    Iterable,
    List,
    Mapping,
    Optional,
    Sequence,
    Set,
    Tuple,
    Type,
    Union,
)

from . import _rpc
from ._deadline import within
from ._errors import (
    ClientClosed,
    CodexminiError,
    ProtocolError,
    RequestTimeout,
    ServerOverloaded,
    TransportError,
    UnencodableInput,
    WriteTimeout,
)
from ._extras import Extras
from ._launch import Launch, Limits, Overflow, Timeouts, check_overflow
from ._permission import ANSWERABLE, describe
from ._retry import RetryPolicy
from ._subscriptions import ALL, GLOBAL, Subscription
from ._version import __version__
from ._wire import Frame

if TYPE_CHECKING:
    from ._connect import Connect
    from ._transport import Transport
    from .protocol import Calls, RateLimitSnapshot

log = logging.getLogger("codexmini.client")

Tap = Callable[[str, Frame], None]
#: A server-request handler: ``await handler(method, params)`` → the result.
Handler = Callable[[str, Dict[str, Any]], Awaitable[Any]]
#: Told of every answer sent: ``(method, params, answer_frame, by)`` where
#: ``by`` is ``"handler"``, ``"default"``, ``"timeout"`` or ``"error"``.
AnswerObserver = Callable[[str, Dict[str, Any], Frame, str], None]


_observers: List[Callable[[], Optional[Tap]]] = []
_NO_ROUTE = object()  # no notification routed yet (see AppServerClient._handle)
_DECLINED_TURNS = 64  # how many turns _say_declined remembers
#: The reader lets the consumers run once the frames it routed are at least
#: this many per consumer it woke (or it has to wait for the transport) ...
FRAMES_PER_WAKE = 16
#: ... or once it read this many bytes, however few frames each consumer
#: got: a consumer's first frame does not wait for the reader to read and
#: parse a huge line behind it.  A thread's queue holds what it folds, a
#: method and its params (:mod:`._subscriptions`: a delta's is nothing the
#: collector walks), so a round may hold many parsed frames: at 128 KiB 128
#: turns at once woke a consumer for 4.2 frames, at 512 KiB for 15, with 6%
#: fewer instructions and 17% fewer first-level cache misses (cachegrind;
#: last-level misses rose 1.7x with a 4 MiB last level, fell with a 1 MiB
#: one; past 512 KiB they climb: ``docs/speed.md``).
ROUND_BYTES = 1 << 19


def observe_clients(factory: Callable[[], Optional[Tap]]) -> Callable[[], None]:
    """Give every client started from now on the tap ``factory()`` returns.

    Returns a function that unregisters the factory.
    """
    _observers.append(factory)

    def remove() -> None:
        if factory in _observers:
            _observers.remove(factory)

    return remove


class AppServerClient(Extras):
    """One ``codex app-server`` and the JSON-RPC conversation with it.

    Create it with :meth:`start` (``async with await AppServerClient.start()
    as client``).  :meth:`request` sends a request and returns its result;
    :attr:`call` has a typed method for each request of the schema;
    :meth:`subscribe` receives notifications; :meth:`on_request` answers
    codex's own requests (approvals, questions) -- unanswered ones get the
    fail-closed answer.  Threads are :class:`~codexmini.Thread` objects; models,
    config, the account and ``command/exec`` are methods (:mod:`._extras`).
    """

    #: :meth:`subscribe` key: every notification.
    ALL = ALL
    #: :meth:`subscribe` key: notifications that name no thread.
    GLOBAL = GLOBAL
    #: What :meth:`close` sends once stdin's end and ``close_timeout`` did not
    #: end the child, and how long it waits after each signal (seconds).
    SIGNAL_GRACES: Tuple[Tuple[int, float], ...] = ((signal.SIGTERM, 2.0), (signal.SIGKILL, 5.0))

    def __init__(
        self,
        transport: Transport,
        *,
        argv: Sequence[str] = (),
        url: Optional[str] = None,
        tap: Optional[Tap] = None,
        timeouts: Optional[Timeouts] = None,
        limits: Optional[Limits] = None,
        retry: Optional[RetryPolicy] = None,
        retry_sleep: Optional[Callable[[float], Awaitable[Any]]] = None,
    ) -> None:
        """Wrap a started ``transport`` (use :meth:`start` or :meth:`connect`); needs a running loop."""
        if isinstance(transport, (str, bytes, list, tuple)):
            # The pre-0.1 spelling AppServerClient(argv): refused, since only
            # start() builds the child's environment from the allowlist.
            raise TypeError("AppServerClient() wraps a started transport; launch codex with AppServerClient.start()")
        #: What was started (``codex app-server …``), for the record; empty for a connection.
        self.argv = list(argv)
        #: Where the client connected (:meth:`connect`); ``None`` for a child it started.
        self.url = url
        #: How long the conversation waits (:class:`~codexmini.Timeouts`).
        self.timeouts = Timeouts() if timeouts is None else timeouts
        #: How much it holds (:class:`~codexmini.Limits`).
        self.limits = limits = Limits() if limits is None else limits
        #: How :meth:`request` retries a request codex rejected as overloaded.
        self.retry = RetryPolicy() if retry is None else retry
        self._sleep: Callable[[float], Awaitable[Any]] = retry_sleep or asyncio.sleep
        self._calls: Optional["Calls"] = None
        self._conn = _rpc.Connection(
            max_frame_bytes=limits.max_frame_bytes,
            unclaimed_threads=limits.unclaimed_threads,
            unclaimed_bytes=limits.unclaimed_bytes,
        )
        self.stats = self._conn.stats
        self.stats.update(handler_errors=0, timeouts=0, overloaded=0, retries=0, write_timeouts=0, paused=0, stalled=0)
        self._transport = transport
        self._taps: List[Tap] = [t for t in [tap] + [f() for f in list(_observers)] if t is not None]
        self._futures: Dict[_rpc.RequestId, "asyncio.Future[Any]"] = {}
        self._handlers: Dict[str, Handler] = {}
        self._answer_observers: List[AnswerObserver] = []
        self._declined: Dict[Tuple[Any, Any], None] = {}  # turns told of a declined request, oldest first
        self._inflight: Dict[_rpc.RequestId, "asyncio.Task[None]"] = {}
        self._unsubscribing: Set["asyncio.Task[Any]"] = set()
        self._subs: Dict[Optional[str], List[Subscription]] = {}
        self._all: List[Subscription] = []  # the ALL subscribers (the same list as _subs[ALL])
        # Back-pressure (Limits.overflow "wait"): the subscriptions over their
        # size the reader waits for, the future it waits on, and whether the
        # server is gone or going (the rest of what it sent is read at once).
        self._full: List[Subscription] = []
        self._room: "Optional[asyncio.Future[None]]" = None
        self._read_freely = False
        self._terminal: Optional[TransportError] = None
        self._closing = False
        self._close_task: Optional["asyncio.Task[None]"] = None
        self._healthy = True
        self.server_info: Dict[str, Any] = {}
        #: The last few lines and frames that broke the rules (logged and skipped, never fatal).
        self.protocol_errors: Deque[ProtocolError] = collections.deque(maxlen=20)
        loop = asyncio.get_running_loop()
        self._write_lock = asyncio.Lock()
        self._write_stuck = False  # a write outlived Timeouts.write: every later one fails at once
        self._ended: "asyncio.Future[None]" = loop.create_future()
        self._reader = loop.create_task(self._read())
        self._exit_watcher = loop.create_task(self._watch_exit())

    # -- life cycle --------------------------------------------------------

    @classmethod
    async def start(
        cls,
        launch: Optional[Launch] = None,
        *,
        initialize: bool = True,
        client_name: str = "codexmini",
        experimental_api: bool = True,
        opt_out_notifications: Iterable[str] = (),
        tap: Optional[Tap] = None,
        retry: Optional[RetryPolicy] = None,
        retry_sleep: Optional[Callable[[float], Awaitable[Any]]] = None,
    ) -> "AppServerClient":
        """Start ``codex app-server`` as ``launch`` (a :class:`~codexmini.Launch`;
        default ``Launch()``) describes, and (by default) initialize.

        The handshake (``initialize``, then ``initialized``) names the client
        ``client_name``, asks for the experimental API and opts out of the
        ``opt_out_notifications`` methods.  ``tap(direction, frame)`` sees
        every frame.  ``retry`` says how requests codex rejects as overloaded
        are retried (:class:`~codexmini.RetryPolicy`; :data:`~codexmini.NO_RETRY`
        turns it off) and ``retry_sleep`` waits between attempts
        (``asyncio.sleep``).

        Raises :class:`~codexmini.BinaryNotFound` (no codex, or it cannot be
        executed), :class:`~codexmini.ConfigError` (the working directory does
        not exist) and whatever ``initialize`` raises.
        """
        from ._process import spawn  # here, not with the client: a connection needs no child

        launch = Launch() if launch is None else launch
        transport, planned = await spawn(launch)
        client = cls(transport, argv=planned.argv, tap=tap, timeouts=launch.timeouts, limits=launch.limits)
        return await client._opened(
            retry, retry_sleep, initialize, client_name, experimental_api, opt_out_notifications
        )

    @classmethod
    async def connect(
        cls,
        target: Union[str, Connect],
        *,
        token: Optional[str] = None,
        initialize: bool = True,
        client_name: str = "codexmini",
        experimental_api: bool = True,
        opt_out_notifications: Iterable[str] = (),
        tap: Optional[Tap] = None,
        retry: Optional[RetryPolicy] = None,
        retry_sleep: Optional[Callable[[float], Awaitable[Any]]] = None,
    ) -> "AppServerClient":
        """Connect to a running ``codex app-server`` -- ``"ws://HOST:PORT"``
        (``--listen ws://…``), ``"unix:///PATH"`` (``--listen unix://…``) or a
        :class:`~codexmini.Connect` (credentials, timeouts, limits) -- and (by
        default) initialize, as :meth:`start` does.  ``token``: a capability
        token, beside a URL.

        Raises :class:`~codexmini.ConnectFailed` (unreachable, refused, not a
        WebSocket server), :class:`~codexmini.AuthRejected` (no or the wrong
        credentials), :class:`~codexmini.ConfigError` (a bad URL, a token file
        that cannot be read) and whatever ``initialize`` raises.  Once
        connected, a connection that ends fails what waits with a
        :class:`~codexmini.WebSocketError`."""
        from ._connect import as_connect  # here, not with the client: only this way in needs them
        from ._socket import open_websocket

        target = as_connect(target, token)
        transport = await open_websocket(target)
        client = cls(transport, url=target.url, tap=tap, timeouts=target.timeouts, limits=target.limits)
        return await client._opened(
            retry, retry_sleep, initialize, client_name, experimental_api, opt_out_notifications
        )

    async def _opened(
        self,
        retry: Optional[RetryPolicy],
        retry_sleep: Optional[Callable[[float], Awaitable[Any]]],
        initialize: bool,
        client_name: str,
        experimental_api: bool,
        opt_out_notifications: Iterable[str],
    ) -> "AppServerClient":
        """A client just started or connected: its retry policy, then (by
        default) ``initialize`` within ``Timeouts.initialize``; on any failure
        the client is closed."""
        self.retry = RetryPolicy() if retry is None else retry
        self._sleep = retry_sleep or asyncio.sleep
        if initialize:
            try:
                await self.initialize(
                    client_name=client_name,
                    experimental_api=experimental_api,
                    opt_out_notifications=opt_out_notifications,
                    timeout=self.timeouts.initialize,
                )
            except BaseException:
                await self.close()
                raise
        return self

    async def initialize(
        self,
        *,
        client_name: str = "codexmini",
        experimental_api: bool = True,
        opt_out_notifications: Iterable[str] = (),
        timeout: Optional[float] = None,
    ) -> Dict[str, Any]:
        """The handshake: ``initialize``, then the ``initialized`` notification."""
        capabilities: Dict[str, Any] = {"experimentalApi": experimental_api}
        opt_out = list(opt_out_notifications)
        if opt_out:
            capabilities["optOutNotificationMethods"] = opt_out
        params = {
            "clientInfo": {"name": client_name, "version": __version__},
            "capabilities": capabilities,
        }
        result = await self.request("initialize", params, timeout=timeout)
        if not isinstance(result, dict):
            raise ProtocolError(f"initialize answered with {type(result).__name__}, not an object")
        self.server_info = result
        from ._binary import server_version, warn_if_unsupported

        warn_if_unsupported(server_version(result))  # once a version, a process
        await self.notify("initialized")
        return self.server_info

    @property
    def call(self) -> "Calls":
        """One typed method per client request of the pinned schema, sent
        through :meth:`request` (retries included):
        ``await client.call.thread_fork({"threadId": tid})`` → a
        ``ThreadForkResponse`` (:mod:`codexmini.protocol`; types only, nothing
        is validated at run time)."""
        if self._calls is None:
            from .protocol import Calls

            self._calls = Calls(self.request)
        return self._calls

    @property
    def rate_limits(self) -> Optional["RateLimitSnapshot"]:
        """The last rate-limit snapshot codex sent (``account/rateLimits/updated``), if any."""
        limits: Optional["RateLimitSnapshot"] = self._conn.rate_limits  # type: ignore[assignment]
        return limits

    @property
    def pid(self) -> Optional[int]:
        """The child's process id (``None`` for a transport without one)."""
        return self._transport.pid

    @property
    def returncode(self) -> Optional[int]:
        """The child's exit status once it exited."""
        return self._transport.returncode

    @property
    def stderr_tail(self) -> str:
        """The child's last stderr lines (ANSI colours stripped)."""
        return self._transport.stderr_tail

    @property
    def closed(self) -> bool:
        """True once the client was closed or the process ended."""
        return self._closing or self._terminal is not None

    @property
    def healthy(self) -> bool:
        """False once the client ended or a request went unanswered past its
        deadline (codex answers every well-formed request, so a child that
        does not is stuck or stopped reading): replace it."""
        return self._healthy and not self.closed

    async def wait_closed(self) -> None:
        """Wait until the conversation has ended (process exit or close)."""
        await asyncio.shield(self._ended)

    async def close(self) -> None:
        """End the conversation: answer what codex asked and nobody answered
        (fail-closed), then end the child (close stdin, wait, terminate, kill
        the group) or the connection.  Idempotent."""
        if self._close_task is None:
            self._close_task = asyncio.get_running_loop().create_task(self._close())
        await asyncio.shield(self._close_task)

    async def __aenter__(self) -> "AppServerClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def _close(self) -> None:
        if self._unsubscribing:  # their answers are on the way: take them (bounded), not leave them late
            await asyncio.wait(list(self._unsubscribing), timeout=self.timeouts.close)
        for task in list(self._unsubscribing):  # the server forgets a connection's subscriptions anyway
            task.cancel()
        try:
            await within(self._answer_open_requests(), self.timeouts.close)
        except asyncio.TimeoutError:
            log.info("closing: the fail-closed answers were not all written within %gs", self.timeouts.close)
        self._closing = True
        self._stop_waiting()
        self._fail_all(ClientClosed())
        self._transport.close_input()
        graces: Tuple[Tuple[Optional[int], float], ...] = ((None, self.timeouts.close), *self.SIGNAL_GRACES)
        for sig, grace in graces:
            if sig is not None:
                self._transport.signal(sig)
            try:
                await within(self._transport.wait_exited(), grace)
                break
            except asyncio.TimeoutError:
                continue
        await asyncio.wait([self._exit_watcher], timeout=self.timeouts.close + 1.0)
        self._cancel_handlers()
        if self._inflight:
            await asyncio.wait(list(self._inflight.values()), timeout=self.timeouts.close)

    # -- requests ----------------------------------------------------------

    async def request(
        self, method: str, params: Optional[Mapping[str, Any]] = None, timeout: Optional[float] = None
    ) -> Any:
        """Send a request and wait for its result.

        A request codex rejects unprocessed as overloaded (``-32001``) is sent
        again after a backoff with jitter, as often as :attr:`retry` allows
        (``timeout`` applies to each attempt); then it raises
        :class:`~codexmini.ServerOverloaded`.  Raises
        :class:`~codexmini.RpcError` (a subclass where codex's answer says
        more: :class:`~codexmini.MethodNotFound`,
        :class:`~codexmini.ThreadNotFound`), :class:`~codexmini.RequestTimeout`,
        :class:`~codexmini.ProcessExited` or :class:`~codexmini.ClientClosed`.
        """
        retries = 0
        while True:
            try:
                return await self._request_once(method, params, timeout)
            except ServerOverloaded as exc:
                self.stats["overloaded"] += 1
                exc.attempts = retries + 1
                if not self.retry.should_retry(exc, retries):
                    raise
            delay = self.retry.delay(retries)
            log.info("%s: codex is overloaded; retry %d in %.3fs", method, retries + 1, delay)
            self.stats["retries"] += 1
            retries += 1
            await self._sleep(delay)

    async def _request_once(self, method: str, params: Optional[Mapping[str, Any]], timeout: Optional[float]) -> Any:
        self._check_open()
        rid, out = self._conn.request(method, params)
        future: "asyncio.Future[Any]" = asyncio.get_running_loop().create_future()
        self._futures[rid] = future
        limit = self.timeouts.request if timeout is None else timeout

        async def exchange() -> Any:
            await self._send(out)
            return await asyncio.shield(future)

        try:
            # The deadline covers the write too: a child that stops reading
            # its stdin must not hang the caller.
            return await within(exchange(), limit)
        except asyncio.TimeoutError:
            self._healthy = False
            self.stats["timeouts"] += 1
            raise RequestTimeout(method, limit) from None
        finally:
            self._futures.pop(rid, None)
            self._conn.forget(rid)
            if not future.done():
                future.cancel()
            elif not future.cancelled():
                future.exception()  # retrieved: the error (if any) was raised another way

    async def notify(self, method: str, params: Optional[Mapping[str, Any]] = None) -> None:
        """Send a notification (no answer comes)."""
        self._check_open()
        await self._send(self._conn.notify(method, params))

    def on_request(self, method: str, handler: Optional[Handler]) -> None:
        """Register (or with ``None`` remove) the handler for a server-request method."""
        if handler is None:
            self._handlers.pop(method, None)
        else:
            self._handlers[method] = handler

    def on_answer(self, observer: AnswerObserver) -> Callable[[], None]:
        """Be told of every answer to a server request, just before it is sent
        (codex cannot act on it before the observer has run; a write that then
        fails is logged); returns an unregister function."""
        self._answer_observers.append(observer)

        def remove() -> None:
            if observer in self._answer_observers:
                self._answer_observers.remove(observer)

        return remove

    def _check_open(self) -> None:
        if self._closing:
            raise ClientClosed()
        if self._terminal is not None:
            raise self._terminal

    async def _send(self, out: _rpc.Outgoing) -> None:
        """Write one frame, within ``Timeouts.write`` (the wait for the write
        lock included: a write queued behind a stuck one ends too)."""
        for tap in self._taps:
            self._call_tap(tap, "out", out.frame)
        method = str(out.frame.get("method") or "answer")
        limit = self.timeouts.write
        if self._write_stuck:
            raise WriteTimeout(method, limit)
        try:
            await within(self._write(out), limit)
        except asyncio.TimeoutError:
            self._healthy = False
            self._write_stuck = True
            self.stats["write_timeouts"] += 1
            raise WriteTimeout(method, limit) from None

    async def _write(self, out: _rpc.Outgoing) -> None:
        failed: Optional[BaseException] = None
        async with self._write_lock:
            try:
                await self._transport.write(out.data)
            except (ConnectionError, OSError, RuntimeError) as exc:
                failed = exc
        if failed is not None:
            # The pipe broke: the child is exiting (or stopped reading; either
            # way it is of no further use).  Wait, without holding the write
            # lock, for the exit error to report it.
            self._healthy = False
            log.debug("write failed: %s", failed)
            await asyncio.wait([self._ended], timeout=self.timeouts.close)
            raise self._terminal or TransportError(f"codex stopped reading its stdin ({failed})") from None

    @staticmethod
    def _call_tap(tap: Tap, direction: str, frame: Frame) -> None:
        try:
            tap(direction, frame)
        except Exception:  # a broken observer must not break the conversation
            log.exception("frame tap failed")

    # -- subscriptions -----------------------------------------------------

    def subscribe(
        self, key: Optional[str] = GLOBAL, maxsize: Optional[int] = None, overflow: Optional[Overflow] = None
    ) -> Subscription:
        """Subscribe to one thread's notifications (``key`` = thread id), to the
        global ones (:attr:`GLOBAL`) or to all (:attr:`ALL`).  Notifications
        that arrived for the thread before anyone subscribed come first.
        ``maxsize`` and ``overflow`` override :class:`~codexmini.Limits`'
        ``queue_size`` and ``overflow`` for this queue: ``"drop"`` for a
        consumer that prefers freshness to completeness, or one that may stop
        reading while the connection must go on."""
        return self._subscribe(key, maxsize, overflow)

    def _subscribe(
        self,
        key: Optional[str],
        maxsize: Optional[int] = None,
        overflow: Optional[Overflow] = None,
        pairs: bool = False,
    ) -> Subscription:
        """:meth:`subscribe`; ``pairs``: a thread's own queue (see :mod:`._subscriptions`)."""
        if overflow is not None:
            check_overflow("overflow", overflow)
        sub = Subscription(
            key,
            maxsize or self.limits.queue_size,
            self.stats,
            self._unsubscribe,
            overflow or self.limits.overflow,
            self._full.append,
            self._make_room,
            pairs,
        )
        self._subs.setdefault(key, []).append(sub)
        if key == ALL:
            self._all = self._subs[ALL]
        elif key is not None:  # a thread id
            for note in self._conn.claim(key):
                sub._put(note)
        if self._terminal is not None:
            sub._finish(self._terminal)
        return sub

    def forget_thread(self, thread_id: str) -> None:
        """On a shared server (a client that connected), ask it to stop
        sending this connection the thread's events (``thread/unsubscribe``,
        in the background): a long-lived connection that ran many threads
        would otherwise hear every later turn of each.  A child started for
        this client alone ends with it: nothing to ask."""
        if self.url is None or self.closed:
            return
        task = asyncio.get_running_loop().create_task(self.request("thread/unsubscribe", {"threadId": thread_id}))
        self._unsubscribing.add(task)
        task.add_done_callback(self._unsubscribed)

    def _unsubscribed(self, task: "asyncio.Task[Any]") -> None:
        self._unsubscribing.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.debug("thread/unsubscribe failed: %s", task.exception())

    def _unsubscribe(self, sub: Subscription) -> None:
        subs = self._subs.get(sub.key, [])
        if sub in subs:
            subs.remove(sub)
            if not subs:
                del self._subs[sub.key]
            if sub.key is not None and sub.key != ALL:
                self._conn.release(sub.key)

    # -- reading -----------------------------------------------------------

    async def _read(self) -> None:
        transport = self._transport
        # Bytes read (a WebSocket's messages: their characters), frames routed
        # and consumers woken since the consumers last ran.
        size = frames = woken = 0
        len_ = len
        while True:
            data = await transport.read()
            if not data:
                break
            size += len_(data) if isinstance(data, bytes) else sum(map(len_, data))
            events = self._conn.receive(data)
            woken += self._handle(events)
            frames += len_(events)
            # Routed: the core's tuples and the frames they hold die now, not
            # when the next read comes (at a lull, long after).  Held, every
            # young collection meanwhile walked them, and freeing them after
            # one did not lower the count that starts the next: 128 turns one
            # at a time took 123 young collections, 15 since.
            del events
            if self._full:
                size = frames = woken = 0
                await self._wait_for_room()
            elif size >= ROUND_BYTES or (frames and frames >= woken * FRAMES_PER_WAKE):
                # Let the consumers take what came before the next read is
                # decoded (read() returns at once while the transport holds
                # more): one read's frames die young.  Unless the reads woke
                # many consumers for a few frames each (many turns at once):
                # then read on while the transport holds more, so that a
                # consumer wakes for FRAMES_PER_WAKE frames, not one -- for
                # ROUND_BYTES at most, so that they still die young (and the
                # loop runs while a huge line comes in a pipe that holds more).
                size = frames = woken = 0
                await asyncio.sleep(0)
        self._handle(self._conn.receive_eof())
        # stdout ended: the process is exiting, or it closed stdout and is of no
        # further use.  Give it the close timeout, then kill its group.
        try:
            await within(transport.wait_exited(), self.timeouts.close)
        except asyncio.TimeoutError:
            transport.signal(signal.SIGKILL)

    async def _wait_for_room(self) -> None:
        """Back-pressure: read nothing more while a subscription whose overflow
        is ``"wait"`` is over its size, until its consumer has taken from it
        (or it closed, or the server is gone).  A consumer that takes nothing
        for ``Timeouts.consumer`` is switched to dropping."""
        limit = self.timeouts.consumer
        full = self._full
        while full and not self._read_freely:
            sub = full[-1]
            if not sub.full:  # drained or closed
                full.pop()
                continue
            self.stats["paused"] += 1
            seen = len(sub._items)
            self._room = asyncio.get_running_loop().create_future()
            try:
                await within(self._room, limit)
            except asyncio.TimeoutError:
                if len(sub._items) >= seen and limit is not None:  # it took nothing for a whole limit
                    sub._stalled(limit)
            finally:
                self._room = None
        for sub in full:
            sub.full = False
        full.clear()

    def _make_room(self) -> None:
        """A subscription the reader may wait for has room again (or closed)."""
        room = self._room
        if room is not None and not room.done():
            room.set_result(None)

    def _stop_waiting(self) -> None:
        """The server is gone or going: what it sent is read at once."""
        self._read_freely = True
        self._make_room()

    def _handle(self, events: List[_rpc.Incoming]) -> int:
        """Route what one read brought; how many waiting consumers it woke
        (on the hot path: a thread's one subscriber)."""
        # (Builtins as locals: 3.9 caches no global lookup in a function called
        # fewer than 1,024 times, and this one runs once a chunk.)
        woken = 0
        taps, handlers, notification, type_, len_ = self._taps, _HANDLERS, _rpc.Notification, type, len
        # The previous notification's route and its subscribers (the same list
        # while it has any: a route equal to it needs no hash and no lookup).
        last: Any = _NO_ROUTE
        subs: Optional[List[Subscription]] = None
        each: List[Any] = events  # Any: mypy narrows by type(), not by type_()
        for event in each:
            try:
                if taps and event.frame is not None:
                    for tap in taps:
                        self._call_tap(tap, "in", event.frame)
                if type_(event) is notification and not self._all:
                    # The hot path: a notification for the thread's one
                    # subscriber, queued as Subscription._put would.
                    if event.route != last:
                        last = event.route
                        subs = self._subs.get(last)
                    if subs is not None and len_(subs) == 1:
                        sub = subs[0]
                        items = sub._items
                        if len_(items) < sub._limit:
                            if sub._pairs:
                                items.append(event[0])  # method
                                items.append(event[1])  # params
                            else:
                                items.append(event)
                            waiter = sub._waiter
                            if waiter is not None and not waiter.done():
                                waiter.set_result(None)
                                woken += 1
                            continue
                handlers[type_(event)](self, event)
            except Exception:  # the boundary no frame crosses: log, count, read on
                self.stats["handler_errors"] += 1
                log.exception("handling a frame from codex failed; skipped")
        return woken

    def _on_response(self, event: _rpc.Response) -> None:
        future = self._futures.get(event.id)
        if future is not None and not future.done():
            future.set_result(event.result)

    def _on_error(self, event: _rpc.ErrorResponse) -> None:
        future = self._futures.get(event.id)
        if future is not None and not future.done():
            future.set_exception(event.error)

    def _on_notification(self, event: _rpc.Notification) -> None:
        for sub in self._all:
            sub._put(event)
        route = event.route
        if route == _rpc.UNCLAIMED:
            return  # held by the connection until a subscriber claims the thread
        subs = self._subs.get(route)
        if not subs:
            self.stats["unrouted"] += 1
            return
        for sub in subs:
            sub._put(event)

    def _on_skipped(self, event: _rpc.Skipped) -> None:
        self.protocol_errors.append(event.error)
        log.warning("skipped a frame from codex: %s", event.error)

    def _on_malformed(self, event: _rpc.Malformed) -> None:
        self.protocol_errors.append(event.error)
        log.warning("a frame from codex breaks the schema (handled all the same): %s", event.error)
        _HANDLERS[type(event.event)](self, event.event)

    def _on_server_request(self, event: _rpc.ServerRequest) -> None:
        handler = self._handlers.get(event.method)
        coro = self._run_handler(event, handler) if handler is not None else self._default_answer(event)
        task = asyncio.get_running_loop().create_task(coro)
        self._inflight[event.id] = task
        task.add_done_callback(functools.partial(self._handler_done, event.id))

    def _handler_done(self, rid: _rpc.RequestId, task: "asyncio.Task[None]") -> None:
        if self._inflight.get(rid) is task:  # not a later request that reused the id
            del self._inflight[rid]

    def _on_resolved(self, event: _rpc.ServerRequestResolved) -> None:
        task = self._inflight.get(event.id)
        if task is not None and not task.done():
            log.info("server resolved request %r before it was answered", event.id)
            task.cancel()
        self._on_notification(event.note)

    # -- exit --------------------------------------------------------------

    async def _watch_exit(self) -> None:
        """Wait for the child to exit, then end the conversation.

        Its descendants may still hold our stdout pipe open (they inherit it),
        so EOF alone is not a reliable exit signal: the leader's exit is.
        """
        transport = self._transport
        await transport.wait_exited()
        self._stop_waiting()  # the child can send no more: the rest of its output is bounded
        self._cancel_handlers()  # nobody is left to answer: stop asking the caller
        await transport.aclose(self.timeouts.close)
        await asyncio.wait([self._reader], timeout=self.timeouts.close)
        self._reader.cancel()
        error: TransportError = ClientClosed() if self._closing else transport.ended()
        if not self._closing:
            log.warning("%s", error)
        self._fail_all(error)
        self._ended.set_result(None)

    def _fail_all(self, error: TransportError) -> None:
        if self._terminal is None:
            self._terminal = error
        for future in list(self._futures.values()):
            if not future.done():
                future.set_exception(error)
        for subs in self._subs.values():
            for sub in subs:
                sub._finish(self._terminal)

    async def _answer_open_requests(self) -> None:
        """Closing answers what codex asked and nobody answered yet: fail-closed
        (``by="close"``).  A server that outlives this client keeps the turn
        waiting for that answer -- and asks it again of the next client that
        resumes the thread -- so a client that lets go says no first.  The
        handlers still running are cancelled; their answers would come too late."""
        if self._terminal is not None:  # the other side is gone: nobody to answer
            return
        self._cancel_handlers()
        for rid, (method, params) in list(self._conn.open_requests.items()):
            event = _rpc.ServerRequest(rid, method, params, {})
            await self._reply(event, self._conn.decline(rid, handler_failed=True), "close")

    def _cancel_handlers(self) -> None:
        for task in list(self._inflight.values()):
            task.cancel()

    # -- server requests ---------------------------------------------------

    async def _default_answer(self, event: _rpc.ServerRequest) -> None:
        self._say_declined(event)
        await self._reply(event, self._conn.decline(event.id), "default")

    def _say_declined(self, event: _rpc.ServerRequest) -> None:
        """An approval or question nobody here answers gets the fail-closed
        answer; say so once per turn, so a caller who forgot a handler hears of it."""
        if event.method not in ANSWERABLE:
            return
        params = event.params
        turn = (params.get("threadId") or params.get("conversationId"), params.get("turnId"))
        if turn in self._declined:
            return
        self._declined[turn] = None
        if len(self._declined) > _DECLINED_TURNS:
            del self._declined[next(iter(self._declined))]
        request = describe(event.method, params)
        log.warning(
            "codex asked for %s (%s) and no handler answers it: declined (fail-closed); said once per turn, "
            "give an approval handler to answer",
            request.kind,
            request.summary or event.method,
        )

    async def _run_handler(self, event: _rpc.ServerRequest, handler: Handler) -> None:
        # The caller's handler runs as a task of its own, so that this task
        # (which answers) never waits on it past the deadline -- not even for a
        # handler that ignores its cancel -- and so that a CancelledError the
        # handler raises itself is told apart from this task being cancelled.
        try:
            call = asyncio.ensure_future(handler(event.method, event.params))
        except Exception:  # it raised when called, or gave no awaitable: codex still waits for an answer
            self.stats["handler_errors"] += 1
            log.error("handler for %s failed; answering fail-closed", event.method, exc_info=True)
            await self._reply(event, self._conn.decline(event.id, handler_failed=True), "error")
            return
        call.add_done_callback(_retrieve)
        try:
            await asyncio.wait([call], timeout=self.timeouts.handler)
        except asyncio.CancelledError:
            call.cancel()
            raise  # resolved by the server, or the child is gone: nothing to answer
        if not call.done():
            call.cancel()
            log.warning(
                "handler for %s missed its %gs deadline; answering fail-closed", event.method, self.timeouts.handler
            )
            await self._reply(event, self._conn.decline(event.id, handler_failed=True), "timeout")
        elif call.cancelled():  # the handler raised CancelledError: codex still waits for an answer
            log.error("handler for %s raised CancelledError; answering fail-closed", event.method)
            await self._reply(event, self._conn.decline(event.id, handler_failed=True), "error")
        elif call.exception() is not None:
            log.error("handler for %s failed; answering fail-closed", event.method, exc_info=call.exception())
            await self._reply(event, self._conn.decline(event.id, handler_failed=True), "error")
        else:
            by = "handler"
            try:
                out = self._conn.answer(event.id, call.result())
            except UnencodableInput as exc:  # the request is still open: declined instead
                self.stats["handler_errors"] += 1
                log.error("handler for %s answered what cannot be sent (%s); answering fail-closed", event.method, exc)
                out, by = self._conn.decline(event.id, handler_failed=True), "error"
            await self._reply(event, out, by)

    async def _reply(self, event: _rpc.ServerRequest, out: Optional[_rpc.Outgoing], by: str) -> None:
        if out is None:  # answered or resolved meanwhile
            return
        # The observers first (the agent logs the decision): codex cannot act
        # on an answer before whoever keeps a record of it has been told.
        for observer in list(self._answer_observers):
            try:
                observer(event.method, event.params, out.frame, by)
            except Exception:
                log.exception("answer observer failed")
        try:
            await self._send(out)
        except CodexminiError as exc:
            log.info("answer to %s (id %r) not sent: %s", event.method, event.id, exc)


def _retrieve(task: "asyncio.Future[Any]") -> None:
    """Mark a handler's outcome as seen (it is logged where it matters)."""
    if not task.cancelled():
        task.exception()


_HANDLERS: Dict[Type[Any], Callable[[AppServerClient, Any], None]] = {
    _rpc.Response: AppServerClient._on_response,
    _rpc.ErrorResponse: AppServerClient._on_error,
    _rpc.Notification: AppServerClient._on_notification,
    _rpc.ServerRequest: AppServerClient._on_server_request,
    _rpc.ServerRequestResolved: AppServerClient._on_resolved,
    _rpc.Skipped: AppServerClient._on_skipped,
    _rpc.Malformed: AppServerClient._on_malformed,
}


__all__ = [
    "AnswerObserver",
    "AppServerClient",
    "Handler",
    "Tap",
    "observe_clients",
]
