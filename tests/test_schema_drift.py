"""tools/schema_drift.py: classification on synthetic mutations of the pinned bundle,
canonicalisation, the derived surface, the command line, and (live) the real
0.149.1 → 0.171.0 comparison.

Each mutation test edits a copy of ``fixtures/schema/<pinned>/experimental``
and asserts the exact set of (verdict, definition, path, kind, value) it
produces; docs changes are left out unless a test is about them.
"""

from __future__ import annotations

import copy
import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
from typing import Any, Callable, Dict, List, Set, Tuple

import pytest

from codexmini import CODEX_VERSION, OLDEST_CODEX_VERSION
from codexmini import _mapping as mapping
from codexmini import _permission as permission

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOL = os.path.join(ROOT, "tools", "schema_drift.py")


def _tool() -> Any:
    """``tools/`` is not a package: load the script as a module."""
    name = "_codexmini_tools_schema_drift"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, TOOL)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        sys.modules[name] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)  # type: ignore[union-attr]
    return sys.modules[name]


schema_drift = _tool()  # the command line; loading it puts the repository root on sys.path
drift = importlib.import_module("tools.drift")  # the package that does the work

PINNED_DIR = os.path.join(ROOT, "fixtures", "schema", CODEX_VERSION, "experimental")
PINNED = os.path.join(PINNED_DIR, drift.BUNDLE_FILE)

Row = Tuple[str, str, str, str, Any]  # verdict, definition, path, kind, value


@pytest.fixture(scope="module")
def raw() -> Dict[str, Any]:
    with open(PINNED, encoding="utf-8") as fh:
        return json.load(fh)


@pytest.fixture(scope="module")
def pinned() -> Any:
    return drift.Bundle.load(PINNED, CODEX_VERSION)


@pytest.fixture(scope="module")
def surface(pinned: Any) -> Any:
    return drift.derive_surface(pinned)


def definition(root: Dict[str, Any], name: str) -> Dict[str, Any]:
    """A raw definition of a bundle, v1 or v2."""
    defs = root["definitions"]
    return defs[name] if name in defs and name != "v2" else defs["v2"][name]


def branch(union_or_def: Dict[str, Any], key: str, value: str) -> Dict[str, Any]:
    """The ``oneOf`` branch whose ``properties[key].enum`` is ``[value]``."""
    for candidate in union_or_def["oneOf"]:
        if candidate.get("properties", {}).get(key, {}).get("enum") == [value]:
            return candidate
    raise KeyError(value)


def rows(changes: List[Any], docs: bool = False) -> Set[Row]:
    return {(c.verdict, c.definition, c.where, c.kind, c.value) for c in changes if docs or c.verdict != drift.DOCS}


@pytest.fixture
def mutated(raw: Dict[str, Any], pinned: Any, surface: Any) -> Callable[[Callable[[Dict[str, Any]], None]], List[Any]]:
    """Apply an edit to a copy of the pinned bundle; the classified changes."""

    def run(edit: Callable[[Dict[str, Any]], None]) -> List[Any]:
        root = copy.deepcopy(raw)
        edit(root)
        return drift.classify_changes(pinned, drift.Bundle(root, "mutated"), surface)

    return run


def write_bundle(directory: Any, root: Dict[str, Any]) -> str:
    """A copy of the pinned fixture directory with ``root`` as its bundle."""
    shutil.copytree(PINNED_DIR, str(directory))
    with open(os.path.join(str(directory), drift.BUNDLE_FILE), "w", encoding="utf-8") as fh:
        json.dump(root, fh)
    return str(directory)


def run_main(*argv: str) -> Tuple[int, str]:
    out = io.StringIO()
    code = schema_drift.main(list(argv), out=out)
    return code, out.getvalue()


# ---------------------------------------------------------------------------
# Breaking


def test_schema_drift_removed_notification_field_codexmini_reads_is_breaking(mutated):
    def edit(root):
        d = definition(root, "AgentMessageDeltaNotification")
        del d["properties"]["delta"]
        d["required"].remove("delta")

    changes = mutated(edit)
    assert rows(changes) == {(drift.BREAKING, "AgentMessageDeltaNotification", "$.delta", drift.FIELD_REMOVED, "delta")}
    assert any(s.startswith("recorded:") for s in changes[0].sources)
    assert "reads" in changes[0].why


