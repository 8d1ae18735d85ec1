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

A log of any length
-------------------
Nothing holds a log's events in memory (issue 29: a million events, a
gigabyte).  Reading back is one streaming pass (:class:`_Pass`): reads of up
to :data:`READ_MAX` bytes, split into lines, each line decoded and parsed on
its own by the C scanner (``json.loads`` again only for a line the scanner
does not take whole, so a line is accepted or refused exactly as
``json.loads(line.decode())`` would, with its message) and checked against
the envelope as it goes, the same errors at the same lines as ever.  What the
pass keeps is an index (:class:`_Index`): the number of events, where the
last one ends, and the byte offset of every :data:`INDEX_STRIDE`-th one --
8 bytes per 32 events.  :meth:`SessionLog.open` also folds, in that same
pass, what appending and resuming need: the next turn number, whether there
is a header, the knobs (:class:`._knobs.Knobs`, the last valid entry of
each kind), the inbox messages still pending (:class:`._inbox.Pending`) and
the last ``session/compaction`` (one event: a resumed agent's prompt starts
there); each append updates them and the index.

The events are then read from the file when they are used:
:attr:`SessionLog.events` and :attr:`ReadResult.events` are a
:class:`LogEvents`, a read-only sequence whose iteration streams from the
nearest indexed offset, and which compares equal to the list of the events.
The writer reads through its own descriptor (its appends go to the end
wherever a read seeks); after :meth:`SessionLog.close`, and for
:func:`read_log`, the path is opened again, and must still lead to the file
that was read.  A re-read checks each line as the first read did (and its
``seq`` against the index), so a file changed behind the reader is an error,
never other events.  :func:`iter_log` is the one-pass reader, for showing
or exporting a log: it yields each event as it is checked.

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
pure queries over events (:attr:`SessionLog.next_turn` and
:attr:`SessionLog.has_header` answer them for an open log without reading
it); the knob fold lives in :mod:`._knobs`.
"""

from __future__ import annotations

import contextlib
import functools
import io
import itertools
import json
import logging
import operator
import os
import time
from array import array
from types import MappingProxyType, ModuleType
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    ContextManager,
    Dict,
    Generator,
    Iterable,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
    cast,
    overload,
)

from ._errors import ForkRefused, SessionLogChanged, SessionLogError, SessionLogLocked
from ._jsontext import encoder
from ._prompt import COMPACTION, is_compaction
from ._version import __version__

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

#: The format's version, written as every line's ``v``: 2 since the
#: ``session/compaction`` event and the cut tool outputs (issue 30).  A reader
#: takes every version in :data:`READ_VERSIONS` (a log written by an older
#: codexmini, or resumed by a newer one: each line says which wrote it).
LOG_VERSION = 2
READ_VERSIONS = (1, 2)  # a tuple: membership by ==, so an unhashable `v` is refused, not a TypeError

LogEntry = Dict[str, Any]
Listener = Callable[[LogEntry, str], None]

#: Every event type and the keys of its ``data`` ("?" = optional); their
#: meaning: ``docs/session-log.md``.
#: Appending checks the type against this table; the keys are documentation
#: for writers (the agent), not enforced here.
EVENT_TYPES: Mapping[str, Tuple[str, ...]] = MappingProxyType(
    {
        "session/header": ("reason", "provider", "model", "codexVersion", "codexminiVersion", "forkedFrom?"),
        "sandbox/mode": ("mode",),
        "approval/policy": ("policy",),
        "model/choice": ("model",),
        "model/endpoint": ("baseUrl", "wireApi", "apiKeyEnv"),
        "model/reasoning": ("effort", "summary"),
        "turn/start": (),
        "step/start": (),
        "step/end": ("reason",),
        "user/message": ("id", "content", "source"),
        "assistant/message": ("id", "content", "source", "usage?"),
        "tool/call": ("callId", "name", "arguments", "kind"),
        "tool/result": ("callId", "content", "isError", "status", "exitCode?", "approval?", "stepEnd?", "elapsedMs?"),
        "approval/decision": ("method", "itemId", "decision", "by", "unanswered?"),
        "turn/end": ("reason", "error?", "usage?", "abortedBy?", "blocked?"),
        "agent/error": ("message", "code", "cause?"),
        "inbox/queued": ("id", "kind", "content", "source"),
        "inbox/dropped": ("ids", "reason"),
        "session/compaction": ("summary", "fromSeq", "throughSeq", "replacedChars", "usage?"),
    }
)

#: Keys every event line must have.
REQUIRED_KEYS = ("v", "seq", "ts", "type", "turn", "step", "data")


#: The session log's lines: ``json.dumps(…, ensure_ascii=False, separators=(",", ":"))``.
_encode = encoder()


def encode_event(event: Mapping[str, Any]) -> str:
    """The exact line written for ``event``, newline included."""
    return _encode(event) + "\n"


#: The envelope's constant parts as JSON, for :meth:`SessionLog.append_many`.
_VERSION_TEXT = _encode(LOG_VERSION)
_TYPE_TEXT: Dict[str, str] = {type_: _encode(type_) for type_ in EVENT_TYPES}
_HEAD = f'{{"v":{_VERSION_TEXT},"seq":'


def _number(value: Any) -> str:
    """A turn or step number that is not a plain int (those are written
    directly) as JSON: ``null`` directly, anything else as
    :func:`encode_event` would write it."""
    if value is None:
        return "null"
    return _encode(value)


def _problem(event: Any, expected_seq: int) -> str:
    """Why ``event``, which is not the next well-formed event, is not: not an
    object, a key missing, another ``v``, a ``seq`` out of order (or a
    boolean), or (what is left) a ``data`` that is not an object."""
    if not isinstance(event, dict):
        return f"not a JSON object ({type(event).__name__})"
    missing = [k for k in REQUIRED_KEYS if k not in event]
    if missing:
        return "missing " + ", ".join(missing)
    if event["v"] not in READ_VERSIONS:
        return f"unsupported log version {event['v']!r}"
    if event["seq"] != expected_seq or isinstance(event["seq"], bool):
        return f"seq {event['seq']!r} where {expected_seq} was expected"
    return "data is not an object"


# -- reading ------------------------------------------------------------------

#: ``read(offset, size)``: up to ``size`` bytes of a log file from ``offset``
#: (fewer only at its end); a storage fault is a :class:`SessionLogError`.
Read = Callable[[int, int], bytes]

#: A pass reads this much first, then twice as much each time up to
#: :data:`READ_MAX`: one event costs a small read, a whole log large ones.
READ_FIRST, READ_MAX = 64 << 10, 1 << 20
#: The byte offset of every ``INDEX_STRIDE``-th event is kept (8 bytes per
#: stride: 256 KiB for a million events); any other event is found by reading
#: on from the offset before it, at most ``INDEX_STRIDE - 1`` lines.
INDEX_STRIDE = 32

#: An event's envelope, in REQUIRED_KEYS order (a KeyError if one is missing).
_FIELDS = operator.itemgetter(*REQUIRED_KEYS)
#: CPython's C scanner, which parses one JSON value at an index of a string
#: (what ``json.loads`` runs, without its per-call wrapping).
_scan_once: Callable[[str, int], Tuple[Any, int]] = vars(json.JSONDecoder())["scan_once"]


def _read_at(file: io.FileIO, path: str, what: str = "") -> Read:
    """A :data:`Read` of ``file`` (which may be the writer's, opened for
    appending: appends go to the end wherever this one seeks)."""

    def read(offset: int, size: int) -> bytes:
        try:
            file.seek(offset)
            return file.read(size) or b""
        except OSError as exc:
            raise SessionLogError(f"{path}: cannot read the session log{what}: {exc}", path=path) from exc

    return read


class _Index:
    """Where a log's events are in its file: how many, where the last one
    ends, and the offset of every :data:`INDEX_STRIDE`-th one."""

    __slots__ = ("count", "end", "marks")

    def __init__(self) -> None:
        self.count = 0
        self.end = 0
        self.marks = array("q")

    def extend(self, lengths: Iterable[int]) -> None:
        """More events, of ``lengths`` bytes each (newlines included), at the end."""
        count, end, marks = self.count, self.end, self.marks
        for length in lengths:
            if not count % INDEX_STRIDE:
                marks.append(end)
            count += 1
            end += length
        self.count, self.end = count, end


class _Pass:
    """One streaming pass over the lines of a log file, checking each line as
    it is parsed: iterating it yields the events.

    From ``offset`` (the start of the event ``seq``): ``skip`` lines are
    passed over unparsed, then events are yielded until ``stop`` (exclusive;
    ``None``: the end of the file) and no byte past ``limit`` is read.  With
    ``marks``, the offset of every :data:`INDEX_STRIDE`-th event is appended
    to it.  Afterwards ``seq`` is the number of the next event, ``end`` the
    end of the last good line (not kept by a pass that skips), and ``warnings``
    names a torn last line that
    was dropped (only when reading to the end of the file; anywhere else a
    bad line is an error).

    Each line is decoded and parsed on its own (the C scanner straight away;
    ``json.loads`` again only for a line that it does not take whole, so a
    line is accepted or refused -- and with which message -- exactly as
    ``json.loads(line.decode())`` would); the memory a pass holds is one
    read (at most :data:`READ_MAX`, or the longest line), whatever the log's
    length.
    """

    def __init__(
        self,
        path: str,
        read: Read,
        *,
        offset: int = 0,
        seq: int = 0,
        skip: int = 0,
        stop: Optional[int] = None,
        limit: Optional[int] = None,
        marks: Optional["array[int]"] = None,
    ) -> None:
        self.path = path
        self._read = read
        self.end = offset
        self.seq = seq
        self._skip = skip
        self._stop = stop
        self._limit = limit
        self._marks = marks
        self.warnings: List[str] = []

    def __iter__(self) -> Iterator[LogEntry]:
        path, read, stop, limit, marks = self.path, self._read, self._stop, self._limit, self._marks
        seq, offset, skip = self.seq, self.end, self._skip
        pos, size = offset, READ_FIRST  # where the next read starts, and how much it takes
        parts: List[bytes] = []  # the start of a line whose newline is not read yet
        scan, loads, fields, dict_, bool_, type_ = _scan_once, json.loads, _FIELDS, dict, bool, type
        versions = READ_VERSIONS
        try:
            while seq != stop:
                want = size if limit is None else min(size, limit - pos)
                chunk = read(pos, want) if want > 0 else b""
                if not chunk:
                    break
                pos += len(chunk)
                size = min(size * 2, READ_MAX)
                lines = chunk.split(b"\n")
                if len(lines) == 1:  # the middle of a long line
                    parts.append(chunk)
                    continue
                if parts:  # the line the last read began
                    parts.append(lines[0])
                    lines[0] = b"".join(parts)
                    parts = []
                last = lines.pop()  # after the last newline: the start of the next line, if any
                if last:
                    parts.append(last)
                if skip:  # (a pass that skips reads a range of the index: where its lines end is not kept)
                    passed = len(lines[:skip])
                    seq += passed
                    skip -= passed
                    del lines[:passed]
                for line in lines:
                    if seq == stop:
                        return
                    try:
                        text = line.decode("utf-8")
                        try:
                            event, end = scan(text, 0)
                        except StopIteration:  # not a value at 0: json.loads says why (or skips the blanks)
                            end = -1
                        if end != len(text):
                            event = loads(text)  # the same value, or the error json.loads gives
                    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
                        ends_the_read = offset + len(line) + 1 == pos
                        if stop is None and ends_the_read and not read(pos, 1):
                            # The file's last line: the write that was cut short.
                            self.warnings.append(_torn(path, seq + 1, f"invalid JSON ({exc})"))
                            return
                        raise SessionLogError(
                            f"{path}:{seq + 1}: corrupt session log line: {exc}", path=path, line=seq + 1
                        ) from None
                    try:
                        version, number, _, _, _, _, data = fields(event)
                    except (KeyError, TypeError):  # not an object, or a key missing
                        version = None
                    if not (
                        version in versions
                        and number == seq
                        and type_(data) is dict_
                        and type_(event) is dict_
                        and type_(number) is not bool_
                    ):
                        raise SessionLogError(
                            f"{path}:{seq + 1}: bad session log event: {_problem(event, seq)}", path=path, line=seq + 1
                        )
                    if marks is not None and not seq % INDEX_STRIDE:
                        marks.append(offset)
                    offset += len(line) + 1
                    seq += 1
                    yield event
            if seq == stop:
                return
            if parts:  # an unterminated line: its write never completed
                if stop is not None:
                    raise self._changed(seq, "it ends in the middle of a line")
                self.warnings.append(_torn(path, seq + 1, "no trailing newline"))
            elif stop is not None:
                raise self._changed(seq, "it is shorter")
        finally:
            self.seq, self.end = seq, offset

    def _changed(self, seq: int, how: str) -> SessionLogError:
        return SessionLogError(
            f"{self.path}:{seq + 1}: the session log changed since it was read ({how}): event {seq} is not there",
            path=self.path,
            line=seq + 1,
        )


def _torn(path: str, number: int, why: str) -> str:
    warning = f"{path}:{number}: dropped a torn last line: {why}"
    logger.warning("%s", warning)
    return warning


@contextlib.contextmanager
def _reopened(path: str, identity: Tuple[int, int]) -> Iterator[Read]:
    """Read the log at ``path`` again, provided it is still the file ``identity``
    (``st_dev``, ``st_ino``) names."""
    file, there = _open_for_reading(path)
    try:
        if there != identity:
            raise SessionLogError(
                f"{path}: the session log is not the file that was read any more (replaced, or removed and "
                "created again): its events cannot be read back",
                path=path,
            )
        yield _read_at(file, path)
    finally:
        file.close()


def _open_for_reading(path: str) -> Tuple[io.FileIO, Tuple[int, int]]:
    """The log at ``path`` opened for reading, and its identity (``st_dev``, ``st_ino``)."""
    try:
        file = io.FileIO(path, "r")
    except OSError as exc:
        raise SessionLogError(f"{path}: cannot read the session log: {exc}", path=path) from exc
    there = os.fstat(file.fileno())  # (FileIO's open has just done the same: it does not fail now)
    return file, (there.st_dev, there.st_ino)


class LogEvents(Sequence[LogEntry]):
    """A session log's events, read from its file when they are asked for:
    :attr:`SessionLog.events` and :attr:`ReadResult.events`.

    A read-only sequence: ``len()`` and ``bool()`` cost nothing; iterating
    streams the events from the file (one read at a time, parsed as it
    goes); an index reads one event (on from the nearest of the offsets kept
    every :data:`INDEX_STRIDE` events); a slice is another ``LogEvents``,
    read when it is used; ``reversed()`` reads a stride at a time.  It holds
    no event, so a log of any length costs the same memory.  Each event read
    is a fresh dict, equal to the line written.  It compares equal to a list
    (or another ``LogEvents``) holding equal events in the same order, so
    ``list(events)`` is the list :func:`read_log` used to return.

    The events it reads are those there were when it was made (a slice, or
    :attr:`ReadResult.events`) or, for :attr:`SessionLog.events` itself, those
    the writer has appended so far.  Reading is checked as it goes: a file
    that no longer holds what was read (replaced, truncated, rewritten) is a
    :class:`~codexmini.SessionLogError`.  Made by those two, never by hand.
    """

    __slots__ = ("_path", "_index", "_reading", "_span")

    def __init__(
        self,
        path: str,
        index: _Index,
        reading: Callable[[], ContextManager[Read]],
        span: Optional[range] = None,
    ) -> None:
        self._path = path
        self._index = index
        self._reading = reading
        self._span = span  # None: every event the index holds, however many that becomes

    def _range(self) -> range:
        return range(self._index.count) if self._span is None else self._span

    def __len__(self) -> int:
        return len(self._range())

    @overload
    def __getitem__(self, key: int) -> LogEntry: ...  # pragma: no cover - a typing stub: never runs

    @overload
    def __getitem__(self, key: slice) -> "LogEvents": ...  # pragma: no cover - a typing stub: never runs

    def __getitem__(self, key: Union[int, slice]) -> Union[LogEntry, "LogEvents"]:
        span = self._range()
        if isinstance(key, slice):
            return LogEvents(self._path, self._index, self._reading, span[key])
        try:
            seq = span[key]
        except IndexError:
            raise IndexError("session log index out of range") from None
        return next(self._read(seq, seq + 1))  # (_read yields it, or raises)

    def __iter__(self) -> Iterator[LogEntry]:
        return self._iterate(self._range())

    def __reversed__(self) -> Iterator[LogEntry]:
        return self._iterate(self._range()[::-1])

    def _iterate(self, span: range) -> Iterator[LogEntry]:
        if span.step < 0:
            return self._backwards(span)
        events = self._read(span.start, span[-1] + 1 if span else span.start)
        return itertools.islice(events, 0, None, span.step)

    def _backwards(self, span: range) -> Iterator[LogEntry]:
        """The events of the descending ``span``, reading one stride at a time."""
        if not span:
            return
        seq, last, step = span.start, span[-1], -span.step
        while seq >= last:
            low = max(last, seq - seq % INDEX_STRIDE)
            events = list(self._read(low, seq + 1))
            while seq >= low:
                yield events[seq - low]
                seq -= step

    def _read(self, start: int, stop: int) -> Iterator[LogEntry]:
        """The events ``start`` to ``stop`` (exclusive), streamed from the file."""
        if start >= stop:
            return
        index = self._index
        mark = start // INDEX_STRIDE
        first = mark * INDEX_STRIDE
        with self._reading() as read:
            yield from _Pass(
                self._path,
                read,
                offset=index.marks[mark],
                seq=first,
                skip=start - first,
                stop=stop,
                limit=index.end,
            )

    def index(self, value: Any, start: int = 0, stop: Optional[int] = None) -> int:
        """The first position of an event equal to ``value`` (``ValueError`` if none), streaming."""
        positions = range(len(self))[start:stop]
        for at, event in zip(positions, self[start:stop]):
            if event == value:
                return at
        raise ValueError(f"{value!r} is not in the session log")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, (list, LogEvents)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other))

    def __repr__(self) -> str:
        return f"<LogEvents of {self._path}: {len(self)} event(s)>"


class ReadResult(NamedTuple):
    """What :func:`read_log` returns: the events (read from the file as they
    are used: :class:`LogEvents`) and the warnings (a torn last line dropped)."""

    events: LogEvents
    warnings: List[str]


def read_log(path: str) -> ReadResult:
    """Read a session log back.  A torn last line is dropped with a warning
    (logged and returned); any other bad line raises :class:`SessionLogError`.

    The whole file is read and checked here, in one streaming pass that holds
    no event; ``events`` then reads the events again from the file when they
    are used (it is a :class:`LogEvents`, equal to the list of them).  To go
    through a log once -- to show or export it -- :func:`iter_log` does it in
    one pass."""
    path = os.fspath(path)
    file, identity = _open_for_reading(path)
    index = _Index()
    try:
        scan = _Pass(path, _read_at(file, path), marks=index.marks)
        for _ in scan:  # checks every line, keeps none
            pass
    finally:
        file.close()
    index.count, index.end = scan.seq, scan.end
    return ReadResult(LogEvents(path, index, functools.partial(_reopened, path, identity)), scan.warnings)


class LogStream(Iterator[LogEntry]):
    """The events of a session log, read and checked as they are iterated
    (:func:`iter_log`): one pass over the file, one read at a time.

    A bad line raises :class:`~codexmini.SessionLogError` when the iteration
    reaches it (the events before it were yielded); a torn last line is
    dropped with a warning, logged and added to ``warnings``, when the
    iteration reaches the end.  The file is closed at the end, on an error,
    or by :meth:`close` (also a context manager)."""

    def __init__(self, path: str) -> None:
        self.path = os.fspath(path)
        self._file: Optional[io.FileIO] = None  # (for __del__, if the open fails)
        self._file = file = _open_for_reading(self.path)[0]
        scan = _Pass(self.path, _read_at(file, self.path))
        #: Warnings about the file: a torn last line dropped (known at the end).
        self.warnings = scan.warnings
        self._events = _closing(iter(scan), file)

    def __iter__(self) -> "LogStream":
        return self

    def __next__(self) -> LogEntry:
        return next(self._events)

    def close(self) -> None:
        """Stop reading and close the file; idempotent."""
        file, self._file = self._file, None
        if file is not None:
            self._events = iter(())
            file.close()

    def __enter__(self) -> "LogStream":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()


def _closing(events: Iterator[LogEntry], file: io.FileIO) -> Iterator[LogEntry]:
    try:
        yield from events
    finally:
        file.close()


def iter_log(path: str) -> LogStream:
    """Go through a session log once, each event read, checked and yielded
    in turn -- to show a log, export it, or fold it -- in memory that does not
    grow with the log.  The file is opened here (a fault is a
    :class:`~codexmini.SessionLogError` now); the lines are checked as
    :func:`read_log` checks them, the same errors at the same lines, raised
    when the iteration reaches them; a torn last line is dropped at the end
    with a warning (:attr:`LogStream.warnings`)."""
    return LogStream(path)


def fork_log(path: str, at: int, new_path: str) -> int:
    """Start a new session log at ``new_path`` from the events ``0`` to ``at``
    (inclusive) of the log at ``path``, and return how many events it holds.

    The events are copied byte for byte, streamed (a read of at most
    :data:`READ_MAX` at a time: a log of any length); those up to ``at`` and
    after it up to the next turn are checked as :func:`read_log` checks them,
    and the new log once more as :meth:`SessionLog.open` reads it back.  Then it gets a ``session/header``
    with ``reason: "fork"`` and ``forkedFrom: {"path", "seq"}`` (the absolute
    path of the log and ``at``; ``provider``, ``model`` and ``codexVersion``
    from the last header before the cut), and, when messages queued by
    ``at`` were not delivered by then, an ``inbox/dropped`` with ``reason:
    "fork"``: what happened after the cut is the other log's, the fork starts
    with an empty inbox.  An :class:`~codexmini.Agent` opened on it resumes
    there: the next turn, the knobs and the header as they were at ``at``.

    The cut must fall between turns: :class:`~codexmini.ForkRefused` (with
    ``reason`` ``inside-turn`` and the nearest ``seq`` before and after the
    turn) when ``at`` and a later event belong to the same turn -- a fork
    mid-turn would resume a turn that cannot go on (a tool call without its
    result, a ``turn/start`` without its end), and cutting it back silently
    would fork something else than was asked.  ``ForkRefused`` too when
    ``at`` is no event's ``seq`` (``out-of-range``) or ``new_path`` exists
    (``exists``: it is created exclusively, never replaced).  Nothing is
    written when it refuses; a fault while writing (a
    :class:`~codexmini.SessionLogError` naming ``new_path``) removes the
    new file.  The log at ``path`` is only read: its writer may be running."""
    path, new_path = os.fspath(path), os.fspath(new_path)
    if type(at) is not int:
        raise ForkRefused(f"{path}: cannot fork at {at!r}: an event's seq is an int", path, "out-of-range", at)
    file = _open_for_reading(path)[0]
    try:
        read = _read_at(file, path)
        end, header, dropped = _fork_point(path, read, at)
        out = _create(new_path, path, at)
        try:
            try:
                with out:
                    _copy(read, out, end, path, new_path)
            except OSError as exc:  # writing it, or closing it
                raise SessionLogError(f"{new_path}: cannot write the forked session log: {exc}", path=new_path) from exc
            with SessionLog.open(new_path) as log:
                if len(log.events) != at + 1:
                    raise SessionLogError(
                        f"{path}: the session log changed while it was forked: {new_path} does not hold its "
                        f"events 0 to {at}",
                        path=new_path,
                    )
                data = {
                    "reason": "fork",
                    "provider": header.get("provider", "codex"),
                    "model": header.get("model", "default"),
                    "codexVersion": header.get("codexVersion", "unknown"),
                    "codexminiVersion": __version__,
                    "forkedFrom": {"path": os.path.abspath(path), "seq": at},
                }
                entries: List[Tuple[str, Dict[str, Any], Optional[int], Optional[int]]]
                entries = [("session/header", data, None, None)]
                if dropped:
                    entries.append(("inbox/dropped", {"ids": dropped, "reason": "fork"}, None, None))
                log.append_many(entries)
                return len(log.events)
        except BaseException:
            with contextlib.suppress(OSError):  # (a log that failed removed its pid file when it closed)
                os.unlink(new_path)
            raise
    finally:
        file.close()


def _fork_point(path: str, read: Read, at: int) -> Tuple[int, Mapping[str, Any], List[str]]:
    """Where the event ``at`` of the log ends, the last ``session/header``'s
    data up to it and the ids of the messages pending there, after checking
    that ``at`` is an event between turns (else :class:`ForkRefused`)."""
    from ._inbox import Pending

    top = top_first = 0  # the highest turn up to the cut, and the seq of its first event
    top_ended = False  # and whether its turn/end is there too
    header: Mapping[str, Any] = {}
    pending = Pending()
    scan = _Pass(path, read)
    events = cast("Generator[LogEntry, None, None]", iter(scan))
    found = False
    with contextlib.closing(events):  # (closing it sets scan.end: the end of the last event yielded)
        for event in events:
            seq, turn, type_ = event["seq"], event["turn"], event["type"]
            if type(turn) is int and turn > top:
                top, top_first, top_ended = turn, seq, False
            if type_ == "turn/end" and turn == top:
                top_ended = True
            if type_ == "session/header":
                header = event["data"]
            elif type_ in pending.TYPES:
                pending.feed(event)
            if seq == at:
                found = True
                break
    if not found:
        held = f"its {scan.seq} events are seq 0 to {scan.seq - 1}" if scan.seq else "it holds no event"
        raise ForkRefused(f"{path}: cannot fork at {at}: no such event ({held})", path, "out-of-range", at)
    # The turn the cut would split (one with events after it), its last event,
    # and whether it is over (its turn/end seen, or a later turn begun).
    split, last, over = None, at, False
    after = cast("Generator[LogEntry, None, None]", iter(_Pass(path, read, offset=scan.end, seq=at + 1)))
    with contextlib.closing(after):
        for event in after:
            turn = event["turn"]
            if type(turn) is not int:
                continue
            if (split is None and turn > top) or (split is not None and turn != split):
                over = True
                break
            split, last, over = turn, event["seq"], event["type"] == "turn/end"
    if split is None and not over and top and not top_ended:
        split = top  # the log ends in a turn not ended: its writer may still be in it
    if split is not None:
        before = top_first - 1 if split == top and top_first > 0 else None
        instead = [f"at {before} (before it)"] * (before is not None) + [f"at {last} (its end)"] * over
        where = (
            f"which goes on to seq {last}" if over else "which has not ended (its writer may be in it, or died in it)"
        )
        raise ForkRefused(
            f"{path}: cannot fork at {at}: it is inside turn {split}, {where}"
            + ("; fork " + " or ".join(instead) if instead else ""),
            path,
            "inside-turn",
            at,
            turn=split,
            before=before,
            after=last if over else None,
        )
    return scan.end, header, [message["id"] for _, message in pending.messages()]


def _create(new_path: str, path: str, at: int) -> io.FileIO:
    """The new log's file, created exclusively (its directory too)."""
    parent = os.path.dirname(new_path)
    try:
        if parent:
            os.makedirs(parent, exist_ok=True)
        try:
            return io.FileIO(new_path, "x")
        except FileExistsError:
            raise ForkRefused(
                f"{new_path}: cannot fork {path} there: it exists (a fork never replaces a file)", path, "exists", at
            ) from None
    except OSError as exc:  # (a FileExistsError here: a file where its directory should be)
        raise SessionLogError(f"{new_path}: cannot create the forked session log: {exc}", path=new_path) from exc


