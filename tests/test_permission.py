"""The permission policy, pure: the knob fold and the answer to every server request.

The conformance suite (conformance/test_server_requests.py) proves every
answer is schema-valid; these tests pin down *which* answer each decision
gives, and that with nobody deciding the answer is never a yes.  Params are
real frames of codex 0.149.1 (conformance/recorded.py) where there is one,
otherwise minimal schema-valid params.
"""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from codexmini import ConfigError
from codexmini import _permission as permission
from codexmini._permission import (
    ACCEPT,
    ACCEPT_FOR_SESSION,
    CANCEL,
    DECISIONS,
    DECLINE,
    REFUSED,
    SERVER_REQUESTS,
    Answer,
    ApprovalRequest,
    Reply,
    build_answer,
    decision_of,
    describe,
    fail_closed,
    reply_from_flag,
    unanswered,
)
from codexmini._rpc import Connection, ServerRequest
from codexmini._wire import encode
from conformance import recorded

THREAD = recorded.THREAD
TURN = recorded.TURN

# Real params, recorded from codex 0.149.1 (conformance/recorded.py cites the scenario of each).
COMMAND = recorded.COMMAND_APPROVAL["params"]
FILE_CHANGE = recorded.FILE_CHANGE_APPROVAL_PARAMS
PERMISSIONS = recorded.PERMISSIONS_APPROVAL_PARAMS
USER_INPUT = recorded.USER_INPUT_PARAMS
MCP_TOOL_APPROVAL = recorded.ELICITATION_PARAMS
ASKED_NETWORK = PERMISSIONS["permissions"]["network"]
ASKED_FILE_SYSTEM = PERMISSIONS["permissions"]["fileSystem"]

# A plain elicitation: the same frame without the approval marker.
ELICITATION = {k: v for k, v in MCP_TOOL_APPROVAL.items() if k != "_meta"}
ELICITATION["message"] = "What is your name?"

# Never seen from the binary in the recordings: minimal schema-valid params.
DYNAMIC_TOOL = {
    "threadId": THREAD,
    "turnId": TURN,
    "callId": "call_dyn_1",
    "tool": "lookup",
    "namespace": None,
    "arguments": {"query": "codex"},
}
AUTH_REFRESH = {"reason": "unauthorized", "previousAccountId": None}
ATTESTATION: dict = {}
CURRENT_TIME = {"threadId": THREAD}
APPLY_PATCH = {
    "conversationId": THREAD,
    "callId": "call_patch_1",
    "fileChanges": {
        "/var/tmp/ws/b.txt": {"type": "update", "unified_diff": "@@ -1 +1 @@\n-a\n+b\n", "move_path": None},
        "/var/tmp/ws/a.txt": {"type": "add", "content": "hello\n"},
    },
    "reason": None,
    "grantRoot": None,
}
EXEC_COMMAND = {
    "conversationId": THREAD,
    "callId": "call_cmd_1",
    "approvalId": None,
    "command": ["/bin/bash", "-lc", "echo hi"],
    "cwd": "/var/tmp/ws",
    "reason": None,
    "parsedCmd": [{"type": "unknown", "cmd": "echo hi"}],
}

PARAMS = {
    "item/commandExecution/requestApproval": COMMAND,
    "item/fileChange/requestApproval": FILE_CHANGE,
    "item/permissions/requestApproval": PERMISSIONS,
    "item/tool/requestUserInput": USER_INPUT,
    "mcpServer/elicitation/request": MCP_TOOL_APPROVAL,
    "item/tool/call": DYNAMIC_TOOL,
    "account/chatgptAuthTokens/refresh": AUTH_REFRESH,
    "attestation/generate": ATTESTATION,
    "currentTime/read": CURRENT_TIME,
    "applyPatchApproval": APPLY_PATCH,
    "execCommandApproval": EXEC_COMMAND,
}

# -- expected answers: method → decision → Answer --------------------------------

