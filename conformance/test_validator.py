"""The schema bundle, the frame validator and the pytest plugin.

Positives are real frames (``conformance/recorded.py``); every negative
starts from a real frame and breaks one thing, so a test fails for the reason
its name gives.  The plugin's behaviour is checked end to end with
``pytester``: small inner test files talk to a tiny fake app-server through a
real :class:`~codexmini._client.AppServerClient`, in a subprocess so the outer
test's own validator does not see their deliberately bad frames.
"""

from __future__ import annotations

import copy
import os
import subprocess
import sys
import textwrap

import pytest

from codexmini import CODEX_VERSION
from conformance import recorded
from conformance.schema import (
    KNOWN_UNDECLARED,
    OPEN_CONFIG,
    REQUEST_UNIONS,
    RESPONSE_OVERRIDES,
    UNIONS,
    FrameValidator,
    KnownField,
    SchemaBundle,
    fixture_versions,
    known_undeclared,
    validate_transcript,
)

pytest_plugins = ["pytester"]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def bundles():
    return [pytest.param(flavor, id=flavor) for flavor in ("experimental", "stable")]


def headlines(problems):
    return [p.headline for p in problems]


def check_after(validator, *frames):
    """Feed ``(direction, frame)`` pairs; return the problems of the last one."""
    for direction, frame in frames[:-1]:
        assert validator.check(direction, frame) == [], headlines(validator.problems)
    return validator.check(*frames[-1])


# ---------------------------------------------------------------------------
# The bundle


def test_schema_bundle_load_is_cached():
    assert SchemaBundle.load() is SchemaBundle.load(CODEX_VERSION, "experimental")
    assert SchemaBundle.load(flavor="stable") is not SchemaBundle.load()


def test_schema_bundle_missing_version_says_how_to_generate():
    with pytest.raises(FileNotFoundError, match="make schema"):
        SchemaBundle.load("0.0.0")


@pytest.mark.parametrize("flavor", bundles())
def test_schema_unions_route_every_branch_by_method(flavor):
    bundle = SchemaBundle.load(flavor=flavor)
    for union in UNIONS:
        branches = bundle.definitions[union]["oneOf"]
        methods = bundle.methods(union)
        # One method per branch, no branch without one: routing by
        # properties.method.enum covers the whole union.
        assert len(methods) == len(branches) == len(set(methods)), union
        for method in methods:
            assert bundle.branch(union, method)["properties"]["method"]["enum"] == [method]


@pytest.mark.parametrize("version", fixture_versions())
@pytest.mark.parametrize("flavor", bundles())
def test_schema_every_request_method_has_a_response(flavor, version):
    bundle = SchemaBundle.load(version, flavor)
    unresolved = {}
    for union in REQUEST_UNIONS:
        for method in bundle.methods(union):
            try:
                bundle.resolve(bundle.response_definition(method))
            except KeyError as exc:
                unresolved[method] = str(exc)
    assert unresolved == {}, "add these to RESPONSE_OVERRIDES"


def test_schema_response_overrides_are_all_needed():
    """An override is for a method whose derived name does not exist in some
    supported codex; where a release has the derived definition, the override
    must name that same definition, and once no supported version needs it,
    it must go."""
    needed, seen = set(), set()
    for version in fixture_versions():
        for flavor in ("experimental", "stable"):
            bundle = SchemaBundle.load(version, flavor)
            for union in REQUEST_UNIONS:
                for method in set(bundle.methods(union)) & set(RESPONSE_OVERRIDES):
                    seen.add(method)
                    params = bundle.params_definition(union, method)
                    derived = params[: -len("Params")] + "Response" if params and params.endswith("Params") else None
                    if derived is None or not bundle.has_definition(derived):
                        needed.add(method)
                    else:
                        assert derived == RESPONSE_OVERRIDES[method], (version, method, derived)
                    assert bundle.has_definition(RESPONSE_OVERRIDES[method]), (version, method)
    assert seen == set(RESPONSE_OVERRIDES), "overrides for methods no supported codex has"
    assert needed == set(RESPONSE_OVERRIDES), (
        f"overrides no supported codex needs: {sorted(set(RESPONSE_OVERRIDES) - needed)}"
    )


