"""Where a stream contender's time goes: py-spy (sampling) or cProfile, per function.

    python -m tools.benchlib.profile [client|client_ws|client_unix|agent|raw] [--notifications N] [--cprofile] [--top N]

Builds the stream turn (as the bench does) in a scratch directory, runs the
contender once in a fresh interpreter under ``py-spy record --format raw``
(``pip install py-spy``; it needs ptrace rights) or, with ``--cprofile`` or
without py-spy, under ``python -m cProfile``, and prints two tables: *self*
time (the leaf frame of each sample, so a C call such as the JSON scanner is
charged to the Python function that made it) and *inclusive* time of
codexmini's functions.  Only samples taken inside the event loop count (not
interpreter start-up or imports); idle time (waiting on the pipe) is never
sampled.  cProfile's own per-call overhead inflates small functions: prefer
py-spy's shares, use cProfile's call counts.
"""

from __future__ import annotations

import argparse
import collections
import io
import json
import os
import pstats
import re
import shutil
import sys
import tempfile
from typing import Any

from . import workload
from .child import REPO
from .runner import child_env, run_process

FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)$")
IN_LOOP = "BaseEventLoop._run_once"
IMPORTING = "_find_and_load"


def parse_collapsed(text: str) -> list[tuple[list[str], int]]:
    """py-spy's raw format: ``frame;frame;… count`` per line, root first."""
    stacks = []
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            stacks.append((stack.split(";"), int(count)))
    return stacks


def short(frame: str) -> str:
    """``Foo.bar (codexmini/_client.py:512)`` → ``Foo.bar (codexmini/_client.py)``."""
    m = FRAME.match(frame.strip())
    return f"{m['func']} ({m['file']})" if m else frame.strip()


def aggregate(stacks: list[tuple[list[str], int]]) -> dict[str, Any]:
    kept = [(s, n) for s, n in stacks if any(IN_LOOP in f for f in s) and not any(IMPORTING in f for f in s)]
    total = sum(n for _, n in kept)
    own: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    for frames, n in kept:
        own[short(frames[-1])] += n
        for name in {short(f) for f in frames}:
            inclusive[name] += n
    return {"samples": total, "all_samples": sum(n for _, n in stacks), "self": own, "inclusive": inclusive}


#: Where a leaf frame's time goes, first match wins: (area, substrings of "func (file)").
AREAS = (
    ("json encoding (session-log lines)", ("JSONEncoder.", "dumps (json/", "encode_event")),
    ("json decoding (json.loads and the C scanner)", ("(json/",)),
    ("pipe reads (os.read in the transport, StreamReader)", ("_read_ready", "StreamReader.", "pipe_data_received")),
    ("line framing (LineDecoder, decode_line: split, utf-8)", ("LineDecoder.", "decode_line")),
    ("frame classification (wire.classify)", ("classify (",)),
    (
        "dispatch and routing (client: _dispatch, _route, subscriptions)",
        ("AppServerClient.", "thread_of", "Subscription._put", "Subscription._wake"),
    ),
    (
        "turn bookkeeping, mapping, event construction",
        ("Turn._take", "Turn._finish", "_mapping.py", "_events.py", "__create_fn__", "<string>"),
    ),
    (
        "hand-off to the consumer (__anext__, Subscription.get, futures)",
        ("Turn.__anext__", "Subscription.get", "wait_for", "futures", "tasks.py"),
    ),
    (
        "the agent (step fold, session log, prompt)",
        ("_agent.py", "_stepfold.py", "_session.py", "_prompt.py", "_watch", "on_event"),
    ),
    ("event loop (select, _run_once, handles)", ("asyncio/", "selectors.py")),
    ("the bench's own loop", ("tools/benchlib/",)),
)


def area_of(name: str) -> str:
    for area, needles in AREAS:
        if any(n in name for n in needles):
            return area
    return "other"


