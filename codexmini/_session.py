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

The helpers at the end (:func:`next_turn_number`, :func:`has_header`) are
pure queries over a list of events; the knob fold lives in :mod:`._knobs`.
"""

from __future__ import annotations

import json
import logging
import os
import time
from types import MappingProxyType
from typing import (
    Any,
    Callable,
    Dict,
    Iterable,
    List,
    Mapping,
    NamedTuple,
    Optional,
    Tuple,
)

from ._errors import SessionLogError
from ._jsontext import encoder

logger = logging.getLogger("codexmini.session")

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
    with open(path, "rb") as f:
        raw = f.read()
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
        self._file: Any = None  # set by open(); None again once closed
        self._events: List[LogEntry] = []
        self._listeners: List[Listener] = []
        #: Warnings from reading the existing file back (a dropped torn line).
        self.warnings: List[str] = []

    @classmethod
    def open(cls, path: str, fsync: bool = False, clock: Callable[[], float] = time.time) -> "SessionLog":
        """Open ``path`` for appending, creating it (and its parent directories)
        or reading it back and continuing its ``seq``.  A torn last line is
        dropped and truncated away before anything is appended."""
        log = cls(path, fsync=fsync, clock=clock)
        parent = os.path.dirname(log.path)
        if parent:
            os.makedirs(parent, exist_ok=True)
        if os.path.exists(log.path):
            log._events, log.warnings, good_end = _scan(log.path)
            if good_end < os.path.getsize(log.path):
                with open(log.path, "r+b") as f:
                    f.truncate(good_end)
                    _sync(f, fsync)
        log._file = open(log.path, "ab")
        return log

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
        one torn last line, as for :meth:`append`."""
        if self._file is None:
            raise SessionLogError(f"session log {self.path} is closed", path=self.path)
        events: List[LogEntry] = []
        lines: List[str] = []
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
                lines.append(
                    f'{{"v":{_VERSION_TEXT},"seq":{seq},"ts":{ts},"type":{type_text},"turn":{_number(turn)},'
                    f'"step":{_number(step)},"data":{_encode(data)}}}\n'
                )
            except (TypeError, ValueError, RecursionError) as exc:  # not JSON: nothing was written
                raise SessionLogError(f"{type_} event is not JSON: {exc}", path=self.path) from exc
            events.append(event)
        try:
            self._file.write("".join(lines).encode("utf-8"))  # one write: whole lines, then at most a torn tail
            _sync(self._file, self.fsync)
        except OSError as exc:
            # The tail may now hold a partial line.  Refuse further appends:
            # reopening truncates it; appending here would bury it mid-file.
            self.close()
            first = len(self._events)
            raise SessionLogError(
                f"{self.path}: cannot append event {first}: {exc}",
                path=self.path,
                line=first + 1,
            ) from exc
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

    def close(self) -> None:
        """Close the file; idempotent."""
        f, self._file = self._file, None
        if f is not None:
            f.close()

    def __enter__(self) -> "SessionLog":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _sync(f: Any, fsync: bool) -> None:
    f.flush()
    if fsync:
        os.fsync(f.fileno())


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
    "ReadResult",
    "SessionLog",
    "encode_event",
    "has_header",
    "next_turn_number",
    "read_log",
]
