"""One writer per session log, and a log changed behind its writer's back.

The lock: ``flock`` on the log file's own descriptor, taken by
``SessionLog.open`` before it reads or cuts anything, held until ``close``
(or the writer's death); a second writer, in this process or another, gets
``SessionLogLocked`` naming the holder's pid (from ``<log>.pid``); readers
take no lock.  The check before each append: the path still leads to the
file opened, and the file is as long as its writer left it; otherwise
``SessionLogChanged`` and nothing is written.  All of it on real files, with
real processes where another process is the point.
"""

from __future__ import annotations

import errno
import importlib.util
import logging
import os
import signal
import subprocess
import sys
import types
from pathlib import Path

import pytest

from codexmini import SessionLog, SessionLogChanged, SessionLogError, SessionLogLocked, read_log
from codexmini import _session as session_mod

REPO = Path(__file__).resolve().parents[1]

HOLDER = """
import sys
from codexmini import SessionLog
log = SessionLog.open(sys.argv[1])
log.append("turn/start", {}, turn=1)
print("holding", flush=True)
sys.stdin.read()
"""


def pid_file(path):
    return Path(str(path) + session_mod.PID_SUFFIX)


def holder(path):
    """Another process that opened ``path`` and holds it (until killed)."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline() == "holding\n"
    return proc


# -- the lock ------------------------------------------------------------------------------


def test_session_lock_a_second_writer_in_this_process_is_refused_and_the_first_goes_on(tmp_path):
    path = tmp_path / "s.jsonl"
    with SessionLog.open(path) as first:
        first.append("turn/start", {}, turn=1)
        assert pid_file(path).read_text() == f"{os.getpid()}\n"
        for _ in range(2):  # a refused open leaves the lock and the pid file as they were
            with pytest.raises(SessionLogLocked) as info:
                SessionLog.open(path)
            assert (info.value.path, info.value.pid) == (str(path), os.getpid())
            assert f"locked by its writer, pid {os.getpid()}" in str(info.value)
            assert isinstance(info.value.__cause__, BlockingIOError)
        assert read_log(path).events == first.events  # a reader takes no lock
        first.append("turn/end", {"reason": "completed"}, turn=1)
    assert not pid_file(path).exists()
    with SessionLog.open(path) as again:  # the lock went with close()
        assert [e["seq"] for e in again.events] == [0, 1]


def test_session_lock_a_writer_in_another_process_is_named_and_its_death_frees_the_log(tmp_path):
    path = tmp_path / "s.jsonl"
    proc = holder(path)
    try:
        with pytest.raises(SessionLogLocked) as info:
            SessionLog.open(path)
        assert info.value.pid == proc.pid and f"pid {proc.pid}" in str(info.value)
        assert [e["type"] for e in read_log(path).events] == ["turn/start"]
    finally:
        proc.send_signal(signal.SIGKILL)  # no cleanup: its pid file stays behind
        proc.wait()
        proc.stdin.close()
        proc.stdout.close()
    assert pid_file(path).read_text() == f"{proc.pid}\n"
    with SessionLog.open(path) as log:  # the kernel dropped the lock; the stale pid is overwritten
        assert pid_file(path).read_text() == f"{os.getpid()}\n"
        assert log.append("turn/end", {"reason": "aborted"}, turn=1)["seq"] == 1


def test_session_lock_through_a_symlink_is_the_same_lock_and_the_same_pid_file(tmp_path):
    real = tmp_path / "real.jsonl"
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    with SessionLog.open(link):
        assert pid_file(real).read_text() == f"{os.getpid()}\n" and not pid_file(link).exists()
        with pytest.raises(SessionLogLocked) as info:
            SessionLog.open(real)
        assert info.value.pid == os.getpid()
    assert not pid_file(real).exists()


def test_session_lock_the_pid_file_is_the_writers_decimal_pid_and_costs_no_descriptor(tmp_path):
    path = tmp_path / "s.jsonl"
    umask = os.umask(0o022)
    os.umask(umask)
    fds = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
    with SessionLog.open(path):
        assert pid_file(path).read_bytes() == b"%d\n" % os.getpid()
        assert pid_file(path).stat().st_mode & 0o777 == 0o666 & ~umask
        if fds is not None:
            assert len(os.listdir("/proc/self/fd")) == fds + 1  # the log's own: the pid file's is closed
    # A pid of 1 (the first process) is a pid all the same.
    with SessionLog.open(path):
        pid_file(path).write_bytes(b"1\n")
        with pytest.raises(SessionLogLocked) as info:
            SessionLog.open(path)
        assert info.value.pid == 1


@pytest.mark.parametrize("content", [b"", b"garbage\n", b"0\n", b"-3\n"])
def test_session_lock_a_pid_file_without_a_pid_is_pid_unknown(tmp_path, content):
    path = tmp_path / "s.jsonl"
    with SessionLog.open(path):
        pid_file(path).write_bytes(content)
        with pytest.raises(SessionLogLocked, match=r"another process \(pid unknown\)") as info:
            SessionLog.open(path)
        assert info.value.pid is None
    assert pid_file(path).read_bytes() == content  # not ours: close leaves it


def test_session_lock_holds_when_the_pid_cannot_be_written(tmp_path, caplog):
    path = tmp_path / "s.jsonl"
    pid_file(path).mkdir()  # in the pid file's way
    with caplog.at_level(logging.INFO, logger="codexmini.session"):
        with SessionLog.open(path) as log:
            with pytest.raises(SessionLogLocked) as info:
                SessionLog.open(path)
            log.append("turn/start", {})
    assert info.value.pid is None
    assert "cannot write the session log writer's pid there" in caplog.text
    assert pid_file(path).is_dir() and len(read_log(path).events) == 1


def test_session_lock_an_error_taking_the_lock_is_a_session_log_error(tmp_path, monkeypatch):
    # A file system that cannot lock (ENOLCK): not "locked", the cause says why.
    def flock(fd, how):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(session_mod, "_fcntl", types.SimpleNamespace(flock=flock, LOCK_EX=2, LOCK_NB=4))
    path = tmp_path / "s.jsonl"
    with pytest.raises(SessionLogError, match=r"s\.jsonl: cannot lock the session log: .*No locks available") as info:
        SessionLog.open(path)
    assert not isinstance(info.value, SessionLogLocked) and info.value.__cause__.errno == errno.ENOLCK


def without_fcntl(monkeypatch):
    """A fresh copy of the session module imported where ``fcntl`` does not
    exist (Windows): its lines are this module's."""
    monkeypatch.setitem(sys.modules, "fcntl", None)
    spec = importlib.util.spec_from_file_location("codexmini._session_without_fcntl", session_mod.__file__)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_session_lock_without_fcntl_takes_no_lock_warns_once_and_still_notices_a_second_writer(
    tmp_path, monkeypatch, caplog
):
    bare = without_fcntl(monkeypatch)
    assert bare._fcntl is None
    path = tmp_path / "s.jsonl"
    with caplog.at_level(logging.WARNING, logger="codexmini.session"):
        first = bare.SessionLog.open(path)
        second = bare.SessionLog.open(path)  # not refused: nothing to refuse it with
    assert caplog.text.count("session logs are not locked") == 1
    assert not pid_file(path).exists()
    first.append("turn/start", {})
    with pytest.raises(SessionLogChanged) as info:  # the first one's line is noticed
        second.append("turn/start", {})
    assert info.value.change == "appended"
    first.close()
    second.close()
    assert [e["seq"] for e in read_log(path).events] == [0]


