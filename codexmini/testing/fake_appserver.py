"""One fake ``codex app-server``: scripted behaviours, in memory or over real pipes.

Theory of operation
-------------------
A **behaviour** is an async function ``behaviour(server) -> exit status``
that plays the server side of a conversation through a :class:`ServerSide`:
``await server.recv()`` the client's next frame, ``server.send(frame)``,
``server.notify(method, params)``, ``server.respond(request, result)``,
``await server.handshake()`` (answer ``initialize`` like codex).  The same
behaviour runs two ways:

* **in memory** -- :meth:`FakeAppServer.launch` is a launcher for
  ``AppServerClient.start(launcher=…)`` (or ``AgentConfig(launcher=…)``): a
  :class:`MemoryTransport` joins client and behaviour inside one event loop,
  bytes and all (lines are encoded and decoded as on a pipe), with no process.
  Most client, thread and agent tests run this way, in milliseconds.
* **over real pipes** -- :meth:`FakeAppServer.executable` writes a small
  script usable as ``codex_bin``; it runs ``python -m codexmini.testing
  fake MODULE:BEHAVIOUR`` as a child process, so
  tests about pipes, processes and signals see real ones.  The behaviour must
  then be importable by that name.

Either way the client under test validates what the fake sends (the
conformance suite taps every client), so a fake cannot drift from the real
protocol unnoticed.  :class:`CodexLike` is a behaviour with codex 0.149.1's
real shapes (``thread/start``, ``turn/start``, items, usage) for thread- and
agent-level tests; :class:`~codexmini.testing.replay.Replay` plays a recorded
transcript.

In memory, the child's life is simulated faithfully enough for the client:
the behaviour returning is the process exiting with that status (raising: exit
1, traceback on "stderr"); closing the client's input ends ``recv()``;
``SIGKILL``/``SIGTERM`` cancel the behaviour; a behaviour that calls
:meth:`ServerSide.stop_reading` makes the client's writes block once 64 KiB
are buffered, as a full pipe does.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import importlib
import json
import os
import signal
import stat
import sys
import traceback
from typing import (
    Any,
    AsyncIterator,
    Awaitable,
    Callable,
    Deque,
    Dict,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Union,
)

from .._errors import ConfigError, ProcessExited
from .._wire import Frame, LineDecoder

#: A behaviour plays the server: ``await behaviour(server)`` → exit status (None = 0).
Behaviour = Callable[["ServerSide"], Awaitable[Optional[int]]]

#: What ``initialize`` answers (the four keys codex 0.149.1 sends).
INIT_RESULT: Dict[str, Any] = {
    "userAgent": "codexmini-fake/0.149.1 (fake)",
    "codexHome": "/var/tmp/fake-codex-home",
    "platformFamily": "unix",
    "platformOs": "linux",
}
EMITTED_AT_MS = 1795975388192
PIPE_BUFFER = 64 * 1024


class FakeError(Exception):
    """A behaviour saw something it did not expect (the fake exits 3)."""


class ServerSide:
    """The server end of one fake conversation, as a behaviour sees it."""

    def __init__(self, argv: Sequence[str], env: Mapping[str, str], cwd: Optional[str], args: Sequence[str] = ()):
        self.argv = list(argv)
        self.env = dict(env)
        self.cwd = cwd
        self.args = list(args)
        #: Every frame the client sent, in order (``recv`` or not).
        self.received: List[Frame] = []
        # The queue is made by the first recv(), on the loop that reads it
        # (Python 3.9 binds a queue to a loop when it is made); what arrives
        # before that waits in _early.
        self._frames: "Optional[asyncio.Queue[Optional[Frame]]]" = None
        self._early: List[Optional[Frame]] = []
        self._decoder = LineDecoder()
        self._eof = False
        self._held: Optional[List[bytes]] = None  # frames sent inside one_write()

    # -- receiving -----------------------------------------------------------

    def _put(self, item: Optional[Frame]) -> None:
        if self._frames is None:
            self._early.append(item)
        else:
            self._frames.put_nowait(item)

    def _feed(self, data: bytes) -> None:
        for item in self._decoder.feed(data):
            if isinstance(item, dict):
                self.received.append(item)
                self._put(item)

    def _feed_eof(self) -> None:
        if not self._eof:
            self._eof = True
            self._feed(b"\n")
            self._put(None)

    async def recv(self, timeout: Optional[float] = None) -> Optional[Frame]:
        """The client's next frame; ``None`` once its input ended (or after ``timeout``)."""
        if self._frames is None:
            self._frames = asyncio.Queue()
            for item in self._early:
                self._frames.put_nowait(item)
            self._early.clear()
        try:
            return await asyncio.wait_for(self._frames.get(), timeout)
        except asyncio.TimeoutError:
            return None

    async def expect(self, method: str, timeout: float = 30.0) -> Frame:
        """The next frame, which must be ``method`` (else :class:`FakeError`)."""
        frame = await self.recv(timeout)
        if frame is None or frame.get("method") != method:
            raise FakeError(f"expected {method!r} from the client, got {frame!r}")
        return frame

    async def requests(self) -> AsyncIterator[Frame]:
        """Every later client request (notifications and answers skipped), until EOF."""
        while True:
            frame = await self.recv()
            if frame is None:
                return
            if "method" in frame and "id" in frame:
                yield frame

    async def drain(self) -> None:
        """Read until the client's input ends."""
        while await self.recv() is not None:
            pass

    # -- sending -------------------------------------------------------------

    def _write(self, data: bytes) -> None:
        """Write to the client (the transport's)."""
        raise NotImplementedError

    def send_raw(self, data: bytes) -> None:
        """Bytes as they are (bad lines, partial lines)."""
        if self._held is not None:
            self._held.append(data)
        else:
            self._write(data)

    def send(self, frame: Frame) -> None:
        """One frame, one line."""
        self.send_raw(json.dumps(frame, ensure_ascii=False).encode("utf-8") + b"\n")

    @contextlib.contextmanager
    def one_write(self) -> Iterator[None]:
        """What is sent inside goes out at the end, in order, in one write:
        what codex can write at once, and one read of the client's can bring."""
        if self._held is not None:
            raise RuntimeError("one_write() is already open")
        held: List[bytes] = []
        self._held = held
        try:
            yield
        finally:
            self._held = None
            if held:
                self._write(b"".join(held))

    def notify(self, method: str, params: Mapping[str, Any]) -> None:
        """A notification with ``emittedAtMs``, as codex sends them."""
        self.send({"method": method, "params": dict(params), "emittedAtMs": EMITTED_AT_MS})

    def respond(self, request: Frame, result: Any) -> None:
        self.send({"id": request["id"], "result": result})

    def fail(self, request: Frame, message: str, code: int = -32600) -> None:
        """An error answer (codex uses -32600 for every error it returns)."""
        self.send({"id": request["id"], "error": {"code": code, "message": message}})

    def stderr(self, text: str) -> None:
        raise NotImplementedError

    def close_output(self) -> None:
        """Close stdout while staying alive."""
        raise NotImplementedError

    def stop_reading(self) -> None:
        """Stop consuming stdin: the client's writes block once the pipe is full."""
        raise NotImplementedError

    def close_input(self) -> None:
        """Close stdin while staying alive: the client's writes fail (a broken
        pipe) and :meth:`recv` returns ``None``."""
        raise NotImplementedError

    async def handshake(self, result: Optional[Mapping[str, Any]] = None) -> Frame:
        """Answer ``initialize`` and wait for ``initialized``; the initialize request."""
        request = await self.expect("initialize")
        self.respond(request, dict(result or INIT_RESULT))
        await self.expect("initialized")
        return request


