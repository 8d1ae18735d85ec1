"""The codex child process (``codexmini._process``): spawn, stderr, exit, the group.

The fake app-server of tests/support/behaviours.py runs as a real child
process (an executable "codex" written by ``FakeAppServer.executable``),
driven through the client: a binary that cannot run and a working
directory that does not exist, each its own error; the whole process group
gone after a close or after the child is SIGKILLed (a grandchild holding
stdout open), the exit seen by polling rather than by EOF; the stderr drain
that never blocks the child, its bounded tail and a huge line's head.
"""

from __future__ import annotations

import logging
import os
import signal

import pytest
from support import behaviours as b
from support.fake_client import alive, codex_bin, gone, reported, spawned

from codexmini import Launch
from codexmini._binary import INSTALL_HINT
from codexmini._client import AppServerClient
from codexmini._errors import BinaryNotFound, ConfigError, ProcessExited
from codexmini._process import ChildProcess

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
