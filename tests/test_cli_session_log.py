"""The CLI's session log held by another writer, or changed under the run:
``run --session`` on a log another process writes is a usage error naming
that process (exit 2, before codex starts); a log someone else writes to
mid-run -- here codex itself, running a command the model asked for -- ends
the run with the log's error as the last line on stderr (exit 1), and the
log keeps what was written before."""

from __future__ import annotations

import io
import os
import shutil

import pytest
from support.run_support import HAVE_CODEX

from codexmini import SessionLog, read_log
from codexmini import _cli as cli
from codexmini.testing.live import scratch_dir
from codexmini.testing.scripted_model import ScriptedModel

USAGE = {"input_tokens": 10, "cached_tokens": 2, "output_tokens": 5, "reasoning_tokens": 1}


def call(argv, env):
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(argv, stdin=io.StringIO(), stdout=out, stderr=err, env=env)
    return code, out.getvalue(), err.getvalue()


def test_cli_session_log_held_by_another_writer_is_a_usage_error_naming_it(tmp_path):
    path = str(tmp_path / "s.jsonl")
    with SessionLog.open(path) as log:
        log.append("turn/start", {}, turn=1)
        code, out, err = call(
            ["run", "hello", "--session", path, "--codex-bin", str(tmp_path / "no-codex")], dict(os.environ)
        )
    assert code == 2 and out == ""
    assert err == (
        f"codexmini: --session {path}: {path}: the session log is locked by its writer, pid {os.getpid()}: "
        "one writer per log (the lock goes when that writer closes the log or exits)\n"
    )
    assert [e["type"] for e in read_log(path).events] == ["turn/start"]


@pytest.mark.live
@pytest.mark.skipif(not HAVE_CODEX, reason="the pinned codex is not installed (make setup)")
def test_cli_session_log_written_by_someone_else_mid_run_exits_1_with_the_error(monkeypatch):
    root = scratch_dir("codexmini-cli-")  # not under /tmp: codex refuses to create helper binaries there
    try:
        os.makedirs(os.path.join(root, "ws"))
        monkeypatch.setenv("CODEX_HOME", os.path.join(root, "home"))
        monkeypatch.setenv("HOME", root)
        os.makedirs(os.path.join(root, "home"))
        path = os.path.join(root, "s.jsonl")
        call_ = {
            "type": "function_call",
            "call_id": "call_1",
            "name": "exec_command",
            "arguments": {
                "cmd": f"echo intruder >> {path}",
                "yield_time_ms": 30000,
                "sandbox_permissions": "require_escalated",
                "justification": "writes the log",
            },
        }
        script = {"rules": [], "default": {"output": [call_], "usage": USAGE}}
        with ScriptedModel(script) as model:
            argv = ["run", "go", "--cwd", os.path.join(root, "ws"), "--session", path, "--model", "gpt-fake"]
            argv += ["--provider-url", model.url, "--auto-approve", "--approval-policy", "ask"]
            code, out, err = call(argv, dict(os.environ))
        assert code == 1, err
        last = err.splitlines()[-1]  # the transcript comes first, on stderr too
        assert last.startswith(f"codexmini: {path}: the session log was appended behind its writer's back"), err
        with open(path, "rb") as written:
            assert written.read().endswith(b"intruder\n")  # nothing written after it
        decisions = [e for e in read_log(path).events if e["type"] == "approval/decision"]  # torn tail dropped
        assert [d["data"]["decision"] for d in decisions] == ["accept"]
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_cli_session_log_with_messages_pending_runs_them_first(tmp_path, monkeypatch):
    # A library agent died with a followup queued: `run --session` runs it as
    # a turn of its own, then the prompt, whose answer and status it reports.
    # (codex is the in-memory fake: the CLI's Launch is replaced by one on it.)
    from support import thread_behaviours as tb

    from codexmini import Launch
    from codexmini.testing import FakeAppServer

    monkeypatch.setattr(cli, "Launch", lambda **_: Launch(launcher=FakeAppServer(tb.AgentTurns).launch))
    path = str(tmp_path / "s.jsonl")
    text = {"content": [{"type": "text", "text": "left queued"}], "source": {"kind": "user"}}
    with SessionLog.open(path) as log:
        log.append("inbox/queued", {"id": "q1", "kind": "followup", **text})
    code, out, err = call(["run", "the prompt", "--session", path, "--cwd", str(tmp_path)], {"HOME": str(tmp_path)})
    assert (code, out) == (0, "re: the prompt\n"), err
    users = [(e["turn"], e["data"]["content"][0]["text"]) for e in read_log(path).events if e["type"] == "user/message"]
    assert users == [(1, "left queued"), (2, "the prompt")]
    with SessionLog.open(path) as log:
        assert log.pending == []
