"""Turns at once (issues 28 and 29): the client's side of it.

Each contender runs in a fresh interpreter, so the peak RSS is the client's own:

* ``fake_threads`` -- one client over stdio on the bench's fake app-server
  (``--interleave``: the open turns' lines one after the other, as codex
  streams them), ``n`` threads, a turn on each, all at once; ``turns`` turns
  in all, ``n`` at a time, so every ``n`` does the same work.  The fake
  writes prepared bytes, so the client is the bottleneck: what it pays per
  event as turns are added;
* ``threads`` -- one connection to a real ``codex app-server --listen
  ws://127.0.0.1:0`` on the scripted model (every turn a message of
  ``deltas`` deltas), ``n`` threads, a turn on each, all at once;
* ``connections`` -- ``n`` connections to it (a client each), a thread and a
  turn on each, all at once.

The window runs from just before the ``n`` ``turn/start`` requests to the
last ``turn/completed``: what a caller waits for.  The rate is every event
of every turn over that window; ``rss_before_mb`` is the RSS once the
threads are open, before the turns start.
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

from .child import Options, main, peak_rss_mb, rss_mb


async def _turn(thread: Any, keep_items: bool = True) -> tuple[int, int]:
    from codexmini import AgentMessageDelta

    events = deltas = 0
    async with thread.turn("go", keep_items=keep_items) as turn:
        async for event in turn:
            events += 1
            if type(event) is AgentMessageDelta:
                deltas += 1
    return events, deltas


async def _window(threads: list[Any], keep_items: bool = True) -> tuple[float, float, list[tuple[int, int]]]:
    """A turn on each of ``threads``, all at once: (wall, CPU seconds, (events, deltas) of each)."""
    start, cpu = time.perf_counter(), time.process_time()
    counts = await asyncio.gather(*(_turn(t, keep_items) for t in threads))
    return time.perf_counter() - start, time.process_time() - cpu, list(counts)


def _result(
    n: int, seconds: float, cpu: float, counts: list[tuple[int, int]], opts: Options, before: float
) -> dict[str, Any]:
    events = sum(c[0] for c in counts)
    return {
        "n": n,
        "turns": len(counts),
        "seconds": seconds,
        "cpu_seconds": cpu,
        "events": events,
        "rate": events / seconds,
        "cpu_rate": events / cpu,
        "all_delivered": all(c[1] == opts["deltas"] for c in counts),
        "rss_before_mb": before,
        "peak_rss_mb": peak_rss_mb(),
    }


async def _race(threads: list[Any], opts: Options) -> dict[str, Any]:
    before = rss_mb()
    seconds, cpu, counts = await _window(threads)
    return _result(len(threads), seconds, cpu, counts, opts, before)


async def fake_threads(opts: Options) -> dict[str, Any]:
    """``opts["turns"]`` turns (default ``n``), ``n`` at a time on as many
    new threads, over stdio on the bench's fake; the windows summed.
    ``opts["keep_items"]``: the turns keep their items (the default) or not."""
    from codexmini import AppServerClient, Launch, Thread

    n = opts["n"]
    launch = Launch(codex_bin=opts["codex"], cwd=opts["scratch"], args=["--interleave"])
    seconds = cpu = 0.0
    counts: list[tuple[int, int]] = []
    first: dict[str, float] = {}
    async with await AppServerClient.start(launch) as client:
        before = rss_mb()
        for _ in range(max(1, opts.get("turns", n) // n)):
            started = [await Thread.start(client) for _ in range(n)]
            wall, used, done = await _window(started, opts.get("keep_items", True))
            seconds, cpu, counts = seconds + wall, cpu + used, counts + done
            # The first round's n turns, their books still held: what n turns at once cost in memory
            # (later rounds add what the allocator keeps of the earlier ones).
            first = first or {"first_rss_mb": rss_mb(), "first_peak_rss_mb": peak_rss_mb()}
            for thread in started:
                thread.close()
        dropped = client.stats["dropped"]
    return dict(_result(n, seconds, cpu, counts, opts, before), dropped=dropped, **first)


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


CONTENDERS = {"fake_threads": fake_threads, "threads": threads, "connections": connections}

if __name__ == "__main__":
    sys.exit(main(CONTENDERS))
