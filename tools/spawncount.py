"""A pytest plugin that counts the tests that start a subprocess.

    PYTHONPATH=tools .venv/bin/python -m pytest -q -p spawncount [SPAWNCOUNT_OUT=FILE]

(in one process, without ``-n``: under pytest-xdist each worker would count
its own share and print it where no one sees it).

A test counts when anything in it calls ``subprocess.Popen`` or an event
loop's ``subprocess_exec`` (what ``asyncio.create_subprocess_exec`` uses).
At the end it prints ``SPAWNCOUNT: N of M tests spawn a subprocess`` and, with
``SPAWNCOUNT_OUT``, writes ``{test id: spawned}`` as JSON (to compare runs
file by file).  A measurement for the issues' notes, not part of ``make test``.
"""

from __future__ import annotations

import asyncio.base_events
import json
import os
import subprocess
from typing import Any, Dict, Iterator

import pytest

_spawned = {"now": False}
_results: Dict[str, bool] = {}

_popen_init = subprocess.Popen.__init__
_subprocess_exec = asyncio.base_events.BaseEventLoop.subprocess_exec


def _init(self: Any, *args: Any, **kwargs: Any) -> None:
    _spawned["now"] = True
    _popen_init(self, *args, **kwargs)


async def _exec(self: Any, *args: Any, **kwargs: Any) -> Any:
    _spawned["now"] = True
    return await _subprocess_exec(self, *args, **kwargs)


subprocess.Popen.__init__ = _init  # type: ignore[method-assign]
asyncio.base_events.BaseEventLoop.subprocess_exec = _exec  # type: ignore[method-assign]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: Any) -> Iterator[None]:
    _spawned["now"] = False
    yield
    _results[item.nodeid] = _spawned["now"]


def pytest_sessionfinish(session: pytest.Session) -> None:
    out = os.environ.get("SPAWNCOUNT_OUT")
    if out:
        with open(out, "w", encoding="utf-8") as fh:
            json.dump(_results, fh, indent=0)
    print(f"\nSPAWNCOUNT: {sum(_results.values())} of {len(_results)} tests spawn a subprocess")
