"""The one error hierarchy of codexmini.

Every exception codexmini raises on purpose is a :class:`CodexminiError`.
Lower-level exceptions (``OSError`` from a pipe, ``json.JSONDecodeError``,
``asyncio.TimeoutError``) are mapped to these at exactly one boundary each:
the client for the process and the wire, the session module for the log file.

::

    CodexminiError
    ├── ProtocolError            a line broke the wire rules (bad JSON, too big,
    │                            not a JSON-RPC shape); logged, kept in
    │                            ``client.protocol_errors`` and skipped, never raised
    ├── RpcError                 the server answered a request with an error
    │                            (code, message, data); codex uses -32600 for all
    ├── TransportError           the conversation with the process is over
    │   ├── ProcessExited        the child exited (returncode, stderr_tail)
    │   ├── ClientClosed         close() was called before or during the request
    │   └── RequestTimeout       no answer in time (malformed requests get none)
    ├── BinaryNotFound           no codex binary where we looked
    ├── ConfigError              a setting codexmini refuses up front
    └── SessionLogError          a session log line is corrupt (names the line)

A turn that fails is not an exception: it is an outcome, written to the
session log as ``turn/end`` with reason ``error`` and a code
(``CODEX_ERROR``, ``CODEX_NO_RESULT``, ``UNKNOWN``).
"""

from __future__ import annotations

from typing import Any, Optional


class CodexminiError(Exception):
    """Base class of every error codexmini raises."""


class ProtocolError(CodexminiError):
    """A line from the peer is not a valid frame.  Never fatal: the reader logs,
    counts and skips it."""


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


class RequestTimeout(TransportError):
    """No response arrived in time.  codex never answers a malformed line, so
    every request carries a deadline."""

    def __init__(self, method: str, timeout: float) -> None:
        self.method = method
        self.timeout = timeout
        super().__init__(f"no response to {method} within {timeout:g}s")


class BinaryNotFound(CodexminiError):
    """No codex binary was found; the message says how to install one."""


class ConfigError(CodexminiError):
    """A configuration codexmini refuses before starting anything."""


class SessionLogError(CodexminiError):
    """A session log cannot be read back (a corrupt line that is not the last)."""

    def __init__(self, message: str, path: str = "", line: int = 0) -> None:
        self.path = path
        self.line = line
        super().__init__(message)


__all__ = [
    "CodexminiError",
    "ProtocolError",
    "RpcError",
    "TransportError",
    "ProcessExited",
    "ClientClosed",
    "RequestTimeout",
    "BinaryNotFound",
    "ConfigError",
    "SessionLogError",
]