GRANTED = {"network": ASKED_NETWORK, "fileSystem": ASKED_FILE_SYSTEM}
DYNAMIC_RESULT = {
    "contentItems": [{"type": "inputText", "text": "codexmini has no implementation of dynamic tool 'lookup'"}],
    "success": False,
}
DENIED = {"denied": {"rejection": "declined by codexmini"}}
LEGACY = {
    ACCEPT: Answer({"decision": "approved"}, decision=ACCEPT),
    ACCEPT_FOR_SESSION: Answer({"decision": "approved_for_session"}, decision=ACCEPT_FOR_SESSION),
    DECLINE: Answer({"decision": DENIED}, decision=DECLINE),
    CANCEL: Answer({"decision": "abort"}, decision=CANCEL),
}


def _refused(what: str) -> dict:
    answer = Answer(error={"code": REFUSED, "message": f"codexmini does not provide {what}"}, decision=DECLINE)
    return dict.fromkeys(DECISIONS, answer)


EXPECTED = {
    "item/commandExecution/requestApproval": {d: Answer({"decision": d}, decision=d) for d in DECISIONS},
    "item/fileChange/requestApproval": {d: Answer({"decision": d}, decision=d) for d in DECISIONS},
    "item/permissions/requestApproval": {
        ACCEPT: Answer({"permissions": GRANTED, "scope": "turn"}, decision=ACCEPT),
        ACCEPT_FOR_SESSION: Answer({"permissions": GRANTED, "scope": "session"}, decision=ACCEPT_FOR_SESSION),
        DECLINE: Answer({"permissions": {}, "scope": "turn"}, decision=DECLINE),
        CANCEL: Answer({"permissions": {}, "scope": "turn"}, decision=CANCEL),
    },
    # With no answers given, even an accept answers nothing: a decline.
    "item/tool/requestUserInput": {d: Answer({"answers": {}}, decision=DECLINE) for d in DECISIONS},
    "mcpServer/elicitation/request": {
        ACCEPT: Answer({"action": "accept"}, decision=ACCEPT),
        ACCEPT_FOR_SESSION: Answer({"action": "accept"}, decision=ACCEPT_FOR_SESSION),
        DECLINE: Answer({"action": "decline"}, decision=DECLINE),
        CANCEL: Answer({"action": "cancel"}, decision=CANCEL),
    },
    "item/tool/call": {d: Answer(DYNAMIC_RESULT, decision=DECLINE) for d in DECISIONS},
    "account/chatgptAuthTokens/refresh": _refused("ChatGPT auth tokens"),
    "attestation/generate": _refused("client attestation"),
    "currentTime/read": _refused("an external clock"),
    "applyPatchApproval": LEGACY,
    "execCommandApproval": LEGACY,
}


def test_permission_tables_cover_every_request_method():
    assert set(PARAMS) == set(SERVER_REQUESTS) == set(EXPECTED)
    assert len(SERVER_REQUESTS) == 11  # ten stable methods plus the experimental currentTime/read


# -- Reply -------------------------------------------------------------------------


@pytest.mark.parametrize("decision", DECISIONS)
def test_reply_accepts_every_decision(decision):
    reply = Reply(decision)
    assert (reply.decision, reply.answers, reply.content) == (decision, None, None)


@pytest.mark.parametrize("decision", ["approve", "Accept", "approved", "", None, "acceptWithExecpolicyAmendment"])
def test_reply_rejects_unknown_decisions(decision):
    expected = r"decision must be one of \('accept', 'acceptForSession', 'decline', 'cancel'\)"
    with pytest.raises(ConfigError, match=expected):
        Reply(decision)


def test_reply_from_flag():
    assert reply_from_flag(True) == Reply(ACCEPT)
    assert reply_from_flag(False) == Reply(DECLINE)


# -- build_answer: every method × every decision -----------------------------------


@pytest.mark.parametrize("decision", DECISIONS)
@pytest.mark.parametrize("method", sorted(SERVER_REQUESTS))
def test_build_answer_every_method_and_decision(method, decision):
    assert build_answer(method, PARAMS[method], Reply(decision)) == EXPECTED[method][decision]