def test_session_lock_no_lock_where_fcntl_is_missing_warns_once_per_process(tmp_path, monkeypatch, caplog):
    # The same path on this module (the copy above covers its import): with
    # no fcntl, open() takes no lock, writes no pid file and warns once.
    monkeypatch.setattr(session_mod, "_fcntl", None)
    monkeypatch.setattr(session_mod, "_UNLOCKED", [])
    with caplog.at_level(logging.WARNING, logger="codexmini.session"):
        with SessionLog.open(tmp_path / "a.jsonl") as first, SessionLog.open(tmp_path / "a.jsonl") as second:
            assert not first.closed and not second.closed
        with SessionLog.open(tmp_path / "b.jsonl") as log:
            log.append("turn/start", {})
    assert caplog.text.count("session logs are not locked") == 1
    assert session_mod._UNLOCKED == [str(tmp_path / "a.jsonl")]
    assert not pid_file(tmp_path / "a.jsonl").exists() and not pid_file(tmp_path / "b.jsonl").exists()


# -- a log changed behind its writer's back --------------------------------------------------


def opened(path, n=2):
    log = SessionLog.open(path)
    for i in range(n):
        log.append("turn/start", {"i": i}, turn=i + 1)
    return log


def refused(log, change):
    """The next append is refused, writes nothing and closes the log; later ones say the same."""
    count = len(log.events)
    try:
        with pytest.raises(SessionLogChanged) as info:
            log.append("turn/end", {"reason": "completed"}, turn=1)
        assert (info.value.change, info.value.path, info.value.line) == (change, log.path, count + 1)
        assert f"event {count} was not appended" in str(info.value)
        assert log.closed and len(log.events) == count and not pid_file(log.path).exists()
        with pytest.raises(SessionLogChanged) as again:
            log.append("turn/end", {"reason": "completed"}, turn=1)
        assert again.value is info.value
    finally:
        log.close()  # (closed already, unless the check failed: then not left open for the collector)
    return info.value


