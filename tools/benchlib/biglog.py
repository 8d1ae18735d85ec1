"""A session log of any length: memory and time of reading one back (issue 29).

The bench writes a long synthetic log (:func:`.serialize.write_log`, about a
kilobyte an event: a million events make a gigabyte) into its scratch
directory under ``/var/tmp`` -- never into the repository -- and deletes it
after the section.  Each contender reads it in a fresh interpreter, so what it
measures is its own:

* ``open`` -- ``SessionLog.open``: the writer's read-back (check every line,
  index the events, fold what resuming needs), as a resumed agent or
  ``codexmini run --session`` does first;
* ``read`` -- ``read_log`` (the same check and index), then every event of its
  ``events`` (read again from the file): what a viewer or an export does;
* ``iter`` -- ``iter_log``, one pass;
* ``prompt`` -- a resumed agent's prompts: ``SessionLog.open``, ``Agent``
  built on it, the first step's prompt (the whole log streamed into the
  transcript), then the next step's (one step's events appended).  Also on a
  small log (the big one's prefix), so the next prompt's cost can be compared
  across lengths.

Memory is the growth of the peak RSS over the RSS before the call (the peak is
reset first, where Linux allows: ``/proc/self/clear_refs``); throughput is the
log's bytes over the call's CPU time (the steadier figure on a shared machine;
wall time beside it).  The log is in the page cache (just written): this
measures codexmini, not the disk.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from typing import Any, Callable

from .child import Options, main, proc_status_kb


def _reset_peak() -> bool:
    """Reset ``VmHWM`` to the current RSS (Linux: ``5`` to ``/proc/self/clear_refs``)."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")
    except OSError:
        return False
    return True


def _measure(fn: Callable[[], Any], size: int) -> tuple[Any, dict[str, Any]]:
    """``fn()``'s result, and its CPU and wall seconds, MB/s of ``size`` bytes and RSS growth."""
    reset = _reset_peak()
    before = proc_status_kb("VmRSS")
    start, cpu = time.perf_counter(), time.process_time()
    result = fn()
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    growth = (proc_status_kb("VmHWM") - before) / 1024
    return result, {
        "seconds": wall,
        "cpu_seconds": cpu,
        "mb_s": size / 1e6 / wall,
        "cpu_mb_s": size / 1e6 / cpu,
        "growth_mb": round(growth, 1),
        "peak_reset": reset,
    }


def _warm() -> None:
    """Import and run everything once on a tiny log, so the figures measure the reading."""
    import codexmini._knobs  # noqa: F401 - imported by SessionLog, not to be counted
    from codexmini._session import SessionLog, iter_log, read_log

    with tempfile.TemporaryDirectory(prefix="codexmini-bench-warm-") as scratch:
        path = os.path.join(scratch, "warm.jsonl")
        with SessionLog.open(path) as log:
            log.append("turn/start", {}, turn=1)
        list(read_log(path).events)
        list(iter_log(path))


async def open_(opts: Options) -> dict[str, Any]:
    from codexmini._session import SessionLog

    _warm()
    path, size = opts["path"], os.path.getsize(opts["path"])
    log, figures = _measure(lambda: SessionLog.open(path), size)
    try:
        figures.update(events=len(log.events), next_turn=log.next_turn, log_bytes=size)
    finally:
        log.close()
    return figures


async def read(opts: Options) -> dict[str, Any]:
    from codexmini._session import read_log

    _warm()
    path, size = opts["path"], os.path.getsize(opts["path"])
    result, figures = _measure(lambda: read_log(path), size)

    def every() -> int:
        return sum(1 for _ in result.events)

    count, again = _measure(every, size)
    assert count == len(result.events)
    figures.update(events=count, log_bytes=size, events_pass=again)
    return figures


async def iter_(opts: Options) -> dict[str, Any]:
    from codexmini._session import iter_log

    _warm()
    path, size = opts["path"], os.path.getsize(opts["path"])
    count, figures = _measure(lambda: sum(1 for _ in iter_log(path)), size)
    figures.update(events=count, log_bytes=size)
    return figures


#: One step's events (a user message, an assistant segment with a tool call,
#: its result), appended before the next prompt.
STEP = (
    ("step/start", {}),
    ("user/message", {"id": "u-next", "content": [{"type": "text", "text": "and now?"}], "source": {"kind": "user"}}),
    (
        "assistant/message",
        {
            "id": "a-next",
            "content": [
                {"type": "text", "text": "Looking."},
                {"type": "tool-call", "id": "c-next", "name": "bash", "arguments": '{"command":"ls"}'},
            ],
            "source": {"provider": "codex", "model": "gpt-5.4"},
        },
    ),
    ("tool/call", {"callId": "c-next", "name": "bash", "arguments": '{"command":"ls"}', "kind": "commandExecution"}),
    (
        "tool/result",
        {"callId": "c-next", "content": [{"type": "text", "text": "a.txt\n"}], "isError": False, "status": "completed"},
    ),
    ("step/end", {"reason": "segment"}),
)


async def prompt(opts: Options) -> dict[str, Any]:
    """The first prompt of a resumed agent, then the next one (``Agent._step_input``,
    internal on purpose: the prompt has no public entry point)."""
    from codexmini._agent import Agent, AgentConfig
    from codexmini._session import SessionLog

    _warm()
    path, size = opts["path"], os.path.getsize(opts["path"])
    try:
        return _prompts(path, size, opts.get("reps", 5), Agent, AgentConfig, SessionLog)
    finally:
        os.truncate(path, size)  # the steps appended: gone again, for the next contender


def _prompts(path: str, size: int, reps: int, Agent: Any, AgentConfig: Any, SessionLog: Any) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="codexmini-bench-ws-") as ws:
        log, opened = _measure(lambda: SessionLog.open(path), size)
        try:
            agent = Agent(log, AgentConfig(cwd=ws))
            first, first_figures = _measure(lambda: agent._step_input([]), size)
            chars = len(first[0]["text"])
            del first  # as the agent does: the step's input is gone by the next step
            turn = log.next_turn
            log.append_many([(type_, dict(data), turn, 1) for type_, data in STEP])
            nexts = []
            for _ in range(reps):
                _, figures = _measure(lambda: len(agent._step_input([])[0]["text"]), size)
                nexts.append(figures["cpu_seconds"])
                log.append_many([(type_, dict(data), turn, 1) for type_, data in STEP])
        finally:
            log.close()
    nexts.sort()
    return {
        "log_bytes": size,
        "events": len(log.events) - len(STEP) * (len(nexts) + 1),
        "open": opened,
        "first_prompt": first_figures,
        "prompt_chars": chars,
        "next_prompt_cpu_ms": [round(s * 1e3, 3) for s in nexts],
        "next_prompt_cpu_ms_median": nexts[len(nexts) // 2] * 1e3,
    }


CONTENDERS = {"open": open_, "read": read, "iter": iter_, "prompt": prompt}

if __name__ == "__main__":
    sys.exit(main(CONTENDERS))