def test_build_answer_unknown_method_is_a_key_error():
    with pytest.raises(KeyError):
        build_answer("fake/unknownRequest", {}, Reply(ACCEPT))


def test_build_answer_permissions_grants_only_what_was_asked():
    only_network = dict(PERMISSIONS, permissions={"network": ASKED_NETWORK, "fileSystem": None})
    answer = build_answer("item/permissions/requestApproval", only_network, Reply(ACCEPT))
    assert answer.result == {"permissions": {"network": ASKED_NETWORK}, "scope": "turn"}
    # Anything else in the request is not granted, and nothing asked → nothing granted.
    extra = dict(PERMISSIONS, permissions={"fileSystem": ASKED_FILE_SYSTEM, "macos": {"preferences": "read"}})
    answer = build_answer("item/permissions/requestApproval", extra, Reply(ACCEPT_FOR_SESSION))
    assert answer.result == {"permissions": {"fileSystem": ASKED_FILE_SYSTEM}, "scope": "session"}
    nothing = {k: v for k, v in PERMISSIONS.items() if k != "permissions"}
    answer = build_answer("item/permissions/requestApproval", nothing, Reply(ACCEPT))
    assert answer == Answer({"permissions": {}, "scope": "turn"}, decision=ACCEPT)


@pytest.mark.parametrize("decision", [ACCEPT, ACCEPT_FOR_SESSION])
def test_build_answer_user_input_answers_only_the_questions_asked(decision):
    reply = Reply(decision, answers={"color": ["Red"], "size": "Small", "invented": ["x"]})
    answer = build_answer("item/tool/requestUserInput", USER_INPUT, reply)
    # A bare string is wrapped in a list; an id nobody asked is dropped.
    assert answer == Answer(
        {"answers": {"color": {"answers": ["Red"]}, "size": {"answers": ["Small"]}}},
        decision=ACCEPT,
    )


def test_build_answer_user_input_partial_and_tuple_answers():
    reply = Reply(ACCEPT, answers={"size": ("Large", "Small")})
    answer = build_answer("item/tool/requestUserInput", USER_INPUT, reply)
    assert answer == Answer({"answers": {"size": {"answers": ["Large", "Small"]}}}, decision=ACCEPT)


@pytest.mark.parametrize(
    "answers",
    [
        {"color": 3, "size": None},
        {"color": ["Red", 2]},
        {"color": {"answers": ["Red"]}},
        {"color": b"Red"},
        {"invented": ["x"]},
        {},
    ],
    ids=["numbers-and-none", "list-with-a-number", "wire-shaped", "bytes", "unasked-id", "empty"],
)
def test_build_answer_user_input_non_string_answers_are_dropped(answers):
    answer = build_answer("item/tool/requestUserInput", USER_INPUT, Reply(ACCEPT, answers=answers))
    assert answer == Answer({"answers": {}}, decision=DECLINE)


def test_build_answer_user_input_mixed_keeps_only_the_valid_answers():
    reply = Reply(ACCEPT, answers={"color": ["Blue (Recommended)"], "size": 42})
    answer = build_answer("item/tool/requestUserInput", USER_INPUT, reply)
    assert answer == Answer({"answers": {"color": {"answers": ["Blue (Recommended)"]}}}, decision=ACCEPT)


@pytest.mark.parametrize("decision", [DECLINE, CANCEL])
def test_build_answer_user_input_a_refusal_sends_no_answers(decision):
    reply = Reply(decision, answers={"color": ["Red"], "size": ["Small"]})
    assert build_answer("item/tool/requestUserInput", USER_INPUT, reply) == Answer({"answers": {}}, decision=DECLINE)