def test_session_lock_a_truncated_log_is_noticed_and_not_written(tmp_path):
    path = tmp_path / "s.jsonl"
    log = opened(path)
    size = path.stat().st_size
    os.truncate(path, 0)
    error = refused(log, "truncated")
    assert f"0 bytes where its writer left {size}" in str(error)
    assert path.read_bytes() == b""


def test_session_lock_a_log_someone_else_appended_to_is_noticed_and_not_written(tmp_path):
    path = tmp_path / "s.jsonl"
    log = opened(path)
    with open(path, "ab") as other:
        other.write(b"x\n")
    content = path.read_bytes()
    error = refused(log, "appended")
    assert "someone else wrote to it" in str(error)
    assert path.read_bytes() == content


def test_session_lock_a_replaced_log_is_noticed_and_the_new_file_left_alone(tmp_path):
    path = tmp_path / "s.jsonl"
    log = opened(path)
    new = tmp_path / "new.jsonl"
    new.write_bytes(path.read_bytes())  # the same bytes, another file
    os.replace(new, path)
    error = refused(log, "replaced")
    assert "its path leads to another file" in str(error)
    assert len(read_log(path).events) == 2


def test_session_lock_a_removed_log_is_noticed_with_its_cause(tmp_path):
    path = tmp_path / "s.jsonl"
    log = opened(path)
    os.rename(path, tmp_path / "elsewhere.jsonl")
    error = refused(log, "missing")
    assert "is no longer at its path" in str(error) and isinstance(error.__cause__, FileNotFoundError)
    assert not path.exists() and len(read_log(tmp_path / "elsewhere.jsonl").events) == 2


def test_session_lock_an_unchanged_log_goes_on_after_a_reader_and_a_reopen(tmp_path):
    path = tmp_path / "s.jsonl"
    with opened(path) as log:
        read_log(path)
        log.append("turn/end", {"reason": "completed"}, turn=2)
    with SessionLog.open(path) as log:
        assert log.append("turn/start", {}, turn=3)["seq"] == 3
    assert [e["seq"] for e in read_log(path).events] == [0, 1, 2, 3]
