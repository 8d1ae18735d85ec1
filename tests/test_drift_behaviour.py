"""Behavioural drift (``tools/drift/behaviour.py``): the comparison rules on
made-up transcripts and logs, the verdict on replayed runs of the real
recordings, the report, the command line, and (``-m live``) a live run
against the pinned binary, which must match its own goldens."""

from __future__ import annotations

import copy
import importlib
import importlib.util
import io
import os
import sys
from typing import Any, Dict, List, Tuple

import pytest

from codexmini import CODEX_VERSION
from conformance.harness import execute, run_sync
from conformance.schema import SchemaBundle
from conformance.versions import live_codex

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
behaviour = importlib.import_module("tools.drift.behaviour")


def _schema_drift():
    name = "_codexmini_tools_schema_drift"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "tools", "schema_drift.py"))
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        sys.modules[name] = module
        spec.loader.exec_module(module)  # type: ignore[union-attr]
    return sys.modules[name]


def note(method: str, **params: Any) -> Tuple[str, Dict[str, Any]]:
    return ("in", {"method": method, "params": params})


INIT = [("out", {"id": 1, "method": "initialize", "params": {}}), ("in", {"id": 1, "result": {"userAgent": "x"}})]


# -- values ------------------------------------------------------------------------------


def test_behaviour_value_differences_name_paths_and_both_values():
    old = {"a": 1, "b": {"c": "x", "gone": True}, "l": [1, 2], "m": [1]}
    new = {"a": 2, "b": {"c": "x", "added": None}, "l": [1, 3], "m": [1, 2]}
    assert behaviour.value_differences(old, new) == [
        "$.a: 1 → 2",
        "$.b.added: new null",
        "$.b.gone: no longer sent (was true)",
        "$.l[1]: 2 → 3",
        "$.m: [1] → [1, 2]",
    ]
    (long,) = behaviour.value_differences({"x": "y" * 200}, {"x": "z"})
    assert long.endswith('y… → "z"') and len(long) < 120


# -- transcripts -------------------------------------------------------------------------


def test_behaviour_labels_name_responses_by_their_request_and_items_by_type():
    frames = INIT + [
        ("in", {"id": 0, "method": "item/tool/requestUserInput", "params": {}}),
        ("out", {"id": 0, "result": {}}),
        note("item/started", item={"type": "agentMessage"}),
        ("in", {"id": 9, "error": {}}),
    ]
    assert [label for _, label, _ in behaviour.label_frames(frames)] == [
        "initialize",
        "initialize result",
        "item/tool/requestUserInput",
        "item/tool/requestUserInput result",
        "item/started (agentMessage)",
        "? error",
    ]


def test_behaviour_fields_only_the_new_version_sends_are_left_to_the_schema_report():
    golden = INIT + [note("turn/started", turn={"id": "t", "items": [{"a": 1}]})]
    live = INIT + [note("turn/started", turn={"id": "t", "rootTurnId": "t", "items": [{"a": 1, "b": 2}]})]
    assert behaviour.transcript_differences(golden, live, "in") == []
    assert behaviour.transcript_differences(golden, live, "out") == []


def test_behaviour_changed_missing_and_new_frames():
    golden = INIT + [note("a", x=1), note("b"), note("c", y=[])]
    live = INIT + [note("a", x=2), note("c", y=[{"k": 1}]), note("d", z=1)]
    assert behaviour.transcript_differences(golden, live, "in") == [
        "a $.params.x: 1 → 2",
        "b: no longer sent",
        'c $.params.y: [] → [{"k": 1}]',  # a place the goldens never had is kept whole
        "d: new (keys: z)",
    ]


def test_behaviour_a_frame_that_only_moved_is_not_a_difference():
    golden = INIT + [note("status", s="idle"), note("warning", w=1), note("done")]
    live = INIT + [note("warning", w=1), note("status", s="idle"), note("done")]
    assert behaviour.transcript_differences(golden, live, "in") == []
    # ... but one that moved *and* changed is paired with its twin, wherever it went.
    changed = INIT + [note("warning", w=2), note("status", s="idle"), note("done")]
    assert behaviour.transcript_differences(golden, changed, "in") == ["warning $.params.w: 1 → 2"]