def test_schema_response_definition_derives_from_params():
    bundle = SchemaBundle.load()
    assert bundle.response_definition("thread/start") == "#/definitions/v2/ThreadStartResponse"
    assert bundle.response_definition("initialize") == "#/definitions/InitializeResponse"
    assert bundle.response_definition("item/commandExecution/requestApproval") == (
        "#/definitions/CommandExecutionRequestApprovalResponse"
    )
    # Nullable params: the $ref inside anyOf.
    assert bundle.response_definition("account/usage/read") == "#/definitions/v2/GetAccountTokenUsageResponse"
    assert bundle.response_definition("account/logout") == "#/definitions/v2/LogoutAccountResponse"
    with pytest.raises(KeyError):
        bundle.response_definition("no/such/method")


def test_schema_server_notification_declares_emitted_at_ms():
    """The union declares emittedAtMs beside its oneOf (it sits outside
    ``params``, so it is easy to think no schema does; the 0.149.1 bundle
    does, at the union level)."""
    bundle = SchemaBundle.load()
    assert bundle.definitions["ServerNotification"]["properties"]["emittedAtMs"]["type"] == "integer"
    assert bundle.union_properties("ClientNotification") is None


def test_schema_bundle_is_a_valid_draft7_schema():
    import jsonschema

    jsonschema.Draft7Validator.check_schema(SchemaBundle.load().root)


def test_schema_validate_messages_carry_json_paths():
    bundle = SchemaBundle.load()
    result = copy.deepcopy(recorded.THREAD_START_RESULT["result"])
    result["thread"]["status"] = {"type": "sleeping"}
    messages = bundle.validate(result, bundle.response_definition("thread/start"), "$.result")
    assert len(messages) == 1
    assert messages[0].startswith("$.result.thread.status: ")
    assert "closest branch" in messages[0]


def test_schema_undeclared_follows_the_matching_union_branch():
    bundle = SchemaBundle.load()
    pointer = bundle.definition_pointer("ThreadItem")
    item = {"type": "agentMessage", "id": "msg_1", "text": "hi", "phase": None, "memoryCitation": None}
    assert bundle.undeclared(item, pointer) == []
    # ``command`` is declared by the commandExecution branch, not by agentMessage.
    item["command"] = "ls"
    assert bundle.undeclared(item, pointer) == ["$.command"]


def test_schema_undeclared_treats_free_form_json_as_opaque():
    bundle = SchemaBundle.load()
    params = bundle.params_definition("ServerRequest", "mcpServer/elicitation/request")
    # ``_meta`` is any JSON (no structural keyword): its keys are not undeclared.
    assert bundle.undeclared(recorded.ELICITATION_PARAMS, bundle.definition_pointer(params)) == []


def test_schema_undeclared_map_keys_of_an_additional_properties_schema_are_declared():
    bundle = SchemaBundle.load()
    pointer = bundle.response_definition("item/tool/requestUserInput")
    answer = {"answers": {"color": {"answers": ["Red"]}, "size": {"answers": ["Small"], "extra": 1}}}
    assert bundle.undeclared(answer, pointer) == ["$.answers.size.extra"]


def test_schema_undeclared_reports_keys_only_allowed_by_additional_properties_true():
    """``config`` is ``additionalProperties: true``: allowed, yet not declared."""
    bundle = SchemaBundle.load()
    pointer = bundle.definition_pointer(bundle.params_definition("ClientRequest", "thread/start"))
    assert bundle.is_valid({"config": {"model": "gpt-5.4"}}, pointer)
    assert bundle.undeclared({"config": {"model": "gpt-5.4"}}, pointer) == ["$.config.model"]


# ---------------------------------------------------------------------------
# The frame validator: positives


def test_validator_accepts_a_real_transcript_in_strict_mode(frame_validator):
    for direction, frame in recorded.TRANSCRIPT:
        frame_validator.check(direction, frame)
    assert headlines(frame_validator.problems) == []
    assert frame_validator.frames == len(recorded.TRANSCRIPT)
    assert ("in", "response", "thread/start") in frame_validator.seen
    assert ("out", "response", "item/commandExecution/requestApproval") in frame_validator.seen


def test_validator_accepts_a_notification_with_emitted_at_ms(frame_validator):
    assert frame_validator.check("in", recorded.AGENT_MESSAGE_DELTA) == []
    assert frame_validator.check("in", recorded.THREAD_STARTED) == []


