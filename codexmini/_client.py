"""The client: the asyncio shell around one JSON-RPC conversation with codex.

Theory of operation
-------------------
All protocol state lives in the pure :class:`~._rpc.Connection`; this module
only moves bytes and runs tasks.  :meth:`AppServerClient.start` finds codex,
builds the child's environment (an allowlist, :mod:`._environment`), launches
``codex app-server [-c key=value …]`` through a *launcher* (by default a
:class:`~._process.ChildProcess`; :mod:`codexmini.testing` has an in-memory
one) and performs the handshake (``initialize``, then ``initialized``).
Beside the caller run:

* **the reader**: transport bytes → :meth:`Connection.receive` → events, each
  handled by one row of :data:`_HANDLERS`: a response resolves its future, a
  notification goes to the subscriptions of its route, a server request
  starts a handler task (or gets the connection's fail-closed answer at once),
  a ``serverRequest/resolved`` cancels its handler, a skipped line is logged
  and counted.  Handling an event can never end the reader: whatever a frame
  does to a handler is logged, counted in ``stats["handler_errors"]`` and
  the next frame is read.
* **handler tasks**, one per server request, so a slow approval never stalls
  the reader.  A handler that raises or misses its deadline gets the
  fail-closed answer; when the child dies, running handlers are cancelled.
* **the exit watcher**: when the child exits, whatever is left of its process
  group is killed, the reader gets a moment to drain the pipe, and every
  pending request and subscription fails at once with
  ``ProcessExited(returncode, stderr_tail)``.

Routing.  The connection decides who gets a notification: the subscribers of
its thread, the global ones (a frame that names no thread), or -- for a thread
nobody subscribed to yet, such as the ``warning`` codex sends *during*
``thread/start`` -- a bounded buffer that :meth:`subscribe` drains.
Subscriptions to :attr:`AppServerClient.ALL` see everything.  Every queue is
bounded; what is dropped is counted in :attr:`stats` and logged.  A full queue
drops deltas; frames that end or shape a turn (:data:`~._rpc.NEVER_DROP`) pass
it, up to twice its size (only a flood that nobody consumes gets that far).

Overload.  codex rejects a request it has no room for with ``-32001`` "Server
overloaded; retry later." before processing it, and asks for retries with
backoff and jitter; :meth:`request` sends such a request again as
:attr:`AppServerClient.retry` (a :class:`~._retry.RetryPolicy`) allows, waiting
with the sleep it was given, then raises :class:`~._errors.ServerOverloaded`.
Only that error is retried: any other was processed and may have had effects.

:meth:`close` is idempotent: it closes stdin (codex exits at once), waits,
then terminates and kills the group.  A **frame tap** -- ``tap(direction,
frame)`` with direction ``"out"`` or ``"in"`` -- sees every frame;
:func:`observe_clients` gives every new client a tap (the conformance suite
validates every frame of every test that way).
"""

from __future__ import annotations

import asyncio
import collections
import functools
import logging
import os
import signal
from typing import (
    TYPE_CHECKING,
    Any,
    AsyncIterator,
    Awaitable,
    Callable,
    Deque,
    Dict,
    Iterable,
    List,
    Mapping,
    Optional,
    Protocol,
    Sequence,
    Tuple,
    Type,
)

from . import _rpc
from . import _wire as wire
from ._binary import find_codex
from ._environment import child_environment
from ._errors import (
    ClientClosed,
    CodexminiError,
    CodexTimeout,
    ProcessExited,
    ProtocolError,
    RequestTimeout,
    ServerOverloaded,
    TransportError,
)
from ._extras import Extras
from ._mapping import to_event
from ._process import ChildProcess
from ._retry import RetryPolicy
from ._version import __version__
from ._wire import Frame

if TYPE_CHECKING:
    from ._events import Event
    from .protocol import Calls, RateLimitSnapshot

log = logging.getLogger("codexmini.client")

Tap = Callable[[str, Frame], None]
#: A server-request handler: ``await handler(method, params)`` → the result.
Handler = Callable[[str, Dict[str, Any]], Awaitable[Any]]
#: Told of every answer sent: ``(method, params, answer_frame, by)`` where
#: ``by`` is ``"handler"``, ``"default"``, ``"timeout"`` or ``"error"``.
AnswerObserver = Callable[[str, Dict[str, Any], Frame, str], None]