def test_behaviour_ids_are_renumbered_without_the_new_kinds_of_frames():
    def uuid(n):
        return f"00000000-0000-7000-8000-{n:012d}"

    golden = INIT + [note("thread/started", id=uuid(1)), note("turn/started", id=uuid(2))]
    # The new version sends a new notification with an id of its own first,
    # which took number 2 in its recording and shifted the turn's id to 3.
    live = INIT + [note("thread/started", id=uuid(1)), note("readState", rev=uuid(2)), note("turn/started", id=uuid(3))]
    assert behaviour.transcript_differences(golden, live, "in") == ["readState: new (keys: rev)"]
    # The other way round (the goldens have the extra kind) just the same.
    assert behaviour.transcript_differences(live, golden, "in") == ["readState: no longer sent"]


def test_behaviour_repeated_lines_are_counted_once():
    assert behaviour.counted(["a", "b", "a", "c", "a"]) == ["a (×3)", "b", "c"]


def test_behaviour_racing_transcripts_compare_frame_counts():
    golden = INIT + [note("delta", d="a"), note("delta", d="b")]
    live = INIT + [note("delta", d="b"), note("delta", d="a"), note("delta", d="c"), note("new")]
    assert behaviour.label_count_differences(golden, live, "in") == ["delta: 2 → 3 frame(s)", "new: 0 → 1 frame(s)"]
    assert behaviour.label_count_differences(golden, live, "out") == []


# -- session logs ------------------------------------------------------------------------


def event(seq, type_, **data):
    return {"v": 1, "seq": seq, "ts": 0, "type": type_, "turn": 1, "step": 1, "data": data}


def test_behaviour_session_differences_ignore_the_renumbering():
    golden = [event(0, "a", x=1), event(1, "b"), event(2, "c", y=1)]
    live = [event(0, "a", x=1), event(1, "c", y=2), event(2, "d")]
    assert behaviour.session_differences(golden, live) == [
        "b: no longer logged ({})",
        "c $.data.y: 1 → 2",
        "d: newly logged ({})",
    ]
    assert behaviour.session_differences(golden, [event(5, "a", x=1), event(9, "b"), event(0, "c", y=1)]) == []
    moved = [dict(e, step=2) for e in golden]
    assert behaviour.session_differences(golden, moved)[0] == "a $.step: 1 → 2"


# -- verdicts on replayed runs of the real recordings ---------------------------------------


@pytest.fixture(scope="module")
def pinned_bundle():
    return SchemaBundle.load(CODEX_VERSION)


def replayed(name):
    return run_sync(execute(behaviour.SCENARIOS[name], "replay"), 60)


def test_behaviour_a_run_that_is_its_recording_is_the_same(pinned_bundle):
    outcome = behaviour.judge("plain", replayed("plain"), CODEX_VERSION, pinned_bundle)
    assert (outcome.verdict, outcome.differences, outcome.reason) == ("same", {}, "")
    assert outcome.frames > 20


def test_behaviour_a_changed_answer_differs_in_check_log_and_wire(pinned_bundle):
    result = replayed("plain")
    for direction, frame in result.frames:
        if direction == "in" and frame.get("method") == "item/agentMessage/delta" and frame["params"]["delta"] == "lo":
            frame["params"]["delta"] = "LO"
    result.session = copy.deepcopy(result.session)
    for e in result.session:
        if e["type"] == "assistant/message":
            e["data"]["content"][0]["text"] = "HelLO, world!"
    outcome = behaviour.judge("plain", result, CODEX_VERSION, pinned_bundle)
    assert outcome.verdict == "differs"
    assert set(outcome.differences) == {"check", "session", "in"}
    (check,) = outcome.differences["check"]
    # The events are the client's own (the frames were edited after), so the
    # first assertion to fail is the one on the logged text.
    assert check.startswith("scenarios.py:") and 'assert texts(result) == ["Hello, world!"]' in check
    assert outcome.differences["session"] == [
        'assistant/message $.data.content[0].text: "Hello, world!" → "HelLO, world!"'
    ]
    assert outcome.differences["in"] == ['item/agentMessage/delta $.params.delta: "lo" → "LO"']