def test_validator_accepts_real_error_frames(frame_validator):
    error = {"error": {"code": -32600, "message": "Not initialized"}, "id": 1}  # bad_before_initialize
    assert check_after(frame_validator, ("out", recorded.INITIALIZE), ("in", error)) == []


def test_validator_accepts_string_ids_and_the_trace_member(frame_validator):
    request = {"id": "str-id-1", "method": "thread/loaded/list", "params": {}, "trace": {"traceparent": None}}
    answer = {"id": "str-id-1", "result": {"data": [recorded.THREAD], "nextCursor": None}}  # bad_input
    assert check_after(frame_validator, ("out", request), ("in", answer)) == []


def test_validate_transcript_is_one_validator_over_all_frames():
    assert validate_transcript(recorded.TRANSCRIPT) == []
    # The same answer without its request answers nothing.
    problems = validate_transcript(recorded.TRANSCRIPT[-2:])
    assert headlines(problems) == [
        "out (client→server) response id=0 at $.id: response to unknown request id 0: "
        "the server sent no request with this id"
    ]


# ---------------------------------------------------------------------------
# The frame validator: negatives


def test_validator_rejects_a_missing_required_field(frame_validator):
    frame = copy.deepcopy(recorded.AGENT_MESSAGE_DELTA)
    del frame["params"]["delta"]
    (problem,) = frame_validator.check("in", frame)
    assert (problem.direction, problem.kind, problem.method) == ("in", "notification", "item/agentMessage/delta")
    assert problem.path == "$.params"
    assert "'delta' is a required property" in problem.message
    assert problem.frame is frame


def test_validator_rejects_a_wrong_enum_value(frame_validator):
    answer = {"id": 0, "result": {"decision": "yes-please"}}  # scenario approval_bad_result
    (problem,) = check_after(frame_validator, ("in", recorded.COMMAND_APPROVAL), ("out", answer))
    assert (problem.direction, problem.kind, problem.method, problem.id) == (
        "out",
        "response",
        "item/commandExecution/requestApproval",
        0,
    )
    assert problem.path == "$.result.decision"


def test_validator_rejects_a_response_of_the_wrong_shape(frame_validator):
    # turn/start answered with a thread/start-shaped result.
    wrong = {"id": recorded.TURN_START["id"], "result": recorded.THREAD_START_RESULT["result"]}
    problems = check_after(frame_validator, ("out", recorded.TURN_START), ("in", wrong))
    assert any(p.path == "$.result" and "'turn' is a required property" in p.message for p in problems)
    assert all(p.method == "turn/start" for p in problems)


def test_validator_rejects_unknown_methods(frame_validator):
    (out,) = frame_validator.check("out", {"id": 100, "method": "foo/bar", "params": {}})  # scenario bad_input
    (notify,) = frame_validator.check("out", {"method": "foo/notify", "params": {}})
    (server,) = frame_validator.check("in", {"method": "thread/teleported", "params": {}, "emittedAtMs": 1})
    assert "unknown method 'foo/bar': not in the experimental schema's ClientRequest" in out.headline
    assert "ClientNotification" in notify.message
    assert "ServerNotification" in server.message
    # The error codex sends back still answers the remembered request id.
    error = {"id": 100, "error": {"code": -32600, "message": "Invalid request: unknown variant `foo/bar`"}}
    assert frame_validator.check("in", error) == []


def test_validator_rejects_a_jsonrpc_member(frame_validator):
    frame = dict(recorded.INITIALIZE, jsonrpc="2.0")
    (problem,) = frame_validator.check("out", frame)
    assert problem.path == "$.jsonrpc"
    assert "no 'jsonrpc' member" in problem.message


def test_validator_rejects_responses_to_unknown_ids(frame_validator):
    (result,) = frame_validator.check("out", {"id": 999, "result": {}})  # scenario bad_input
    (error,) = frame_validator.check("out", {"id": 998, "error": {"code": 1, "message": "x"}})
    assert "response to unknown request id 999" in result.message
    assert "error for unknown request id 998" in error.message