@pytest.mark.parametrize(
    "name, value, source",
    [
        ("SandboxMode", "workspace-write", "recorded:"),  # a thread/start value the recordings show
        ("SandboxMode", "danger-full-access", "code:permission.SANDBOX_MODES"),  # known only from the code table
        ("CommandExecutionApprovalDecision", "acceptForSession", "code:permission.build_answer"),  # a oneOf branch
    ],
    ids=["recorded", "code-table", "answer"],
)
def test_schema_drift_removed_enum_value_codexmini_sends_is_breaking(mutated, name, value, source):
    def edit(root):
        d = definition(root, name)
        if "enum" in d:
            d["enum"].remove(value)
        else:
            d["oneOf"] = [b for b in d["oneOf"] if b.get("enum") != [value]]

    changes = mutated(edit)
    assert rows(changes) == {(drift.BREAKING, name, "$", drift.ENUM_VALUE_REMOVED, value)}
    assert any(s.startswith(source) for s in changes[0].sources), changes[0].sources


def test_schema_drift_new_required_field_in_a_request_codexmini_sends_is_breaking(mutated):
    def edit(root):
        d = definition(root, "TurnStartParams")
        d["properties"]["mustSay"] = {"type": "string"}
        d["required"].append("mustSay")

    changes = mutated(edit)
    assert rows(changes) == {(drift.BREAKING, "TurnStartParams", "$.mustSay", drift.REQUIRED_FIELD_ADDED, "mustSay")}
    assert changes[0].why == "codexmini sends this object without it"


def test_schema_drift_new_required_field_in_an_answer_codexmini_sends_is_breaking(mutated):
    def edit(root):
        d = definition(root, "CommandExecutionRequestApprovalResponse")
        d["properties"]["reason"] = {"type": "string"}
        d["required"].append("reason")

    assert rows(mutated(edit)) == {
        (drift.BREAKING, "CommandExecutionRequestApprovalResponse", "$.reason", drift.REQUIRED_FIELD_ADDED, "reason")
    }


def test_schema_drift_field_becoming_required_where_codexmini_sends_is_breaking(mutated):
    # codexmini sends thread/start with cwd only when it has one.
    def edit(root):
        definition(root, "ThreadStartParams").setdefault("required", []).append("cwd")

    changes = mutated(edit)
    assert rows(changes) == {(drift.BREAKING, "ThreadStartParams", "$.cwd", drift.FIELD_NOW_REQUIRED, "cwd")}
    assert changes[0].why == "codexmini sends this object; it must now always carry the field"


def test_schema_drift_new_required_field_elsewhere_is_not_breaking(mutated):
    def edit(root):
        for name in ("AgentMessageDeltaNotification", "FuzzyFileSearchParams"):
            d = definition(root, name)
            d["properties"]["extra"] = {"type": "string"}
            d["required"].append("extra")

    assert rows(mutated(edit)) == {
        # codexmini reads this one: a new guaranteed field is news, not breakage.
        (drift.ADDITIVE, "AgentMessageDeltaNotification", "$.extra", drift.REQUIRED_FIELD_ADDED, "extra"),
        # and never touches this one.
        (drift.OUTSIDE, "FuzzyFileSearchParams", "$.extra", drift.REQUIRED_FIELD_ADDED, "extra"),
    }


@pytest.mark.parametrize(
    "edit, expected",
    [
        (
            lambda root: definition(root, "ThreadStartParams")["properties"]["cwd"].update(type="string"),
            ("ThreadStartParams", "$.cwd", drift.NULL_REMOVED, None),
        ),
        (
            lambda root: definition(root, "ThreadStartParams")["properties"]["model"].update(enum=["gpt-5", None]),
            ("ThreadStartParams", "$.model", drift.TYPE_NARROWED, None),
        ),
        (
            lambda root: definition(root, "UserInput").update(
                oneOf=[b for b in definition(root, "UserInput")["oneOf"] if b["properties"]["type"]["enum"] != ["text"]]
            ),
            ("UserInput", "$<type=text>", drift.VARIANT_REMOVED, "type=text"),
        ),
        (
            lambda root: definition(root, "InitializeCapabilities")["properties"]["experimentalApi"].update(
                type="integer"
            ),
            ("InitializeCapabilities", "$.experimentalApi", drift.TYPE_CHANGED, None),
        ),
    ],
    ids=["null-removed", "string-to-enum", "union-branch-removed", "type-replaced"],
)
def test_schema_drift_narrowed_type_where_codexmini_sends_is_breaking(mutated, edit, expected):
    assert rows(mutated(edit)) == {(drift.BREAKING, *expected)}


