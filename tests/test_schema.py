"""The schema bundle (``codexmini._schema``) with the standard-library engine: what the smoke run uses.

The conformance suite runs the same module with jsonschema as its engine
(``conformance/test_validator.py``); here the stdlib engine must report the
same problems, at the same paths, for the recorded transcripts and for broken
frames.  The corners the real bundles never reach (``patternProperties``,
tuple ``items``, boolean ``$ref`` targets, a request whose response cannot
be derived) use small synthetic bundles.  ``generate_schema`` runs fake
binaries (shell scripts) for its failure modes and, in the live suite, the
pinned codex.
"""

from __future__ import annotations

import copy
import json
import os
import stat

import pytest
from support.recorded_frames import FRAME_FILES, recorded

from codexmini import CODEX_VERSION, ConfigError, _schema
from codexmini._jsonschema import SchemaError
from codexmini._schema import (
    BUNDLE_FILE,
    FrameValidator,
    KnownField,
    Problem,
    SchemaBundle,
    SchemaGenerationFailed,
    bundle_for_binary,
    generate_schema,
    validate_transcript,
)
from conformance import recorded as real_frames
from conformance import schema as reference
from conformance.versions import live_codex

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE_DIR = os.path.join(ROOT, "fixtures", "schema", CODEX_VERSION)


def stdlib_bundle(flavor: str = "experimental") -> SchemaBundle:
    return SchemaBundle.from_directory(os.path.join(FIXTURE_DIR, flavor), flavor, CODEX_VERSION)


STDLIB = {flavor: stdlib_bundle(flavor) for flavor in _schema.FLAVORS}


def where(problems):
    """What both engines must agree on: everything but the message."""
    return [(p.direction, p.kind, p.method, p.id, p.path) for p in problems]


# ---------------------------------------------------------------------------
# The stdlib engine reports what jsonschema reports


@pytest.mark.parametrize("flavor", _schema.FLAVORS)
def test_frame_validator_stdlib_engine_agrees_on_every_transcript(flavor):
    assert FRAME_FILES
    checked = 0
    for name, transcript in recorded():
        ours = validate_transcript(transcript, STDLIB[flavor], allow_undeclared=reference.KNOWN_UNDECLARED)
        theirs = reference.validate_transcript(transcript, reference.SchemaBundle.load(CODEX_VERSION, flavor))
        assert where(ours) == where(theirs), name
        checked += len(transcript)
    assert checked > 500


def broken_frames():
    """(what, frames): recorded frames with one thing broken (conformance/test_validator.py's negatives)."""
    no_delta = copy.deepcopy(real_frames.AGENT_MESSAGE_DELTA)
    del no_delta["params"]["delta"]
    bad_status = copy.deepcopy(real_frames.THREAD_START_RESULT)
    bad_status["result"]["thread"]["status"] = {"type": "sleeping"}
    undeclared = copy.deepcopy(real_frames.THREAD_STARTED)
    undeclared["params"]["thread"]["mood"] = "sunny"
    return [
        ("missing-required", [("in", no_delta)]),
        (
            "wrong-enum",
            [("in", real_frames.COMMAND_APPROVAL), ("out", {"id": 0, "result": {"decision": "yes-please"}})],
        ),
        ("wrong-union-branch", [("out", real_frames.THREAD_START), ("in", bad_status)]),
        ("undeclared", [("in", undeclared)]),
        ("emitted-at-ms-type", [("in", dict(real_frames.AGENT_MESSAGE_DELTA, emittedAtMs="soon"))]),
        ("float-id", [("out", dict(real_frames.THREAD_START, id=1.5))]),
        ("jsonrpc-member", [("out", dict(real_frames.INITIALIZE, jsonrpc="2.0"))]),
        ("unknown-method", [("out", {"id": 100, "method": "foo/bar", "params": {}})]),
        (
            "wrong-shape",
            [("out", real_frames.TURN_START), ("in", {"id": 3, "result": real_frames.THREAD_START_RESULT["result"]})],
        ),
    ]