def test_validator_keeps_the_two_id_spaces_apart(frame_validator):
    # Server request id 0 is answered by the client ("out"), never by the server.
    frame_validator.check("in", recorded.COMMAND_APPROVAL)
    (problem,) = frame_validator.check("in", {"id": 0, "result": {"decision": "accept"}})
    assert "the client sent no request with this id" in problem.message
    # Answered once, the id is forgotten.
    assert frame_validator.check("out", recorded.COMMAND_APPROVAL_ANSWER) == []
    assert len(frame_validator.check("out", recorded.COMMAND_APPROVAL_ANSWER)) == 1


@pytest.mark.parametrize(
    "frame",
    [
        pytest.param({"foo": 1}, id="no-method-no-id"),
        pytest.param({"id": 1, "result": {}, "error": {"code": 1, "message": "x"}}, id="result-and-error"),
        pytest.param({"id": 1}, id="id-only"),
        pytest.param([1, 2, 3], id="array"),
        pytest.param({"id": 1, "method": 5}, id="method-not-string"),
    ],
)
def test_validator_rejects_frames_of_no_json_rpc_shape(frame_validator, frame):
    assert len(frame_validator.check("in", frame)) == 1


def test_validator_rejects_a_wrongly_typed_id(frame_validator):
    problems = frame_validator.check("out", dict(recorded.THREAD_START, id=1.5))
    assert [p.path for p in problems] == ["$.id"]


def test_validator_strict_mode_reports_undeclared_fields():
    frame = copy.deepcopy(recorded.THREAD_STARTED)
    frame["params"]["thread"]["mood"] = "sunny"
    frame["extraTopLevel"] = 1
    strict = FrameValidator(strict=True).check("in", frame)
    assert [p.path for p in strict] == ["$.params.thread.mood", "$.extraTopLevel"]
    assert all("not declared" in p.message for p in strict)
    assert FrameValidator(strict=False).check("in", frame) == []


def test_validator_emitted_at_ms_is_declared_only_on_server_notifications(frame_validator):
    bad = dict(recorded.AGENT_MESSAGE_DELTA, emittedAtMs="soon")
    (typed,) = frame_validator.check("in", bad)
    assert (typed.path, typed.message) == ("$.emittedAtMs", "'soon' is not of type 'integer'")
    (client,) = frame_validator.check("out", dict(recorded.INITIALIZED, emittedAtMs=1))
    assert client.path == "$.emittedAtMs"


def test_validator_known_undeclared_is_per_flavor():
    # recorded.TRANSCRIPT is 0.149.1's (conformance/recorded.py): held to its schema.
    stable = SchemaBundle.load("0.149.1", flavor="stable")
    catalog = known_undeclared("0.149.1")
    frames = recorded.TRANSCRIPT
    assert validate_transcript(frames, stable) == []
    bare = validate_transcript(frames, stable, allow_undeclared=())
    assert sorted({(p.method, p.path) for p in bare}) == sorted(
        {(k.method, k.path) for k in catalog["stable"] if k.method in ("thread/start", "thread/started")}
        | {("item/commandExecution/requestApproval", "$.params.availableDecisions")}
    )
    # The experimental bundle declares all it sends but the open Config map of config/read.
    assert catalog["experimental"] == frozenset([OPEN_CONFIG]) == KNOWN_UNDECLARED["experimental"]


def test_validator_known_field_with_a_star_matches_every_key_below():
    assert OPEN_CONFIG.matches("response", "config/read", "$.result.config.model_providers")
    assert OPEN_CONFIG.matches("response", "config/read", "$.result.config.features.apps")
    assert not OPEN_CONFIG.matches("response", "config/read", "$.result.origins.x")
    assert not OPEN_CONFIG.matches("response", "config/read", "$.result.configx")
    assert not OPEN_CONFIG.matches("response", "thread/read", "$.result.config.model")
    assert not OPEN_CONFIG.matches("notification", "config/read", "$.result.config.model")


def test_validator_known_field_matches_any_array_index():
    known = KnownField("response", "thread/read", "$.result.thread.turns[].items[].extra")
    assert known.matches("response", "thread/read", "$.result.thread.turns[3].items[0].extra")
    assert not known.matches("notification", "thread/read", "$.result.thread.turns[3].items[0].extra")


