"""What carries the JSON-RPC bytes: the transport interface.  Typing only.

The client (:mod:`._client`) reads and writes bytes through a
:class:`Transport` and knows nothing else of the other side.  The child
process (:class:`._process.ChildProcess`) is today's one implementation;
:mod:`codexmini.testing` has an in-memory one.  A :data:`Launcher` starts a
server side from the argv, environment and working directory a
:class:`~codexmini.Launch` plans, and returns its transport.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Awaitable, Callable, List, Mapping, Optional, Protocol, Sequence, Union

if TYPE_CHECKING:
    from ._errors import TransportError


#: What one read brings: bytes of JSON lines, or whole messages, decoded.
Chunk = Union[bytes, List[str]]


class Transport(Protocol):  # pragma: no cover - a typing Protocol: its stubs never run
    """A byte stream each way, an exit, signals.

    ``read()`` returns the next bytes (JSON lines), or, from a transport that
    delivers whole messages (a WebSocket's text frames), a list of them,
    decoded, each one frame; ``b""`` once the other side ended;
    ``write(data)`` returns once the other side took ``data`` (or it is
    buffered) and raises ``OSError`` (or ``ConnectionError``) once that side is
    gone; it may wait while the other side is not reading, and must then be
    cancellable at any await: the client bounds every write by
    ``Timeouts.write`` (the rule lives there, not in each caller); ``close_input()`` ends what we send;
    ``wait_exited()`` returns once the other side is gone, and ``ended()`` is
    then the error that says how (a child's :class:`~codexmini.ProcessExited`
    with its ``returncode`` and ``stderr_tail``; a connection's
    :class:`~codexmini.WebSocketError`); ``signal(sig)`` and
    ``aclose(timeout)`` end it by force and release what it holds.
    """

    @property
    def pid(self) -> Optional[int]: ...

    @property
    def returncode(self) -> Optional[int]: ...

    @property
    def stderr_tail(self) -> str: ...

    async def read(self) -> "Chunk": ...

    async def write(self, data: bytes) -> None: ...

    def close_input(self) -> None: ...

    async def wait_exited(self) -> None: ...

    def ended(self) -> "TransportError": ...

    def signal(self, sig: int) -> None: ...

    async def aclose(self, timeout: float) -> None: ...


#: Starts the server side: ``await launcher(argv, env, cwd)`` → its transport.
#: ``argv[0]`` is the codex binary found (or given), the rest its arguments.
Launcher = Callable[[Sequence[str], Mapping[str, str], Optional[str]], Awaitable[Transport]]


__all__ = ["Chunk", "Launcher", "Transport"]
