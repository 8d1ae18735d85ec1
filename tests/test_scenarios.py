"""Every recorded scenario, replayed offline for every recorded codex version
and run live against the codex binary found.

The scenarios live in :mod:`conformance.scenarios`; their golden fixtures in
``fixtures/<codex-version>/`` come from ``tools/record_fixtures.py`` (``make
record CODEX=<version>``), one directory per end of the supported range, each
recorded from its own binary:

* ``<name>.model.json``     the model script the recording was made with;
* ``<name>.frames.jsonl``   both directions of the wire, normalised;
* ``<name>.session.jsonl``  the golden session log (agent scenarios only);
* ``MANIFEST.json``         per scenario the normalised codex command line.

``test_replay`` (ids ``<version>-<scenario>``) plays each transcript through
the real client code with a fake app-server (no binary needed) and demands the
client sends exactly what the binary received, the scenario's check holds for
that version and the session log equals that version's golden one.
``test_live`` (``-m live``) runs every scenario against the binary
:func:`conformance.versions.live_codex` finds -- the pinned one in ``make
test``, any installed one with ``make test-live CODEX=<version>`` -- and
compares its session log with the goldens of the version it reports.  The
conformance plugin validates every frame of both against the schema of the
version that sent it.  A failing golden test prints the command that
re-records it.
"""

from __future__ import annotations

import glob
import json
import os
from typing import Any, Dict, List

import pytest

from codexmini import CODEX_VERSION, OLDEST_CODEX_VERSION
from conformance.harness import Scenario, ScenarioResult, execute, fixture_path, run_sync
from conformance.scenarios import SCENARIOS, comparable_live_session
from conformance.versions import FIXTURES_ROOT, LiveCodex, fixtures_dir, live_codex, not_recorded, recorded_versions

NAMES = sorted(SCENARIOS)
VERSIONS = recorded_versions()
#: Per-scenario deadline for one run (every wait has one; nothing may hang).
RUN_TIMEOUT_S = 90.0


def rerecord(name: str, version: str) -> str:
    return (
        f"re-record with `make record CODEX={version}` or `python tools/record_fixtures.py --version {version} {name}`"
    )


