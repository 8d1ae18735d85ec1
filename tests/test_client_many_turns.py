"""Many turns at once on one client: what a notification costs does not grow
with the threads open beside it.

Counted, never timed.  The routing of a read (``Connection.receive`` and the
client's dispatch) is counted in Python lines run and functions called
(``sys.settrace``, ``sys.setprofile``) with 1, 8 and 128 subscriptions open:
the same notifications cost the same operations.
The consumers' wakes are counted with 1 and 64 of them waiting on a
transport that hands over what it holds without waiting: each consumer wakes
once for :data:`~codexmini._client.FRAMES_PER_WAKE` frames, not once a read
(and :data:`~codexmini._client.ROUND_BYTES` at most between two runs of the
consumers, so a consumer's first frame does not wait behind a huge line), and
a lone consumer still runs after every read that brought it that many.
"""

from __future__ import annotations

import asyncio
import collections
import gc
import json
import sys
from typing import Any, Callable, Deque, Dict, List, Optional

import pytest

from codexmini import _client as client_mod
from codexmini._client import ALL, AppServerClient
from codexmini._errors import ProcessExited
from codexmini._rpc import Notification
from conformance.schema import FrameValidator

TURN = "01a22cd4-86f6-7ad1-910f-518dfda94649"
EMITTED = 1796048455375


def thread_id(i: int) -> str:
    return f"01a22cd4-0000-7000-8000-{i:012d}"


def delta(thread: str, text: str = "x ") -> Dict[str, Any]:
    params = {"threadId": thread, "turnId": TURN, "itemId": "msg_1", "delta": text}
    return {"method": "item/agentMessage/delta", "params": params, "emittedAtMs": EMITTED}