# ---------------------------------------------------------------------------
# In memory


class _MemoryServerSide(ServerSide):
    def __init__(self, transport: "MemoryTransport", *a: Any) -> None:
        super().__init__(*a)
        self._transport = transport
        self.reading = True

    def _write(self, data: bytes) -> None:
        self._transport._to_client(data)

    def stderr(self, text: str) -> None:
        self._transport._stderr(text)

    def close_output(self) -> None:
        self._transport._to_client(b"")

    def stop_reading(self) -> None:
        self.reading = False

    def close_input(self) -> None:
        self._transport.close_input()


class MemoryTransport:
    """Client ↔ behaviour in one event loop: the transport of
    :class:`~codexmini._client.AppServerClient`, without a process."""

    def __init__(self, behaviour: Behaviour, argv: Sequence[str], env: Mapping[str, str], cwd: Optional[str]):
        self.server = _MemoryServerSide(self, argv, env, cwd)
        self._out: "asyncio.Queue[bytes]" = asyncio.Queue()
        self._out_closed = False
        self._in_closed = False
        self._buffered = 0  # client bytes written while the server does not read
        self._unblocked = asyncio.Event()
        self._tail: Deque[str] = collections.deque(maxlen=40)
        self._returncode: Optional[int] = None
        self._exited = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._run(behaviour))

    async def _run(self, behaviour: Behaviour) -> None:
        code: Optional[int] = 1
        try:
            code = await behaviour(self.server)
        except asyncio.CancelledError:
            return  # killed: signal() set the code
        except FakeError as exc:
            self._stderr(f"fake app-server: {exc}")
            code = 3
        except Exception:
            self._stderr(traceback.format_exc())
        self._exit(0 if code is None else code)

    def _exit(self, code: int) -> None:
        if self._returncode is None:
            self._returncode = code
        self._to_client(b"")
        self._in_closed = True
        self._unblocked.set()
        self._exited.set()

    def _to_client(self, data: bytes) -> None:
        if not self._out_closed:
            self._out.put_nowait(data)
            self._out_closed = not data

    def _stderr(self, text: str) -> None:
        self._tail.extend(line for line in text.splitlines() if line.strip())

    # -- the transport protocol ------------------------------------------------

    @property
    def pid(self) -> Optional[int]:
        return None

    @property
    def returncode(self) -> Optional[int]:
        return self._returncode

    @property
    def stderr_tail(self) -> str:
        return "\n".join(self._tail)

    async def read(self) -> bytes:
        return await self._out.get()

    async def write(self, data: bytes) -> None:
        if self._in_closed:
            raise BrokenPipeError("the fake app-server's stdin is closed")
        if not self.server.reading:
            self._buffered += len(data)
            while self._buffered > PIPE_BUFFER and not self._unblocked.is_set():
                await self._unblocked.wait()
            if self._in_closed:
                raise BrokenPipeError("the fake app-server's stdin is closed")
            return
        self.server._feed(data)

    def close_input(self) -> None:
        if not self._in_closed:
            self._in_closed = True
            self.server._feed_eof()

    async def wait_exited(self) -> None:
        await self._exited.wait()

    def ended(self) -> ProcessExited:
        return ProcessExited(self._returncode, self.stderr_tail)

    def signal(self, sig: int) -> None:
        if sig in (signal.SIGKILL, signal.SIGTERM) and self._returncode is None:
            self._returncode = -sig
            self._task.cancel()
            self._exit(-sig)

    async def aclose(self, timeout: float) -> None:
        if not self._task.done():
            self._task.cancel()
        await asyncio.wait([self._task], timeout=timeout)


