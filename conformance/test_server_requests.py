"""permission.SERVER_REQUESTS against the schema's ServerRequest union.

Every server-request method gets a schema-valid answer, whatever the caller
decides and when nobody decides at all: codex waits forever for an unanswered
request, and treats an error or an invalid result as a failure or a denial.
Each answer goes through a :class:`FrameValidator` after its request, exactly
as on the wire, so the response is routed to the method's ``…Response``
definition (or, for a refusal, checked as a whole ``JSONRPCError`` frame).
"""

from __future__ import annotations

import pytest

from codexmini import _permission as permission
from codexmini._permission import DECISIONS, Reply, build_answer, fail_closed
from conformance import recorded
from conformance.schema import FrameValidator, SchemaBundle, fixture_versions

#: A realistic params example per method: a recorded one (conformance/recorded.py)
#: where there is one, otherwise minimal params that satisfy the schema.
PARAMS = {
    "item/commandExecution/requestApproval": recorded.COMMAND_APPROVAL["params"],
    "item/fileChange/requestApproval": recorded.FILE_CHANGE_APPROVAL_PARAMS,
    "item/permissions/requestApproval": recorded.PERMISSIONS_APPROVAL_PARAMS,
    "item/tool/requestUserInput": recorded.USER_INPUT_PARAMS,
    "mcpServer/elicitation/request": recorded.ELICITATION_PARAMS,
    # Never seen from the binary in the recordings: schema-valid minimal params.
    "item/tool/call": {
        "threadId": recorded.THREAD,
        "turnId": recorded.TURN,
        "callId": "call_dyn_1",
        "tool": "lookup",
        "namespace": None,
        "arguments": {"query": "codex"},
    },
    "account/chatgptAuthTokens/refresh": {"reason": "unauthorized", "previousAccountId": None},
    "attestation/generate": {},
    "applyPatchApproval": {
        "conversationId": recorded.THREAD,
        "callId": "call_patch_1",
        "fileChanges": {"/var/tmp/ws/a.txt": {"type": "add", "content": "hello\n"}},
        "reason": None,
        "grantRoot": None,
    },
    "execCommandApproval": {
        "conversationId": recorded.THREAD,
        "callId": "call_cmd_1",
        "approvalId": None,
        "command": ["/bin/bash", "-lc", "echo hi"],
        "cwd": "/var/tmp/ws",
        "reason": None,
        "parsedCmd": [{"type": "unknown", "cmd": "echo hi"}],
    },
    # Experimental flavor of 0.149.1 only (0.171.0 no longer has it).
    "currentTime/read": {"threadId": recorded.THREAD},
}

#: What a caller passes beside the decision, so accept answers carry content.
REPLY_EXTRAS = {
    "item/tool/requestUserInput": {"answers": {"color": ["Red"], "size": "Small"}},
    "mcpServer/elicitation/request": {"content": {}},
}

FLAVORS = ["experimental", "stable"]
VERSIONS = fixture_versions()


@pytest.mark.parametrize("version", VERSIONS)
def test_server_requests_table_covers_the_schema(version):
    # codexmini opts into the experimental API, so it answers every method of
    # the experimental bundle of every supported codex (0.149.1's adds
    # currentTime/read to the stable ten).
    experimental = SchemaBundle.load(version, "experimental").methods("ServerRequest")
    stable = SchemaBundle.load(version, "stable").methods("ServerRequest")
    assert set(experimental) <= set(permission.SERVER_REQUESTS), f"codex {version} asks what codexmini cannot answer"
    assert set(stable) <= set(experimental)
    assert len(stable) == 10


def test_server_requests_table_answers_only_what_a_supported_codex_asks():
    asked = {m for v in VERSIONS for m in SchemaBundle.load(v, "experimental").methods("ServerRequest")}
    assert sorted(permission.SERVER_REQUESTS) == sorted(asked)


def test_server_requests_every_method_has_a_params_example():
    methods = set(SchemaBundle.load().methods("ServerRequest")) | set(permission.SERVER_REQUESTS)
    assert methods <= set(PARAMS), "add a params example for the new method"


def _methods():
    """(version, flavor, method) for every ServerRequest method the table answers."""
    cases = []
    for version in VERSIONS:
        for flavor in FLAVORS:
            for method in SchemaBundle.load(version, flavor).methods("ServerRequest"):
                if method in permission.SERVER_REQUESTS:  # the rest: test_server_requests_table_covers_the_schema
                    cases.append(pytest.param(version, flavor, method, id=f"{version}-{flavor}-{method}"))
    return cases


def _decisions():
    return [
        pytest.param(*case.values, decision, id=f"{case.id}-{decision}")
        for case in _methods()
        for decision in DECISIONS
    ]


def _exchange(version, flavor, method, answer):
    """The request then its answer, through one validator; the problems."""
    validator = FrameValidator(SchemaBundle.load(version, flavor), strict=True)
    request = {"id": 0, "method": method, "params": PARAMS[method]}
    assert validator.check("in", request) == [], "the params example itself is invalid"
    if answer.error is not None:
        frame = {"id": 0, "error": answer.error}
        assert set(answer.error) <= {"code", "message", "data"}
    else:
        frame = {"id": 0, "result": answer.result}
    problems = validator.check("out", frame)
    kind = "error" if answer.error is not None else "response"
    assert validator.seen[-1] == ("out", kind, method)
    return [p.headline for p in problems]


@pytest.mark.parametrize("version,flavor,method", _methods())
def test_server_requests_params_examples_validate(version, flavor, method):
    bundle = SchemaBundle.load(version, flavor)
    pointer = bundle.branch_pointer("ServerRequest", method)
    frame = {"id": 0, "method": method, "params": PARAMS[method]}
    assert bundle.validate(frame, pointer) == []
    assert FrameValidator(bundle).check("in", frame) == []


@pytest.mark.parametrize("version,flavor,method", _methods())
def test_server_requests_fail_closed_answer_validates(version, flavor, method):
    answer = fail_closed(method, PARAMS[method])
    assert _exchange(version, flavor, method, answer) == []
    # Fail-closed never means yes.
    assert answer.decision == permission.DECLINE or answer.error is not None


@pytest.mark.parametrize("version,flavor,method,decision", _decisions())
def test_server_requests_every_decision_validates(version, flavor, method, decision):
    answer = build_answer(method, PARAMS[method], Reply(decision, **REPLY_EXTRAS.get(method, {})))
    assert _exchange(version, flavor, method, answer) == []


def test_server_requests_user_input_answers_only_the_questions_asked():
    params = recorded.USER_INPUT_PARAMS
    answer = build_answer(
        "item/tool/requestUserInput", params, Reply("accept", answers={"color": ["Red"], "invented": ["x"]})
    )
    assert answer.result == {"answers": {"color": {"answers": ["Red"]}}}
    for version in VERSIONS:
        assert _exchange(version, "experimental", "item/tool/requestUserInput", answer) == []
