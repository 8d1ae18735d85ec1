"""A subscription (``codexmini._subscriptions``): one bounded queue of a client's notifications.

A full queue makes the client wait (back-pressure, the default) until its
consumer takes, so nothing is lost, and a consumer that takes nothing for
``Timeouts.consumer`` is switched to dropping; a dropping queue (opt-in)
drops deltas, counted and logged, never the frames that end or shape a turn; ``get`` has its own timeout; once the client has ended and the
queue is empty, reads end (``get`` raises the client's terminal error,
iteration and ``events()`` stop).  Each test runs a behaviour in memory
(tests/support/behaviours.py, or :class:`CodexLike`); where a notification
goes (routing by thread) is the client's, in tests/test_client.py.
"""

from __future__ import annotations

import asyncio
import gc

import pytest
from support import behaviours as b
from support.canned import client_for_behaviour
from support.fake_client import started, until

from codexmini import ConfigError, Limits, Timeouts
from codexmini._errors import ClientClosed, CodexTimeout
from codexmini._subscriptions import Subscription
from codexmini.testing import CodexLike

THREAD = b.THREAD

#: Each queue behaviour holds for both forms of a queue: a caller's
#: (the core's tuples) and a thread's own (each notification as its method
#: and params, ``pairs``).
FORMS = pytest.mark.parametrize("pairs", [False, True], ids=["tuples", "pairs"])


def subscribe(client, pairs, **kw):
    return client._subscribe(THREAD, pairs=pairs, **kw)


@FORMS
async def test_client_bounded_dropping_queue_drops_deltas_but_never_turn_frames(caplog, pairs):
    client = await started(b.flood_thread)
    sub = subscribe(client, pairs, maxsize=2, overflow="drop")
    try:
        await client.request("thread/loaded/list", {})
        assert (sub.pending(), sub.dropped, client.stats["dropped"]) == (3, 3, 3)
        assert [sub.get_nowait()["method"] for _ in range(3)] == [
            "item/agentMessage/delta",
            "item/agentMessage/delta",
            "turn/completed",
        ]
        assert "subscription '%s' is full: 1 notification(s) dropped" % THREAD in caplog.text
    finally:
        await client.close()


FLOOD = [f"item/agentMessage/delta:{i}" for i in range(5)] + ["turn/completed"]


def said(frame):
    return frame["method"] + (":" + frame["params"]["delta"] if "delta" in frame["params"] else "")


@FORMS
async def test_client_full_queue_waits_for_its_consumer_and_loses_nothing(pairs):
    client = await started(b.flood_thread)  # five deltas and turn/completed, then the answer
    try:
        sub = subscribe(client, pairs, maxsize=2)
        answer = asyncio.ensure_future(client.request("thread/loaded/list", {}))
        assert await until(lambda: client.stats["paused"] == 1)  # the reader waits for the consumer
        assert not answer.done()  # the answer is behind the notifications nobody took yet
        full = sub.pending()
        assert full >= 3 and sub.full
        assert said(sub.get_nowait()) == FLOOD[0]
        if full - 1 > 1:  # still over half its size: the reader still waits
            assert client.stats["paused"] == 1 and sub.full
        taken = [said(await sub.get(timeout=10)) for _ in FLOOD[1:]]
        assert [FLOOD[0], *taken] == FLOOD  # every notification, in order
        assert (await answer)["data"] is not None
        assert client.stats["dropped"] == sub.dropped == 0 and client.stats["stalled"] == 0
        assert not sub.full
    finally:
        await client.close()


@FORMS
async def test_client_consumer_that_takes_nothing_is_switched_to_dropping(caplog, pairs):
    client = await started(b.flood_thread, timeouts=Timeouts(consumer=0.05))
    try:
        sub = subscribe(client, pairs, maxsize=4)
        answer = asyncio.ensure_future(client.request("thread/loaded/list", {}))
        assert await until(lambda: client.stats["paused"] == 1)
        assert said(sub.get_nowait()) == FLOOD[0]  # progress: the reader keeps waiting, a new round
        assert await until(lambda: client.stats["paused"] == 2)
        assert client.stats["stalled"] == 0
        await answer  # a round without progress: the queue drops from now on, reading goes on
        assert client.stats["stalled"] == 1 and sub.overflow == "drop" and not sub.full
        assert f"subscription '{THREAD}' took nothing for 0.05s" in caplog.text
        assert [said(sub.get_nowait()) for _ in range(sub.pending())] == FLOOD[1:]  # what was queued stays
    finally:
        await client.close()