def test_behaviour_a_frame_invalid_against_the_new_schema_fails(pinned_bundle):
    result = replayed("plain")
    (last,) = [f for d, f in result.frames if f.get("method") == "turn/completed"]
    result.frames.append(("in", dict(last, params=dict(last["params"], threadId=3))))
    outcome = behaviour.judge("plain", result, CODEX_VERSION, pinned_bundle)
    assert outcome.verdict == "fails"
    assert outcome.reason.startswith(
        f"1 problem(s) in {len(result.frames)} frames against codex {CODEX_VERSION}'s own schema; first:"
    )
    assert "turn/completed at $.params.threadId: 3 is not of type 'string'" in outcome.reason


def test_behaviour_run_behaviour_reports_a_run_that_could_not_complete(pinned_bundle, tmp_path):
    report = behaviour.run_behaviour("9.9.9", str(tmp_path / "no-codex"), pinned_bundle, names=["plain"])
    (outcome,) = report.outcomes
    assert outcome.verdict == "fails" and "no-codex" in outcome.reason
    assert report.failed and report.summary() == {"fails": 1, "differs": 0, "same": 0}


# -- the report --------------------------------------------------------------------------


def test_behaviour_report_lists_verdicts_and_common_differences_once():
    common = "readState: new (keys: rev)"
    outcomes = [behaviour.Outcome(f"s{i}", "differs", differences={"in": [common]}) for i in range(3)]
    outcomes[0].differences["session"] = [f"line {n}" for n in range(6)]
    outcomes.append(behaviour.Outcome("broken", "fails", "ScriptFailed: no apply_patch"))
    outcomes.append(behaviour.Outcome("fine", "same"))
    report = behaviour.BehaviourReport("0.149.1", "0.171.0", "/bin/codex", outcomes)
    assert report.common_threshold == 3 and report.common() == [("in", common, 3)]
    text = behaviour.format_behaviour(report)
    lines = text.splitlines()
    assert lines[0].startswith("BEHAVIOUR -- every recorded scenario run live against codex 0.171.0")
    assert "compared with the 0.149.1 goldens (5)" in lines[0]
    assert lines[2] == "  fails    broken  ScriptFailed: no apply_patch"
    assert "  differs  s0  (codex sent, session log; 1 listed under many scenarios)" in lines
    assert "      session log: line 3" in lines and "      session log: … 2 more" in lines
    assert text.count(common) == 1 and f"      codex sent: {common}  [3 scenarios]" in lines
    assert "  same     fine" in lines
    assert lines[-1] == "behaviour: 1 same, 3 differ, 1 fail"
    data = behaviour.behaviour_json(report)
    assert data["summary"] == {"fails": 1, "differs": 3, "same": 1}
    assert data["common"] == [{"part": "in", "line": common, "scenarios": 3}]
    assert [s["verdict"] for s in data["scenarios"]] == ["differs", "differs", "differs", "fails", "same"]


# -- the command line --------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv, message",
    [
        (["0.1.0", "0.171.0", "--behaviour"], f"OLD must be {CODEX_VERSION}"),
        ([CODEX_VERSION, "fixtures/schema", "--behaviour"], "NEW a codex version"),
        ([CODEX_VERSION, "0.171.0", "--scenario", "plain"], "--scenario needs --behaviour"),
    ],
)
def test_behaviour_cli_usage_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as info:
        _schema_drift().main(argv, out=io.StringIO())
    assert info.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.live
def test_behaviour_live_pinned_binary_matches_its_own_goldens(capsys):
    codex = live_codex()
    if isinstance(codex, str) or codex.version != CODEX_VERSION:
        pytest.skip(f"needs the pinned codex {CODEX_VERSION}: {codex}")
    out = io.StringIO()
    names = ["plain", "cmd_ok", "patch_auto", "two_threads"]
    argv: List[str] = [CODEX_VERSION, CODEX_VERSION, "--behaviour"] + [a for n in names for a in ("--scenario", n)]
    code = _schema_drift().main(argv, out=out)
    text = out.getvalue()
    assert code == 0, text
    assert "summary: 0 breaking, 0 additive, 0 outside the surface" in text
    assert f"behaviour: {len(names)} same, 0 differ, 0 fail" in text, text
    with pytest.raises(SystemExit):
        _schema_drift().main([CODEX_VERSION, CODEX_VERSION, "--behaviour", "--scenario", "nope"], out=io.StringIO())
    assert "unknown scenario(s): nope" in capsys.readouterr().err