def test_build_answer_user_input_ignores_malformed_questions():
    params = dict(USER_INPUT, questions=["not a question", USER_INPUT["questions"][1]])
    reply = Reply(ACCEPT, answers={"color": "Red", "size": "Small"})
    answer = build_answer("item/tool/requestUserInput", params, reply)
    assert answer.result == {"answers": {"size": {"answers": ["Small"]}}}
    no_questions = {k: v for k, v in USER_INPUT.items() if k != "questions"}
    answer = build_answer("item/tool/requestUserInput", no_questions, Reply(ACCEPT, answers={"color": "Red"}))
    assert answer == Answer({"answers": {}}, decision=DECLINE)


@pytest.mark.parametrize(
    "decision, content, expected",
    [
        (ACCEPT, {"name": "Ada"}, {"action": "accept", "content": {"name": "Ada"}}),
        (ACCEPT_FOR_SESSION, {"name": "Ada"}, {"action": "accept", "content": {"name": "Ada"}}),
        (ACCEPT, {}, {"action": "accept", "content": {}}),  # empty content is still content
        (ACCEPT, None, {"action": "accept"}),
        (DECLINE, {"name": "Ada"}, {"action": "decline"}),  # content only with an accept
        (CANCEL, {"name": "Ada"}, {"action": "cancel"}),
    ],
)
def test_build_answer_elicitation(decision, content, expected):
    for params in (ELICITATION, MCP_TOOL_APPROVAL):
        answer = build_answer("mcpServer/elicitation/request", params, Reply(decision, content=content))
        assert answer == Answer(expected, decision=decision)


def test_build_answer_dynamic_tool_names_the_tool():
    answer = build_answer("item/tool/call", dict(DYNAMIC_TOOL, tool="deploy"), Reply(ACCEPT))
    assert answer.result["contentItems"][0]["text"] == "codexmini has no implementation of dynamic tool 'deploy'"
    assert answer.result["success"] is False and answer.decision == DECLINE


@pytest.mark.parametrize("method", ["account/chatgptAuthTokens/refresh", "attestation/generate", "currentTime/read"])
def test_build_answer_refusals_are_errors_without_a_result(method):
    answer = build_answer(method, PARAMS[method], Reply(ACCEPT))
    assert answer.result is None
    assert answer.error is not None and set(answer.error) == {"code", "message"}
    assert answer.error["code"] == REFUSED == -32000


def test_answer_is_frozen_and_defaults_to_decline():
    assert Answer() == Answer(result=None, error=None, decision=DECLINE)
    with pytest.raises(dataclasses.FrozenInstanceError):
        Answer().decision = ACCEPT  # type: ignore[misc]


# -- fail_closed ---------------------------------------------------------------------

FAIL_CLOSED = {
    "item/commandExecution/requestApproval": Answer({"decision": "decline"}),
    "item/fileChange/requestApproval": Answer({"decision": "decline"}),
    "item/permissions/requestApproval": Answer({"permissions": {}, "scope": "turn"}),
    "item/tool/requestUserInput": Answer({"answers": {}}),
    "mcpServer/elicitation/request": Answer({"action": "decline"}),
    "item/tool/call": Answer(DYNAMIC_RESULT),
    "account/chatgptAuthTokens/refresh": Answer(
        error={"code": -32000, "message": "codexmini does not provide ChatGPT auth tokens"}
    ),
    "attestation/generate": Answer(error={"code": -32000, "message": "codexmini does not provide client attestation"}),
    "currentTime/read": Answer(error={"code": -32000, "message": "codexmini does not provide an external clock"}),
    "applyPatchApproval": Answer({"decision": DENIED}),
    "execCommandApproval": Answer({"decision": DENIED}),
}


@pytest.mark.parametrize("method", sorted(SERVER_REQUESTS))
def test_fail_closed_every_method(method):
    answer = fail_closed(method, PARAMS[method])
    assert answer == FAIL_CLOSED[method]
    assert answer.decision == DECLINE
    assert answer == build_answer(method, PARAMS[method], Reply(DECLINE))


