"""The session log: durable, append-only JSONL, the single source of truth.

Theory of operation
-------------------
One event per line (the format: ``docs/session-log.md``), written as *one*
``write`` of the encoded line including its ``\\n``, then flushed (and
``fsync``-ed when configured).  A crash can therefore leave at most one
damaged line, and only at the end: the line whose write was cut short.
Reading back (:func:`read_log`) drops such a *torn last line* with a warning
and refuses everything else -- a bad line in the middle, a ``seq`` out of
order, an event missing a key -- with a
:class:`~codexmini.SessionLogError` naming the file and the 1-based
line, because silently skipping history would change what the model sees.

A torn last line is one that has no trailing newline (its write never
finished, even if the bytes happen to parse) or that is not valid JSON.
:meth:`SessionLog.open` truncates the file back to the end of the last good
line before appending, so the next event starts on a fresh line instead of
being glued onto the garbage (which would turn a droppable torn tail into a
corrupt middle line).

Listeners (:meth:`SessionLog.subscribe`) receive ``(event, line)``: the event
dict and the exact text written, newline included.  The CLI's ``--json`` mode
prints ``line`` as is, so its stdout is byte-for-byte the log.

One writer per log
------------------
:meth:`SessionLog.open` takes an exclusive ``flock`` on the log file's own
descriptor (``LOCK_EX | LOCK_NB``) before it reads or truncates anything, and
holds it until :meth:`SessionLog.close` (or the process's exit: the kernel
drops it).  A second writer -- another process, or another ``open`` in this
one -- gets :class:`~codexmini.SessionLogLocked` naming the holder's pid,
which the holder writes to ``<log>.pid`` (next to the log file itself,
symlinks resolved) once it has the lock and removes when it closes the log.
Readers take no lock: :func:`read_log` works while a writer holds it.
Without ``fcntl`` (Windows) no lock is taken, with a warning once per
process; the check below still stops a writer whose log someone else wrote
to (``docs/windows.md`` designs the equivalent there).

A log changed behind the writer's back
--------------------------------------
Before each append the writer checks that its path still leads to the file
it opened (``st_dev``/``st_ino`` of ``os.stat(path)`` against those of its
descriptor) and that the file is exactly as long as it left it.  Otherwise --
removed or renamed, replaced, truncated, appended to by someone else -- it
raises :class:`~codexmini.SessionLogChanged` and writes nothing.  (The check
narrows the window, it cannot close it: the lock is what keeps cooperating
writers out; this catches the others.)

Faults
------
Every ``OSError`` of the file -- creating its directory, opening, locking,
reading it back, writing, syncing, closing -- is a
:class:`~codexmini.SessionLogError` naming the path, with the ``OSError`` as
its ``__cause__``.  An append that failed (or found the file changed) closes
the log: its partial line, if any, is cut off again (the file then ends with
the last acknowledged event; if the cut fails too, readers drop it as a torn
last line), the lock is released, and every later append raises that same
error again -- the real cause, not a secondary "closed".

The helpers at the end (:func:`next_turn_number`, :func:`has_header`) are
pure queries over a list of events; the knob fold lives in :mod:`._knobs`.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import time
from types import MappingProxyType, ModuleType
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    Iterable,
    List,
    Mapping,
    Optional,
    Tuple,
)

from ._errors import SessionLogChanged, SessionLogError, SessionLogLocked
from ._jsontext import encoder

if TYPE_CHECKING:  # the checker sees the standard library; at run time, ._dataclasses (nothing compiled)
    from typing import NamedTuple
else:
    from ._dataclasses import NamedTuple

_fcntl: Optional[ModuleType]
try:
    import fcntl as _fcntl
except ImportError:  # Windows: no advisory locks (docs/windows.md)
    _fcntl = None

logger = logging.getLogger("codexmini.session")

#: The writer's pid is written to the log's path (symlinks resolved) plus this.
PID_SUFFIX = ".pid"
#: A refused writer reads the holder's pid up to this many times, this far
#: apart: a holder that has just taken the lock writes its pid a moment later.
PID_READS, PID_READ_INTERVAL_S = 20, 0.001

LOG_VERSION = 1

LogEntry = Dict[str, Any]
Listener = Callable[[LogEntry, str], None]

#: Every event type and the keys of its ``data`` ("?" = optional); their
#: meaning: ``docs/session-log.md``.
#: Appending checks the type against this table; the keys are documentation
#: for writers (the agent), not enforced here.
EVENT_TYPES: Mapping[str, Tuple[str, ...]] = MappingProxyType(
    {
        "session/header": ("reason", "provider", "model", "codexVersion", "codexminiVersion"),
        "sandbox/mode": ("mode",),
        "approval/policy": ("policy",),
        "model/choice": ("model",),
        "model/endpoint": ("baseUrl", "wireApi", "apiKeyEnv"),
        "turn/start": (),
        "step/start": (),
        "step/end": ("reason",),
        "user/message": ("id", "content", "source"),
        "assistant/message": ("id", "content", "source", "usage?"),
        "tool/call": ("callId", "name", "arguments", "kind"),
        "tool/result": ("callId", "content", "isError", "status"),
        "approval/decision": ("method", "itemId", "decision", "by", "unanswered?"),
        "turn/end": ("reason", "error?", "usage?", "abortedBy?", "blocked?"),
        "agent/error": ("message", "code", "cause?"),
    }
)

#: Keys every event line must have.
REQUIRED_KEYS = ("v", "seq", "ts", "type", "turn", "step", "data")


class ReadResult(NamedTuple):
    events: List[LogEntry]
    warnings: List[str]


#: The session log's lines: ``json.dumps(…, ensure_ascii=False, separators=(",", ":"))``.
_encode = encoder()


def encode_event(event: Mapping[str, Any]) -> str:
    """The exact line written for ``event``, newline included."""
    return _encode(event) + "\n"


#: The envelope's constant parts as JSON, for :meth:`SessionLog.append_many`.
_VERSION_TEXT = _encode(LOG_VERSION)
_TYPE_TEXT: Dict[str, str] = {type_: _encode(type_) for type_ in EVENT_TYPES}


def _number(value: Any) -> str:
    """A turn or step number as JSON: ``null`` and plain ints directly,
    anything else as :func:`encode_event` would write it."""
    if value is None:
        return "null"
    if type(value) is int:
        return str(value)
    return _encode(value)


def _check(event: Any, expected_seq: int) -> Optional[str]:
    """Why ``event`` is not the next well-formed event, or None."""
    if not isinstance(event, dict):
        return f"not a JSON object ({type(event).__name__})"
    missing = [k for k in REQUIRED_KEYS if k not in event]
    if missing:
        return "missing " + ", ".join(missing)
    if event["v"] != LOG_VERSION:
        return f"unsupported log version {event['v']!r}"
    if event["seq"] != expected_seq or isinstance(event["seq"], bool):
        return f"seq {event['seq']!r} where {expected_seq} was expected"
    if not isinstance(event["data"], dict):
        return "data is not an object"
    return None


def _scan(path: str) -> Tuple[List[LogEntry], List[str], int]:
    """Parse the log at ``path``: (events, warnings, end of the last good line)."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as exc:
        raise SessionLogError(f"{path}: cannot read the session log: {exc}", path=path) from exc
    return _parse(path, raw)


