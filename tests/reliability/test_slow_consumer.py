"""A slow consumer loses nothing by default, and holds memory to its bound.

Two threads stream on one connection to a fake codex *process* over a real
pipe (tests/reliability/slow_consumer.py, run in a process of its own so
that its peak RSS is the conversation's alone); thread A's consumer is slow,
thread B's is not.  With back-pressure (``Limits.overflow="wait"``, the
default) every event reaches both consumers, none is dropped, and a queue
never holds more than its size plus what one read of the pipe brought --
and B's stream ends with A's: what back-pressure costs the other threads of
a connection.  With ``overflow="drop"`` B ends long before A, and A's
consumer gets what its queue could hold.  The figures are counts, and the
peak RSS of each run (printed, never asserted).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any, Dict

import figures

from codexmini._process import READ_CHUNK

HERE = os.path.dirname(os.path.abspath(__file__))
#: A delta frame of the flood is longer than this (so one read holds fewer frames).
MIN_FRAME = 100


def flood(tmp_path: Any, overflow: str) -> Dict[str, Any]:
    out = subprocess.run(
        [sys.executable, os.path.join(HERE, "slow_consumer.py"), overflow, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def test_slow_consumer_back_pressure_delivers_every_event_within_the_queue_bound(tmp_path):
    got = flood(tmp_path, "wait")
    assert got["a"]["delivered"] == got["b"]["delivered"] == got["sent"]
    assert got["dropped"] == 0 and got["stalled"] == 0
    assert got["paused"] > 0  # the slow consumer held the reader
    for seen in (got["a"], got["b"]):
        assert seen["peak"] <= got["queue"] + READ_CHUNK // MIN_FRAME
    section = "slow consumer (2 threads x 20,000 deltas, queue 500, one consumer slow)"
    figures.record(section, "back-pressure: events delivered / dropped", (2 * got["sent"], got["dropped"]))
    figures.record(section, "back-pressure: longest queue seen (frames)", max(got["a"]["peak"], got["b"]["peak"]))
    figures.record(section, "back-pressure: peak RSS (MiB)", round(got["rss_kib"] / 1024, 1))
    figures.record(
        section,
        "back-pressure: the fast thread's stream ended at (s; the slow one's)",
        (round(got["b"]["ended"], 2), round(got["a"]["ended"], 2)),
    )


def test_slow_consumer_dropping_queue_frees_the_fast_thread_and_counts_every_drop(tmp_path):
    got = flood(tmp_path, "drop")
    a, b = got["a"], got["b"]
    assert a["delivered"] + b["delivered"] + got["dropped"] == 2 * got["sent"]
    assert got["dropped"] > 0 and got["paused"] == 0
    for seen in (a, b):
        assert seen["peak"] <= got["queue"] + 1  # turn/completed passes a full dropping queue
    section = "slow consumer (2 threads x 20,000 deltas, queue 500, one consumer slow)"
    figures.record(
        section, "overflow='drop': events delivered / dropped", (a["delivered"] + b["delivered"], got["dropped"])
    )
    figures.record(section, "overflow='drop': peak RSS (MiB)", round(got["rss_kib"] / 1024, 1))
    figures.record(
        section,
        "overflow='drop': the fast thread's stream ended at (s; the slow one's)",
        (round(b["ended"], 2), round(a["ended"], 2)),
    )