@pytest.mark.parametrize("method", sorted(SERVER_REQUESTS))
def test_fail_closed_with_empty_params(method):
    # Params a newer codex shapes differently must still get a refusal, never a crash.
    answer = fail_closed(method, {})
    assert answer.decision == DECLINE
    assert (answer.result is None) != (answer.error is None)


# -- decision_of: the decision an answer frame carries (for the session log) ---------

LEGACY_WORDS = {ACCEPT: "approved", ACCEPT_FOR_SESSION: "approved_for_session", DECLINE: "denied", CANCEL: "abort"}
DECISION_WORDS = {
    "item/commandExecution/requestApproval": {d: d for d in DECISIONS},
    "item/fileChange/requestApproval": {d: d for d in DECISIONS},
    "item/permissions/requestApproval": {
        ACCEPT: "accept",
        ACCEPT_FOR_SESSION: "acceptForSession",  # scope "session"
        DECLINE: "decline",
        CANCEL: "decline",
    },
    "item/tool/requestUserInput": dict.fromkeys(DECISIONS, "decline"),  # nothing answered
    "mcpServer/elicitation/request": {
        ACCEPT: "accept",
        ACCEPT_FOR_SESSION: "accept",
        DECLINE: "decline",
        CANCEL: "cancel",
    },
    "item/tool/call": dict.fromkeys(DECISIONS, "decline"),
    "account/chatgptAuthTokens/refresh": dict.fromkeys(DECISIONS, "decline"),
    "attestation/generate": dict.fromkeys(DECISIONS, "decline"),
    "currentTime/read": dict.fromkeys(DECISIONS, "decline"),
    # The legacy (v1) words are told in the log's words.
    "applyPatchApproval": {d: d for d in DECISIONS},
    "execCommandApproval": {d: d for d in DECISIONS},
}


def _asked(method: str) -> Connection:
    """An RPC core that codex has just asked ``method`` (server request id 0)."""
    conn = Connection()
    (event,) = conn.receive(encode({"id": 0, "method": method, "params": PARAMS[method]}))
    assert isinstance(event, ServerRequest)
    return conn


def _frame(method: str, answer: Answer) -> dict:
    """The answer as the client puts it on the wire: a handler's result through
    ``Connection.answer``; a refusal, which no result can express, is what the
    agent leaves to ``Connection.decline`` (it registers no handler for it)."""
    conn = _asked(method)
    out = conn.decline(0) if answer.error else conn.answer(0, answer.result)
    assert out is not None and out.frame.get("error") == answer.error
    return out.frame


@pytest.mark.parametrize("decision", DECISIONS)
@pytest.mark.parametrize("method", sorted(SERVER_REQUESTS))
def test_decision_of_every_built_answer(method, decision):
    answer = build_answer(method, PARAMS[method], Reply(decision))
    assert decision_of(_frame(method, answer)) == DECISION_WORDS[method][decision]


@pytest.mark.parametrize("method", sorted(SERVER_REQUESTS))
def test_decision_of_a_fail_closed_answer_is_never_a_yes(method):
    # Nobody decided: the RPC core's own answer, as the client sends it.
    out = _asked(method).decline(0)
    assert out is not None
    assert out.frame == _frame(method, fail_closed(method, PARAMS[method]))
    assert decision_of(out.frame) == "decline"


def test_decision_of_answered_user_input_is_accept():
    method = "item/tool/requestUserInput"
    answer = build_answer(method, USER_INPUT, Reply(ACCEPT, answers={"color": "Red"}))
    assert decision_of(_frame(method, answer)) == "accept"


