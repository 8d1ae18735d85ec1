#!/usr/bin/env python3
"""``make bench``: codexmini's read path as a ratio against raw ``json.loads``.

Absolute times depend on the machine; ratios measured in the same run do not
(much).  A child process writes the same byte stream to a pipe for every
contender; each contender reads it to the end:

* **baseline** -- asyncio chunk reads, ``split(b"\\n")``, ``json.loads`` per
  line: the least a Python reader of this protocol must do;
* **decoder** -- the same reads through :class:`codexmini._wire.LineDecoder`
  (framing, cap, classification);
* **client** -- a full :class:`codexmini._client.AppServerClient`: decoder,
  dispatch, routing to a thread subscription, consumed by a task;
* **client+validator** -- the same with the conformance suite's strict frame
  validator tapped in (what every test pays).

Two workloads: 20,000 small streaming deltas (the common case), and 40 lines
of 1.2 MB (the biggest frame codex 0.149.1 was seen to send).  Each result is
the best of ``--repeat`` runs.  Nothing here asserts a threshold.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from codexmini import _wire as wire  # noqa: E402
from codexmini._client import ALL, AppServerClient  # noqa: E402

THREAD = "01a22cd4-86d8-7bb1-a4b3-76b6caecb517"
TURN = "01a22cd4-86f6-7ad1-910f-518dfda94649"

INIT = {"userAgent": "bench", "codexHome": "/var/tmp/bench", "platformFamily": "unix", "platformOs": "linux"}


def delta(text: str) -> dict:
    return {
        "method": "item/agentMessage/delta",
        "params": {"threadId": THREAD, "turnId": TURN, "itemId": "msg_1", "delta": text},
        "emittedAtMs": 1796048455375,
    }


WORKLOADS = {
    "20k small deltas": [delta(f"token {i} ") for i in range(20000)],
    "40 x 1.2 MB lines": [delta("x" * 1_200_000) for _ in range(40)],
}

# The child: answer initialize, then write the workload file to stdout.
WRITER = r"""
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("method") == "initialize":
        sys.stdout.write(json.dumps({"id": msg["id"], "result": %s}) + "\n"); sys.stdout.flush()
    elif msg.get("method") == "initialized":
        break
with open(sys.argv[1], "rb") as fh:
    while True:
        chunk = fh.read(1 << 20)
        if not chunk:
            break
        sys.stdout.buffer.write(chunk)
sys.stdout.buffer.flush()
""" % json.dumps(INIT)


async def raw_child(path: str):
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", WRITER, path, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    assert proc.stdin and proc.stdout
    proc.stdin.write(wire.encode({"id": 1, "method": "initialize", "params": {}}) + wire.encode({"method": "initialized"}))
    await proc.stdin.drain()
    return proc


async def baseline(path: str, count: int) -> float:
    proc = await raw_child(path)
    start = time.perf_counter()
    seen, rest = 0, b""
    while True:
        chunk = await proc.stdout.read(1 << 16)
        if not chunk:
            break
        lines = (rest + chunk).split(b"\n")
        rest = lines.pop()
        for line in lines:
            json.loads(line)
            seen += 1
    elapsed = time.perf_counter() - start
    await proc.wait()
    assert seen == count + 1, seen  # + the initialize response
    return elapsed


async def decoder(path: str, count: int) -> float:
    proc = await raw_child(path)
    start = time.perf_counter()
    dec = wire.LineDecoder()
    seen = 0
    while True:
        chunk = await proc.stdout.read(1 << 16)
        if not chunk:
            break
        for item in dec.feed(chunk):
            wire.classify(item)
            seen += 1
    elapsed = time.perf_counter() - start
    await proc.wait()
    assert seen == count + 1, seen
    return elapsed


async def client(path: str, count: int, validate: bool = False) -> float:
    tap = None
    if validate:
        from conformance.schema import FrameValidator

        tap = FrameValidator(strict=True).tap
    c = AppServerClient([sys.executable, "-c", WRITER, path], tap=tap, queue_size=count + 10)
    await c.spawn()
    sub = c.subscribe(ALL)
    start = time.perf_counter()
    await c.initialize()
    seen = 0
    while seen < count:
        await sub.get()
        seen += 1
    elapsed = time.perf_counter() - start
    await c.close()
    return elapsed


CONTENDERS = {
    "baseline (json.loads)": baseline,
    "wire.LineDecoder": decoder,
    "AppServerClient": client,
    "AppServerClient + validator": lambda p, n: client(p, n, validate=True),
}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    import tempfile

    print(f"python {sys.version.split()[0]}, best of {args.repeat}; ratios against the baseline of the same run\n")
    for name, frames in WORKLOADS.items():
        with tempfile.NamedTemporaryFile("wb", suffix=".jsonl", delete=False) as fh:
            for frame in frames:
                fh.write(wire.encode(frame))
            path = fh.name
        size = os.path.getsize(path)
        try:
            results = {}
            for label, fn in CONTENDERS.items():
                best = min(asyncio.run(fn(path, len(frames))) for _ in range(args.repeat))
                results[label] = best
            base = results["baseline (json.loads)"]
            print(f"{name} ({size / 1e6:.1f} MB)")
            for label, seconds in results.items():
                print(f"  {label:30s} {seconds / base:6.2f}x   ({size / seconds / 1e6:7.1f} MB/s)")
            print()
        finally:
            os.unlink(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