@pytest.mark.parametrize("frames", [pytest.param(frames, id=what) for what, frames in broken_frames()])
def test_frame_validator_stdlib_engine_finds_what_jsonschema_finds(frames):
    ours = validate_transcript(frames, STDLIB["experimental"])
    theirs = reference.validate_transcript(frames, reference.SchemaBundle.load())
    assert where(ours) == where(theirs) and ours


def test_frame_validator_stdlib_messages_are_readable():
    frame = copy.deepcopy(real_frames.AGENT_MESSAGE_DELTA)
    del frame["params"]["delta"]
    frame["emittedAtMs"] = "soon"
    problems = FrameValidator(STDLIB["experimental"]).check("in", frame)
    assert [(p.path, p.message) for p in problems] == [
        ("$.params", "'delta' is a required property"),
        ("$.emittedAtMs", "'soon' is not of type 'integer'"),
    ]
    bad_status = copy.deepcopy(real_frames.THREAD_START_RESULT)
    bad_status["result"]["thread"]["status"] = {"type": "sleeping"}
    (message,) = STDLIB["experimental"].validate(
        bad_status["result"], "#/definitions/v2/ThreadStartResponse", "$.result"
    )
    assert message.startswith(
        "$.result.thread.status: {'type': 'sleeping'} is not valid under any of the given schemas"
    )
    assert "(closest branch: $.result.thread.status.type: 'sleeping' is not one of" in message


# ---------------------------------------------------------------------------
# Loading


def test_schema_bundle_from_directory_checks_every_definition(tmp_path):
    assert repr(STDLIB["stable"]) == f"SchemaBundle('{CODEX_VERSION}', 'stable')"
    with open(os.path.join(FIXTURE_DIR, "stable", BUNDLE_FILE), encoding="utf-8") as fh:
        root = json.load(fh)
    root["definitions"]["v2"]["TokenUsageBreakdown"]["properties"]["totalTokens"]["multipleOf"] = 5
    (tmp_path / BUNDLE_FILE).write_text(json.dumps(root))
    with pytest.raises(SchemaError, match=r"unsupported JSON Schema keyword\(s\) \['multipleOf'\]"):
        SchemaBundle.from_directory(str(tmp_path), "stable")
    # jsonschema knows `multipleOf`: the same directory loads with that engine.
    bundle = SchemaBundle.from_directory(str(tmp_path), "stable", engine=reference.JSONSCHEMA)
    assert not bundle.is_valid(7, "#/definitions/v2/TokenUsageBreakdown/properties/totalTokens")
    assert bundle.is_valid(10, "#/definitions/v2/TokenUsageBreakdown/properties/totalTokens")


def test_schema_bundle_from_directory_says_what_writes_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="generate-json-schema"):
        SchemaBundle.from_directory(str(tmp_path))


def test_schema_bundle_default_engine_is_the_stdlib_one():
    assert isinstance(STDLIB["stable"].engine, _schema.StdlibEngine)
    assert isinstance(reference.SchemaBundle.load().engine, _schema.JsonschemaEngine)


# ---------------------------------------------------------------------------
# Lookups and the strict walk, on a synthetic bundle

ENVELOPE = {"type": "object", "properties": {"id": {}, "method": {"type": "string"}, "params": {}}}


def synthetic(**definitions) -> SchemaBundle:
    root = {
        "definitions": {
            "ClientRequest": {
                "oneOf": [
                    {
                        "type": "object",
                        "required": ["method"],
                        "properties": {"method": {"enum": ["free/form"]}, "params": {"type": "object"}},
                    }
                ]
            },
            "ServerRequest": {"oneOf": []},
            "ServerNotification": {"oneOf": []},
            "ClientNotification": {"oneOf": []},
            "JSONRPCRequest": ENVELOPE,
            "JSONRPCResponse": {"type": "object", "properties": {"id": {}, "result": {}}},
            "yes": True,
            "no": False,
            **definitions,
        }
    }
    return SchemaBundle(root, "synthetic", "test")


