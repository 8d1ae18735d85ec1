"""A subscription: one bounded queue of a client's notifications.

The client routes each notification to the subscriptions of its key (a
thread id, :data:`GLOBAL` for those that name no thread, :data:`ALL` for
every one).  A subscription is a bounded queue with one waiter: a full one
drops deltas, counted and logged, while frames that end or shape a turn
(:data:`~._rpc.NEVER_DROP`) pass it, up to twice its size.  Once the client
has ended and the queue is empty, a read raises the client's terminal error.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from typing import TYPE_CHECKING, AsyncIterator, Callable, Deque, Dict, Optional

from . import _rpc
from ._deadline import within
from ._errors import CodexTimeout, TransportError
from ._mapping import to_event
from ._wire import Frame

if TYPE_CHECKING:
    from ._events import Event

log = logging.getLogger("codexmini.client")

#: Subscription key for notifications that name no thread.
GLOBAL: Optional[str] = _rpc.GLOBAL
#: Subscription key for every notification.
ALL = "*"


class Subscription:
    """A bounded queue of notifications for one key (a thread id, ``GLOBAL`` or ``ALL``).

    ``await sub.get()`` returns the next frame; once the client has ended and
    the queue is empty it raises the client's terminal error.
    """

    def __init__(
        self,
        key: Optional[str],
        maxsize: int,
        stats: Dict[str, int],
        unsubscribe: Callable[["Subscription"], None],
    ) -> None:
        self.key = key
        self.maxsize = maxsize
        # The core's Notification tuples (method and params already read out of
        # the frame): the turn folds them; the public getters hand out frames.
        self._items: Deque[_rpc.Notification] = collections.deque()
        self._waiter: Optional["asyncio.Future[None]"] = None
        self._error: Optional[TransportError] = None
        self.dropped = 0
        self._stats = stats  # the client's: "dropped" counts for all its subscriptions
        self._unsubscribe = unsubscribe

    def _put(self, note: _rpc.Notification) -> None:
        held = len(self._items)
        # Frames that end or shape a turn pass a full queue -- up to twice its
        # size: a flood of them with nobody consuming must not grow it forever.
        if held >= self.maxsize and (note.method not in _rpc.NEVER_DROP or held >= 2 * self.maxsize):
            self.dropped += 1
            self._stats["dropped"] += 1
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
                await within(self._waiter, timeout)
            except asyncio.TimeoutError:
                raise CodexTimeout(
                    f"no notification for {self.key!r} within {timeout:g}s", float(timeout or 0)
                ) from None
            finally:
                self._waiter = None

    def close(self) -> None:
        """Stop receiving (idempotent)."""
        self._unsubscribe(self)

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


__all__ = ["ALL", "GLOBAL", "Subscription"]
