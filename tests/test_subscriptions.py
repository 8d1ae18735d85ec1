"""A subscription (``codexmini._subscriptions``): one bounded queue of a client's notifications.

A full queue drops deltas, counted and logged, never the frames that end or
shape a turn; ``get`` has its own timeout; once the client has ended and the
queue is empty, reads end (``get`` raises the client's terminal error,
iteration and ``events()`` stop).  Each test runs a behaviour in memory
(tests/support/behaviours.py, or :class:`CodexLike`); where a notification
goes (routing by thread) is the client's, in tests/test_client.py.
"""

from __future__ import annotations

import asyncio

import pytest
from support import behaviours as b
from support.canned import client_for_behaviour
from support.fake_client import started

from codexmini._errors import ClientClosed, CodexTimeout
from codexmini.testing import CodexLike

THREAD = b.THREAD


async def test_client_bounded_queue_drops_deltas_but_never_turn_frames(caplog):
    client = await started(b.flood_thread)
    sub = client.subscribe(THREAD, maxsize=2)
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