@pytest.mark.parametrize(
    "frame, expected",
    [
        ({"id": 0, "error": {"code": -32601, "message": "method not found: fake/unknownRequest"}}, "decline"),
        ({"id": 0, "result": None}, "decline"),
        ({"id": 0, "result": {}}, "decline"),
        ({"id": 0}, "decline"),
        ({"id": 0, "result": {"decision": {}}}, "decline"),  # an empty legacy object
        (
            {"id": 0, "result": {"decision": {"approved_execpolicy_amendment": {"proposed_execpolicy_amendment": []}}}},
            "accept",
        ),
        ({"id": 0, "result": {"decision": "acceptForSession"}}, "acceptForSession"),
        ({"id": 0, "result": {"action": "cancel", "content": None}}, "cancel"),
        ({"id": 0, "result": {"decision": {"acceptWithExecpolicyAmendment": {"execpolicy_amendment": []}}}}, "accept"),
        ({"id": 0, "result": {"decision": "timed_out"}}, "decline"),
        ({"id": 0, "result": {"decision": {"applyNetworkPolicyAmendment": {}}}}, "applyNetworkPolicyAmendment"),
        ({"id": 0, "result": "not an object"}, "decline"),
    ],
    ids=[
        "error",
        "null-result",
        "empty-result",
        "no-result",
        "empty-legacy-object",
        "amendment",
        "session",
        "action",
        "v2-amendment",
        "timed-out",
        "unknown-object",
        "scalar-result",
    ],  # fmt: skip
)
def test_decision_of_other_frames(frame, expected):
    assert decision_of(frame) == expected


# -- describe ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "method, params, kind, summary, item_id, thread_id, turn_id",
    [
        (
            "item/commandExecution/requestApproval",
            COMMAND,
            "command",
            "/bin/bash -lc 'echo escalated-ran > escalated.txt; echo done'",
            "call_cmd_1",
            THREAD,
            TURN,
        ),
        (
            "item/fileChange/requestApproval",
            FILE_CHANGE,
            "file_change",
            "",  # reason is null
            "call_patch_1",
            FILE_CHANGE["threadId"],
            FILE_CHANGE["turnId"],
        ),
        (
            "item/fileChange/requestApproval",
            dict(FILE_CHANGE, reason="Write outside the workspace"),
            "file_change",
            "Write outside the workspace",
            "call_patch_1",
            FILE_CHANGE["threadId"],
            FILE_CHANGE["turnId"],
        ),
        (
            "item/permissions/requestApproval",
            PERMISSIONS,
            "permissions",
            "Need to write the build output outside the workspace",
            "call_perm_1",
            PERMISSIONS["threadId"],
            PERMISSIONS["turnId"],
        ),
        (
            "item/tool/requestUserInput",
            USER_INPUT,
            "user_input",
            "Which color should the button be?; How big?",
            "call_rui_1",
            USER_INPUT["threadId"],
            USER_INPUT["turnId"],
        ),
        (
            "mcpServer/elicitation/request",
            ELICITATION,
            "elicitation",
            "What is your name?",
            None,
            ELICITATION["threadId"],
            ELICITATION["turnId"],
        ),
        (
            "mcpServer/elicitation/request",
            MCP_TOOL_APPROVAL,
            "mcp_tool_call",
            'Allow the probe MCP server to run tool "ask"?',
            None,
            MCP_TOOL_APPROVAL["threadId"],
            MCP_TOOL_APPROVAL["turnId"],
        ),
        ("item/tool/call", DYNAMIC_TOOL, "dynamic_tool", "lookup", "call_dyn_1", THREAD, TURN),
        ("account/chatgptAuthTokens/refresh", AUTH_REFRESH, "auth_refresh", "", None, None, None),
        ("attestation/generate", ATTESTATION, "attestation", "", None, None, None),
        ("currentTime/read", CURRENT_TIME, "current_time", "", None, THREAD, None),
        (
            "applyPatchApproval",
            APPLY_PATCH,
            "legacy_patch",
            "/var/tmp/ws/a.txt, /var/tmp/ws/b.txt",  # sorted fileChanges keys
            "call_patch_1",
            THREAD,
            None,
        ),
        ("execCommandApproval", EXEC_COMMAND, "legacy_command", "/bin/bash -lc echo hi", "call_cmd_1", THREAD, None),
    ],
    ids=lambda v: v if isinstance(v, str) and len(v) < 40 else None,
)
def test_describe(method, params, kind, summary, item_id, thread_id, turn_id):
    request = describe(method, params)
    assert isinstance(request, ApprovalRequest)
    assert request.method == method
    assert request.params is params
    assert (request.kind, request.summary) == (kind, summary)
    assert (request.item_id, request.thread_id, request.turn_id) == (item_id, thread_id, turn_id)
    expected_questions = tuple(params["questions"]) if method == "item/tool/requestUserInput" else ()
    assert request.questions == expected_questions


