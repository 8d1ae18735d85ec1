"""A codex that dies (or stops listening) at one point, the first time only.

:class:`Faulty` is a :class:`~codexmini.testing.CodexLike` behaviour run as a
child process over real pipes.  Its variant names the fault point
(:data:`POINTS`); ``$FAULT_DIR`` is a directory it shares with the test:

* every launch writes ``launch-N`` (its pid) and starts a long-lived
  grandchild in its process group, ``launch-N.grandchild`` (its pid) -- so the
  test can check, in ``/proc``, that nothing is left of the child *and* its
  descendants;
* only launch 0 faults; later launches play a normal turn, so the test can
  show that the next turn works on a fresh child.

The kill is the real thing: ``SIGKILL`` of the fake's own pid, as the OOM
killer or a crash would end codex.  ``approval_pending`` is killed by the
test's handler instead, while the handler runs.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from typing import Any, Mapping, Optional

from codexmini.testing import ServerSide
from codexmini.testing.codex_like import THREAD, USAGE_1, CodexLike, agent_message

HERE = os.path.dirname(os.path.abspath(__file__))
LINGER = 120
APPROVAL = "item/commandExecution/requestApproval"

POINTS = (
    "before_initialize",
    "during_thread_start",
    "mid_stream",
    "approval_pending",
    "during_close",
    "stdout_closed",
    "stdin_not_read",
)


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


class Faulty(CodexLike):
    def __init__(self, variant: str = "") -> None:
        super().__init__(variant)
        self.launch = -1

    async def __call__(self, server: ServerSide) -> Optional[int]:
        directory = os.environ["FAULT_DIR"]
        self.launch = len([n for n in os.listdir(directory) if n.startswith("launch-") and "." not in n])
        base = os.path.join(directory, f"launch-{self.launch}")
        # A descendant in our process group -- with pipes of its own, as codex
        # runs its tools: one holding our stdout would hide the stdout_closed fault.
        sleeper = subprocess.Popen(["sleep", str(LINGER)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        with open(base + ".grandchild", "w") as fh:
            fh.write(str(sleeper.pid))
        with open(base, "w") as fh:
            fh.write(str(os.getpid()))
        return await super().__call__(server)

    @property
    def faulting(self) -> bool:
        return self.launch == 0

    async def on_initialize(self, rid: Any, params: Mapping[str, Any]) -> None:
        if self.faulting and self.variant == "before_initialize":
            die()
        await super().on_initialize(rid, params)
        if self.faulting and self.variant == "stdin_not_read":
            self.server.stop_reading()  # alive, answering nothing from now on

    async def on_thread_start(self, rid: Any, params: Mapping[str, Any]) -> None:
        if self.faulting and self.variant == "during_thread_start":
            die()
        await super().on_thread_start(rid, params)

    async def script(self, params: Mapping[str, Any]) -> None:
        if not self.faulting or self.variant not in ("mid_stream", "approval_pending", "during_close", "stdout_closed"):
            self.message("msg_1", "Hello")
            self.usage(USAGE_1, USAGE_1)
            self.finish(items=[agent_message("msg_1", "Hello")])
            return
        self.message("msg_before", "before")
        self.delta("msg_cut", "half a mess")
        if self.variant == "mid_stream":
            die()
        if self.variant == "approval_pending":
            params = {
                "threadId": THREAD,
                "turnId": self.tid(None),
                "itemId": "call_cmd_1",
                "startedAtMs": 1796048455375,
                "command": "/bin/bash -lc 'echo hi'",
                "cwd": "/var/tmp/ws",
                "reason": "need it",
            }
            self.write({"id": 0, "method": APPROVAL, "params": params})
        if self.variant == "stdout_closed":
            self.server.close_output()
        if self.variant == "during_close":
            await self.server.drain()
            die()  # killed the moment close() closes our stdin, the grandchild still running
        await asyncio.sleep(LINGER)  # the test (or the client) ends us


__all__ = ["APPROVAL", "Faulty", "HERE", "POINTS"]