# ---------------------------------------------------------------------------
# The fake itself


class FakeAppServer:
    """A fake codex playing ``behaviour``.  ``launch`` runs it in memory (a
    launcher); ``executable`` makes a ``codex_bin`` that runs it as a process
    (the behaviour must then be a ``"module:name"`` spec)."""

    def __init__(self, behaviour: Union[Behaviour, str, type], *args: str) -> None:
        self.behaviour = behaviour
        self.args = list(args)
        #: The server side of every launch so far (an agent may restart its child).
        self.launches: List[ServerSide] = []

    @property
    def server(self) -> ServerSide:
        """The latest launch's server side."""
        return self.launches[-1]

    async def launch(self, argv: Sequence[str], env: Mapping[str, str], cwd: Optional[str]) -> MemoryTransport:
        """A launcher (``AppServerClient.start(launcher=fake.launch)``)."""
        transport = MemoryTransport(instantiate(self.behaviour, self.args), argv, env, cwd)
        transport.server.args = list(self.args)
        self.launches.append(transport.server)
        return transport

    def executable(self, directory: str, pythonpath: Sequence[str] = ()) -> str:
        """Write ``directory/codex-fake`` that runs the behaviour as a child process."""
        if not isinstance(self.behaviour, str):
            raise ConfigError("a fake run as a process needs its behaviour as a 'module:name' string")
        path = os.path.join(directory, "codex-fake")
        paths = os.pathsep.join([*pythonpath, *sys.path])
        words = " ".join(
            _sh(w) for w in [sys.executable, "-m", "codexmini.testing", "fake", self.behaviour, *self.args, "--"]
        )
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(f'#!/bin/sh\nPYTHONPATH={_sh(paths)} exec {words} "$0" "$@"\n')
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        return path