def test_schema_drift_narrowed_type_where_codexmini_only_reads_is_additive(mutated):
    # A stricter guarantee about something codexmini reads breaks nothing.
    def edit(root):
        agent_message = branch(definition(root, "ThreadItem"), "type", "agentMessage")
        agent_message["properties"]["phase"] = {"$ref": "#/definitions/v2/MessagePhase"}

    assert rows(mutated(edit)) == {
        (drift.ADDITIVE, "ThreadItem", "$<type=agentMessage>.phase", drift.NULL_REMOVED, None)
    }


def test_schema_drift_read_field_becoming_optional_or_nullable_is_breaking(mutated):
    def edit(root):
        d = definition(root, "AgentMessageDeltaNotification")
        d["required"].remove("delta")
        d["properties"]["itemId"]["type"] = ["string", "null"]

    assert rows(mutated(edit)) == {
        (drift.BREAKING, "AgentMessageDeltaNotification", "$.delta", drift.FIELD_NOW_OPTIONAL, "delta"),
        (drift.BREAKING, "AgentMessageDeltaNotification", "$.itemId", drift.NULL_ADDED, None),
    }


def test_schema_drift_removed_or_renamed_method_is_breaking(mutated):
    def edit(root):
        union = root["definitions"]["ServerNotification"]
        union["oneOf"].remove(branch(union, "method", "item/completed"))
        branch(root["definitions"]["ClientRequest"], "method", "turn/start")["properties"]["method"]["enum"] = [
            "turn/begin"
        ]

    changes = mutated(edit)
    assert rows(changes) == {
        (
            drift.BREAKING,
            "ServerNotification",
            "$<method=item/completed>",
            drift.METHOD_REMOVED,
            "method=item/completed",
        ),
        (drift.BREAKING, "ClientRequest", "$<method=turn/start>", drift.METHOD_REMOVED, "method=turn/start"),
        (drift.ADDITIVE, "ClientRequest", "$<method=turn/begin>", drift.METHOD_ADDED, "method=turn/begin"),
    }
    renamed = next(c for c in changes if c.value == "method=turn/start")
    assert "renamed to <method=turn/begin>?" in renamed.detail


def test_schema_drift_removed_server_request_codexmini_answers_is_breaking(mutated):
    def edit(root):
        union = root["definitions"]["ServerRequest"]
        union["oneOf"].remove(branch(union, "method", "item/tool/call"))

    changes = mutated(edit)
    assert rows(changes) == {
        (drift.BREAKING, "ServerRequest", "$<method=item/tool/call>", drift.METHOD_REMOVED, "method=item/tool/call")
    }
    assert changes[0].why == "codexmini answers it"


def test_schema_drift_removed_tool_item_field_is_breaking(mutated):
    # mapping.TOOL_ITEMS reads fileChange.changes[].diff; derived by running it.
    def edit(root):
        del definition(root, "FileUpdateChange")["properties"]["diff"]

    changes = mutated(edit)
    assert rows(changes) == {(drift.BREAKING, "FileUpdateChange", "$.diff", drift.FIELD_REMOVED, "diff")}


# ---------------------------------------------------------------------------
# Additive and outside


def test_schema_drift_new_optional_field_is_additive(mutated):
    def edit(root):
        definition(root, "TurnStartParams")["properties"]["newKnob"] = {"type": ["boolean", "null"]}

    assert rows(mutated(edit)) == {
        (drift.ADDITIVE, "TurnStartParams", "$.newKnob", drift.OPTIONAL_FIELD_ADDED, "newKnob")
    }


def test_schema_drift_new_method_is_additive(mutated):
    def edit(root):
        root["definitions"]["ServerNotification"]["oneOf"].append(
            {
                "properties": {
                    "method": {
                        "enum": ["thing/happened"],
                        "title": "ThingHappenedNotificationMethod",
                        "type": "string",
                    },
                    "params": {"$ref": "#/definitions/v2/ThingHappenedNotification"},
                },
                "required": ["method", "params"],
                "title": "ThingHappenedNotification",
                "type": "object",
            }
        )
        root["definitions"]["v2"]["ThingHappenedNotification"] = {
            "properties": {"threadId": {"type": "string"}},
            "required": ["threadId"],
            "type": "object",
        }

    assert rows(mutated(edit)) == {
        (drift.ADDITIVE, "ServerNotification", "$<method=thing/happened>", drift.METHOD_ADDED, "method=thing/happened"),
        # Its params are part of a method codexmini does not (yet) read.
        (drift.OUTSIDE, "ThingHappenedNotification", "$", drift.DEFINITION_ADDED, None),
    }