class Transport(Protocol):  # pragma: no cover - a typing Protocol: its stubs never run
    """What the client needs of the other side: a byte stream each way, an
    exit, signals.  :class:`~._process.ChildProcess` is the real one."""

    @property
    def pid(self) -> Optional[int]: ...

    @property
    def returncode(self) -> Optional[int]: ...

    @property
    def stderr_tail(self) -> str: ...

    async def read(self) -> bytes: ...

    async def write(self, data: bytes) -> None: ...

    def close_input(self) -> None: ...

    async def wait_exited(self) -> None: ...

    def signal(self, sig: int) -> None: ...

    async def aclose(self, timeout: float) -> None: ...


#: Starts the server side: ``await launcher(argv, env, cwd)`` → a transport.
#: ``argv[0]`` is the codex binary found (or given), the rest its arguments.
Launcher = Callable[[Sequence[str], Mapping[str, str], Optional[str]], Awaitable[Transport]]

GLOBAL: Optional[str] = _rpc.GLOBAL  # subscription key for notifications that name no thread
ALL = "*"  # subscription key for every notification

_observers: List[Callable[[], Optional[Tap]]] = []
_NO_ROUTE = object()  # no notification routed yet (see AppServerClient._handle)


def observe_clients(factory: Callable[[], Optional[Tap]]) -> Callable[[], None]:
    """Give every client started from now on the tap ``factory()`` returns.

    Returns a function that unregisters the factory.
    """
    _observers.append(factory)

    def remove() -> None:
        if factory in _observers:
            _observers.remove(factory)

    return remove


async def launch_process(argv: Sequence[str], env: Mapping[str, str], cwd: Optional[str]) -> Transport:
    """The default launcher: a real child process."""
    return await ChildProcess.spawn(argv, env, cwd)