def _copy(read: Read, out: io.FileIO, end: int, path: str, new_path: str) -> None:
    """Copy the first ``end`` bytes of the log to ``out``, :data:`READ_MAX` at a time."""
    pos = 0
    while pos < end:
        chunk = read(pos, min(READ_MAX, end - pos))
        if not chunk:
            raise SessionLogError(f"{path}: the session log changed while it was forked (it is shorter)", path=new_path)
        _write_all(out, chunk)
        pos += len(chunk)


class SessionLog:
    """An open session log.  Create it with :meth:`open`; it is a context manager."""

    def __init__(self, path: str, *, fsync: bool = False, clock: Callable[[], float] = time.time) -> None:
        self.path = os.fspath(path)
        self.fsync = fsync
        self._clock = clock
        self._file: Optional[io.FileIO] = None  # set by open(); None again once closed
        self._index = _Index()  # where the events are; its end: the file's length as this writer left it
        self._listeners: List[Listener] = []
        #: Warnings from reading the existing file back (a dropped torn line).
        self.warnings: List[str] = []
        self._identity = (0, 0)  # (st_dev, st_ino) of the file open()ed
        # What resuming needs, folded from every event read back or appended:
        self._top_turn = 0  # the highest turn number
        self._header = False  # a session/header was written
        self._compaction: Optional[LogEntry] = None  # the last session/compaction that counts (_prompt.is_compaction)
        from ._knobs import Knobs  # (here: reading a log needs no knob)

        #: The knobs' fold (:class:`._knobs.Knobs`): the agent's settings.
        self._knobs = Knobs()
        from ._inbox import Pending

        #: The inbox's fold (:class:`._inbox.Pending`): the messages queued and not yet delivered or dropped.
        self._pending = Pending()
        #: The event types a fold reads (:meth:`_fold`): every other append only
        #: counts its lines.
        self._folded = self._knobs.TYPES | self._pending.TYPES | {"session/header", COMPACTION}
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
            log._read_back()
        except BaseException:
            with contextlib.suppress(SessionLogError):
                log.close()
            raise
        return log

    def _read_back(self) -> None:
        """One streaming pass over the file: check every line, index the
        events, fold what resuming needs; then cut a torn tail off."""
        path, index, file = self.path, self._index, self._file
        assert file is not None  # (open() has just opened it)
        scan = _Pass(path, _read_at(file, path, " back"), marks=index.marks)
        top, folds, fold = 0, self._folded, self._fold
        for event in scan:
            turn = event["turn"]
            if type(turn) is int and turn > top:  # (not a bool)
                top = turn
            if event["type"] in folds:
                fold(event)
        index.count, index.end = scan.seq, scan.end
        self.warnings, self._top_turn = scan.warnings, top
        try:
            opened = os.fstat(file.fileno())
            if scan.end < opened.st_size:
                file.truncate(scan.end)
                _sync(file, self.fsync)
        except OSError as exc:
            raise SessionLogError(f"{path}: cannot read the session log back: {exc}", path=path) from exc
        self._identity = (opened.st_dev, opened.st_ino)

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
    def events(self) -> LogEvents:
        """Every event of the log, in order, read from the file when asked for
        (a :class:`LogEvents`: nothing is held in memory), the events this
        writer appends included.  After :meth:`close` they are read from the
        path again, which must still lead to the same file."""
        return LogEvents(self.path, self._index, self._reading)

    @property
    def next_turn(self) -> int:
        """The next turn's number: one more than the highest ``turn`` in the
        log (1 for a log without turns), as :func:`next_turn_number` gives."""
        return self._top_turn + 1

    @property
    def has_header(self) -> bool:
        """Whether the log holds a ``session/header`` (the next one is a resume)."""
        return self._header

    @property
    def pending(self) -> List[Tuple[str, Dict[str, Any]]]:
        """The agent's inbox as the log keeps it: the messages logged
        ``inbox/queued`` and since neither delivered (a ``user/message`` with
        their ``id``) nor dropped (``inbox/dropped``), as ``(kind, message)``
        in the order they were queued; ``kind`` is ``followup``, ``inject``
        or ``steer``.  Folded as the log is read back and appended to (only
        these messages are kept); an :class:`~codexmini.Agent` made on the log
        queues them again."""
        return self._pending.messages()

    @property
    def compaction(self) -> Optional[LogEntry]:
        """The log's last ``session/compaction`` that counts (its summary a
        string), or ``None``: a resumed agent's prompt starts from it, so it
        never reads the events it summarised.  One event, whatever the log's
        length: the fold keeps it, never the events before it."""
        return self._compaction

    def _compacted(self, event: LogEntry) -> None:
        if is_compaction(event):
            self._compaction = event

    @contextlib.contextmanager
    def _reading(self) -> Iterator[Read]:
        """Read the file: through the writer's descriptor while it is open,
        else (closed meanwhile, or before) by its path, if it still leads to
        the file this writer had."""
        reopened: Optional[Read] = None
        with contextlib.ExitStack() as stack:

            def read(offset: int, size: int) -> bytes:
                nonlocal reopened
                file = self._file
                if file is not None:
                    return _read_at(file, self.path)(offset, size)
                if reopened is None:
                    reopened = stack.enter_context(_reopened(self.path, self._identity))
                return reopened(offset, size)

            yield read

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
        return self._write_many(entries, keep=True)

    def _write_many(
        self, entries: Iterable[Tuple[str, Dict[str, Any], Optional[int], Optional[int]]], keep: bool
    ) -> List[LogEntry]:
        """:meth:`append_many`; ``keep=False``: the events are not returned (the
        agent, which writes an event for every tenth notification, has them
        already), only built for a fold of the log or a listener."""
        file = self._file
        if file is None:
            if self._failure is not None:
                raise self._failure.with_traceback(None)
            raise SessionLogError(f"session log {self.path} is closed", path=self.path)
        index = self._index
        first = seq = index.count
        # The envelope's parts that every event of this append shares, as JSON:
        # the version, and the one timestamp (all of them are written at once).
        now = round(self._clock(), 3)
        stamp = f',"ts":{_encode(now)},"type":'
        events: List[LogEntry] = []
        lines: List[str] = []
        encoded: List[bytes] = []
        folded: List[LogEntry] = []  # the events a fold of the log reads (knobs, inbox, header, compaction)
        type_texts, folds, encode, number = _TYPE_TEXT, self._folded, _encode, _number
        top, last = self._top_turn, None
        keep = keep or bool(self._listeners)  # a listener is shown each event and its line
        for type_, data, turn, step in entries:
            type_text = type_texts.get(type_)
            if type_text is None:
                raise SessionLogError(f"unknown session log event type {type_!r}", path=self.path)
            if not isinstance(data, dict):
                raise SessionLogError(f"event data must be a dict, not {data.__class__.__name__}", path=self.path)
            try:
                # encode_event(event), the envelope written directly (its keys in the same order).
                line = (
                    f'{_HEAD}{seq}{stamp}{type_text},"turn":{turn if type(turn) is int else number(turn)},'
                    f'"step":{step if type(step) is int else number(step)},"data":{encode(data)}}}\n'
                )
                encoded.append(line.encode("utf-8"))  # a lone surrogate is no UTF-8
            except (TypeError, ValueError, RecursionError) as exc:  # nothing was written
                raise SessionLogError(f"{type_} event is not JSON or not UTF-8: {exc}", path=self.path) from exc
            if keep or type_ in folds:
                event: LogEntry = {
                    "v": LOG_VERSION,
                    "seq": seq,
                    "ts": now,
                    "type": type_,
                    "turn": turn,
                    "step": step,
                    "data": data,
                }
                if keep:
                    lines.append(line)
                    events.append(event)
                if type_ in folds:
                    folded.append(event)
            seq += 1
            if turn is not last:  # (the events of one append mostly share their turn)
                last = turn
                if isinstance(turn, int) and not isinstance(turn, bool) and turn > top:
                    top = turn
        self._check_unchanged(first)
        try:
            _write_all(file, b"".join(encoded))  # one write: whole lines, then at most a torn tail
            _sync(file, self.fsync)
        except OSError as exc:
            error = SessionLogError(f"{self.path}: cannot append event {first}: {exc}", path=self.path, line=first + 1)
            # The tail may now hold a partial line: cut it off and refuse
            # further appends (appending after it would bury it mid-file).
            self._cut(file)
            self._fail(error)
            raise error from exc
        index.extend(map(len, encoded))
        self._top_turn = top
        for event in folded:
            self._fold(event)
        for event, line in zip(events, lines) if self._listeners else ():
            for listener in list(self._listeners):
                try:
                    listener(event, line)
                except Exception:
                    # The event is already durable; a failing observer must not
                    # make the writer believe the append failed.
                    logger.exception("session log listener %r failed", listener)
        return events

    def _fold(self, event: LogEntry) -> None:
        """Keep what the log's folds read of an event read back or just
        appended (one of the types they read): the knobs, the inbox, the
        header, the last compaction."""
        type_ = event["type"]
        if type_ in self._knobs.TYPES:
            self._knobs.feed(event)
        elif type_ in self._pending.TYPES:
            self._pending.feed(event)
        elif type_ == "session/header":
            self._header = True
        else:  # COMPACTION
            self._compacted(event)

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
        elif there.st_size < self._index.end:
            change, what = "truncated", f"{there.st_size} bytes where its writer left {self._index.end}"
        elif there.st_size > self._index.end:
            change, what = (
                "appended",
                f"{there.st_size} bytes where its writer left {self._index.end}: someone else wrote to it",
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
            if os.fstat(file.fileno()).st_size > self._index.end:
                file.truncate(self._index.end)
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
    "INDEX_STRIDE",
    "LOG_VERSION",
    "LogEvents",
    "LogStream",
    "PID_SUFFIX",
    "READ_VERSIONS",
    "ReadResult",
    "SessionLog",
    "encode_event",
    "fork_log",
    "has_header",
    "iter_log",
    "next_turn_number",
    "read_log",
]