def test_schema_drift_new_definition_on_the_surface_is_additive(mutated):
    def edit(root):
        root["definitions"]["v2"]["TurnMood"] = {"enum": ["calm", "busy"], "type": "string"}
        definition(root, "Turn")["properties"]["mood"] = {"$ref": "#/definitions/v2/TurnMood"}

    changes = mutated(edit)
    assert rows(changes) == {
        (drift.ADDITIVE, "Turn", "$.mood", drift.OPTIONAL_FIELD_ADDED, "mood"),
        (drift.ADDITIVE, "TurnMood", "$", drift.DEFINITION_ADDED, None),
    }
    assert next(c for c in changes if c.definition == "TurnMood").why == "referenced from Turn $.mood"


def test_schema_drift_new_field_of_an_unused_union_branch_is_outside(mutated):
    # codexmini reads ThreadItem, but never a `collabAgentToolCall` one.
    def edit(root):
        collab = branch(definition(root, "ThreadItem"), "type", "collabAgentToolCall")
        collab["properties"]["newThing"] = {"type": "string"}

    assert rows(mutated(edit)) == {
        (drift.OUTSIDE, "ThreadItem", "$<type=collabAgentToolCall>.newThing", drift.OPTIONAL_FIELD_ADDED, "newThing")
    }


def test_schema_drift_new_enum_value_is_additive(mutated):
    def edit(root):
        definition(root, "SandboxMode")["enum"].append("sandbox-lite")

    assert rows(mutated(edit)) == {(drift.ADDITIVE, "SandboxMode", "$", drift.ENUM_VALUE_ADDED, "sandbox-lite")}


def test_schema_drift_widened_type_where_codexmini_sends_is_additive(mutated):
    def edit(root):
        definition(root, "TurnStartParams")["properties"]["threadId"]["type"] = ["string", "null"]

    assert rows(mutated(edit)) == {(drift.ADDITIVE, "TurnStartParams", "$.threadId", drift.NULL_ADDED, None)}


def test_schema_drift_change_to_a_definition_codexmini_never_touches_is_outside(mutated, surface):
    assert not surface.touches("FuzzyFileSearchParams")

    def edit(root):
        d = definition(root, "FuzzyFileSearchParams")
        del d["properties"]["query"]
        d["required"].remove("query")
        d["properties"]["roots"]["type"] = "string"

    assert rows(mutated(edit)) == {
        (drift.OUTSIDE, "FuzzyFileSearchParams", "$.query", drift.FIELD_REMOVED, "query"),
        (drift.OUTSIDE, "FuzzyFileSearchParams", "$.roots", drift.TYPE_CHANGED, None),
    }


def test_schema_drift_unused_field_of_a_used_definition_is_outside(mutated):
    # codexmini sends turn/start but never its `personality`.
    def edit(root):
        del definition(root, "TurnStartParams")["properties"]["personality"]

    changes = mutated(edit)
    assert rows(changes) == {(drift.OUTSIDE, "TurnStartParams", "$.personality", drift.FIELD_REMOVED, "personality")}
    assert changes[0].why == "codexmini does not use it"


# ---------------------------------------------------------------------------
# Canonicalisation


def test_schema_drift_identical_bundles_have_no_changes(raw, pinned, surface):
    assert drift.classify_changes(pinned, drift.Bundle(copy.deepcopy(raw)), surface) == []


def test_schema_drift_canonical_form_ignores_layout(mutated):
    def edit(root):
        # The v1 ClientInfo moves to v2 (its one $ref follows), a nullable
        # type is spelled as anyOf, and a described $ref loses its allOf.
        v1 = root["definitions"]
        v1["v2"]["ClientInfo"] = v1.pop("ClientInfo")
        definition(root, "InitializeParams")["properties"]["clientInfo"]["$ref"] = "#/definitions/v2/ClientInfo"
        definition(root, "ThreadStartParams")["properties"]["cwd"] = {"anyOf": [{"type": "string"}, {"type": "null"}]}
        home = definition(root, "InitializeResponse")["properties"]["codexHome"]
        home["$ref"] = home.pop("allOf")[0]["$ref"]

    assert rows(mutated(edit)) == set()


