"""The codex child process (``codexmini._process``): spawn, stderr, exit, the group.

The fake app-server of tests/support/behaviours.py runs as a real child
process (an executable "codex" written by ``FakeAppServer.executable``),
driven through the client: a binary that cannot run and a working
directory that does not exist, each its own error; the whole process group
gone after a close or after the child is SIGKILLed (a grandchild holding
stdout open), the exit seen by polling rather than by EOF; the stderr drain
that never blocks the child, its bounded tail and a huge line's head; stdout,
a real pipe made deeper where the system lets us (and kept as it is where it
refuses), read straight: every byte in order, a read that waits for the pipe
and one that is closed under it.
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
import os
import signal
import threading
from typing import Tuple

import pytest
from support import behaviours as b
from support.fake_client import alive, codex_bin, gone, reported, spawned

from codexmini import Launch
from codexmini._binary import INSTALL_HINT
from codexmini._client import AppServerClient
from codexmini._errors import BinaryNotFound, ConfigError, ProcessExited
from codexmini._process import PIPE_BYTES, PIPE_READ, READ_CHUNK, ChildProcess, Chunks, Stdout, deepen

THREAD = b.THREAD


# -- spawn: a binary that cannot run, a missing working directory ----------------------


async def test_client_start_of_a_missing_codex_bin_raises_binary_not_found(tmp_path):
    with pytest.raises(BinaryNotFound, match="is not an executable file"):
        await AppServerClient.start(Launch(codex_bin=str(tmp_path / "nope")))


@pytest.mark.parametrize("case", ["missing", "not_executable", "exec_format_error"])
async def test_client_start_of_a_binary_that_cannot_run_raises_binary_not_found(tmp_path, case):
    path = tmp_path / "codex"
    if case == "not_executable":
        path.write_text("#!/bin/sh\nexit 0\n")
        path.chmod(0o644)
    elif case == "exec_format_error":
        path.write_bytes(b"\x7fELF not really")
        path.chmod(0o755)

    # The default launcher, without find_codex's own check in front of it.
    with pytest.raises(BinaryNotFound) as info:
        await AppServerClient.start(Launch(codex_bin=str(path), launcher=ChildProcess.spawn))
    assert repr(str(path)) in str(info.value)
    assert INSTALL_HINT in str(info.value)
    assert isinstance(info.value.__cause__, OSError)


async def test_client_start_in_a_missing_working_directory_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        await AppServerClient.start(Launch(codex_bin=codex_bin(tmp_path, "echo"), cwd=str(tmp_path / "nowhere")))


# -- stdout: a deep pipe, read straight -------------------------------------------------

F_GETPIPE_SZ = 1032  # (fcntl names it from Python 3.10 on)


def pipe_size(fd: int) -> int:
    return fcntl.fcntl(fd, F_GETPIPE_SZ)


def test_deepen_makes_a_pipe_hold_pipe_bytes():
    ours, theirs = os.pipe()
    try:
        assert pipe_size(theirs) < PIPE_BYTES
        deepen(theirs, PIPE_BYTES)
        assert pipe_size(ours) == pipe_size(theirs) == PIPE_BYTES
    finally:
        os.close(ours)
        os.close(theirs)


def test_deepen_keeps_the_size_a_pipe_has_when_the_system_refuses():
    # Shrinking a pipe below what it holds is refused (EBUSY), as root too.
    ours, theirs = os.pipe()
    try:
        before = pipe_size(theirs)
        os.write(theirs, b"x" * 8192)
        with pytest.raises(OSError):
            fcntl.fcntl(theirs, 1031, 4096)
        deepen(theirs, 4096)  # the same call: no error, the size it had
        assert pipe_size(theirs) == before
    finally:
        os.close(ours)
        os.close(theirs)


async def test_a_spawned_codex_writes_to_a_deep_pipe(tmp_path):
    client = await spawned(tmp_path, "echo")
    try:
        assert pipe_size(client._transport._stdout._fd) == PIPE_BYTES
    finally:
        await client.close()
    assert client._transport._stdout._fd == -1  # closed with the client


def test_chunks_hand_out_what_came_in_order_n_bytes_at_most_and_count_what_they_hold():
    chunks, given = Chunks(), [b"abcdefgh", b"ij", b"klmnopqrstu"]
    for data in given:
        chunks.append(data)
    assert chunks and chunks.held == 21
    taken = []
    while chunks:
        taken.append(chunks.take(3))
    assert taken == [b"abc", b"def", b"gh", b"ij", b"klm", b"nop", b"qrs", b"tu"]
    assert chunks.held == 0
    whole = b"x" * 5
    chunks.append(whole)
    assert chunks.take(5) is whole  # a chunk taken whole is not copied


def write_all(fd: int, data: bytes) -> threading.Thread:
    """A thread writing ``data`` to the pipe ``fd`` (blocking) and closing it."""

    def run() -> None:
        with open(fd, "wb", buffering=0) as pipe:
            pipe.write(data)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


async def test_stdout_reads_every_byte_in_order_a_read_chunk_at_most():
    payload = bytes(range(256)) * ((3 * PIPE_READ) // 256 + 77)  # across several reads of the pipe
    ours, theirs = os.pipe()
    writer = write_all(theirs, payload)
    stdout = Stdout(ours)
    got, sizes = [], set()
    while True:
        chunk = await asyncio.wait_for(stdout.read(READ_CHUNK), 10)  # a hang guard, not a time limit
        if not chunk:
            break
        got.append(chunk)
        sizes.add(len(chunk))
    writer.join()
    stdout.close()
    assert b"".join(got) == payload
    assert max(sizes) == READ_CHUNK
    assert await stdout.read(READ_CHUNK) == b""  # ended: and closed


async def a_waiting_read() -> Tuple[Stdout, int, "asyncio.Future[bytes]"]:
    """A Stdout over a new, empty pipe, a read of it waiting; the pipe's write end."""
    ours, theirs = os.pipe()
    stdout = Stdout(ours)
    reading = asyncio.ensure_future(stdout.read(READ_CHUNK))
    for _ in range(3):
        await asyncio.sleep(0)
    assert stdout._ready is not None and not reading.done()  # the pipe is empty: it waits
    return stdout, theirs, reading


