"""The loop portal: a private event loop in a daemon thread, and blocking calls into it.

:mod:`codexmini.sync` is built on this.  A :class:`Portal` runs one asyncio
loop in a daemon thread (``codexmini-sync-N``); :meth:`Portal.call` submits a
coroutine to it (``call_soon_threadsafe``) and blocks the calling thread on a
``concurrent.futures.Future`` until it is done.  The calling thread's own
event loop, if it has one (a notebook cell), is never used, entered or
nested, so nothing can deadlock on it.  The one call that cannot work is a
blocking call from the loop's own thread: it would wait for itself, so it
raises :class:`~codexmini.CodexminiError` instead.

A ``KeyboardInterrupt`` (or the call's ``timeout``) while a call blocks
cancels its task on the loop, waits a bounded time for it to settle, then
raises.  :meth:`Portal.close` cancels what is left, stops the loop and joins
its thread; a call still blocked in another thread gets
:class:`~codexmini.ClientClosed`.  Every open object is held in a registry
(:func:`hold`, :func:`release`) and an ``atexit`` hook closes what is still
open at interpreter exit, newest first.  Approval handlers given as plain
functions run in a daemon worker thread each (:func:`in_worker_thread`), so
one that waits for a human never stalls the loop; so do the facade's other
plain-function handlers (:func:`off_loop`).

A process that forks while objects are open: the child inherits them but not
their loop thread.  In the child the registry starts empty (its exit closes
nothing of the parent's), and every inherited object is closed for it: a call
raises :class:`~codexmini.ClientClosed` naming the process it belongs to,
``close()`` returns at once, and neither touches the parent's loop or pipes.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import itertools
import logging
import os
import threading
import time
from typing import Any, Callable, Coroutine, Dict, List, Optional, Protocol, Set, TypeVar

from ._errors import ClientClosed, CodexminiError, CodexTimeout
from ._permission import ApprovalHandler, ApprovalRequest, Reply

log = logging.getLogger("codexmini.sync")

T = TypeVar("T")
#: Answers one approval (or question) codex asks, in a worker thread: ``handler(request)`` → a reply.
BlockingApprovalHandler = Callable[[ApprovalRequest], Reply]

_names = itertools.count(1)


class _Closeable(Protocol):  # pragma: no cover - a typing Protocol: its stub never runs
    def close(self) -> None: ...


#: What is open, oldest first (a dict as an ordered set); closed at exit, newest first.
_open: Dict[_Closeable, None] = {}
_open_lock = threading.Lock()


def hold(owner: _Closeable) -> None:
    with _open_lock:
        _open[owner] = None


def release(owner: _Closeable) -> None:
    with _open_lock:
        _open.pop(owner, None)


def shut(owner: _Closeable, portal: "Portal", aclose: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """``owner.close()``: ``aclose()`` on the loop, then the loop thread, once
    (in a fork child: nothing to run, the object is closed for it)."""
    if portal.pid != os.getpid():
        release(owner)
        portal.close()
    elif not portal.closed:
        try:
            portal.call(aclose())
        finally:
            release(owner)
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


def _after_fork_in_child() -> None:
    """A fork child owns none of its parent's open objects: forget them (their
    portals see the other pid and refuse to run anything)."""
    global _open_lock
    _open_lock = threading.Lock()  # it may have been held by another thread at the fork
    _open.clear()


if hasattr(os, "register_at_fork"):  # pragma: no branch - POSIX; Windows has no fork
    os.register_at_fork(after_in_child=_after_fork_in_child)


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
        #: The process the loop thread runs in (a fork child has no such thread).
        self.pid = os.getpid()
        self._lock = threading.Lock()
        self._closed = False
        self._pending: Set["concurrent.futures.Future[Any]"] = set()  # outcomes not delivered yet
        self._loop_thread = threading.Thread(target=self._serve, name=f"codexmini-sync-{next(_names)}", daemon=True)
        self._loop_thread.start()
        hold(self)

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
        if self.pid != os.getpid():
            coro.close()
            raise ClientClosed(
                f"this codexmini.sync object belongs to process {self.pid}; a forked child cannot use it "
                "(open a new one in the child)"
            )
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
        """Cancel what still runs on the loop, stop it and join its thread.  Idempotent.
        In a fork child: closed at once, the parent's loop and pipes untouched."""
        if self.pid != os.getpid():
            self._closed = True
            return
        if self.in_loop_thread():
            raise CodexminiError("a codexmini.sync object cannot be closed from its own event loop's thread")
        with self._lock:
            if self._closed:
                return
            self._closed = True
        release(self)
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


async def call_soon(fn: Callable[..., T], *args: Any) -> T:
    """Run a plain function on the loop's thread (what touches loop state must)."""
    return fn(*args)


async def off_loop(fn: Callable[..., T], *args: Any, name: str = "codexmini-worker", what: str = "a handler") -> T:
    """``fn(*args)`` in a daemon thread of its own (named ``name``), awaited
    on the loop: a blocking function (a human deciding, a slow lookup) never
    stalls the loop.  What it raises is raised here; ``SystemExit`` or
    ``KeyboardInterrupt`` in it becomes a :class:`~codexmini.CodexminiError`
    (naming ``what``), never raised on the loop.  The awaiting task may be
    cancelled (a deadline, the server's resolve): the thread's result is then
    dropped, as it is once the loop has closed."""
    loop = asyncio.get_running_loop()
    future: "asyncio.Future[T]" = loop.create_future()

    def deliver(result: Any, error: Optional[BaseException]) -> None:
        if future.done():  # the caller's deadline or the server's resolve came first
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    def work() -> None:
        result: Any = None
        error: Optional[BaseException] = None
        try:
            result = fn(*args)
        except Exception as exc:  # delivered to the awaiting task (an approval is then answered fail-closed)
            error = exc
        except BaseException as exc:  # sys.exit() in a handler: never raised on the loop
            error = CodexminiError(f"{what} raised {type(exc).__name__}({exc})")
        try:
            loop.call_soon_threadsafe(deliver, result, error)
        except RuntimeError:  # the loop closed meanwhile: nobody waits for the result
            pass

    threading.Thread(target=work, name=name, daemon=True).start()
    return await future


def in_worker_thread(handler: BlockingApprovalHandler) -> ApprovalHandler:
    """The async handler the core wants, running the blocking ``handler`` in a
    daemon thread per request (a human may take minutes; the loop must not wait)."""

    async def answer(request: ApprovalRequest) -> Reply:
        return await off_loop(handler, request, name="codexmini-approval", what="the approval handler")

    return answer


def worker(handler: Optional[BlockingApprovalHandler]) -> Optional[ApprovalHandler]:
    return None if handler is None else in_worker_thread(handler)


__all__ = [
    "BlockingApprovalHandler",
    "Portal",
    "call_soon",
    "close_all",
    "release",
    "in_worker_thread",
    "hold",
    "off_loop",
    "shut",
    "worker",
]