def _parse(path: str, raw: bytes) -> Tuple[List[LogEntry], List[str], int]:
    """Parse the bytes of the log at ``path``: (events, warnings, end of the last good line)."""
    lines = raw.split(b"\n")
    # After the final newline split() yields b"": nothing torn.  Anything else
    # there is an unterminated line: its write never completed.
    tail = lines.pop()
    events: List[LogEntry] = []
    warnings: List[str] = []
    offset = 0
    for number, line in enumerate(lines, start=1):
        try:
            event = json.loads(line.decode("utf-8"))
        except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
            if number == len(lines) and not tail:
                warnings.append(_torn(path, number, f"invalid JSON ({exc})"))
                return events, _warn(warnings), offset
            raise SessionLogError(f"{path}:{number}: corrupt session log line: {exc}", path=path, line=number) from None
        problem = _check(event, len(events))
        if problem is not None:
            raise SessionLogError(f"{path}:{number}: bad session log event: {problem}", path=path, line=number)
        events.append(event)
        offset += len(line) + 1
    if tail:
        warnings.append(_torn(path, len(lines) + 1, "no trailing newline"))
    return events, _warn(warnings), offset


def _torn(path: str, number: int, why: str) -> str:
    return f"{path}:{number}: dropped a torn last line: {why}"


