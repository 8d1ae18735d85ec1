"""What every contender process shares: its command line, its result, its peak RSS.

A contender module ends with ``child.main(CONTENDERS)``; it is then run as
``python -m tools.benchlib.<module> NAME 'OPTIONS-JSON'``, calls the coroutine
``CONTENDERS[NAME](options)`` under one deadline, adds its peak RSS, and
prints the result as the last line of stdout.  This module imports nothing
beyond what the raw reader needs anyway (``asyncio``, ``json``), so the raw
reader's RSS is the floor the others are compared with.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Awaitable, Mapping
from typing import Any, Callable

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
Options = dict[str, Any]
Contender = Callable[[Options], Awaitable[dict[str, Any]]]


def proc_status_kb(field: str) -> int:
    """A ``/proc/self/status`` field in kB (``VmHWM`` = peak RSS); 0 where there is no /proc."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def counters() -> dict[str, int]:
    """This process's page faults and context switches so far (``getrusage``)."""
    import resource

    ru = resource.getrusage(resource.RUSAGE_SELF)
    return {"minor_faults": ru.ru_minflt, "voluntary_switches": ru.ru_nvcsw, "involuntary_switches": ru.ru_nivcsw}


def since(before: dict[str, int]) -> dict[str, int]:
    now = counters()
    return {k: now[k] - v for k, v in before.items()}


def peak_rss_mb() -> float:
    return round(proc_status_kb("VmHWM") / 1024, 1)


def rss_mb() -> float:
    return round(proc_status_kb("VmRSS") / 1024, 1)


class Collector:
    """What the cyclic garbage collector did in this process: collections and
    CPU seconds per generation (``gc.callbacks``)."""

    def __init__(self) -> None:
        import gc
        import time

        self._clock = time.process_time
        self._started = 0.0
        self.collections = [0, 0, 0]
        self.seconds = [0.0, 0.0, 0.0]
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = self._clock()
            return
        generation = info["generation"]
        self.collections[generation] += 1
        self.seconds[generation] += self._clock() - self._started

    def figures(self) -> dict[str, Any]:
        return {"collections": self.collections, "seconds": [round(s, 6) for s in self.seconds]}


def main(contenders: Mapping[str, Contender], argv: Any = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    name, options = args[0], json.loads(args[1]) if len(args) > 1 else {}
    # options["gc"]: "watch" counts the collector's work, "off" disables it and
    # counts too (none, then): a diagnosis, tools/benchlib/gcstats.py; the
    # bench leaves the collector alone.
    collector = Collector() if options.get("gc") in ("watch", "off") else None
    if options.get("gc") == "off":
        import gc

        gc.disable()
    result = asyncio.run(asyncio.wait_for(contenders[name](options), options.get("timeout", 300)))
    if collector is not None:
        result["gc"] = collector.figures()
    result.setdefault("peak_rss_mb", peak_rss_mb())
    result["contender"] = name
    result["python"] = sys.version.split()[0]
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    return 0
