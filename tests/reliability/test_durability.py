"""Durability: 200 SIGKILLs of a writer appending to a session log, at random points.

Each writer (:mod:`kill_writer`, forked from a zygote so a kill costs
milliseconds) resumes the log -- truncating a torn tail, continuing ``seq`` --
appends events of random sizes (a quarter of them 128-512 KiB, so kills land
inside large writes too) and acknowledges each append once it returned.  The
test kills it with ``SIGKILL`` after a random number of acknowledgements plus
a random delay, then reads the log back: it must read (no error), every
acknowledged event must be there byte for byte, and the only thing ever
dropped is a torn last line.  Every :data:`PER_LOG` kills the test itself
reopens the log and appends: appending after reopen works.  The kill points
come from a fixed seed: they vary within a run, not between runs.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from typing import Dict, Set

import figures
import kill_writer

from codexmini import SessionLog, read_log

KILLS = 200
PER_LOG = 10
SEED = 20261210
#: Bound on waiting for a writer's acknowledgements (it writes ~10 MB at most).
ACK_DEADLINE_S = 30.0


class Zygote:
    def __init__(self) -> None:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
        self.proc = subprocess.Popen(
            [sys.executable, kill_writer.__file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
        )

    def ask(self, *words: object) -> int:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(" ".join(map(str, words)) + "\n")
        self.proc.stdin.flush()
        return int(self.proc.stdout.readline())

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        assert self.proc.wait(timeout=30) == 0
        self.proc.stdout.close()


def acked(path: str) -> Set[int]:
    with open(path, "rb") as fh:
        return {int(line) for line in fh.read().split(b"\n")[:-1]}  # a torn last ack is not one


def wait_acks(path: str, n: int) -> None:
    end = time.monotonic() + ACK_DEADLINE_S
    while len(acked(path)) < n:
        assert time.monotonic() < end, f"the writer acknowledged fewer than {n} events"
        time.sleep(0.0002)


def test_durability_200_sigkills_of_a_writer(tmp_path):
    rng = random.Random(SEED)
    zygote = Zygote()
    totals: Dict[str, int] = dict(kills=0, torn=0, acked=0, large=0, reopened=0)
    try:
        for kill in range(KILLS):
            log_path = str(tmp_path / f"session-{kill // PER_LOG}.jsonl")
            acks = str(tmp_path / f"acks-{kill // PER_LOG}")
            open(acks, "ab").close()
            before = len(acked(acks))
            pid = zygote.ask("spawn", log_path, acks, rng.randrange(1 << 30))
            target = before + rng.randint(0, kill_writer.EVENTS)
            wait_acks(acks, target)
            time.sleep(rng.choice((0.0, rng.uniform(0.0, 0.002))))
            os.kill(pid, signal.SIGKILL)
            status = zygote.ask("reap", pid)
            assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL  # killed, not crashed
            totals["kills"] += 1
            if not os.path.exists(log_path):  # killed before it created the log
                assert acked(acks) == set()
                continue
            # read back: no error, every acknowledged event intact, at most a torn last line dropped
            result = read_log(log_path)
            assert len(result.warnings) <= 1 and all("torn last line" in w for w in result.warnings), result.warnings
            totals["torn"] += len(result.warnings)
            events = result.events
            confirmed = acked(acks)
            assert max(confirmed, default=-1) < len(events)
            for seq in confirmed:
                content = events[seq]["data"]["content"][0]["text"]
                assert content == kill_writer.expected(seq, content)
            if kill % PER_LOG == PER_LOG - 1:
                # the end of this log's run: reopen and append, as a resumed session does
                with SessionLog.open(log_path) as log:
                    count = len(log.events)
                    assert count >= len(confirmed)
                    log.append("agent/error", {"message": "resumed after a kill", "code": "TEST"})
                again = read_log(log_path)
                assert again.warnings == [] and len(again.events) == count + 1
                assert again.events[-1]["seq"] == count
                totals["reopened"] += 1
                totals["acked"] += len(confirmed)
                totals["large"] += sum(
                    1
                    for s in confirmed
                    if int(events[s]["data"]["content"][0]["text"].split("|")[1]) >= kill_writer.LARGE[0]
                )
    finally:
        zygote.close()
    assert totals["kills"] == KILLS
    figures.count("durability", "SIGKILLs of a writer appending to a session log", totals["kills"])
    figures.count("durability", "acknowledged events, all read back intact", totals["acked"])
    figures.count("durability", "of which large (128-512 KiB)", totals["large"])
    figures.count("durability", "reads that dropped a torn last line (and nothing else)", totals["torn"])
    figures.count("durability", "logs reopened and appended to after the kills", totals["reopened"])
    figures.count("durability", "acknowledged events lost", 0)
