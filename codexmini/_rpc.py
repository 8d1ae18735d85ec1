"""The JSON-RPC conversation with codex, without I/O: h11's ``Connection`` for this protocol.

Theory of operation
-------------------
:class:`Connection` holds every piece of protocol state and no I/O object:
no event loop, no clock, no process.  The asyncio client (:mod:`._client`) is
a thin shell that moves bytes between a transport and this object, and turns
its events into resolved futures, queued notifications and handler tasks.

Outgoing, the connection numbers requests (ids from 1), remembers which method
each pending id belongs to, and returns the bytes to write
(:meth:`Connection.request`, :meth:`~Connection.notify`).  Each frame is
encoded first and registered second: a caller's value that cannot go on the
wire raises :class:`~._errors.UnencodableInput` before an id is taken or
anything is kept.  Incoming, :meth:`Connection.receive` takes raw bytes and
returns one event per line:

* :class:`Response` / :class:`ErrorResponse` -- the answer to request *N*, with
  the method it answers (an :class:`~._errors.RpcError` for errors);
* :class:`Notification` -- with its thread and its **route**: the subscription
  key that gets it (the thread id, :data:`GLOBAL` for a frame that names no
  thread, or :data:`UNCLAIMED` when nobody subscribed to its thread yet; the
  connection then keeps it in a bounded buffer that :meth:`claim` hands over);
* :class:`ServerRequest` -- codex asks something and **must** be answered (an
  unanswered request blocks the turn forever);
* :class:`ServerRequestResolved` -- codex no longer needs an answer to a
  request it asked (``serverRequest/resolved``);
* :class:`Skipped` -- a line or a frame that broke the rules: a
  :class:`~._errors.ProtocolError` (bad JSON, no JSON-RPC shape, a
  notification whose ``params`` is no object, a response to an id nobody
  asked or asked and got already).  Counted in :attr:`stats` and skipped;
* :class:`Malformed` -- a frame that breaks the schema's shape
  (:data:`._wire.MEMBERS`, or a ``serverRequest/resolved`` whose
  ``requestId`` is no id) but is acted on all the same, because something
  waits for it: a server request is still answered, a response still ends
  its call.  Its ``event`` is what the frame is; counted as malformed.

Every frame the shape check rejects is thus a :class:`Skipped` or a
:class:`Malformed`, each carrying its ``ProtocolError`` (the client keeps the
last few), and counted in ``stats["malformed"]`` (an answer to an id not
pending, in ``stats["unknown_responses"]``).  Nothing a peer sends makes
:meth:`receive` raise.

Answers to server requests are decided here too (:meth:`answer`,
:meth:`decline`): a caller's result; else the fail-closed answer of
:data:`._permission.SERVER_REQUESTS`; ``-32601`` for a method nobody knows;
``-32603`` when a caller's own handler failed.  A request answered once, or
resolved by the server, is never answered again.

Bounds.  The not-yet-claimed buffer holds at most ``unclaimed_threads``
threads, ``unclaimed_per_thread`` frames each and ``unclaimed_bytes`` bytes in
all (measured as the frames' JSON text); the oldest frames go first and every
drop is counted.  The memory of settled ids (to tell a duplicate response from
an unknown one) is bounded too.
"""

from __future__ import annotations

import collections
import json
from typing import TYPE_CHECKING, Any, Deque, Dict, List, Mapping, Optional, Tuple, Union

from . import _wire
from ._errors import ConfigError, ProtocolError, RpcError, UnencodableInput, rpc_error
from ._launch import GLOBAL
from ._permission import SERVER_REQUESTS, fail_closed
from ._wire import Frame

if TYPE_CHECKING:  # the checker sees the standard library; at run time, ._dataclasses (nothing compiled)
    from typing import NamedTuple
else:
    from ._dataclasses import NamedTuple

RequestId = Union[int, str]

#: Route of a notification for a thread nobody claimed yet (kept by the connection).
UNCLAIMED = "<unclaimed>"

METHOD_NOT_FOUND = -32601
INTERNAL_ERROR = -32603

#: Notifications that end or shape a turn; a full subscription keeps them (up to twice its size).
NEVER_DROP = frozenset(
    {"turn/started", "turn/completed", "item/started", "item/completed", "error", "thread/tokenUsage/updated"}
)

#: The global notification that carries the account's rate-limit snapshot.
RATE_LIMITS_UPDATED = "account/rateLimits/updated"