def _sh(word: str) -> str:
    return "'" + word.replace("'", "'\\''") + "'"


def instantiate(behaviour: Union[Behaviour, str, type], args: Sequence[str] = ()) -> Behaviour:
    """The behaviour for one launch: a ``"module:name"`` spec is imported; a
    class (such as a :class:`~.codex_like.CodexLike` subclass) is instantiated
    with ``args``, so every launch starts from fresh state."""
    if isinstance(behaviour, str):
        module, _, name = behaviour.partition(":")
        behaviour = getattr(importlib.import_module(module), name)
    if isinstance(behaviour, type):
        behaviour = behaviour(*args)
    return behaviour  # type: ignore[return-value]


# ---------------------------------------------------------------------------
# Over real pipes: ``python -m codexmini.testing fake BEHAVIOUR [ARGS] -- ARGV``


class _StdioServerSide(ServerSide):
    """The server side over file descriptors: the fake's own stdin, stdout and
    stderr when it runs as a process.  stdin is read without blocking, from the
    event loop (``add_reader``): a thread blocked in ``read(0)`` would keep
    ``asyncio.run`` from returning -- the fake would outlive its behaviour
    until the client closed its stdin -- and would hold the pipe open past
    :meth:`close_input`."""

    def __init__(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: Optional[str],
        args: Sequence[str] = (),
        fds: Sequence[int] = (0, 1, 2),
    ) -> None:
        super().__init__(argv, env, cwd, args)
        self._stdin, self._stdout, self._stderr = fds
        self._reading = False

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._stdout, view) :]

    def stderr(self, text: str) -> None:
        os.write(self._stderr, text.encode("utf-8", "replace") + (b"" if text.endswith("\n") else b"\n"))

    def close_output(self) -> None:
        os.close(self._stdout)

    def stop_reading(self) -> None:
        if self._reading:
            self._reading = False
            asyncio.get_running_loop().remove_reader(self._stdin)

    def close_input(self) -> None:
        self.stop_reading()
        os.close(self._stdin)
        self._feed_eof()

    def start_reading(self) -> None:
        os.set_blocking(self._stdin, False)
        asyncio.get_running_loop().add_reader(self._stdin, self._readable)
        self._reading = True

    def _readable(self) -> None:
        try:
            data = os.read(self._stdin, PIPE_BUFFER)
        except BlockingIOError:  # pragma: no cover - a spurious wakeup
            return
        if data:
            self._feed(data)
        else:
            self.stop_reading()
            self._feed_eof()


async def _serve(
    spec: str,
    args: Sequence[str],
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: Optional[str],
    fds: Sequence[int] = (0, 1, 2),
) -> int:
    server = _StdioServerSide(argv, env, cwd, args, fds)
    server.start_reading()
    try:
        code = await instantiate(spec, args)(server)
    except FakeError as exc:
        server.stderr(f"fake app-server: {exc}")
        return 3
    finally:
        server.stop_reading()
    return 0 if code is None else code


def main(argv: Sequence[str], fds: Sequence[int] = (0, 1, 2)) -> int:
    """``BEHAVIOUR [ARGS] -- ARGV``: play BEHAVIOUR (``module:name``) over ``fds`` (stdin, stdout, stderr);
    the exit status.  A behaviour that raises anything but :class:`FakeError`
    ends the process with its traceback (status 1), as in memory."""
    words = list(argv)
    cut = words.index("--") if "--" in words else len(words)
    spec, args, codex_argv = words[0], words[1:cut], words[cut + 1 :]
    return asyncio.run(_serve(spec, args, codex_argv, os.environ, os.getcwd(), fds))


__all__ = [
    "Behaviour",
    "FakeAppServer",
    "FakeError",
    "INIT_RESULT",
    "MemoryTransport",
    "ServerSide",
    "instantiate",
]