def test_schema_bundle_lookups_fail_with_key_errors():
    bundle = synthetic()
    with pytest.raises(KeyError, match="no definition 'Nope'"):
        bundle.definition_pointer("Nope")
    with pytest.raises(KeyError, match="is not a ClientRequest method"):
        bundle.params_definition("ClientRequest", "no/such")
    with pytest.raises(KeyError, match="add an override"):
        bundle.response_name("free/form")  # params without a $ref: nothing to derive from
    with pytest.raises(KeyError, match="only local pointers"):
        bundle.resolve("other.json#/definitions/yes")
    assert bundle.definition_pointers()[:2] == ["#/definitions/ClientRequest", "#/definitions/ServerRequest"]


def test_frame_validator_reports_a_result_it_cannot_route():
    problems = validate_transcript(
        [("out", {"id": 1, "method": "free/form", "params": {}}), ("in", {"id": 1, "result": {}})], synthetic()
    )
    assert [(p.kind, p.path, p.message) for p in problems] == [
        (
            "response",
            "$.result",
            "cannot check the result: 'free/form' has no params definition to derive "
            "its response from; add an override",
        )
    ]


def test_schema_bundle_undeclared_follows_pattern_properties_and_tuple_items():
    bundle = synthetic(
        Map={"patternProperties": {"^x-": {"type": "object", "properties": {"a": {}}}}},
        Tuple={
            "type": "array",
            "items": [{"type": "object", "properties": {"a": {}}}],
            "additionalItems": {"type": "object", "properties": {"b": {}}},
        },
        Mixed={"allOf": [{"items": {"type": "object", "properties": {"c": {}}}}, {"type": "array"}]},
    )
    assert bundle.undeclared({"x-1": {"a": 1, "z": 2}, "y": 1}, "#/definitions/Map") == ['$["x-1"].z', "$.y"]
    assert bundle.undeclared([{"a": 1, "z": 1}, {"b": 1, "y": 2}, 3], "#/definitions/Tuple") == ["$[0].z", "$[1].y"]
    # The allOf branch without items declares nothing about the items, the other does.
    assert bundle.undeclared([{"c": 1, "d": 2}], "#/definitions/Mixed") == ["$[0].d"]
    assert bundle.undeclared(5, "#/definitions/Map") == []
    # The same schema twice is walked once (no duplicate reports).
    assert bundle.undeclared({"q": 1}, ["#/definitions/Map", "#/definitions/Map"]) == ["$.q"]


def test_schema_bundle_undeclared_keeps_only_branches_the_instance_matches():
    bundle = synthetic(
        Ref={"$ref": "#/definitions/yes"},
        Union={
            "anyOf": [
                {"$ref": "#/definitions/no"},
                {"type": "object", "properties": {"a": {}}},
                {"type": "array", "items": {"type": "object", "properties": {"b": {}}}},
            ]
        },
    )
    # A $ref to a boolean schema declares nothing: every key is undeclared.
    assert bundle.undeclared({"k": 1}, "#/definitions/Ref") == ["$.k"]
    # `false` never matches; an array rules out the object branch without validation.
    assert bundle.undeclared([{"b": 1, "c": 2}], "#/definitions/Union") == ["$[0].c"]
    assert bundle.undeclared({"a": 1, "c": 2}, "#/definitions/Union") == ["$.c"]


# ---------------------------------------------------------------------------
# Frames: the odd cases


def test_frame_validator_routes_unhashable_ids_and_refuses_bad_directions():
    validator = FrameValidator(STDLIB["experimental"])
    validator.tap("out", dict(real_frames.INITIALIZE, id=[1]))
    validator.check("in", dict(real_frames.INITIALIZE_RESULT, id=[1]))
    assert ("in", "response", "initialize") in validator.seen
    assert {p.path for p in validator.problems} == {"$.id"}  # an array is no RequestId, but it was remembered
    with pytest.raises(ValueError, match="direction must be"):
        validator.check("sideways", real_frames.INITIALIZE)


def test_problem_str_survives_a_frame_that_is_not_json():
    problem = Problem("in", "frame", None, None, "$", "not a JSON object (set)", {1, 2})
    assert str(problem).endswith("frame: {1, 2}")


