"""One writer per session log, and a log changed behind its writer's back.

Two writers on one log used to both write, leaving duplicate ``seq`` lines
(an unreadable log); a log truncated, replaced or removed between turns went
unnoticed.  Here, with real processes and real files: a second writer --
another process, a second ``Agent`` process, the CLI, contenders racing for
one log round after round -- is refused with ``SessionLogLocked`` naming the
holder's pid, while readers in other processes keep reading; writers taking
turns on one log leave every line in order; a killed writer frees the log;
the lock holds without its pid file.  And every change made behind a
writer's back -- truncated to nothing or mid-line, appended to by another
process, replaced, removed, renamed -- is found before the next append
(through ``SessionLog``, through the ``Agent`` between turns and mid-turn):
``SessionLogChanged`` says which, and nothing more is written.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from typing import Any, Callable, Dict, List, Optional, Tuple

import figures
import log_child
import pytest

from codexmini import (
    Agent,
    AgentConfig,
    AgentMessageDelta,
    Launch,
    SessionLog,
    SessionLogChanged,
    read_log,
)
from codexmini.testing import CodexLike, FakeAppServer

SECTION = "one writer per log"
CONFLICTS = "lock conflicts: a second writer refused with SessionLogLocked"
NAMED = "of which named the holder's pid"
CHANGES = "external changes detected before an append (SessionLogChanged)"
#: Contenders racing for one log, and how many rounds.
CONTENDERS, ROUNDS = 4, 25
#: Writers taking turns on one log, and how many sessions each.
WRITERS, SESSIONS = 3, 20


def conflict(pid: Optional[int], holder: int) -> None:
    assert pid in (holder, None)  # None: it looked between the holder's lock and its pid file
    figures.count(SECTION, CONFLICTS)
    figures.count(SECTION, NAMED, int(pid == holder))


def env() -> Dict[str, str]:
    return dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))


def child(*args: str) -> Dict[str, Any]:
    done = subprocess.run([sys.executable, log_child.__file__, *args], capture_output=True, text=True, env=env())
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def spawn(*args: str) -> "subprocess.Popen[str]":
    return subprocess.Popen(
        [sys.executable, log_child.__file__, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env(),
    )


def config(directory: Any) -> AgentConfig:
    return AgentConfig(launch=Launch(launcher=FakeAppServer(CodexLike).launch), cwd=str(directory), skills=False)


# -- the lock ------------------------------------------------------------------------------


def test_one_writer_another_process_is_refused_and_readers_keep_reading(tmp_path):
    path = str(tmp_path / "s.jsonl")
    with SessionLog.open(path) as log:
        for n in range(3):
            log.append("turn/start", {}, turn=n + 1)
            refused = child("open", path)
            assert refused["error"] == "SessionLogLocked" and f"pid {os.getpid()}" in refused["message"]
            conflict(refused["pid"], os.getpid())
            assert child("read", path) == {"events": n + 1, "warnings": [], "seqs_ok": True}
            figures.count(SECTION, "reads by another process while a writer held the lock")
    assert child("open", path) == {"error": None}  # closed: free again


async def test_one_writer_a_second_agent_process_is_refused_and_the_first_goes_on(tmp_path):
    path = str(tmp_path / "s.jsonl")
    with SessionLog.open(path) as log:
        async with Agent(log, config(tmp_path)) as agent:
            assert (await agent.run("first agent"))["reason"] == "completed"
            second = spawn("agent-open", path)
            out, _ = second.communicate()
            refused = json.loads(out)
            assert refused["error"] == "SessionLogLocked", refused
            conflict(refused["pid"], os.getpid())
            assert (await agent.run("first agent again"))["reason"] == "completed"
    events = read_log(path).events
    assert [e["seq"] for e in events] == list(range(len(events)))
    assert [e["data"]["reason"] for e in events if e["type"] == "turn/end"] == ["completed", "completed"]


def test_one_writer_the_cli_on_a_held_log_exits_2_naming_the_holder(tmp_path):
    path = str(tmp_path / "s.jsonl")
    with SessionLog.open(path):
        done = subprocess.run(
            [sys.executable, "-m", "codexmini", "run", "hi", "--session", path, "--codex-bin", str(tmp_path / "none")],
            capture_output=True,
            text=True,
            env=env(),
        )
    assert done.returncode == 2 and done.stdout == ""
    assert f"the session log is locked by its writer, pid {os.getpid()}" in done.stderr
    conflict(os.getpid(), os.getpid())


def test_one_writer_contenders_racing_for_a_log_one_wins_each_round(tmp_path):
    procs = [spawn("contend", str(tmp_path)) for _ in range(CONTENDERS)]

    def ask(proc: "subprocess.Popen[str]", line: str) -> None:
        assert proc.stdin is not None
        proc.stdin.write(line + "\n")
        proc.stdin.flush()

    def answer(proc: "subprocess.Popen[str]") -> Dict[str, Any]:
        assert proc.stdout is not None
        return json.loads(proc.stdout.readline())

    try:
        for round_ in range(ROUNDS):
            path = str(tmp_path / f"s{round_}.jsonl")
            for proc in procs:
                ask(proc, f"try {path}")
            answers = [answer(proc) for proc in procs]
            (winner,) = [a["won"] for a in answers if a["error"] is None]
            for a in answers:
                if a["error"] is not None:
                    assert a["error"] == "SessionLogLocked", a
                    conflict(a["pid"], winner)
            events = read_log(path).events  # read while the winner holds it
            assert [(e["seq"], e["data"]["by"]) for e in events] == [(i, winner) for i in range(10)]
            for proc in procs:  # only the winner holds anything to release
                if proc.pid == winner:
                    ask(proc, "release")
                    assert answer(proc) == {"released": winner}
    finally:
        for proc in procs:
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.close()
            assert proc.wait() == 0
            proc.stdout.close()
    figures.count(SECTION, "rounds of contenders racing for one log (one winner each)", ROUNDS)


def test_one_writer_writers_taking_turns_leave_every_line_in_order(tmp_path):
    path = str(tmp_path / "s.jsonl")
    procs = [spawn("writer-loop", path, str(SESSIONS)) for _ in range(WRITERS)]
    for proc in procs:  # all ready: go
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    refused = 0
    for proc in procs:
        out, _ = proc.communicate()
        assert proc.returncode == 0
        refused += json.loads(out)["refused"]
    result = read_log(path)
    assert result.warnings == []
    assert [e["seq"] for e in result.events] == list(range(WRITERS * SESSIONS * 20))
    # Each writer's session is 20 consecutive events: no interleaving.
    runs = [result.events[i : i + 20] for i in range(0, len(result.events), 20)]
    assert all(len({e["data"]["by"] for e in run}) == 1 for run in runs)
    assert sorted({e["data"]["by"] for e in result.events}) == sorted(p.pid for p in procs)
    figures.count(SECTION, "events appended by writers taking turns on one log, all in order", len(result.events))
    figures.count(SECTION, "refusals met by writers waiting their turn", refused)


def test_one_writer_a_killed_writer_frees_the_log(tmp_path):
    path = str(tmp_path / "s.jsonl")
    for n in range(5):
        holder = spawn("hold", path)
        assert holder.stdout is not None and holder.stdin is not None
        assert json.loads(holder.stdout.readline()) == {"holding": holder.pid}
        refused = child("open", path)
        assert refused["error"] == "SessionLogLocked"
        conflict(refused["pid"], holder.pid)
        holder.send_signal(signal.SIGKILL)
        assert holder.wait() == -signal.SIGKILL
        holder.stdin.close()
        holder.stdout.close()
        with SessionLog.open(path) as log:  # the kernel dropped its lock; its pid file is overwritten
            with open(path + ".pid") as fh:
                assert fh.read() == f"{os.getpid()}\n"
            assert len(log.events) == n + 1
        figures.count(SECTION, "locks freed by the SIGKILL of their writer")


def test_one_writer_the_lock_holds_without_its_pid_file():
    scratch = tempfile.mkdtemp(prefix="codexmini-lock-")
    try:
        out = child("pid-dir-read-only", scratch)  # as nobody: the directory is read-only to it
    finally:
        for directory, _, _ in os.walk(scratch):
            os.chmod(directory, 0o700)
        shutil.rmtree(scratch)
    assert out["second"]["error"] == "SessionLogLocked" and out["second"]["pid"] is None
    assert "pid unknown" in out["second"]["message"]
    assert out["listing"] == ["s.jsonl"]
    assert out["read"] == {"events": log_child.BEFORE + 1, "warnings": [], "seqs_ok": True}
    figures.count(SECTION, CONFLICTS)


# -- a log changed behind its writer's back --------------------------------------------------


def truncate_all(path: str) -> None:
    os.truncate(path, 0)


def truncate_mid_line(path: str) -> None:
    os.truncate(path, os.path.getsize(path) - 7)


def append_from_another_process(path: str) -> None:
    subprocess.run(["sh", "-c", 'printf "intruder\\n" >> "$1"', "sh", path], check=True)


def replace(path: str) -> None:
    shutil.copyfile(path, path + ".new")
    os.replace(path + ".new", path)


def remove(path: str) -> None:
    os.unlink(path)


def rename(path: str) -> None:
    os.rename(path, path + ".moved")


#: name → (what is done to the log, the ``change`` it must be found as).
BEHIND_ITS_BACK: Dict[str, Tuple[Callable[[str], None], str]] = {
    "truncated to nothing": (truncate_all, "truncated"),
    "truncated mid-line": (truncate_mid_line, "truncated"),
    "appended to by another process": (append_from_another_process, "appended"),
    "replaced": (replace, "replaced"),
    "removed": (remove, "missing"),
    "renamed": (rename, "missing"),
}


def snapshot(path: str) -> Optional[bytes]:
    if not os.path.exists(path):
        return None
    with open(path, "rb") as fh:
        return fh.read()


def detected(error: SessionLogChanged, change: str, path: str, after: Optional[bytes]) -> None:
    assert (error.change, error.path) == (change, path)
    assert snapshot(path) == after  # nothing written after the change
    figures.count(SECTION, CHANGES)
    figures.count(SECTION, "events written after a change was found", 0)


@pytest.mark.parametrize("name", BEHIND_ITS_BACK)
def test_one_writer_a_change_is_found_by_the_session_log(tmp_path, name):
    act, change = BEHIND_ITS_BACK[name]
    path = str(tmp_path / "s.jsonl")
    with SessionLog.open(path) as log:
        for n in range(3):
            log.append("turn/start", {}, turn=n + 1)
        act(path)
        after = snapshot(path)
        with pytest.raises(SessionLogChanged) as info:
            log.append("turn/end", {"reason": "completed"}, turn=3)
        assert log.closed
    detected(info.value, change, path, after)


@pytest.mark.parametrize("name", BEHIND_ITS_BACK)
async def test_one_writer_a_change_between_turns_is_found_by_the_agent(tmp_path, name):
    act, change = BEHIND_ITS_BACK[name]
    path = str(tmp_path / "s.jsonl")
    with SessionLog.open(path) as log:
        async with Agent(log, config(tmp_path)) as agent:
            assert (await agent.run("first"))["reason"] == "completed"
            act(path)
            after = snapshot(path)
            with pytest.raises(SessionLogChanged) as info:
                await agent.run("second")
    detected(info.value, change, path, after)


@pytest.mark.parametrize("name", BEHIND_ITS_BACK)
async def test_one_writer_a_change_mid_turn_is_found_by_the_agent(tmp_path, name):
    act, change = BEHIND_ITS_BACK[name]
    path = str(tmp_path / "s.jsonl")
    after: List[Optional[bytes]] = []

    def listener(event: Any) -> None:
        if isinstance(event, AgentMessageDelta) and not after:  # the answer streams: change the log now
            act(path)
            after.append(snapshot(path))

    with SessionLog.open(path) as log:
        async with Agent(log, config(tmp_path), on_event=listener) as agent:
            with pytest.raises(SessionLogChanged) as info:
                await agent.run("first")
    detected(info.value, change, path, after[0])
