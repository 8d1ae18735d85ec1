"""The smoke run's own logic, without codex: where its validator comes from,
how it picks a model slug, what it reads from the model's side, and the
checks that must fail loudly (the live runs are in tests/test_cli.py)."""

from __future__ import annotations

import io

from codexmini import CODEX_VERSION
from codexmini import _smoke as smoke
from codexmini._binary import supported_range


def test_smoke_validator_comes_from_the_binary(tmp_path):
    # A "binary" that cannot print its schema: the check has no validator and says why.
    validator, how = smoke.schema_validator(str(tmp_path / "no-codex"), str(tmp_path), "0.0.1")
    assert validator is None and how.startswith("no schema from the binary: cannot run")


def test_smoke_frames_check_fails_when_the_validator_did_not_run():
    s = smoke.Smoke(io.StringIO(), {}, None)
    s.tap("out", {"method": "initialize"})
    s.frames = 12
    assert not s._frames_valid()  # never "ok" for a check that did not run
    assert "frames seen 12 · frames validated 0 (not run)" in s.summary({}, {}, 0.0)


class Counting:
    """A validator that has checked some frames, with or without problems."""

    def __init__(self, frames, problems=()):
        self.frames = frames
        self.problems = list(problems)

    def check(self, direction, frame):
        self.frames += 1
        return []


def test_smoke_frames_check_needs_every_frame_validated_and_none_invalid():
    s = smoke.Smoke(io.StringIO(), {}, None)
    s.validator = Counting(0)
    assert not s._frames_valid()  # no frame at all is no proof
    for _ in range(3):
        s.tap("in", {"method": "x"})
    assert s.frames == s.validator.frames == 3 and s._frames_valid()
    s.frames += 1  # a frame the validator never saw
    assert not s._frames_valid()
    s.validator = Counting(4, ["frame 2: wrong shape"])
    assert not s._frames_valid()
    s.validation = "strict, codex 9.9.9's own schema"
    assert "frames seen 4 · frames validated 4 (strict, codex 9.9.9's own schema)" in s.summary(
        {"steps": 4}, {"usage": {"totalTokens": 7}}, 1.25
    )


def test_smoke_picks_the_first_slug_that_offers_every_tool():
    both = {(None, "exec_command"): {}, (None, "apply_patch"): {}}
    only_exec = {(None, "exec_command"): {}}
    offers = {"gpt-6": only_exec, "gpt-5.5": both, "gpt-5.4": both}
    assert smoke.pick_model(["gpt-6", "gpt-5.5", "gpt-5.4"], offers) == "gpt-5.5"
    assert smoke.pick_model(["gpt-5.4", "gpt-5.5"], offers) == "gpt-5.4"  # the binary's order decides
    assert smoke.pick_model(["gpt-6", "unprobed"], offers) is None
    assert smoke.pick_model(["gpt-6"], offers, needed=[(None, "exec_command")]) == "gpt-6"


def test_smoke_model_saw_reads_the_tool_outputs_sent_to_the_model():
    requests = [
        {"body": {"input": [{"type": "message", "role": "user", "content": "hi"}]}},
        {"body": {"input": [{"type": "function_call_output", "call_id": "c1", "output": "smoke-ok\n"}]}},
        {"body": {"input": [{"type": "custom_tool_call_output", "call_id": "c2", "output": {"content": "x"}}, "odd"]}},
        {"body": None},
    ]
    assert smoke.model_saw(requests, "c1") == "smoke-ok\n"
    assert smoke.model_saw(requests, "c2") == "{'content': 'x'}"
    assert smoke.model_saw(requests, "c3") == ""


def test_smoke_checks_fail_loudly_on_an_empty_log(tmp_path):
    out = io.StringIO()
    s = smoke.Smoke(out, {}, None)
    s.validator = Counting(0, ["frame 3: wrong shape", "frame 9: undeclared field"])
    s.script_errors = ["script error in rule 'default': a custom_tool_call of 'apply_patch', but …"]
    missing_log = tmp_path / "no-session.jsonl"  # reading it raises: a failure, not a crash
    s._check([], {"reason": "error"}, str(tmp_path), str(missing_log), "0.0.1")
    text = out.getvalue()
    assert f"FAIL  codex 0.0.1 is supported ({supported_range()})" in text
    assert f"codexmini supports codex {supported_range()}; this one may still work" in text
    assert "FAIL  codex offers exec_command, apply_patch for model (none)" in text
    assert "FAIL  the model called only tools the request offered; script error in rule 'default'" in text
    assert "FAIL  the command ran" in text  # a KeyError in the check is a failure, not a crash
    assert "FAIL  every frame is valid" in text
    assert "frame 3: wrong shape" in text
    assert "FAIL  the session log reads back intact" in text
    assert "  ok  " not in text
    assert len(s.failures) == 12


