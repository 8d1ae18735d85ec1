"""The stream contenders: who reads the fake app-server's turn, and how fast.

Each runs in a fresh interpreter (see :mod:`.child`) against the fake
``codex`` of a workload (:mod:`.workload`).  Every one measures the same
window: from the first notification of a turn it sees to the end of that turn,
so spawning, the handshake and the fake's preparation are outside it.  Rates
are the turn's notifications per second of that window.

* ``raw`` -- ``await proc.stdout.readline()`` (``limit`` 64 MiB) and
  ``json.loads``; per frame it also reads ``method`` once, to count the deltas
  and see ``turn/completed`` (what any reader must do to know the turn ended);
* ``client`` -- codexmini's :class:`AppServerClient`, events consumed with
  ``async for event in thread.turn("go")``;
* ``agent`` -- codexmini's :class:`Agent` writing its session log (fsync off),
  counting deltas in ``on_event``;
* ``ceiling`` -- ``json.loads(line.decode())`` over the pre-read lines, no I/O;
* ``session`` -- one agent, one log, many small turns: the wall time of each
  ``agent.run()``, and the cost of serializing the log at two lengths.

codexmini is imported inside the contenders that use it, so ``raw`` and
``ceiling`` pay neither its import nor its memory.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping
from typing import Any

from .child import Options, counters, main, peak_rss_mb, rss_mb, since

DELTA = "item/agentMessage/delta"
LIMIT = 64 << 20  # the raw reader's StreamReader limit: the largest line it can read
CLOSE_TIMEOUT = 10.0


# -- a minimal JSON-RPC client over the fake (or real) app-server's pipes ----------


class RawRpc:
    """Only what a JSON-RPC client over stdio must do: write a line, read lines."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self.proc = proc
        self.stdout = proc.stdout
        self.next_id = 0

    @classmethod
    async def spawn(cls, argv: list[str], **kwargs: Any) -> RawRpc:
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=LIMIT, **kwargs
        )
        return cls(proc)

    async def send(self, frame: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(frame).encode() + b"\n")
        await self.proc.stdin.drain()

    async def request(self, method: str, params: dict[str, Any]) -> int:
        self.next_id += 1
        await self.send({"id": self.next_id, "method": method, "params": params})
        return self.next_id

    async def response(self, rid: int) -> dict[str, Any]:
        """Read (and drop) lines until the response to ``rid``."""
        while True:
            line = await self.stdout.readline()
            if not line:
                raise EOFError("the app-server closed stdout")
            frame = json.loads(line)
            if frame.get("id") == rid and "method" not in frame:
                if "error" in frame:
                    raise RuntimeError(f"request {rid} failed: {frame['error']}")
                return frame["result"]

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return await self.response(await self.request(method, params))

    async def initialize(self, version: str = "0.1.0") -> dict[str, Any]:
        # codexmini's own initialize params, so codex sees the same client either way.
        params = {"clientInfo": {"name": "codexmini", "version": version}, "capabilities": {"experimentalApi": True}}
        result = await self.call("initialize", params)
        await self.send({"method": "initialized"})
        return result

    async def close(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.is_closing():
            self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), CLOSE_TIMEOUT)
        except asyncio.TimeoutError:
            self.proc.kill()
            await asyncio.wait_for(self.proc.wait(), CLOSE_TIMEOUT)


async def read_turn(stdout: asyncio.StreamReader) -> dict[str, Any]:
    """The raw reader's loop, from the first notification to ``turn/completed``."""
    loads, readline = json.loads, stdout.readline
    loads(await readline())  # the first notification starts the clock
    start, cpu, before = time.perf_counter(), time.process_time(), counters()
    frames, deltas = 1, 0
    while True:
        method = loads(await readline()).get("method")
        frames += 1
        if method == DELTA:
            deltas += 1
        elif method == "turn/completed":
            break
    return {
        "seconds": time.perf_counter() - start,
        "cpu_seconds": time.process_time() - cpu,
        **since(before),
        "frames": frames,
        "deltas": deltas,
    }


# -- the contenders ------------------------------------------------------------------


def _turn_result(turns: list[dict[str, Any]], meta: dict[str, Any]) -> dict[str, Any]:
    for t in turns:
        t["rate"] = meta["notifications"] / t["seconds"]
        t["cpu_rate"] = meta["notifications"] / t["cpu_seconds"]
    return {
        "turns": turns,
        "rate": turns[0]["rate"],
        "cpu_rate": turns[0]["cpu_rate"],
        "deltas_expected": meta["deltas"],
        "all_delivered": all(t["deltas"] == meta["deltas"] for t in turns),
    }


async def raw(opts: Options) -> dict[str, Any]:
    rpc = await RawRpc.spawn([opts["codex"], "app-server"])
    try:
        await rpc.initialize()
        thread = (await rpc.call("thread/start", {}))["thread"]["id"]
        turns = []
        for _ in range(opts.get("turns", 1)):
            await rpc.call("turn/start", {"threadId": thread, "input": [{"type": "text", "text": "go"}]})
            turns.append(await read_turn(rpc.stdout))
            turns[-1]["rss_mb"] = rss_mb()
    finally:
        await rpc.close()
    return _turn_result(turns, opts["meta"])


