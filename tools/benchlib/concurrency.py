"""Turns at once on one real codex server (issue 28): the client's side of it.

The bench starts one ``codex app-server --listen ws://127.0.0.1:0`` on the
scripted model (every turn a message of ``deltas`` deltas) and runs these in
a fresh interpreter each, so the peak RSS is the client's own:

* ``threads`` -- one connection, ``n`` threads, a turn on each, all at once;
* ``connections`` -- ``n`` connections (a client each), a thread and a turn
  on each, all at once.

The window runs from just before the ``n`` ``turn/start`` requests to the
last ``turn/completed``: what a caller waits for.  The rate is every event
of every turn over that window.
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

from .child import Options, main, peak_rss_mb


async def _turn(thread: Any) -> tuple[int, int]:
    from codexmini import AgentMessageDelta

    events = deltas = 0
    async with thread.turn("go") as turn:
        async for event in turn:
            events += 1
            if type(event) is AgentMessageDelta:
                deltas += 1
    return events, deltas


async def _race(threads: list[Any], opts: Options) -> dict[str, Any]:
    start, cpu = time.perf_counter(), time.process_time()
    counts = await asyncio.gather(*(_turn(t) for t in threads))
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    events = sum(c[0] for c in counts)
    return {
        "n": len(threads),
        "seconds": seconds,
        "cpu_seconds": cpu,
        "events": events,
        "rate": events / seconds,
        "cpu_rate": events / cpu,
        "all_delivered": all(c[1] == opts["deltas"] for c in counts),
        "peak_rss_mb": peak_rss_mb(),
    }


async def _thread(client: Any, opts: Options) -> Any:
    from codexmini import Thread

    return await Thread.start(client, cwd=opts["cwd"], model="gpt-fake", sandbox="read-only", approval_policy="never")


async def threads(opts: Options) -> dict[str, Any]:
    from codexmini import AppServerClient

    async with await AppServerClient.connect(opts["url"]) as client:
        started = [await _thread(client, opts) for _ in range(opts["n"])]
        result = await _race(started, opts)
        for thread in started:
            thread.close()
    return result


async def connections(opts: Options) -> dict[str, Any]:
    from codexmini import AppServerClient

    clients = [await AppServerClient.connect(opts["url"]) for _ in range(opts["n"])]
    try:
        started = [await _thread(client, opts) for client in clients]
        result = await _race(started, opts)
        for thread in started:
            thread.close()
    finally:
        await asyncio.gather(*(client.close() for client in clients))
    return result


CONTENDERS = {"threads": threads, "connections": connections}

if __name__ == "__main__":
    sys.exit(main(CONTENDERS))