class Subscription:
    """A bounded queue of notifications for one key (a thread id, ``GLOBAL`` or ``ALL``).

    ``await sub.get()`` returns the next frame; once the client has ended and
    the queue is empty it raises the client's terminal error.
    """

    def __init__(self, client: "AppServerClient", key: Optional[str], maxsize: int) -> None:
        self._client = client
        self.key = key
        self.maxsize = maxsize
        # The core's Notification tuples (method and params already read out of
        # the frame): the turn folds them; the public getters hand out frames.
        self._items: Deque[_rpc.Notification] = collections.deque()
        self._waiter: Optional["asyncio.Future[None]"] = None
        self._error: Optional[TransportError] = None
        self.dropped = 0

    def _put(self, note: _rpc.Notification) -> None:
        held = len(self._items)
        # Frames that end or shape a turn pass a full queue -- up to twice its
        # size: a flood of them with nobody consuming must not grow it forever.
        if held >= self.maxsize and (note.method not in _rpc.NEVER_DROP or held >= 2 * self.maxsize):
            self.dropped += 1
            self._client.stats["dropped"] += 1
            if self.dropped == 1 or self.dropped % 1000 == 0:
                log.warning("subscription %r is full: %d notification(s) dropped", self.key, self.dropped)
            return
        self._items.append(note)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _finish(self, error: TransportError) -> None:
        self._error = error
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def pending(self) -> int:
        """How many frames are queued."""
        return len(self._items)

    def get_nowait(self) -> Optional[Frame]:
        """The next frame if one is queued, else ``None`` (raises once ended and empty)."""
        note = self._next()
        return None if note is None else note.frame

    async def get(self, timeout: Optional[float] = None) -> Frame:
        """Wait for the next frame; :class:`~codexmini.CodexTimeout` after ``timeout`` seconds."""
        return (await self._get(timeout)).frame

    def _next(self) -> Optional[_rpc.Notification]:
        if self._items:
            return self._items.popleft()
        if self._error is not None:
            raise self._error
        return None

    async def _get(self, timeout: Optional[float] = None) -> _rpc.Notification:
        while True:
            note = self._next()
            if note is not None:
                return note
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await asyncio.wait_for(self._waiter, timeout)
            except asyncio.TimeoutError:
                raise CodexTimeout(
                    f"no notification for {self.key!r} within {timeout:g}s", float(timeout or 0)
                ) from None
            finally:
                self._waiter = None

    def close(self) -> None:
        """Stop receiving (idempotent)."""
        self._client._unsubscribe(self)

    async def events(self) -> AsyncIterator["Event"]:
        """The queued notifications as codexmini events (:func:`~._mapping.to_event`:
        ignored methods skipped, unknown ones :class:`~codexmini.Unmapped`),
        until the client ends.  ``async for event in client.subscribe().events()``
        is how a caller hears of :class:`~codexmini.RateLimitsUpdated`."""
        while True:
            try:
                note = await self._get()
            except TransportError:
                return
            event = to_event(note.method, note.params)
            if event is not None:
                yield event

    def __aiter__(self) -> "Subscription":
        return self

    async def __anext__(self) -> Frame:
        try:
            return await self.get()
        except TransportError:
            raise StopAsyncIteration from None


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
        tap: Optional[Tap] = None,
        request_timeout: float = 120.0,
        handler_timeout: float = 300.0,
        max_frame_bytes: int = wire.DEFAULT_MAX_FRAME_BYTES,
        queue_size: int = 10000,
        unclaimed_threads: int = 32,
        unclaimed_bytes: int = 8 * 1024 * 1024,
        close_timeout: float = 5.0,
        retry: Optional[RetryPolicy] = None,
        retry_sleep: Optional[Callable[[float], Awaitable[Any]]] = None,
    ) -> None:
        """Wrap a started ``transport`` (use :meth:`start`); needs a running loop."""
        if isinstance(transport, (str, bytes, list, tuple)):
            # The pre-0.1 spelling AppServerClient(argv): refused, since only
            # start() builds the child's environment from the allowlist.
            raise TypeError("AppServerClient() wraps a started transport; launch codex with AppServerClient.start()")
        self.argv = list(argv)
        #: How :meth:`request` retries a request codex rejected as overloaded.
        self.retry = RetryPolicy() if retry is None else retry
        self._sleep: Callable[[float], Awaitable[Any]] = retry_sleep or asyncio.sleep
        self._calls: Optional["Calls"] = None
        self.request_timeout = request_timeout
        self.handler_timeout = handler_timeout
        self.queue_size = queue_size
        self.close_timeout = close_timeout
        self._conn = _rpc.Connection(
            max_frame_bytes=max_frame_bytes, unclaimed_threads=unclaimed_threads, unclaimed_bytes=unclaimed_bytes
        )
        self.stats = self._conn.stats
        self.stats.update(handler_errors=0, timeouts=0, overloaded=0, retries=0)
        self._transport = transport
        self._taps: List[Tap] = [t for t in [tap] + [f() for f in list(_observers)] if t is not None]
        self._futures: Dict[_rpc.RequestId, "asyncio.Future[Any]"] = {}
        self._handlers: Dict[str, Handler] = {}
        self._answer_observers: List[AnswerObserver] = []
        self._inflight: Dict[_rpc.RequestId, "asyncio.Task[None]"] = {}
        self._subs: Dict[Optional[str], List[Subscription]] = {}
        self._all: List[Subscription] = []  # the ALL subscribers (the same list as _subs[ALL])
        self._terminal: Optional[TransportError] = None
        self._closing = False
        self._close_task: Optional["asyncio.Task[None]"] = None
        self._healthy = True
        self.server_info: Dict[str, Any] = {}
        #: The last few lines and frames that broke the rules (logged and skipped, never fatal).
        self.protocol_errors: Deque[ProtocolError] = collections.deque(maxlen=20)
        loop = asyncio.get_running_loop()
        self._write_lock = asyncio.Lock()
        self._ended: "asyncio.Future[None]" = loop.create_future()
        self._reader = loop.create_task(self._read())
        self._exit_watcher = loop.create_task(self._watch_exit())

    # -- life cycle --------------------------------------------------------

    @classmethod
    async def start(
        cls,
        *,
        codex_bin: Optional[str] = None,
        config: Iterable[str] = (),
        args: Iterable[str] = (),
        env: Optional[Mapping[str, str]] = None,
        pass_env: Iterable[str] = (),
        parent_env: Optional[Mapping[str, str]] = None,
        cwd: Optional[str] = None,
        launcher: Optional[Launcher] = None,
        initialize: bool = True,
        client_name: str = "codexmini",
        experimental_api: bool = True,
        opt_out_notifications: Iterable[str] = (),
        initialize_timeout: float = 60.0,
        tap: Optional[Tap] = None,
        request_timeout: float = 120.0,
        handler_timeout: float = 300.0,
        max_frame_bytes: int = wire.DEFAULT_MAX_FRAME_BYTES,
        queue_size: int = 10000,
        close_timeout: float = 5.0,
        retry: Optional[RetryPolicy] = None,
        retry_sleep: Optional[Callable[[float], Awaitable[Any]]] = None,
    ) -> "AppServerClient":
        """Find codex, launch ``codex app-server`` and (by default) initialize.

        ``config`` items are ``key=value`` strings passed as ``-c`` (values are
        TOML).  The child's environment is the allowlisted ``parent_env``
        (default ``os.environ``) plus ``env``; ``pass_env`` names parent
        variables (secrets) to pass through -- nothing else reaches codex.
        ``launcher`` replaces the child process (the in-memory fake of
        :mod:`codexmini.testing`); then no binary is looked up.  ``retry``
        says how requests codex rejects as overloaded are retried
        (:class:`~codexmini.RetryPolicy`; :data:`~codexmini.NO_RETRY` turns it
        off) and ``retry_sleep`` waits between attempts (``asyncio.sleep``).

        Raises :class:`~codexmini.BinaryNotFound` (no codex, or it cannot be
        executed), :class:`~codexmini.ConfigError` (``cwd`` does not exist) and
        whatever ``initialize`` raises.
        """
        parent = dict(os.environ if parent_env is None else parent_env)
        binary = (codex_bin or "codex") if launcher is not None else find_codex(codex_bin, env=parent, cwd=cwd).path
        argv = [binary, "app-server"]
        for item in config:
            argv += ["-c", item]
        argv += list(args)
        transport = await (launcher or launch_process)(argv, child_environment(parent, env, pass_env), cwd)
        client = cls(
            transport,
            argv=argv,
            tap=tap,
            request_timeout=request_timeout,
            handler_timeout=handler_timeout,
            max_frame_bytes=max_frame_bytes,
            queue_size=queue_size,
            close_timeout=close_timeout,
            retry=retry,
            retry_sleep=retry_sleep,
        )
        if initialize:
            try:
                await client.initialize(
                    client_name=client_name,
                    experimental_api=experimental_api,
                    opt_out_notifications=opt_out_notifications,
                    timeout=initialize_timeout,
                )
            except BaseException:
                await client.close()
                raise
        return client

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
        """End the child: close stdin, wait, terminate, kill the group.  Idempotent."""
        if self._close_task is None:
            self._close_task = asyncio.get_running_loop().create_task(self._close())
        await asyncio.shield(self._close_task)

    async def __aenter__(self) -> "AppServerClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def _close(self) -> None:
        self._closing = True
        self._fail_all(ClientClosed())
        self._transport.close_input()
        graces: Tuple[Tuple[Optional[int], float], ...] = ((None, self.close_timeout), *self.SIGNAL_GRACES)
        for sig, grace in graces:
            if sig is not None:
                self._transport.signal(sig)
            try:
                await asyncio.wait_for(self._transport.wait_exited(), grace)
                break
            except asyncio.TimeoutError:
                continue
        await asyncio.wait([self._exit_watcher], timeout=self.close_timeout + 1.0)
        self._cancel_handlers()
        if self._inflight:
            await asyncio.wait(list(self._inflight.values()), timeout=self.close_timeout)

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
        limit = self.request_timeout if timeout is None else timeout

        async def exchange() -> Any:
            await self._send(out)
            return await asyncio.shield(future)

        try:
            # The deadline covers the write too: a child that stops reading
            # its stdin must not hang the caller.
            return await asyncio.wait_for(exchange(), limit)
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
        """Be told of every answer sent to a server request; returns an unregister function."""
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
        for tap in self._taps:
            self._call_tap(tap, "out", out.frame)
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
            await asyncio.wait([self._ended], timeout=self.close_timeout)
            raise self._terminal or TransportError(f"codex stopped reading its stdin ({failed})") from None

    @staticmethod
    def _call_tap(tap: Tap, direction: str, frame: Frame) -> None:
        try:
            tap(direction, frame)
        except Exception:  # a broken observer must not break the conversation
            log.exception("frame tap failed")

    # -- subscriptions -----------------------------------------------------

    def subscribe(self, key: Optional[str] = GLOBAL, maxsize: Optional[int] = None) -> Subscription:
        """Subscribe to one thread's notifications (``key`` = thread id), to the
        global ones (:attr:`GLOBAL`) or to all (:attr:`ALL`).  Notifications
        that arrived for the thread before anyone subscribed come first."""
        sub = Subscription(self, key, maxsize or self.queue_size)
        self._subs.setdefault(key, []).append(sub)
        if key == ALL:
            self._all = self._subs[ALL]
        elif key is not None:  # a thread id
            for note in self._conn.claim(key):
                sub._put(note)
        if self._terminal is not None:
            sub._finish(self._terminal)
        return sub

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
        while True:
            data = await transport.read()
            if not data:
                break
            events = self._conn.receive(data)
            self._handle(events)
            if events:
                # Let the consumers take what this read brought before the
                # next one is decoded (read() returns at once while the
                # transport holds more): one read's frames die young.
                await asyncio.sleep(0)
        self._handle(self._conn.receive_eof())
        # stdout ended: the process is exiting, or it closed stdout and is of no
        # further use.  Give it the close timeout, then kill its group.
        try:
            await asyncio.wait_for(transport.wait_exited(), self.close_timeout)
        except asyncio.TimeoutError:
            transport.signal(signal.SIGKILL)

    def _handle(self, events: List[_rpc.Incoming]) -> None:
        # (Builtins as locals: 3.9 caches no global lookup in a function called
        # fewer than 1,024 times, and this one runs once a chunk.)
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
                        if len_(sub._items) < sub.maxsize:
                            sub._items.append(event)
                            waiter = sub._waiter
                            if waiter is not None and not waiter.done():
                                waiter.set_result(None)
                            continue
                handlers[type_(event)](self, event)
            except Exception:  # the boundary no frame crosses: log, count, read on
                self.stats["handler_errors"] += 1
                log.exception("handling a frame from codex failed; skipped")

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
        self._cancel_handlers()  # nobody is left to answer: stop asking the caller
        await transport.aclose(self.close_timeout)
        await asyncio.wait([self._reader], timeout=self.close_timeout)
        self._reader.cancel()
        error: TransportError = (
            ClientClosed() if self._closing else ProcessExited(transport.returncode, transport.stderr_tail)
        )
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

    def _cancel_handlers(self) -> None:
        for task in list(self._inflight.values()):
            task.cancel()

    # -- server requests ---------------------------------------------------

    async def _default_answer(self, event: _rpc.ServerRequest) -> None:
        await self._reply(event, self._conn.decline(event.id), "default")

    async def _run_handler(self, event: _rpc.ServerRequest, handler: Handler) -> None:
        # The caller's handler runs as a task of its own, so that this task
        # (which answers) never waits on it past the deadline -- not even for a
        # handler that ignores its cancel -- and so that a CancelledError the
        # handler raises itself is told apart from this task being cancelled.
        call = asyncio.ensure_future(handler(event.method, event.params))
        call.add_done_callback(_retrieve)
        try:
            await asyncio.wait([call], timeout=self.handler_timeout)
        except asyncio.CancelledError:
            call.cancel()
            raise  # resolved by the server, or the child is gone: nothing to answer
        if not call.done():
            call.cancel()
            log.warning(
                "handler for %s missed its %gs deadline; answering fail-closed", event.method, self.handler_timeout
            )
            await self._reply(event, self._conn.decline(event.id, handler_failed=True), "timeout")
        elif call.cancelled():  # the handler raised CancelledError: codex still waits for an answer
            log.error("handler for %s raised CancelledError; answering fail-closed", event.method)
            await self._reply(event, self._conn.decline(event.id, handler_failed=True), "error")
        elif call.exception() is not None:
            log.error("handler for %s failed; answering fail-closed", event.method, exc_info=call.exception())
            await self._reply(event, self._conn.decline(event.id, handler_failed=True), "error")
        else:
            await self._reply(event, self._conn.answer(event.id, call.result()), "handler")

    async def _reply(self, event: _rpc.ServerRequest, out: Optional[_rpc.Outgoing], by: str) -> None:
        if out is None:  # answered or resolved meanwhile
            return
        try:
            await self._send(out)
        except CodexminiError as exc:
            log.info("answer to %s (id %r) not sent: %s", event.method, event.id, exc)
            return
        for observer in list(self._answer_observers):
            try:
                observer(event.method, event.params, out.frame, by)
            except Exception:
                log.exception("answer observer failed")


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
}


__all__ = [
    "ALL",
    "GLOBAL",
    "AnswerObserver",
    "AppServerClient",
    "Handler",
    "Launcher",
    "Subscription",
    "Tap",
    "Transport",
    "launch_process",
    "observe_clients",
]