def _warn(warnings: List[str]) -> List[str]:
    for w in warnings:
        logger.warning("%s", w)
    return warnings


def read_log(path: str) -> ReadResult:
    """Read a session log back.  A torn last line is dropped with a warning
    (logged and returned); any other bad line raises :class:`SessionLogError`."""
    events, warnings, _ = _scan(os.fspath(path))
    return ReadResult(events, warnings)


class SessionLog:
    """An open session log.  Create it with :meth:`open`; it is a context manager."""

    def __init__(self, path: str, *, fsync: bool = False, clock: Callable[[], float] = time.time) -> None:
        self.path = os.fspath(path)
        self.fsync = fsync
        self._clock = clock
        self._file: Optional[io.FileIO] = None  # set by open(); None again once closed
        self._events: List[LogEntry] = []
        self._listeners: List[Listener] = []
        #: Warnings from reading the existing file back (a dropped torn line).
        self.warnings: List[str] = []
        self._identity = (0, 0)  # (st_dev, st_ino) of the file open()ed
        self._size = 0  # its length as this writer left it
        self._pid_path: Optional[str] = None  # the pid file written while holding the lock
        self._failure: Optional[SessionLogError] = None  # what closed it, raised again by every append

    @classmethod
    def open(cls, path: str, fsync: bool = False, clock: Callable[[], float] = time.time) -> "SessionLog":
        """Open ``path`` for appending, creating it (and its parent directories)
        or reading it back and continuing its ``seq``.  The writer's lock is
        taken first (:class:`~codexmini.SessionLogLocked` when another writer
        holds it); then a torn last line is dropped and truncated away before
        anything is appended.  A storage fault is a
        :class:`~codexmini.SessionLogError` with its ``OSError`` as cause."""
        log = cls(path, fsync=fsync, clock=clock)
        path = log.path
        parent = os.path.dirname(path)
        try:
            if parent:
                os.makedirs(parent, exist_ok=True)
            file = io.FileIO(path, "a+")
        except OSError as exc:
            raise SessionLogError(f"{path}: cannot open the session log for appending: {exc}", path=path) from exc
        log._file = file
        try:
            log._lock(file)  # before reading: only the writer may cut a torn tail
            try:
                file.seek(0)
                raw = file.readall()
                log._events, log.warnings, good_end = _parse(path, raw)
                if good_end < len(raw):
                    file.truncate(good_end)
                    _sync(file, fsync)
                opened = os.fstat(file.fileno())
            except OSError as exc:
                raise SessionLogError(f"{path}: cannot read the session log back: {exc}", path=path) from exc
        except BaseException:
            with contextlib.suppress(SessionLogError):
                log.close()
            raise
        log._identity = (opened.st_dev, opened.st_ino)
        log._size = good_end
        return log

    def _lock(self, file: io.FileIO) -> None:
        """Take the writer's lock on ``file`` and write this process's pid beside it."""
        if _fcntl is None:
            _warn_unlocked(self.path)
            return
        pid_path = os.path.realpath(self.path) + PID_SUFFIX
        try:
            _fcntl.flock(file.fileno(), _fcntl.LOCK_EX | _fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise SessionLogLocked(self.path, _holder(pid_path)) from exc
        except OSError as exc:
            raise SessionLogError(f"{self.path}: cannot lock the session log: {exc}", path=self.path) from exc
        self._pid_path = pid_path
        _write_pid(pid_path)

    @property
    def events(self) -> List[LogEntry]:
        """Every event of the log, in order.  The live list: do not mutate it."""
        return self._events

    @property
    def closed(self) -> bool:
        return self._file is None

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(event, line)`` after each append, ``line`` being the
        exact text written.  Returns a function that unsubscribes."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def append(
        self,
        type: str,
        data: Dict[str, Any],
        *,
        turn: Optional[int] = None,
        step: Optional[int] = None,
    ) -> LogEntry:
        """Write one event durably and return it.  The event holds ``data``
        itself, not a copy: do not mutate it after appending."""
        (event,) = self.append_many([(type, data, turn, step)])
        return event

    def append_many(
        self, entries: Iterable[Tuple[str, Dict[str, Any], Optional[int], Optional[int]]]
    ) -> List[LogEntry]:
        """Write several events, ``(type, data, turn, step)`` each, with one
        write and one flush (and ``fsync``): when it returns, every one of them
        is durable.  A crash during the write leaves whole lines and at most
        one torn last line, as for :meth:`append`.  A fault of the file, or a
        file changed behind our back, closes the log; this append and every
        later one raise that error."""
        file = self._file
        if file is None:
            if self._failure is not None:
                raise self._failure.with_traceback(None)
            raise SessionLogError(f"session log {self.path} is closed", path=self.path)
        events: List[LogEntry] = []
        lines: List[str] = []
        encoded: List[bytes] = []
        now = round(self._clock(), 3)
        ts: Optional[str] = None  # the batch's one timestamp, as JSON: encoded once
        for type_, data, turn, step in entries:
            type_text = _TYPE_TEXT.get(type_)
            if type_text is None:
                raise SessionLogError(f"unknown session log event type {type_!r}", path=self.path)
            if not isinstance(data, dict):
                raise SessionLogError(f"event data must be a dict, not {data.__class__.__name__}", path=self.path)
            seq = len(self._events) + len(events)
            event: LogEntry = {
                "v": LOG_VERSION,
                "seq": seq,
                "ts": now,
                "type": type_,
                "turn": turn,
                "step": step,
                "data": data,
            }
            try:
                ts = _encode(now) if ts is None else ts
                # encode_event(event), the envelope written directly (its keys in the same order).
                line = (
                    f'{{"v":{_VERSION_TEXT},"seq":{seq},"ts":{ts},"type":{type_text},"turn":{_number(turn)},'
                    f'"step":{_number(step)},"data":{_encode(data)}}}\n'
                )
                encoded.append(line.encode("utf-8"))  # a lone surrogate is no UTF-8
            except (TypeError, ValueError, RecursionError) as exc:  # nothing was written
                raise SessionLogError(f"{type_} event is not JSON or not UTF-8: {exc}", path=self.path) from exc
            lines.append(line)
            events.append(event)
        first = len(self._events)
        self._check_unchanged(first)
        payload = b"".join(encoded)
        try:
            _write_all(file, payload)  # one write: whole lines, then at most a torn tail
            _sync(file, self.fsync)
        except OSError as exc:
            error = SessionLogError(f"{self.path}: cannot append event {first}: {exc}", path=self.path, line=first + 1)
            # The tail may now hold a partial line: cut it off and refuse
            # further appends (appending after it would bury it mid-file).
            self._cut(file)
            self._fail(error)
            raise error from exc
        self._size += len(payload)
        self._events.extend(events)
        for event, line in zip(events, lines) if self._listeners else ():
            for listener in list(self._listeners):
                try:
                    listener(event, line)
                except Exception:
                    # The event is already durable; a failing observer must not
                    # make the writer believe the append failed.
                    logger.exception("session log listener %r failed", listener)
        return events

    def _check_unchanged(self, first: int) -> None:
        """Raise (and close) unless the path still leads to the file this writer
        opened and that file is exactly as long as it left it."""
        try:
            there = os.stat(self.path)
        except OSError as exc:
            missing = SessionLogChanged(
                f"{self.path}: the session log is no longer at its path ({exc}): removed or renamed "
                f"behind its writer's back; event {first} was not appended",
                self.path,
                "missing",
                first + 1,
            )
            self._fail(missing)
            raise missing from exc
        if (there.st_dev, there.st_ino) != self._identity:
            change, what = "replaced", "its path leads to another file than the one this writer opened"
        elif there.st_size < self._size:
            change, what = "truncated", f"{there.st_size} bytes where its writer left {self._size}"
        elif there.st_size > self._size:
            change, what = (
                "appended",
                f"{there.st_size} bytes where its writer left {self._size}: someone else wrote to it",
            )
        else:
            return
        error = SessionLogChanged(
            f"{self.path}: the session log was {change} behind its writer's back ({what}); "
            f"event {first} was not appended",
            self.path,
            change,
            first + 1,
        )
        self._fail(error)
        raise error

    def _cut(self, file: io.FileIO) -> None:
        """A write failed: cut off what it left after the last acknowledged line."""
        try:
            if os.fstat(file.fileno()).st_size > self._size:
                file.truncate(self._size)
                _sync(file, self.fsync)
        except OSError as exc:
            logger.warning(
                "%s: cannot cut off the partial line of the failed append (%s); readers drop it as a torn last line",
                self.path,
                exc,
            )

    def _fail(self, error: SessionLogError) -> None:
        """Close the log after ``error``, which every later append raises again."""
        self._failure = error
        with contextlib.suppress(SessionLogError):  # the append's error is the one to report
            self.close()

    def close(self) -> None:
        """Close the file and release the writer's lock; idempotent."""
        file, self._file = self._file, None
        if file is None:
            return
        pid_path, self._pid_path = self._pid_path, None
        if pid_path is not None and _read_pid(pid_path) == os.getpid():
            with contextlib.suppress(OSError):  # still holding the lock: no other writer wrote it
                os.unlink(pid_path)
        try:
            file.close()
        except OSError as exc:
            raise SessionLogError(f"{self.path}: cannot close the session log: {exc}", path=self.path) from exc

    def __enter__(self) -> "SessionLog":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _sync(f: Any, fsync: bool) -> None:
    f.flush()
    if fsync:
        os.fsync(f.fileno())