def test_known_field_allow_list_may_be_a_plain_collection():
    frame = copy.deepcopy(real_frames.THREAD_STARTED)
    frame["params"]["thread"]["mood"] = "sunny"
    allow = [KnownField("notification", "thread/started", "$.params.thread.mood")]
    assert validate_transcript([("in", frame)], STDLIB["experimental"], allow_undeclared=allow) == []
    assert len(validate_transcript([("in", frame)], STDLIB["experimental"])) == 1


# ---------------------------------------------------------------------------
# Running the generator


def fake_codex(tmp_path, body: str) -> str:
    """An executable standing in for codex: ``$4`` is the --out directory, ``$5`` is --experimental or empty."""
    path = tmp_path / "fake-codex"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


COPY_FIXTURE = f"""
mkdir -p "$4"
flavor=stable
[ "$5" = "--experimental" ] && flavor=experimental
printf '%s %s' "$NO_COLOR" "$FAKE_MARK" > "$4/env.txt"
cp "{FIXTURE_DIR}/$flavor/{BUNDLE_FILE}" "$4/"
"""


@pytest.mark.parametrize("flavor", _schema.FLAVORS)
def test_bundle_for_binary_generates_the_flavor_asked_for(tmp_path, flavor):
    binary = fake_codex(tmp_path, COPY_FIXTURE)
    bundle = bundle_for_binary(
        binary, str(tmp_path / "schema"), flavor, "9.9.9", env={"FAKE_MARK": "given", "PATH": os.environ["PATH"]}
    )
    assert (bundle.version, bundle.flavor) == ("9.9.9", flavor)
    assert bundle.path == str(tmp_path / "schema" / flavor / BUNDLE_FILE)
    assert bundle.methods("ServerRequest") == STDLIB[flavor].methods("ServerRequest")
    assert (tmp_path / "schema" / flavor / "env.txt").read_text() == "1 given"  # NO_COLOR=1 always


def test_bundle_for_binary_refuses_an_unknown_flavor(tmp_path):
    with pytest.raises(ConfigError, match="flavor must be one of"):
        bundle_for_binary("codex", str(tmp_path), "nightly")


@pytest.mark.parametrize(
    "body, timeout, fragment",
    [
        pytest.param(
            'echo "error: unexpected argument" >&2\nexit 2\n',
            30,
            "exited with code 2: error: unexpected argument",
            id="exit",
        ),
        pytest.param("exit 0\n", 30, f"wrote no {BUNDLE_FILE}", id="no-file"),
        pytest.param("exec sleep 30\n", 0.2, "did not finish within 0.2 s", id="timeout"),
    ],
)
def test_generate_schema_failures_say_what_happened(tmp_path, body, timeout, fragment):
    with pytest.raises(SchemaGenerationFailed) as caught:
        generate_schema(fake_codex(tmp_path, body), str(tmp_path / "out"), timeout=timeout)
    assert fragment in str(caught.value)


def test_generate_schema_without_a_binary(tmp_path):
    with pytest.raises(SchemaGenerationFailed, match="cannot run"):
        generate_schema(str(tmp_path / "no-such-codex"), str(tmp_path / "out"))


@pytest.mark.live
@pytest.mark.parametrize("flavor", _schema.FLAVORS)
def test_bundle_for_binary_real_codex_prints_the_fixture(tmp_path, flavor):
    codex = live_codex()
    if isinstance(codex, str):
        pytest.skip(codex)
    if codex.version not in reference.fixture_versions():
        pytest.skip(f"codex {codex.version} has no schema fixtures")
    bundle = bundle_for_binary(codex.path, str(tmp_path), flavor, codex.version)
    fixture = SchemaBundle.from_directory(
        os.path.join(ROOT, "fixtures", "schema", codex.version, flavor), flavor, codex.version
    )
    assert bundle.root == fixture.root, (
        f"codex {codex.version} prints another schema: run `make schema CODEX={codex.version}`"
    )
    # The real frames of its own recordings pass the schema it printed (stdlib engine).
    validator = FrameValidator(bundle, allow_undeclared=reference.known_undeclared(codex.version))
    (transcript,) = [t for name, t in recorded() if name == f"fixtures/{codex.version}/approval_accept.frames.jsonl"]
    for direction, frame in transcript:
        validator.check(direction, frame)
    assert validator.problems == [] and validator.frames == len(transcript) > 20
