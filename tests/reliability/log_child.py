"""Session-log scenarios played in a child process, where a test cannot play them itself.

Run as ``python log_child.py SCENARIO DIR [ARG]``: the child plays one
scenario in ``DIR`` and prints one JSON object on stdout, what it saw.  Three
kinds of scenario need a process of their own:

* **permission bits** (``dir-not-writable`` …): as root every permission
  check passes, so the child drops to ``nobody`` first (when it runs as
  root; otherwise it is unprivileged already).  It imports everything it
  uses before that (the interpreter's own files may be unreadable to
  ``nobody``), then gives ``DIR`` to ``nobody`` and drops its groups, gid and
  uid for good.  The test process itself keeps its privileges.
* **a file size limit** (``efbig`` …): ``RLIMIT_FSIZE`` set in the child
  once the log is open, with ``SIGXFSZ`` ignored so that a write past the
  limit fails with ``EFBIG`` instead of killing the process.
* **another process** (``open``, ``agent-open``, ``read``, ``hold``,
  ``contend``, ``writer-loop``): a second writer, a second agent, a reader, a
  holder to kill, contenders for one log.

An error is described by :func:`described`: its type, message, path, line,
``pid``/``change`` when it has them, and the ``OSError`` that caused it
(type and errno name).
"""

from __future__ import annotations

import asyncio
import errno
import hashlib
import json
import os
import pwd
import resource
import signal
import sys
import time
from typing import Any, Dict, List, Optional

from codexmini import (
    Agent,
    AgentConfig,
    Launch,
    SessionLog,
    SessionLogError,
    SessionLogLocked,
    read_log,
)
from codexmini.testing import CodexLike, FakeAppServer

#: The events a log is given before a fault: acknowledged, so they must read back.
BEFORE = 3


def described(exc: BaseException) -> Dict[str, Any]:
    cause = exc.__cause__
    return {
        "error": type(exc).__name__,
        "message": str(exc),
        "path": getattr(exc, "path", None),
        "line": getattr(exc, "line", None),
        "pid": getattr(exc, "pid", None),
        "change": getattr(exc, "change", None),
        "cause": type(cause).__name__ if cause is not None else None,
        "errno": errno.errorcode.get(getattr(cause, "errno", None) or 0),
    }


def attempt(call: Any) -> Dict[str, Any]:
    """``call()``'s error, described, or ``{"error": None}``."""
    try:
        call()
    except SessionLogError as exc:
        return described(exc)
    return {"error": None}


def digest(path: str) -> str:
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


def unprivileged(directory: str) -> None:
    """Become ``nobody`` (when root), owning ``directory``; for good."""
    if os.geteuid() != 0:
        return
    try:
        nobody = pwd.getpwnam("nobody")
        uid, gid = nobody.pw_uid, nobody.pw_gid
    except KeyError:  # no such entry: the customary ids
        uid = gid = 65534
    os.chown(directory, uid, gid)
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    assert os.geteuid() != 0 and os.getuid() != 0


def a_log(path: str, n: int = BEFORE) -> str:
    """A closed log at ``path`` holding ``n`` events; its digest."""
    with SessionLog.open(path) as log:
        for i in range(n):
            log.append(
                "user/message",
                {"id": f"m{i}", "content": [{"type": "text", "text": f"event {i}"}], "source": {"kind": "user"}},
            )
    return digest(path)


def read_back(path: str) -> Dict[str, Any]:
    result = read_log(path)
    return {"events": len(result.events), "warnings": result.warnings, "seqs_ok": seqs_ok(result.events)}


def seqs_ok(events: List[Dict[str, Any]]) -> bool:
    return [e["seq"] for e in events] == list(range(len(events)))


# -- permission bits, as nobody ------------------------------------------------------------


