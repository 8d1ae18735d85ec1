"""The client's remaining paths, over real pipes against the fake app-server.

tests/test_client.py covers the conversation itself; this file covers the
life cycle around it (``start()`` through an executable fake codex, failed
spawns, ``async with``, ``wait_closed``), the rarer answer paths (a caller's
own method whose handler raises, a reply to a process that is gone, an
observer that raises) and the ways a pipe can break (stdin closed under a
write, stdout closed by a child that keeps running, a last line without a
newline, a response sent twice).  Every frame still goes through the
conformance plugin; the deliberately invalid ones are declared.

Waits are bounded (``run`` gives every test 60 s, every ``get`` has its own
timeout); nothing asserts how long something took.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import os
import signal
import sys

import pytest

from codexmini import __version__
from codexmini._binary import INSTALL_HINT
from codexmini._client import AppServerClient
from codexmini._errors import BinaryNotFound, ClientClosed, ProcessExited, RequestTimeout, RpcError

from fake_client import FAKE, TESTS, THREAD, alive, run, started, until  # noqa: E402

INIT_RESULT = {
    "userAgent": "codexmini/0.149.1 (fake)",
    "codexHome": "/var/tmp/fake-codex-home",
    "platformFamily": "unix",
    "platformOs": "linux",
}
APPROVAL = "item/commandExecution/requestApproval"


def fake_codex(tmp_path, behaviour: str) -> str:
    """An executable "codex" that runs a fake behaviour with codex's own argv."""
    path = tmp_path / "codex"
    path.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        "sys.dont_write_bytecode = True\n"
        f"sys.path.insert(0, {TESTS!r})\n"
        "import fake_appserver\n"
        f"fake_appserver.run_as_codex({behaviour!r})\n"
    )
    path.chmod(0o755)
    return str(path)


async def reported(sub) -> dict:
    """The JSON a fake behaviour reported in its next delta."""
    return json.loads((await sub.get(timeout=10))["params"]["delta"])


# -- start() -------------------------------------------------------------------


