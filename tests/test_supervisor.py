"""The agent's child supervisor: reuse, replace and idle out one app-server.

Each test starts in-memory clients on the one fake app-server (a
:class:`CodexLike` behaviour); no process, no codex.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, List

import pytest

from codexmini import Launch
from codexmini._client import AppServerClient
from codexmini._errors import RequestTimeout
from codexmini._supervisor import ChildSupervisor
from codexmini.testing import CodexLike, FakeAppServer


class Deaf(CodexLike):
    """Never answers ``thread/start`` (a stuck child)."""

    async def on_thread_start(self, rid: Any, params: Any) -> None:
        pass


class Starter:
    """Launch values over one in-memory fake (one per key: the key is an
    argument), and the clients the supervisor started from them."""

    def __init__(self, behaviour: Any = CodexLike) -> None:
        self.fake = FakeAppServer(behaviour)
        self.started: List[AppServerClient] = []

    def __call__(self, key: str) -> Launch:
        return Launch(launcher=self.fake.launch, args=[key])

    def supervisor(self, idle_s: float = 0.0) -> ChildSupervisor:
        return ChildSupervisor(idle_s, prepare=self.started.append)


async def test_supervisor_reuses_a_healthy_child_for_the_same_key():
    start = Starter()
    sup = start.supervisor()
    first = await sup.ensure(start("key"))
    assert await sup.ensure(start("key")) is first
    assert (start.started, sup.restarts, sup.launch) == ([first], 0, start("key"))
    await sup.close()
    assert sup.client is None and first.closed


async def test_supervisor_replaces_the_child_for_a_new_key(caplog):
    with caplog.at_level(logging.INFO, logger="codexmini.agent"):
        start = Starter()
        sup = start.supervisor()
        first = await sup.ensure(start("a"))
        second = await sup.ensure(start("b"))
        assert second is not first and first.closed
        assert (start.started, sup.restarts, sup.launch) == ([first, second], 1, start("b"))
        await sup.close()
    assert "replacing the codex app-server (new config)" in caplog.text


async def test_supervisor_replaces_a_child_that_stopped_answering(caplog):
    with caplog.at_level(logging.INFO, logger="codexmini.agent"):
        start = Starter(Deaf)
        sup = start.supervisor()
        first = await sup.ensure(start("key"))
        with pytest.raises(RequestTimeout):
            await first.request("thread/start", {}, timeout=0.05)
        assert not first.healthy and not first.closed
        second = await sup.ensure(start("key"))
        assert second is not first and first.closed and sup.restarts == 1
        await sup.close()
    assert "replacing the codex app-server (unhealthy)" in caplog.text


async def test_supervisor_replaces_a_child_that_ended_without_saying_so(caplog):
    with caplog.at_level(logging.INFO, logger="codexmini.agent"):
        start = Starter()
        sup = start.supervisor()
        first = await sup.ensure(start("key"))
        await first.close()  # as if it died: nothing left to close
        second = await sup.ensure(start("key"))
        assert second is not first and sup.restarts == 1
        await sup.close()
    assert "replacing" not in caplog.text


async def test_supervisor_idle_timer_closes_the_child_in_a_maintenance_task():
    start = Starter()
    sup = start.supervisor(idle_s=0.01)
    first = await sup.ensure(start("key"))
    sup.arm_idle(lambda: True)
    await asyncio.wait_for(first.wait_closed(), 30)
    await sup.wait_maintenance()
    assert sup.client is None and not sup.maintaining
    # The next ensure starts a fresh child; an idle shutdown is no restart.
    second = await sup.ensure(start("key"))
    assert second is not first and sup.restarts == 0
    await sup.close()


async def test_supervisor_idle_timer_keeps_a_child_that_is_busy_again():
    start = Starter()
    sup = start.supervisor(idle_s=0.01)
    first = await sup.ensure(start("key"))
    asked = asyncio.Event()

    def is_idle() -> bool:
        asked.set()
        return False  # a turn started meanwhile

    sup.arm_idle(is_idle)
    await asyncio.wait_for(asked.wait(), 30)
    assert sup.client is first and not first.closed and not sup.maintaining
    await sup.close()


async def test_supervisor_ensure_waits_for_an_idle_shutdown_under_way():
    start = Starter()
    sup = start.supervisor(idle_s=3600)
    first = await sup.ensure(start("key"))
    sup._idle_shutdown(lambda: True)  # as the timer would
    assert sup.maintaining
    second = await sup.ensure(start("key"))  # never races the shutdown
    assert first.closed and second is not first and not sup.maintaining
    await sup.close()


async def test_supervisor_arms_no_timer_without_idle_s_or_without_a_child():
    start = Starter()
    never = start.supervisor(idle_s=0)
    client = await never.ensure(start("key"))
    never.arm_idle(lambda: True)
    assert never._idle_timer is None
    await never.close()
    assert client.closed
    empty = ChildSupervisor(idle_s=3600)
    empty.arm_idle(lambda: True)  # nothing to close
    assert empty._idle_timer is None
    await empty.close()  # no child: nothing to do
    await empty.wait_maintenance()  # none under way


async def test_supervisor_close_cancels_the_idle_timer():
    start = Starter()
    sup = start.supervisor(idle_s=3600)
    await sup.ensure(start("key"))
    sup.arm_idle(lambda: True)
    timer = sup._idle_timer
    assert timer is not None
    await sup.close()
    assert timer.cancelled() and sup._idle_timer is None and sup.client is None


async def test_supervisor_without_a_prepare_hook_starts_a_bare_client():
    start = Starter()
    sup = ChildSupervisor()
    client = await sup.ensure(start("key"))
    assert client is sup.client and start.started == [] and not client.closed
    await sup.close()
    assert client.closed
