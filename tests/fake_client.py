"""Helpers shared by the client tests: a client on the hand-written fake
app-server (tests/fake_appserver.py), and process checks."""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any, Callable

from codexmini._client import AppServerClient

TESTS = os.path.dirname(os.path.abspath(__file__))
FAKE = os.path.join(TESTS, "fake_appserver.py")
THREAD = "01a22cd4-86d8-7bb1-a4b3-76b6caecb517"


async def started(behaviour: str, **options: Any) -> AppServerClient:
    """A spawned, initialized client on the fake playing ``behaviour``."""
    client = AppServerClient([sys.executable, FAKE, behaviour], **options)
    await client.spawn()
    await client.initialize()
    return client


def run(coro: Any) -> Any:
    """Run a test coroutine with an overall deadline: nothing may hang."""
    return asyncio.run(asyncio.wait_for(coro, 60))


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie still answers kill(0): look at its state
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


async def until(predicate: Callable[[], bool], deadline: float = 10.0) -> bool:
    """Poll ``predicate`` until it holds or ``deadline`` seconds pass."""
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline
    while loop.time() < end:
        if predicate():
            return True
        await asyncio.sleep(0.01)
    return predicate()


async def gone(pid: int, deadline: float = 10.0) -> bool:
    """Wait (bounded) until the process has disappeared."""
    return await until(lambda: not alive(pid), deadline)