def load_jsonl(path: str) -> List[Dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def manifest(version: str) -> Dict[str, Any]:
    with open(os.path.join(fixtures_dir(version), "MANIFEST.json"), encoding="utf-8") as fh:
        return json.load(fh)


def expected_files(scenario: Scenario) -> List[str]:
    suffixes = ["frames.jsonl", "model.json"] + (["session.jsonl"] if scenario.uses_agent else [])
    return [f"{scenario.name}.{suffix}" for suffix in suffixes]


def golden_session(name: str, version: str) -> List[Dict[str, Any]]:
    return load_jsonl(fixture_path(name, "session.jsonl", fixtures_dir(version)))


def session_diff(name: str, version: str, got: List[Dict[str, Any]], want: List[Dict[str, Any]]) -> str:
    """The first differing event, readably, and how to re-record."""
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            where = f"event {i} differs:\n  got:  {json.dumps(g, sort_keys=True)[:800]}\n  want: {json.dumps(w, sort_keys=True)[:800]}"
            break
    else:
        where = f"{len(got)} event(s) logged, the golden log has {len(want)}"
    return (
        f"{name}: the session log is not the golden {version}/{name}.session.jsonl: {where}\n{rerecord(name, version)}"
    )


def by_version_params() -> List[Any]:
    return [pytest.param(version, name, id=f"{version}-{name}") for version in VERSIONS for name in NAMES]


# -- the fixture set --------------------------------------------------------------


def test_scenarios_both_ends_of_the_range_are_recorded() -> None:
    assert VERSIONS, "no fixtures/<version>/MANIFEST.json; run `make record`"
    assert {OLDEST_CODEX_VERSION, CODEX_VERSION} <= set(VERSIONS), (
        f"recorded: {VERSIONS}; both ends of the supported range need recordings "
        f"(`make record CODEX={OLDEST_CODEX_VERSION}`, `make record`)"
    )
    for version in VERSIONS:
        schema = os.path.join(FIXTURES_ROOT, "schema", version)
        assert os.path.isdir(schema), (
            f"fixtures/{version}/ has no fixtures/schema/{version}/ (`make schema CODEX={version}`)"
        )


@pytest.mark.parametrize("version", VERSIONS)
def test_scenarios_fixture_glob_is_not_empty(version: str) -> None:
    assert glob.glob(os.path.join(fixtures_dir(version), "*.frames.jsonl")), (
        f"no fixtures in {fixtures_dir(version)}; run `make record CODEX={version}`"
    )


@pytest.mark.parametrize("version", VERSIONS)
def test_scenarios_and_fixture_files_correspond(version: str) -> None:
    want = {f for s in SCENARIOS.values() for f in expected_files(s)}
    have = set(os.listdir(fixtures_dir(version))) - {"MANIFEST.json"}
    missing, orphans = sorted(want - have), sorted(have - want)
    assert not missing, (
        f"codex {version}: scenarios without fixtures: {missing}; record them with `make record CODEX={version}`"
    )
    assert not orphans, (
        f"codex {version}: fixture files no scenario owns: {orphans}; delete them (or restore their scenario)"
    )
    recorded = manifest(version)
    assert sorted(recorded["scenarios"]) == NAMES, (
        f"fixtures/{version}/MANIFEST.json lists other scenarios; run `make record CODEX={version}`"
    )
    assert recorded["codexVersion"] == version, (
        f"fixtures/{version}/ was recorded with codex {recorded['codexVersion']}"
    )


@pytest.mark.parametrize("name", NAMES)
def test_scenarios_decide_every_recorded_version(name: str) -> None:
    # A value that differs by version must say what each recorded version does.
    for field_name, value in SCENARIOS[name].by_version.items():
        missing = sorted(set(VERSIONS) - set(value.values))
        assert not missing, f"{name}.{field_name} has no value for codex {missing} ({value.why})"


@pytest.mark.parametrize("version, name", by_version_params())
def test_scenarios_model_fixture_is_the_script(version: str, name: str) -> None:
    scenario = SCENARIOS[name].at(version)
    with open(fixture_path(name, "model.json", fixtures_dir(version)), encoding="utf-8") as fh:
        recorded = json.load(fh)
    # Through JSON, so tuples in the script compare equal to the lists on disk.
    assert recorded == json.loads(json.dumps(scenario.script)), (
        f"{name}: the script changed since recording; {rerecord(name, version)}"
    )
    entry = manifest(version)["scenarios"][name]
    assert entry["model"] == scenario.model, f"{name}: the model changed since recording; {rerecord(name, version)}"


# -- replay (no binary) -----------------------------------------------------------


def check_scenario(result: ScenarioResult) -> None:
    assert result.scenario.check is not None, f"{result.scenario.name} has no check"
    result.scenario.check(result)


@pytest.mark.parametrize("version, name", by_version_params())
def test_replay(version: str, name: str) -> None:
    scenario = SCENARIOS[name]
    result = run_sync(execute(scenario, "replay", version=version), RUN_TIMEOUT_S)
    assert result.version == version
    report = result.report
    assert report is not None, f"{name}: the replay server wrote no report; {rerecord(name, version)}"
    assert report["ok"], (
        f"{name}: the client did not send what codex {version} received:\n"
        + "\n".join(report["mismatches"])
        + f"\n{rerecord(name, version)}"
    )
    assert report["argv"] == manifest(version)["scenarios"][name]["argv"], (
        f"{name}: the codex command line changed; {rerecord(name, version)}"
    )
    check_scenario(result)
    if scenario.uses_agent:
        got, want = result.normalised_session(), golden_session(name, version)
        assert got == want, session_diff(name, version, got, want)


# -- live (the binary found, held to its own version's goldens) ---------------------------


@pytest.fixture(scope="module")
def codex() -> LiveCodex:
    found = live_codex()
    if isinstance(found, str):
        pytest.skip(f"live scenarios: {found}")
    if not found.recorded:  # the goldens say what a recorded version does, nothing about another one
        pytest.skip(f"live scenarios: {not_recorded(found)}")
    return found


@pytest.mark.live
@pytest.mark.parametrize("name", NAMES)
def test_live(name: str, codex: LiveCodex) -> None:
    scenario = SCENARIOS[name]
    assert codex.version is not None
    result = run_sync(execute(scenario, "live", version=codex.version, codex_bin=codex.path), RUN_TIMEOUT_S)
    check_scenario(result)
    if scenario.uses_agent:
        got = comparable_live_session(name, result.normalised_session(), codex.version)
        want = comparable_live_session(name, golden_session(name, codex.version), codex.version)
        assert got == want, session_diff(name, codex.version, got, want)


# -- live over a socket: the same scenarios on one codex server, connected to ---------------

#: Every scenario recorded over stdio runs over ws.  Over a unix socket the
#: WebSocket is the same and only the socket (and the server's announced
#: unfragmented limit) differs, so a sample runs there, to keep the suite's
#: time: agent turns (a message, a large and a streamed command output, an
#: approval, a question) and drivers with several clients one after another
#: or at once.
UNIX_SAMPLE = ("plain", "cmd_large", "cmd_streaming", "approval_accept", "user_input", "resume", "two_threads")
SOCKET_RUNS = [
    pytest.param(name, transport, id=f"{name}-{transport}")
    for name in NAMES
    if SCENARIOS[name].transport == "stdio"
    for transport in ("ws", "unix")
    if transport == "ws" or name in UNIX_SAMPLE
]


@pytest.mark.live
@pytest.mark.parametrize("name, transport", SOCKET_RUNS)
def test_live_over_a_socket(name: str, transport: str, codex: LiveCodex) -> None:
    # codex started as a server (app-server --listen ws://… or unix://…), the
    # agent and every client connected to it: the scenario's check holds and
    # the session log is the golden one recorded over stdio -- the transport
    # changes nothing above the client.  (A scenario with clients one after
    # the other reaches the one server each time, not a codex of its own.)
    scenario = SCENARIOS[name]
    assert codex.version is not None
    result = run_sync(
        execute(scenario, "live", version=codex.version, codex_bin=codex.path, transport=transport), RUN_TIMEOUT_S
    )
    assert result.argv[-2:-1] == ["--listen"]
    check_scenario(result)
    if scenario.uses_agent:
        got = comparable_live_session(name, result.normalised_session(), codex.version)
        want = comparable_live_session(name, golden_session(name, codex.version), codex.version)
        assert got == want, session_diff(name, codex.version, got, want)


def test_scenarios_the_unix_sample_names_scenarios_that_exist():
    assert set(UNIX_SAMPLE) <= set(NAMES)
    assert all(SCENARIOS[name].transport == "stdio" for name in UNIX_SAMPLE)