@FORMS
async def test_client_closing_a_full_subscription_lets_the_reader_read_on(pairs):
    client = await started(b.flood_thread)
    try:
        sub = subscribe(client, pairs, maxsize=2)
        answer = asyncio.ensure_future(client.request("thread/loaded/list", {}))
        assert await until(lambda: client.stats["paused"] == 1)
        sub.close()
        assert (await answer)["data"] is not None
        assert client.stats["dropped"] == 0 and client.stats["stalled"] == 0
        sub.close()  # idempotent
    finally:
        await client.close()


@FORMS
async def test_client_closing_while_the_reader_waits_ends_the_reader_at_once(pairs):
    client = await started(b.flood_thread, timeouts=Timeouts(consumer=None))  # it would wait for ever
    sub = subscribe(client, pairs, maxsize=2)
    answer = asyncio.ensure_future(client.request("thread/loaded/list", {}))
    assert await until(lambda: client.stats["paused"] == 1)
    await client.close()
    assert client._reader.done() and not client._reader.cancelled()  # it read to the end, not cancelled
    with pytest.raises(ClientClosed):
        await answer
    assert sub.pending() >= 3


@pytest.mark.parametrize("others", [0, 1], ids=["alone", "beside-another"])
async def test_client_thread_queue_holds_deltas_as_nothing_the_collector_walks(others):
    # A thread's own queue keeps each notification as its method and its
    # params: a delta's params hold strings only, which json leaves untracked,
    # so a round of deltas waiting for their consumer is nothing a young
    # collection walks.  A caller's queue holds the core's tuples around the
    # frames, each tracked.  Alone, the thread's queue is filled by the
    # reader's hot path; beside another subscriber, by Subscription._put.
    client = await started(b.flood_thread)
    try:
        beside = [client.subscribe(THREAD, maxsize=100) for _ in range(others)]
        sub = subscribe(client, True, maxsize=100)
        await client.request("thread/loaded/list", {})
        entries = list(sub._items)
        methods, params = entries[::2], entries[1::2]
        assert sub.pending() == len(methods) == len(params) == 6
        assert [said({"method": m, "params": p}) for m, p in zip(methods, params)] == FLOOD
        assert [m for m, p in zip(methods, params) if gc.is_tracked(m) or gc.is_tracked(p)] == ["turn/completed"]
        for other in beside:
            assert other.pending() == 6 and all(gc.is_tracked(note) for note in other._items)
        frame = sub.get_nowait()  # the getters hand out the frame rebuilt from the pair
        assert frame == {"method": methods[0], "params": params[0]} and sub.pending() == 5
    finally:
        await client.close()


def test_subscription_maxsize_counts_notifications_whatever_the_form():
    tuples = Subscription(THREAD, 4, {}, lambda _: None)
    pairs = Subscription(THREAD, 4, {}, lambda _: None, pairs=True)
    assert (tuples.maxsize, tuples._limit, pairs.maxsize, pairs._limit) == (4, 4, 4, 8)
    pairs.maxsize = 3
    assert (pairs.maxsize, pairs._limit) == (3, 6)


async def test_client_subscription_overflow_is_checked_and_limits_set_the_default():
    client = await started(b.echo, limits=Limits(overflow="drop"))
    try:
        assert client.subscribe(THREAD).overflow == "drop"
        assert client.subscribe(THREAD, overflow="wait").overflow == "wait"
        with pytest.raises(ConfigError, match="^overflow must be one of 'wait', 'drop', not 'block'"):
            client.subscribe(THREAD, overflow="block")  # type: ignore[arg-type]
    finally:
        await client.close()


async def test_client_subscription_get_times_out_and_iterates_until_the_end():
    client = await started(b.echo)
    sub = client.subscribe(THREAD)
    with pytest.raises(CodexTimeout):
        await sub.get(timeout=0.01)
    waiting = asyncio.ensure_future(sub.get(timeout=30))
    await asyncio.sleep(0)
    await client.close()
    with pytest.raises(ClientClosed):
        await waiting
    assert [f async for f in sub] == []


async def test_subscription_events_end_with_the_client() -> None:
    client = await client_for_behaviour(CodexLike())
    sub = client.subscribe(client.GLOBAL)
    await client.close()
    assert [e async for e in sub.events()] == []
