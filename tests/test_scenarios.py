"""Every recorded scenario, replayed offline and run live against the pinned codex.

The scenarios live in :mod:`conformance.scenarios`; their golden fixtures in
``fixtures/<codex-version>/`` come from ``tools/record_fixtures.py``:

* ``<name>.model.json``     the model script the recording was made with;
* ``<name>.frames.jsonl``   both directions of the wire, normalised;
* ``<name>.session.jsonl``  the golden session log (agent scenarios only);
* ``MANIFEST.json``         per scenario the normalised codex command line.

``test_replay`` plays each transcript through the real client code with a
fake app-server (no binary needed) and demands the client sends exactly what
the binary received, the scenario's check holds and the session log equals
the golden one.  ``test_live`` (``-m live``) runs the same scenario against the
real binary and the scripted model and compares its session log with the same
golden file.  The conformance plugin validates every frame of both.  A
failing golden test prints the command that re-records it.
"""

from __future__ import annotations

import glob
import json
import os
from typing import Any, Dict, List

import pytest

from codexmini import CODEX_VERSION
from codexmini._binary import codex_version, find_codex
from codexmini._errors import BinaryNotFound
from conformance.harness import FIXTURES, RunResult, Scenario, execute, fixture_path, run_sync
from conformance.scenarios import SCENARIOS, comparable_live_session

NAMES = sorted(SCENARIOS)
#: Per-scenario deadline for one run (every wait has one; nothing may hang).
RUN_TIMEOUT_S = 90.0


def rerecord(name: str) -> str:
    return f"re-record with `make record` or `python tools/record_fixtures.py {name}`"


def load_jsonl(path: str) -> List[Dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def manifest() -> Dict[str, Any]:
    with open(os.path.join(FIXTURES, "MANIFEST.json"), encoding="utf-8") as fh:
        return json.load(fh)


def expected_files(scenario: Scenario) -> List[str]:
    suffixes = ["frames.jsonl", "model.json"] + (["session.jsonl"] if scenario.uses_agent else [])
    return [f"{scenario.name}.{suffix}" for suffix in suffixes]


def golden_session(name: str) -> List[Dict[str, Any]]:
    return load_jsonl(fixture_path(name, "session.jsonl"))


def session_diff(name: str, got: List[Dict[str, Any]], want: List[Dict[str, Any]]) -> str:
    """The first differing event, readably, and how to re-record."""
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            where = f"event {i} differs:\n  got:  {json.dumps(g, sort_keys=True)[:800]}\n  want: {json.dumps(w, sort_keys=True)[:800]}"
            break
    else:
        where = f"{len(got)} event(s) logged, the golden log has {len(want)}"
    return f"{name}: the session log is not the golden {name}.session.jsonl: {where}\n{rerecord(name)}"


# -- the fixture set --------------------------------------------------------------


def test_scenarios_fixture_glob_is_not_empty() -> None:
    assert glob.glob(os.path.join(FIXTURES, "*.frames.jsonl")), f"no fixtures in {FIXTURES}; run `make record`"


def test_scenarios_and_fixture_files_correspond() -> None:
    want = {f for s in SCENARIOS.values() for f in expected_files(s)}
    have = set(os.listdir(FIXTURES)) - {"MANIFEST.json"}
    missing, orphans = sorted(want - have), sorted(have - want)
    assert not missing, f"scenarios without fixtures: {missing}; record them with `make record`"
    assert not orphans, f"fixture files no scenario owns: {orphans}; delete them (or restore their scenario)"
    assert sorted(manifest()["scenarios"]) == NAMES, "MANIFEST.json lists other scenarios; run `make record`"


@pytest.mark.parametrize("name", NAMES)
def test_scenarios_model_fixture_is_the_script(name: str) -> None:
    scenario = SCENARIOS[name]
    with open(fixture_path(name, "model.json"), encoding="utf-8") as fh:
        recorded = json.load(fh)
    # Through JSON, so tuples in the script compare equal to the lists on disk.
    assert recorded == json.loads(json.dumps(scenario.script)), f"{name}: the script changed since recording; {rerecord(name)}"
    entry = manifest()["scenarios"][name]
    assert entry["model"] == scenario.model, f"{name}: the model changed since recording; {rerecord(name)}"


# -- replay (no binary) -----------------------------------------------------------


def check_scenario(result: RunResult) -> None:
    assert result.scenario.check is not None, f"{result.scenario.name} has no check"
    result.scenario.check(result)


@pytest.mark.parametrize("name", NAMES)
def test_replay(name: str) -> None:
    scenario = SCENARIOS[name]
    result = run_sync(execute(scenario, "replay"), RUN_TIMEOUT_S)
    report = result.report
    assert report is not None, f"{name}: the replay server wrote no report; {rerecord(name)}"
    assert report["ok"], f"{name}: the client did not send what codex received:\n" + "\n".join(report["mismatches"]) + f"\n{rerecord(name)}"
    assert report["argv"] == manifest()["scenarios"][name]["argv"], f"{name}: the codex command line changed; {rerecord(name)}"
    check_scenario(result)
    if scenario.uses_agent:
        got, want = result.normalised_session(), golden_session(name)
        assert got == want, session_diff(name, got, want)


# -- live (the pinned binary and the scripted model) ------------------------------------


@pytest.fixture(scope="module")
def codex_bin() -> str:
    try:
        path = find_codex().path
    except BinaryNotFound as exc:
        pytest.skip(f"live scenarios need the pinned codex binary (make setup installs it): {exc}")
    found = codex_version(path)
    if found != CODEX_VERSION:  # the goldens say what 0.149.1 does, not what another version does
        pytest.skip(f"live scenarios need codex {CODEX_VERSION}, but {path} is {found} (make setup installs the pinned one)")
    return path


@pytest.mark.live
@pytest.mark.parametrize("name", NAMES)
def test_live(name: str, codex_bin: str) -> None:
    scenario = SCENARIOS[name]
    result = run_sync(execute(scenario, "live", codex_bin=codex_bin), RUN_TIMEOUT_S)
    check_scenario(result)
    if scenario.uses_agent:
        got = comparable_live_session(name, result.normalised_session())
        want = comparable_live_session(name, golden_session(name))
        assert got == want, session_diff(name, got, want)
