"""Storage faults of the session log: real permission bits, a real file size
limit, a really full file system.

Each fault -- where the log is opened, or in the middle of an append -- must
be a ``SessionLogError`` naming the log, with the ``OSError`` that caused it
as its ``__cause__``; what was acknowledged before must read back intact,
with no torn line left (the partial line of a failed append is cut off
again); the append after it fails with that same error, not a secondary
"closed"; through the ``Agent``, ``run()`` raises it and the turn ends at
once.  The faults are real: permission bits as ``nobody`` (the child drops
its privileges when the suite runs as root), ``RLIMIT_FSIZE`` in a child with
``SIGXFSZ`` ignored (``EFBIG``), a 64 KiB tmpfs in a private mount namespace
(``ENOSPC`` mid-write; where this machine allows the mount), ``/dev/full``
under the log's descriptor, a directory, a file or a FIFO where the log or
its directory should be.  The children are :mod:`log_child`.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Any, Dict, Iterator, Optional

import figures
import log_child
import pytest

from codexmini import Agent, AgentConfig, AgentMessageDelta, Launch, SessionLog, SessionLogError, read_log
from codexmini.testing import CodexLike, FakeAppServer

SECTION = "storage faults"
TRIED = "faults tried, each a SessionLogError naming the log with the real OSError as its cause"


def tried(acknowledged: int) -> None:
    """Count a fault whose assertions held: every acknowledged event read back."""
    figures.count(SECTION, TRIED)
    figures.count(SECTION, "events acknowledged before a fault, all read back intact", acknowledged)
    figures.count(SECTION, "acknowledged events lost", 0)


def env() -> Dict[str, str]:
    return dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))


def child(*args: str) -> Dict[str, Any]:
    done = subprocess.run([sys.executable, log_child.__file__, *args], capture_output=True, text=True, env=env())
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture
def scratch() -> Iterator[str]:
    """A directory a child dropped to ``nobody`` can be given (not under the
    test's own tmp_path, which ``nobody`` cannot reach)."""
    root = tempfile.mkdtemp(prefix="codexmini-storage-")
    yield root
    for directory, _, _ in os.walk(root):  # the children left directories without permissions
        os.chmod(directory, 0o700)
    shutil.rmtree(root)


def caused_by(fault: Dict[str, Any], cause: str, code: str) -> None:
    assert fault["error"] == "SessionLogError", fault
    assert (fault["cause"], fault["errno"]) == (cause, code), fault
    assert fault["message"].startswith(fault["path"] + ": "), fault


# -- permission bits, as nobody ------------------------------------------------------------


@pytest.mark.parametrize("scenario", ["dir-not-writable", "nested-dir-not-writable"])
def test_storage_faults_a_directory_without_write_permission(scratch, scenario):
    out = child(scenario, scratch)
    assert out["uid"] != 0
    caused_by(out["open"], "PermissionError", "EACCES")
    assert "Permission denied" in out["open"]["message"]
    assert out["listing"] == []  # nothing created: no log, no pid file
    tried(0)


def test_storage_faults_a_read_only_log_is_refused_and_left_as_it_was(scratch):
    out = child("log-read-only", scratch)
    caused_by(out["open"], "PermissionError", "EACCES")
    assert out["unchanged"] and out["read"] == {"events": log_child.BEFORE, "warnings": [], "seqs_ok": True}
    tried(log_child.BEFORE)


@pytest.mark.parametrize("scenario", ["log-unreadable", "dir-not-searchable"])
def test_storage_faults_a_log_that_cannot_be_reached_for_reading(scratch, scenario):
    out = child(scenario, scratch)
    caused_by(out["open"], "PermissionError", "EACCES")
    caused_by(out["read_log"], "PermissionError", "EACCES")
    assert out["read"] == {"events": log_child.BEFORE, "warnings": [], "seqs_ok": True}  # once reachable again
    tried(log_child.BEFORE)


# -- EFBIG: a file size limit ------------------------------------------------------------------


@pytest.mark.parametrize("room", [0, 50], ids=["at-the-limit", "a-write-cut-short"])
def test_storage_faults_efbig_mid_append(scratch, room):
    out = child("efbig", scratch, str(room))
    caused_by(out["append"], "OSError", "EFBIG")
    assert out["append"]["line"] == log_child.BEFORE + 1 and "File too large" in out["append"]["message"]
    assert out["again_same"] and out["closed"] and out["acknowledged"] == log_child.BEFORE
    assert out["size_unchanged"]  # the part written past the last good line is cut off again
    assert out["read"] == {"events": log_child.BEFORE, "warnings": [], "seqs_ok": True}
    tried(log_child.BEFORE)


def test_storage_faults_efbig_mid_turn_through_the_agent(scratch):
    out = child("agent-efbig", scratch, "300")
    assert out["completed"] == 1  # the first turn, before the limit
    caused_by(out["run"], "OSError", "EFBIG")
    assert out["again_same"]  # the next run() raises the same error at once
    assert out["read_is_acknowledged"] and out["read"]["warnings"] == [] and out["read"]["seqs_ok"]
    tried(out["acknowledged"])


# -- ENOSPC: a full file system, /dev/full -------------------------------------------------------


def in_a_small_tmpfs(scenario: str, directory: str) -> Optional[Dict[str, Any]]:
    """``log_child SCENARIO DIRECTORY`` with a 64 KiB tmpfs mounted on DIRECTORY
    in a mount namespace of its own (gone with it); None when this machine
    does not let us (no ``unshare``, not privileged)."""
    if shutil.which("unshare") is None:
        return None
    mount = 'mount -t tmpfs -o size=64k codexmini-full "$1" || exit 97; shift; exec "$@"'
    argv = ["unshare", "--mount", "sh", "-c", mount, "sh", directory, sys.executable, log_child.__file__]
    done = subprocess.run([*argv, scenario, directory], capture_output=True, text=True, env=env())
    if done.returncode != 0 and not done.stdout and (done.returncode == 97 or done.stderr.startswith("unshare:")):
        return None
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("scenario", ["enospc", "agent-enospc"])
def test_storage_faults_enospc_on_a_full_file_system(scratch, scenario):
    out = in_a_small_tmpfs(scenario, scratch)
    if out is None:
        pytest.skip("no private tmpfs here (unshare --mount and mount need privileges)")
    fault = out["append"] if scenario == "enospc" else out["run"]
    caused_by(fault, "OSError", "ENOSPC")
    assert out["acknowledged"] > 0 and out["read"]["warnings"] == [] and out["read"]["seqs_ok"]
    if scenario == "enospc":
        assert out["statfs_blocks"] * 4096 <= 64 * 1024 and out["read"]["events"] == out["acknowledged"]
    else:
        assert out["completed"] > 0 and out["again_same"] and out["read_is_acknowledged"]
    tried(out["acknowledged"])


def under_dev_full(log: SessionLog) -> None:
    full = os.open("/dev/full", os.O_WRONLY)
    try:
        os.dup2(full, log._file.fileno())
    finally:
        os.close(full)


def test_storage_faults_enospc_from_dev_full(tmp_path):
    path = str(tmp_path / "s.jsonl")
    with SessionLog.open(path) as log:
        log.append("turn/start", {}, turn=1)
        under_dev_full(log)
        with pytest.raises(SessionLogError) as info:
            log.append("turn/end", {"reason": "completed"}, turn=1)
        with pytest.raises(SessionLogError) as again:
            log.append("turn/end", {"reason": "completed"}, turn=1)
    assert info.value.__cause__.errno == errno.ENOSPC and again.value is info.value
    assert len(read_log(path).events) == 1
    tried(1)


async def test_storage_faults_enospc_from_dev_full_mid_turn_through_the_agent(tmp_path):
    path = str(tmp_path / "s.jsonl")

    def listener(event: Any) -> None:
        if isinstance(event, AgentMessageDelta):
            under_dev_full(log)

    config = AgentConfig(launch=Launch(launcher=FakeAppServer(CodexLike).launch), cwd=str(tmp_path), skills=False)
    with SessionLog.open(path) as log:
        async with Agent(log, config, on_event=listener) as agent:
            with pytest.raises(SessionLogError) as info:
                await agent.run("hello")
            acknowledged = list(log.events)
    assert info.value.__cause__.errno == errno.ENOSPC
    assert read_log(path) == (acknowledged, [])
    tried(len(acknowledged))


# -- something else where the log or its directory should be -------------------------------------


@pytest.mark.parametrize("what", ["a directory", "a file as its directory", "a FIFO"])
def test_storage_faults_something_else_in_the_logs_place(tmp_path, what):
    path = tmp_path / "s.jsonl"
    if what == "a directory":
        path.mkdir()
        expected = "IsADirectoryError"
    elif what == "a FIFO":
        os.mkfifo(path)
        expected = "ESPIPE"  # it opens, but cannot be read back from its start
    else:
        (tmp_path / "dir").write_bytes(b"")
        path = tmp_path / "dir" / "s.jsonl"
        expected = "FileExistsError"
    with pytest.raises(SessionLogError) as info:
        SessionLog.open(path)
    cause = info.value.__cause__
    assert expected in (type(cause).__name__, errno.errorcode[cause.errno])
    assert str(info.value).startswith(f"{path}: ") and info.value.path == str(path)
    assert not os.path.exists(str(path) + ".pid")
    tried(0)
