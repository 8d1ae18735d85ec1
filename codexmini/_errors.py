"""The one error hierarchy of codexmini.

Every exception codexmini raises on purpose is a :class:`CodexminiError`;
no documented failure of the public API raises a built-in exception.  Lower-
level exceptions (``OSError`` from a pipe or a log file, ``json`` errors,
``asyncio.TimeoutError``) are mapped to these at exactly one boundary each:
the wire decoder for bytes, the client for the process and the conversation,
the turn for its stream, the session module for the log file.

::

    CodexminiError
    ├── ProtocolError            a line or frame broke the wire rules (bad JSON,
    │                            too big, no JSON-RPC shape, an answer to an id
    │                            nobody asked); a *value* the reader logs, counts
    │                            and keeps in ``client.protocol_errors``; raised only
    │                            by a call whose answer lacks what it must hold
    │                            (``thread/start`` without a thread id)
    ├── RpcError                 the server answered a request with an error
    │                            (code, message, data); codex uses -32600 for all
    ├── TransportError           the conversation with the process is over
    │   ├── ProcessExited        the child exited (returncode, stderr_tail)
    │   ├── ClientClosed         close() was called before or during the request
    │   └── RequestTimeout       no answer in time (malformed requests get none)
    ├── CodexTimeout             a deadline passed: RequestTimeout, TurnTimeout
    │   └── TurnTimeout          a turn was silent longer than its idle_timeout
    ├── BinaryNotFound           no codex binary where we looked, or it cannot run
    ├── ConfigError              a setting codexmini refuses up front (a bad pin,
    │                            a missing cwd, an unsupported wire API)
    ├── SchemaError              a JSON Schema the stdlib validator cannot use, or
    │                            one the binary failed to print
    ├── OutputValidationError    a turn's final answer broke its output_schema (not
    │                            JSON, or JSON the schema rejects): the raw text,
    │                            the reasons and the turn's RunResult
    └── SessionLogError          a session log line is corrupt (names the line)

``RequestTimeout`` is both a ``TransportError`` (the request is lost) and a
``CodexTimeout`` (a deadline passed), so either ``except`` clause catches it.

A turn that fails is not an exception: it is an outcome, written to the
session log as ``turn/end`` with reason ``error`` and a code
(``CODEX_ERROR``, ``CODEX_NO_RESULT``, ``UNKNOWN``).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple


class CodexminiError(Exception):
    """Base class of every error codexmini raises."""


class ProtocolError(CodexminiError):
    """A line or a frame from the peer broke the wire rules.

    Never fatal and never raised by the reader: the wire decoder and the RPC
    core return it as a value; the client logs it, counts it and keeps the
    last few in ``client.protocol_errors``.  ``reason`` says what was wrong,
    ``size`` is the line's length in bytes (0 for a frame-level problem) and
    ``preview`` its first bytes, decoded leniently.
    """

    def __init__(self, reason: str, size: int = 0, preview: str = "") -> None:
        self.reason = reason
        self.size = size
        self.preview = preview
        super().__init__(f"{reason} ({preview!r})" if preview else reason)


class RpcError(CodexminiError):
    """The server answered with a JSON-RPC error object."""

    def __init__(self, code: int, message: str, data: Any = None, method: str = "") -> None:
        self.code = code
        self.message = message
        self.data = data
        self.method = method
        where = f"{method}: " if method else ""
        super().__init__(f"{where}{message} (code {code})")


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


class TurnTimeout(CodexTimeout):
    """A turn received nothing for longer than its ``idle_timeout``."""

    def __init__(self, turn_id: Optional[str], timeout: float) -> None:
        self.turn_id = turn_id
        super().__init__(f"turn {turn_id} was silent for {timeout:g}s", timeout)


class BinaryNotFound(CodexminiError):
    """No codex binary was found, or it cannot be executed; the message says how
    to install one."""


class ConfigError(CodexminiError):
    """A configuration codexmini refuses before starting anything."""


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
    or written (the disk refused an append)."""

    def __init__(self, message: str, path: str = "", line: int = 0) -> None:
        self.path = path
        self.line = line
        super().__init__(message)


__all__ = [
    "BinaryNotFound",
    "ClientClosed",
    "CodexTimeout",
    "CodexminiError",
    "ConfigError",
    "OutputValidationError",
    "ProcessExited",
    "ProtocolError",
    "RequestTimeout",
    "RpcError",
    "SchemaError",
    "SessionLogError",
    "TransportError",
    "TurnTimeout",
]
