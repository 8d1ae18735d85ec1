"""One app-server child for the agent: start it, reuse it, replace it, let it go idle.

:class:`ChildSupervisor` owns the agent's :class:`~._client.AppServerClient`.
:meth:`~ChildSupervisor.ensure` returns a client fit for the next step: the
running one, unless it ended, stopped answering (``client.healthy`` is False
after a request timed out) or was started from another
:class:`~codexmini.Launch` (a new model endpoint, other ``-c`` flags, another
binary) -- then it is closed and a new one started, and ``prepare(client)``
wires it (the agent's approvals and answer log) before it is used.  After a turn the agent arms an idle timer
(``child_idle_s``); when it fires with nothing running, the child is closed in
a *maintenance* task that the next :meth:`ensure` waits for, so a followup
never races a shutdown.  A child that stopped answering is closed that way as
soon as the turn is over, not kept (a live process) until the next one.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Callable, Optional, Set, Union

from ._launch import Launch

if TYPE_CHECKING:
    from ._client import AppServerClient, Tap
    from ._connect import Connect

log = logging.getLogger("codexmini.agent")


class ChildSupervisor:
    """Starts, reuses, replaces and idles out the agent's codex child."""

    def __init__(
        self,
        idle_s: float = 0.0,
        *,
        tap: Optional[Tap] = None,
        prepare: Optional[Callable[[AppServerClient], None]] = None,
        on_maintenance: Optional[Callable[[], None]] = None,
    ) -> None:
        self.idle_s = idle_s
        self.tap = tap
        self.prepare = prepare
        #: Called when an idle shutdown starts and when it ends (:attr:`maintaining` changed).
        self.on_maintenance = on_maintenance
        self.client: Optional[AppServerClient] = None
        #: What the running client was started from (or connected to).
        self.launch: Optional[Union[Launch, Connect]] = None
        self.restarts = 0
        self._idle_timer: Optional[asyncio.TimerHandle] = None
        self._maintenance: Optional["asyncio.Task[None]"] = None
        self._closing: Set[AppServerClient] = set()

    @property
    def maintaining(self) -> bool:
        """An idle shutdown is under way."""
        return self._maintenance is not None

    async def ensure(self, launch: Union[Launch, Connect]) -> AppServerClient:
        """A usable client started from ``launch`` (or connected to the server
        a :class:`~codexmini.Connect` names), started now if needed."""
        self.cancel_idle()
        await self.wait_maintenance()
        client = self.client
        if client is not None and (not client.healthy or launch != self.launch):
            if not client.closed:
                log.info("replacing the codex app-server (%s)", "unhealthy" if not client.healthy else "new config")
            self.restarts += 1
            await self.close()
        if self.client is None:
            from ._client import AppServerClient  # here, not with the package: only a started client needs it

            if not isinstance(launch, Launch):  # a Connect (not imported here: only a connection needs it)
                client = await AppServerClient.connect(launch, tap=self.tap)
            else:
                client = await AppServerClient.start(launch, tap=self.tap)
            if self.prepare is not None:
                self.prepare(client)
            self.client, self.launch = client, launch
        return self.client

    def abort_maintenance(self) -> None:
        """Stop waiting for an idle shutdown under way (``cancel()``): the
        agent is idle at once.  The child's own close goes on to its end in
        the background (``AppServerClient.close`` is shielded), so nothing is
        left running."""
        if self._maintenance is not None:
            self._maintenance.cancel()
            self._set_maintenance(None)

    async def wait_maintenance(self) -> None:
        if self._maintenance is not None:
            await asyncio.shield(self._maintenance)

    def arm_idle(self, is_idle: Callable[[], bool]) -> None:
        """Close the child after ``idle_s`` if ``is_idle()`` still holds then --
        or now, if it stopped answering: no turn will use it, so it must not
        hold a process until the next one."""
        self.cancel_idle()
        client = self.client
        if client is not None and not client.healthy and not client.closed:
            log.info("replacing the codex app-server (unhealthy): closing it now")
            self.restarts += 1
            self._set_maintenance(asyncio.get_running_loop().create_task(self._maintain()))
        elif self.idle_s > 0 and client is not None:
            loop = asyncio.get_running_loop()
            self._idle_timer = loop.call_later(self.idle_s, self._idle_shutdown, is_idle)

    def cancel_idle(self) -> None:
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None

    def _idle_shutdown(self, is_idle: Callable[[], bool]) -> None:
        self._idle_timer = None
        if is_idle() and self.client is not None:
            log.info("closing the idle codex app-server")
            self._set_maintenance(asyncio.get_running_loop().create_task(self._maintain()))

    async def _maintain(self) -> None:
        try:
            await self.close()
        finally:
            if self._maintenance is asyncio.current_task():  # (not aborted meanwhile)
                self._set_maintenance(None)

    def _set_maintenance(self, task: Optional["asyncio.Task[None]"]) -> None:
        self._maintenance = task
        if self.on_maintenance is not None:
            self.on_maintenance()

    async def close(self) -> None:
        """Close the child (if any) and forget it; also wait for a child whose
        idle shutdown was aborted (its close went on in the background)."""
        self.cancel_idle()
        client, self.client = self.client, None
        if client is not None:
            self._closing.add(client)
            await client.close()  # a cancel here leaves it in _closing: closed later, never lost
            self._closing.discard(client)
        for left in list(self._closing):
            await left.close()  # idempotent and shielded: returns once it is closed
            self._closing.discard(left)


__all__ = ["ChildSupervisor"]