def test_schema_drift_docs_changes_are_kept_apart(mutated):
    def edit(root):
        definition(root, "TurnStartParams")["properties"]["cwd"]["description"] = "Somewhere else."

    changes = mutated(edit)
    assert rows(changes) == set()
    assert rows(changes, docs=True) == {(drift.DOCS, "TurnStartParams", "$.cwd", drift.DOCS_CHANGED, None)}


def test_schema_drift_ref_renamed_to_the_same_shape_is_additive(mutated):
    def edit(root):
        v2 = root["definitions"]["v2"]
        v2["SandboxLevel"] = copy.deepcopy(v2["SandboxMode"])
        definition(root, "ThreadStartParams")["properties"]["sandbox"]["anyOf"][0]["$ref"] = (
            "#/definitions/v2/SandboxLevel"
        )

    changes = rows(mutated(edit))
    assert (drift.ADDITIVE, "ThreadStartParams", "$.sandbox", drift.REF_RENAMED, None) in changes
    assert not [c for c in changes if c[0] == drift.BREAKING]


# ---------------------------------------------------------------------------
# The surface


def test_schema_drift_surface_holds_every_table_row(surface):
    methods = {(use.union, key.split(":", 1)[1]) for key, use in surface.methods.items()}
    assert {("ServerNotification", m) for m in mapping.NOTIFICATIONS} <= methods
    # Every row the pinned schema has (currentTime/read is 0.149.1's only).
    pinned = set(drift.Bundle.load(PINNED, CODEX_VERSION).defs["ServerRequest"]["variants"])
    assert {("ServerRequest", m) for m in permission.SERVER_REQUESTS if f"method={m}" in pinned} <= methods
    assert "currentTime/read" in permission.SERVER_REQUESTS and "method=currentTime/read" not in pinned
    assert {
        ("ClientRequest", "turn/start"),
        ("ClientRequest", "thread/start"),
        ("ClientNotification", "initialized"),
    } <= methods
    # turn/steer and turn/interrupt are found in the code itself (ast).
    for method in ("turn/steer", "turn/interrupt"):
        assert any(s.startswith("ast:_threads.py:") for s in surface.methods[f"ClientRequest:{method}"].sources)
    # Every tool item type is a read ThreadItem variant, with a field the code reads.
    for item_type in mapping.TOOL_ITEMS:
        assert surface.at("ThreadItem", (f"<type={item_type}>",)) is not None, item_type
        assert any(
            f"code:steps.StepFold+mapping.TOOL_ITEMS[{item_type}]" in use.sources
            for use in surface.entries["ThreadItem"].values()
        ), item_type


def test_schema_drift_surface_values_come_from_recordings_code_and_tables(surface):
    sandbox = surface.at("SandboxMode", ())
    assert set(map(json.loads, sandbox.values)) == set(permission.SANDBOX_MODES)
    decision = surface.at("CommandExecutionApprovalDecision", ())
    assert set(map(json.loads, decision.values)) >= {"accept", "acceptForSession", "decline", "cancel"}
    # Roles: a request codexmini sends, a notification it reads, an answer it sends.
    assert surface.at("TurnStartParams", (".input",)).roles == {drift.SENDS}
    assert surface.at("AgentMessageDeltaNotification", (".delta",)).roles == {drift.READS}
    assert drift.SENDS in surface.at("CommandExecutionRequestApprovalResponse", (".decision",)).roles


def test_schema_drift_cli_surface_lists_methods_and_paths():
    code, text = run_main("--surface")
    assert code == 0
    for needle in (
        "turn/start",
        "item/completed",
        "item/commandExecution/requestApproval",
        "TurnStartParams",
        "$.input[]",
    ):
        assert needle in text, needle
    code, text = run_main("--surface", "--json")
    data = json.loads(text)
    by_method = {m["method"]: m for m in data["methods"]}
    assert by_method["turn/start"]["role"] == "sends request"
    assert by_method["item/completed"]["role"] == "reads notification"
    assert by_method["item/commandExecution/requestApproval"]["role"] == "answers server request"
    assert any(p["path"] == "$.delta" for p in data["definitions"]["AgentMessageDeltaNotification"])


# ---------------------------------------------------------------------------
# Command line