def permission(scenario: str, directory: str) -> Dict[str, Any]:
    unprivileged(directory)
    here = os.path.join(directory, "d")
    os.mkdir(here)
    path = os.path.join(here, "s.jsonl")
    out: Dict[str, Any] = {"uid": os.getuid()}
    if scenario == "dir-not-writable":  # a new log where nothing may be created
        os.chmod(here, 0o555)
        out["open"] = attempt(lambda: SessionLog.open(path))
        out["listing"] = os.listdir(here)
    elif scenario == "nested-dir-not-writable":  # its directory cannot be created either
        os.chmod(here, 0o555)
        out["open"] = attempt(lambda: SessionLog.open(os.path.join(here, "sub", "s.jsonl")))
        out["listing"] = os.listdir(here)
    elif scenario == "log-read-only":
        before = a_log(path)
        os.chmod(path, 0o444)
        out["open"] = attempt(lambda: SessionLog.open(path))
        out["unchanged"] = digest(path) == before
        out["read"] = read_back(path)
    elif scenario == "log-unreadable":
        a_log(path)
        os.chmod(path, 0o200)
        out["open"] = attempt(lambda: SessionLog.open(path))
        out["read_log"] = attempt(lambda: read_log(path))
        os.chmod(path, 0o600)
        out["read"] = read_back(path)
    elif scenario == "dir-not-searchable":
        a_log(path)
        os.chmod(here, 0o600)
        out["open"] = attempt(lambda: SessionLog.open(path))
        out["read_log"] = attempt(lambda: read_log(path))
        os.chmod(here, 0o700)
        out["read"] = read_back(path)
    elif scenario == "pid-dir-read-only":  # the lock holds without its pid file
        a_log(path)
        os.chmod(here, 0o555)
        with SessionLog.open(path) as log:
            out["second"] = attempt(lambda: SessionLog.open(path))
            log.append("turn/start", {}, turn=1)
        out["listing"] = os.listdir(here)
        out["read"] = read_back(path)
    else:
        raise SystemExit(f"unknown scenario {scenario}")
    return out


# -- a file size limit -----------------------------------------------------------------------


def limit_file_size(limit: int) -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past it fails with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))


def efbig(directory: str, room: int) -> Dict[str, Any]:
    """The log at the limit but for ``room`` bytes; an event larger than that."""
    path = os.path.join(directory, "s.jsonl")
    a_log(path)
    size = os.path.getsize(path)
    out: Dict[str, Any] = {}
    with SessionLog.open(path) as log:
        limit_file_size(size + room)
        big = {"id": "big", "content": [{"type": "text", "text": "x" * 4096}]}
        out["append"] = attempt(lambda: log.append("user/message", big))
        try:
            log.append("turn/start", {})
        except SessionLogError as exc:
            out["again_same"] = exc.__cause__ is not None and str(exc) == out["append"]["message"]
        out["closed"] = log.closed
        out["acknowledged"] = len(log.events)
    out["size_unchanged"] = os.path.getsize(path) == size
    out["read"] = read_back(path)
    return out


async def agent_turns_until_it_fails(path: str, directory: str, limit: Optional[int]) -> Dict[str, Any]:
    """Agent turns over the log until one raises (the file size ``limit`` set
    after the first turn, if any); what it raised and what was acknowledged."""
    out: Dict[str, Any] = {"completed": 0}
    config = AgentConfig(launch=Launch(launcher=FakeAppServer(CodexLike).launch), cwd=directory, skills=False)
    with SessionLog.open(path) as log:
        async with Agent(log, config) as agent:
            failure: Optional[SessionLogError] = None
            for n in range(10_000):
                try:
                    end = await agent.run(f"turn {n} " + "y" * 512)
                except SessionLogError as exc:
                    failure = exc
                    break
                assert end["reason"] == "completed", end
                out["completed"] += 1
                if limit is not None and n == 0:
                    limit_file_size(os.path.getsize(path) + limit)
            assert failure is not None
            out["run"] = described(failure)
            try:
                await agent.run("once more")
            except SessionLogError as exc:
                out["again_same"] = exc is failure
            out["acknowledged"] = len(log.events)
            acknowledged = list(log.events)
    result = read_log(path)
    out["read"] = {"events": len(result.events), "warnings": result.warnings, "seqs_ok": seqs_ok(result.events)}
    out["read_is_acknowledged"] = result.events == acknowledged
    return out


