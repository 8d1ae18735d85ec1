"""Prompt serialization of a long session log: does the cost stay linear?

One contender, ``scaling``: build a synthetic but realistic log of ``events``
events (turns of user messages, assistant segments with tool calls, tool
results of varied size, step and turn markers: the shapes of
docs/session-log.md and the recorded goldens) and time the prompt of it, as the agent renders it
(``Transcript().extend(events).text()``) and as the two-stage
``serialize(derive_messages(events))``.  The bench runs it for 10k and for
100k events, each in its own processes, interleaved; the generator is
deterministic, so the short log is the long one's prefix.

The functions are internal (``codexmini._prompt``): serialization has no
public entry point, and this bench is allowed to know that.
"""

from __future__ import annotations

import json
import random
import sys
import time
from collections.abc import Iterator
from typing import Any

from .child import Options, main

WORDS = ("the", "log", "turn", "step", "file", "test", "passes", "reads", "a", "frame", "codex", "é", "—", "`x`")


class LogWriter:
    """Session-log events (docs/session-log.md) with increasing ``seq``."""

    def __init__(self, seed: int = 4) -> None:
        self.rng = random.Random(seed)
        self.seq = 0
        self.ids = 0
        # Text is cut from one random corpus: as varied as fresh words, far cheaper.
        self.corpus = " ".join(self.rng.choices(WORDS, k=1 << 18))

    def event(self, type_: str, data: dict[str, Any], turn: Any = None, step: Any = None) -> dict[str, Any]:
        event = {
            "v": 1,
            "seq": self.seq,
            "ts": 1796048455.0 + self.seq,
            "type": type_,
            "turn": turn,
            "step": step,
            "data": data,
        }
        self.seq += 1
        return event

    def text(self, lo: int, hi: int) -> str:
        n = self.rng.randint(lo, hi)
        start = self.rng.randrange(len(self.corpus) - n)
        return self.corpus[start : start + n]

    def new_id(self) -> str:
        self.ids += 1
        return f"id-{self.ids:08d}"

    def turn(self, number: int) -> Iterator[dict[str, Any]]:
        usage = {
            "inputTokens": 2200,
            "cachedInputTokens": 2048,
            "outputTokens": 60,
            "reasoningOutputTokens": 0,
            "totalTokens": 2260,
        }
        source = {"provider": "codex", "model": "gpt-5.4"}
        yield self.event("turn/start", {}, number)
        step = 1
        yield self.event("step/start", {}, number, step)
        content = [{"type": "text", "text": self.text(20, 400)}]
        yield self.event(
            "user/message", {"id": self.new_id(), "content": content, "source": {"kind": "user"}}, number, step
        )
        for _ in range(self.rng.randint(1, 4)):  # segments that call a tool
            call = f"call_{self.new_id()}"
            args = json.dumps({"command": f"rg -n {self.text(3, 30)!r} src"})
            blocks = [
                {"type": "reasoning", "text": self.text(0, 200)},
                {"type": "text", "text": self.text(40, 600)},
                {"type": "tool-call", "id": call, "name": "bash", "arguments": args},
            ]
            yield self.event(
                "assistant/message", {"id": self.new_id(), "content": blocks, "source": source}, number, step
            )
            yield self.event(
                "tool/call",
                {"callId": call, "name": "bash", "arguments": args, "kind": "commandExecution"},
                number,
                step,
            )
            result = [{"type": "text", "text": self.text(0, 3000)}]
            data = {"callId": call, "content": result, "isError": self.rng.random() < 0.1, "status": "completed"}
            yield self.event("tool/result", data, number, step)
            yield self.event("step/end", {"reason": "segment"}, number, step)
            step += 1
            yield self.event("step/start", {}, number, step)
        final = [{"type": "text", "text": self.text(20, 1200)}]
        yield self.event(
            "assistant/message", {"id": self.new_id(), "content": final, "source": source, "usage": usage}, number, step
        )
        yield self.event("step/end", {"reason": "completed"}, number, step)
        yield self.event("turn/end", {"reason": "completed", "usage": usage}, number)


