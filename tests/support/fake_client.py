"""Helpers shared by the client tests: a client on a fake app-server playing
a behaviour of tests/support/behaviours.py -- in memory (:func:`started`) or as a
child process over real pipes (:func:`spawned`) -- and process checks."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
from typing import Any, Callable, Dict

from codexmini import AgentConfig, Launch
from codexmini._client import AppServerClient, Subscription
from codexmini.testing import FakeAppServer

#: tests/, the directory to put on a child's path to import ``support.behaviours``.
TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


_LAUNCH_FIELDS = frozenset(f.name for f in dataclasses.fields(Launch))


def _start(launch: Dict[str, Any], options: Dict[str, Any]) -> Any:
    """``AppServerClient.start`` with ``options`` shared out: the Launch's
    fields (``timeouts=``, ``limits=``, ``env=`` …) to the launch, the rest
    (``initialize=``, ``tap=`` …) to the call."""
    launch.update((k, v) for k, v in options.items() if k in _LAUNCH_FIELDS)
    return AppServerClient.start(Launch(**launch), **{k: v for k, v in options.items() if k not in _LAUNCH_FIELDS})


def agent_config(**options: Any) -> AgentConfig:
    """An AgentConfig from one flat set of options: the Launch's fields (but
    ``cwd``, the agent's workspace) go to its ``launch`` (merged into one given
    as ``launch=``), the rest to it."""
    base = options.pop("launch", Launch())
    launch = {f.name: getattr(base, f.name) for f in dataclasses.fields(Launch)}
    launch.update((k, options.pop(k)) for k in list(options) if k in _LAUNCH_FIELDS and k != "cwd")
    return AgentConfig(launch=Launch(**launch), **options)


def reconfigured(base: AgentConfig, **launch: Any) -> AgentConfig:
    """``base`` with its launch's fields ``launch`` changed."""
    return dataclasses.replace(base, launch=dataclasses.replace(base.launch, **launch))


async def started(behaviour: Any, **options: Any) -> AppServerClient:
    """An initialized client on an in-memory fake playing ``behaviour``
    (a behaviour of tests/support/behaviours.py, or any other)."""
    return await _start({"launcher": FakeAppServer(behaviour).launch}, options)


def codex_bin(directory: Any, behaviour: str) -> str:
    """An executable "codex" in ``directory`` that runs ``support.behaviours.<behaviour>``
    as a child process (argv and environment are codex's own)."""
    return FakeAppServer(f"support.behaviours:{behaviour}").executable(str(directory), pythonpath=[TESTS])


async def spawned(directory: Any, behaviour: str, **options: Any) -> AppServerClient:
    """An initialized client on a fake codex *process* playing ``behaviour``."""
    return await _start({"codex_bin": codex_bin(directory, behaviour)}, options)


async def reported(sub: Subscription) -> Any:
    """What a behaviour reported (tests/support/behaviours.py:report) in its next delta."""
    return json.loads((await sub.get(timeout=10))["params"]["delta"])


def run(coro: Any) -> Any:
    """Run a coroutine in an event loop of its own, with an overall deadline, for a
    test that checks something only once that loop is closed (coroutine tests
    run under the root conftest's hook instead)."""
    return asyncio.run(asyncio.wait_for(coro, 60))


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie still answers kill(0): look at its state
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:  # pragma: no cover - reaped between the two looks
        return False


async def until(predicate: Callable[[], Any], deadline: float = 10.0) -> bool:
    """Poll ``predicate`` until it holds or ``deadline`` seconds pass."""
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline
    while loop.time() < end:
        if predicate():
            return True
        await asyncio.sleep(0.01)
    return bool(predicate())


async def gone(pid: int, deadline: float = 10.0) -> bool:
    """Wait (bounded) until the process has disappeared."""
    return await until(lambda: not alive(pid), deadline)