def _write_all(file: io.FileIO, data: bytes) -> None:
    """Write ``data`` to the unbuffered ``file``: one ``write``, continued
    only when the kernel took less (a file size limit, a full disk)."""
    view = memoryview(data)
    while view:
        view = view[file.write(view) :]


def _holder(path: str) -> Optional[int]:
    """The pid of the writer holding the lock, from its pid file; None when
    that file still holds none after :data:`PID_READS` reads."""
    for _ in range(PID_READS):
        pid = _read_pid(path)
        if pid is not None:
            return pid
        time.sleep(PID_READ_INTERVAL_S)
    return None


def _read_pid(path: str) -> Optional[int]:
    """The pid in the writer's pid file, or None."""
    try:
        with open(path, "rb") as f:
            pid = int(f.read(32))
    except (OSError, ValueError):
        return None
    return pid if pid > 0 else None


def _write_pid(path: str) -> None:
    """Write this process's pid to ``path`` (the lock is taken: no other writer
    does).  Best effort: without it a second writer's error says "pid unknown"."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o666)
        try:
            os.write(fd, b"%d\n" % os.getpid())
        finally:
            os.close(fd)
    except OSError as exc:
        logger.info("%s: cannot write the session log writer's pid there: %s", path, exc)


#: Non-empty once the no-lock warning was given (once per process).
_UNLOCKED: List[str] = []


def _warn_unlocked(path: str) -> None:
    if not _UNLOCKED:
        _UNLOCKED.append(path)
        logger.warning(
            "%s: no fcntl here, so session logs are not locked: a second writer is not refused "
            "(a log someone else wrote to is still noticed before each append)",
            path,
        )


# -- queries ----------------------------------------------------------------


def next_turn_number(events: Iterable[Mapping[str, Any]]) -> int:
    """Turn numbers start at 1 and continue after a resume."""
    turns = [turn for turn in (e.get("turn") for e in events) if isinstance(turn, int) and not isinstance(turn, bool)]
    return max(turns, default=0) + 1


def has_header(events: Iterable[Mapping[str, Any]]) -> bool:
    """Whether a ``session/header`` was written (the next one is a resume)."""
    return any(e.get("type") == "session/header" for e in events)


__all__ = [
    "EVENT_TYPES",
    "LOG_VERSION",
    "PID_SUFFIX",
    "ReadResult",
    "SessionLog",
    "encode_event",
    "has_header",
    "next_turn_number",
    "read_log",
]
