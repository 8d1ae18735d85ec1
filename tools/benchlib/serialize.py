"""Prompt serialization of a long session log: does the cost stay linear?

One contender, ``scaling``: the prompt of a synthetic but realistic log of
``events`` events (turns of user messages, assistant segments with tool calls,
tool results of varied size, step and turn markers: the shapes of
docs/session-log.md and the recorded goldens), timed several ways:

* ``prompt`` -- as the agent builds it when it resumes the log: the file
  streamed into a :class:`Transcript` (``Transcript().extend(read
  events).text()``).  Every rep's prompt is kept until the process ends, so
  each build writes into memory the process has not used before, at both
  sizes: a resumed agent builds its prompt once, and extends it afterwards;
* ``memory`` -- the same from the events held in memory (rendering and
  joining alone), kept the same way;
* ``recycled`` -- the same, each rep's prompt dropped at once (the figure's
  definition until the log was read lazily): the next rep then reuses the
  freed memory -- at 10k events, that is; glibc gives a block over 32 MiB
  back to the kernel when it is freed, so the 100k prompt (60 MB) is faulted
  in anew every time.  Two allocator regimes, not one algorithm;
* ``serialize`` -- the two-stage ``serialize(derive_messages(events))``, whose
  list of messages stays alive while it renders (and ``serialize_gc_off``,
  the same with the collector off; its cumulative ``stages``).

The bench runs it for 10k and for 100k events, each in its own processes,
interleaved; the generator is deterministic, so the short log is the long
one's prefix.  :func:`write_log` writes such a log (also the ``log``
section's big one: :mod:`.biglog`).

The functions are internal (``codexmini._prompt``): serialization has no
public entry point, and this bench is allowed to know that.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from collections.abc import Iterator
from typing import Any

from .child import Options, main

WORDS = ("the", "log", "turn", "step", "file", "test", "passes", "reads", "a", "frame", "codex", "é", "—", "`x`")


class LogWriter:
    """Session-log events (docs/session-log.md) with increasing ``seq``."""

    def __init__(self, seed: int = 4, scale: float = 1.0) -> None:
        self.rng = random.Random(seed)
        self.scale = scale  # every text this many times as long
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
        n = self.rng.randint(int(lo * self.scale), int(hi * self.scale))
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


def iter_synthetic_log(count: int, seed: int = 4, scale: float = 1.0) -> Iterator[dict[str, Any]]:
    """The first ``count`` events of the synthetic log, one at a time."""
    writer = LogWriter(seed, scale)
    yield writer.event(
        "session/header",
        {
            "reason": "initial",
            "provider": "codex",
            "model": "gpt-5.4",
            "codexVersion": "0.149.1",
            "codexminiVersion": "0.1.0",
        },
    )
    made, number = 1, 1
    while made < count:
        for event in writer.turn(number):
            if made == count:
                return
            yield event
            made += 1
        number += 1


def synthetic_log(count: int, seed: int = 4, scale: float = 1.0) -> list[dict[str, Any]]:
    return list(iter_synthetic_log(count, seed, scale))


def write_log(path: str, count: int, scale: float = 1.0) -> int:
    """Write the synthetic log of ``count`` events to ``path`` as the session
    log writes it (one :func:`encode_event` line each); its size in bytes."""
    from codexmini._session import encode_event

    with open(path, "w", encoding="utf-8") as fh:
        for event in iter_synthetic_log(count, scale=scale):
            fh.write(encode_event(event))
    return os.path.getsize(path)


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


#: The ways that time the log held in memory (``prompt`` reads the file).
IN_MEMORY = ("memory", "recycled", "serialize", "serialize_gc_off", "derive", "render", "join")


async def scaling(opts: Options) -> dict[str, Any]:
    """Median times of the prompt of one log of ``events`` (``prompt``: of
    the file ``path`` holding it), the ``ways`` the module says (default:
    all).  One size per process; the bench runs ``prompt`` in processes of
    its own, whose heap holds no log, as a resumed agent's does not.
    """
    import gc
    import statistics

    from codexmini._prompt import Transcript, derive_messages, serialize
    from codexmini._session import iter_log

    path = opts.get("path")
    wanted = opts.get("ways") or ["prompt", *IN_MEMORY]
    # The log in memory only for the ways that read it there: a resumed agent
    # holds none of it, and the collector walks whatever the heap holds.
    events = synthetic_log(opts["events"]) if set(wanted) - {"prompt"} else []
    kept: list[str] = []  # the prompts of the ways that keep theirs (see the module)

    def keep(text: str) -> None:
        kept.append(text)

    ways: dict[str, Any] = {
        "prompt": lambda: keep(Transcript().extend(iter_log(path)).text()),
        "memory": lambda: keep(Transcript().extend(events).text()),
        "recycled": lambda: Transcript().extend(events).text(),
        "serialize": lambda: serialize(derive_messages(events)),
        "serialize_gc_off": lambda: serialize(derive_messages(events)),
        **(_stages(events) if opts.get("stages", True) else {}),
    }
    ways = {w: fn for w, fn in ways.items() if w in wanted}
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
        "events": opts["events"],
        "prompt_chars": len(Transcript().extend(iter_log(path) if path else events).text()),
        "log_bytes": os.path.getsize(path) if path else None,
        "seconds": times,
        "median_seconds": {w: statistics.median(v) for w, v in times.items()},
        "cpu_seconds": cpu,
        "median_cpu_seconds": {w: statistics.median(v) for w, v in cpu.items()},
    }


CONTENDERS = {"scaling": scaling}

if __name__ == "__main__":
    sys.exit(main(CONTENDERS))