def test_smoke_checks_without_a_validator(tmp_path):
    out = io.StringIO()
    s = smoke.Smoke(out, {}, None)
    s._check([], {}, str(tmp_path), str(tmp_path / "none.jsonl"), CODEX_VERSION)
    text = out.getvalue()
    assert f"  ok    codex {CODEX_VERSION} is supported" in text and "may still work" not in text
    assert "FAIL  every frame is valid against the schema this codex prints (not run)" in text


# -- smoke --connect: a server that is already running ----------------------------------

import asyncio  # noqa: E402
import os  # noqa: E402

import pytest  # noqa: E402
from support.run_support import HAVE_CODEX  # noqa: E402

from codexmini import _cli as cli  # noqa: E402
from codexmini.testing.fake_socket import SocketServerSide, serve  # noqa: E402
from codexmini.testing.live import LiveCodex  # noqa: E402


def call(argv):
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(argv, stdout=out, stderr=err, env={"NO_COLOR": "1"})
    return code, out.getvalue(), err.getvalue()


def fake_codex(tmp_path, version: str) -> str:
    """A local "codex" that only says its version (the schema check compares it with the server's)."""
    path = tmp_path / "codex"
    path.write_text(f"#!/bin/sh\necho 'codex-cli {version}'\n")
    path.chmod(0o755)
    return str(path)


async def refuses_everything(side: SocketServerSide) -> None:
    await side.handshake()
    async for request in side.requests():
        side.fail(request, "not today")


def smoke_connect_in_a_thread(url: str, *more: str):
    # The fake server runs on this test's loop; the CLI runs its own in a thread.
    return asyncio.get_running_loop().run_in_executor(None, call, ["smoke", "--connect", url, *more])


async def test_smoke_connect_fails_each_check_that_did_not_hold_and_says_why(tmp_path):
    async with await serve(refuses_everything) as server:
        code, out, err = await smoke_connect_in_a_thread(server.url, "--codex-bin", fake_codex(tmp_path, "0.149.1"))
    assert code == 1, out + err
    assert "ok    reached ws://127.0.0.1:" in out
    assert "ok    codex 0.149.1 is supported" in out  # what the fake's initialize answer names
    assert "RpcError: model/list: not today" in out
    assert "FAIL  model/list answered (0 model(s))" in out
    assert "FAIL  a thread started and was let go (thread/unsubscribe)" in out
    # The local "codex" prints no schema: the frames check could not run, so it failed.
    assert "FAIL  every frame is valid against the schema of this codex (no schema from the binary" in out
    assert "smoke FAILED: 3 expectation(s) did not hold" in out


@pytest.mark.parametrize(
    "codex, why",
    [
        ("0.171.0", "not run: the local codex is 0.171.0, the server 0.149.1"),
        (None, "not run: no local codex 0.149.1 to print its schema"),
    ],
)
async def test_smoke_connect_validates_only_with_a_local_codex_of_the_servers_version(tmp_path, codex, why):
    local = fake_codex(tmp_path, codex) if codex else str(tmp_path / "none")
    async with await serve(refuses_everything) as server:
        code, out, _ = await smoke_connect_in_a_thread(server.url, "--codex-bin", local)
    assert code == 1
    assert f"FAIL  every frame is valid against the schema of this codex ({why})" in out
    assert f"frames validated 0 ({why})" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["smoke", "--token-file", "/t"], "--token-file goes with --connect"),
        (["smoke", "--connect", "http://127.0.0.1:9"], "the scheme must be ws:// or unix://"),
        (["smoke", "--connect", "ws://127.0.0.1:9", "--token-file", "/nonexistent/t"], "cannot read /nonexistent/t"),
    ],
)
def test_smoke_connect_usage_errors(argv, message):
    code, out, err = call(argv)
    assert code == 2 and message in err and "Traceback" not in err


def test_smoke_connect_to_nobody_exits_3(tmp_path):
    code, out, err = call(["smoke", "--connect", f"unix://{tmp_path}/nobody.sock"])
    assert code == 3 and "could not be reached" in err


@pytest.mark.live
@pytest.mark.skipif(not HAVE_CODEX, reason="the pinned codex is not installed (make setup)")
def test_smoke_connect_proves_a_token_protected_server_and_never_prints_the_token():
    with LiveCodex({"rules": [], "default": {"output": []}}, prefix="codexmini-smoke-connect-") as live:
        token = os.path.join(live.root, "token")
        with open(token, "w") as fh:
            fh.write("smoke-token-secret\n")
        url = live.serve("ws", ["--ws-auth", "capability-token", "--ws-token-file", token])
        code, out, err = call(["smoke", "--connect", url, "--token-file", token, "--codex-bin", live.binary])
        assert code == 0, out + err
        assert "smoke passed: codexmini → ws://" in out and "FAIL" not in out
        assert "a thread started and was let go" in out and "model/list answered" in out
        code, out, err = call(["smoke", "--connect", url, "--codex-bin", live.binary])  # no token
        assert code == 3 and "refused the credentials (401)" in err
        assert "smoke-token-secret" not in out + err
        assert live.requests == []  # no model turn
