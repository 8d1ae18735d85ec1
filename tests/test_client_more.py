"""The client over real pipes: what is about processes, pipes and signals.

tests/test_client.py covers the conversation in memory; here the fake
app-server of tests/support/behaviours.py runs as a *child process* (an executable
"codex" written by ``FakeAppServer.executable``), for what only a process
shows: ``start()`` reaching the child (argv, environment, working directory),
a refused ``initialize`` closing the child, exit codes and the stderr tail, a
stderr flood, signals (a child that ignores stdin's end and SIGTERM, one that
is SIGKILLed, its grandchildren), stdout closed by a child that keeps running,
stdin closed under a write, a last line without a newline.  A few of them run
in memory too (``via`` = ``memory``): the in-memory fake claims to simulate
these faithfully, and the same test proves it.

Every frame still goes through the conformance plugin.  Waits are bounded
(every coroutine test has the root conftest's deadline, every ``get`` its own
timeout); nothing asserts how long something took.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal

import pytest
from support import behaviours as b
from support.fake_client import alive, codex_bin, gone, reported, run, spawned, started, until

from codexmini import Launch, Timeouts, __version__
from codexmini._binary import INSTALL_HINT
from codexmini._client import AppServerClient
from codexmini._errors import BinaryNotFound, ClientClosed, ConfigError, ProcessExited, RpcError, TransportError
from codexmini._process import ChildProcess
from codexmini.testing.fake_appserver import INIT_RESULT

THREAD = b.THREAD


@pytest.fixture(params=["memory", "pipes"])
def via(request, tmp_path):
    """Start a client on a behaviour in memory or as a child process."""

    async def start(behaviour: str, **options):
        if request.param == "memory":
            return await started(getattr(b, behaviour), **options)
        return await spawned(tmp_path, behaviour, **options)

    start.pipes = request.param == "pipes"
    return start


# -- start(): what reaches the child ------------------------------------------------------


async def test_client_start_spawns_codex_app_server_with_config_args_env_and_capabilities(tmp_path):
    codex = codex_bin(tmp_path, "report_argv")
    workdir = tmp_path / "work"
    workdir.mkdir()
    out = []

    client = await AppServerClient.start(
        Launch(
            codex_bin=codex,
            config=['model="gpt-5.1-codex"', "features.web_search=false"],
            args=["--extra-flag", "value"],
            env={"CODEXMINI_FAKE_MARK": "yes"},
            parent_env={"PATH": os.environ.get("PATH", ""), "OPENAI_API_KEY": "sk-not-passed"},
            cwd=str(workdir),
            timeouts=Timeouts(close=2.0),
        ),
        client_name="codexmini-test",
        experimental_api=False,
        opt_out_notifications=["thread/started", "item/agentMessage/delta"],
        tap=lambda direction, frame: out.append(frame) if direction == "out" else None,
    )
    try:
        assert client.argv == [
            codex,
            "app-server",
            "-c",
            'model="gpt-5.1-codex"',
            "-c",
            "features.web_search=false",
            "--extra-flag",
            "value",
        ]
        assert client.server_info == INIT_RESULT
        assert isinstance(client.pid, int) and alive(client.pid)
        report = await reported(client.subscribe(THREAD))
        # What the child really got: codex's argv, the filtered environment, the cwd.
        assert report["argv"] == client.argv[1:]
        assert report["env"] == {"NO_COLOR": "1", "CODEXMINI_FAKE_MARK": "yes", "OPENAI_API_KEY": None}
        assert report["cwd"] == str(workdir)
        assert await client.request("thread/loaded/list", {}) == {"data": ["2"], "nextCursor": None}
    finally:
        await client.close()
    assert out[0] == {
        "id": 1,
        "method": "initialize",
        "params": {
            "clientInfo": {"name": "codexmini-test", "version": __version__},
            "capabilities": {
                "experimentalApi": False,
                "optOutNotificationMethods": ["thread/started", "item/agentMessage/delta"],
            },
        },
    }
    assert out[1] == {"method": "initialized"}


async def test_client_start_closes_the_child_when_initialize_fails(tmp_path):
    codex = codex_bin(tmp_path, "initialize_error")
    pid_file = tmp_path / "pid"
    made = []

    class Recorded(AppServerClient):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    with pytest.raises(RpcError) as info:
        await Recorded.start(
            Launch(codex_bin=codex, env={"FAKE_PID_FILE": str(pid_file)}, timeouts=Timeouts(initialize=10))
        )
    assert (info.value.code, info.value.message, info.value.method) == (
        -32600,
        "fake: initialize refused",
        "initialize",
    )
    (client,) = made
    assert client.closed
    # The fake exits when its stdin closes, as codex does: close() reaped it.
    assert client.returncode == 0
    assert not alive(int(pid_file.read_text()))
    with pytest.raises(ClientClosed):
        await client.request("thread/loaded/list", {})


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


# -- exit: codes, stderr, signals -----------------------------------------------------------


async def test_client_child_exit_fails_pending_request_with_exit_code_and_stderr(via):
    client = await via("exit_mid_request", timeouts=Timeouts(request=60))
    sub = client.subscribe(THREAD)
    with pytest.raises(ProcessExited) as info:
        await client.request("thread/loaded/list", {})
    assert info.value.returncode == 7
    assert "fake: giving up on purpose" in info.value.stderr_tail
    assert "giving up on purpose" in str(info.value)
    if via.pipes:
        assert "\x1b[" not in info.value.stderr_tail  # ANSI colours stripped
    with pytest.raises(ProcessExited):
        await sub.get(timeout=10)
    with pytest.raises(ProcessExited):
        await client.request("thread/loaded/list", {})
    with pytest.raises(ProcessExited):
        await client.notify("initialized")
    assert client.closed and client.returncode == 7 and not client.healthy
    late = client.subscribe(THREAD)
    assert [f async for f in late] == []
    await asyncio.wait_for(client.wait_closed(), 10)
    await client.close()


async def test_client_close_kills_a_child_that_ignores_stdin_close_and_sigterm(tmp_path):
    client = await spawned(tmp_path, "ignore_stdin_close", timeouts=Timeouts(close=0.2))
    pid = client.pid
    await client.close()
    assert await gone(pid)
    assert client.returncode == -signal.SIGKILL


async def test_client_close_twice_reaps_the_child(tmp_path):
    client = await spawned(tmp_path, "echo")
    pid = client.pid
    await client.close()
    await client.close()
    assert await gone(pid)
    assert client.returncode == 0
    with pytest.raises(ClientClosed):
        await client.request("thread/loaded/list", {})


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


# -- pipes: the last line, stdout closed, stdin closed --------------------------------------


async def test_client_last_line_without_newline_is_delivered_then_exit_is_seen(via):
    client = await via("last_line_unterminated")
    try:
        result = await client.request("thread/loaded/list", {}, timeout=10)
        assert result == {"data": ["unterminated"], "nextCursor": None}
        await asyncio.wait_for(client.wait_closed(), 10)
        assert client.returncode == 0
        with pytest.raises(ProcessExited) as info:
            await client.request("thread/loaded/list", {})
        assert info.value.returncode == 0
    finally:
        await client.close()


async def test_client_kills_a_child_that_closes_stdout_but_keeps_running(via):
    client = await via("close_stdout_on_request", timeouts=Timeouts(close=0.3, request=30))
    pid = client.pid
    try:
        with pytest.raises(ProcessExited) as info:
            await client.request("thread/loaded/list", {})
        assert info.value.returncode == -signal.SIGKILL
        if via.pipes:
            assert await until(lambda: not alive(pid))
    finally:
        await client.close()


async def test_client_broken_stdin_fails_the_request_with_process_exited(tmp_path, caplog):
    caplog.set_level(logging.DEBUG, logger="codexmini.client")

    client = await spawned(tmp_path, "close_stdin_and_linger")
    sub = client.subscribe(THREAD)
    try:
        assert (await sub.get(timeout=10))["params"]["delta"] == "stdin closed"
        pending = asyncio.ensure_future(client.request("thread/loaded/list", {}, timeout=30))
        assert await until(lambda: "write failed" in caplog.text)
        assert not client.healthy  # a child that stopped reading is of no further use
        # The write error (an OSError underneath) waits for the end of the
        # conversation and becomes the terminal error.
        os.kill(client.pid, signal.SIGTERM)
        with pytest.raises(ProcessExited) as info:
            await asyncio.wait_for(pending, 10)
        assert info.value.returncode == -signal.SIGTERM
    finally:
        await client.close()


async def test_client_broken_stdin_without_an_exit_fails_the_request_after_the_close_timeout(via):
    client = await via("close_stdin_and_linger", timeouts=Timeouts(close=0.3))
    sub = client.subscribe(THREAD)
    try:
        assert (await sub.get(timeout=10))["params"]["delta"] == "stdin closed"
        with pytest.raises(TransportError, match="codex stopped reading its stdin"):
            await client.request("thread/loaded/list", {}, timeout=30)
        assert not client.healthy and not client.closed
    finally:
        await client.close()
    assert client.returncode == -signal.SIGTERM  # close() terminated it


def test_client_request_failed_by_its_write_leaves_no_unretrieved_future(tmp_path):
    # Log records hold the terminal error, whose traceback holds request()'s
    # frame and so the future: keep them away from pytest's capture, which
    # would keep the future alive until the test ends.
    writes_failed = []

    class Flag(logging.Handler):
        def emit(self, record):
            if record.getMessage().startswith("write failed"):
                writes_failed.append(True)

    logger = logging.getLogger("codexmini.client")
    flag, level, propagate = Flag(), logger.level, logger.propagate
    logger.addHandler(flag)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    reports = []

    async def main():
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: reports.append(context["message"]))
        client = await spawned(tmp_path, "close_stdin_and_linger")
        sub = client.subscribe(THREAD)
        try:
            await sub.get(timeout=10)
            pending = asyncio.ensure_future(client.request("thread/loaded/list", {}, timeout=30))
            assert await until(lambda: writes_failed)
            os.kill(client.pid, signal.SIGTERM)
            with pytest.raises(ProcessExited):
                await asyncio.wait_for(pending, 10)
        finally:
            await client.close()
        # The terminal error is shared (client, subscription, task) and its
        # traceback holds request()'s frame: drop them all, then collect.
        del pending, sub, client
        gc.collect()
        assert reports == []

    try:
        run(main())
    finally:
        logger.removeHandler(flag)
        logger.setLevel(level)
        logger.propagate = propagate


async def test_client_answer_to_a_child_that_stopped_reading_is_dropped_quietly(via, caplog):
    caplog.set_level(logging.INFO, logger="codexmini.client")

    client = await via("close_stdin_then_approval", timeouts=Timeouts(close=0.3))
    answered = []
    client.on_answer(lambda *a: answered.append(a))
    try:
        assert await until(lambda: "not sent" in caplog.text)
        assert f"answer to {b.APPROVAL} (id 0) not sent: codex stopped reading its stdin" in caplog.text
        assert answered == []  # the reply could not be sent: nobody is told it was
        assert not client.closed
    finally:
        await client.close()
