"""The client: one ``codex app-server`` process and its JSON-RPC conversation.

Theory of operation
-------------------
:meth:`AppServerClient.start` spawns ``codex app-server [-c key=value …]`` in
its own process group with an allowlisted environment, then performs the
handshake (``initialize``, then the ``initialized`` notification).  Three
kinds of task run beside the caller:

* **the reader** feeds stdout bytes to the sans-IO :class:`~.wire.LineDecoder`
  (never ``readline``: asyncio's 64 KiB line limit would kill it on the first
  big command output) and dispatches each frame: responses resolve the
  pending request with that id; notifications are routed; server requests
  start a handler task.  A malformed line is logged, counted and skipped.
* **the stderr drain** reads stderr in chunks so the child never blocks on a
  full pipe, and keeps a bounded tail for :class:`~.errors.ProcessExited`.
* **handler tasks**, one per server request, so a slow approval never stalls
  the reader.  A handler that raises or misses its deadline gets the
  fail-closed answer from :mod:`.permission`; a request whose method nobody
  knows gets ``-32601``; ``serverRequest/resolved`` cancels a pending handler.

Routing.  A notification with ``params.threadId`` (for ``thread/started``,
``params.thread.id``) goes to the subscribers of that thread; one without a
thread goes to the global subscribers.  codex can name a thread before the
response that creates it arrives (a ``warning`` during ``thread/start``), so
notifications for a thread nobody subscribed to yet wait in a small bounded
buffer that :meth:`subscribe` drains.  Every queue is bounded; what is dropped
is counted in :attr:`stats` and logged.  Frames that end or shape a turn are
never dropped, only deltas.

Exit.  When stdout ends the reader waits for the process, kills whatever is
left of its process group, and fails every pending request at once with
``ProcessExited(returncode, stderr_tail)``; subscriptions end with the same
error.  :meth:`close` is idempotent: it closes stdin (codex exits at once),
waits, then terminates and kills the group.

A **frame tap** -- a callable ``tap(direction, frame)`` with direction ``"out"``
or ``"in"`` -- sees every frame.  :func:`observe_clients` registers a factory
that gives every new client a tap; the conformance suite uses it to validate
every frame of every test.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import os
import re
import signal
from typing import (
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
    Tuple,
)

from . import __version__
from . import _wire as wire
from ._binary import INSTALL_HINT, find_codex
from ._environment import child_environment
from ._errors import BinaryNotFound, ClientClosed, ProcessExited, ProtocolError, RequestTimeout, RpcError, TransportError
from ._permission import REQUESTS, fail_closed

log = logging.getLogger("codexmini.client")
stderr_log = logging.getLogger("codexmini.codex")

Frame = Dict[str, Any]
Tap = Callable[[str, Frame], None]
#: A server-request handler: ``await handler(method, params)`` → the result.
Handler = Callable[[str, Dict[str, Any]], Awaitable[Any]]
#: Told of every answer sent: ``(method, params, answer_frame, by)`` where
#: ``by`` is ``"handler"``, ``"default"``, ``"timeout"`` or ``"error"``.
AnswerObserver = Callable[[str, Dict[str, Any], Frame, str], None]

GLOBAL = None  # subscription key for notifications that name no thread
ALL = "*"  # subscription key for every notification

METHOD_NOT_FOUND = -32601
INTERNAL_ERROR = -32603
READ_CHUNK = 1 << 16
EXIT_POLL_S = 0.05

#: Notifications that end or shape a turn; never dropped by a full queue.
NEVER_DROP = frozenset(
    {"turn/started", "turn/completed", "item/started", "item/completed", "error", "thread/tokenUsage/updated"}
)

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")

_observers: List[Callable[[], Optional[Tap]]] = []


def observe_clients(factory: Callable[[], Optional[Tap]]) -> Callable[[], None]:
    """Give every client started from now on the tap ``factory()`` returns.

    Returns a function that unregisters the factory.
    """
    _observers.append(factory)

    def remove() -> None:
        if factory in _observers:
            _observers.remove(factory)

    return remove


def thread_of(frame: Mapping[str, Any]) -> Optional[str]:
    """The thread a notification belongs to, if it names one."""
    params = frame.get("params")
    if not isinstance(params, dict):
        return None
    tid = params.get("threadId")
    if isinstance(tid, str):
        return tid
    thread = params.get("thread")
    if frame.get("method") == "thread/started" and isinstance(thread, dict) and isinstance(thread.get("id"), str):
        return thread["id"]
    return None


class Subscription:
    """A bounded queue of notifications for one key (a thread id, GLOBAL or ALL).

    ``await sub.get()`` returns the next frame; once the client has ended and
    the queue is empty it raises the client's terminal error.
    """

    def __init__(self, client: "AppServerClient", key: Optional[str], maxsize: int) -> None:
        self._client = client
        self.key = key
        self.maxsize = maxsize
        self._items: Deque[Frame] = collections.deque()
        self._waiter: Optional[asyncio.Future] = None
        self._error: Optional[BaseException] = None
        self.dropped = 0

    def _put(self, frame: Frame) -> None:
        if len(self._items) >= self.maxsize and frame.get("method") not in NEVER_DROP:
            self.dropped += 1
            self._client.stats["dropped"] += 1
            if self.dropped == 1 or self.dropped % 1000 == 0:
                log.warning("subscription %r is full: %d notification(s) dropped", self.key, self.dropped)
            return
        self._items.append(frame)
        self._wake()

    def _finish(self, error: BaseException) -> None:
        self._error = error
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def pending(self) -> int:
        return len(self._items)

    def get_nowait(self) -> Optional[Frame]:
        """The next frame if one is queued, else ``None`` (raises once ended and empty)."""
        if self._items:
            return self._items.popleft()
        if self._error is not None:
            raise self._error
        return None

    async def get(self, timeout: Optional[float] = None) -> Frame:
        """Wait for the next frame (``asyncio.TimeoutError`` after ``timeout``)."""
        while True:
            frame = self.get_nowait()
            if frame is not None:
                return frame
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await asyncio.wait_for(self._waiter, timeout)
            finally:
                self._waiter = None

    def close(self) -> None:
        """Stop receiving (idempotent)."""
        self._client._unsubscribe(self)

    def __aiter__(self) -> "Subscription":
        return self

    async def __anext__(self) -> Frame:
        try:
            return await self.get()
        except TransportError:
            raise StopAsyncIteration from None


class AppServerClient:
    """One ``codex app-server`` child and the JSON-RPC conversation with it."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: Optional[Mapping[str, str]] = None,
        cwd: Optional[str] = None,
        tap: Optional[Tap] = None,
        request_timeout: float = 120.0,
        handler_timeout: float = 300.0,
        max_frame_bytes: int = wire.DEFAULT_MAX_FRAME_BYTES,
        queue_size: int = 10000,
        unclaimed_threads: int = 32,
        unclaimed_per_thread: int = 512,
        stderr_tail_lines: int = 40,
        close_timeout: float = 5.0,
    ) -> None:
        self.argv = list(argv)
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.request_timeout = request_timeout
        self.handler_timeout = handler_timeout
        self.queue_size = queue_size
        self.close_timeout = close_timeout
        self._taps: List[Tap] = [t for t in [tap] + [f() for f in list(_observers)] if t is not None]
        self._decoder = wire.LineDecoder(max_frame_bytes)
        self._proc: Optional[asyncio.subprocess.Process] = None
        self._next_id = 1
        self._pending: Dict[Any, Tuple[str, asyncio.Future]] = {}
        self._handlers: Dict[str, Handler] = {}
        self._answer_observers: List[AnswerObserver] = []
        self._inflight: Dict[Any, asyncio.Task] = {}
        self._subs: Dict[Optional[str], List[Subscription]] = {}
        self._unclaimed: "collections.OrderedDict[str, Deque[Frame]]" = collections.OrderedDict()
        self._unclaimed_threads = unclaimed_threads
        self._unclaimed_per_thread = unclaimed_per_thread
        self._stderr_tail: Deque[str] = collections.deque(maxlen=stderr_tail_lines)
        self._write_lock: Optional[asyncio.Lock] = None
        self._reader: Optional[asyncio.Task] = None
        self._stderr_task: Optional[asyncio.Task] = None
        self._exit_watcher: Optional[asyncio.Task] = None
        self._ended: Optional[asyncio.Future] = None
        self._terminal: Optional[TransportError] = None
        self._closing = False
        self._close_task: Optional[asyncio.Task] = None
        self.server_info: Dict[str, Any] = {}
        #: The last few lines that were not frames (reported and skipped, never fatal).
        self.protocol_errors: Deque[ProtocolError] = collections.deque(maxlen=20)
        self.stats: Dict[str, int] = collections.Counter(
            frames_in=0, frames_out=0, malformed=0, dropped=0, unrouted=0, unknown_responses=0
        )

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
        initialize: bool = True,
        client_name: str = "codexmini",
        experimental_api: bool = True,
        opt_out_notifications: Iterable[str] = (),
        initialize_timeout: float = 60.0,
        **options: Any,
    ) -> "AppServerClient":
        """Find codex, spawn ``codex app-server`` and (by default) initialize.

        ``config`` items are ``key=value`` strings passed as ``-c`` (values are
        TOML); ``env`` is added to the allowlisted parent environment and
        ``pass_env`` names parent variables (secrets) to pass through.
        """
        parent = dict(os.environ if parent_env is None else parent_env)
        binary = find_codex(codex_bin, env=parent, cwd=cwd)
        argv = [binary.path, "app-server"]
        for item in config:
            argv += ["-c", item]
        argv += list(args)
        client = cls(argv, env=child_environment(parent, env, pass_env), cwd=cwd, **options)
        await client.spawn()
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

    async def spawn(self) -> None:
        """Start the child process and the reader tasks."""
        if self._proc is not None:
            raise RuntimeError("already spawned")
        loop = asyncio.get_running_loop()
        self._write_lock = asyncio.Lock()
        try:
            self._proc = await asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=self.env,
                cwd=self.cwd,
                start_new_session=True,  # its own process group: close() kills the whole tree
            )
        except OSError as exc:  # missing, not executable, bad cwd, exec format error
            raise BinaryNotFound(f"cannot start {self.argv[0]!r}: {exc}; {INSTALL_HINT}") from exc
        self._ended = loop.create_future()  # only a started process can end
        self._stderr_task = loop.create_task(self._drain_stderr())
        self._reader = loop.create_task(self._read_stdout())
        self._exit_watcher = loop.create_task(self._watch_exit())

    async def initialize(
        self,
        *,
        client_name: str = "codexmini",
        experimental_api: bool = True,
        opt_out_notifications: Iterable[str] = (),
        timeout: Optional[float] = None,
    ) -> Dict[str, Any]:
        capabilities: Dict[str, Any] = {"experimentalApi": experimental_api}
        opt_out = list(opt_out_notifications)
        if opt_out:
            capabilities["optOutNotificationMethods"] = opt_out
        params = {
            "clientInfo": {"name": client_name, "version": __version__},
            "capabilities": capabilities,
        }
        self.server_info = await self.request("initialize", params, timeout=timeout)
        await self.notify("initialized")
        return self.server_info

    @property
    def pid(self) -> Optional[int]:
        return self._proc.pid if self._proc else None

    @property
    def returncode(self) -> Optional[int]:
        return self._proc.returncode if self._proc else None

    @property
    def stderr_tail(self) -> str:
        return "\n".join(self._stderr_tail)

    @property
    def closed(self) -> bool:
        """True once the client was closed or the process ended."""
        return self._closing or self._terminal is not None

    async def wait_closed(self) -> None:
        """Wait until the conversation has ended (process exit or close)."""
        if self._ended is not None:
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
        proc = self._proc
        if proc is None:
            return
        if proc.stdin is not None and not proc.stdin.is_closing():
            proc.stdin.close()
        for sig, grace in ((None, self.close_timeout), (signal.SIGTERM, 2.0), (signal.SIGKILL, 5.0)):
            if sig is not None:
                self._signal_group(sig)
            try:
                await asyncio.wait_for(self._exited(), grace)
                break
            except asyncio.TimeoutError:
                continue
        await self._join_tasks()

    async def _join_tasks(self) -> None:
        for task in list(self._inflight.values()):
            task.cancel()
        tasks = [t for t in (self._exit_watcher, *self._inflight.values()) if t is not None]
        if tasks:
            await asyncio.wait(tasks, timeout=self.close_timeout + 1.0)

    def _signal_group(self, sig: int) -> None:
        pid = self.pid
        if pid is None:
            return
        try:
            os.killpg(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    # -- requests ----------------------------------------------------------

    async def request(self, method: str, params: Optional[Mapping[str, Any]] = None, timeout: Optional[float] = None) -> Any:
        """Send a request and wait for its result.

        Raises :class:`RpcError`, :class:`RequestTimeout`,
        :class:`ProcessExited` or :class:`ClientClosed`.
        """
        self._check_open()
        rid = self._next_id
        self._next_id += 1
        future = asyncio.get_running_loop().create_future()
        self._pending[rid] = (method, future)
        frame: Frame = {"id": rid, "method": method}
        if params is not None:
            frame["params"] = dict(params)
        limit = self.request_timeout if timeout is None else timeout

        async def exchange() -> Any:
            await self._send(frame)
            return await asyncio.shield(future)

        try:
            # The deadline covers the write too: a child that stops reading
            # its stdin must not hang the caller.
            return await asyncio.wait_for(exchange(), limit)
        except asyncio.TimeoutError:
            raise RequestTimeout(method, limit) from None
        finally:
            self._pending.pop(rid, None)
            if not future.done():
                future.cancel()
            elif not future.cancelled():
                future.exception()  # retrieved: the error (if any) was raised another way

    async def notify(self, method: str, params: Optional[Mapping[str, Any]] = None) -> None:
        self._check_open()
        frame: Frame = {"method": method}
        if params is not None:
            frame["params"] = dict(params)
        await self._send(frame)

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
        if self._proc is None:
            raise ClientClosed("the client was never started")

    async def _send(self, frame: Frame) -> None:
        data = wire.encode(frame)
        self._tap("out", frame)
        assert self._proc is not None and self._proc.stdin is not None and self._write_lock is not None
        async with self._write_lock:
            try:
                self._proc.stdin.write(data)
                await self._proc.stdin.drain()
            except (ConnectionError, OSError, RuntimeError) as exc:
                failed: Optional[BaseException] = exc
            else:
                failed = None
        if failed is not None:
            # The pipe broke: the child is exiting (or stopped reading).  Wait,
            # without holding the write lock, for the exit error to report it.
            log.debug("write failed: %s", failed)
            if self._ended is not None:
                await asyncio.wait([self._ended], timeout=self.close_timeout)
            raise self._terminal or TransportError(f"codex stopped reading its stdin ({failed})") from None
        self.stats["frames_out"] += 1

    def _tap(self, direction: str, frame: Frame) -> None:
        for tap in self._taps:
            try:
                tap(direction, frame)
            except Exception:  # a broken observer must not break the conversation
                log.exception("frame tap failed")

    # -- subscriptions -----------------------------------------------------

    def subscribe(self, key: Optional[str] = GLOBAL, maxsize: Optional[int] = None) -> Subscription:
        """Subscribe to one thread's notifications (``key`` = thread id), to the
        global ones (``GLOBAL``) or to all (``ALL``).  Notifications that
        arrived for the thread before anyone subscribed are delivered first."""
        sub = Subscription(self, key, maxsize or self.queue_size)
        self._subs.setdefault(key, []).append(sub)
        if key not in (GLOBAL, ALL):
            for frame in self._unclaimed.pop(key, ()):
                sub._put(frame)
        if self._terminal is not None:
            sub._finish(self._terminal)
        return sub

    def _unsubscribe(self, sub: Subscription) -> None:
        subs = self._subs.get(sub.key, [])
        if sub in subs:
            subs.remove(sub)
            if not subs:
                del self._subs[sub.key]

    def _route(self, frame: Frame) -> None:
        tid = thread_of(frame)
        delivered = False
        for sub in list(self._subs.get(ALL, ())) + list(self._subs.get(tid, ())):
            sub._put(frame)
            delivered = delivered or sub.key == tid
        if delivered:
            return
        if tid is None:
            self.stats["unrouted"] += 1
            return
        queue = self._unclaimed.get(tid)
        if queue is None:
            if len(self._unclaimed) >= self._unclaimed_threads:
                _, evicted = self._unclaimed.popitem(last=False)
                self.stats["dropped"] += len(evicted)
            queue = self._unclaimed[tid] = collections.deque()
        if len(queue) >= self._unclaimed_per_thread:
            queue.popleft()
            self.stats["dropped"] += 1
        queue.append(frame)

    # -- reading -----------------------------------------------------------

    async def _read_stdout(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        stream = self._proc.stdout
        try:
            while True:
                chunk = await stream.read(READ_CHUNK)
                if not chunk:
                    break
                for item in self._decoder.feed(chunk):
                    self._dispatch(item)
            for item in self._decoder.close():
                self._dispatch(item)
        except (ConnectionError, OSError) as exc:  # pragma: no cover - pipe errors are platform noise
            log.debug("stdout read failed: %s", exc)
        # stdout ended: the process is exiting, or it closed stdout and is of no
        # further use.  Give it the close timeout, then kill its group.
        try:
            await asyncio.wait_for(self._exited(), self.close_timeout)
        except asyncio.TimeoutError:
            self._signal_group(signal.SIGKILL)

    def _dispatch(self, item: wire.Decoded) -> None:
        if isinstance(item, wire.Malformed):
            self.stats["malformed"] += 1
            error = ProtocolError(f"skipped a line from codex: {item.reason} ({item.preview!r})")
            self.protocol_errors.append(error)
            log.warning("%s", error)
            return
        self.stats["frames_in"] += 1
        self._tap("in", item)
        kind = wire.classify(item)
        if kind == wire.NOTIFICATION:
            if item["method"] == "serverRequest/resolved":
                self._resolved(item.get("params") or {})
            self._route(item)
        elif kind == wire.REQUEST:
            self._start_handler(item)
        else:
            self._settle(item, kind)

    def _settle(self, frame: Frame, kind: Optional[str]) -> None:
        entry = self._pending.get(frame["id"])
        if entry is None:
            self.stats["unknown_responses"] += 1
            log.warning("response to unknown request id %r", frame["id"])
            return
        method, future = entry
        if future.done():
            return
        if kind == wire.RESPONSE:
            future.set_result(frame["result"])
        else:
            err = frame["error"]
            future.set_exception(RpcError(err["code"], err["message"], err.get("data"), method))

    async def _drain_stderr(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        stream = self._proc.stderr
        partial = bytearray()
        max_line = 8192
        while True:
            chunk = await stream.read(READ_CHUNK)
            if not chunk:
                break
            partial += chunk
            lines = partial.split(b"\n")
            partial = bytearray(lines.pop())
            if len(partial) > max_line:  # a huge line: keep its head, drop the rest
                lines.append(bytes(partial[:max_line]) + b"...")
                partial.clear()
            for raw in lines:
                self._stderr_line(raw)
        if partial:
            self._stderr_line(bytes(partial))

    def _stderr_line(self, raw: bytes) -> None:
        text = _ANSI.sub("", raw.decode("utf-8", "replace")).rstrip()
        if len(text) > 2000:
            text = text[:2000] + "..."
        if text:
            self._stderr_tail.append(text)
            stderr_log.debug("%s", text)

    async def _exited(self) -> None:
        """Wait until the child has exited.

        ``Process.wait()`` also waits until every pipe is closed, which a
        descendant holding them can delay forever; the return code is set as
        soon as the child is reaped, so poll that instead.
        """
        assert self._proc is not None
        while self._proc.returncode is None:
            await asyncio.sleep(EXIT_POLL_S)

    async def _watch_exit(self) -> None:
        """Wait for the child to exit, then end the conversation.

        Its descendants may still hold our stdout and stderr pipes open (they
        inherit them), so EOF alone is not a reliable exit signal: the leader's
        exit is.  Whatever is left of its process group is killed, the reader
        gets a moment to drain what the pipe still holds, and every pending
        request fails with ``ProcessExited``.
        """
        proc = self._proc
        assert proc is not None and self._ended is not None
        await self._exited()
        self._signal_group(signal.SIGKILL)
        for task in (self._reader, self._stderr_task):
            if task is not None:
                await asyncio.wait([task], timeout=self.close_timeout)
                task.cancel()
        try:  # lets asyncio close the transport now that the pipes are drained
            await asyncio.wait_for(proc.wait(), self.close_timeout)
        except asyncio.TimeoutError:  # pragma: no cover - a descendant outside our group holds a pipe
            log.warning("codex exited but a pipe stayed open; abandoning it")
        error: TransportError = ClientClosed() if self._closing else ProcessExited(proc.returncode, self.stderr_tail)
        if not self._closing:
            log.warning("%s", error)
        self._fail_all(error)
        self._ended.set_result(None)

    def _fail_all(self, error: TransportError) -> None:
        if self._terminal is None:
            self._terminal = error
        for _, future in list(self._pending.values()):
            if not future.done():
                future.set_exception(error)
        for subs in self._subs.values():
            for sub in subs:
                sub._finish(self._terminal)

    # -- server requests ---------------------------------------------------

    def _start_handler(self, frame: Frame) -> None:
        rid, method = frame["id"], frame["method"]
        params = frame.get("params") if isinstance(frame.get("params"), dict) else {}
        task = asyncio.get_running_loop().create_task(self._answer(rid, method, params))
        self._inflight[rid] = task
        task.add_done_callback(lambda _t: self._inflight.pop(rid, None))

    def _resolved(self, params: Mapping[str, Any]) -> None:
        task = self._inflight.get(params.get("requestId"))
        if task is not None and not task.done():
            log.info("server resolved request %r before it was answered", params.get("requestId"))
            task.cancel()

    async def _answer(self, rid: Any, method: str, params: Dict[str, Any]) -> None:
        handler = self._handlers.get(method)
        if handler is None and method not in REQUESTS:
            reply: Frame = {"id": rid, "error": {"code": METHOD_NOT_FOUND, "message": f"method not found: {method}"}}
            await self._reply(method, params, reply, "default")
            return
        by = "default"
        result: Any = None
        if handler is not None:
            try:
                result = await asyncio.wait_for(handler(method, params), self.handler_timeout)
                by = "handler"
            except asyncio.CancelledError:
                raise  # resolved by the server, or closing: nothing to answer
            except asyncio.TimeoutError:
                by = "timeout"
                log.warning("handler for %s missed its %gs deadline; answering fail-closed", method, self.handler_timeout)
            except Exception:
                by = "error"
                log.exception("handler for %s failed; answering fail-closed", method)
        if by == "handler":
            reply = {"id": rid, "result": result}
        elif method not in REQUESTS:  # a caller's own method whose handler failed
            reply = {"id": rid, "error": {"code": INTERNAL_ERROR, "message": f"handler for {method} failed"}}
        else:
            answer = fail_closed(method, params)
            reply = {"id": rid, "error": answer.error} if answer.error else {"id": rid, "result": answer.result}
        await self._reply(method, params, reply, by)

    async def _reply(self, method: str, params: Dict[str, Any], reply: Frame, by: str) -> None:
        try:
            await self._send(reply)
        except TransportError:
            return
        for observer in list(self._answer_observers):
            try:
                observer(method, params, reply, by)
            except Exception:
                log.exception("answer observer failed")


__all__ = [
    "ALL",
    "GLOBAL",
    "NEVER_DROP",
    "AnswerObserver",
    "AppServerClient",
    "Handler",
    "Subscription",
    "Tap",
    "observe_clients",
    "thread_of",
]