async def test_stdout_read_waits_for_the_pipe_and_wakes_when_it_is_written():
    stdout, theirs, reading = await a_waiting_read()
    asyncio.get_running_loop().call_soon(os.write, theirs, b"hello\n")
    assert await asyncio.wait_for(reading, 10) == b"hello\n"
    os.close(theirs)
    assert await asyncio.wait_for(stdout.read(READ_CHUNK), 10) == b""
    stdout.close()


async def test_stdout_closed_while_a_read_waits_ends_that_read_and_unregisters_the_pipe():
    loop = asyncio.get_running_loop()
    stdout, theirs, reading = await a_waiting_read()
    ours = stdout._fd
    stdout.close()
    stdout.close()  # idempotent
    assert await asyncio.wait_for(reading, 10) == b""
    # The number is free again, and no longer registered: a new pipe may take it.
    again, other = os.pipe()
    try:
        assert again == ours
        seen = loop.create_future()
        loop.add_reader(again, seen.set_result, None)
        os.write(other, b"x")
        await asyncio.wait_for(seen, 10)
        loop.remove_reader(again)
    finally:
        os.close(again)
        os.close(other)
        os.close(theirs)


async def test_stdout_closed_after_the_pipe_woke_a_read_before_it_ran_ends_that_read():
    # The pipe became readable and woke the waiting read (its future done),
    # and close() comes before that read runs again: it ends with b"".
    stdout, theirs, reading = await a_waiting_read()
    os.write(theirs, b"x")
    for _ in range(100):  # a bound, not a time limit: a few turns of the loop
        if stdout._ready is not None and stdout._ready.done():
            break
        await asyncio.sleep(0)
    assert stdout._ready is not None and stdout._ready.done() and not reading.done()
    stdout.close()
    assert await asyncio.wait_for(reading, 10) == b""
    os.close(theirs)


# -- the process group: no orphan ------------------------------------------------------


async def test_client_no_orphan_after_close(tmp_path):
    client = await spawned(tmp_path, "grandchild")
    grandchild = await reported(client.subscribe(THREAD))
    assert alive(grandchild)
    await client.close()
    assert await gone(client.pid)
    assert await gone(grandchild)


async def test_client_no_orphan_after_the_child_is_sigkilled(tmp_path):
    client = await spawned(tmp_path, "grandchild")
    grandchild = await reported(client.subscribe(THREAD))
    os.kill(client.pid, signal.SIGKILL)
    # The grandchild still holds the stdout pipe: the exit, not EOF, ends the conversation.
    with pytest.raises(ProcessExited) as info:
        await client.request("thread/loaded/list", {})
    assert info.value.returncode == -signal.SIGKILL
    assert await gone(grandchild)
    await client.close()


# -- stderr: drained, a bounded tail ---------------------------------------------------


def stderr_tail_of(lines: int):
    async def launch(argv, env, cwd):
        return await ChildProcess.spawn(argv, env, cwd, stderr_tail_lines=lines)

    return launch


async def test_client_stderr_drain_survives_long_lines_and_keeps_a_tail(tmp_path):
    codex = codex_bin(tmp_path, "stderr_flood")
    client = await AppServerClient.start(Launch(codex_bin=codex, launcher=stderr_tail_of(5)))
    try:
        assert await client.request("thread/loaded/list", {})
        await client.close()
        tail = client.stderr_tail.splitlines()
        assert tail[-1] == "last words without newline"
        assert tail[-2] == "line 1999"
        assert len(tail) == 5
    finally:
        await client.close()


async def test_client_stderr_tail_keeps_only_the_head_of_a_huge_line(tmp_path):
    client = await spawned(tmp_path, "stderr_long_line")
    await client.close()
    assert client.stderr_tail.splitlines() == ["z" * 2000 + "...", "the line after"]


async def test_codex_stderr_lines_are_logged_at_the_level_codex_gave_them(tmp_path, caplog):
    # codex's errors are warnings (the bubblewrap notice every start prints is
    # info), its warnings info, the rest debug: --verbose shows them all.
    caplog.set_level(logging.DEBUG, logger="codexmini.codex")
    client = await spawned(tmp_path, "stderr_levels")
    await client.close()
    logged = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "codexmini.codex"]
    levels = [logging.WARNING, logging.INFO, logging.INFO, logging.DEBUG, logging.DEBUG]
    assert logged == list(zip(levels, b.CODEX_STDERR))
