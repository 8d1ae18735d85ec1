"""Secrets: never to the child unless named, never in errors, the stderr tail or the log.

Four secrets are planted in this process's environment
(``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, ``AWS_SECRET_ACCESS_KEY``,
``GITHUB_TOKEN``).  Whatever builds the client -- ``AppServerClient.start``,
the ``Agent``, the CLI's ``run`` (a real ``python -m codexmini`` process) --
the child (:class:`hostile.Tattler`, a real process) reports which ones it
got: none, or exactly those named with ``pass_env`` / ``--pass-env``.  The
pre-0.1 spelling ``AppServerClient(argv)``, which handed the child the whole
environment, is refused.  And when a child that *was* given a secret prints
its whole environment to stderr and dies, the value appears nowhere codexmini
reports: not in the error, the stderr tail, the log records or the session log.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import uuid
from typing import Any, List

import figures
import hostile
import pytest

from codexmini import Agent, AgentConfig, AppServerClient, Launch, ProcessExited, SessionLog, Thread, Timeouts, read_log
from codexmini.testing import FakeAppServer

PLANTED = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN")
DEADLINE = 30.0


@pytest.fixture
def secrets(monkeypatch):
    values = {name: f"{name.lower()}-{uuid.uuid4().hex}" for name in PLANTED}
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    return values


def executable(tmp_path: Any, variant: str = "") -> str:
    args = (variant,) if variant else ()
    return FakeAppServer("hostile:Tattler", *args).executable(str(tmp_path), pythonpath=[hostile.HERE])


def assert_nowhere(secrets: dict, *texts: str) -> None:
    for text in texts:
        for name, value in secrets.items():
            assert value not in text, f"{name}'s value leaked"


def reported(text: str) -> List[str]:
    return json.loads(text)


NAMED = [pytest.param([], id="none named"), pytest.param(["OPENAI_API_KEY"], id="one named")]


@pytest.mark.parametrize("named", NAMED)
async def test_secrets_a_started_client_passes_only_the_named(named, secrets, tmp_path):
    async with await AppServerClient.start(Launch(codex_bin=executable(tmp_path), pass_env=named)) as client:
        completed = await (await Thread.start(client)).turn("who are you").run()
        text = str(completed.items[-1]["text"])
    assert reported(text) == named
    figures.count("secrets", "children checked for the 4 planted secrets")


@pytest.mark.parametrize("named", NAMED)
async def test_secrets_the_agent_passes_only_the_named(named, secrets, tmp_path):
    path = str(tmp_path / "session.jsonl")

    config = AgentConfig(launch=Launch(codex_bin=executable(tmp_path), pass_env=named), cwd=str(tmp_path), skills=False)
    with SessionLog.open(path) as log:
        async with Agent(log, config) as agent:
            assert (await agent.run("who are you"))["reason"] == "completed"
    messages = [e for e in read_log(path).events if e["type"] == "assistant/message"]
    assert reported(messages[-1]["data"]["content"][-1]["text"]) == named
    with open(path) as fh:
        assert_nowhere(secrets, fh.read())
    figures.count("secrets", "children checked for the 4 planted secrets")


@pytest.mark.parametrize("named", NAMED)
def test_secrets_the_cli_run_passes_only_the_named(named, secrets, tmp_path):
    path = str(tmp_path / "session.jsonl")
    argv = [sys.executable, "-m", "codexmini", "run", "who are you", "--json", "--session", path]
    argv += ["--cwd", str(tmp_path), "--codex-bin", executable(tmp_path)]
    for name in named:
        argv += ["--pass-env", name]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=DEADLINE, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    messages = [e for e in events if e["type"] == "assistant/message"]
    assert reported(messages[-1]["data"]["content"][-1]["text"]) == named
    with open(path) as fh:
        assert_nowhere(secrets, done.stdout, done.stderr, fh.read())
    figures.count("secrets", "children checked for the 4 planted secrets")


def test_secrets_a_client_cannot_be_built_from_argv(secrets, tmp_path):
    # AppServerClient(argv) once spawned argv with the whole parent environment.
    with pytest.raises(TypeError, match=r"AppServerClient\.start"):
        AppServerClient([executable(tmp_path), "app-server"])  # type: ignore[arg-type]


async def test_secrets_a_child_printing_its_environment_leaks_nothing(secrets, tmp_path, caplog):
    # The worst case: the child was given every secret, prints its whole
    # environment to stderr and dies mid-turn.
    caplog.set_level(logging.DEBUG, logger="codexmini")
    named = list(PLANTED)
    exe = executable(tmp_path, "crash")
    path = str(tmp_path / "session.jsonl")

    async with await AppServerClient.start(Launch(codex_bin=exe, pass_env=named)) as client:
        with pytest.raises(ProcessExited) as raised:
            await (await Thread.start(client)).turn("who are you").run()
        assert_nowhere(secrets, client.stderr_tail)
        assert "OPENAI_API_KEY=***" in client.stderr_tail
    config = AgentConfig(
        launch=Launch(codex_bin=exe, pass_env=named, timeouts=Timeouts(close=0.5)), cwd=str(tmp_path), skills=False
    )
    with SessionLog.open(path) as log:
        async with Agent(log, config) as agent:
            end = await agent.run("who are you")
    assert end["reason"] == "error" and "***" in end["error"]["message"]
    error = raised.value
    assert "***" in str(error)
    with open(path) as fh:
        log_text = fh.read()
    assert_nowhere(secrets, str(error), error.stderr_tail, log_text, caplog.text)
    assert "GITHUB_TOKEN=***" in caplog.text  # it was printed, and redacted
    figures.count("secrets", "children checked for the 4 planted secrets", 2)
    figures.record("secrets", "secret values found in errors, stderr tails, log records, session logs", 0)
