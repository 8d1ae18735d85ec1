"""A deadline that never swallows a cancel.

Before Python 3.12, :func:`asyncio.wait_for` returns the result of an
awaitable that completed in the same loop iteration as its caller was
cancelled, and the cancel is lost: ``agent.cancel()`` arriving as a
notification did left the turn running to its end.  :func:`within` bounds an
awaitable the same way (``asyncio.TimeoutError`` at the deadline, the
awaitable cancelled) and lets every cancel of its caller through.
"""

from __future__ import annotations

import asyncio
from typing import Awaitable, Optional, TypeVar

T = TypeVar("T")


async def within(awaitable: Awaitable[T], timeout: Optional[float]) -> T:
    """``await awaitable``, for at most ``timeout`` seconds (``None``: no bound).

    At the deadline the awaitable is cancelled and ``asyncio.TimeoutError``
    raised.  A cancel of the caller always propagates, even when the awaitable
    completed in the same iteration (its result is then dropped)."""
    if timeout is None:
        return await awaitable
    inner = asyncio.ensure_future(awaitable)
    cancels = _cancelling()  # those before us are not ours to judge
    expired = [False]

    def expire() -> None:
        expired[0] = inner.cancel()  # False: it completed in this very iteration

    timer = asyncio.get_running_loop().call_later(timeout, expire)
    try:
        return await inner
    except asyncio.CancelledError:
        # Ours (the deadline) unless the caller was cancelled meanwhile:
        # Python 3.11+ counts a task's cancels; before it, a deadline and a
        # cancel in the same iteration read as the deadline, as wait_for does.
        if expired[0] and _cancelling() <= cancels:
            raise asyncio.TimeoutError() from None
        raise
    finally:
        timer.cancel()


def _cancelling() -> int:
    """How many cancels the current task has had and not undone (0 before Python 3.11)."""
    task = asyncio.current_task()
    return int(getattr(task, "cancelling", lambda: 0)())
