"""Storage faults of the session log, in this process: each is a
``SessionLogError`` naming the path, with the real ``OSError`` as its cause,
and what was acknowledged before stays intact and readable.

The faults are real where this process can cause them without privileges or
limits (a directory or a FIFO where the log should be, a file where its
directory should be, the kernel's ENOSPC of ``/dev/full`` under the log's
descriptor); a file double stands in for a write cut short and a cut that
fails.  Permission bits (as an unprivileged user) and a real
``RLIMIT_FSIZE`` are played in child processes by the reliability suite
(``tests/reliability/test_storage_faults.py``).
"""

from __future__ import annotations

import errno
import io
import logging
import os

import pytest

from codexmini import SessionLog, SessionLogError, read_log
from codexmini import _session as session_mod


def written(path, n):
    """A closed log at ``path`` with ``n`` events; its bytes."""
    with SessionLog.open(path) as log:
        for i in range(n):
            log.append("turn/start", {"i": i}, turn=i + 1)
    return path.read_bytes()


def cause_of(info):
    assert isinstance(info.value.__cause__, OSError), info.value.__cause__
    return info.value.__cause__


def test_session_faults_a_directory_where_the_log_should_be(tmp_path):
    path = tmp_path / "s.jsonl"
    path.mkdir()
    with pytest.raises(
        SessionLogError, match=r"s\.jsonl: cannot open the session log for appending: .*Is a directory"
    ) as info:
        SessionLog.open(path)
    assert isinstance(cause_of(info), IsADirectoryError) and info.value.path == str(path)
    with pytest.raises(SessionLogError, match=r"s\.jsonl: cannot read the session log: .*Is a directory") as info:
        read_log(path)
    assert isinstance(cause_of(info), IsADirectoryError)
    assert sorted(os.listdir(tmp_path)) == ["s.jsonl"]  # no pid file, nothing else


def test_session_faults_a_file_where_the_directory_should_be(tmp_path):
    (tmp_path / "sessions").write_bytes(b"not a directory")
    path = tmp_path / "sessions" / "s.jsonl"
    with pytest.raises(SessionLogError, match="cannot open the session log for appending") as info:
        SessionLog.open(path)
    assert cause_of(info).errno in (errno.EEXIST, errno.ENOTDIR)
    with pytest.raises(SessionLogError, match="cannot read the session log") as info:
        read_log(path)
    assert isinstance(cause_of(info), NotADirectoryError)


def test_session_faults_reading_a_log_that_is_not_there(tmp_path):
    with pytest.raises(SessionLogError, match=r"nope\.jsonl: cannot read the session log: .*No such file") as info:
        read_log(tmp_path / "nope.jsonl")
    assert isinstance(cause_of(info), FileNotFoundError)


def test_session_faults_a_log_that_cannot_be_read_back_releases_the_lock(tmp_path):
    # A FIFO opens and locks, but cannot be read from the start: seek fails.
    path = tmp_path / "s.jsonl"
    os.mkfifo(path)
    with pytest.raises(SessionLogError, match=r"cannot read the session log back: .*Illegal seek") as info:
        SessionLog.open(path)
    assert cause_of(info).errno == errno.ESPIPE
    assert sorted(os.listdir(tmp_path)) == ["s.jsonl"]  # the pid file went with the lock


def test_session_faults_enospc_mid_append_is_the_real_error_chained_and_closes(tmp_path):
    # /dev/full under the log's descriptor: the kernel's own ENOSPC.
    path = tmp_path / "s.jsonl"
    log = SessionLog.open(path)
    log.append("turn/start", {})
    full = os.open("/dev/full", os.O_WRONLY)
    try:
        os.dup2(full, log._file.fileno())
    finally:
        os.close(full)
    with pytest.raises(SessionLogError, match=r"s\.jsonl: cannot append event 1: \[Errno 28\] No space left") as info:
        log.append("turn/end", {"reason": "completed"})
    assert cause_of(info).errno == errno.ENOSPC
    assert (info.value.path, info.value.line) == (str(path), 2)
    assert log.closed and len(log.events) == 1
    # Every later append raises that same error, not a secondary "closed".
    with pytest.raises(SessionLogError) as again:
        log.append("turn/end", {"reason": "completed"})
    assert again.value is info.value and again.value.__cause__ is info.value.__cause__
    log.close()
    assert [e["type"] for e in read_log(path).events] == ["turn/start"]


class Faulty(io.FileIO):
    """The log's file, with faults: the first ``write`` takes ``take`` bytes
    (as the kernel does at a file size limit), the next fails with EFBIG;
    ``truncate`` fails when ``uncuttable``; ``close`` fails after closing
    when ``unclosable``."""

    take = 10
    uncuttable = False
    unclosable = False
    writes = 0

    def write(self, data):
        self.writes += 1
        if self.writes > 1:
            raise OSError(errno.EFBIG, "File too large")
        return super().write(bytes(data)[: self.take])

    def truncate(self, size=None):
        if self.uncuttable:
            raise OSError(errno.EIO, "Input/output error")
        return super().truncate(size)

    def close(self):
        super().close()
        if self.unclosable:
            raise OSError(errno.EIO, "Input/output error")