def test_client_start_spawns_codex_app_server_with_config_args_and_capabilities(tmp_path):
    codex = fake_codex(tmp_path, "report_argv")
    out = []

    async def main():
        client = await AppServerClient.start(
            codex_bin=codex,
            config=['model="gpt-5.1-codex"', "features.web_search=false"],
            args=["--extra-flag", "value"],
            env={"CODEXMINI_FAKE_MARK": "yes"},
            parent_env={"PATH": os.environ.get("PATH", ""), "OPENAI_API_KEY": "sk-not-passed"},
            client_name="codexmini-test",
            experimental_api=False,
            opt_out_notifications=["thread/started", "item/agentMessage/delta"],
            tap=lambda direction, frame: out.append(frame) if direction == "out" else None,
            close_timeout=2.0,
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
            sub = client.subscribe(THREAD)
            report = await reported(sub)
            # What the child really got: codex's argv and the filtered environment.
            assert report["argv"] == client.argv[1:]
            assert report["env"] == {"NO_COLOR": "1", "CODEXMINI_FAKE_MARK": "yes", "OPENAI_API_KEY": None}
            assert await client.request("thread/loaded/list", {}) == {"data": ["2"], "nextCursor": None}
        finally:
            await client.close()

    run(main())
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


def test_client_start_closes_the_child_when_initialize_fails(tmp_path):
    codex = fake_codex(tmp_path, "initialize_error")
    pid_file = tmp_path / "pid"
    made = []

    class Recorded(AppServerClient):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    async def main():
        with pytest.raises(RpcError) as info:
            await Recorded.start(codex_bin=codex, env={"FAKE_PID_FILE": str(pid_file)}, initialize_timeout=10)
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

    run(main())


def test_client_start_without_initialize_then_a_request_without_params(tmp_path):
    codex = fake_codex(tmp_path, "report_frames")

    async def main():
        client = await AppServerClient.start(codex_bin=codex, initialize=False)
        try:
            assert client.server_info == {}
            await client.initialize()
            sub = client.subscribe(THREAD)
            assert await client.request("config/mcpServer/reload", timeout=10) == {}
            # The method takes no params (its schema branch says ``params: null``),
            # and the fake received a frame without a params member at all.
            assert await reported(sub) == {"id": 2, "method": "config/mcpServer/reload"}
        finally:
            await client.close()

    run(main())


def test_client_notify_sends_params_when_given():
    async def main():
        client = await started("report_frames")
        sub = client.subscribe(THREAD)
        try:
            # The schema's initialized branch names no params; the JSON-RPC
            # envelope declares an optional ``params``, so the frame passes.
            await client.notify("initialized", {"again": True})
            assert await reported(sub) == {"method": "initialized", "params": {"again": True}}
        finally:
            await client.close()

    run(main())


# -- spawn ---------------------------------------------------------------------


def test_client_spawn_twice_raises():
    async def main():
        client = await started("echo")
        try:
            with pytest.raises(RuntimeError, match="already spawned"):
                await client.spawn()
            assert await client.request("thread/loaded/list", {}) == {"data": ["2"], "nextCursor": None}
        finally:
            await client.close()

    run(main())


@pytest.mark.parametrize("case", ["missing", "not_executable"])
def test_client_spawn_of_a_path_that_cannot_run_raises_binary_not_found(tmp_path, case):
    path = tmp_path / "codex"
    if case == "not_executable":
        path.write_text("#!/bin/sh\nexit 0\n")
        path.chmod(0o644)

    async def main():
        client = AppServerClient([str(path), "app-server"])
        with pytest.raises(BinaryNotFound) as info:
            await client.spawn()
        assert repr(str(path)) in str(info.value)
        assert INSTALL_HINT in str(info.value)
        assert isinstance(info.value.__cause__, OSError)
        assert client.pid is None and client.returncode is None
        await client.close()
        with pytest.raises(ClientClosed):
            await client.request("initialize", {})

    run(main())


def test_client_start_of_a_missing_codex_bin_raises_binary_not_found(tmp_path):
    async def main():
        with pytest.raises(BinaryNotFound, match="is not an executable file"):
            await AppServerClient.start(codex_bin=str(tmp_path / "nope"))

    run(main())


def test_client_wait_closed_returns_after_a_failed_spawn_is_closed(tmp_path):
    async def main():
        client = AppServerClient([str(tmp_path / "missing"), "app-server"])
        with pytest.raises(BinaryNotFound):
            await client.spawn()
        await client.close()
        await asyncio.wait_for(client.wait_closed(), 2)

    run(main())


# -- life cycle ----------------------------------------------------------------


def test_client_async_with_closes_and_wait_closed_returns():
    async def main():
        client = await started("echo")
        async with client as same:
            assert same is client
            assert await client.request("thread/loaded/list", {}) == {"data": ["2"], "nextCursor": None}
        assert client.closed
        await asyncio.wait_for(client.wait_closed(), 10)
        assert client.returncode is not None and not alive(client.pid)

    run(main())


def test_client_wait_closed_before_spawn_returns_at_once():
    async def main():
        await asyncio.wait_for(AppServerClient(["unused"]).wait_closed(), 1)

    run(main())


def test_client_signal_group_without_a_process_is_a_no_op():
    # Unreachable through the public API (close() returns before signalling
    # when nothing was spawned); the guard must still not raise.
    AppServerClient(["unused"])._signal_group(signal.SIGKILL)


def test_client_last_line_without_newline_is_delivered_then_exit_is_seen():
    async def main():
        client = await started("last_line_unterminated")
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

    run(main())


def test_client_kills_a_child_that_closes_stdout_but_keeps_running():
    async def main():
        client = await started("close_stdout_on_request", close_timeout=0.3, request_timeout=30)
        pid = client.pid
        try:
            with pytest.raises(ProcessExited) as info:
                await client.request("thread/loaded/list", {})
            assert info.value.returncode == -signal.SIGKILL
            assert await until(lambda: not alive(pid))
        finally:
            await client.close()

    run(main())


@pytest.mark.frame_problems("response to unknown request id 2: the client sent no request with this id")
def test_client_a_response_sent_twice_settles_its_request_once():
    async def main():
        client = await started("answer_twice")
        try:
            assert await client.request("thread/loaded/list", {}) == {"data": ["once"], "nextCursor": None}
            # The duplicate arrived while the request was still pending: ignored,
            # and the conversation goes on.
            assert await client.request("thread/loaded/list", {}) == {"data": ["3"], "nextCursor": None}
            assert client.stats["frames_in"] == 4  # initialize result, both copies, the second answer
        finally:
            await client.close()

    run(main())


# -- writes to a broken stdin -----------------------------------------------------


def test_client_broken_stdin_fails_the_request_with_process_exited(caplog):
    caplog.set_level(logging.DEBUG, logger="codexmini.client")

    async def main():
        client = await started("close_stdin_and_linger")
        sub = client.subscribe(THREAD)
        try:
            assert (await sub.get(timeout=10))["params"]["delta"] == "stdin closed"
            pending = asyncio.ensure_future(client.request("thread/loaded/list", {}, timeout=30))
            assert await until(lambda: "write failed" in caplog.text)
            ((_, future),) = client._pending.values()
            # The write error (an OSError underneath) waits for the end of the
            # conversation and becomes the terminal error.
            os.kill(client.pid, signal.SIGTERM)
            with pytest.raises(ProcessExited) as info:
                await asyncio.wait_for(pending, 10)
            assert info.value.returncode == -signal.SIGTERM
            # Work around the bug shown by
            # test_client_request_failed_by_its_write_leaves_no_unretrieved_future:
            # its logging at garbage-collection time can break a later test.
            assert isinstance(future.exception(), ProcessExited)
        finally:
            await client.close()

    run(main())


def test_client_request_failed_by_its_write_leaves_no_unretrieved_future():
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
        client = await started("close_stdin_and_linger")
        sub = client.subscribe(THREAD)
        try:
            await sub.get(timeout=10)
            pending = asyncio.ensure_future(client.request("thread/loaded/list", {}, timeout=30))
            assert await until(lambda: writes_failed)
            os.kill(client.pid, signal.SIGTERM)
            try:
                await asyncio.wait_for(pending, 10)
            except ProcessExited:
                pass
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


def test_client_request_timeout_bounds_a_write_to_a_broken_stdin():
    async def main():
        client = await started("close_stdin_and_linger", close_timeout=0.5)
        sub = client.subscribe(THREAD)
        try:
            await sub.get(timeout=10)
            with pytest.raises((RequestTimeout, ProcessExited)):  # anything but a hang
                await asyncio.wait_for(client.request("thread/loaded/list", {}, timeout=0.5), 5)
        finally:
            await client.close()

    run(main())


# -- server requests: the rarer answer paths ------------------------------------


@pytest.mark.frame_problems("fake/unknownRequest")
def test_client_handler_for_an_unknown_method_that_raises_gets_internal_error(caplog):
    async def handler(method, params):
        raise RuntimeError("the caller's own handler broke")

    async def main():
        client = AppServerClient([sys.executable, FAKE, "unknown_request"])
        client.on_request("fake/unknownRequest", handler)
        bys = []
        client.on_answer(lambda method, params, frame, by: bys.append((method, by)))
        await client.spawn()
        await client.initialize()
        sub = client.subscribe(THREAD)
        try:
            assert await reported(sub) == {
                "id": 0,
                "error": {"code": -32603, "message": "handler for fake/unknownRequest failed"},
            }
            assert bys == [("fake/unknownRequest", "error")]
            assert "handler for fake/unknownRequest failed; answering fail-closed" in caplog.text
        finally:
            await client.close()

    run(main())


def test_client_on_answer_unregister():
    async def main():
        client = AppServerClient([sys.executable, FAKE, "approval"])
        kept, removed = [], []
        client.on_answer(lambda *a: kept.append(a[3]))
        remove = client.on_answer(lambda *a: removed.append(a[3]))
        remove()
        remove()  # idempotent
        await client.spawn()
        await client.initialize()
        sub = client.subscribe(THREAD)
        try:
            assert await reported(sub) == {"id": 0, "result": {"decision": "decline"}}
            assert kept == ["default"]
            assert removed == []
        finally:
            await client.close()

    run(main())


def test_client_an_observer_that_raises_is_logged_and_not_fatal(caplog):
    def broken(method, params, frame, by):
        raise ValueError("observer broke")

    async def main():
        client = AppServerClient([sys.executable, FAKE, "approval"])
        later = []
        client.on_answer(broken)
        client.on_answer(lambda m, p, f, by: later.append(f))
        await client.spawn()
        await client.initialize()
        sub = client.subscribe(THREAD)
        try:
            assert await reported(sub) == {"id": 0, "result": {"decision": "decline"}}
            assert later == [{"id": 0, "result": {"decision": "decline"}}]
            assert "answer observer failed" in caplog.text
            assert "observer broke" in caplog.text
            assert await client.request("thread/loaded/list", {}) == {"data": ["2"], "nextCursor": None}
        finally:
            await client.close()

    run(main())


def test_client_reply_to_a_process_that_is_gone_is_dropped_quietly():
    async def main():
        client = AppServerClient([sys.executable, FAKE, "approval"])
        answered = []
        handled = []

        async def handler(method, params):
            os.kill(client.pid, signal.SIGKILL)
            await asyncio.wait_for(client.wait_closed(), 10)
            handled.append(method)
            return {"decision": "accept"}

        client.on_request(APPROVAL, handler)
        client.on_answer(lambda *a: answered.append(a))
        await client.spawn()
        await client.initialize()
        try:
            await asyncio.wait_for(client.wait_closed(), 10)
            assert await until(lambda: handled and not client._inflight)
            assert handled == [APPROVAL]
            assert answered == []  # the reply could not be sent: nobody is told it was
            assert client.returncode == -signal.SIGKILL
        finally:
            await client.close()

    run(main())


def test_client_close_cancels_a_handler_still_in_flight():
    cancelled = []

    async def handler(method, params):
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(method)
            raise
        return {"decision": "accept"}  # pragma: no cover - never reached

    async def main():
        client = AppServerClient([sys.executable, FAKE, "approval"], close_timeout=2.0)
        client.on_request(APPROVAL, handler)
        answered = []
        client.on_answer(lambda *a: answered.append(a))
        await client.spawn()
        await client.initialize()
        assert await until(lambda: bool(client._inflight))
        await client.close()
        assert cancelled == [APPROVAL]
        assert answered == []
        assert client._inflight == {}

    run(main())