#: How many answered request ids are remembered to recognise a duplicate answer.
SETTLED_MEMORY = 1024


class Outgoing(NamedTuple):
    """Bytes to write, and the frame they encode (for the frame tap)."""

    data: bytes
    frame: Frame


class Response(NamedTuple):
    """The result of request ``id``."""

    id: RequestId
    method: str
    result: Any
    frame: Frame


class ErrorResponse(NamedTuple):
    """The error answering request ``id``."""

    id: RequestId
    method: str
    error: RpcError
    frame: Frame


class Notification(NamedTuple):
    """A notification and who gets it: ``route`` is the thread id, :data:`GLOBAL`
    or :data:`UNCLAIMED` (held by the connection until :meth:`Connection.claim`)."""

    method: str
    params: Dict[str, Any]
    thread_id: Optional[str]
    route: Optional[str]
    frame: Frame


class ServerRequest(NamedTuple):
    """A request from codex.  ``params`` is ``{}`` when the frame had none (or
    not an object); answer it with :meth:`Connection.answer` or ``decline``."""

    id: RequestId
    method: str
    params: Dict[str, Any]
    frame: Frame


class ServerRequestResolved(NamedTuple):
    """codex no longer waits for an answer to request ``id``; ``note`` is the
    ``serverRequest/resolved`` notification itself, routed like any other."""

    id: RequestId
    note: Notification

    @property
    def frame(self) -> Frame:
        return self.note.frame


class Skipped(NamedTuple):
    """A line or frame that broke the rules; ``frame`` when it decoded at all."""

    error: ProtocolError
    frame: Optional[Frame]


class Malformed(NamedTuple):
    """A frame that breaks the schema's shape, acted on all the same:
    ``event`` is what it is (a :class:`ServerRequest` with ``params`` ``{}``,
    answered like any other; a :class:`Response` for the call that waits for
    it; a ``serverRequest/resolved`` :class:`Notification`), ``error`` what is
    wrong with it."""

    error: ProtocolError
    event: Union[ServerRequest, Response, Notification]

    @property
    def frame(self) -> Frame:
        return self.event.frame


Incoming = Union[Response, ErrorResponse, Notification, ServerRequest, ServerRequestResolved, Skipped, Malformed]


def thread_of(frame: Mapping[str, Any]) -> Optional[str]:
    """The thread a notification belongs to, if it names one."""
    params = frame.get("params")
    if not isinstance(params, dict):
        return None
    tid = params.get("threadId")
    if isinstance(tid, str):
        return tid
    thread = params.get("thread")
    if frame.get("method") == "thread/started" and isinstance(thread, dict) and isinstance(thread.get("id"), str):
        return str(thread["id"])
    return None


_new = tuple.__new__


def _size(frame: Frame) -> int:
    return len(json.dumps(frame, separators=(",", ":")))


#: The longest reason a frame-level problem gives (it may quote the frame's
#: method or id, which may be as long as the frame): the client keeps several.
REASON_CHARS = 240


def _problem(frame: Frame, reason: str) -> ProtocolError:
    """A frame-level problem, with the frame's text as its size and preview."""
    try:
        text = json.dumps(frame, ensure_ascii=False)
    except RecursionError:
        text = ""
    if len(reason) > REASON_CHARS:
        reason = reason[: REASON_CHARS - 1] + "…"
    return ProtocolError(reason, len(text), text[:120])


def _with_params(frame: Frame, params: Optional[object]) -> Frame:
    """``frame`` with a copy of ``params`` (none: no member at all); params
    that are no mapping are no JSON object, which codex requires."""
    if params is not None:
        if not isinstance(params, Mapping):
            what = f"{'request' if 'id' in frame else 'notification'} {frame['method']}"
            raise UnencodableInput(what, "params", f"{type(params).__name__} is not a mapping (a JSON object)")
        frame["params"] = dict(params)
    return frame