def test_schema_drift_cli_identical_exits_0(tmp_path, raw):
    new = write_bundle(tmp_path / "new", raw)
    code, text = run_main(PINNED_DIR, new)
    assert code == 0
    assert "summary: 0 breaking, 0 additive, 0 outside the surface" in text
    code, text = run_main(PINNED_DIR, new, "--json")
    data = json.loads(text)
    assert (code, data["exit"], data["changes"]) == (0, 0, [])
    assert data["summary"] == {"breaking": 0, "additive": 0, "outside": 0, "docs": 0}


def test_schema_drift_cli_breaking_exits_1_and_json_matches(tmp_path, raw):
    root = copy.deepcopy(raw)
    definition(root, "SandboxMode")["enum"].remove("workspace-write")
    definition(root, "TurnStartParams")["properties"]["newKnob"] = {"type": "boolean"}
    new = write_bundle(tmp_path / "new", root)
    code, text = run_main(PINNED_DIR, new, "--json")
    data = json.loads(text)
    assert code == data["exit"] == 1
    assert data["summary"] == {"breaking": 1, "additive": 1, "outside": 0, "docs": 0}
    first = data["changes"][0]
    assert {k: first[k] for k in ("verdict", "definition", "path", "kind", "value")} == {
        "verdict": "breaking",
        "definition": "SandboxMode",
        "path": "$",
        "kind": "enum-value-removed",
        "value": "workspace-write",
    }
    assert first["sources"] and first["why"]
    code, text = run_main(PINNED_DIR, new)
    assert code == 1
    assert 'SandboxMode $: enum value "workspace-write" removed' in text
    assert "TurnStartParams $.newKnob: new optional field" in text


def test_schema_drift_cli_versions_come_from_fixtures_or_the_cache(tmp_path, raw):
    # A warm cache: a generated bundle already in <cache>/<version>/schema/<flavor>/.
    write_bundle(tmp_path / "cache" / "9.9.9" / "schema" / "experimental", raw)
    code, text = run_main(CODEX_VERSION, "9.9.9", "--cache", str(tmp_path / "cache"))
    assert code == 0
    assert "(checked-in fixtures)" in text and "(npm cache)" in text


def test_schema_drift_cli_usage_errors_exit_2(tmp_path, capsys):
    assert run_main("not-a-version", PINNED_DIR)[0] == 2
    assert run_main(PINNED_DIR, str(tmp_path))[0] == 2  # a directory without a bundle
    assert "neither an existing path nor a codex version" in capsys.readouterr().err


def test_schema_drift_cli_without_npm_exits_3(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    assert run_main(CODEX_VERSION, "9.9.8", "--cache", str(tmp_path / "cache"))[0] == 3
    assert "npm is not on PATH" in capsys.readouterr().err


def test_schema_drift_script_runs_standalone():
    done = subprocess.run(
        [sys.executable, TOOL, "--surface"], capture_output=True, cwd=os.path.dirname(ROOT), timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr.decode()
    assert b"turn/start" in done.stdout


# ---------------------------------------------------------------------------
# The real comparison: the two ends of the supported range, both checked in


def test_schema_drift_oldest_to_the_pin():
    old = drift.locate(OLDEST_CODEX_VERSION, "experimental")
    new = drift.locate(CODEX_VERSION, "experimental")
    assert old.origin == new.origin == "checked-in fixtures"
    report = drift.compare(old, new, version=OLDEST_CODEX_VERSION)  # the surface of the oldest's recordings
    summary = report.summary()
    assert summary["additive"] > 0 and summary["outside"] > 0
    found = {(c.definition, c.where): c.verdict for c in report.changes}
    # Facts of the real release pair: thread/rollback went away, and codexmini
    # sends it (Thread.rollback on 0.149.1's legacy threads; on 0.171.0's
    # paginated ones it sends thread/revert instead: fixtures rollback); new
    # notifications arrived; the experimental currentTime/read server request
    # that codexmini answers went away (the row stays: the oldest supported
    # codex still asks it).
    assert found[("ClientRequest", "$<method=thread/rollback>")] == drift.BREAKING
    assert found[("ServerNotification", "$<method=thread/section/changed>")] == drift.ADDITIVE
    assert found[("ServerRequest", "$<method=currentTime/read>")] == drift.BREAKING
    assert report.exit_code == 1
    text = drift.format_report(report)
    assert text.splitlines()[0] == f"codex schema drift: {OLDEST_CODEX_VERSION} → {CODEX_VERSION} (experimental flavor)"