def lines(frames: List[Dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(f, separators=(",", ":")).encode() + b"\n" for f in frames)


class HeldTransport:
    """A transport holding prepared reads: once :meth:`open` is called,
    ``read()`` returns them one by one without waiting (as a pipe's
    ``StreamReader`` does while it holds bytes), then waits until closed."""

    pid = None
    stderr_tail = ""

    def __init__(self, reads: List[bytes]) -> None:
        loop = asyncio.get_running_loop()
        self.reads: Deque[bytes] = collections.deque(reads)
        self.gate: "asyncio.Future[None]" = loop.create_future()
        self.exited = asyncio.Event()
        self.returncode: Optional[int] = None
        self.given = 0  # reads handed over so far

    def open(self) -> None:
        if not self.gate.done():
            self.gate.set_result(None)

    async def read(self) -> bytes:
        await self.gate
        if self.reads:
            self.given += 1
            return self.reads.popleft()
        await self.exited.wait()
        return b""

    async def write(self, data: bytes) -> None:
        pass

    def close_input(self) -> None:
        self.returncode = 0
        self.exited.set()
        self.open()

    async def wait_exited(self) -> None:
        await self.exited.wait()

    def ended(self) -> ProcessExited:
        return ProcessExited(self.returncode, "")

    def signal(self, sig: int) -> None:
        self.close_input()

    async def aclose(self, timeout: float) -> None:
        pass


def test_client_many_turns_frames_are_the_protocol():
    assert FrameValidator(strict=True).check("in", delta(thread_id(1))) == []


# -- routing: operations per notification ------------------------------------------


def operations_of(fn: Callable[[], Any]) -> int:
    """What ``fn()`` executes: the Python lines it runs (``sys.settrace``)
    and the functions, Python or C, it calls (``sys.setprofile``)."""
    count = 0

    def profile(frame: Any, event: str, arg: Any) -> None:
        nonlocal count
        if event == "c_call":
            count += 1

    def trace(frame: Any, event: str, arg: Any) -> Any:
        nonlocal count
        count += 1  # "call" and every "line"
        return trace

    # Whatever traced before (coverage) is put back; what fn() runs is not measured by it.
    # The collector is off meanwhile: what a collection runs (weakref callbacks) is not fn()'s.
    traced, profiled, collecting = sys.gettrace(), sys.getprofile(), gc.isenabled()
    gc.collect()
    gc.disable()
    sys.setprofile(profile)
    sys.settrace(trace)
    try:
        fn()
    finally:
        sys.settrace(traced)
        sys.setprofile(profiled)
        if collecting:
            gc.enable()
    return count


async def routing_operations(open_threads: int, targets: int, everything: bool = False) -> int:
    """Operations to route one read of 256 deltas, with ``open_threads`` threads
    subscribed (and an ``ALL`` subscriber too, with ``everything``): the
    deltas go to the first ``targets`` threads in turn."""
    transport = HeldTransport([])
    client = AppServerClient(transport)
    client._taps = []  # the conformance tap's own work is not routing (the frames' shape: the test above)
    try:
        subs = [client.subscribe(thread_id(i)) for i in range(open_threads)]
        every = client.subscribe(ALL) if everything else None
        data = lines([delta(thread_id(i % targets)) for i in range(256)])
        warm = lines([delta(thread_id(i % targets)) for i in range(targets)])
        client._handle(client._conn.receive(warm))  # first calls of a path, caches: not what is counted
        count = operations_of(lambda: client._handle(client._conn.receive(data)))
        # Each delta went to its thread's queue, and to ALL's: no other queue holds anything.
        held = [sub.pending() for sub in subs]
        assert sum(held) == 256 + targets and held[targets:] == [0] * (open_threads - targets)
        assert every is None or every.pending() == 256 + targets
        return count
    finally:
        await client.close()


async def test_client_many_turns_routing_one_thread_costs_the_same_beside_1_or_128_open_threads():
    assert await routing_operations(1, 1) == await routing_operations(128, 1)


async def test_client_many_turns_routing_interleaved_threads_costs_the_same_for_8_or_128_of_them():
    # The frames of 8 threads in turn, or of 128: the previous frame's route is
    # never the next one's, so each costs a lookup -- one, however many are open.
    assert await routing_operations(8, 8) == await routing_operations(128, 128)
    assert await routing_operations(8, 8, everything=True) == await routing_operations(128, 128, everything=True)


# -- wakes: a consumer wakes for many frames, not for each read -------------------------


async def wakes(consumers: int, reads: int, per_thread: int) -> Dict[str, Any]:
    """``consumers`` subscriptions, each with a consumer waiting; ``reads``
    reads held, each with ``per_thread`` deltas of every thread (interleaved).
    How often the consumers had to wait, and the most one found queued."""
    frames = [delta(thread_id(t)) for _ in range(per_thread) for t in range(consumers)]
    transport = HeldTransport([lines(frames) for _ in range(reads)])
    client = AppServerClient(transport)
    expected = reads * per_thread
    waits, most = [0], [0]

    async def consume(sub: Any) -> None:
        for _ in range(expected):
            if not sub.pending():
                waits[0] += 1
            most[0] = max(most[0], sub.pending())
            await sub.get()

    try:
        subs = [client.subscribe(thread_id(t)) for t in range(consumers)]
        tasks = [asyncio.ensure_future(consume(sub)) for sub in subs]
        while not all(sub._waiter is not None for sub in subs):  # every consumer waits
            await asyncio.sleep(0)
        transport.open()
        await asyncio.wait_for(asyncio.gather(*tasks), 30)  # a hang guard, not a time limit
        return {"waits": waits[0], "most_queued": most[0], "frames": expected * consumers}
    finally:
        await client.close()


def reads_a_round(read: bytes) -> int:
    """How many reads like ``read`` a round takes at most (ROUND_BYTES, checked after each read)."""
    return -(-client_mod.ROUND_BYTES // len(read))


ONE_EACH_OF_64 = lines([delta(thread_id(t)) for t in range(64)])  # a read: one delta for each of 64 threads


async def test_client_many_turns_64_consumers_wake_once_for_many_frames_not_once_a_read():
    # 32 reads, each one delta for each of 64 threads: waking every consumer
    # after every read would be 32 wakes each (2,048 in all, one a frame).
    # A round reads on until each consumer it woke has FRAMES_PER_WAKE frames
    # (16 of these reads), well within ROUND_BYTES (41 of them).
    got = await wakes(consumers=64, reads=32, per_thread=1)
    per_wake = min(client_mod.FRAMES_PER_WAKE, reads_a_round(ONE_EACH_OF_64))
    assert per_wake == 16 < reads_a_round(ONE_EACH_OF_64) == 41
    assert got["waits"] <= got["frames"] // per_wake + 64
    assert got["waits"] * 8 <= got["frames"]


async def test_client_many_turns_a_round_reads_round_bytes_at_most(monkeypatch):
    # The same 64 consumers, the round capped at 11 of these reads: none finds
    # more than its share of a round queued (11 frames, 10 once it took the one
    # it waited for).  Without the cap the reader read on to a consumer's
    # FRAMES_PER_WAKE (16): a larger round.
    monkeypatch.setattr(client_mod, "ROUND_BYTES", 10 * len(ONE_EACH_OF_64) + 1)
    got = await wakes(consumers=64, reads=32, per_thread=1)
    assert got["most_queued"] == reads_a_round(ONE_EACH_OF_64) - 1 == 10 < client_mod.FRAMES_PER_WAKE - 1


async def test_client_many_turns_without_the_round_cap_a_round_is_larger(monkeypatch):
    monkeypatch.setattr(client_mod, "ROUND_BYTES", 1 << 30)
    got = await wakes(consumers=64, reads=32, per_thread=1)
    assert got["most_queued"] == client_mod.FRAMES_PER_WAKE - 1


async def first_frame_after(cap: Optional[int], monkeypatch: Any) -> Dict[str, int]:
    """A delta, then a 2 MiB delta arriving in 64 reads: how many reads the
    transport had handed over when the consumer got the first delta."""
    if cap is not None:
        monkeypatch.setattr(client_mod, "ROUND_BYTES", cap)
    big = lines([delta(thread_id(0), "y" * (64 << 15))])
    first = lines([delta(thread_id(0))])
    reads = [first + big[: 1 << 15]] + [big[i : i + (1 << 15)] for i in range(1 << 15, len(big), 1 << 15)]
    transport = HeldTransport(reads)
    client = AppServerClient(transport)

    async def consume(sub: Any) -> Dict[str, int]:
        await sub.get()
        seen = transport.given
        assert len((await sub.get())["params"]["delta"]) == 64 << 15
        return {"seen": seen, "reads": len(reads)}

    try:
        sub = client.subscribe(thread_id(0))
        consumer = asyncio.ensure_future(consume(sub))
        while sub._waiter is None:  # the consumer waits
            await asyncio.sleep(0)
        transport.open()
        return await asyncio.wait_for(consumer, 30)  # a hang guard, not a time limit
    finally:
        await client.close()


async def test_client_many_turns_a_first_frame_does_not_wait_behind_a_huge_line(monkeypatch):
    got = await first_frame_after(None, monkeypatch)
    assert got["seen"] <= reads_a_round(b"x" * (1 << 15)) < got["reads"]


async def test_client_many_turns_without_the_round_cap_the_first_frame_waited_for_the_huge_line(monkeypatch):
    got = await first_frame_after(1 << 30, monkeypatch)
    assert got["seen"] == got["reads"]


async def test_client_many_turns_the_old_rule_woke_every_consumer_after_every_read(monkeypatch):
    # The same, with the reader letting the consumers run after every read
    # (what it did before): a wake a frame.  The test above can fail.
    monkeypatch.setattr(client_mod, "FRAMES_PER_WAKE", 0)
    got = await wakes(consumers=64, reads=32, per_thread=1)
    assert got["waits"] == got["frames"]


async def test_client_many_turns_a_lone_consumer_still_runs_after_each_read():
    # One thread, reads of 20 deltas (at least FRAMES_PER_WAKE): the consumer
    # takes each read's frames before the next read is decoded, so they die young.
    assert client_mod.FRAMES_PER_WAKE <= 20
    got = await wakes(consumers=1, reads=10, per_thread=20)
    assert got["most_queued"] <= 20 and got["waits"] == 10


def live_notifications(thread: str) -> int:
    """The core's Notification tuples alive for ``thread``."""
    return sum(type(o) is Notification and o.route == thread for o in gc.get_objects())


async def test_client_many_turns_the_reader_keeps_nothing_of_a_read_once_routed():
    # A thread's own queue keeps each notification's method and params; the
    # core's Notification tuples, and the frames they hold, die once the read
    # is routed -- not when the next read comes, which at a lull (between two
    # turns, a consumer waiting on a tool) may be long: the whole read lived
    # on, young, and every young collection meanwhile walked it.
    thread = thread_id(0x5EAD)  # one no other test uses
    transport = HeldTransport([lines([delta(thread) for _ in range(50)])])
    client = AppServerClient(transport)
    try:
        sub = client._subscribe(thread, pairs=True)
        transport.open()
        while transport.given < 1 or sub.pending() < 50:
            await asyncio.sleep(0)
        await asyncio.sleep(0)  # the reader goes on to await the next read
        assert client._reader is not None and not client._reader.done()
        assert len(sub._items) == 100 and live_notifications(thread) == 0
    finally:
        await client.close()


@pytest.mark.parametrize("reads", [1, 3])
async def test_client_many_turns_a_read_that_woke_few_still_reaches_them_when_the_transport_runs_dry(reads):
    # 64 consumers, a delta each in each read, far fewer frames than
    # FRAMES_PER_WAKE a consumer: the reader never yields for them, yet each
    # consumer gets every frame once the transport has nothing more to hand over.
    got = await wakes(consumers=64, reads=reads, per_thread=1)
    assert got["waits"] == 64