class Connection:
    """The client side of one JSON-RPC conversation with ``codex app-server``."""

    def __init__(
        self,
        *,
        max_frame_bytes: int = _wire.DEFAULT_MAX_FRAME_BYTES,
        unclaimed_threads: int = 32,
        unclaimed_per_thread: int = 512,
        unclaimed_bytes: int = 8 * 1024 * 1024,
    ) -> None:
        if min(max_frame_bytes, unclaimed_threads, unclaimed_per_thread, unclaimed_bytes) < 1:
            raise ConfigError("frame and buffer limits must be positive")
        self._decoder = _wire.LineDecoder(max_frame_bytes)
        self._next_id = 1
        self._pending: Dict[RequestId, str] = {}  # id → method, not answered yet
        # id → (method, answered): answered, or forgotten by a caller that stopped waiting
        self._settled: "collections.OrderedDict[RequestId, Tuple[str, bool]]" = collections.OrderedDict()
        self._asked: Dict[RequestId, Tuple[str, Dict[str, Any]]] = {}  # server requests not answered yet
        self._claimed: Dict[str, int] = {}  # thread id → subscribers
        self._unclaimed: "collections.OrderedDict[str, Deque[Tuple[Notification, int]]]" = collections.OrderedDict()
        self._unclaimed_size = 0
        self.unclaimed_threads = unclaimed_threads
        self.unclaimed_per_thread = unclaimed_per_thread
        self.unclaimed_bytes = unclaimed_bytes
        self.stats: Dict[str, int] = collections.Counter(
            frames_in=0, frames_out=0, malformed=0, dropped=0, unrouted=0, unknown_responses=0
        )
        #: The last rate-limit snapshot codex sent (``account/rateLimits/updated``
        #: ``rateLimits``, a global notification), or ``None``: what a turn that
        #: failed on a usage limit reads its reset time from.
        self.rate_limits: Optional[Mapping[str, Any]] = None

    # -- sending ---------------------------------------------------------------

    def request(self, method: str, params: Optional[Mapping[str, Any]] = None) -> Tuple[int, Outgoing]:
        """A new request: its id and the bytes to write.  Raises
        :class:`~._errors.UnencodableInput` when it cannot go on the wire;
        then no id is taken and nothing is kept."""
        rid = self._next_id
        out = self._out(_with_params({"id": rid, "method": method}, params))
        self._next_id = rid + 1
        self._pending[rid] = method
        return rid, out

    def notify(self, method: str, params: Optional[Mapping[str, Any]] = None) -> Outgoing:
        """A notification's bytes (:class:`~._errors.UnencodableInput` as for :meth:`request`)."""
        return self._out(_with_params({"method": method}, params))

    def forget(self, rid: RequestId) -> None:
        """The caller stopped waiting for ``rid`` (a deadline, a cancel): a late
        answer is then a counted problem, not a crash."""
        method = self._pending.pop(rid, None)
        if method is not None:
            self._remember(rid, method, answered=False)

    @property
    def pending(self) -> Mapping[RequestId, str]:
        """Requests sent and not answered (id → method)."""
        return self._pending

    def _out(self, frame: Frame) -> Outgoing:
        data = _wire.encode(frame)  # first: a frame that cannot be written is not counted
        self.stats["frames_out"] += 1
        return Outgoing(data, frame)

    # -- answering server requests ------------------------------------------------

    def answer(self, rid: RequestId, result: Any) -> Optional[Outgoing]:
        """Answer server request ``rid`` with ``result``; ``None`` if it is no
        longer open (answered already, or resolved by codex).  A ``result``
        that cannot go on the wire raises :class:`~._errors.UnencodableInput`
        and leaves the request open, for :meth:`decline` to answer."""
        if rid not in self._asked:
            return None
        out = self._out({"id": rid, "result": result})
        del self._asked[rid]
        return out

    def decline(self, rid: RequestId, handler_failed: bool = False) -> Optional[Outgoing]:
        """The answer nobody chose: fail-closed for codex's own methods,
        ``-32603`` when a caller's handler for another method failed, else
        ``-32601``.  ``None`` if the request is no longer open."""
        asked = self._asked.pop(rid, None)
        if asked is None:
            return None
        method, params = asked
        frame: Frame
        if method in SERVER_REQUESTS:
            answer = fail_closed(method, params)
            frame = {"id": rid, "error": answer.error} if answer.error else {"id": rid, "result": answer.result}
        else:
            # The method as text that goes on the wire whatever it holds (a
            # lone surrogate from a "\\ud800" escape is written as that escape).
            name = method.encode("utf-8", "backslashreplace").decode("utf-8")
            if handler_failed:
                frame = {"id": rid, "error": {"code": INTERNAL_ERROR, "message": f"handler for {name} failed"}}
            else:
                frame = {"id": rid, "error": {"code": METHOD_NOT_FOUND, "message": f"method not found: {name}"}}
        return self._out(frame)

    @property
    def open_requests(self) -> Mapping[RequestId, Tuple[str, Dict[str, Any]]]:
        """Server requests asked and not answered (id → (method, params))."""
        return self._asked

    # -- receiving ---------------------------------------------------------------

    def receive(self, data: Union[bytes, List[str]]) -> List[Incoming]:
        """Feed bytes from codex (or a list of whole messages, decoded, one
        frame each); the events they complete, in order."""
        out: List[Incoming] = []
        append, event, claimed = out.append, self._event, self._claimed
        # Globals and builtins as locals (3.9 caches no global lookup in a
        # function called fewer than 1,024 times: this one runs once a chunk).
        type_, dict_, str_, new, note = type, dict, str, _new, Notification
        # last: the claimed thread of the previous hot frame (equal to it: no hash, no lookup)
        fast, last = 0, None
        # Any: mypy narrows by type(), not by type_()
        decoded: List[Any] = self._decoder.messages(data) if isinstance(data, list) else self._decoder.feed(data)
        for item in decoded:
            # The hot path, in the loop (no call per frame): a notification
            # for a claimed thread, as _event would make it.
            if type_(item) is dict_ and "id" not in item:
                method = item.get("method")
                params = item.get("params")
                if type_(method) is str_ and type_(params) is dict_ and method != "serverRequest/resolved":
                    tid = params.get("threadId")
                    if type_(tid) is str_ and (tid == last or tid in claimed):
                        # tuple.__new__: a NamedTuple without its Python-level __new__ (per frame).
                        append(new(note, (method, params, tid, tid, item)))
                        fast, last = fast + 1, tid
                        continue
            append(event(item))
        if fast:
            self.stats["frames_in"] += fast
        return out

    def receive_eof(self) -> List[Incoming]:
        """codex's stdout ended: what an unterminated last line held."""
        return [self._event(item) for item in self._decoder.close()]

    def _event(self, item: _wire.Decoded) -> Incoming:
        if type(item) is not dict:  # a ProtocolError: the line was no JSON object
            self.stats["malformed"] += 1
            return Skipped(item, None)  # type: ignore[arg-type]
        self.stats["frames_in"] += 1
        try:
            return self._frame(item)
        except RecursionError:  # parsed, but too deep to measure (json.dumps) here
            return self._skip(item, "a frame nested too deeply")

    def _frame(self, item: Frame) -> Incoming:
        """One frame, judged once by the shape rules (:func:`._wire.shape`)."""
        kind, problem = _wire.shape(item)
        if kind == _wire.NOTIFICATION:
            if problem:  # nothing waits for it, and its params say nothing: skipped
                return self._skip(item, f"notification {item['method']}: {problem}")
            return self._notification(item, item["method"])
        if kind == _wire.REQUEST:
            request = self._server_request(item)
            if problem:  # answered all the same (fail-closed unless a handler decides)
                return self._malformed(f"request {request.method} (id {request.id!r}): {problem}", request)
            return request
        if kind is None:
            return self._skip(item, problem)
        return self._answered(item, kind, problem)

    def _skip(self, frame: Frame, reason: str, counter: str = "malformed") -> Skipped:
        self.stats[counter] += 1
        return Skipped(_problem(frame, reason), frame)

    def _malformed(self, reason: str, event: Union[ServerRequest, Response, Notification]) -> Malformed:
        self.stats["malformed"] += 1
        return Malformed(_problem(event.frame, reason), event)

    def _notification(self, frame: Frame, method: str) -> Incoming:
        params: Dict[str, Any] = frame["params"]  # an object: shape() passed it
        tid = params.get("threadId")
        if type(tid) is not str:
            tid = thread_of(frame)
        # tuple.__new__: a NamedTuple without its Python-level __new__ (per frame).
        if tid is None:
            note: Notification = _new(Notification, (method, params, None, GLOBAL, frame))
            if method == RATE_LIMITS_UPDATED:
                limits = params.get("rateLimits")
                if type(limits) is dict:
                    self.rate_limits = limits
        elif tid in self._claimed:
            note = _new(Notification, (method, params, tid, tid, frame))
        else:
            note = _new(Notification, (method, params, tid, UNCLAIMED, frame))
            self._hold(note)
        if method == "serverRequest/resolved":
            # An id of the wrong type (a list, an object) is not one codex
            # asked; it must not reach a dict lookup as an unhashable key.
            asked = params.get("requestId")
            rid = _wire.request_id(asked)
            if rid is None:  # the schema's requestId is an id: routed all the same, and reported
                what = _wire.not_an_id(asked) if "requestId" in params else "is missing"
                return self._malformed(f"notification {method}: requestId {what}", note)
            if self._asked.pop(rid, None) is not None:
                return ServerRequestResolved(rid, note)
        return note

    def _server_request(self, frame: Frame) -> ServerRequest:
        params = frame.get("params")
        if not isinstance(params, dict):
            params = {}  # null or absent: still answered (fail-closed when nobody decides)
        rid: RequestId = frame["id"]
        self._asked[rid] = (frame["method"], params)
        return ServerRequest(rid, frame["method"], params, frame)

    def _answered(self, frame: Frame, kind: str, problem: str) -> Incoming:
        rid: RequestId = frame["id"]
        method = self._pending.pop(rid, None)
        if method is None:
            settled = self._settled.get(rid)
            if settled is None:
                why = f"an answer to unknown request id {rid!r}"
            elif settled[1]:
                why = f"a second answer to request {rid!r} ({settled[0]})"
            else:
                why = f"a late answer to request {rid!r} ({settled[0]}): its caller stopped waiting"
            return self._skip(frame, why, "unknown_responses")
        self._remember(rid, method, answered=True)
        if kind == _wire.RESPONSE:
            response = Response(rid, method, frame["result"], frame)
            if problem:  # its caller waits for it: the result goes to it as it is, for it to judge
                return self._malformed(f"the answer to request {rid!r} ({method}): {problem}", response)
            return response
        err = frame["error"]
        return ErrorResponse(rid, method, rpc_error(err["code"], err["message"], err.get("data"), method), frame)

    def _remember(self, rid: RequestId, method: str, answered: bool) -> None:
        self._settled[rid] = (method, answered)
        if len(self._settled) > SETTLED_MEMORY:
            self._settled.popitem(last=False)

    # -- routing -------------------------------------------------------------------

    def claim(self, thread_id: str) -> List[Notification]:
        """A subscriber for ``thread_id`` appeared: from now on its
        notifications are routed to it; returns what was held for it."""
        self._claimed[thread_id] = self._claimed.get(thread_id, 0) + 1
        held = self._unclaimed.pop(thread_id, None)
        if not held:
            return []
        self._unclaimed_size -= sum(size for _, size in held)
        return [note._replace(route=thread_id) for note, _ in held]

    def release(self, thread_id: str) -> None:
        """One subscriber of ``thread_id`` went away."""
        left = self._claimed.get(thread_id, 0) - 1
        if left > 0:
            self._claimed[thread_id] = left
        else:
            self._claimed.pop(thread_id, None)

    @property
    def unclaimed(self) -> Tuple[int, int, int]:
        """(threads, frames, bytes) held for threads nobody claimed yet."""
        return len(self._unclaimed), sum(len(q) for q in self._unclaimed.values()), self._unclaimed_size

    def _hold(self, note: Notification) -> None:
        size = _size(note.frame)  # first: if it raises, nothing has changed
        tid = str(note.thread_id)
        queue = self._unclaimed.get(tid)
        if queue is None:
            if len(self._unclaimed) >= self.unclaimed_threads:
                self._drop_thread()
            queue = self._unclaimed[tid] = collections.deque()
        queue.append((note, size))
        self._unclaimed_size += size
        if len(queue) > self.unclaimed_per_thread:
            self._drop_from(queue)
        while self._unclaimed_size > self.unclaimed_bytes and self._unclaimed:
            oldest = next(iter(self._unclaimed.values()))
            self._drop_from(oldest)
            if not oldest:
                self._unclaimed.popitem(last=False)

    def _drop_from(self, queue: Deque[Tuple[Notification, int]]) -> None:
        _, size = queue.popleft()
        self._unclaimed_size -= size
        self.stats["dropped"] += 1

    def _drop_thread(self) -> None:
        _, evicted = self._unclaimed.popitem(last=False)
        self._unclaimed_size -= sum(size for _, size in evicted)
        self.stats["dropped"] += len(evicted)


__all__ = [
    "GLOBAL",
    "INTERNAL_ERROR",
    "METHOD_NOT_FOUND",
    "NEVER_DROP",
    "RATE_LIMITS_UPDATED",
    "REASON_CHARS",
    "UNCLAIMED",
    "Connection",
    "ErrorResponse",
    "Incoming",
    "Malformed",
    "Notification",
    "Outgoing",
    "RequestId",
    "Response",
    "ServerRequest",
    "ServerRequestResolved",
    "Skipped",
    "thread_of",
]
