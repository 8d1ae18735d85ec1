"""A slow consumer and a fast one on one connection, over a real pipe.

``python slow_consumer.py OVERFLOW`` starts a fake codex *process* (this
module's :func:`flood`, through :class:`~codexmini.testing.FakeAppServer`)
that sends :data:`PER_THREAD` deltas for each of two threads, interleaved,
then each thread's ``turn/completed``.  Thread A's consumer is slow (it
sleeps every :data:`EVERY` events); thread B's takes at once.  The client
runs with ``Limits(queue_size=QUEUE, overflow=OVERFLOW)``; the script prints
one JSON object: what each consumer got, what was dropped, how often the
reader waited, the longest queue either consumer saw, when each stream
ended (seconds from the first event), and this process's peak RSS.  It runs
in a process of its own so that the RSS is this conversation's alone.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any, Dict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE)]  # tests/: support.behaviours

from support.behaviours import OTHER_THREAD, THREAD, delta, loaded_list, next_request, turn_completed  # noqa: E402

from codexmini import AppServerClient, Launch, Limits  # noqa: E402
from codexmini.testing import FakeAppServer, ServerSide  # noqa: E402

PER_THREAD = 20_000
QUEUE = 500
EVERY = 20  # thread A's consumer sleeps a millisecond every EVERY events


def _for(thread: str, frame: Dict[str, Any]) -> Dict[str, Any]:
    return {**frame, "params": {**frame["params"], "threadId": thread}}


async def flood(server: ServerSide) -> None:
    await server.handshake()
    first = await next_request(server)
    # Written with blocking writes: a full pipe holds this process until the client reads.
    for i in range(PER_THREAD):
        server.send(delta(str(i)))
        server.send(_for(OTHER_THREAD, delta(str(i))))
    server.send(turn_completed())
    server.send(_for(OTHER_THREAD, turn_completed()))
    server.send(loaded_list(first["id"]))
    await server.drain()  # until the client's input ends


async def consume(sub: Any, slow: bool, seen: Dict[str, Any], start: Dict[str, float]) -> None:
    loop = asyncio.get_running_loop()
    got = 0
    while True:
        frame = await sub.get(timeout=120)
        start.setdefault("t", loop.time())
        seen["peak"] = max(seen["peak"], sub.pending() + 1)
        if frame["method"] == "turn/completed":
            break
        got += 1
        if slow and got % EVERY == 0:
            await asyncio.sleep(0.001)
    seen["delivered"], seen["ended"] = got, loop.time() - start["t"]


async def main(overflow: str, directory: str) -> Dict[str, Any]:
    exe = FakeAppServer("slow_consumer:flood").executable(directory, pythonpath=[HERE, os.path.dirname(HERE)])
    limits = Limits(queue_size=QUEUE, overflow=overflow)  # type: ignore[arg-type]
    async with await AppServerClient.start(Launch(codex_bin=exe, limits=limits)) as client:
        a, b = client.subscribe(THREAD), client.subscribe(OTHER_THREAD)
        answer = asyncio.ensure_future(client.request("thread/loaded/list", {}))
        seen_a: Dict[str, Any] = {"peak": 0}
        seen_b: Dict[str, Any] = {"peak": 0}
        start: Dict[str, float] = {}
        await asyncio.gather(consume(a, True, seen_a, start), consume(b, False, seen_b, start), answer)
        stats = dict(client.stats)
    return {
        "sent": PER_THREAD,
        "queue": QUEUE,
        "a": seen_a,
        "b": seen_b,
        "dropped": stats["dropped"],
        "paused": stats["paused"],
        "stalled": stats["stalled"],
        "rss_kib": peak_rss_kib(),
    }


def peak_rss_kib() -> int:
    """This process's peak RSS since its exec (``VmHWM``: ``ru_maxrss`` would
    count the parent's pages a forked child started with)."""
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2]))))
