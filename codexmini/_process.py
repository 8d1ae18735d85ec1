"""The codex child process: spawn, stderr, exit, signals.  One job: the process.

:func:`spawn` starts what a :class:`~codexmini.Launch` describes: the binary
found (:func:`._binary.find_codex`, unless a launcher replaces the process),
the plan made (:func:`._launch.plan`: argv, environment, working directory),
the launcher called.  :class:`ChildProcess` is the default launcher's
transport (:class:`~._transport.Transport`); it owns nothing of the JSON-RPC
conversation.

* **Spawn** in its own process group (``start_new_session``), so signalling the
  group reaches every descendant codex starts; the environment is whatever the
  caller built (:func:`._environment.child_environment` scrubs it).  A binary
  that cannot be executed is :class:`~._errors.BinaryNotFound`; a working
  directory that does not exist is a :class:`~._errors.ConfigError` -- not the
  same mistake, so not the same error.
* **stdout** is a pipe of our own, deeper than asyncio's (:data:`PIPE_BYTES`
  where the system lets us), read straight by :class:`Stdout`: the client
  reads on through what the pipe holds without letting the event loop run,
  and waits on the loop only when it is empty.
* **stderr** is drained in chunks by a task of its own, so the child never
  blocks on a full pipe; a bounded, ANSI-stripped tail is kept for
  :class:`~._errors.ProcessExited` and every line goes to the
  ``codexmini.codex`` logger.  A huge line keeps its head only.  The values
  of the child's secret variables (a key passed with ``pass_env``) are
  replaced by ``***`` in both, whatever codex prints.
* **Exit** is detected by polling the return code: ``Process.wait()`` also
  waits for the pipes, which a descendant holding them can keep open forever.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import os
import re
import signal
import sys
from typing import Deque, List, Mapping, Optional, Sequence, Tuple

from ._binary import INSTALL_HINT, find_codex
from ._deadline import within
from ._environment import redact, secret_values
from ._errors import BinaryNotFound, ConfigError, ProcessExited
from ._launch import Launch, Plan, plan
from ._transport import Transport

stderr_log = logging.getLogger("codexmini.codex")

#: The most of codex's stdout one read takes: half of what asyncio's pipe
#: held (64 KiB), an eighth of ours (:data:`PIPE_BYTES`), on purpose.  The
#: client lets the consumers run after each read (``AppServerClient._read``),
#: so what one read brought -- some 120 frames of a delta stream, their dicts
#: and their events -- is gone before the next read is decoded.  Reading
#: 64 KiB at once kept twice as many alive, past the cyclic collector's
#: youngest generation (700 allocations), and a turn's frames were promoted
#: to the older generations a chunk at a time: on
#: the bench's 200,000-notification turn the agent spent 0.2 s in the
#: collector, six full collections of its heap; now two or three and 0.06 s, the
#: client none and 0.006 s (``python -m tools.benchlib.gcstats``).
READ_CHUNK = 1 << 15
#: How much codex's stdout pipe holds (Linux: ``F_SETPIPE_SZ``; where the
#: system refuses, its own size, 64 KiB).  Deeper than that on purpose: with
#: many turns at once the client reads on while the pipe holds more
#: (``_client.FRAMES_PER_WAKE``, up to ``ROUND_BYTES``: 512 KiB), and a
#: 64 KiB pipe ran dry in the middle of a round.  Not deeper: Linux counts a pipe's size against its user's quota
#: (``/proc/sys/fs/pipe-user-pages-soft``, 64 MiB by default), past which
#: every new pipe of that user is made small; 256 KiB is 256 clients' worth.
#: Kernel memory, not ours: what codex wrote and we have not read yet.
PIPE_BYTES = 1 << 18
#: The most one read of the pipe takes: all it holds.
PIPE_READ = PIPE_BYTES
#: F_SETPIPE_SZ (``fcntl`` names it from Python 3.10 on): Linux only.
_F_SETPIPE_SZ = 1031

#: The most of codex's stderr one read takes (a tail is kept, nothing decoded).
STDERR_CHUNK = 1 << 16
EXIT_POLL_S = 0.05
#: stderr lines longer than this keep their head only (the tail and the log).
MAX_STDERR_LINE = 2000

#: Patterns, compiled at first use (``re`` caches them), not with the package.
_ANSI = r"\x1b\[[0-9;?]*[A-Za-z]"
#: codex's own log lines: ``2026-12-03T08:03:39.314194Z ERROR codex_app_server: …``.
_CODEX_LEVEL = r"^\S+\s+(ERROR|WARN)\s"
#: What a codex level becomes in ``codexmini.codex``: its errors are our
#: warnings, its warnings our info; everything else is debug.
_LEVELS = {"ERROR": logging.WARNING, "WARN": logging.INFO}
#: codex ERROR lines that are no error for a client: info.  Without
#: bubblewrap on PATH every start says so, and codex goes on with its own.
_BENIGN = ("could not find bubblewrap on PATH",)


def deepen(fd: int, size: int) -> None:
    """Make the pipe ``fd`` hold ``size`` bytes, where the system lets us
    (Linux; up to ``/proc/sys/fs/pipe-max-size`` and the user's pipe quota);
    else it keeps the size it has."""
    if not sys.platform.startswith("linux"):  # pragma: no cover - no such call elsewhere
        return
    import fcntl

    try:
        fcntl.fcntl(fd, _F_SETPIPE_SZ, size)
    except OSError:  # over the limit or the quota, or bytes already in it: the size it has
        pass


class Chunks:
    """Bytes as a transport read them, kept as they came and taken ``n`` at a
    time: no buffer moves what it holds as it grows (asyncio's stream's
    ``bytearray`` did); ``n`` bytes of a longer chunk are a slice of it."""

    def __init__(self) -> None:
        self._chunks: Deque[bytes] = collections.deque()
        self._start = 0  # where the first chunk's unread bytes start
        self.held = 0  # bytes kept and not yet taken

    def __bool__(self) -> bool:
        return bool(self._chunks)

    def append(self, data: bytes) -> None:
        self._chunks.append(data)
        self.held += len(data)

    def take(self, n: int) -> bytes:
        """Up to ``n`` of the bytes kept (there are some)."""
        head, start = self._chunks[0], self._start
        end = start + n
        if end < len(head):
            data, self._start = head[start:end], end
        else:
            self._chunks.popleft()
            data, self._start = (head[start:] if start else head), 0
        self.held -= len(data)
        return data


def wake(future: "Optional[asyncio.Future[None]]") -> None:
    """Resolve ``future`` unless there is none or it is done already."""
    if future is not None and not future.done():
        future.set_result(None)


class Stdout:
    """codex's stdout: a pipe read straight, :data:`PIPE_READ` bytes a call,
    handed out :data:`READ_CHUNK` at a time.

    A read takes from what the pipe gave last, else from the pipe itself, and
    waits on the event loop only when the pipe is empty.  So the client can
    read on through all the pipe holds without letting the loop run (and the
    consumers it woke with it), as asyncio's pipe transport would after each
    256 KiB it reads."""

    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, False)
        self._fd = fd
        self._chunks = Chunks()  # what the pipe gave last, not yet taken
        self._ready: "Optional[asyncio.Future[None]]" = None  # set while a read waits for the pipe

    async def read(self, n: int) -> bytes:
        """Up to ``n`` bytes, as soon as there are any; ``b""`` once stdout ended (or was closed)."""
        if not self._chunks:
            data = await self._fill()
            if not data:
                return b""
            self._chunks.append(data)
        return self._chunks.take(n)

    async def _fill(self) -> bytes:
        while self._fd >= 0:
            try:
                return os.read(self._fd, PIPE_READ)  # b"" at the end
            except BlockingIOError:
                await self._readable()
            except OSError:  # pragma: no cover - a pipe's read end fails no other way
                break
        return b""

    async def _readable(self) -> None:
        loop = asyncio.get_running_loop()
        self._ready = ready = loop.create_future()
        loop.add_reader(self._fd, wake, ready)
        try:
            await ready
        finally:
            self._ready = None
            if self._fd >= 0:  # (close() unregistered a closed one)
                loop.remove_reader(self._fd)

    def close(self) -> None:
        """Close the pipe (idempotent); a read waiting returns ``b""``, as does every read after."""
        fd, ready = self._fd, self._ready
        if fd < 0:
            return
        self._fd = -1
        if ready is not None:  # a read waits: unregister the fd before its number can be reused
            asyncio.get_running_loop().remove_reader(fd)
            wake(ready)
        os.close(fd)


def _level(line: str) -> int:
    match = re.match(_CODEX_LEVEL, line)
    if match is None:
        return logging.DEBUG
    if any(text in line for text in _BENIGN):
        return logging.INFO
    return _LEVELS[match.group(1)]


class ChildProcess:
    """One spawned ``codex app-server``: its pipes, its stderr tail, its exit."""

    def __init__(
        self,
        proc: "asyncio.subprocess.Process",
        stdout: Stdout,
        stderr_tail_lines: int = 40,
        secrets: Sequence[str] = (),
    ) -> None:
        self._proc = proc
        self._stdout = stdout
        self._secrets = list(secrets)  # kept out of the tail and the log, whatever codex prints
        self._tail: Deque[str] = collections.deque(maxlen=stderr_tail_lines)
        self._stderr_task = asyncio.get_running_loop().create_task(self._drain_stderr())

    @classmethod
    async def spawn(
        cls,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: Optional[str] = None,
        stderr_tail_lines: int = 40,
    ) -> "ChildProcess":
        """Start ``argv`` in its own process group with exactly ``env``."""
        if cwd is not None and not os.path.isdir(cwd):
            raise ConfigError(f"working directory {cwd!r} does not exist (or is not a directory)")
        # stdout: a pipe of our own, deeper than asyncio's (PIPE_BYTES), read by Stdout.
        ours, theirs = os.pipe()
        try:
            deepen(theirs, PIPE_BYTES)
            try:
                proc = await asyncio.create_subprocess_exec(
                    *argv,
                    stdin=asyncio.subprocess.PIPE,
                    stdout=theirs,
                    stderr=asyncio.subprocess.PIPE,
                    env=dict(env),
                    cwd=cwd,
                    start_new_session=True,  # its own process group: close() kills the whole tree
                )
            except OSError as exc:  # missing, not executable, exec format error
                raise BinaryNotFound(f"cannot start {argv[0]!r}: {exc}; {INSTALL_HINT}") from exc
        except BaseException:  # not started (or cancelled): our end too
            os.close(ours)
            raise
        finally:
            os.close(theirs)  # the child has its copy: stdout ends when every holder has closed it
        return cls(proc, Stdout(ours), stderr_tail_lines, secret_values(env))

    # -- what the client reads ---------------------------------------------

    @property
    def pid(self) -> Optional[int]:
        return self._proc.pid

    @property
    def returncode(self) -> Optional[int]:
        return self._proc.returncode

    @property
    def stderr_tail(self) -> str:
        return "\n".join(self._tail)

    async def read(self) -> bytes:
        """The next chunk of stdout; ``b""`` once it ended."""
        return await self._stdout.read(READ_CHUNK)

    async def write(self, data: bytes) -> None:
        """Write one or more lines to stdin; raises ``OSError`` when codex stopped reading."""
        stdin = self._proc.stdin
        assert stdin is not None
        if stdin.is_closing():
            raise BrokenPipeError("stdin is closed")
        stdin.write(data)
        await stdin.drain()

    def close_input(self) -> None:
        """Close stdin: codex exits at once, even mid-turn (every supported version does)."""
        stdin = self._proc.stdin
        if stdin is not None and not stdin.is_closing():
            stdin.close()

    def ended(self) -> ProcessExited:
        """How the child ended: its exit status and the tail of its stderr."""
        return ProcessExited(self._proc.returncode, self.stderr_tail)

    async def wait_exited(self) -> None:
        """Until the child has exited (the return code is set)."""
        while self._proc.returncode is None:
            await asyncio.sleep(EXIT_POLL_S)

    def signal(self, sig: int) -> None:
        """Signal the whole process group (a no-op once it is gone)."""
        try:
            os.killpg(self._proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    async def aclose(self, timeout: float) -> None:
        """After exit: kill what is left of the group, let stderr drain and
        asyncio release the pipes (bounded by ``timeout`` each)."""
        self.signal(signal.SIGKILL)
        self._stdout.close()
        await asyncio.wait([self._stderr_task], timeout=timeout)
        self._stderr_task.cancel()
        try:
            await within(self._proc.wait(), timeout)
        except asyncio.TimeoutError:  # pragma: no cover - a descendant outside our group holds a pipe
            stderr_log.warning("codex exited but a pipe stayed open; abandoning it")

    # -- stderr ----------------------------------------------------------------

    async def _drain_stderr(self) -> None:
        stream = self._proc.stderr
        assert stream is not None
        partial = b""
        skipping = False  # in a huge line whose head was kept: drop the rest, up to its newline
        while True:
            chunk = await stream.read(STDERR_CHUNK)
            if not chunk:
                break
            lines: List[bytes] = chunk.split(b"\n")
            if skipping:
                if len(lines) == 1:
                    continue
                del lines[0]
                skipping = False
            lines[0] = partial + lines[0]
            partial = lines.pop()
            if len(partial) > MAX_STDERR_LINE:  # a huge line: keep its head, drop the rest
                lines.append(partial[:MAX_STDERR_LINE] + b"...")
                partial, skipping = b"", True
            for raw in lines:
                self._line(raw)
        self._line(partial)

    def _line(self, raw: bytes) -> None:
        text = redact(re.sub(_ANSI, "", raw.decode("utf-8", "replace")).rstrip(), self._secrets)
        if len(text) > MAX_STDERR_LINE:
            text = text[:MAX_STDERR_LINE] + "..."
        if text:
            self._tail.append(text)
            stderr_log.log(_level(text), "%s", text)


async def spawn(launch: Launch) -> Tuple[Transport, Plan]:
    """Start the child ``launch`` describes; its transport and the plan it was started from.

    The binary is looked up (from this process's working directory) unless
    the launch has a launcher of its own, which is given ``codex_bin`` (or
    ``"codex"``) as ``argv[0]``.  The parent environment is ``launch.parent_env``,
    else this process's, read now."""
    parent = os.environ if launch.parent_env is None else launch.parent_env
    if launch.launcher is not None:
        binary = launch.codex_bin or "codex"
    else:
        binary = find_codex(launch.codex_bin, env=parent).path
    planned = plan(launch, binary, parent)
    transport = await (launch.launcher or ChildProcess.spawn)(planned.argv, planned.env, planned.cwd)
    return transport, planned


__all__ = ["ChildProcess", "Chunks", "PIPE_BYTES", "PIPE_READ", "READ_CHUNK", "Stdout", "deepen", "spawn", "wake"]