def areas(own: collections.Counter[str]) -> collections.Counter[str]:
    out: collections.Counter[str] = collections.Counter()
    for name, n in own.items():
        out[area_of(name)] += n
    return out


def table(title: str, counts: collections.Counter[str], total: int, top: int, keep: Any = None) -> str:
    rows = [(name, n) for name, n in counts.most_common() if keep is None or keep(name)][:top]
    lines = [title]
    lines += [f"  {100 * n / total:5.1f}%  {name}" for name, n in rows]
    return "\n".join(lines)


def prepare(scratch: str, contender: str, notifications: int) -> list[str]:
    turns = workload.prepare(
        scratch, sys.executable, {"t": workload.stream_turn(workload.recorded_shapes(), notifications)}
    )
    t = turns["t"]
    meta = {k: t[k] for k in ("notifications", "deltas", "delta_chars")}
    opts = {"codex": t["codex"], "path": t["path"], "meta": meta, "scratch": scratch, "timeout": 600}
    return ["-m", "tools.benchlib.stream", contender, json.dumps(opts)]


def with_py_spy(py_spy: str, args: list[str], scratch: str, rate: int) -> str:
    out = os.path.join(scratch, "profile.txt")
    argv = [py_spy, "record", "--function", "--format", "raw", "--rate", str(rate), "--output", out]
    run_process([*argv, "--", sys.executable, *args], 600, child_env())
    with open(out, encoding="utf-8") as fh:
        return fh.read()


def cprofile_child(contender: list[str], out: str) -> None:
    """In the profiled interpreter: run the contender under cProfile on CPU time
    (so time the process spent preempted is not charged to a syscall)."""
    import cProfile
    import time

    from . import child, stream

    profiler = cProfile.Profile(time.process_time)
    profiler.enable()
    try:
        child.main(stream.CONTENDERS, contender[-2:])
    finally:
        profiler.disable()
        profiler.dump_stats(out)


def with_cprofile(args: list[str], scratch: str, top: int) -> str:
    out = os.path.join(scratch, "profile.pstats")
    code = f"from tools.benchlib.profile import cprofile_child; cprofile_child({args!r}, {out!r})"
    run_process([sys.executable, "-c", code], 900, child_env())
    report = io.StringIO()
    stats = pstats.Stats(out, stream=report)
    stats.sort_stats("tottime").print_stats(top)
    return report.getvalue()


def main(argv: Any = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "contender", nargs="?", default="client", choices=["client", "client_ws", "client_unix", "agent", "raw"]
    )
    parser.add_argument("--notifications", type=int, default=200_000)
    parser.add_argument("--rate", type=int, default=1000, help="py-spy samples per second")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--cprofile", action="store_true", help="use cProfile even when py-spy is installed")
    args = parser.parse_args(argv)
    base = "/var/tmp" if os.path.isdir("/var/tmp") else None
    scratch = tempfile.mkdtemp(prefix="codexmini-profile-", dir=base)
    py_spy = shutil.which("py-spy") or shutil.which("py-spy", path=os.path.dirname(sys.executable))
    try:
        contender = prepare(scratch, args.contender, args.notifications)
        if args.cprofile or py_spy is None:
            print(with_cprofile(contender, scratch, args.top))
            return 0
        data = aggregate(parse_collapsed(with_py_spy(py_spy, contender, scratch, args.rate)))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    total = data["samples"]
    print(
        f"py-spy, {args.contender}, {args.notifications:,} notifications: {total:,} samples in the event loop "
        f"(of {data['all_samples']:,}) at {args.rate}/s"
    )
    print(table("by area (self time):", areas(data["self"]), total, len(AREAS) + 1))
    print(table("self time (leaf frame):", data["self"], total, args.top))
    print(table("inclusive, codexmini:", data["inclusive"], total, args.top, keep=lambda name: "codexmini/" in name))
    return 0


__all__ = ["aggregate", "parse_collapsed", "short"]

if __name__ == "__main__":
    os.chdir(REPO)
    sys.exit(main())