def synthetic_log(count: int, seed: int = 4) -> list[dict[str, Any]]:
    writer = LogWriter(seed)
    events = [
        writer.event(
            "session/header",
            {
                "reason": "initial",
                "provider": "codex",
                "model": "gpt-5.4",
                "codexVersion": "0.149.1",
                "codexminiVersion": "0.1.0",
            },
        )
    ]
    number = 1
    while len(events) < count:
        events.extend(writer.turn(number))
        number += 1
    return events[:count]


def _time(fn: Any) -> tuple[float, float]:
    """(wall, CPU) seconds of ``fn()``.  CPU time is the figure: on a busy machine
    a call shorter than a scheduler slice runs at full speed while a long one is
    time-shared, which makes wall time look superlinear when it is not."""
    start, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - start, time.process_time() - cpu


def _stages(events: list[dict[str, Any]]) -> dict[str, Any]:
    """``serialize(derive_messages(events))`` cut into its three stages."""
    from codexmini._prompt import SEPARATOR, derive_messages, render_section

    return {
        "derive": lambda: derive_messages(events),
        "render": lambda: [render_section(m) for m in derive_messages(events)],
        "join": lambda: SEPARATOR.join(render_section(m) for m in derive_messages(events)),
    }


def _fix_mmap_threshold(nbytes: int) -> None:
    """glibc's ``mallopt(M_MMAP_THRESHOLD, nbytes)``: every block past ``nbytes``
    gets fresh pages from the kernel, at any log size.  By default the threshold
    grows with each freed block up to 32 MiB, so a 10k-event prompt (6 MB) is
    served from recycled heap while a 100k-event one (60 MB) is faulted in anew
    on every call: two allocator regimes, not one algorithm."""
    import ctypes
    import ctypes.util

    M_MMAP_THRESHOLD = -3
    mallopt = getattr(ctypes.CDLL(ctypes.util.find_library("c")), "mallopt", None)
    if mallopt is None or not mallopt(M_MMAP_THRESHOLD, nbytes):  # glibc takes any size up to 32 MiB
        raise RuntimeError(f"mallopt(M_MMAP_THRESHOLD, {nbytes}): this C library has no mallopt or refused it")


async def scaling(opts: Options) -> dict[str, Any]:
    """Median times of the prompt of one log of ``events``.

    ``prompt`` is what the agent runs (:class:`Transcript`, message by message;
    a resumed session renders its whole log this way); ``serialize`` is the
    two-stage composition ``serialize(derive_messages(log))``, whose list of
    messages stays alive while it renders.  To tell the algorithm from memory
    effects: ``serialize`` with the collector off, its cumulative stages
    (derive, + render, + join), and (``mmap_threshold``) glibc's allocator held
    to one regime.  One size per process: the heap holds that log only, as an
    agent's does.
    """
    import gc
    import statistics

    from codexmini._prompt import Transcript, derive_messages, serialize

    if opts.get("mmap_threshold"):
        _fix_mmap_threshold(opts["mmap_threshold"])
    events = synthetic_log(opts["events"])
    ways: dict[str, Any] = {
        "prompt": lambda: Transcript().extend(events).text(),
        "serialize": lambda: serialize(derive_messages(events)),
        "serialize_gc_off": lambda: serialize(derive_messages(events)),
        **(_stages(events) if opts.get("stages", True) else {}),
    }
    ways = {w: fn for w, fn in ways.items() if w in opts.get("ways", ways)}
    times: dict[str, list[float]] = {w: [] for w in ways}
    cpu: dict[str, list[float]] = {w: [] for w in ways}
    for _ in range(opts.get("reps", 5)):
        for way, fn in ways.items():
            if way.endswith("_gc_off"):
                gc.disable()
            try:
                wall, used = _time(fn)
                times[way].append(wall)
                cpu[way].append(used)
            finally:
                gc.enable()
    return {
        "events": len(events),
        "prompt_chars": len(Transcript().extend(events).text()),
        "seconds": times,
        "median_seconds": {w: statistics.median(v) for w, v in times.items()},
        "cpu_seconds": cpu,
        "median_cpu_seconds": {w: statistics.median(v) for w, v in cpu.items()},
    }


CONTENDERS = {"scaling": scaling}

if __name__ == "__main__":
    sys.exit(main(CONTENDERS))
