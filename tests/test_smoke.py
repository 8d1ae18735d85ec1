"""The smoke run's own logic, without codex: the optional validator and the
checks that must fail loudly (the live runs are in tests/test_cli.py)."""

from __future__ import annotations

import importlib
import io
import sys

from codexmini import _smoke as smoke


def test_smoke_uses_the_repository_validator_when_importable(monkeypatch):
    repo = smoke.os.path.dirname(smoke.os.path.dirname(smoke.os.path.abspath(smoke.__file__)))
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in (repo, "")])
    validator, how = smoke.optional_validator()
    assert validator is not None and how == "strict, pinned schema"
    assert repo in sys.path  # it put the checkout on the path to find conformance/


def test_smoke_runs_without_a_validator(monkeypatch):
    def missing(name):
        raise ImportError(f"No module named {name!r}")

    monkeypatch.setattr(importlib, "import_module", missing)
    validator, how = smoke.optional_validator()
    assert validator is None and how.startswith("skipped (No module named")


class Problems:
    problems = ["frame 3: wrong shape", "frame 9: undeclared field"]

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
