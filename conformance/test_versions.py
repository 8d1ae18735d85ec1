"""The suite's view of codex versions: recordings per version, per-version
values, the live binary, and the validator that follows the server's version."""

from __future__ import annotations

import os

import pytest

from codexmini import CODEX_VERSION, OLDEST_CODEX_VERSION
from conformance import versions
from conformance.harness import Scenario
from conformance.recorded import INITIALIZE, INITIALIZE_RESULT, INITIALIZED, THREAD_START
from conformance.schema import OPEN_CONFIG, ServerVersionValidator, fixture_versions, known_undeclared, server_version
from conformance.versions import ByVersion, UnknownVersion, at_version, codex_placeholder


def test_versions_recorded_are_sorted_and_include_both_ends():
    recorded = versions.recorded_versions()
    assert {OLDEST_CODEX_VERSION, CODEX_VERSION} <= set(recorded)
    assert recorded == sorted(recorded, key=lambda v: tuple(int(p) for p in v.split(".")))
    assert "schema" not in recorded
    assert all(os.path.isfile(os.path.join(versions.fixtures_dir(v), "MANIFEST.json")) for v in recorded)


def test_versions_recorded_skips_other_directories(tmp_path, monkeypatch):
    for name in ("0.150.0", "0.99.0", "schema", "notes", "0.160.0"):
        (tmp_path / name).mkdir()
    for name in ("0.150.0", "0.99.0"):
        (tmp_path / name / "MANIFEST.json").write_text("{}")
    monkeypatch.setattr(versions, "FIXTURES_ROOT", str(tmp_path))
    assert versions.recorded_versions() == ["0.99.0", "0.150.0"]  # 0.160.0 has no manifest


def test_versions_by_version_has_no_default():
    model = ByVersion({"0.149.1": "gpt-5.4", "0.171.0": "gpt-5.5"}, why="apply_patch moved")
    assert model.at("0.149.1") == "gpt-5.4" and model.at("0.171.0") == "gpt-5.5"
    with pytest.raises(
        UnknownVersion, match=r"no value for codex 0\.160\.0 \(known: 0\.149\.1, 0\.171\.0; apply_patch moved\)"
    ):
        model.at("0.160.0")
    assert at_version(model, "0.171.0") == "gpt-5.5" and at_version("plain", "0.171.0") == "plain"
    assert "apply_patch moved" in repr(model)


@pytest.mark.parametrize("values", [{}, {"latest": 1}])
def test_versions_by_version_refuses_bad_keys(values):
    with pytest.raises(ValueError):
        ByVersion(values, why="")


def test_versions_scenario_at_resolves_its_per_version_fields():
    scenario = Scenario(
        name="s",
        script={},
        model=ByVersion({"1.0.0": "a", "2.0.0": "b"}, why="slug"),
        config=ByVersion({"1.0.0": ["x=1"], "2.0.0": []}, why="flag"),
    )
    assert set(scenario.by_version) == {"model", "config"}
    one, two = scenario.at("1.0.0"), scenario.at("2.0.0")
    assert (one.model, one.config, two.model, two.config) == ("a", ("x=1",), "b", ())
    assert one.by_version == {}
    assert Scenario(name="plain", script={}).at("9.9.9").model == "gpt-fake"


def test_versions_codex_placeholder_replaces_only_what_codex_reports():
    value = {
        "thread": {"cliVersion": "0.171.0", "preview": "0.171.0"},
        "codexVersion": "0.171.0",
        "userAgent": "codexmini/0.171.0 (OS) TERM (CLIENT)",
        "items": [{"cliVersion": "0.149.1"}, 3],
    }
    assert codex_placeholder(value, "0.171.0") == {
        "thread": {"cliVersion": "CODEX_VERSION", "preview": "0.171.0"},
        "codexVersion": "CODEX_VERSION",
        "userAgent": "codexmini/CODEX_VERSION (OS) TERM (CLIENT)",
        "items": [{"cliVersion": "0.149.1"}, 3],
    }


def test_versions_live_codex_follows_the_env_var(tmp_path, monkeypatch):
    fake = tmp_path / "codex"
    fake.write_text('#!/bin/sh\necho "codex-cli 0.1.0"\n')
    fake.chmod(0o755)
    monkeypatch.setenv("CODEXMINI_CODEX_BIN", str(fake))
    live = versions.live_codex()
    assert live == versions.LiveCodex(str(fake), "0.1.0") and not live.recorded
    message = versions.not_recorded(live)
    assert "codex 0.1.0, which has no recordings" in message and "make drift TO=0.1.0" in message
    monkeypatch.setenv("CODEXMINI_CODEX_BIN", str(tmp_path / "missing"))
    assert "no codex binary" in versions.live_codex()


# -- the validator that follows the server's version ----------------------------------


def _initialize_result(agent):
    return dict(INITIALIZE_RESULT, result=dict(INITIALIZE_RESULT["result"], userAgent=agent))


@pytest.mark.parametrize(
    "agent, version",
    [
        ("codexmini/0.149.1 (Debian 12.0.0; x86_64) xterm (codexmini; 0.1.0)", "0.149.1"),
        ("codexmini/0.149.1 (fake)", "0.149.1"),
        ("codexmini/9.9.9 (no fixtures)", None),
        ("codexmini/latest", None),
        ("no-slash", None),
        (None, None),
    ],
)
def test_server_version_reads_the_user_agent(agent, version):
    frame = _initialize_result(agent) if agent is not None else {"id": 1, "result": {}}
    assert server_version(frame) == version
    assert server_version("not a frame") is None


@pytest.mark.parametrize("version", fixture_versions())
def test_server_version_validator_uses_the_schema_the_server_names(version):
    validator = ServerVersionValidator(default="0.0.0-never")
    # The client frames wait for the first server frame, then are checked too.
    assert validator.check("out", INITIALIZE) == []
    problems = validator.check("in", _initialize_result(f"codexmini/{version} (OS) TERM (CLIENT)"))
    assert problems == []
    validator.check("out", INITIALIZED)
    validator.check("out", dict(THREAD_START, params={"cwd": 7}))  # invalid: reported at once
    assert validator.bundle.version == version and validator.bundle.flavor == "experimental"
    assert validator.frames == 4
    assert [p.method for p in validator.problems] == ["thread/start"]
    assert [s[2] for s in validator.seen] == ["initialize", "initialize", "initialized", "thread/start"]


def test_server_version_validator_falls_back_to_the_pin():
    validator = ServerVersionValidator()
    validator.check("out", INITIALIZE)
    validator.check("in", _initialize_result("fake/0.0.1"))
    assert validator.bundle.version == CODEX_VERSION


def test_server_version_validator_without_a_server_frame_judges_with_the_default():
    validator = ServerVersionValidator()
    validator.tap("out", INITIALIZE)
    validator.tap("out", dict(THREAD_START, params={"cwd": 7}))
    assert validator.frames == 2 and len(validator.problems) == 1
    assert validator.bundle.version == CODEX_VERSION


def test_known_undeclared_per_version():
    assert known_undeclared("0.149.1")["experimental"] == frozenset([OPEN_CONFIG])  # config/read's open map
    assert known_undeclared("0.149.1")["stable"]
    assert known_undeclared("0.0.1") == {"stable": frozenset(), "experimental": frozenset()}