def test_describe_user_input_questions_are_a_tuple_of_the_asked_questions():
    params = dict(USER_INPUT, questions=[USER_INPUT["questions"][0], "junk", 7, USER_INPUT["questions"][1]])
    request = describe("item/tool/requestUserInput", params)
    assert request.questions == (USER_INPUT["questions"][0], USER_INPUT["questions"][1])
    assert request.summary == "Which color should the button be?; How big?"
    # A question with no text cannot be answered by anyone: it is not shown.
    untitled = describe(
        "item/tool/requestUserInput", dict(USER_INPUT, questions=[{"id": "q"}, {"id": "r", "question": " "}])
    )
    assert untitled.summary == "" and untitled.questions == ()
    # Nor one with text but no id to key its answer by (issue 30.6).
    shown = {"id": "s", "question": "Shown?"}
    idless = [{"question": "No id?"}, {"id": "", "question": "Empty id?"}, {"id": 7, "question": "Number id?"}, shown]
    request = describe("item/tool/requestUserInput", dict(USER_INPUT, questions=idless))
    assert request.questions == (shown,) and request.summary == "Shown?"


def test_unanswered_names_the_questions_an_answer_leaves_open():
    asked = dict(USER_INPUT, questions=[*USER_INPUT["questions"], {"id": "silent"}, "junk"])
    first, second = (q["id"] for q in USER_INPUT["questions"])
    some = {"result": {"answers": {first: {"answers": ["blue"]}}}}
    assert unanswered("item/tool/requestUserInput", asked, some) == [second, "silent"]
    assert unanswered("item/tool/requestUserInput", asked, {"error": {"code": -1, "message": "x"}}) == [
        first,
        second,
        "silent",
    ]
    assert unanswered("item/commandExecution/requestApproval", asked, some) == []


def test_describe_elicitation_kind_depends_only_on_the_approval_marker():
    other_meta = dict(MCP_TOOL_APPROVAL, _meta={"codex_approval_kind": "something_else"})
    assert describe("mcpServer/elicitation/request", other_meta).kind == "elicitation"
    null_meta = dict(MCP_TOOL_APPROVAL, _meta=None)
    assert describe("mcpServer/elicitation/request", null_meta).kind == "elicitation"
    # The marker means something only on an elicitation.
    assert describe("item/tool/call", dict(DYNAMIC_TOOL, _meta=MCP_TOOL_APPROVAL["_meta"])).kind == "dynamic_tool"


def test_describe_ids_prefer_the_v2_names():
    both = dict(EXEC_COMMAND, itemId="item_1", threadId="thread_1")
    request = describe("execCommandApproval", both)
    assert (request.item_id, request.thread_id) == ("item_1", "thread_1")


def test_describe_summaries_with_missing_fields_are_empty():
    assert describe("item/commandExecution/requestApproval", {}).summary == ""
    assert describe("item/commandExecution/requestApproval", dict(COMMAND, command=None)).summary == ""
    assert describe("item/permissions/requestApproval", {}).summary == ""
    assert describe("item/tool/requestUserInput", {}).summary == ""
    assert describe("mcpServer/elicitation/request", {}).summary == ""
    assert describe("item/tool/call", {}).summary == ""
    assert describe("applyPatchApproval", {}).summary == ""
    assert describe("execCommandApproval", {}).summary == ""
    empty = describe("item/fileChange/requestApproval", {})
    assert (empty.item_id, empty.thread_id, empty.turn_id, empty.questions) == (None, None, None, ())


