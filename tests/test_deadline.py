"""A deadline that never swallows a cancel (``codexmini._deadline.within``).

The case that matters: before Python 3.12, ``asyncio.wait_for`` returned the
result of an awaitable that completed in the same loop iteration as its caller
was cancelled, and the cancel was lost (an agent's ``cancel()`` that met a
notification left the turn running to its end).  Each test builds that
iteration by hand: a done callback registered before the caller awaits runs
before the caller's own wake-up.
"""

from __future__ import annotations

import asyncio
import sys
import time

import pytest

from codexmini._deadline import within
from codexmini._rpc import Notification
from codexmini._subscriptions import Subscription


async def test_deadline_returns_what_completes_in_time():
    assert await within(asyncio.sleep(0, result="done"), 10) == "done"
    assert await within(asyncio.sleep(0, result="unbounded"), None) == "unbounded"


async def test_deadline_cancels_what_overruns_and_raises_timeout():
    loop = asyncio.get_running_loop()
    never = loop.create_future()
    with pytest.raises(asyncio.TimeoutError):
        await within(never, 0.01)
    assert never.cancelled()
    slow = loop.create_task(asyncio.sleep(3600))
    with pytest.raises(asyncio.TimeoutError):
        await within(slow, 0.01)
    await asyncio.sleep(0)
    assert slow.cancelled()


async def test_deadline_what_completes_in_the_iteration_the_deadline_passes_is_returned():
    loop = asyncio.get_running_loop()
    answer = loop.create_future()
    caller = loop.create_task(within(answer, 0.01))
    await asyncio.sleep(0)  # the caller waits, its deadline armed
    time.sleep(0.02)  # the loop stands still past the deadline
    loop.call_soon(answer.set_result, "in time")  # runs just before the due deadline, in one iteration
    assert await caller == "in time"


async def test_deadline_lets_the_callers_cancel_through_when_the_awaited_completes_in_the_same_iteration():
    loop = asyncio.get_running_loop()
    answer = loop.create_future()
    caller = loop.create_task(within(answer, 10))
    answer.add_done_callback(lambda _: caller.cancel())  # runs before the caller wakes up
    await asyncio.sleep(0)  # the caller now waits on `answer`
    answer.set_result("an answer nobody reads any more")
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert caller.cancelled()


async def test_deadline_a_plain_cancel_of_the_caller_cancels_the_awaited():
    loop = asyncio.get_running_loop()
    inner = loop.create_task(asyncio.sleep(3600))
    caller = loop.create_task(within(inner, 10))
    await asyncio.sleep(0)
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert inner.cancelled()


async def test_deadline_and_a_cancel_in_the_same_iteration():
    # The deadline cancels the awaited; the caller is cancelled before it
    # wakes.  Python 3.11+ counts the caller's cancel and lets it through;
    # before it the two cannot be told apart and read as the deadline (as
    # asyncio.wait_for reads them).
    loop = asyncio.get_running_loop()
    never = loop.create_future()
    caller = loop.create_task(within(never, 0.01))
    never.add_done_callback(lambda _: caller.cancel())
    if sys.version_info >= (3, 11):
        with pytest.raises(asyncio.CancelledError):
            await caller
    else:
        with pytest.raises(asyncio.TimeoutError):
            await caller


@pytest.mark.skipif(sys.version_info < (3, 11), reason="tasks count their cancels from Python 3.11")
async def test_deadline_a_cancel_absorbed_before_is_not_taken_for_one_during():
    async def absorbs_a_cancel_then_waits() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            pass  # absorbed without uncancel(): the task still counts it
        assert asyncio.current_task().cancelling() == 1  # type: ignore[union-attr]
        await within(asyncio.get_running_loop().create_future(), 0.01)

    task = asyncio.get_running_loop().create_task(absorbs_a_cancel_then_waits())
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.TimeoutError):
        await task


async def test_deadline_a_subscription_read_cancelled_as_its_notification_arrives_is_cancelled():
    # The agent's cancel() met a notification: the turn's read must end, not
    # return the notification and run on.
    sub = Subscription("thr", 8, {"dropped": 0}, lambda _: None)
    reader = asyncio.get_running_loop().create_task(sub._get(timeout=600))
    await asyncio.sleep(0)  # the reader waits
    frame = {"method": "item/agentMessage/delta", "params": {"threadId": "thr", "delta": "x"}}
    sub._put(Notification(frame["method"], frame["params"], "thr", "thr", frame))  # wakes the reader...
    reader.cancel()  # ...and before it runs, the cancel
    with pytest.raises(asyncio.CancelledError):
        await reader
    assert sub.pending() == 1  # the notification stays queued for the next read
