"""The live harness (codexmini.testing.live): a scratch root, the scripted model, the Launch.

No codex is needed here: the binary is this interpreter (any executable file
serves :func:`find_codex`), and the children are plain Python processes
started through the harness's own launcher.  The live suite runs the real
codex through the same harness.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys

import pytest

from codexmini import BinaryNotFound, ConfigError, Launch, ModelEndpoint
from codexmini.testing.live import SCRATCH_ENV, CodexServer, LiveCodex, scratch_dir

SCRIPT = {"rules": [], "default": {"output": [{"type": "message", "deltas": ["hi"]}]}}


def test_live_scratch_dir_is_never_under_tmp_and_honours_the_variable(tmp_path, monkeypatch):
    monkeypatch.delenv(SCRATCH_ENV, raising=False)
    made = scratch_dir("codexmini-test-")
    try:
        assert os.path.isdir(made) and os.path.basename(made).startswith("codexmini-test-")
        assert not made.startswith("/tmp/")
    finally:
        os.rmdir(made)
    monkeypatch.setenv(SCRATCH_ENV, str(tmp_path))
    inside = scratch_dir()
    assert os.path.dirname(inside) == str(tmp_path)
    monkeypatch.setenv(SCRATCH_ENV, str(tmp_path / "missing"))  # not a directory: the next base
    assert os.path.dirname(scratch_dir("x-")) != str(tmp_path / "missing")


def test_live_codex_lays_out_a_root_and_points_a_launch_at_the_model():
    with LiveCodex(SCRIPT, codex_bin=sys.executable, prefix="codexmini-live-test-", config=["a=1"]) as live:
        assert os.path.basename(live.root).startswith("codexmini-live-test-")
        assert os.path.isdir(live.ws) and os.path.isdir(live.home)
        assert (os.path.dirname(live.ws), os.path.dirname(live.home)) == (live.root, live.root)
        launch = live.launch
        assert isinstance(launch, Launch)
        assert (launch.codex_bin, launch.config, launch.codex_home, launch.cwd) == (
            os.path.abspath(sys.executable),
            ("a=1",),
            live.home,
            live.ws,
        )
        assert dict(launch.env) == {"HOME": live.root}
        assert launch.endpoint == ModelEndpoint(live.model.url, "sk-test") == live.endpoint
        assert live.model.url.startswith("http://127.0.0.1:")
        assert live.requests == [] and live.pids == [] and live.alive() == []
        root = live.root
    assert not os.path.exists(root)
    live.close()  # idempotent


async def test_live_codex_remembers_every_child_and_tells_which_are_alive():
    with LiveCodex(SCRIPT, codex_bin=sys.executable) as live:
        child = await live.launch.launcher([sys.executable, "-c", "import time; time.sleep(60)"], {}, live.ws)
        pid = child.pid
        assert live.pids == [pid] and live.alive() == [pid]
        os.kill(pid, signal.SIGKILL)
        await asyncio.wait_for(child.wait_exited(), 30)
        await child.aclose(5)
        assert live.alive() == [] and live.pids == [pid]


def test_live_codex_without_a_binary_raises_before_making_anything(tmp_path, monkeypatch):
    monkeypatch.setenv(SCRATCH_ENV, str(tmp_path))
    with pytest.raises(BinaryNotFound):
        LiveCodex(SCRIPT, codex_bin=str(tmp_path / "no-codex"))
    assert list(tmp_path.iterdir()) == []


def test_live_codex_server_needs_a_listen_argument(tmp_path):
    codex = tmp_path / "codex"
    codex.write_text("#!/bin/sh\nexit 0\n")
    codex.chmod(0o755)
    with pytest.raises(ConfigError, match="need --listen URL"):
        CodexServer.start(Launch(codex_bin=str(codex)), str(tmp_path / "server.stderr"))


def test_live_codex_server_waits_for_a_unix_socket_that_accepts_not_for_its_file(tmp_path):
    # The file exists from bind(); a connection is refused until listen().
    # CodexServer waited for the file once, and a client connected in that
    # gap was refused (CI saw it on 0.149.1's unix listener).
    from codexmini.testing.live import _accepts

    path = str(tmp_path / "s.sock")
    assert not _accepts(path)  # no file yet
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(path)
        assert os.path.exists(path) and not _accepts(path)  # bound, not listening: refused
        server.listen(1)
        assert _accepts(path)
    finally:
        server.close()