def enospc(directory: str) -> Dict[str, Any]:
    """On a small file system (the test mounts it): appends until the disk is full."""
    path = os.path.join(directory, "s.jsonl")
    out: Dict[str, Any] = {"statfs_blocks": os.statvfs(directory).f_blocks}
    with SessionLog.open(path) as log:
        for i in range(100_000):
            event = {"id": f"m{i}", "content": [{"type": "text", "text": "z" * 1500}]}
            try:
                log.append("user/message", event)
            except SessionLogError as exc:
                out["append"] = described(exc)
                break
        out["acknowledged"] = len(log.events)
    out["read"] = read_back(path)
    return out


# -- another process -------------------------------------------------------------------------


def hold(path: str) -> None:
    """Open the log, append, say so, and hold it until stdin closes (or a kill)."""
    log = SessionLog.open(path)
    log.append("turn/start", {}, turn=1)
    print(json.dumps({"holding": os.getpid()}), flush=True)
    sys.stdin.read()
    log.close()


async def agent_open(path: str, directory: str) -> Dict[str, Any]:
    """What a second agent on the log gets: its log cannot be opened."""
    config = AgentConfig(launch=Launch(launcher=FakeAppServer(CodexLike).launch), cwd=directory, skills=False)
    try:
        with SessionLog.open(path) as log:
            async with Agent(log, config) as agent:
                return {"error": None, "end": await agent.run("second agent")}
    except SessionLogError as exc:
        return described(exc)


def contend() -> None:
    """Commands on stdin, one per line: ``try PATH`` opens the log; the winner
    appends ten events, answers ``won`` and holds it until ``release``; a
    loser answers with the error it got."""
    log: Optional[SessionLog] = None
    for line in sys.stdin:
        command, _, arg = line.strip().partition(" ")
        if command == "try":
            try:
                log = SessionLog.open(arg)
            except SessionLogLocked as exc:
                print(json.dumps(described(exc)), flush=True)
                continue
            for i in range(10):
                log.append("turn/start", {"by": os.getpid(), "i": i}, turn=1)
            print(json.dumps({"error": None, "won": os.getpid()}), flush=True)
        elif command == "release" and log is not None:
            log.close()
            log = None
            print(json.dumps({"released": os.getpid()}), flush=True)


def writer_loop(path: str, sessions: int) -> Dict[str, Any]:
    """Once a line arrives on stdin (all writers start together), ``sessions``
    times: open the log (waiting while another writer holds it), append 20
    events, close.  The refusals met on the way are counted."""
    sys.stdin.readline()
    refused = 0
    for _ in range(sessions):
        while True:
            try:
                log = SessionLog.open(path)
                break
            except SessionLogLocked:
                refused += 1
                time.sleep(0.001)  # another writer holds it: wait for its close
        with log:
            for i in range(20):
                log.append("turn/start", {"by": os.getpid(), "i": i}, turn=1)
    return {"refused": refused}


def main(argv: List[str]) -> int:
    scenario, directory = argv[1], argv[2]
    if scenario == "efbig":
        out = efbig(directory, int(argv[3]))
    elif scenario == "agent-efbig":
        out = asyncio.run(agent_turns_until_it_fails(os.path.join(directory, "s.jsonl"), directory, int(argv[3])))
    elif scenario == "enospc":
        out = enospc(directory)
    elif scenario == "agent-enospc":
        out = asyncio.run(agent_turns_until_it_fails(os.path.join(directory, "s.jsonl"), directory, None))
    elif scenario == "open":  # directory is the log here
        out = attempt(lambda: SessionLog.open(directory).close())
    elif scenario == "agent-open":
        out = asyncio.run(agent_open(directory, os.path.dirname(directory)))
    elif scenario == "read":
        out = read_back(directory)
    elif scenario == "hold":
        hold(directory)
        return 0
    elif scenario == "contend":
        contend()
        return 0
    elif scenario == "writer-loop":
        out = writer_loop(directory, int(argv[3]))
    else:
        out = permission(scenario, directory)
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
