"""Turns at once (issues 28 and 29): the client's side of it.

Each contender runs in a fresh interpreter, so the peak RSS is the client's own:

* ``fake_threads`` -- one client over stdio on the bench's fake app-server
  (``--interleave``: the open turns' lines one after the other, as codex
  streams them), ``n`` threads, a turn on each, all at once; ``turns`` turns
  in all, ``n`` at a time, so every ``n`` does the same work.  The fake
  writes prepared bytes, so the client is the bottleneck: what it pays per
  event as turns are added;
* ``raw_threads`` -- the same turns on the same fake, read by a minimal
  asyncio client and no codexmini: a reader task parses each line and puts it
  on its thread's queue, a task per turn takes from it, waking on a future
  when the queue is empty.  What asyncio itself keeps as turns are added, and
  the pace ``fake_threads`` is compared with at the same ``n``;
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
import collections
import json
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


class _Raw:
    """The minimal client of ``raw_threads``: requests by id, notifications by thread."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.answers: dict[int, asyncio.Future[Any]] = {}
        self.queues: dict[str, collections.deque[dict[str, Any]]] = {}
        self.waiters: dict[str, asyncio.Future[None]] = {}
        self.last_id = 0
        self.ended = False  # the fake's output ended (or could not be read): nothing more will come

    def _check(self) -> None:
        if self.ended:
            raise ConnectionError("the fake app-server's output ended")

    def request(self, method: str, params: dict[str, Any]) -> asyncio.Future[Any]:
        assert self.proc.stdin is not None
        self._check()
        self.last_id += 1
        answer = self.answers[self.last_id] = asyncio.get_running_loop().create_future()
        self.proc.stdin.write(json.dumps({"id": self.last_id, "method": method, "params": params}).encode() + b"\n")
        return answer

    async def read(self) -> None:
        assert self.proc.stdout is not None
        read, loads, pending = self.proc.stdout.read, json.loads, b""
        try:
            while True:
                data = await read(1 << 16)
                if not data:
                    return
                *lines, pending = (pending + data).split(b"\n")
                for line in lines:
                    frame = loads(line)
                    if "id" in frame:
                        self.answers.pop(frame["id"]).set_result(frame.get("result"))
                        continue
                    thread = frame["params"].get("threadId")
                    queue = self.queues.get(thread)
                    if queue is not None:  # a thread with a turn running (not thread/started)
                        queue.append(frame)
                        waiter = self.waiters.pop(thread, None)
                        if waiter is not None:
                            waiter.set_result(None)
        finally:  # ended, or a line it could not read: whoever waits is told, nobody hangs
            self.ended = True
            for future in [*self.answers.values(), *self.waiters.values()]:
                if not future.done():
                    future.set_exception(ConnectionError("the fake app-server's output ended"))

    async def turn(self, thread: str) -> tuple[int, int]:
        queue = self.queues[thread] = collections.deque()
        await self.request("turn/start", {"threadId": thread, "input": [{"type": "text", "text": "go"}]})
        create_future = asyncio.get_running_loop().create_future
        events = deltas = 0
        while True:
            while queue:
                method = queue.popleft()["method"]
                events += 1
                if method == "item/agentMessage/delta":
                    deltas += 1
                elif method == "turn/completed":
                    del self.queues[thread]
                    return events, deltas
            self._check()
            self.waiters[thread] = waiter = create_future()
            await waiter


async def raw_threads(opts: Options) -> dict[str, Any]:
    """``fake_threads``'s turns, ``n`` at a time, read by :class:`_Raw`."""
    n, pipe = opts["n"], asyncio.subprocess.PIPE
    proc = await asyncio.create_subprocess_exec(
        opts["codex"], "app-server", "--interleave", stdin=pipe, stdout=pipe, cwd=opts["scratch"]
    )
    raw = _Raw(proc)
    reader = asyncio.ensure_future(raw.read())
    seconds = cpu = 0.0
    counts: list[tuple[int, int]] = []
    first: dict[str, float] = {}
    assert proc.stdin is not None
    try:
        await raw.request("initialize", {"clientInfo": {"name": "raw", "version": "0"}})
        proc.stdin.write(b'{"method":"initialized"}\n')
        before = rss_mb()
        for _ in range(max(1, opts.get("turns", n) // n)):
            threads = [(await raw.request("thread/start", {}))["thread"]["id"] for _ in range(n)]
            start, used = time.perf_counter(), time.process_time()
            counts += await asyncio.gather(*(raw.turn(thread) for thread in threads))
            seconds, cpu = seconds + time.perf_counter() - start, cpu + time.process_time() - used
            first = first or {"first_rss_mb": rss_mb(), "first_peak_rss_mb": peak_rss_mb()}
    except BaseException:
        if proc.returncode is None:  # failed midway: the fake is stopped, not left behind
            proc.kill()
        await asyncio.gather(reader, return_exceptions=True)
        await proc.wait()
        raise
    proc.stdin.close()  # the fake ends at the end of its input
    await reader  # (ends with its output)
    await proc.wait()
    return dict(_result(n, seconds, cpu, counts, opts, before), **first)


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


CONTENDERS = {"fake_threads": fake_threads, "raw_threads": raw_threads, "threads": threads, "connections": connections}

if __name__ == "__main__":
    sys.exit(main(CONTENDERS))
