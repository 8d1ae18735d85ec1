"""The fake app-server itself (codexmini.testing.fake_appserver).

Its memory transport must simulate a child the way the client sees one: a
behaviour returning is an exit with its status, raising is status 1 with the
traceback on "stderr", a :class:`FakeError` is status 3; only SIGTERM and
SIGKILL end it.  Its stdio side -- what runs in the child process of
``FakeAppServer.executable`` -- is driven here in this process, over
``os.pipe()`` pairs and plain bytes, so its lines are measured like the rest
(tests/test_client.py and tests/test_process.py run it as a real child).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal

import pytest
from support import behaviours as b
from support.fake_client import reported, started, until

from codexmini import Launch, Timeouts
from codexmini._client import AppServerClient
from codexmini._errors import ConfigError, ProcessExited
from codexmini.testing import FakeAppServer
from codexmini.testing.fake_appserver import INIT_RESULT, PIPE_BUFFER, ServerSide, _serve, instantiate, main

INITIALIZE = {"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "t", "version": "0"}}}
INITIALIZED = {"method": "initialized"}


def lines(*frames) -> bytes:
    return b"".join(json.dumps(f).encode() + b"\n" for f in frames)


def frames_of(data: bytes) -> list:
    return [json.loads(line) for line in data.splitlines() if line.strip()]


# -- in memory: a child's life ----------------------------------------------------------


async def test_fake_behaviour_that_raises_exits_1_with_its_traceback_on_stderr():
    client = await started(b.raises)
    with pytest.raises(ProcessExited) as info:
        await client.request("thread/loaded/list", {})
    assert info.value.returncode == 1
    assert "RuntimeError: the fake's own bug" in info.value.stderr_tail
    await client.close()


async def test_fake_error_exits_3_and_says_what_it_expected():
    client = await started(b.expect_thread_start)
    with pytest.raises(ProcessExited) as info:
        await client.request("thread/loaded/list", {})
    assert info.value.returncode == 3
    assert "fake app-server: expected 'thread/start' from the client, got {" in info.value.stderr_tail
    await client.close()


async def test_fake_recv_timeout_is_none_and_expect_then_fails():
    client = await AppServerClient.start(Launch(launcher=FakeAppServer(b.silent_client).launch), initialize=False)
    await asyncio.wait_for(client.wait_closed(), 10)
    assert client.returncode == 3
    assert client.stderr_tail == "fake app-server: expected 'initialize' from the client, got None"
    await client.close()


async def test_fake_memory_transport_ignores_other_signals_and_signals_after_its_exit():
    fake = FakeAppServer(b.never_answer)
    transport = await fake.launch(["codex", "app-server"], {}, None)
    assert (transport.pid, transport.returncode) == (None, None)
    transport.signal(signal.SIGUSR1)
    transport.signal(signal.SIGINT)
    assert transport.returncode is None
    transport.signal(signal.SIGTERM)
    transport.signal(signal.SIGKILL)  # already gone: the first signal's code stays
    await asyncio.wait_for(transport.wait_exited(), 10)
    assert transport.returncode == -signal.SIGTERM
    assert await transport.read() == b""
    with pytest.raises(BrokenPipeError):
        await transport.write(b"{}\n")
    await transport.aclose(1.0)


async def test_fake_memory_transport_aclose_cancels_a_running_behaviour():
    transport = await FakeAppServer(b.never_answer).launch(["codex"], {}, None)
    await asyncio.sleep(0)
    await transport.aclose(1.0)
    # Cancelled without a signal: no exit status, like a process nobody reaped.
    assert transport.returncode is None


async def test_fake_stop_reading_drops_what_fits_in_the_pipe():
    fake = FakeAppServer(b.stop_reading)
    client = await AppServerClient.start(Launch(launcher=fake.launch, timeouts=Timeouts(close=0.1)))
    try:
        assert await until(lambda: not fake.server.reading)
        await client.notify("initialized", {"unread": True})  # small: the "pipe" takes it
        assert [f.get("method") for f in fake.server.received] == ["initialize", "initialized"]
    finally:
        await client.close()


async def test_fake_launch_imports_a_spec_and_instantiates_a_class_per_launch():
    by_name = FakeAppServer("support.behaviours:echo")
    client = await AppServerClient.start(Launch(launcher=by_name.launch))
    assert await client.request("thread/loaded/list", {}) == {"data": ["2"], "nextCursor": None}
    await client.close()

    b.Numbered.made.clear()
    fake = FakeAppServer(b.Numbered, "x", "y")
    reports = []
    for _ in range(2):
        client = await AppServerClient.start(Launch(launcher=fake.launch))
        reports.append(await reported(client.subscribe(b.THREAD)))
        await client.close()
    assert reports == [{"args": ["x", "y"], "instance": 1}, {"args": ["x", "y"], "instance": 2}]
    assert len(fake.launches) == 2 and fake.server is fake.launches[1]
    assert fake.server.args == ["x", "y"] and fake.server.argv == ["codex", "app-server"]


def test_fake_instantiate_returns_a_callable_as_it_is():
    assert instantiate(b.echo) is b.echo
    assert instantiate("support.behaviours:echo") is b.echo
    assert isinstance(instantiate(b.Numbered, ["a"]), b.Numbered)


def test_fake_executable_needs_a_spec():
    with pytest.raises(ConfigError, match="'module:name' string"):
        FakeAppServer(b.echo).executable("/nonexistent")


def test_fake_executable_script_runs_the_spec_with_its_args_and_argv(tmp_path):
    path = FakeAppServer("support.behaviours:echo", "it's").executable(str(tmp_path), pythonpath=["/p"])
    with open(path) as fh:
        text = fh.read()
    assert os.access(path, os.X_OK)
    assert text.startswith("#!/bin/sh\nPYTHONPATH='/p" + os.pathsep)
    assert "'-m' 'codexmini.testing' 'fake' 'support.behaviours:echo' 'it'\\''s' '--' \"$0\" \"$@\"" in text


# -- the stdio side, in this process over pipes ------------------------------------------


def pipes():
    """(stdin read end, stdin write end), (stdout …), (stderr …)."""
    return os.pipe(), os.pipe(), os.pipe()


def read_all(fd: int) -> bytes:
    chunks = []
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            os.close(fd)
            return b"".join(chunks)
        chunks.append(chunk)


def test_fake_main_plays_a_behaviour_over_file_descriptors():
    (in_r, in_w), (out_r, out_w), (err_r, err_w) = pipes()
    os.write(in_w, lines(INITIALIZE, INITIALIZED, {"id": 2, "method": "thread/loaded/list", "params": {}}))
    os.close(in_w)  # then EOF: the behaviour returns
    try:
        code = main(["support.behaviours:echo", "--", "/bin/codex", "app-server"], fds=(in_r, out_w, err_w))
    finally:
        os.close(in_r), os.close(out_w), os.close(err_w)
    assert code == 0
    assert frames_of(read_all(out_r)) == [
        {"id": 1, "result": INIT_RESULT},
        {"id": 2, "result": {"data": ["2"], "nextCursor": None}},
    ]
    assert read_all(err_r) == b""


def test_fake_stdio_side_tells_the_end_of_input_once():
    (in_r, in_w), (out_r, out_w), (err_r, err_w) = pipes()
    os.write(in_w, lines(INITIALIZE, INITIALIZED))
    os.close(in_w)
    try:
        assert main(["support.behaviours:close_input_after_eof", "--"], fds=(in_r, out_w, err_w)) == 0
    finally:
        os.close(out_w), os.close(err_w)  # in_r: closed by the behaviour
    assert frames_of(read_all(out_r)) == [{"id": 1, "result": INIT_RESULT}]
    assert read_all(err_r) == b""


def test_fake_stdio_side_every_operation():
    (in_r, in_w), (out_r, out_w), (err_r, err_w) = pipes()
    os.write(in_w, lines(INITIALIZE, INITIALIZED))

    async def go():
        return await _serve(
            "support.behaviours:stdio_tour", ["arg"], ["/bin/codex", "app-server"], {}, "/here", (in_r, out_w, err_w)
        )

    try:
        assert asyncio.run(go()) == 5
        # The fake closed its stdin: nobody reads the pipe any more.
        with pytest.raises(BrokenPipeError):
            os.write(in_w, b"{}\n")
    finally:
        os.close(in_w), os.close(err_w)  # in_r and out_w: closed by the behaviour
    sent = frames_of(read_all(out_r))
    assert sent[0] == {"id": 1, "result": INIT_RESULT}
    assert json.loads(sent[1]["params"]["delta"]) == {
        "args": ["arg"],
        "argv": ["/bin/codex", "app-server"],
        "cwd": "/here",
    }
    assert sent[2]["params"]["delta"] == "after close_input"
    assert read_all(err_r) == b"to stderr\nalready terminated\n"


def test_fake_stdio_side_fake_error_exits_3():
    (in_r, in_w), (out_r, out_w), (err_r, err_w) = pipes()
    os.write(in_w, lines(INITIALIZE, INITIALIZED, {"id": 2, "method": "thread/loaded/list", "params": {}}))
    os.close(in_w)
    try:
        code = main(["support.behaviours:expect_thread_start"], fds=(in_r, out_w, err_w))  # no "--": no argv
    finally:
        os.close(in_r), os.close(out_w), os.close(err_w)
    assert code == 3
    assert read_all(out_r).count(b"\n") == 1  # the initialize result only
    assert read_all(err_r).startswith(b"fake app-server: expected 'thread/start' from the client, got {")


def test_fake_stdio_side_raising_behaviour_propagates():
    # As a process, Python prints the traceback and exits 1 (as in memory).
    (in_r, in_w), (out_r, out_w), (err_r, err_w) = pipes()
    os.write(in_w, lines(INITIALIZE, INITIALIZED, {"id": 2, "method": "thread/loaded/list", "params": {}}))
    os.close(in_w)
    try:
        with pytest.raises(RuntimeError, match="the fake's own bug"):
            main(["support.behaviours:raises", "--"], fds=(in_r, out_w, err_w))
    finally:
        for fd in (in_r, out_w, err_w, out_r, err_r):
            os.close(fd)


# -- one write ------------------------------------------------------------------------


class Writes(ServerSide):
    """A server side whose writes are kept, one entry per write."""

    def __init__(self) -> None:
        super().__init__(["codex", "app-server"], {}, None)
        self.writes: list = []

    def _write(self, data: bytes) -> None:
        self.writes.append(data)


def test_fake_one_write_sends_the_frames_inside_together_at_its_end():
    server = Writes()
    server.notify("a", {})
    with server.one_write():
        server.notify("b", {})
        server.respond({"id": 7}, {})
        server.send_raw(b'{"raw": 1}\n')  # bytes as they are: held too, in order
        assert len(server.writes) == 1  # held until the end
    with server.one_write():
        pass  # nothing sent: no write
    server.notify("c", {})
    assert [w.count(b"\n") for w in server.writes] == [1, 3, 1]
    assert frames_of(server.writes[1]) == [
        {"method": "b", "params": {}, "emittedAtMs": frames_of(server.writes[0])[0]["emittedAtMs"]},
        {"id": 7, "result": {}},
        {"raw": 1},
    ]


def test_fake_one_write_does_not_nest_and_closes_when_the_block_raises():
    server = Writes()
    with pytest.raises(ValueError):
        with server.one_write():
            server.notify("sent-anyway", {})
            raise ValueError("the script failed")
    assert frames_of(b"".join(server.writes))[0]["method"] == "sent-anyway"
    with server.one_write():
        with pytest.raises(RuntimeError, match="already open"):
            with server.one_write():
                pass
        server.notify("after", {})
    assert frames_of(server.writes[-1])[0]["method"] == "after"


async def test_fake_a_write_blocked_on_a_full_pipe_fails_when_the_server_exits():
    go = asyncio.Event()

    async def stop_then_exit(server):
        server.stop_reading()
        await go.wait()  # then return: the fake exits

    transport = await FakeAppServer(stop_then_exit).launch(["codex"], {}, None)
    await asyncio.sleep(0)  # the behaviour runs: it stops reading
    blocked = asyncio.ensure_future(transport.write(b"x" * (PIPE_BUFFER + 1)))
    while transport._buffered <= PIPE_BUFFER:
        await asyncio.sleep(0)
    assert not blocked.done()  # more than the pipe holds, nobody reading
    go.set()
    with pytest.raises(BrokenPipeError, match="the fake app-server's stdin is closed"):
        await blocked
    await transport.aclose(1.0)
