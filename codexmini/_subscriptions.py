"""A subscription: one bounded queue of a client's notifications.

The client routes each notification to the subscriptions of its key (a
thread id, :data:`GLOBAL` for those that name no thread, :data:`ALL` for
every one).  A queue over its size does what its ``overflow`` says:
``"wait"`` (back-pressure) keeps the notification and asks the client to
stop reading until the consumer has taken half of what is queued (or all of
it, for a consumer that takes straight from the deque); ``"drop"`` drops
deltas, counted and logged, while frames that end or shape a turn
(:data:`~._rpc.NEVER_DROP`) pass it, up to twice its size.  Once the client
has ended and the queue is empty, a read raises the client's terminal error.

A thread's own queue (:class:`~codexmini.Thread`'s, ``pairs=True``) keeps
each notification as its ``method`` and its ``params``, laid flat in the
deque, instead of the core's tuple around the whole frame.  What a turn
folds is those two; and what waits in the queue is then nothing the garbage
collector walks -- a delta's ``params`` hold strings only, and ``json``
leaves such a dict untracked -- where the tuple and the frame around the
``params`` are walked at every young collection until the consumer takes
them.  That lets the reader hold a bigger round of many turns' frames
(``_client.ROUND_BYTES``) without the collector walking them (they still
count towards starting a young collection, as every dict does).  Such a queue's getters
hand out the frame rebuilt from the two (codex's other top-level member,
``emittedAtMs``, is not kept).
"""

from __future__ import annotations

import asyncio
import collections
import logging
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable, Deque, Dict, Optional

from . import _rpc
from ._deadline import within
from ._errors import CodexTimeout, TransportError
from ._launch import ALL, GLOBAL, Overflow
from ._wire import Frame

if TYPE_CHECKING:
    from ._events import Event

log = logging.getLogger("codexmini.client")


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
        overflow: Overflow = "wait",
        full: Callable[["Subscription"], None] = lambda sub: None,
        room: Callable[[], None] = lambda: None,
        pairs: bool = False,
    ) -> None:
        self.key = key
        # Whether the queue holds each notification as ``method, params``
        # (two entries; a thread's own queue) or as the core's tuple.
        self._pairs = pairs
        self._width = 2 if pairs else 1  # entries a notification takes
        self._limit = 0  # entries at which the queue is full (maxsize notifications)
        self.maxsize = maxsize
        #: What this queue does over ``maxsize``: ``"wait"`` or ``"drop"``
        #: (:attr:`~codexmini.Limits.overflow`).
        self.overflow = overflow
        #: True while the client waits for this queue to drain (``"wait"``).
        self.full = False
        self._full, self._room = full, room  # the client's: stop reading, read on
        # The core's Notification tuples (method and params already read out of
        # the frame), or for pairs each one's method and params: the turn folds
        # them; the public getters hand out frames.
        self._items: Deque[Any] = collections.deque()
        self._waiter: Optional["asyncio.Future[None]"] = None
        self._error: Optional[TransportError] = None
        self.dropped = 0
        self._stats = stats  # the client's: "dropped" counts for all its subscriptions
        self._unsubscribe = unsubscribe

    @property
    def maxsize(self) -> int:
        """How many notifications the queue holds before its ``overflow`` applies."""
        return self._limit // self._width

    @maxsize.setter
    def maxsize(self, value: int) -> None:
        self._limit = value * self._width

    def _put(self, note: _rpc.Notification) -> None:
        held = len(self._items)
        if held >= self._limit:
            if self.overflow == "wait":
                # Kept: the client reads nothing more until the consumer takes
                # (the queue grows by what the current read holds, no more).
                if not self.full:
                    self.full = True
                    self._full(self)
            # Frames that end or shape a turn pass a full queue -- up to twice
            # its size: a flood of them with nobody consuming must not grow it forever.
            elif note.method not in _rpc.NEVER_DROP or held >= 2 * self._limit:
                self.dropped += 1
                self._stats["dropped"] += 1
                if self.dropped == 1 or self.dropped % 1000 == 0:
                    log.warning("subscription %r is full: %d notification(s) dropped", self.key, self.dropped)
                return
        if self._pairs:
            self._items += note[:2]  # method, params
        else:
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
        return len(self._items) // self._width

    def get_nowait(self) -> Optional[Frame]:
        """The next frame if one is queued, else ``None`` (raises once ended and empty)."""
        note = self._next()
        return None if note is None else note.frame

    async def get(self, timeout: Optional[float] = None) -> Frame:
        """Wait for the next frame; :class:`~codexmini.CodexTimeout` after ``timeout`` seconds."""
        return (await self._get(timeout)).frame

    def _next(self) -> Optional[_rpc.Notification]:
        items = self._items
        note: _rpc.Notification
        if items:
            if self._pairs:  # a method, then its params: the frame rebuilt from the two
                method, params = items.popleft(), items.popleft()
                note = _rpc.Notification(method, params, self.key, self.key, {"method": method, "params": params})
            else:
                note = items.popleft()
            if self.full:
                self._took()
            return note
        if self.full:
            self._took()
        if self._error is not None:
            raise self._error
        return None

    async def _get(self, timeout: Optional[float] = None) -> _rpc.Notification:
        while True:
            note = self._next()
            if note is not None:
                return note
            self._waiter = waiter = asyncio.get_running_loop().create_future()
            if timeout is None:  # no deadline: the future itself (no frame of within() to resume each wake)
                try:
                    await waiter
                finally:
                    self._waiter = None
                continue
            try:
                await within(waiter, timeout)
            except asyncio.TimeoutError:
                raise CodexTimeout(
                    f"no notification for {self.key!r} within {timeout:g}s", float(timeout or 0)
                ) from None
            finally:
                self._waiter = None

    def _took(self) -> None:
        """The consumer took: once half the queue is free, the client may read
        on.  A consumer that takes straight from the deque (a turn) calls this
        once a burst and when it stops, and comes to :meth:`_next` once the
        queue is empty."""
        if self.full and len(self._items) <= self._limit // 2:
            self._drained()

    def _drained(self) -> None:
        """The consumer took enough: the client may read on."""
        self.full = False
        self._room()

    def _stalled(self, seconds: float) -> None:
        """The consumer took nothing for ``seconds``: drop from now on, read on."""
        self.overflow = "drop"
        self._stats["stalled"] += 1
        log.warning(
            "subscription %r took nothing for %gs with %d notification(s) queued: "
            "dropping its deltas from now on (Timeouts.consumer)",
            self.key,
            seconds,
            self.pending(),
        )
        self._drained()

    def close(self) -> None:
        """Stop receiving (idempotent); a client waiting for this queue reads on."""
        self._unsubscribe(self)
        if self.full:
            self._drained()

    async def events(self) -> AsyncIterator["Event"]:
        """The queued notifications as codexmini events (:func:`~._mapping.to_event`:
        ignored methods skipped, unknown ones :class:`~codexmini.Unmapped`),
        until the client ends.  ``async for event in client.subscribe().events()``
        is how a caller hears of :class:`~codexmini.RateLimitsUpdated`."""
        from ._mapping import to_event  # here, not with the client: raw notifications need no events

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