def test_validator_problem_str_truncates_the_frame():
    frame = copy.deepcopy(recorded.AGENT_MESSAGE_DELTA)
    frame["params"]["delta"] = 5
    frame["params"]["padding"] = "x" * 10000
    (problem,) = FrameValidator(strict=False).check("in", frame)
    text = str(problem)
    assert text.startswith(problem.headline + "\n    frame: {")
    assert len(text) < 1000 and "chars>" in text


def test_validator_builds_each_validator_once():
    bundle = SchemaBundle.load()
    validate_transcript(recorded.TRANSCRIPT, bundle)
    built = len(bundle._validators)
    validate_transcript(recorded.TRANSCRIPT, bundle)
    assert len(bundle._validators) == built


def test_validator_turns_its_own_crash_into_a_problem(monkeypatch, frame_validator):
    def boom(*args):
        raise RuntimeError("bug")

    monkeypatch.setattr(frame_validator.bundle, "errors", boom)
    (problem,) = frame_validator.check("out", recorded.INITIALIZE)
    assert "validator crashed" in problem.message


# ---------------------------------------------------------------------------
# The plugin, end to end

INNER_TESTS = textwrap.dedent(
    """
    import asyncio
    import pytest
    from codexmini import AppServerClient, Launch
    from codexmini.testing import FakeAppServer

    async def fake(server):
        await server.handshake()
        async for frame in server.requests():
            # Deliberately wrong when asked for the bad page: data must be an array.
            bad = (frame.get("params") or {}).get("cursor") == "bad"
            server.respond(frame, {"data": "nope" if bad else [], "nextCursor": None})

    def exchange(cursor):
        async def main():
            client = await AppServerClient.start(Launch(launcher=FakeAppServer(fake).launch))
            try:
                return await client.request("thread/loaded/list", {"cursor": cursor})
            finally:
                await client.close()
        return asyncio.run(main())

    def test_good(conformance_frames):
        exchange("good")
        (validator,) = conformance_frames
        assert validator.frames == 5 and validator.problems == []  # initialize, initialized, one request

    def test_bad_unmarked():
        exchange("bad")

    @pytest.mark.frame_problems("thread/loaded/list id=2 at $.result.data")
    def test_bad_marked():
        exchange("bad")

    @pytest.mark.frame_problems("something else entirely")
    def test_bad_marked_wrongly():
        exchange("bad")

    @pytest.mark.frame_problems("thread/loaded/list")
    def test_good_marked():
        exchange("good")
    """
)


@pytest.fixture
def inner(pytester, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    pytester.makepyfile(test_inner=INNER_TESTS)
    return pytester


def test_plugin_fails_bad_frames_and_honours_the_marker(inner):
    result = inner.runpytest_subprocess("-p", "conformance.plugin", "-p", "no:cacheprovider", "-W", "error", "-rA")
    result.assert_outcomes(passed=2, failed=3)
    result.stdout.fnmatch_lines_random(
        [
            "PASSED test_inner.py::test_good",
            "PASSED test_inner.py::test_bad_marked",
            "FAILED test_inner.py::test_bad_unmarked*",
            "FAILED test_inner.py::test_bad_marked_wrongly*",
            "FAILED test_inner.py::test_good_marked*",
        ]
    )
    # The unmarked failure lists the problem readably, with the frame and a hint.
    result.stdout.fnmatch_lines(
        [
            "*1 frame problem(s) found by the conformance validator*",
            "*1. in (server→client) response thread/loaded/list id=2 at $.result.data: 'nope' is not of type 'array'",
            '*frame: {"id": 2, "result": {"data": "nope"*',
            "*@pytest.mark.frame_problems*",
        ]
    )
    # (no brackets in the patterns: fnmatch reads them as character classes)
    result.stdout.fnmatch_lines(["*expected problems that did not happen: *'something else entirely'*"])
    result.stdout.fnmatch_lines(
        ["*expected problems that did not happen: *'thread/loaded/list'*", "*remove the marker?*"]
    )


def test_plugin_refuses_to_run_without_jsonschema(pytester):
    pytester.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    # ``sys.modules[name] = None`` makes ``import name`` raise ImportError.
    code = (
        "import sys; sys.modules['jsonschema'] = None; import pytest; "
        "sys.exit(pytest.main(['-p', 'conformance.plugin', '-p', 'no:cacheprovider']))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": ROOT},
        cwd=str(pytester.path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "jsonschema, which is not installed" in done.stdout + done.stderr
