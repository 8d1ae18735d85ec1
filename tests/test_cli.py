"""The CLI as a new user and as a script meet it (docs/cli.md is the contract).

Subprocess tests run ``python -m codexmini`` against the real binary and the
scripted model (live); in-process tests call :func:`codexmini._cli.main` with
captured streams for the paths a subprocess cannot reach cheaply.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from support.run_support import HAVE_CODEX

from codexmini import CODEX_VERSION, OLDEST_CODEX_VERSION, __version__
from codexmini import _cli as cli
from codexmini._errors import ConfigError
from codexmini._permission import ApprovalRequest
from codexmini._render import Console
from codexmini._session import SessionLog, read_log
from codexmini.testing.live import scratch_dir
from codexmini.testing.scripted_model import ScriptedModel

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


live = pytest.mark.skipif(not HAVE_CODEX, reason="the pinned codex is not installed (make setup)")

USAGE = {"input_tokens": 10, "cached_tokens": 2, "output_tokens": 5, "reasoning_tokens": 1}


def message(*deltas):
    return {"output": [{"type": "message", "id": "msg_1", "deltas": list(deltas)}], "usage": USAGE}


def command_then(cmd, final="Done.", **args):
    return {
        "rules": [{"when": {"last_item": "function_call_output"}, "respond": message(final)}],
        "default": {
            "output": [
                {
                    "type": "function_call",
                    "call_id": "call_1",
                    "name": "exec_command",
                    "arguments": {"cmd": cmd, "yield_time_ms": 30000, **args},
                }
            ],
            "usage": USAGE,
        },
    }


@pytest.fixture
def scratch(tmp_path_factory):
    import shutil

    root = scratch_dir("codexmini-cli-")  # not under /tmp: codex refuses to create helper binaries there
    os.makedirs(os.path.join(root, "ws"))
    os.makedirs(os.path.join(root, "home"))
    yield root
    shutil.rmtree(root, ignore_errors=True)


def child_env(root, **extra):
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR",)}
    env.update({"PYTHONPATH": REPO, "CODEX_HOME": os.path.join(root, "home"), "HOME": root, "MODEL_KEY": "sk-test"})
    env.update(extra)
    return env


def cli_args(root, model, *more):
    return [
        sys.executable, "-m", "codexmini", "run", *more,
        "--cwd", os.path.join(root, "ws"),
        "--session", os.path.join(root, "session.jsonl"),
        "--model", "gpt-fake",
        "--provider-url", model.url,
        "--api-key-env", "MODEL_KEY",
        "--json",
    ]  # fmt: skip


def run_json(root, script, prompt, *more, timeout=90):
    with ScriptedModel(script) as model:
        done = subprocess.run(
            cli_args(root, model, prompt, *more),
            env=child_env(root),
            cwd=root,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    with open(os.path.join(root, "session.jsonl"), encoding="utf-8") as fh:
        on_disk = fh.read()
    assert done.stdout == on_disk, "stdout must be exactly the log"
    assert read_log(os.path.join(root, "session.jsonl")).events == lines
    return done, lines


def of_type(lines, type_):
    return [e["data"] for e in lines if e["type"] == type_]


# -- live, as a subprocess --------------------------------------------------------


@pytest.mark.live
@live
def test_cli_smoke_passes_against_the_real_binary():
    done = subprocess.run(
        [sys.executable, "-m", "codexmini", "smoke"],
        env={**os.environ, "PYTHONPATH": REPO},
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # By default over each transport in turn: a child over stdio, a server over ws and unix.
    for over in ("stdio", "ws", "unix"):
        assert f"smoke passed over {over}:" in done.stdout
    assert "FAIL" not in done.stdout
    assert done.stdout.count("frames validated") == 3


@pytest.mark.live
@live
def test_cli_run_json_plain_answer(scratch):
    done, lines = run_json(scratch, {"rules": [], "default": message("Hel", "lo!")}, "say hi")
    assert done.returncode == 0, done.stderr
    # The header, the session's knobs from the command line (so a resume keeps them), the turn.
    assert [e["type"] for e in lines][:5] == [
        "session/header",
        "model/choice",
        "model/endpoint",
        "turn/start",
        "step/start",
    ]
    assert of_type(lines, "assistant/message")[0]["content"] == [{"type": "text", "text": "Hello!"}]
    assert of_type(lines, "turn/end") == [{"reason": "completed", "usage": of_type(lines, "turn/end")[0]["usage"]}]
    assert "Hello!" in done.stderr and "turn completed" in done.stderr  # the human view went to stderr


@pytest.mark.live
@live
def test_cli_run_json_command(scratch):
    done, lines = run_json(scratch, command_then("echo from-the-cli"), "run it")
    assert done.returncode == 0, done.stderr
    (call,) = of_type(lines, "tool/call")
    assert call["name"] == "bash"
    (result,) = of_type(lines, "tool/result")
    assert result["content"] == [{"type": "text", "text": "from-the-cli\n"}] and not result["isError"]
    assert "$ echo from-the-cli" in done.stderr and "exit 0" in done.stderr


@pytest.mark.live
@live
def test_cli_run_json_declined_approval_when_not_interactive(scratch):
    script = command_then(
        "touch approved.txt", "Declined, fine.", sandbox_permissions="require_escalated", justification="needs it"
    )
    done, lines = run_json(scratch, script, "needs approval", "--approval-policy", "ask")
    assert done.returncode == 0, done.stderr
    assert of_type(lines, "approval/policy") == [{"policy": "ask"}]
    (decision,) = of_type(lines, "approval/decision")
    assert (decision["method"], decision["decision"], decision["by"]) == (
        "item/commandExecution/requestApproval",
        "decline",
        "default",
    )
    (result,) = of_type(lines, "tool/result")
    assert result["isError"] and result["status"] == "declined"
    assert not os.path.exists(os.path.join(scratch, "ws", "approved.txt"))


@pytest.mark.live
@live
def test_cli_run_json_failing_model_exits_1(scratch):
    script = {
        "rules": [],
        "default": {"http_status": 400, "body": {"error": {"message": "bad things", "type": "invalid_request_error"}}},
    }
    done, lines = run_json(scratch, script, "fail please")
    assert done.returncode == 1, done.stderr
    (end,) = of_type(lines, "turn/end")
    assert end["reason"] == "error" and end["error"]["code"] == "CODEX_ERROR"
    assert "bad things" in end["error"]["message"]


@pytest.mark.live
@live
def test_cli_run_sigint_during_a_long_command_exits_130(scratch):
    with ScriptedModel(command_then("sleep 30")) as model:
        proc = subprocess.Popen(
            cli_args(scratch, model, "sleep"),
            env=child_env(scratch),
            cwd=scratch,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        seen = []

        def read_stderr():
            for line in proc.stderr:
                seen.append(line)

        reader = threading.Thread(target=read_stderr, daemon=True)
        reader.start()
        deadline = time.monotonic() + 60
        while not any("$ sleep 30" in line for line in seen):
            assert time.monotonic() < deadline, "the command never started: " + "".join(seen)
            assert proc.poll() is None, "".join(seen)
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
        reader.join(10)
    assert proc.returncode == 130, "".join(seen)
    lines = [json.loads(line) for line in out.splitlines()]
    (end,) = of_type(lines, "turn/end")
    assert end["reason"] == "aborted"
    (result,) = of_type(lines, "tool/result")
    assert result["status"] == "abandoned" and result["isError"]
    assert read_log(os.path.join(scratch, "session.jsonl")).events == lines


def test_cli_usage_error_exits_2():
    done = subprocess.run(
        [sys.executable, "-m", "codexmini", "run"],
        env={**os.environ, "PYTHONPATH": REPO},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "PROMPT" in done.stderr


def test_cli_missing_binary_exits_3_and_says_how_to_install(tmp_path):
    env = {**os.environ, "PYTHONPATH": REPO, "CODEXMINI_CODEX_BIN": str(tmp_path / "no-codex")}
    done = subprocess.run(
        [sys.executable, "-m", "codexmini", "run", "hi", "--session", str(tmp_path / "s.jsonl")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 3
    assert "make setup" in done.stderr and "npm install" in done.stderr
    assert not os.path.exists(tmp_path / "s.jsonl") or read_log(str(tmp_path / "s.jsonl")).events == []


# -- in process ---------------------------------------------------------------------


def call(argv, stdin="", env=None):
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(
        argv, stdin=io.StringIO(stdin), stdout=out, stderr=err, env=env if env is not None else dict(os.environ)
    )
    return code, out.getvalue(), err.getvalue()


def test_cli_version_flag_and_command():
    code, out, _ = call(["--version"])
    assert code == 0  # argparse printed to the real stdout
    code, out, _ = call(["version"])
    assert code == (0 if HAVE_CODEX else 3)
    assert f"codexmini {__version__}" in out and f"pinned codex {CODEX_VERSION} (supported: " in out
    if code == 0:
        assert out.rstrip().endswith("(supported)")  # the pinned binary is in the range


def test_cli_version_says_when_the_binary_is_outside_the_range(tmp_path):
    old = tmp_path / "codex"
    old.write_text('#!/bin/sh\necho "codex-cli 0.1.0"\n')
    old.chmod(0o755)
    code, out, _ = call(["version"], env={"PATH": str(tmp_path), "CODEXMINI_CODEX_BIN": str(old)})
    assert code == 0
    assert f"version 0.1.0 (outside the supported {OLDEST_CODEX_VERSION}" in out


def test_cli_version_without_a_binary(tmp_path):
    code, out, _ = call(["version"], env={"PATH": str(tmp_path), "CODEXMINI_CODEX_BIN": str(tmp_path / "none")})
    assert code == 3 and "not found" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["run", "x", "--cwd", "/nonexistent/dir"], "not a directory"),
        (["run", "x", "--api-key-env", "K"], "--api-key-env needs --provider-url"),
        (["run", "x", "--provider-url", "http://127.0.0.1:1/v1", "--api-key-env", "UNSET_VAR_FOR_TEST"], "is not set"),
        (["run", "x", "--provider-url", "ftp://nope"], "http(s) URL"),
        (["run", "x", "-c", "novalue"], "config items must be KEY=VALUE, not 'novalue'"),
        (["run", "x", "--reasoning-effort", ""], "--reasoning-effort: a reasoning effort must be a non-empty string"),
        (["run", "x", "--prompt-budget", "0"], "AgentConfig.prompt_budget must be a whole number >= 1, not 0"),
        (["run", "x", "--tool-output-budget", "-1"], "AgentConfig.tool_output_budget must be a whole number >= 1"),
    ],
)
def test_cli_usage_errors_in_process(argv, message):
    code, _, err = call(argv, env={k: v for k, v in os.environ.items() if k != "UNSET_VAR_FOR_TEST"})
    assert code == 2
    assert message in err


def test_cli_resumed_session_whose_endpoint_key_variable_is_unset_is_a_usage_error(tmp_path):
    # The session chose an endpoint whose key is in $CLI_RESUME_KEY; resumed without it,
    # nothing starts and nothing is logged.
    session = tmp_path / "s.jsonl"
    with SessionLog.open(str(session)) as log:
        knob = {"baseUrl": "http://127.0.0.1:1/v1", "wireApi": "responses", "apiKeyEnv": "CLI_RESUME_KEY"}
        log.append("model/endpoint", knob)
    before = session.read_bytes()
    env = {k: v for k, v in os.environ.items() if k != "CLI_RESUME_KEY"}
    code, _, err = call(["run", "x", "--session", str(session), "--cwd", str(tmp_path)], env=env)
    assert code == 2 and "$CLI_RESUME_KEY, which is not set" in err
    assert session.read_bytes() == before


def test_cli_corrupt_session_log_is_a_usage_error(tmp_path):
    bad = tmp_path / "s.jsonl"
    bad.write_text('{"not": "an event"}\n{"also": "bad"}\n')
    code, _, err = call(["run", "x", "--session", str(bad)])
    assert code == 2 and "s.jsonl" in err


def test_cli_default_session_path_uses_xdg_state(tmp_path):
    import datetime

    when = datetime.datetime(2026, 11, 30, 12, 0, 0, 123)
    path = cli.default_session_path({"XDG_STATE_HOME": str(tmp_path)}, when)
    assert path == os.path.join(str(tmp_path), "codexmini", "sessions", "20261130T120000-000123.jsonl")
    assert cli.default_session_path({}, when).endswith(
        os.path.join(".local", "state", "codexmini", "sessions", "20261130T120000-000123.jsonl")
    )


def run_prompter(answers, request):
    console = Console(io.StringIO(), color=False)
    prompter = cli.Prompter(io.StringIO(answers), console)
    import asyncio

    reply = asyncio.run(asyncio.wait_for(prompter(request), 10))
    return reply, console.stream.getvalue()


@pytest.mark.parametrize(
    "key, decision",
    [
        ("y", "accept"),
        ("n", "decline"),
        ("a", "acceptForSession"),
        ("c", "cancel"),
        ("what\nyes", "accept"),
        ("", "decline"),
    ],
)
def test_cli_prompter_answers(key, decision):
    request = ApprovalRequest("item/commandExecution/requestApproval", {}, "command", "ls -la")
    reply, shown = run_prompter(key + "\n" if key else "", request)
    assert reply.decision == decision
    assert "codex wants to run: ls -la" in shown


def test_cli_prompter_user_input():
    questions = (
        {"id": "color", "question": "Which color?", "options": [{"label": "Red"}, {"label": "Blue"}]},
        {"id": "size", "question": "How big?"},
    )
    request = ApprovalRequest("item/tool/requestUserInput", {}, "user_input", "", questions=questions)
    reply, shown = run_prompter("Red\n\n", request)
    assert reply.decision == "accept" and reply.answers == {"color": ["Red"]}
    assert "Which color? [Red, Blue]" in shown
    reply, _ = run_prompter("\n\n", request)
    assert reply.decision == "decline"


# -- codex dying at startup, a missing image, --verbose -----------------------------------


def dying_codex(root):
    """A codex that exits at once, saying why on stderr (like a bad config.toml)."""
    path = os.path.join(root, "dying-codex")
    with open(path, "w") as f:
        f.write('#!/bin/sh\necho "error: bad config in config.toml" >&2\nexit 1\n')
    os.chmod(path, 0o755)
    return path


def offline_run(root, *more):
    return ["run", "hi", "--cwd", os.path.join(root, "ws"), "--session", os.path.join(root, "s.jsonl"), *more]


def test_cli_run_exits_3_with_one_line_when_codex_dies_at_startup(scratch):
    code, out, err = call(offline_run(scratch, "--codex-bin", dying_codex(scratch)))
    assert (code, out) == (3, "")
    said = "codexmini: codex failed to start: codex app-server exited with code 1: error: bad config in config.toml\n"
    assert err.endswith(said) and "Traceback" not in err


def test_cli_smoke_exits_3_when_codex_dies_at_startup(scratch):
    code, out, err = call(["smoke", "--codex-bin", dying_codex(scratch)])
    assert code == 3 and "Traceback" not in err
    assert err.endswith(
        "codexmini: codex failed to start: codex app-server exited with code 1: error: bad config in config.toml\n"
    )


@pytest.mark.parametrize("over, where", [("ws", "ws://127.0.0.1:0"), ("unix", "unix:///")])
def test_cli_smoke_exits_3_when_its_server_dies_at_startup(scratch, over, where):
    code, out, err = call(["smoke", "--over", over, "--codex-bin", dying_codex(scratch)])
    assert code == 3 and "Traceback" not in err
    assert f"codexmini: codex app-server --listen {where}" in err
    assert err.endswith("did not listen (exit 1): error: bad config in config.toml\n")


def test_cli_verbose_shows_codex_stderr_and_the_traceback(scratch):
    code, _, err = call(offline_run(scratch, "--codex-bin", dying_codex(scratch), "--verbose"))
    assert code == 3
    assert "codexmini.codex: error: bad config in config.toml\n" in err  # a line codex gave no level: debug
    assert "Traceback" in err and "StartFailed" in err


@pytest.mark.parametrize("image", ["missing.png", "ws"])
def test_cli_run_refuses_an_image_that_is_not_a_readable_file(scratch, image):
    path = os.path.join(scratch, image)
    code, out, err = call(offline_run(scratch, "--image", path, "--codex-bin", dying_codex(scratch)))
    assert (code, out, err) == (2, "", f"codexmini: --image {path}: not a readable file\n")
    assert not os.path.exists(os.path.join(scratch, "s.jsonl"))  # refused before anything is logged or sent


def test_cli_a_typed_error_is_one_line_and_exit_1():
    err = io.StringIO()
    assert cli._failed(ConfigError("no good"), err, verbose=False) == 1
    assert err.getvalue() == "codexmini: no good\n"


# -- in process, live (these are what cover cli.run and smoke) ------------------------


class TtyIn(io.StringIO):
    def isatty(self):
        return True


@pytest.fixture
def hermetic(scratch, monkeypatch):
    monkeypatch.setenv("CODEX_HOME", os.path.join(scratch, "home"))
    monkeypatch.setenv("HOME", scratch)
    return scratch


def run_args(root, model, *more):
    return [
        "run",
        *more,
        "--cwd",
        os.path.join(root, "ws"),
        "--session",
        os.path.join(root, "s.jsonl"),
        "--model",
        "gpt-fake",
        "--provider-url",
        model.url,
    ]


@pytest.mark.live
@live
def test_cli_run_in_process_human_output(hermetic):
    with ScriptedModel({"rules": [], "default": message("Hi ", "there")}) as model:
        code, out, err = call(run_args(hermetic, model, "hello"))
    assert code == 0, err
    # stdout: the answer alone, so `codexmini run … > answer.txt` holds just it;
    # the transcript, the log's path and the summary go to stderr.
    assert out == "Hi there\n"
    assert "Hi there" in err and "turn completed · 1 step(s)" in err and "session log:" in err


@pytest.mark.live
@live
def test_cli_run_in_process_prompt_from_stdin_and_auto_approve(hermetic):
    script = command_then("touch approved.txt", sandbox_permissions="require_escalated", justification="needs it")
    with ScriptedModel(script) as model:
        code, out, err = call(
            run_args(hermetic, model, "-", "--auto-approve", "--approval-policy", "ask", "--json"), stdin="from stdin"
        )
    assert code == 0, err
    events = [json.loads(line) for line in out.splitlines()]
    assert of_type(events, "user/message")[0]["content"] == [{"type": "text", "text": "from stdin"}]
    (decision,) = of_type(events, "approval/decision")
    assert (decision["decision"], decision["by"]) == ("accept", "handler")
    assert os.path.exists(os.path.join(hermetic, "ws", "approved.txt"))


@pytest.mark.live
@live
def test_cli_run_in_process_prompts_on_a_tty(hermetic):
    script = command_then("touch asked.txt", sandbox_permissions="require_escalated", justification="needs it")
    with ScriptedModel(script) as model:
        out, err = io.StringIO(), io.StringIO()
        code = cli.main(
            run_args(hermetic, model, "go", "--approval-policy", "on-request"),
            stdin=TtyIn("n\n"),
            stdout=out,
            stderr=err,
            env={},
        )
    assert code == 0, err.getvalue()
    assert "codex wants to run: /bin/bash -lc 'touch asked.txt'" in err.getvalue()
    assert not os.path.exists(os.path.join(hermetic, "ws", "asked.txt"))
    events = read_log(os.path.join(hermetic, "s.jsonl")).events
    assert [(d["decision"], d["by"]) for d in of_type(events, "approval/decision")] == [("decline", "handler")]
    # codex's name on the command line, the log's own word in the log
    assert [e["data"] for e in events if e["type"] == "approval/policy"] == [{"policy": "ask"}]


@pytest.mark.live
@live
def test_cli_run_in_process_ctrl_c_twice(hermetic):
    with ScriptedModel(command_then("sleep 30")) as model:
        out = io.StringIO()

        def interrupt():
            deadline = time.monotonic() + 60
            while "$ sleep 30" not in out.getvalue() and time.monotonic() < deadline:
                time.sleep(0.05)
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
            os.kill(os.getpid(), signal.SIGINT)

        killer = threading.Thread(target=interrupt, daemon=True)
        killer.start()
        code = cli.main(
            run_args(hermetic, model, "sleep"), stdin=io.StringIO(), stdout=io.StringIO(), stderr=out, env={}
        )
        killer.join(10)
    assert code == 130
    assert "interrupting" in out.getvalue()


@pytest.mark.live
@live
def test_cli_smoke_in_process(tmp_path):
    code, out, _ = call(["smoke", "--keep", "--over", "stdio"])
    assert code == 0, out
    kept = out.strip().splitlines()[-1]
    assert kept.startswith("kept ")
    import shutil

    shutil.rmtree(kept[len("kept ") :], ignore_errors=True)


@pytest.mark.live
@live
def test_cli_smoke_reports_what_failed(monkeypatch):
    from codexmini import _smoke as smoke

    monkeypatch.setattr(smoke, "NOTE", "not what the model wrote\n")
    code, out, _ = call(["smoke", "--over", "unix"])
    assert code == 1
    assert "FAIL  apply_patch wrote note.txt" in out
    assert "smoke FAILED: 2 expectation(s) did not hold" in out


@pytest.mark.live
@live
def test_cli_smoke_says_when_no_slug_was_found(monkeypatch):
    from codexmini import _errors
    from codexmini import _smoke as smoke

    async def no_probe(self, *args):
        raise _errors.ConfigError("model/list is broken")

    monkeypatch.setattr(smoke.Smoke, "probe", no_probe)
    code, out, _ = call(["smoke", "--over", "ws"])
    assert code == 1
    assert (
        "FAIL  codex offers exec_command, apply_patch for model (none) (probed 0 slug(s) from model/list; ConfigError: model/list is broken)"
        in out
    )
    # It still ran, with a slug of no version's choosing: the script's
    # apply_patch was refused with the reason.
    assert "model gpt-fake" in out
    assert "FAIL  the model called only tools the request offered; script error in rule 'write the note'" in out


def test_cli_smoke_without_a_binary(tmp_path):
    code, _, err = call(["smoke", "--codex-bin", str(tmp_path / "none")])
    assert code == 3 and "make setup" in err


def test_cli_module_entry_point(monkeypatch, capsys):
    import runpy

    monkeypatch.setattr(sys, "argv", ["codexmini", "--version"])
    with pytest.raises(SystemExit) as info:
        runpy.run_module("codexmini", run_name="__main__", alter_sys=True)
    assert info.value.code == 0
    assert f"codexmini {__version__} (codex {CODEX_VERSION})" in capsys.readouterr().out


def test_cli_a_cancelled_run_exits_130(monkeypatch):
    import asyncio

    async def cancelled(*args):
        raise asyncio.CancelledError()

    monkeypatch.setattr(cli, "run", cancelled)
    code, _, err = call(["run", "x"])
    assert code == 130 and "interrupted" in err


class FakeAgent:
    def __init__(self):
        self.cancelled = 0
        self.causes = []

    def cancel(self, cause="cancel"):
        self.cancelled += 1
        self.causes.append(cause)


class FakeTask:
    def __init__(self):
        self.cancelled = 0

    def cancel(self):
        self.cancelled += 1


def test_cli_ctrl_c_once_interrupts_twice_cancels_never_during_cleanup():
    console = Console(io.StringIO(), color=False)
    agent, task = FakeAgent(), FakeTask()
    ctrl_c = cli.CtrlC(agent, console, task)
    ctrl_c()
    assert (agent.cancelled, task.cancelled, agent.causes) == (1, 0, ["interrupt"])
    assert "interrupting" in console.stream.getvalue()
    ctrl_c()
    assert (agent.cancelled, task.cancelled) == (1, 1)
    ctrl_c.cleaning = True
    ctrl_c()
    assert (agent.cancelled, task.cancelled) == (1, 1)


@pytest.mark.live
@live
def test_cli_run_in_process_with_api_key_env_and_a_failing_model(hermetic):
    script = {
        "rules": [],
        "default": {"http_status": 400, "body": {"error": {"message": "nope", "type": "invalid_request_error"}}},
    }
    with ScriptedModel(script) as model:
        code, out, err = call(
            run_args(hermetic, model, "fail", "--api-key-env", "THE_KEY"), env={"THE_KEY": "sk-in-env"}
        )
    assert code == 1, err
    assert "turn error" in err and "CODEX_ERROR: " in err and "nope" in err and out == ""
    # codex refuses to call a provider whose env_key variable is unset, so a
    # request proves the key from THE_KEY reached it as CODEXMINI_API_KEY.
    assert [r["status"] for r in model.requests] == [400]


def python39():
    """A Python 3.9 interpreter, if this machine has one (pyenv or PATH)."""
    import glob
    import shutil

    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    found = sorted(glob.glob(os.path.join(root, "versions", "3.9*", "bin", "python")))
    return found[-1] if found else shutil.which("python3.9")


@pytest.mark.live
@live
@pytest.mark.skipif(python39() is None, reason="no Python 3.9 on this machine")
def test_cli_smoke_passes_under_python_3_9():
    # The restricted environments codexmini is vendored into run 3.9: the
    # whole chain must work there, with nothing but the standard library.
    done = subprocess.run(
        [python39(), "-m", "codexmini", "smoke"],
        env={**os.environ, "PYTHONPATH": REPO},
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "smoke passed" in done.stdout


@pytest.mark.live
@live
def test_cli_resumed_session_keeps_its_model_and_endpoint(hermetic, monkeypatch):
    # run --model M, then resume without --model and without --provider-url:
    # the second codex turn still asks the scripted model for M.
    monkeypatch.setenv("CODEXMINI_CLI_TEST_KEY", "sk-cli")
    session = os.path.join(hermetic, "s.jsonl")
    ws = os.path.join(hermetic, "ws")
    os.makedirs(ws, exist_ok=True)
    with ScriptedModel({"rules": [], "default": message("ok")}) as model:
        first = ["run", "one", "--cwd", ws, "--session", session, "--model", "gpt-fake"]
        first += ["--provider-url", model.url, "--api-key-env", "CODEXMINI_CLI_TEST_KEY"]
        first += ["--reasoning-effort", "high", "--reasoning-summary", "concise"]
        code, _, err = call(first, env={"CODEXMINI_CLI_TEST_KEY": "sk-cli"})
        assert code == 0, err
        code, _, err = call(["run", "two", "--cwd", ws, "--session", session], env={"CODEXMINI_CLI_TEST_KEY": "sk-cli"})
        assert code == 0, err
        bodies = [r["body"] for r in model.requests]
    assert [b["model"] for b in bodies] == ["gpt-fake", "gpt-fake"]
    # The reasoning settings too (what codex 0.149.1 and 0.171.0 send the model).
    assert [(b["reasoning"]["effort"], b["reasoning"]["summary"]) for b in bodies] == [("high", "concise")] * 2
    events = list(read_log(session).events)
    assert [e["data"] for e in events if e["type"] == "model/choice"] == [{"model": "gpt-fake"}]
    (endpoint,) = [e["data"] for e in events if e["type"] == "model/endpoint"]
    assert endpoint["apiKeyEnv"] == "CODEXMINI_CLI_TEST_KEY" and "sk-cli" not in json.dumps(events)


@pytest.mark.live
@live
def test_cli_shows_a_compaction_and_the_next_run_resumes_from_it(hermetic):
    # Two runs on one session with a tiny prompt budget: the second one's step
    # would pass it, so the session is compacted first; stderr says so, and
    # the step's prompt is the summary and the new message.
    from codexmini._prompt import COMPACTION_INSTRUCTION

    summary = {"when": {"user_contains": COMPACTION_INSTRUCTION[:60]}, "respond": message("the gist")}
    with ScriptedModel({"rules": [summary], "default": message("ok")}) as model:
        code, _, err = call(run_args(hermetic, model, "one", "--prompt-budget", "40"))
        assert code == 0 and "compacted" not in err, err
        code, out, err = call(run_args(hermetic, model, "two", "--prompt-budget", "40", "--tool-output-budget", "9"))
        prompts = [r["body"]["input"][-1]["content"][0]["text"] for r in model.requests]
    assert code == 0 and out == "ok\n", err
    assert "[compacted the session: events 0 to " in err and "are now a summary of 8 characters]" in err
    assert prompts[-1].startswith("<summary>\n[a summary of the session up to event seq ")
    assert prompts[-1].endswith("the gist\n</summary>\n\n<user>\ntwo\n</user>")
    (compacted,) = [e for e in read_log(os.path.join(hermetic, "s.jsonl")).events if e["type"] == "session/compaction"]
    assert compacted["data"]["summary"] == "the gist"


def test_cli_config_items_reach_the_agent_config_in_order(tmp_path):
    args = cli.build_parser().parse_args(["run", "x", "--cwd", str(tmp_path), "-c", 'model="m"', "-c", "a.b=1"])
    assert list(cli.agent_config(args, {}).launch.config) == ['model="m"', "a.b=1"]


def test_cli_run_takes_an_image_that_is_a_readable_file(scratch):
    image = os.path.join(scratch, "pixel.png")
    with open(image, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n")
    args = cli.build_parser().parse_args(offline_run(scratch, "--image", image))
    assert cli.agent_config(args, {}).cwd == os.path.join(scratch, "ws")


class TtyOut(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.live
@live
def test_cli_run_on_one_terminal_shows_the_answer_once(hermetic):
    with ScriptedModel({"rules": [], "default": message("Hi ", "there")}) as model:
        out, err = TtyOut(), TtyOut()
        code = cli.main(
            run_args(hermetic, model, "hello"), stdin=io.StringIO(), stdout=out, stderr=err, env={"NO_COLOR": "1"}
        )
    assert code == 0, err.getvalue()
    assert out.getvalue() == "" and "Hi there" in err.getvalue()


def test_cli_and_library_name_the_thread_options_alike():
    # One set of names: the CLI's choices are the library's Literals (the
    # approval policy adds `ask`, the session log's word for on-request).
    import typing

    from codexmini import ApprovalPolicy, SandboxMode

    actions = {a.dest: a for a in cli.build_parser()._subparsers._group_actions[0].choices["run"]._actions}
    assert tuple(actions["sandbox"].choices) == typing.get_args(SandboxMode)
    assert set(actions["approval_policy"].choices) - {"ask"} <= set(typing.get_args(ApprovalPolicy))
    assert {cli.APPROVAL_KNOB[c] for c in actions["approval_policy"].choices} <= {"ask", "never"}
