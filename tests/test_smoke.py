"""The smoke run's own logic, without codex: where its validator comes from and
the checks that must fail loudly (the live runs are in tests/test_cli.py)."""

from __future__ import annotations

import io

from codexmini import _smoke as smoke


def test_smoke_validator_comes_from_the_binary(tmp_path):
    # A "binary" that cannot print its schema: the check has no validator and says why.
    validator, how = smoke.schema_validator(str(tmp_path / "no-codex"), str(tmp_path), "0.0.1")
    assert validator is None and how.startswith("no schema from the binary: cannot run")


def test_smoke_frames_check_fails_when_the_validator_did_not_run():
    s = smoke.Smoke(io.StringIO(), {}, None)
    s.frames = 12
    assert not s._frames_valid()  # never "ok" for a check that did not run


class Problems:
    problems = ["frame 3: wrong shape", "frame 9: undeclared field"]
    frames = 0

    def check(self, direction, frame):
        return []


def test_smoke_checks_fail_loudly_on_an_empty_log(tmp_path):
    out = io.StringIO()
    s = smoke.Smoke(out, {}, None)
    s.validator = Problems()
    missing_log = tmp_path / "no-session.jsonl"  # reading it raises: a failure, not a crash
    s._check([], {"reason": "error"}, str(tmp_path), str(missing_log), "0.0.1")
    text = out.getvalue()
    assert "FAIL  codex is the pinned" in text
    assert "FAIL  the command ran" in text  # a KeyError in the check is a failure, not a crash
    assert "FAIL  every frame is valid" in text
    assert "frame 3: wrong shape" in text
    assert "FAIL  the session log reads back intact" in text
    assert len(s.failures) == 10