def test_describe_legacy_command_string_is_not_a_command_list():
    # execCommandApproval's command is a list; anything else falls back to fileChanges.
    assert describe("execCommandApproval", dict(EXEC_COMMAND, command="echo hi")).summary == ""


def test_describe_unknown_method_is_a_key_error():
    with pytest.raises(KeyError):
        describe("fake/unknownRequest", {})


def test_describe_elicitation_with_a_non_object_meta():
    params = dict(ELICITATION, _meta=["opaque"])
    assert describe("mcpServer/elicitation/request", params).kind == "elicitation"


def test_permission_all_is_exported():
    assert sorted(permission.__all__) == sorted(set(permission.__all__))
    for name in permission.__all__:
        assert hasattr(permission, name), name


def test_replies_requests_and_table_rows_are_frozen_values():
    # A handler gets the request and returns the reply; neither can be edited
    # behind the log's back, and nobody can rewire an answer in the table.
    request = describe("item/commandExecution/requestApproval", COMMAND)
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.item_id = "other"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        Reply(DECLINE).decision = ACCEPT  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        SERVER_REQUESTS["item/commandExecution/requestApproval"].build = lambda p, r: Answer(ACCEPT)  # type: ignore[misc]


def test_decision_of_an_error_answer_is_a_decline_even_with_a_result():
    # Fail closed: an error answer never counts as consent, whatever else the frame holds.
    frame = {"id": 0, "error": {"code": REFUSED, "message": "no"}, "result": {"decision": "accept"}}
    assert decision_of(frame) == DECLINE


# -- thread options and the approval wiring ------------------------------------------------


def test_permission_thread_options_are_what_codex_accepts():
    assert permission.SANDBOX_MODES == ("read-only", "workspace-write", "danger-full-access")
    assert permission.APPROVAL_POLICIES == ("untrusted", "on-request", "never")


@pytest.mark.parametrize("sandbox", [None, *permission.SANDBOX_MODES])
@pytest.mark.parametrize("policy", [None, *permission.APPROVAL_POLICIES])
def test_permission_check_thread_options_accepts_every_valid_pair(sandbox, policy):
    assert permission.check_thread_options(sandbox, policy) is None


@pytest.mark.parametrize(
    "sandbox, policy, message",
    [
        (
            "sometimes",
            None,
            "sandbox must be one of ('read-only', 'workspace-write', 'danger-full-access'), not 'sometimes'",
        ),
        ("", "never", "sandbox must be one of ('read-only', 'workspace-write', 'danger-full-access'), not ''"),
        (None, "ask", "approval_policy must be one of ('untrusted', 'on-request', 'never'), not 'ask'"),
        (
            "read-only",
            "on-failure",
            "approval_policy must be one of ('untrusted', 'on-request', 'never'), not 'on-failure'",
        ),
    ],
)
def test_permission_check_thread_options_refuses_what_codex_would(sandbox, policy, message):
    with pytest.raises(ConfigError) as caught:
        permission.check_thread_options(sandbox, policy)
    assert str(caught.value) == message


def test_permission_install_approvals_wires_every_request_a_reply_can_answer():
    installed = {}

    class Client:
        def on_request(self, method, handler):
            installed[method] = handler

    seen = []

    async def handler(request: ApprovalRequest) -> Reply:
        seen.append(request)
        return Reply(ACCEPT)

    permission.install_approvals(Client(), handler)
    answerable = {m for m in SERVER_REQUESTS if build_answer(m, {}, Reply(DECLINE)).error is None}
    assert set(installed) == answerable
    assert {"account/chatgptAuthTokens/refresh", "attestation/generate", "currentTime/read"}.isdisjoint(installed)
    answer = asyncio.run(
        installed["item/commandExecution/requestApproval"]("item/commandExecution/requestApproval", COMMAND)
    )
    assert answer == build_answer("item/commandExecution/requestApproval", COMMAND, Reply(ACCEPT)).result
    assert [(r.method, r.kind) for r in seen] == [("item/commandExecution/requestApproval", "command")]