async def client(opts: Options) -> dict[str, Any]:
    from codexmini import AppServerClient, Launch

    return await _client_turns(await AppServerClient.start(Launch(codex_bin=opts["codex"], cwd=opts["scratch"])), opts)


FAKE_SERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_appserver.py")


async def serve_fake(opts: Options, listen: str) -> tuple[asyncio.subprocess.Process, str]:
    """The bench's fake serving this workload over WebSocket (``ws`` or
    ``unix:PATH``), as a process of its own; its URL."""
    turn = opts["path"]
    spec = os.path.join(os.path.dirname(turn), "server.json")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, FAKE_SERVER, "--spec", spec, "--turn", turn, "--listen", listen, stdout=asyncio.subprocess.PIPE
    )
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 60)
    if not line.startswith(b"listening on: "):
        proc.kill()
        raise RuntimeError(f"the fake did not listen: {line!r}")
    return proc, line.decode().split(": ", 1)[1].strip()


async def _stop(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        proc.terminate()
    await asyncio.wait_for(proc.wait(), CLOSE_TIMEOUT)


async def client_ws(opts: Options) -> dict[str, Any]:
    """``client`` over WebSocket on TCP: the fake served by ``--listen ws``."""
    return await _client_over(opts, "ws")


async def client_unix(opts: Options) -> dict[str, Any]:
    """``client`` over WebSocket on a unix socket."""
    return await _client_over(opts, "unix:" + os.path.join(tempfile.mkdtemp(dir=opts["scratch"]), "fake.sock"))


async def _client_over(opts: Options, listen: str) -> dict[str, Any]:
    from codexmini import AppServerClient

    proc, url = await serve_fake(opts, listen)
    try:
        return await _client_turns(await AppServerClient.connect(url), opts)
    finally:
        await _stop(proc)


async def _client_turns(app: Any, opts: Options) -> dict[str, Any]:
    """``opts["turns"]`` turns on one thread of ``app`` (closed at the end), each timed from its first event."""
    from codexmini import AgentMessageDelta, Thread

    try:
        thread = await Thread.start(app)
        turns = []
        for _ in range(opts.get("turns", 1)):
            async with thread.turn("go", keep_items=opts.get("keep_items", True)) as turn:
                await turn.__anext__()  # the first event starts the clock
                start, cpu, before = time.perf_counter(), time.process_time(), counters()
                events, deltas = 1, 0
                async for event in turn:
                    events += 1
                    if type(event) is AgentMessageDelta:
                        deltas += 1
                seconds, cpu, used = time.perf_counter() - start, time.process_time() - cpu, since(before)
            assert turn.completed is not None
            turns.append(
                {
                    "seconds": seconds,
                    "cpu_seconds": cpu,
                    **used,
                    "events": events,
                    "deltas": deltas,
                    "status": turn.completed.status,
                    "items": len(turn.completed.items),
                    "rss_mb": rss_mb(),
                }
            )
        dropped = app.stats["dropped"]
    finally:
        await app.close()
    result = _turn_result(turns, opts["meta"])
    result["dropped"] = dropped
    return result


class _Watch:
    """The agent's ``on_event``: counts deltas, notes when the first event came."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.first: float | None = None
        self.first_cpu = 0.0
        self.before: dict[str, int] = {}
        self.deltas = 0
        self.events = 0

    def listener(self) -> Any:
        from codexmini import MessageDelta, PhaseChanged, SessionStarted

        # The agent's own lifecycle events come before it asks codex for the
        # turn: the clock starts at the first event of codex's turn, as the
        # client's does (not at the phase change, which would charge the agent
        # for the fake's answer to thread/start and turn/start).
        own = (PhaseChanged, SessionStarted)

        def on_event(event: Any) -> None:
            self.events += 1
            if type(event) is MessageDelta:  # the agent shows each delta once, as its MessageDelta
                self.deltas += 1
            elif self.first is None and type(event) not in own:
                self.first, self.first_cpu, self.before = time.perf_counter(), time.process_time(), counters()

        return on_event


def _agent(opts: Options, watch: _Watch) -> Any:
    """An agent on a fresh log in a fresh directory under ``opts["scratch"]``."""
    from codexmini import Agent, AgentConfig, Launch, SessionLog

    scratch = tempfile.mkdtemp(prefix="agent-", dir=opts["scratch"])
    ws, home = os.path.join(scratch, "ws"), os.path.join(scratch, "home")
    for d in (ws, home):
        os.makedirs(d, exist_ok=True)
    log = SessionLog.open(os.path.join(scratch, "session.jsonl"), fsync=False)
    config = AgentConfig(launch=Launch(codex_bin=opts["codex"], codex_home=home), cwd=ws)
    return Agent(log, config, on_event=watch.listener()), log


def _logged_text(events: Iterable[Mapping[str, Any]]) -> int:
    return sum(
        len(b.get("text", ""))
        for e in events
        if e["type"] == "assistant/message"
        for b in e["data"]["content"]
        if b.get("type") == "text"
    )


async def agent(opts: Options) -> dict[str, Any]:
    watch = _Watch()
    agent_, log = _agent(opts, watch)
    try:
        await agent_.start()
        turns = []
        for i in range(opts.get("turns", 1)):
            watch.reset()
            end = await agent_.run(f"go {i}")
            seconds, cpu = time.perf_counter() - (watch.first or 0.0), time.process_time() - watch.first_cpu
            turns.append(
                {
                    "seconds": seconds,
                    "cpu_seconds": cpu,
                    **since(watch.before),
                    "events": watch.events,
                    "deltas": watch.deltas,
                    "status": end["reason"],
                    "rss_mb": rss_mb(),
                }
            )
        peak = peak_rss_mb()
        log_bytes = os.path.getsize(log.path)
        log_events, logged_text = len(log.events), _logged_text(log.events)  # (read from the file)
    finally:
        await agent_.close()
        log.close()
        shutil.rmtree(os.path.dirname(log.path), ignore_errors=True)
    result = _turn_result(turns, opts["meta"])
    result.update(
        peak_rss_mb=peak,
        log_events=log_events,
        log_bytes=log_bytes,
        logged_text_chars=logged_text,
        delta_chars_expected=opts["meta"]["delta_chars"] * len(turns),
    )
    result["all_delivered"] = result["all_delivered"] and result["logged_text_chars"] == result["delta_chars_expected"]
    return result


def _read_lines(path: str) -> list[bytes]:
    with open(path, "rb") as fh:
        lines = fh.read().split(b"\n")
    lines.pop()  # after the last newline
    return lines


async def ceiling(opts: Options) -> dict[str, Any]:
    lines = _read_lines(opts["path"])
    loads = json.loads
    start, cpu = time.perf_counter(), time.process_time()
    for line in lines:
        loads(line.decode())
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    rate, cpu_rate = len(lines) / seconds, len(lines) / cpu
    turn = {"seconds": seconds, "cpu_seconds": cpu, "rate": rate, "cpu_rate": cpu_rate}
    return {"turns": [turn], "rate": rate, "cpu_rate": cpu_rate, "frames": len(lines)}


def _median_seconds(fn: Any, reps: int) -> tuple[float, float]:
    """Median (wall, CPU) seconds of ``fn()`` over ``reps`` calls."""
    import statistics

    wall, cpu = [], []
    for _ in range(reps):
        start, used = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - used)
    return statistics.median(wall), statistics.median(cpu)


async def session(opts: Options) -> dict[str, Any]:
    """A long agent session on one log: per-turn wall time, and serialization."""
    import statistics

    # Internal on purpose: serialization has no public entry point.
    from codexmini._prompt import derive_messages, serialize

    watch = _Watch()
    agent_, log = _agent(opts, watch)
    window = opts.get("window", 10)
    try:
        await agent_.start()
        seconds, cpu, ends, rss = [], [], [], []
        for i in range(opts["turns"]):
            watch.reset()
            start, cpu_start = time.perf_counter(), time.process_time()
            end = await agent_.run(f"turn {i}: go on")
            seconds.append(time.perf_counter() - start)
            cpu.append(time.process_time() - cpu_start)
            ends.append(len(log.events))
            rss.append(rss_mb())
            if end["reason"] != "completed" or watch.deltas != opts["meta"]["deltas"]:
                raise RuntimeError(f"turn {i} ended {end} with {watch.deltas} deltas")
        # The log's events as lists (read from the file once), as the agent held them until issue 29.
        events = list(log.events)
    finally:
        await agent_.close()
        log.close()
        shutil.rmtree(os.path.dirname(log.path), ignore_errors=True)
    short, long_ = events[: ends[window - 1]], events
    reps = opts.get("serialize_reps", 5)
    ser_short = _median_seconds(lambda: serialize(derive_messages(short)), reps)
    ser_long = _median_seconds(lambda: serialize(derive_messages(long_)), reps)
    return {
        "turn_seconds": seconds,
        "turn_cpu_seconds": cpu,
        "window": window,
        "first_ms": statistics.median(seconds[:window]) * 1e3,
        "last_ms": statistics.median(seconds[-window:]) * 1e3,
        "first_cpu_ms": statistics.median(cpu[:window]) * 1e3,
        "last_cpu_ms": statistics.median(cpu[-window:]) * 1e3,
        "serialize_short_ms": ser_short[0] * 1e3,
        "serialize_long_ms": ser_long[0] * 1e3,
        "serialize_short_cpu_ms": ser_short[1] * 1e3,
        "serialize_long_cpu_ms": ser_long[1] * 1e3,
        "prompt_chars_short": len(serialize(derive_messages(short))),
        "prompt_chars_long": len(serialize(derive_messages(long_))),
        "log_events": len(events),
        "rss_mb_after_window": rss[window - 1],
        "rss_mb_end": rss[-1],
        "all_delivered": True,
    }


CONTENDERS = {
    "raw": raw,
    "client": client,
    "client_ws": client_ws,
    "client_unix": client_unix,
    "agent": agent,
    "ceiling": ceiling,
    "session": session,
}

if __name__ == "__main__":
    sys.exit(main(CONTENDERS))
