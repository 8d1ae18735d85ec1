"""The one error hierarchy of codexmini.

Every exception codexmini raises on purpose is a :class:`CodexminiError`;
no documented failure of the public API raises a built-in exception.  Lower-
level exceptions (``OSError`` from a pipe or a log file, ``json`` errors,
``asyncio.TimeoutError``) are mapped to these at exactly one boundary each:
the wire decoder for bytes, the client for the process and the conversation,
the turn for its stream, the session module for the log file.

::

    CodexminiError
    ├── ProtocolError            a line or frame broke the wire rules (a value, rarely raised)
    ├── RpcError                 the server answered a request with an error
    │   ├── ServerOverloaded     -32001, once the client's retries ran out
    │   ├── MethodNotFound       this codex has no such method
    │   └── ThreadNotFound       no such thread on disk or in memory, and why
    ├── TransportError           the conversation with the process is over
    │   ├── ProcessExited        the child exited (returncode, stderr_tail)
    │   ├── ConnectFailed        a running server could not be reached or refused us (url, status)
    │   │   └── AuthRejected     it refused the credentials: 401/403 (what it wanted)
    │   ├── WebSocketError       the WebSocket connection ended or broke the protocol (code)
    │   ├── ClientClosed         close() was called before or during the request
    │   ├── RequestTimeout       no answer in time (malformed requests get none)
    │   └── WriteTimeout         codex took no frame in time (it stopped reading)
    ├── CodexTimeout             a deadline passed: RequestTimeout, TurnTimeout
    │   ├── TurnTimeout          a turn was silent longer than its idle_timeout
    │   └── ModelUnreachable     codex retried the model past Timeouts.model_retry
    ├── BinaryNotFound           no codex binary where we looked, or it cannot run
    ├── StartFailed              codex exited or was silent before it served (the CLI, the daemon)
    ├── ConfigError              a setting or a value codexmini refuses up front
    │   ├── EndpointKeyMissing   a session's endpoint names a key variable that is not set
    │   └── UnencodableInput     a caller's value that cannot go on the wire (nothing sent)
    ├── SchemaError              a JSON Schema the validator cannot use, or none printed
    ├── OutputValidationError    a turn's final answer broke its output_schema
    ├── SessionLogError          a session log cannot be read or written (its path; the line, the cause)
    │   ├── SessionLogLocked     another writer holds the log (its pid)
    │   └── SessionLogChanged    the file was truncated, replaced or written behind the writer's back
    ├── TurnFailed               a turn ended ``failed`` (a value on TurnCompleted.failure)
    │   └── UsageLimitExceeded   the account's usage limit was hit (resets_at)
    └── CompactionFailed         the agent's summary call gave no summary (logged as COMPACTION_FAILED)

``RequestTimeout`` is both a ``TransportError`` (the request is lost) and a
``CodexTimeout`` (a deadline passed), so either ``except`` clause catches it.
Each class's docstring says when it is raised and what it carries.

Which ``RpcError`` subclass an error answer becomes is decided once, by
:func:`rpc_error`, where the RPC core reads the answer: by code (``-32001``,
``-32601``) and, since codex answers most errors with ``-32600``, by the
message codex words them with (recorded in ``fixtures/<version>/``).

A turn that fails is not an exception: the agent logs it (``turn/end`` with
reason ``error`` and a code, see ``docs/session-log.md``), and the turn's
``TurnCompleted.failure`` is a :class:`TurnFailed` describing it.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Optional, Sequence, Tuple


class CodexminiError(Exception):
    """Base class of every error codexmini raises."""


class ProtocolError(CodexminiError):
    """A line or a frame from the peer broke the wire rules.

    Never fatal and never raised by the reader: the wire decoder and the RPC
    core return it as a value; the client logs it, counts it and keeps the
    last few in ``client.protocol_errors``.  It is raised only by a call whose
    answer lacks what it must hold (``thread/start`` without a thread id).
    ``reason`` says what was wrong, ``size`` is the line's length in bytes (0
    for a frame-level problem) and ``preview`` its first bytes, decoded
    leniently.
    """

    def __init__(self, reason: str, size: int = 0, preview: str = "") -> None:
        self.reason = reason
        self.size = size
        self.preview = preview
        super().__init__(f"{reason} ({preview!r})" if preview else reason)


class RpcError(CodexminiError):
    """The server answered with a JSON-RPC error object (``code``, ``message``,
    ``data``, and the ``method`` asked); codex uses -32600 for most errors."""

    def __init__(self, code: int, message: str, data: Any = None, method: str = "") -> None:
        self.code = code
        self.message = message
        self.data = data
        self.method = method
        where = f"{method}: " if method else ""
        super().__init__(f"{where}{message} (code {code})")


class ServerOverloaded(RpcError):
    """``-32001`` "Server overloaded; retry later.": codex's request queue was
    full and it rejected the request without processing it (codex-rs/app-server
    README, "Backpressure behavior"; provoked by the ``overload`` scenario).
    :meth:`AppServerClient.request <codexmini.AppServerClient.request>`
    retries such a request with exponential backoff and jitter
    (:class:`~codexmini.RetryPolicy`) and raises this once the retries ran out;
    ``attempts`` is how many requests were sent."""

    CODE = -32001

    def __init__(self, code: int, message: str, data: Any = None, method: str = "", attempts: int = 1) -> None:
        super().__init__(code, message, data, method)
        self.attempts = attempts


class MethodNotFound(RpcError):
    """The server has no such method: ``-32601``, or codex's own wording for a
    request it cannot parse as one of its methods (``-32600`` "Invalid request:
    unknown variant `thread/rollback`, expected one of …", codex 0.171.0)."""


class ThreadNotFound(RpcError):
    """codex knows no thread by this id: none on disk in its ``CODEX_HOME``
    ("no rollout found for thread id …") or none loaded in this process
    ("thread not loaded: …").  ``thread_id`` names it; the message says why.

    The usual cause: codex writes a thread to disk when its first turn runs, so
    a thread that ran no turn is lost with the process that started it; a new
    process cannot resume, read or fork it (recorded with both codex 0.149.1
    and 0.171.0: ``fixtures/<version>/resume_unpersisted.frames.jsonl``)."""

    def __init__(self, code: int, message: str, data: Any = None, method: str = "", thread_id: str = "") -> None:
        super().__init__(code, message, data, method)
        self.thread_id = thread_id
        if message.startswith("no rollout"):
            why = (
                "codex has no rollout of it in its CODEX_HOME; codex writes a thread to disk when its first "
                "turn runs, so a thread that ran no turn (or one of another CODEX_HOME) cannot be resumed, "
                "read or forked by a new process"
            )
        else:
            why = (
                "it is not loaded in this codex process (Thread.resume loads a stored thread; "
                "a thread that ran no turn was never stored)"
            )
        where = f"{method}: " if method else ""
        self.args = (f"{where}thread {thread_id or '?'} not found: {why} (codex said: {message!r}, code {code})",)


#: codex's words for an unknown method and an unknown thread (every supported
#: version says the same; the recordings show each).  Compiled at first use
#: (``re`` caches them), not with the package.
_UNKNOWN_VARIANT = r"unknown variant `([^`]+)`"
_NO_THREAD = r"^(?:no rollout found for thread id|thread not loaded:|thread not found:) ?(\S*)"


def rpc_error(code: int, message: str, data: Any = None, method: str = "") -> RpcError:
    """The error for one JSON-RPC error answer to ``method``: the most specific
    :class:`RpcError` subclass its code or codex's message says it is."""
    if code == ServerOverloaded.CODE:
        return ServerOverloaded(code, message, data, method)
    if code == -32601:
        return MethodNotFound(code, message, data, method)
    unknown = re.search(_UNKNOWN_VARIANT, message)
    if unknown is not None and unknown.group(1) == method:
        return MethodNotFound(code, message, data, method)
    missing = re.match(_NO_THREAD, message)
    if missing is not None:
        return ThreadNotFound(code, message, data, method, missing.group(1))
    return RpcError(code, message, data, method)


class TransportError(CodexminiError):
    """The request could not complete because the conversation ended."""


class ProcessExited(TransportError):
    """The app-server process exited.  ``stderr_tail`` holds its last lines."""

    def __init__(self, returncode: Optional[int], stderr_tail: str = "") -> None:
        self.returncode = returncode
        self.stderr_tail = stderr_tail
        tail = stderr_tail.strip().splitlines()[-3:]
        detail = (": " + " | ".join(tail)) if tail else ""
        super().__init__(f"codex app-server exited with code {returncode}{detail}")


class ConnectFailed(TransportError):
    """A running app-server could not be reached, or would not take us: the
    connection refused, reset or silent while connecting, an opening
    handshake that did not end in time, an answer other than ``101
    Switching Protocols``, a wrong ``Sec-WebSocket-Accept``.  ``url``: where
    (credentials are never part of it); ``status``: the HTTP status of the
    server's answer, when there was one; ``reason``: what went wrong."""

    def __init__(self, url: str, reason: str, status: Optional[int] = None) -> None:
        self.url = url
        self.reason = reason
        self.status = status
        super().__init__(f"cannot connect to {url}: {reason}")


class AuthRejected(ConnectFailed):
    """The server refused the credentials (``401`` or ``403``): none were
    given, or not the ones it takes.  ``wanted``: the scheme the server asked
    for (its ``WWW-Authenticate``, e.g. ``Bearer``), or ``""`` when it named
    none.  The credentials themselves are never in the message."""

    def __init__(self, url: str, status: int, wanted: str = "") -> None:
        self.wanted = wanted
        asked = f"; it wants {wanted} authentication" if wanted else ""
        ConnectFailed.__init__(self, url, f"the server refused the credentials ({status}){asked}", status)


class WebSocketError(TransportError):
    """A WebSocket connection to a running app-server ended or broke the
    protocol: the server closed it (``code``, its close code, and
    ``reason``), it sent what RFC 6455 forbids (a masked frame, a bad
    opcode, text that is no UTF-8, a message over the size limit: ``code``
    is then the close code codexmini answered with), or the connection
    dropped without a close (``code`` is ``None``)."""

    def __init__(self, reason: str, code: Optional[int] = None) -> None:
        self.reason = reason
        self.code = code
        super().__init__(f"websocket: {reason}" + (f" (close code {code})" if code is not None else ""))


class ClientClosed(TransportError):
    """The client was closed; no more requests can be sent."""

    def __init__(self, message: str = "the codexmini client is closed") -> None:
        super().__init__(message)


class CodexTimeout(CodexminiError):
    """A deadline passed.  ``timeout`` is the deadline, in seconds."""

    def __init__(self, message: str, timeout: float) -> None:
        self.timeout = timeout
        super().__init__(message)


class RequestTimeout(TransportError, CodexTimeout):
    """No response arrived in time.  codex never answers a malformed line, so
    every request carries a deadline."""

    def __init__(self, method: str, timeout: float) -> None:
        self.method = method
        CodexTimeout.__init__(self, f"no response to {method} within {timeout:g}s", timeout)


class WriteTimeout(TransportError, CodexTimeout):
    """codex did not take a frame within :attr:`Timeouts.write
    <codexmini.Timeouts.write>`: it stopped reading its input.  The client is
    then unhealthy (the agent replaces the child) and every later write
    raises this at once.  ``method``: what was being sent (a request, a
    notification, or ``answer`` to a server request)."""

    def __init__(self, method: str, timeout: float) -> None:
        self.method = method
        CodexTimeout.__init__(self, f"codex did not take {method} within {timeout:g}s: it stopped reading", timeout)


class TurnTimeout(CodexTimeout):
    """A turn received nothing for longer than its ``idle_timeout``."""

    def __init__(self, turn_id: Optional[str], timeout: float) -> None:
        self.turn_id = turn_id
        super().__init__(f"turn {turn_id} was silent for {timeout:g}s", timeout)


class ModelUnreachable(CodexTimeout):
    """codex kept retrying the model for longer than
    :attr:`Timeouts.model_retry <codexmini.Timeouts.model_retry>` with nothing
    else arriving, so the turn was interrupted.  ``turn_id``: the turn;
    ``retries``: how many retry notices codex sent; ``reason``: what codex
    said in the last one (its message, then its details in parentheses:
    ``Reconnecting... waiting for network (Connection failed: error sending
    request)``); ``info``: its ``codexErrorInfo``."""

    def __init__(self, turn_id: Optional[str], timeout: float, retries: int, reason: str, info: Any = None) -> None:
        self.turn_id = turn_id
        self.retries = retries
        self.reason = reason
        self.info = info
        super().__init__(
            f"the model could not be reached: codex retried it {retries} time(s) over {timeout:g}s and said: {reason}",
            timeout,
        )


class StartFailed(CodexminiError):
    """codex did not start, or did not serve: the CLI's codex that did not
    answer ``initialize`` (exit 3), a ``codex app-server daemon`` command that
    failed (:func:`~codexmini.connect_daemon`), a server that did not listen."""


class BinaryNotFound(CodexminiError):
    """No codex binary was found, or it cannot be executed; the message says how
    to install one."""


class ConfigError(CodexminiError):
    """A configuration codexmini refuses before starting anything, or a
    value it refuses before sending anything (:class:`UnencodableInput`)."""


class EndpointKeyMissing(ConfigError):
    """A session's model endpoint reads its key from an environment variable
    (``model/endpoint``'s ``apiKeyEnv``) that is not set, neither in
    ``Launch.env`` nor in the process: refused before codex starts, rather
    than run the endpoint without a key.  ``variable`` is its name (the log
    keeps the name, never the key); ``base_url`` the endpoint's."""

    def __init__(self, variable: str, base_url: str) -> None:
        self.variable = variable
        self.base_url = base_url
        super().__init__(
            f"the session's model endpoint {base_url} reads its key from ${variable}, which is not set: "
            f"set {variable} (or Launch.env[{variable!r}]), or choose another endpoint (Agent.set_endpoint)"
        )


class UnencodableInput(ConfigError):
    """A value the caller gave -- a prompt, request params, an output schema,
    the answer to a server request -- that cannot go on the wire: not JSON (a
    set, an object, NaN or an infinity, a key that is no string, a cycle,
    nesting too deep to encode) or not UTF-8 (a lone surrogate such as
    ``"\\ud800"`` in a string).  Raised before the request takes an id:
    nothing is sent, nothing is kept, and the next request is unaffected.

    ``what`` is the frame it was for (``request turn/start``, ``the answer
    to request 0``), ``path`` where in that frame the first part that does
    not encode is (``params.input[0].text``; empty for the frame itself) and
    ``reason`` why; the encoder's own error is chained (``__cause__``)."""

    def __init__(self, what: str, path: str, reason: str) -> None:
        self.what = what
        self.path = path
        self.reason = reason
        super().__init__(f"{what}: {path or 'the frame'} cannot go on the wire ({reason})")


class SchemaError(CodexminiError):
    """A JSON Schema codexmini's validator cannot (or will not) compile -- an
    unsupported keyword, a malformed keyword value, a ``$ref`` it cannot
    resolve -- or a schema the codex binary failed to print."""


class OutputValidationError(CodexminiError):
    """A turn's final answer is not what its ``output_schema`` asked for: it
    is not JSON, or the schema rejects it (codex checks neither).  ``text`` is
    the raw answer (``None`` when the turn had no agent message), ``errors``
    the ``(json_path, message)`` reasons, and ``result`` the turn's
    :class:`~codexmini.RunResult` (with ``value`` unset), so the caller can
    resume the thread or read the items."""

    def __init__(self, text: Optional[str], errors: Sequence[Tuple[str, str]], result: Any = None) -> None:
        self.text = text
        self.errors = list(errors)
        self.result = result
        shown = "; ".join(f"{path}: {message}" for path, message in self.errors[:3])
        more = f" (and {len(self.errors) - 3} more)" if len(self.errors) > 3 else ""
        super().__init__(f"the final answer does not match the output schema: {shown}{more}")


class SessionLogError(CodexminiError):
    """A session log cannot be read back (a corrupt line that is not the last)
    or written.  ``path`` is the log; ``line`` the 1-based line that is bad or
    that could not be appended (0 when no line is concerned).  A storage fault
    -- a directory or file without permission, a directory where the log
    should be, a full disk, a file size limit -- is this error with the
    ``OSError`` that caused it as ``__cause__``."""

    def __init__(self, message: str, path: str = "", line: int = 0) -> None:
        self.path = path
        self.line = line
        super().__init__(message)


class SessionLogLocked(SessionLogError):
    """Another writer holds the session log: one writer per log.  Raised by
    :meth:`SessionLog.open <codexmini.SessionLog.open>` before anything is
    read or written.  ``pid`` is the holder's process id, read from the
    ``<log>.pid`` file it wrote (``None`` when it is unknown: the holder had
    not written it yet, or could not)."""

    def __init__(self, path: str, pid: Optional[int]) -> None:
        self.pid = pid
        holder = f"pid {pid}" if pid is not None else "another process (pid unknown)"
        super().__init__(
            f"{path}: the session log is locked by its writer, {holder}: one writer per log "
            "(the lock goes when that writer closes the log or exits)",
            path=path,
        )


class SessionLogChanged(SessionLogError):
    """The session log file was changed behind its writer's back, found
    before an append (nothing of that append is written; the log closes).
    ``change`` says how: ``missing`` (its path leads nowhere any more:
    removed or renamed; ``__cause__`` is the ``OSError``), ``replaced`` (its
    path leads to another file), ``truncated`` (shorter than this writer left
    it) or ``appended`` (longer: someone else wrote to it)."""

    def __init__(self, message: str, path: str, change: str, line: int = 0) -> None:
        self.change = change
        super().__init__(message, path=path, line=line)


class ForkRefused(SessionLogError):
    """:func:`~codexmini.fork_log` refused, before it wrote anything: ``reason``
    says why -- ``out-of-range`` (``at`` is not the ``seq`` of an event of the
    log), ``inside-turn`` (the cut would split a turn: ``turn`` is that turn,
    ``before`` and ``after`` the nearest ``seq`` to fork at instead: ``before``
    is ``None`` when the turn begins the log, ``after`` when the log ends in
    it before its ``turn/end``) or ``exists`` (the new log's path is taken).  ``path`` is the log named; ``seq`` the ``at`` asked for."""

    def __init__(
        self,
        message: str,
        path: str,
        reason: str,
        seq: Any,
        turn: Optional[int] = None,
        before: Optional[int] = None,
        after: Optional[int] = None,
    ) -> None:
        self.reason = reason
        self.seq = seq
        self.turn = turn
        self.before = before
        self.after = after
        super().__init__(message, path=path)


class TurnFailed(CodexminiError):
    """A turn ended with status ``failed``.  ``codexmini.run()`` and
    ``Thread.run()`` raise it (unless told ``raise_on_failure=False``), with
    the turn's :class:`~codexmini.RunResult` as ``result``; a turn iterated
    by hand carries it as :attr:`TurnCompleted.failure
    <codexmini.TurnCompleted.failure>` (``raise_for_status()`` raises it).
    ``error`` is the wire's ``TurnError`` (``message``, ``codexErrorInfo``,
    ``additionalDetails``), ``info`` its ``codexErrorInfo``, ``message`` its
    message."""

    def __init__(self, turn_id: str, error: Optional[Mapping[str, Any]]) -> None:
        self.turn_id = turn_id
        self.error = error
        #: The turn's RunResult, when run() or Thread.run() raised this.
        self.result: Any = None
        self.info: Any = (error or {}).get("codexErrorInfo")
        self.message = str((error or {}).get("message") or "the turn failed")
        super().__init__(f"turn {turn_id} failed: {self.message}")


class UsageLimitExceeded(TurnFailed):
    """The turn failed because the account's usage limit was hit
    (``codexErrorInfo: "usageLimitExceeded"``).  ``resets_at`` is when the
    exhausted window resets (Unix seconds), from the rate-limit snapshot codex
    sent just before the error (``account/rateLimits/updated``: a window at
    100% ``usedPercent``); ``None`` when codex gave none.  ``rate_limits`` is
    that snapshot (the wire's ``RateLimitSnapshot``).  codex's own message
    words the reset as a local time of day ("try again at 1:00 PM")."""

    def __init__(
        self,
        turn_id: str,
        error: Optional[Mapping[str, Any]],
        resets_at: Optional[int] = None,
        rate_limits: Optional[Mapping[str, Any]] = None,
    ) -> None:
        super().__init__(turn_id, error)
        self.resets_at = resets_at
        self.rate_limits = rate_limits
        if resets_at is not None:
            self.args = (f"{self.args[0]} (the limit resets at {resets_at}, Unix time)",)


class CompactionFailed(CodexminiError):
    """The codex turn that was to summarise an agent session for its
    compaction did not complete, or completed without an answer: nothing is
    written to the log (it stays as it was), and the step ends in ``error``
    with the code ``COMPACTION_FAILED`` (``docs/session-log.md``).  The agent
    catches it; it reaches no caller.  ``status``: the summary turn's status."""

    def __init__(self, message: str, status: str) -> None:
        self.status = status
        super().__init__(message)


__all__ = [
    "BinaryNotFound",
    "CompactionFailed",
    "StartFailed",
    "ClientClosed",
    "CodexTimeout",
    "CodexminiError",
    "ConfigError",
    "ConnectFailed",
    "EndpointKeyMissing",
    "AuthRejected",
    "WebSocketError",
    "OutputValidationError",
    "MethodNotFound",
    "ProcessExited",
    "ProtocolError",
    "RequestTimeout",
    "WriteTimeout",
    "RpcError",
    "SchemaError",
    "ServerOverloaded",
    "SessionLogChanged",
    "SessionLogError",
    "SessionLogLocked",
    "ThreadNotFound",
    "TransportError",
    "TurnFailed",
    "TurnTimeout",
    "UnencodableInput",
    "UsageLimitExceeded",
    "rpc_error",
]