def faulty(log, **faults):
    """Put a :class:`Faulty` on the log's open file description (the lock goes with it)."""
    double = Faulty(os.dup(log._file.fileno()), "a+")
    for name, value in faults.items():
        setattr(double, name, value)
    log._file.close()
    log._file = double
    return double


def test_session_faults_a_write_cut_short_is_cut_off_again(tmp_path):
    path = tmp_path / "s.jsonl"
    before = written(path, 3)
    log = SessionLog.open(path)
    double = faulty(log)
    with pytest.raises(SessionLogError, match="cannot append event 3: .*File too large") as info:
        log.append("turn/end", {"reason": "completed"})
    assert cause_of(info).errno == errno.EFBIG and double.writes == 2  # the loop went on after the short write
    assert log.closed and double.closed
    assert path.read_bytes() == before  # the 10 bytes written are gone again
    assert read_log(path) == (log.events, [])


def test_session_faults_a_partial_line_that_cannot_be_cut_is_a_torn_tail(tmp_path, caplog):
    path = tmp_path / "s.jsonl"
    before = written(path, 2)
    log = SessionLog.open(path)
    faulty(log, uncuttable=True)
    with caplog.at_level(logging.WARNING, logger="codexmini.session"):
        with pytest.raises(SessionLogError, match="File too large"):
            log.append("turn/end", {"reason": "completed"})
    assert "cannot cut off the partial line of the failed append" in caplog.text
    assert path.read_bytes().startswith(before) and len(path.read_bytes()) == len(before) + Faulty.take
    result = read_log(path)
    assert result.events == log.events and len(result.warnings) == 1 and "torn last line" in result.warnings[0]


def test_session_faults_a_failed_fsync_drops_the_unacknowledged_line(tmp_path, monkeypatch):
    # The line reached the file, fsync failed: the append is not acknowledged,
    # so the line is cut off again and the file holds exactly what was.
    path = tmp_path / "s.jsonl"
    before = written(path, 1)
    calls = []
    real = os.fsync

    def fsync(fd):
        calls.append(fd)
        if len(calls) == 1:
            raise OSError(errno.EIO, "Input/output error")
        real(fd)

    log = SessionLog.open(path, fsync=True)
    monkeypatch.setattr(session_mod.os, "fsync", fsync)
    with pytest.raises(SessionLogError, match="cannot append event 1: .*Input/output error") as info:
        log.append("turn/end", {"reason": "completed"})
    assert cause_of(info).errno == errno.EIO and len(calls) == 2  # the cut is synced too
    assert path.read_bytes() == before and read_log(path).events == log.events


def test_session_faults_an_error_closing_the_file(tmp_path):
    path = tmp_path / "s.jsonl"
    log = SessionLog.open(path)
    log.append("turn/start", {})
    faulty(log, unclosable=True)
    with pytest.raises(SessionLogError, match=r"s\.jsonl: cannot close the session log: .*Input/output error") as info:
        log.close()
    assert cause_of(info).errno == errno.EIO and log.closed
    log.close()  # closed all the same: idempotent
    assert len(read_log(path).events) == 1


def test_session_faults_an_append_failing_and_then_closing_badly_reports_the_append(tmp_path):
    path = tmp_path / "s.jsonl"
    log = SessionLog.open(path)
    faulty(log, unclosable=True)
    with pytest.raises(SessionLogError, match="cannot append event 0: .*File too large"):
        log.append("turn/start", {})
    assert log.closed and read_log(path) == ([], [])


def test_session_faults_a_torn_tail_that_cannot_be_cut_fails_the_open(tmp_path, monkeypatch):
    # Appending after a torn tail left in place would bury it mid-file: the
    # open fails instead, with the real error, and releases the lock.
    path = tmp_path / "s.jsonl"
    before = written(path, 2) + b'{"v":1,"seq":2'
    path.write_bytes(before)
    lock = SessionLog._lock

    def lock_then_fault(log, file):
        lock(log, file)
        faulty(log, uncuttable=True)

    monkeypatch.setattr(SessionLog, "_lock", lock_then_fault)
    with pytest.raises(
        SessionLogError, match=r"s\.jsonl: cannot read the session log back: .*Input/output error"
    ) as info:
        SessionLog.open(path)
    assert cause_of(info).errno == errno.EIO
    assert path.read_bytes() == before and sorted(os.listdir(tmp_path)) == ["s.jsonl"]
    monkeypatch.undo()
    with SessionLog.open(path) as log:  # the lock went with the failed open
        assert len(log.events) == 2 and len(log.warnings) == 1
