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
