#!/usr/bin/env python3
"""``make bench``: codexmini against baselines measured in the same run.

Every figure is a ratio to a baseline of this run, on the same pipe and the
same interpreter; absolute numbers are in ``--json`` only as the raw data
behind the ratios.  Sections (issue 11):

1. **stream** -- one turn of 200,000 notifications (90% deltas, from the
   recorded shapes), served by a fake app-server, read by the raw asyncio
   reader, codexmini's ``Thread.turn()`` and the whole ``Agent``; plus the
   ``json.loads`` ceiling, 3 turns in a row on one thread, and a 100-turn agent
   session on one log;
2. **large** -- one 8 MiB ``item/completed`` line, codexmini vs the raw reader;
3. **imports** -- ``python -X importtime``: ``import codexmini``,
   ``import codexmini._mapping`` and the public imports (``from codexmini
   import AppServerClient``, ``from codexmini import Agent``, ``import
   codexmini.sync``) vs ``import asyncio``;
4. **serialize** -- prompt serialization of a 10k vs a 100k-event log;
5. **e2e** -- one scripted turn against the real codex binary, codexmini vs a
   minimal raw JSON-RPC client;
6. **concurrency** -- 1, 8, 32 and 128 turns streaming at once on one client:
   threads of the bench's fake over stdio (the client the bottleneck), and of
   one real codex server (``--listen ws://``) with the scripted model (and up
   to 32 on as many connections); events/s of all turns together, the
   client's peak RSS and what each turn added to it; and the fake's turns
   read by a minimal asyncio client, a task a turn (the floor);
7. **log** -- a session log of a million events (about 1 GB, written into the
   scratch directory and deleted after): ``SessionLog.open``, ``read_log``,
   ``iter_log`` and a resumed agent's prompts, memory growth and MB/s.

The stream section also reads the same turn over WebSocket (TCP and a unix
socket: the fake served by ``--listen``), as ratios to the stdio client.

Each contender runs in a fresh interpreter (``--python``, default this one), so
its peak RSS is its own; competing contenders run interleaved, medians
reported.  How each part works: ``tools/benchlib/``.  Targets are shown, never
asserted.

Wall time is what the issue's figures are defined on; each timed window also
records the process's CPU time, shown as "the same, CPU time" rows.  On a
machine shared with other work (the stream section prints how much of a core
each reader got), those are the steadier figures: run to run, the CPU-time
rates here vary by about 2%, the wall-time rates by up to 20%.

    python tools/bench.py [--quick] [--json FILE] [--python PATH] [--only SECTIONS] [--skip SECTIONS]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Callable

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from tools.benchlib import imports as import_cost  # noqa: E402 - after the sys.path line above
from tools.benchlib import serialize as serialize_bench  # noqa: E402 - after the sys.path line above
from tools.benchlib import workload  # noqa: E402 - after the sys.path line above
from tools.benchlib.biglog import STEP  # noqa: E402 - after the sys.path line above
from tools.benchlib.e2e import find_native_codex  # noqa: E402 - after the sys.path line above
from tools.benchlib.report import Section, figures_of, kfmt, median, render, targets_for  # noqa: E402 - after the sys.path line above
from tools.benchlib.runner import BenchError, Runner, child_env, run_process  # noqa: E402 - after the sys.path line above

SECTIONS = ("stream", "turns", "session", "large", "imports", "serialize", "e2e", "concurrency", "log")


@dataclass(frozen=True)
class Mode:
    """How much of everything: runs per contender and workload sizes."""

    stream_runs: int
    notifications: int
    turns_runs: int
    turns_notifications: int
    session_runs: int
    session_turns: int
    session_notifications: int
    large_runs: int
    large_bytes: int
    import_runs: int
    serialize_runs: int
    serialize_reps: int
    serialize_events: Sequence[int]
    serialize_stages: bool
    log_runs: int
    log_events: int
    log_small_events: int
    e2e_runs: int
    concurrency_runs: int
    concurrency_deltas: int
    concurrency_ns: Sequence[int]
    concurrency_notifications: int = 2_000  # a turn of the fake's, in the concurrency section


MODES = {
    "full": Mode(
        5,
        200_000,
        5,
        200_000,
        3,
        100,
        2_000,
        7,
        8 << 20,
        9,
        3,
        5,
        (10_000, 100_000),
        True,
        1,
        1_000_000,
        10_000,
        11,
        3,
        300,
        (1, 8, 32, 128),
    ),
    "quick": Mode(
        2,
        200_000,
        1,
        50_000,
        1,
        100,
        2_000,
        3,
        8 << 20,
        5,
        1,
        2,
        (10_000, 100_000),
        False,
        1,
        200_000,
        10_000,
        2,
        1,
        300,
        (1, 8, 32, 128),
    ),
    # The tests' workload: every building block once, in seconds.
    "tiny": Mode(
        1, 200, 1, 200, 1, 4, 200, 1, 64 << 10, 1, 1, 1, (500, 5_000), True, 1, 2_000, 200, 1, 1, 20, (1, 8), 200
    ),
}


class Bench:
    """One bench run: the interpreter, the scratch directory, the results."""

    def __init__(self, python: str, mode: Mode, scratch: str, runner: Runner) -> None:
        self.python = python
        self.mode = mode
        self.scratch = scratch
        self.runner = runner
        self.turns: dict[str, dict[str, Any]] = {}
        self.raw: dict[str, Any] = {}

    def build(self, sections: Sequence[str]) -> None:
        shapes = workload.recorded_shapes()
        m = self.mode
        wanted = {
            "stream": ("stream", lambda: workload.stream_turn(shapes, m.notifications)),
            "turns": ("turns", lambda: workload.stream_turn(shapes, m.turns_notifications)),
            "session": ("session", lambda: workload.stream_turn(shapes, m.session_notifications)),
            "large": ("large", lambda: workload.large_frame_turn(shapes, m.large_bytes)),
            "concurrency": ("concurrency", lambda: workload.stream_turn(shapes, m.concurrency_notifications)),
        }
        todo = {name: build for s, (name, build) in wanted.items() if s in sections}
        self.turns = workload.prepare(self.scratch, self.python, {n: b() for n, b in todo.items()})

    def opts(self, turn: str, **extra: Any) -> dict[str, Any]:
        t = self.turns[turn]
        meta = {k: t[k] for k in ("notifications", "deltas", "delta_chars")}
        return dict(codex=t["codex"], path=t["path"], meta=meta, scratch=self.scratch, **extra)


# -- sections ----------------------------------------------------------------------


def _delivered(runs: list[dict[str, Any]]) -> str:
    got = [t["deltas"] for r in runs for t in r["turns"]]
    expected = runs[0]["deltas_expected"]
    return (
        f"deltas {min(got):,}/{expected:,}"
        if min(got) == max(got)
        else f"deltas {min(got):,}–{max(got):,}/{expected:,}"
    )


def _share(runs: list[dict[str, Any]]) -> float:
    """The share of a core the reader had during its windows (1.0 = never preempted nor starved)."""
    return median(t["cpu_seconds"] / t["seconds"] for r in runs for t in r["turns"])


def stream_section(b: Bench) -> Section:
    t = b.turns["stream"]
    plan = {name: ("stream", name, b.opts("stream")) for name in ("raw", "client", "agent", "ceiling")}
    # The same client keeping no turn history (Thread.turn(keep_items=False)):
    # what a consumer that takes the items as they complete pays in memory.
    plan["client_streaming"] = ("stream", "client", b.opts("stream", keep_items=False))
    # The same client over the other transports: the fake served over
    # WebSocket on TCP and on a unix socket (issue 28), each × the stdio client.
    for name in ("client_ws", "client_unix"):
        plan[name] = ("stream", name, b.opts("stream"))
    runs = b.runner.interleave("stream", plan, b.mode.stream_runs)
    rate = {k: median(r["rate"] for r in v) for k, v in runs.items()}
    cpu = {k: median(r["cpu_rate"] for r in v) for k, v in runs.items()}
    rss = {k: median(r["peak_rss_mb"] for r in v) for k, v in runs.items()}
    delivered = all(r["all_delivered"] for k in ("raw", "client", "agent", "client_ws", "client_unix") for r in runs[k])
    share = {k: _share(v) for k, v in runs.items()}
    b.raw["stream"] = {
        "runs": runs,
        "median_rate": rate,
        "median_cpu_rate": cpu,
        "median_peak_rss_mb": rss,
        "core_share": share,
    }
    s = Section(
        f"1. stream throughput — one turn of {t['notifications']:,} notifications ({t['deltas']:,} deltas), "
        f"{t['bytes'] / 1e6:.1f} MB; {b.mode.stream_runs} run(s) each, interleaved, medians; × raw, >1 = faster"
    )
    s.add("raw_rate", rate["raw"], "raw: readline + json.loads", "{:,.0f}/s", f"cpu {kfmt(cpu['raw'])}/s")
    for name, label in (("client", "codexmini Thread.turn() events"), ("agent", "codexmini Agent + session log")):
        s.add(f"{name}_vs_raw", rate[name] / rate["raw"], label, detail=f"{kfmt(rate[name])}/s")
        s.add(f"{name}_vs_raw_cpu", cpu[name] / cpu["raw"], "  the same, CPU time", detail=f"{kfmt(cpu[name])}/s")
    for name, label in (("client_ws", "over WebSocket (TCP)"), ("client_unix", "over WebSocket (unix socket)")):
        s.add(
            f"{name}_vs_stdio",
            rate[name] / rate["client"],
            f"client {label} × client over stdio",
            detail=f"{kfmt(rate[name])}/s · peak RSS {rss[name]:.1f} MB",
        )
        s.add(f"{name}_vs_stdio_cpu", cpu[name] / cpu["client"], "  the same, CPU time", detail=f"{kfmt(cpu[name])}/s")
    s.add("ceiling_vs_raw", rate["ceiling"] / rate["raw"], "ceiling: json.loads over read lines", detail="no I/O")
    s.add("ceiling_vs_raw_cpu", cpu["ceiling"] / cpu["raw"], "  the same, CPU time")
    s.add("raw_rss_mb", rss["raw"], "peak RSS (VmHWM): raw", "{:.1f} MB")
    s.add("client_rss_mb", rss["client"], "peak RSS: client", "{:.1f} MB", f"× raw {rss['client'] / rss['raw']:.2f}")
    s.add(
        "client_streaming_rss_mb",
        rss["client_streaming"],
        "  the same, keep_items=False",
        "{:.1f} MB",
        f"× raw {rss['client_streaming'] / rss['raw']:.2f} · the difference is the turn's "
        f"{runs['client'][0]['turns'][0]['items']:,} completed items, kept for TurnCompleted.items",
    )
    s.add("agent_rss_mb", rss["agent"], "peak RSS: agent", "{:.1f} MB", f"× raw {rss['agent'] / rss['raw']:.2f}")
    agent = runs["agent"][0]
    s.add(
        "all_deltas_delivered",
        delivered,
        "every delta delivered (raw, client, agent)",
        detail=f"raw {_delivered(runs['raw'])}; client {_delivered(runs['client'])} "
        f"(ws {_delivered(runs['client_ws'])}, unix {_delivered(runs['client_unix'])}), "
        f"dropped {max(r['dropped'] for k in ('client', 'client_ws', 'client_unix') for r in runs[k])}; "
        f"agent {_delivered(runs['agent'])}, "
        f"logged text {agent['logged_text_chars']:,}/{agent['delta_chars_expected']:,} chars",
    )
    s.notes.append(
        "share of a core each reader had in its window (cpu/wall): "
        + ", ".join(f"{k} {v:.2f}" for k, v in share.items())
        + " — below ~0.9 the machine is busy and the CPU-time ratios are the steadier figures"
    )
    s.notes.append(f"agent log: {agent['log_events']:,} events, {agent['log_bytes'] / 1e6:.1f} MB")
    return s


def turns_section(b: Bench) -> Section:
    t = b.turns["turns"]
    plan = {k: ("stream", k, b.opts("turns", turns=3)) for k in ("raw", "client")}
    runs = b.runner.interleave("3 turns", plan, b.mode.turns_runs)

    def per_turn(key: str) -> dict[str, list[float]]:
        return {k: [median(r["turns"][i][key] for r in v) for i in range(3)] for k, v in runs.items()}

    rate, cpu = per_turn("rate"), per_turn("cpu_rate")
    rss = per_turn("rss_mb")["client"]
    b.raw["turns"] = {"runs": runs, "median_rate_per_turn": rate, "median_cpu_rate_per_turn": cpu}
    s = Section(
        f"   3 turns in a row on one thread — {t['notifications']:,} notifications each, {b.mode.turns_runs} run(s)"
    )
    for i in range(3):
        s.add(
            f"client_turn{i + 1}_vs_raw",
            rate["client"][i] / rate["raw"][i],
            f"client turn {i + 1} × raw turn {i + 1}",
            detail=f"client {kfmt(rate['client'][i])}/s, raw {kfmt(rate['raw'][i])}/s · "
            f"cpu × {cpu['client'][i] / cpu['raw'][i]:.3f} · client RSS after it {rss[i]:.1f} MB",
        )
    s.add(
        "client_turn3_vs_turn1",
        rate["client"][2] / rate["client"][0],
        "flatness: client turn 3 / turn 1",
        detail=f"raw: {rate['raw'][2] / rate['raw'][0]:.3f}",
    )
    s.add(
        "client_turn3_vs_turn1_cpu",
        cpu["client"][2] / cpu["client"][0],
        "  the same, CPU time",
        detail=f"raw: {cpu['raw'][2] / cpu['raw'][0]:.3f}",
    )
    return s


def session_section(b: Bench) -> Section:
    m = b.mode
    window = min(10, max(1, m.session_turns // 2))
    opts = b.opts("session", turns=m.session_turns, window=window)
    runs = b.runner.interleave("session", {"session": ("stream", "session", opts)}, m.session_runs)["session"]
    first, last = median(r["first_ms"] for r in runs), median(r["last_ms"] for r in runs)
    first_cpu, last_cpu = median(r["first_cpu_ms"] for r in runs), median(r["last_cpu_ms"] for r in runs)
    ser_short, ser_long = median(r["serialize_short_ms"] for r in runs), median(r["serialize_long_ms"] for r in runs)
    ser_long_cpu = median(r["serialize_long_cpu_ms"] for r in runs)
    b.raw["session"] = {"runs": runs}
    n = m.session_turns
    s = Section(
        f"   {n}-turn agent session on one log — {b.turns['session']['notifications']:,} notifications a turn, "
        f"{m.session_runs} run(s); per-turn wall time of agent.run()"
    )
    s.add(
        "session_last_vs_first",
        last / first,
        f"per turn: turns {n - window + 1}–{n} / 1–{window}",
        detail=f"{first:.1f} → {last:.1f} ms · log {runs[0]['log_events']:,} events, "
        f"prompt {runs[0]['prompt_chars_short']:,} → {runs[0]['prompt_chars_long']:,} chars",
    )
    s.add(
        "session_growth_ms", last - first, "growth per turn", "{:.1f} ms", "wall: includes the fake parsing the prompt"
    )
    s.add(
        "session_growth_cpu_ms",
        last_cpu - first_cpu,
        "  the same, the agent's CPU time",
        "{:.1f} ms",
        f"{first_cpu:.1f} → {last_cpu:.1f} ms",
    )
    s.add(
        "session_serialize_ms",
        ser_long,
        f"serialize(derive(log)) at turn {n}",
        "{:.1f} ms",
        f"CPU {ser_long_cpu:.1f} ms · at turn {window}: {ser_short:.1f} ms · "
        f"RSS {runs[0]['rss_mb_after_window']:.0f} → {runs[0]['rss_mb_end']:.0f} MB",
    )
    s.add("session_growth_vs_serialize", (last - first) / ser_long, "growth / serializing the longer log")
    s.add(
        "session_growth_cpu_vs_serialize",
        (last_cpu - first_cpu) / ser_long_cpu,
        "  the same, CPU time (growth / serialize)",
    )
    return s


def large_section(b: Bench) -> Section:
    t = b.turns["large"]
    plan = {
        "raw": ("stream", "raw", b.opts("large", turns=3)),
        "client": ("stream", "client", b.opts("large", turns=3)),
    }
    runs = b.runner.interleave("large", plan, b.mode.large_runs)
    secs = {k: median(median(x["seconds"] for x in r["turns"]) for r in v) for k, v in runs.items()}
    cpu = {k: median(median(x["cpu_seconds"] for x in r["turns"]) for r in v) for k, v in runs.items()}
    rss = {k: median(r["peak_rss_mb"] for r in v) for k, v in runs.items()}
    b.raw["large"] = {"runs": runs, "median_seconds": secs, "median_cpu_seconds": cpu}
    s = Section(
        f"2. large frame — one {t['largest_line'] / (1 << 20):.2f} MiB item/completed line, 3 turns a run, "
        f"{b.mode.large_runs} run(s); time × raw, <1 = faster"
    )
    s.add(
        "large_frame_vs_raw",
        secs["client"] / secs["raw"],
        "codexmini client time / raw time",
        detail=f"raw {secs['raw'] * 1e3:.1f} ms, client {secs['client'] * 1e3:.1f} ms"
        f" · RSS raw {rss['raw']:.0f} MB, client {rss['client']:.0f} MB",
    )
    s.add(
        "large_frame_vs_raw_cpu",
        cpu["client"] / cpu["raw"],
        "  the same, CPU time",
        detail=f"raw {cpu['raw'] * 1e3:.1f} ms, client {cpu['client'] * 1e3:.1f} ms",
    )
    return s


def imports_section(b: Bench) -> Section:
    public = {f"codexmini.{name}": statement for name, statement in import_cost.PUBLIC.items()}
    statements = dict(import_cost.STATEMENTS, **public)
    data = import_cost.measure(b.python, child_env(), b.mode.import_runs, statements)
    us, pulls = data["median_us"], data["pulls_in"]
    b.raw["imports"] = data
    s = Section(
        f"3. import cost — python -X importtime, bytecode cached, {b.mode.import_runs} run(s), medians; × import asyncio"
    )
    s.add(
        "import_codexmini_vs_asyncio",
        us["codexmini"] / us["asyncio"],
        "import codexmini",
        detail=f"{us['codexmini']:,.0f} µs vs asyncio {us['asyncio']:,.0f} µs · pulls in: {', '.join(pulls['codexmini']) or 'none'}",
    )
    s.add(
        "import_mapping_vs_asyncio",
        us["codexmini._mapping"] / us["asyncio"],
        "import codexmini._mapping",
        detail=f"{us['codexmini._mapping']:,.0f} µs · pulls in: {', '.join(pulls['codexmini._mapping']) or 'none'}",
    )
    s.add("mapping_imports_asyncio", "asyncio" in pulls["codexmini._mapping"], "codexmini._mapping imports asyncio")
    # A lazy attribute's module gets no importtime line of its own: the wall clock
    # (asyncio included in both) is the figure; its CPU time, the steadier one.
    wall, cpu = data["median_wall_us"], data["median_cpu_us"]
    for name, statement in import_cost.PUBLIC.items():
        key = f"codexmini.{name}"
        extra = sorted(set(pulls[key]) - set(pulls["asyncio"]))
        s.add(
            f"import_{name}_vs_asyncio",
            wall[key] / wall["asyncio"],
            statement,
            detail=f"wall clock: {wall[key]:,.0f} µs vs asyncio {wall['asyncio']:,.0f} µs, asyncio included"
            f" · pulls in beyond asyncio: {', '.join(extra) or 'none'}",
        )
        s.add(
            f"import_{name}_vs_asyncio_cpu",
            cpu[key] / cpu["asyncio"],
            "  the same, CPU time",
            detail=f"{cpu[key]:,.0f} µs vs asyncio {cpu['asyncio']:,.0f} µs",
        )
    return s


def serialize_section(b: Bench) -> Section:
    m = b.mode
    short, long_ = m.serialize_events
    paths = {n: os.path.join(b.scratch, f"serialize-{n}.jsonl") for n in (short, long_)}
    for n, path in paths.items():
        serialize_bench.write_log(path, n)
    opts = {"reps": m.serialize_reps, "stages": m.serialize_stages}
    plan = {}
    for size, n in (("short", short), ("long", long_)):
        # The resumed agent's way in processes of its own (no log in memory), the others together.
        plan[size] = ("serialize", "scaling", dict(opts, events=n, path=paths[n], ways=["prompt"]))
        plan[f"{size} in memory"] = ("serialize", "scaling", dict(opts, events=n, ways=list(serialize_bench.IN_MEMORY)))
    runs = b.runner.interleave("serialize", plan, m.serialize_runs)

    def medians(key: str) -> dict[str, dict[str, float]]:
        both = {size: runs[size] + runs[f"{size} in memory"] for size in ("short", "long")}
        return {
            k: {w: median(r[key][w] for r in v if w in r[key]) for w in {w for r in v for w in r[key]}}
            for k, v in both.items()
        }

    med, wall = medians("median_cpu_seconds"), medians("median_seconds")
    scaling = {w: med["long"][w] / med["short"][w] for w in med["short"]}
    wall_scaling = {w: wall["long"][w] / wall["short"][w] for w in wall["short"]}
    b.raw["serialize"] = {
        "runs": runs,
        "median_cpu_seconds": med,
        "median_seconds": wall,
        "scaling": scaling,
        "wall_scaling": wall_scaling,
    }
    s = Section(
        f"4. serialization — the prompt of a log, {short:,} vs {long_:,} events, "
        f"{m.serialize_runs} process(es) each × {m.serialize_reps} rep(s), CPU time; linear = {long_ / short:g}"
    )
    long_run = runs["long"][0]
    s.add(
        "serialize_scaling",
        scaling["prompt"],
        f"time({long_:,}) / time({short:,})",
        detail=f"as a resumed agent: the log file streamed into a Transcript, each prompt into fresh memory: "
        f"{med['short']['prompt'] * 1e3:.1f} → {med['long']['prompt'] * 1e3:.1f} ms · "
        f"{long_run['log_bytes'] / 1e6:.1f} MB of log, prompt {long_run['prompt_chars']:,} chars",
    )
    s.add("serialize_scaling_wall", wall_scaling["prompt"], "  the same, wall time")
    s.add(
        "serialize_scaling_memory",
        scaling["memory"],
        "  from the events in memory",
        detail=f"rendering and joining alone: {med['short']['memory'] * 1e3:.1f} → {med['long']['memory'] * 1e3:.1f} ms",
    )
    s.add(
        "serialize_scaling_recycled",
        scaling["recycled"],
        "  the same, each prompt dropped at once",
        detail="the short one's memory is reused, the long one's (> 32 MiB) goes back to the kernel: two regimes",
    )
    s.add("two_stage_scaling", scaling["serialize"], "serialize(derive_messages(log))")
    s.add("two_stage_scaling_gc_off", scaling["serialize_gc_off"], "  the same, collector off")
    if m.serialize_stages:
        s.notes.append(
            "two-stage, cumulative, long/short: derive × {derive:.1f}, + render × {render:.1f}, "
            "+ join × {join:.1f}".format(**scaling)
        )
    s.notes.append(
        "CPU time, because on a busy machine a call shorter than a scheduler slice runs at full speed "
        "while a long one is time-shared: wall time then looks superlinear when it is not"
    )
    s.notes.append("internal API on purpose: codexmini._prompt (serialization has no public entry point)")
    return s


#: The big log's texts, this many times the serialize section's: about a
#: kilobyte an event, so a million events make the issue's gigabyte.
LOG_SCALE = 2.5


def log_section(b: Bench) -> Section:
    m = b.mode
    big = os.path.join(b.scratch, "big.session.jsonl")
    small = os.path.join(b.scratch, "small.session.jsonl")
    b.runner.say(f"  log: writing a log of {m.log_events:,} events into {b.scratch}")
    try:
        size = serialize_bench.write_log(big, m.log_events, LOG_SCALE)
        serialize_bench.write_log(small, m.log_small_events, LOG_SCALE)
        plan = {name: ("biglog", name, {"path": big}) for name in ("open", "read", "iter", "prompt")}
        plan["prompt_small"] = ("biglog", "prompt", {"path": small})
        runs = b.runner.interleave("log", plan, m.log_runs)
    finally:
        for path in (big, small):  # a gigabyte: not left for the other sections
            with contextlib.suppress(OSError):
                os.unlink(path)

    def med(name: str, key: str, within: str | None = None) -> float:
        return median((r[within] if within else r)[key] for r in runs[name])

    b.raw["log"] = {"runs": runs, "log_bytes": size, "events": m.log_events}
    prompt = runs["prompt"][0]
    s = Section(
        f"7. a log of any length — {m.log_events:,} events, {size / 1e6:,.0f} MB (written for the bench, deleted after); "
        f"{m.log_runs} run(s) each; growth of the peak RSS, MB/s of CPU time"
    )
    s.add(
        "log_open_growth_mb",
        med("open", "growth_mb"),
        "SessionLog.open: memory growth",
        "{:.1f} MB",
        f"the writer's read-back: every line checked, an offset every 32 events, the resume fold · "
        f"{med('open', 'seconds'):.1f} s wall",
    )
    s.add(
        "log_open_mb_s", med("open", "cpu_mb_s"), "  its speed", "{:,.0f} MB/s", f"wall {med('open', 'mb_s'):,.0f} MB/s"
    )
    s.add(
        "log_read_growth_mb",
        max(med("read", "growth_mb"), med("read", "growth_mb", "events_pass")),
        "read_log, then every event of it: memory growth",
        "{:.1f} MB",
        f"read_log {med('read', 'growth_mb'):.1f} MB, its events {med('read', 'growth_mb', 'events_pass'):.1f} MB",
    )
    s.add(
        "log_read_mb_s",
        med("read", "cpu_mb_s"),
        "  read_log's speed",
        "{:,.0f} MB/s",
        f"wall {med('read', 'mb_s'):,.0f} MB/s · its events again {med('read', 'cpu_mb_s', 'events_pass'):,.0f} MB/s",
    )
    s.add("log_iter_growth_mb", med("iter", "growth_mb"), "iter_log, one pass: memory growth", "{:.1f} MB")
    s.add(
        "log_iter_mb_s", med("iter", "cpu_mb_s"), "  its speed", "{:,.0f} MB/s", f"wall {med('iter', 'mb_s'):,.0f} MB/s"
    )
    s.add(
        "log_first_prompt_mb_s",
        med("prompt", "cpu_mb_s", "first_prompt"),
        "a resumed agent's first prompt: speed",
        "{:,.0f} MB/s",
        f"the whole log streamed into the transcript: {prompt['prompt_chars']:,} chars, "
        f"growth {med('prompt', 'growth_mb', 'first_prompt'):,.0f} MB (the prompt itself)",
    )
    big_next, small_next = med("prompt", "next_prompt_cpu_ms_median"), med("prompt_small", "next_prompt_cpu_ms_median")
    s.add(
        "log_next_prompt_vs_small",
        big_next / small_next,
        "  the next step's prompt × on a short log",
        detail=f"{big_next:.2f} ms on {m.log_events:,} events, {small_next:.2f} ms on {m.log_small_events:,} "
        f"(one step's {len(STEP)} events appended; the text grows in place)",
    )
    if not all(r["peak_reset"] for r in runs["open"]):
        s.notes.append("the peak RSS could not be reset (/proc/self/clear_refs): growth is over the whole process")
    return s


def e2e_section(b: Bench) -> Section:
    s = Section(
        "5. end to end — one scripted turn on the real codex binary (spawn → turn/completed); time × raw client"
    )
    codex = find_native_codex()
    if codex is None:
        s.skipped = "the codex binary is not installed (make setup installs it, or set CODEXMINI_CODEX_BIN)"
        s.add("e2e_overhead", None, "codexmini / minimal raw client")
        return s
    plan = {"raw": ("e2e", "raw", {"codex": codex}), "codexmini": ("e2e", "codexmini", {"codex": codex})}
    b.runner.interleave("e2e warm-up", plan, 1)
    runs = b.runner.interleave("e2e", plan, b.mode.e2e_runs)
    secs = {k: median(r["seconds"] for r in v) for k, v in runs.items()}
    fastest = {k: min(r["seconds"] for r in v) for k, v in runs.items()}
    b.raw["e2e"] = {"runs": runs, "median_seconds": secs, "min_seconds": fastest, "codex": codex}
    s.add(
        "e2e_overhead",
        secs["codexmini"] / secs["raw"],
        "codexmini / minimal raw client",
        detail=f"raw {secs['raw'] * 1e3:.0f} ms, codexmini {secs['codexmini'] * 1e3:.0f} ms · "
        f"{b.mode.e2e_runs} run(s) each after a warm-up · statuses "
        f"{sorted({r['status'] for v in runs.values() for r in v})}",
    )
    s.add(
        "e2e_overhead_min",
        fastest["codexmini"] / fastest["raw"],
        "  the same, fastest run of each",
        detail=f"raw {fastest['raw'] * 1e3:.0f} ms, codexmini {fastest['codexmini'] * 1e3:.0f} ms",
    )
    spread = max(r["seconds"] for r in runs["raw"]) / fastest["raw"]
    s.notes.append(
        f"the raw client's slowest run took {spread:.2f}× its fastest: codex's start-up dominates and varies"
    )
    return s


def concurrency_section(b: Bench) -> Section:
    m = b.mode
    ns, top = m.concurrency_ns, max(m.concurrency_ns)
    t = b.turns["concurrency"]
    s = Section(
        f"6. turns at once — on one client, 1 to {top} at once; {m.concurrency_runs} run(s) each, interleaved, "
        "medians; events/s of all turns together"
    )
    # The fake over stdio, the client the bottleneck: every n runs the same
    # `top` turns, n at a time (so every n does the same work); RSS is read
    # with the first n turns at once, their books held.  The streaming
    # contender (keep_items=False) runs `top` at once only: what a turn at
    # once costs beside its history.
    fake = {f"fake {n}": ("concurrency", "fake_threads", b.opts("concurrency", n=n, turns=top)) for n in ns}
    fake["fake streaming"] = ("concurrency", "fake_threads", b.opts("concurrency", n=top, keep_items=False))
    # The floor: the same turns read by a minimal asyncio client (a task a turn), one and `top` at a time.
    for n in (1, top):
        fake[f"raw {n}"] = ("concurrency", "raw_threads", b.opts("concurrency", n=n, turns=top))
    for options in (o for _, _, o in fake.values()):
        options["deltas"] = t["deltas"]
    fruns = b.runner.interleave("concurrency", fake, m.concurrency_runs)
    frate = {k: median(r["rate"] for r in v) for k, v in fruns.items()}
    fcpu = {k: median(r["cpu_rate"] for r in v) for k, v in fruns.items()}
    frss = {k: median(r["first_peak_rss_mb"] for r in v) for k, v in fruns.items()}
    b.raw["concurrency"] = {"fake_runs": fruns, "fake_median_rate": frate, "fake_median_first_peak_rss_mb": frss}
    s.add(
        "concurrent_fake_1_rate",
        frate["fake 1"],
        f"fake over stdio: {top} turns one at a time",
        "{:,.0f}/s",
        f"cpu {kfmt(fcpu['fake 1'])}/s · a turn: {t['notifications']:,} notifications, {t['bytes'] / 1e6:.2f} MB",
    )
    for n in ns[1:]:
        key = f"fake {n}"
        s.add(
            f"concurrent_fake_threads_{n}_vs_1",
            frate[key] / frate["fake 1"],
            f"  {n} at a time (threads of one client) / one at a time",
            detail=f"{kfmt(frate[key])}/s, cpu {kfmt(fcpu[key])}/s · peak RSS {frss[key]:.1f} MB · "
            f"delivered {all(r['all_delivered'] and not r['dropped'] for r in fruns[key])}",
        )
    s.add(
        f"concurrent_fake_threads_{top}_vs_1_cpu",
        fcpu[f"fake {top}"] / fcpu["fake 1"],
        f"  {top} at a time / one at a time, CPU time",
    )
    s.add(
        f"concurrent_raw_threads_{top}_vs_1",
        frate[f"raw {top}"] / frate["raw 1"],
        f"  a minimal asyncio client: {top} at a time / one at a time",
        detail=f"{kfmt(frate['raw 1'])}/s one at a time, {kfmt(frate[f'raw {top}'])}/s {top} at a time · "
        "no codexmini: what asyncio keeps with a task a turn",
    )
    fsec = {k: median(r["seconds"] for r in fruns[k]) for k in (f"fake {top}", f"raw {top}")}
    s.add(
        f"concurrent_fake_threads_{top}_vs_raw",
        fsec[f"raw {top}"] / fsec[f"fake {top}"],
        f"  {top} at a time: the client's pace / the minimal client's",
        detail=f"the same {top} turns in {fsec[f'fake {top}']:.2f} s / {fsec[f'raw {top}']:.2f} s",
    )
    per_turn = (frss[f"fake {top}"] - frss["fake 1"]) / (top - 1)
    s.add(
        "concurrent_rss_per_turn_mb",
        per_turn,
        "  peak RSS per turn added at once, history kept",
        "{:.3f} MB",
        f"{frss['fake 1']:.1f} MB with one, {frss[f'fake {top}']:.1f} MB with {top} · "
        f"{per_turn * 1e6 / t['bytes']:.2f} × a turn's bytes on the wire",
    )
    s.add(
        "concurrent_streaming_rss_per_turn_mb",
        (frss["fake streaming"] - frss["fake 1"]) / (top - 1),
        "  the same, keep_items=False (the turn's own cost, beside its history)",
        "{:.3f} MB",
        f"{frss['fake streaming']:.1f} MB with {top} (the baseline: one turn with its history)",
    )
    s.notes.append(
        f"fake: {top} turns of {t['notifications']:,} notifications in all, n at a time on n threads of one client "
        "over stdio; the fake interleaves the open turns a line each (--interleave) and writes prepared bytes"
    )
    codex = find_native_codex()
    if codex is None:
        s.skipped = "the codex binary is not installed (make setup installs it, or set CODEXMINI_CODEX_BIN)"
        for name in ("concurrent_threads_8_vs_1", "concurrent_connections_8_vs_1", "concurrent_threads_128_vs_1"):
            s.add(name, None, name)
        return s
    from codexmini.testing.live import LiveCodex

    answer = {"output": [{"type": "message", "id": "m", "deltas": ["x "] * m.concurrency_deltas}]}
    with LiveCodex({"rules": [], "default": answer}, codex_bin=codex, prefix="codexmini-bench-") as live:
        url = live.serve("ws")
        base = {"url": url, "cwd": live.ws, "deltas": m.concurrency_deltas}
        plan = {
            f"{way} {n}": ("concurrency", way, dict(base, n=n))
            for n in ns
            for way in ("threads", "connections")
            if way == "threads" or n <= 32  # a connection each: up to 32
        }
        runs = b.runner.interleave("concurrency", plan, m.concurrency_runs)
    rate = {k: median(r["rate"] for r in v) for k, v in runs.items()}
    rss = {k: median(r["peak_rss_mb"] for r in v) for k, v in runs.items()}
    b.raw["concurrency"].update(runs=runs, median_rate=rate, median_peak_rss_mb=rss)
    for way, label in (("threads", "on one connection"), ("connections", "on as many connections")):
        for n in (n for n in ns if f"{way} {n}" in runs):
            key = f"{way} {n}"
            s.add(
                f"concurrent_{way}_{n}_rate",
                rate[key],
                f"real codex: {n} turn(s) at once {label}",
                "{:,.0f}/s",
                f"peak RSS {rss[key]:.1f} MB · delivered {all(r['all_delivered'] for r in runs[key])}",
            )
        for n in (n for n in ns[1:] if f"{way} {n}" in runs and n in (8, top)):
            s.add(f"concurrent_{way}_{n}_vs_1", rate[f"{way} {n}"] / rate[f"{way} 1"], f"  {n} at once / 1, {label}")
    s.add(
        "concurrent_threads_rss_per_turn_mb",
        (rss[f"threads {top}"] - rss["threads 1"]) / (top - 1),
        "  real codex: peak RSS per turn added at once, one connection",
        "{:.3f} MB",
        f"a turn: {m.concurrency_deltas:,} deltas",
    )
    s.notes.append(
        f"real codex: one codex app-server --listen ws:// on the scripted model, {m.concurrency_deltas:,} deltas a turn; "
        f"{os.cpu_count()} cores shared by codex, the scripted model (in the bench's process) and the client: "
        "codex is the bottleneck and past a few turns the CPU is full, so these rates say little of the client"
    )
    return s


SECTION_RUNNERS: dict[str, Callable[[Bench], Section]] = {
    "stream": stream_section,
    "turns": turns_section,
    "session": session_section,
    "large": large_section,
    "imports": imports_section,
    "serialize": serialize_section,
    "e2e": e2e_section,
    "concurrency": concurrency_section,
    "log": log_section,
}


# -- the machine and the interpreter ----------------------------------------------------


def resolve_python(spec: str | None) -> str:
    """A path, a name on PATH (``python3.9``) or a pyenv version (``3.9``), as
    the interpreter's own ``sys.executable`` (so a pyenv shim that cannot run
    the version falls through to ``~/.pyenv/versions``)."""
    if not spec:
        return sys.executable
    version = spec.removeprefix("python")
    root = os.path.expanduser("~/.pyenv/versions")
    pyenv = sorted(
        (d for d in (os.listdir(root) if os.path.isdir(root) else []) if d == version or d.startswith(version + ".")),
        key=lambda d: [int(x) if x.isdigit() else 0 for x in d.split(".")],
    )
    candidates = [os.path.abspath(spec)] if os.sep in spec else [shutil.which(spec)]
    candidates += [os.path.join(root, d, "bin", "python") for d in reversed(pyenv)]
    for candidate in filter(None, candidates):
        try:
            out, _ = run_process([candidate, "-c", "import sys; print(sys.executable)"], 60, child_env())
        except (BenchError, OSError):
            continue
        return out.strip().splitlines()[-1]
    raise SystemExit(f"bench: no working Python {spec!r} (tried {', '.join(filter(None, candidates))})")


def describe_python(python: str) -> dict[str, str]:
    code = "import json, sys, platform, codexmini; print(json.dumps({'version': platform.python_version(), 'implementation': platform.python_implementation(), 'codexmini': codexmini.__version__, 'codex_pin': codexmini.CODEX_VERSION}))"
    out, _ = run_process([python, "-c", code], 60, child_env())
    return dict(json.loads(out.strip().splitlines()[-1]), path=python)


def describe_machine() -> dict[str, Any]:
    model = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            model = next((line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")), "")
    except OSError:
        pass
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "cores": os.cpu_count(),
        "usable_cores": affinity,
        "cpu": model or platform.processor(),
        "system": f"{platform.system()} {platform.release()}",
        "load_average_start": list(os.getloadavg()),
    }


def codex_version(path: str | None) -> str | None:
    if path is None:
        return None
    try:
        done = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None


# -- the command line ---------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs and smaller side workloads (under a minute)")
    parser.add_argument("--mode", choices=sorted(MODES), help="full (default), quick, or tiny (the tests' workload)")
    parser.add_argument("--json", metavar="FILE", help="write every figure and the raw numbers behind it")
    parser.add_argument("--python", metavar="PATH", help="the interpreter to measure (path, python3.9, or a pyenv 3.9)")
    parser.add_argument("--only", metavar="SECTIONS", help=f"comma-separated subset of {','.join(SECTIONS)}")
    parser.add_argument("--skip", metavar="SECTIONS", default="", help="comma-separated sections to leave out")
    parser.add_argument("--timeout", type=float, default=300.0, help="deadline of each contender process (s)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    args = parser.parse_args(argv)
    args.mode = args.mode or ("quick" if args.quick else "full")
    chosen = args.only.split(",") if args.only else list(SECTIONS)
    unknown = [x for x in chosen + [x for x in args.skip.split(",") if x] if x not in SECTIONS]
    if unknown:
        parser.error(f"unknown section(s) {unknown}; choose from {','.join(SECTIONS)}")
    args.sections = [x for x in SECTIONS if x in chosen and x not in args.skip.split(",")]
    return args


def header(mode: str, machine: Mapping[str, Any], py: Mapping[str, str], codex: str | None, wall: float) -> list[str]:
    return [
        f"codexmini bench ({mode}) — every figure a ratio to a baseline measured in this run, same pipe, same interpreter",
        (
            f"machine: {machine['cores']} cores ({machine['cpu']}), {machine['system']}, "
            f"load average {machine['load_average_start'][0]:.2f} at start, {machine['load_average_end'][0]:.2f} at end"
        ),
        f"python {py['version']} ({py['path']}) · codexmini {py['codexmini']} · codex {codex or 'not found'}",
        f"each contender run is a fresh interpreter; wall time {wall:.0f} s",
    ]


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    python = resolve_python(args.python)
    mode = MODES[args.mode]
    machine = describe_machine()
    py = describe_python(python)
    # The sections that run the real codex (the others must not need it installed).
    codex = codex_version(find_native_codex()) if {"e2e", "concurrency"} & set(args.sections) else None
    runner = Runner(python, args.timeout, None if args.quiet else sys.stderr)
    base = "/var/tmp" if os.path.isdir("/var/tmp") else None
    scratch = tempfile.mkdtemp(prefix="codexmini-bench-", dir=base)
    sections: list[Section] = []
    try:
        bench = Bench(python, mode, scratch, runner)
        runner.say(f"bench ({args.mode}): building the workloads in {scratch}")
        bench.build(args.sections)
        for name in args.sections:
            begin = time.perf_counter()
            sections.append(SECTION_RUNNERS[name](bench))
            bench.raw.setdefault(name, {})["wall_seconds"] = time.perf_counter() - begin
    except BenchError as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    wall = time.perf_counter() - started
    machine["load_average_end"] = list(os.getloadavg())
    targets = targets_for(py["version"])
    print(render(header(args.mode, machine, py, codex, wall), sections, targets))
    if args.json:
        document = {
            "bench": {
                "mode": args.mode,
                "sections": args.sections,
                "argv": list(sys.argv if argv is None else argv),
                "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "wall_seconds": wall,
                "scratch": scratch,
            },
            "machine": machine,
            "python": py,
            "codex": codex,
            "workloads": {
                k: {x: y for x, y in v.items() if x not in ("codex", "path")} for k, v in bench.turns.items()
            },
            "figures": figures_of(sections),
            "targets": {k: list(v) for k, v in targets.items()},
            "skipped": {s.title: s.skipped for s in sections if s.skipped},
            "sections": bench.raw,
        }
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(document, fh, indent=1)
            fh.write("\n")
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
