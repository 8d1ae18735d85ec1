"""The mapping tables, fed with params and items of real codex 0.149.1 frames.

Every params object and item below is copied from a recording of codex
0.149.1 (the scenario is named beside it); where a test needs a variant the
recordings do not hold, the change is spelled out next to the copy.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any

import pytest

from codexmini import ProtocolError, _mapping
from codexmini._events import (
    AgentMessageDelta,
    CommandOutputDelta,
    DiffUpdated,
    InvalidNotification,
    ItemCompleted,
    ItemStarted,
    PlanDelta,
    PlanUpdated,
    RateLimitsUpdated,
    RateLimitWindow,
    ReasoningSummaryDelta,
    ReasoningTextDelta,
    RetryingError,
    TokenUsage,
    TurnCompleted,
    Unmapped,
    Usage,
)
from codexmini._mapping import (
    IGNORED,
    NOTIFICATIONS,
    TOOL_ITEMS,
    ToolCall,
    ToolResult,
    to_event,
    tool_call,
    tool_result,
)
from codexmini.testing.codex_like import RATE_LIMITS_EXHAUSTED

THREAD = "01a22879-9bfc-7961-a05c-6859166dc5e2"
TURN = "01a22879-9c13-7550-ac03-cd56cb48bc99"

# -- notification params (real) ----------------------------------------------

AGENT_DELTA = {  # approval_accept
    "threadId": THREAD,
    "turnId": TURN,
    "itemId": "msg_final",
    "delta": "Command finished. Last tool output: Chunk ID: 120fc2\nWall time: 0.0100 ",
}
SUMMARY_DELTA = {  # reasoning
    "threadId": "01a22878-bdd8-7592-a1d6-caa9f635ff3b",
    "turnId": "01a22878-bdeb-7442-8553-cfd6c5d21907",
    "itemId": "rs_1",
    "delta": "**Planning** ",
    "summaryIndex": 0,
}
TEXT_DELTA = {  # reasoning
    "threadId": "01a22878-bdd8-7592-a1d6-caa9f635ff3b",
    "turnId": "01a22878-bdeb-7442-8553-cfd6c5d21907",
    "itemId": "rs_1",
    "delta": "raw chain ",
    "contentIndex": 0,
}
PLAN_DELTA = {  # plan_mode
    "threadId": "01a22878-c744-7792-8ce8-c49ae666ba76",
    "turnId": "01a22878-c752-7991-ba55-77865b97e6b1",
    "itemId": "01a22878-c752-7991-ba55-77865b97e6b1-plan",
    "delta": "# Fix the bug\n",
}
PLAN_UPDATED = {  # plan
    "threadId": "01a22878-c522-7430-aa37-02297566fd54",
    "turnId": "01a22878-c533-77a0-b40d-26465953a1ea",
    "explanation": "Three steps to do the job.",
    "plan": [
        {"step": "Inspect repository", "status": "inProgress"},
        {"step": "Edit files", "status": "pending"},
        {"step": "Run tests", "status": "pending"},
    ],
}
OUTPUT_DELTA = {"threadId": THREAD, "turnId": TURN, "itemId": "call_cmd_1", "delta": "done\n"}  # approval_accept
TOKEN_USAGE = {  # approval_accept
    "threadId": THREAD,
    "turnId": TURN,
    "tokenUsage": {
        "total": {
            "totalTokens": 15,
            "inputTokens": 10,
            "cachedInputTokens": 2,
            "cacheWriteInputTokens": 0,
            "outputTokens": 5,
            "reasoningOutputTokens": 1,
        },
        "last": {
            "totalTokens": 15,
            "inputTokens": 10,
            "cachedInputTokens": 2,
            "cacheWriteInputTokens": 0,
            "outputTokens": 5,
            "reasoningOutputTokens": 1,
        },
        "modelContextWindow": 258400,
    },
}
DIFF_UPDATED = {  # patch_approval_accept (diff cut as in the catalog)
    "threadId": "01a2287a-139c-78e0-a726-6ce2dcee4baf",
    "turnId": "01a2287a-13af-7612-b297-4eef3c825984",
    "diff": "diff --git a//scratch/cxp/outside/accepted.txt b//scratch/cxp/outside/accepted.txt\nnew file mode 100644\n",
}
ERROR_RETRY = {  # err_401
    "error": {
        "message": "Reconnecting... 1/5",
        "codexErrorInfo": {"responseStreamDisconnected": {"httpStatusCode": 401}},
        "additionalDetails": "unexpected status 401 Unauthorized: Incorrect API key provided: sk-fake., "
        "url: http://127.0.0.1:18864/v1/responses",
    },
    "willRetry": True,
    "threadId": "01a2287c-51fe-71b2-b5f0-1f2349a8ad9e",
    "turnId": "01a2287c-522f-7532-bd94-74d95dd392eb",
}
TURN_ERROR = {  # err_400
    "message": '{"error": {"message": "Invalid \'input\': bad things.", "type": "invalid_request_error", '
    '"code": null, "param": "input"}}',
    "codexErrorInfo": "other",
    "additionalDetails": None,
}
ERROR_FINAL = {  # err_400
    "error": TURN_ERROR,
    "willRetry": False,
    "threadId": "01a2287c-6b6a-7a93-b7b2-8c6e8ae14067",
    "turnId": "01a2287c-6b79-7a11-9573-3b9a80dd00db",
}
AGENT_MESSAGE_ITEM = {  # approval_accept
    "type": "agentMessage",
    "id": "msg_final",
    "text": "Command finished. Last tool output: Chunk ID: 120fc2\nWall time: 0.0100 seconds\n"
    "Process exited with code 0\nOriginal token count: 2\nOutput:\ndone\n",
    "phase": None,
    "memoryCitation": None,
    "delivery": None,
}
TURN_COMPLETED = {  # approval_accept
    "threadId": THREAD,
    "turn": {
        "id": TURN,
        "items": [AGENT_MESSAGE_ITEM],
        "itemsView": "summary",
        "status": "completed",
        "error": None,
        "startedAt": 1795975388,
        "completedAt": 1795975388,
        "durationMs": 309,
    },
}
TURN_FAILED = {  # err_400
    "threadId": "01a2287c-6b6a-7a93-b7b2-8c6e8ae14067",
    "turn": {
        "id": "01a2287c-6b79-7a11-9573-3b9a80dd00db",
        "items": [],
        "itemsView": "notLoaded",
        "status": "failed",
        "error": TURN_ERROR,
        "startedAt": 1795975572,
        "completedAt": 1795975572,
        "durationMs": 59,
    },
}
TURN_INTERRUPTED = {  # approval_cancel
    "threadId": "01a22879-ad89-7440-8cd6-44198ccec76b",
    "turn": {
        "id": "01a22879-ad9d-7080-af06-1183660d37a2",
        "items": [],
        "itemsView": "notLoaded",
        "status": "interrupted",
        "error": None,
        "startedAt": 1795975392,
        "completedAt": 1795975392,
        "durationMs": 106,
    },
}

# -- items (real) --------------------------------------------------------------

COMMAND_ACTIONS = [{"type": "unknown", "command": "echo escalated-ran > escalated.txt; echo done"}]
COMMAND = "/bin/bash -lc 'echo escalated-ran > escalated.txt; echo done'"
CMD_STARTED = {  # approval_accept, item/started
    "type": "commandExecution",
    "id": "call_cmd_1",
    "pluginId": None,
    "scriptPath": None,
    "command": COMMAND,
    "cwd": "/scratch/cxp/ws/approval_accept",
    "processId": None,
    "source": "agent",
    "status": "inProgress",
    "commandActions": COMMAND_ACTIONS,
    "aggregatedOutput": None,
    "exitCode": None,
    "durationMs": None,
}
CMD_COMPLETED = {  # approval_accept
    "type": "commandExecution",
    "id": "call_cmd_1",
    "pluginId": None,
    "scriptPath": None,
    "command": COMMAND,
    "cwd": "/scratch/cxp/ws/approval_accept",
    "processId": "30116",
    "source": "unifiedExecStartup",
    "status": "completed",
    "commandActions": COMMAND_ACTIONS,
    "aggregatedOutput": "done\n",
    "exitCode": 0,
    "durationMs": 10,
}
CMD_EXIT_3 = {  # scenario cmd_fail
    "type": "commandExecution",
    "id": "call_cmd_1",
    "pluginId": None,
    "scriptPath": None,
    "command": "/bin/bash -lc 'echo about-to-fail; exit 3'",
    "cwd": "/scratch/cxp/ws/cmd_fail",
    "processId": "8214",
    "source": "unifiedExecStartup",
    "status": "failed",
    "commandActions": [{"type": "unknown", "command": "echo about-to-fail; exit 3"}],
    "aggregatedOutput": "about-to-fail\n",
    "exitCode": 3,
    "durationMs": 0,
}
CMD_DECLINED = {  # approval_cancel
    "type": "commandExecution",
    "id": "call_cmd_1",
    "pluginId": None,
    "scriptPath": None,
    "command": COMMAND,
    "cwd": "/scratch/cxp/ws/approval_cancel",
    "processId": None,
    "source": "agent",
    "status": "declined",
    "commandActions": COMMAND_ACTIONS,
    "aggregatedOutput": None,
    "exitCode": None,
    "durationMs": None,
}
CMD_FAILED_NO_EXIT = {  # approval_bad_result
    "type": "commandExecution",
    "id": "call_cmd_1",
    "pluginId": None,
    "scriptPath": None,
    "command": COMMAND,
    "cwd": "/scratch/cxp/ws/approval_bad_result",
    "processId": None,
    "source": "agent",
    "status": "failed",
    "commandActions": COMMAND_ACTIONS,
    "aggregatedOutput": None,
    "exitCode": None,
    "durationMs": None,
}
PATCH_COMPLETED = {  # patch_approval_accept
    "type": "fileChange",
    "id": "call_patch_1",
    "changes": [
        {
            "path": "/scratch/cxp/outside/accepted.txt",
            "kind": {"type": "add"},
            "diff": "written outside the workspace\n",
        }
    ],
    "status": "completed",
}
PATCH_DECLINED = {  # patch_approval_decline
    "type": "fileChange",
    "id": "call_patch_1",
    "changes": [
        {
            "path": "/scratch/cxp/outside/declined.txt",
            "kind": {"type": "add"},
            "diff": "written outside the workspace\n",
        }
    ],
    "status": "declined",
}
PATCH_TWO_CHANGES = {  # scenario patch_auto
    "type": "fileChange",
    "id": "call_patch_1",
    "status": "completed",
    "changes": [
        {
            "path": "/scratch/cxp/ws/patch_auto/existing.txt",
            "kind": {"type": "update", "move_path": None},
            "diff": "@@ -1 +1 @@\n-old line\n+new line\n",
        },
        {"path": "/scratch/cxp/ws/patch_auto/hello.txt", "kind": {"type": "add"}, "diff": "hello\nworld\n"},
    ],
}
MCP_COMPLETED = {  # mcp_elicitation_accept
    "type": "mcpToolCall",
    "id": "call_mcp_ask",
    "server": "probe",
    "tool": "ask",
    "status": "completed",
    "arguments": {},
    "appContext": None,
    "pluginId": None,
    "readOnlyHint": None,
    "result": {
        "content": [
            {"type": "text", "text": 'elicitation answer: {"action": "accept", "content": {"color": "green"}}'}
        ],
        "structuredContent": None,
        "_meta": None,
    },
    "error": None,
    "durationMs": 1,
}
MCP_ECHO = {  # scenario mcp_tools_onrequest
    "type": "mcpToolCall",
    "id": "call_mcp_echo",
    "server": "probe",
    "tool": "echo",
    "status": "completed",
    "arguments": {"text": "hi mcp"},
    "appContext": None,
    "pluginId": None,
    "readOnlyHint": None,
    "result": {
        "content": [{"type": "text", "text": "echo: hi mcp"}],
        "structuredContent": {"echoed": "hi mcp"},
        "_meta": None,
    },
    "error": None,
    "durationMs": 1,
}
MCP_FAILED = {  # mcp_tool_approval_decline
    "type": "mcpToolCall",
    "id": "call_mcp_echo",
    "server": "probe",
    "tool": "echo",
    "status": "failed",
    "arguments": {"text": "declined?"},
    "appContext": None,
    "pluginId": None,
    "readOnlyHint": None,
    "result": None,
    "error": {"message": "user rejected MCP tool call"},
    "durationMs": 0,
}
WEB_SEARCH = {  # misc_items
    "type": "webSearch",
    "id": "ws_1",
    "query": "codex app-server protocol",
    "action": {"type": "search", "query": "codex app-server protocol", "queries": None},
    "results": None,
}
IMAGE_VIEW = {"type": "imageView", "id": "call_view", "path": "/scratch/cxp/ws/misc_items/pixel.png"}  # misc_items
REASONING_ITEM = {  # reasoning
    "type": "reasoning",
    "id": "rs_1",
    "summary": ["**Planning** the answer: look at inputs.", "**Checking** edge cases."],
    "content": ["raw chain of thought text."],
}
PLAN_ITEM = {  # plan_mode
    "type": "plan",
    "id": "01a22878-c752-7991-ba55-77865b97e6b1-plan",
    "text": "# Fix the bug\n- Step one: read code\n- Step two: patch it\n",
}
USER_MESSAGE_ITEM = {  # approval_accept (text cut as in the catalog)
    "type": "userMessage",
    "id": "01a22879-9c31-7b71-8c65-263c78c031fa",
    "clientId": None,
    "content": [{"type": "text", "text": "TOOLCALL {...}", "text_elements": []}],
}


def item_params(item, started=True):
    key = "startedAtMs" if started else "completedAtMs"
    return {"item": item, "threadId": THREAD, "turnId": TURN, key: 1795975388489}


# -- notifications --------------------------------------------------------------


def test_mapping_agent_message_delta():
    assert to_event("item/agentMessage/delta", AGENT_DELTA) == AgentMessageDelta("msg_final", AGENT_DELTA["delta"])


def test_mapping_reasoning_summary_delta():
    assert to_event("item/reasoning/summaryTextDelta", SUMMARY_DELTA) == ReasoningSummaryDelta(
        "rs_1", "**Planning** ", 0
    )
    later = dict(SUMMARY_DELTA, summaryIndex=1)
    assert to_event("item/reasoning/summaryTextDelta", later).summary_index == 1


def test_mapping_reasoning_text_delta():
    assert to_event("item/reasoning/textDelta", TEXT_DELTA) == ReasoningTextDelta("rs_1", "raw chain ", 0)
    assert to_event("item/reasoning/textDelta", dict(TEXT_DELTA, contentIndex=2)).content_index == 2


def test_mapping_reasoning_deltas_default_their_index():
    params = {k: v for k, v in SUMMARY_DELTA.items() if k != "summaryIndex"}
    assert to_event("item/reasoning/summaryTextDelta", params).summary_index == 0
    params = {k: v for k, v in TEXT_DELTA.items() if k != "contentIndex"}
    assert to_event("item/reasoning/textDelta", params).content_index == 0


def test_mapping_plan_delta():
    assert to_event("item/plan/delta", PLAN_DELTA) == PlanDelta(PLAN_DELTA["itemId"], "# Fix the bug\n")


def test_mapping_plan_updated_keeps_camelcase_statuses():
    assert to_event("turn/plan/updated", PLAN_UPDATED) == PlanUpdated(
        "Three steps to do the job.",
        (("Inspect repository", "inProgress"), ("Edit files", "pending"), ("Run tests", "pending")),
    )


def test_mapping_plan_updated_without_explanation_or_plan():
    # An omitted explanation arrives as null.
    assert to_event("turn/plan/updated", dict(PLAN_UPDATED, explanation=None, plan=[])) == PlanUpdated(None, ())
    assert to_event("turn/plan/updated", {"threadId": THREAD, "turnId": TURN}) == PlanUpdated(None, ())


def test_mapping_command_output_delta():
    assert to_event("item/commandExecution/outputDelta", OUTPUT_DELTA) == CommandOutputDelta("call_cmd_1", "done\n")


@pytest.mark.parametrize("item", [AGENT_MESSAGE_ITEM, CMD_STARTED, REASONING_ITEM], ids=lambda i: i["type"])
def test_mapping_item_started(item):
    event = to_event("item/started", item_params(item))
    assert event == ItemStarted(item)
    assert (event.item_id, event.item_type) == (item["id"], item["type"])


@pytest.mark.parametrize("item", [AGENT_MESSAGE_ITEM, CMD_COMPLETED, WEB_SEARCH], ids=lambda i: i["type"])
def test_mapping_item_completed(item):
    event = to_event("item/completed", item_params(item, started=False))
    assert event == ItemCompleted(item)
    assert (event.item_id, event.item_type) == (item["id"], item["type"])


def test_mapping_token_usage_reads_last_total_and_window():
    assert to_event("thread/tokenUsage/updated", TOKEN_USAGE) == TokenUsage(
        last=Usage(10, 2, 5, 1, 15), total=Usage(10, 2, 5, 1, 15), context_window=258400
    )


def test_mapping_token_usage_last_and_total_differ():
    params = copy.deepcopy(TOKEN_USAGE)
    params["tokenUsage"]["total"].update(totalTokens=40, inputTokens=30, outputTokens=10)
    params["tokenUsage"]["modelContextWindow"] = None
    event = to_event("thread/tokenUsage/updated", params)
    assert event.last.total_tokens == 15
    assert event.total == Usage(30, 2, 10, 1, 40)
    assert event.context_window is None


def test_mapping_token_usage_missing_is_invalid():
    event = to_event("thread/tokenUsage/updated", {"threadId": THREAD, "turnId": TURN})
    assert event == InvalidNotification(
        "thread/tokenUsage/updated",
        {"threadId": THREAD, "turnId": TURN},
        "thread/tokenUsage/updated: tokenUsage is missing",
    )


def test_mapping_token_usage_null_breakdowns_are_zero():
    params = {"threadId": THREAD, "turnId": TURN, "tokenUsage": {"last": None, "total": None}}
    assert to_event("thread/tokenUsage/updated", params) == TokenUsage(Usage(), Usage(), None)


def test_mapping_diff_updated():
    assert to_event("turn/diff/updated", DIFF_UPDATED) == DiffUpdated(DIFF_UPDATED["diff"])
    bad = to_event("turn/diff/updated", dict(DIFF_UPDATED, diff=None))
    assert isinstance(bad, InvalidNotification) and bad.reason == "turn/diff/updated: diff is null"


def test_mapping_retrying_error_is_an_event():
    assert to_event("error", ERROR_RETRY) == RetryingError(
        "Reconnecting... 1/5",
        ERROR_RETRY["error"]["additionalDetails"],
        {"responseStreamDisconnected": {"httpStatusCode": 401}},
    )


def test_mapping_retrying_error_without_error_object_is_invalid():
    bad = to_event("error", {"willRetry": True, "threadId": THREAD, "turnId": TURN})
    assert isinstance(bad, InvalidNotification) and bad.reason == "error: error is missing"


def test_mapping_retrying_error_with_only_a_message():
    params = {"willRetry": True, "threadId": THREAD, "turnId": TURN, "error": {"message": "Reconnecting..."}}
    assert to_event("error", params) == RetryingError("Reconnecting...", None, None)


def test_mapping_final_error_is_not_an_event():
    # turn/completed{failed} follows with the same error.
    assert to_event("error", ERROR_FINAL) is None


def test_mapping_turn_completed_completed():
    event = to_event("turn/completed", TURN_COMPLETED)
    # The wire's turn.items (a summary) is not the turn's history: the turn fills items in.
    assert event == TurnCompleted(TURN, "completed", None)
    assert event.items == () and event.abandoned == () and event.usage == Usage()


def test_mapping_turn_completed_failed_carries_the_error():
    event = to_event("turn/completed", TURN_FAILED)
    assert event == TurnCompleted("01a2287c-6b79-7a11-9573-3b9a80dd00db", "failed", TURN_ERROR)
    assert event.error_message == TURN_ERROR["message"]


def test_mapping_turn_completed_interrupted():
    assert to_event("turn/completed", TURN_INTERRUPTED) == TurnCompleted(
        "01a22879-ad9d-7080-af06-1183660d37a2", "interrupted", None
    )


def test_mapping_turn_completed_without_turn_is_invalid():
    # Skipped, not a completion: the turn goes on (and its reader's deadlines bound it).
    bad = to_event("turn/completed", {"threadId": THREAD})
    assert isinstance(bad, InvalidNotification) and bad.reason == "turn/completed: turn is missing"


# Every malformed shape the reliability issue found (each raised KeyError,
# AttributeError, TypeError or ValueError, or passed a wrong type through).
MALFORMED = [
    ("item/started", {"threadId": THREAD, "turnId": TURN}, "item is missing"),
    ("item/completed", {"threadId": THREAD, "turnId": TURN, "item": "msg_1"}, "item is str, not an object"),
    ("item/completed", {"threadId": THREAD, "turnId": TURN, "item": {"type": "agentMessage"}}, "id is missing"),
    (
        "item/completed",
        {"threadId": THREAD, "turnId": TURN, "item": {"id": "m", "type": 3}},
        "type is int, not a string",
    ),
    (
        "item/completed",
        {"threadId": THREAD, "turnId": TURN, "item": {"id": "c", "type": "commandExecution", "exitCode": "0"}},
        "exitCode is str, not an integer",
    ),
    (
        "item/completed",
        {"threadId": THREAD, "turnId": TURN, "item": {"id": "m", "type": "mcpToolCall", "result": {"content": 5}}},
        "item.result.content is not an array",
    ),
    (
        "item/completed",
        {"threadId": THREAD, "turnId": TURN, "item": {"id": "r", "type": "reasoning", "summary": [1]}},
        "item.summary holds an element that is not str",
    ),
    (
        "item/completed",
        {"threadId": THREAD, "turnId": TURN, "item": {"id": "p", "type": "fileChange", "changes": ["x"]}},
        "item.changes holds an element that is not dict",
    ),
    ("item/agentMessage/delta", {"threadId": THREAD, "turnId": TURN, "itemId": "msg_1"}, "delta is missing"),
    (
        "item/agentMessage/delta",
        {"threadId": THREAD, "turnId": TURN, "itemId": "m", "delta": 42},
        "delta is int, not a string",
    ),
    ("item/reasoning/summaryTextDelta", {"itemId": "r", "delta": "x", "summaryIndex": "0"}, "summaryIndex is str"),
    ("item/reasoning/textDelta", {"itemId": 7, "delta": "x"}, "itemId is int, not a string"),
    (
        "thread/tokenUsage/updated",
        {"threadId": THREAD, "turnId": TURN, "tokenUsage": {"last": {"totalTokens": "many"}, "total": None}},
        "token count totalTokens is str, not an integer",
    ),
    (
        "thread/tokenUsage/updated",
        {"threadId": THREAD, "turnId": TURN, "tokenUsage": {"last": [], "total": None}},
        "last is list, not an object",
    ),
    ("turn/completed", {"threadId": THREAD, "turn": "done"}, "turn is str, not an object"),
    ("turn/completed", {"threadId": THREAD, "turn": {"id": TURN}}, "status is missing"),
    (
        "turn/plan/updated",
        {"threadId": THREAD, "turnId": TURN, "plan": ["step"]},
        "plan holds an element that is not an object",
    ),
    ("error", {"threadId": THREAD, "turnId": TURN, "willRetry": True, "error": "boom"}, "error is str, not an object"),
]


@pytest.mark.parametrize("method, params, reason", MALFORMED, ids=[f"{m}:{r}" for m, _, r in MALFORMED])
def test_mapping_malformed_notifications_become_invalid_events(method, params, reason):
    event = to_event(method, params)
    assert isinstance(event, InvalidNotification), event
    assert event.method == method and event.params is params
    assert reason in event.reason and event.reason.startswith(f"{method}: ")


REAL_IGNORED = {
    "turn/started": {"threadId": THREAD, "turn": dict(TURN_COMPLETED["turn"], status="inProgress", items=[])},
    "thread/status/changed": {"threadId": THREAD, "status": {"type": "active", "activeFlags": []}},
    "item/reasoning/summaryPartAdded": {"threadId": THREAD, "turnId": TURN, "itemId": "rs_1", "summaryIndex": 0},
    "serverRequest/resolved": {"threadId": THREAD, "requestId": 0},
    "warning": {"threadId": THREAD, "message": "Model metadata for `gpt-fake` not found."},
    "configWarning": {"summary": "bubblewrap", "details": None},
    "item/commandExecution/terminalInteraction": {
        "threadId": THREAD,
        "turnId": TURN,
        "itemId": "call_bg_1",
        "processId": "70615",
        "stdin": "hello\n",
    },
    "mcpServer/startupStatus/updated": {"threadId": THREAD, "name": "probe", "status": "starting", "error": None},
}


@pytest.mark.parametrize("method", sorted(REAL_IGNORED))
def test_mapping_ignored_methods_give_none(method):
    assert method in IGNORED
    assert to_event(method, REAL_IGNORED[method]) is None


@pytest.mark.parametrize("method", sorted(IGNORED))
def test_mapping_every_ignored_method_gives_none(method):
    assert to_event(method, {}) is None


# usage_limit (0.171.0): sent before the turn's error, no thread; 0.171.0 adds normalModelSlug.
RATE_LIMITS = {"rateLimits": {**RATE_LIMITS_EXHAUSTED, "normalModelSlug": None}}


def test_mapping_rate_limits_updated_reads_the_windows():
    event = to_event("account/rateLimits/updated", RATE_LIMITS)
    assert event == RateLimitsUpdated(
        "codex",
        RateLimitWindow(100, 300, 1796130000),
        RateLimitWindow(40, 10080, 1796216400),
        RATE_LIMITS["rateLimits"],
    )
    assert event.resets_at == 1796130000  # the exhausted window only


def test_mapping_rate_limits_without_windows():  # approval_accept (no rate-limit headers): every field null
    params = {"rateLimits": {"limitId": "codex", "limitName": None, "primary": None, "secondary": None}}
    event = to_event("account/rateLimits/updated", params)
    assert event == RateLimitsUpdated("codex", None, None, params["rateLimits"]) and event.resets_at is None


@pytest.mark.parametrize(
    "params, reason",
    [
        ({}, "rateLimits is missing"),
        ({"rateLimits": {"primary": {"windowDurationMins": 5}}}, "usedPercent is missing"),
        ({"rateLimits": {"primary": {"usedPercent": "x"}}}, "usedPercent is str, not a number"),
        ({"rateLimits": {"secondary": []}}, "secondary is list, not an object"),
        ({"rateLimits": {"primary": {"usedPercent": 1, "resetsAt": 1.5}}}, "resetsAt is float, not an integer"),
    ],
)
def test_mapping_rate_limits_malformed_is_invalid(params, reason):
    event = to_event("account/rateLimits/updated", params)
    assert isinstance(event, InvalidNotification) and event.reason == f"account/rateLimits/updated: {reason}"


def test_mapping_rate_limit_window_durations_and_reset_times_are_optional():
    # usage_limit's windows, each with one optional field left out (null reads the same).
    params = copy.deepcopy(RATE_LIMITS)
    del params["rateLimits"]["primary"]["resetsAt"]
    params["rateLimits"]["secondary"]["windowDurationMins"] = None
    event = to_event("account/rateLimits/updated", params)
    assert event == RateLimitsUpdated(
        "codex", RateLimitWindow(100, 300, None), RateLimitWindow(40, None, 1796216400), params["rateLimits"]
    )
    assert event.resets_at is None  # the exhausted window names no reset time


# The rate-limit snapshot of usage_limit, one field of the wrong type each: the
# reason names the field and what it must be.
RATE_LIMITS_WRONG = [
    ("limitId", None, 7, "limitId is int, not a string"),
    ("primary", None, [], "primary is list, not an object"),
    ("primary", "windowDurationMins", "300", "windowDurationMins is str, not an integer"),
    ("secondary", "resetsAt", "1796216400", "resetsAt is str, not an integer"),
    ("secondary", "usedPercent", None, "usedPercent is null"),
]


@pytest.mark.parametrize("field, inner, value, reason", RATE_LIMITS_WRONG, ids=[r for *_, r in RATE_LIMITS_WRONG])
def test_mapping_rate_limits_name_the_wrong_field(field, inner, value, reason):
    params = copy.deepcopy(RATE_LIMITS)
    if inner is None:
        params["rateLimits"][field] = value
    else:
        params["rateLimits"][field][inner] = value
    event = to_event("account/rateLimits/updated", params)
    assert event == InvalidNotification("account/rateLimits/updated", params, f"account/rateLimits/updated: {reason}")


def test_mapping_unknown_method_is_unmapped():
    params = {"threadId": THREAD, "turnId": TURN, "something": [1, 2]}
    assert to_event("item/somethingNew/delta", params) == Unmapped("item/somethingNew/delta", params)


def test_mapping_tables_are_disjoint():
    assert not set(NOTIFICATIONS) & IGNORED


# -- tool items -------------------------------------------------------------------


def args(call: ToolCall):
    return json.loads(call.arguments)


def test_tool_command_completed():
    call = tool_call(CMD_COMPLETED)
    assert call == ToolCall(
        "call_cmd_1", "bash", json.dumps({"command": COMMAND}, separators=(",", ":")), "commandExecution"
    )
    assert tool_result(CMD_COMPLETED) == ToolResult("call_cmd_1", "done\n", False, "completed", 0)


def test_tool_command_nonzero_exit_is_an_error():
    assert tool_result(CMD_EXIT_3) == ToolResult("call_cmd_1", "about-to-fail\n", True, "failed", 3)


def test_tool_command_nonzero_exit_is_an_error_whatever_the_status():
    # Defensive: 0.149.1 always says "failed" with a non-zero exit.
    assert tool_result(dict(CMD_EXIT_3, status="completed")).is_error is True


def test_tool_command_declined_has_empty_text_and_no_exit_code():
    assert tool_result(CMD_DECLINED) == ToolResult("call_cmd_1", "", True, "declined", None)


def test_tool_command_failed_without_exit_code():
    assert tool_result(CMD_FAILED_NO_EXIT) == ToolResult("call_cmd_1", "", True, "failed", None)


def test_tool_command_started_item_maps_to_the_same_call():
    assert tool_call(CMD_STARTED) == tool_call(CMD_COMPLETED)


def test_tool_command_missing_status():
    item = {k: v for k, v in CMD_COMPLETED.items() if k != "status"}
    assert tool_result(item) == ToolResult("call_cmd_1", "done\n", False, "completed", 0)


def test_tool_patch_completed():
    call = tool_call(PATCH_COMPLETED)
    assert (call.call_id, call.name, call.kind) == ("call_patch_1", "apply_patch", "fileChange")
    assert args(call) == {
        "changes": [
            {
                "path": "/scratch/cxp/outside/accepted.txt",
                "kind": {"type": "add"},
                "diff": "written outside the workspace\n",
            }
        ]
    }
    assert tool_result(PATCH_COMPLETED) == ToolResult("call_patch_1", "patch completed", False, "completed")


def test_tool_patch_declined():
    assert tool_result(PATCH_DECLINED) == ToolResult("call_patch_1", "patch declined", True, "declined")


def test_tool_patch_failed():
    assert tool_result(dict(PATCH_COMPLETED, status="failed")) == ToolResult(
        "call_patch_1", "patch failed", True, "failed"
    )


def test_tool_patch_arguments_keep_every_change_in_order():
    call = tool_call(PATCH_TWO_CHANGES)
    assert args(call)["changes"] == [
        {
            "path": "/scratch/cxp/ws/patch_auto/existing.txt",
            "kind": {"type": "update", "move_path": None},
            "diff": "@@ -1 +1 @@\n-old line\n+new line\n",
        },
        {"path": "/scratch/cxp/ws/patch_auto/hello.txt", "kind": {"type": "add"}, "diff": "hello\nworld\n"},
    ]


def test_tool_patch_keeps_only_path_kind_diff():
    item = copy.deepcopy(PATCH_COMPLETED)
    item["changes"][0]["extra"] = "not logged"
    assert set(args(tool_call(item))["changes"][0]) == {"path", "kind", "diff"}


def test_tool_patch_without_changes_or_status():
    item = {"type": "fileChange", "id": "call_patch_1"}
    assert args(tool_call(item)) == {"changes": []}
    assert tool_result(item) == ToolResult("call_patch_1", "patch completed", False, "completed")


def test_tool_mcp_completed_text_from_content():
    call = tool_call(MCP_COMPLETED)
    assert call == ToolCall("call_mcp_ask", "probe/ask", "{}", "mcpToolCall")
    assert tool_result(MCP_COMPLETED) == ToolResult(
        "call_mcp_ask", 'elicitation answer: {"action": "accept", "content": {"color": "green"}}', False, "completed"
    )


def test_tool_mcp_arguments_and_structured_content():
    assert tool_call(MCP_ECHO).arguments == '{"text":"hi mcp"}'
    # structuredContent is not the text; the content blocks are.
    assert tool_result(MCP_ECHO).text == "echo: hi mcp"


def test_tool_mcp_non_text_blocks_are_json():
    item = copy.deepcopy(MCP_ECHO)
    image = {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}
    item["result"]["content"] = [{"type": "text", "text": "first"}, image, "odd", {"type": "text", "text": "last"}]
    assert tool_result(item).text == "\n".join(
        ["first", json.dumps(image, sort_keys=True, separators=(",", ":")), '"odd"', "last"]
    )


def test_tool_mcp_failed_with_error_message():
    assert tool_call(MCP_FAILED).name == "probe/echo"
    assert tool_result(MCP_FAILED) == ToolResult("call_mcp_echo", "user rejected MCP tool call", True, "failed")


def test_tool_mcp_is_error_result_is_failed_with_its_content():
    # An MCP result with isError:true gives status failed, result set, error null.
    item = copy.deepcopy(MCP_ECHO)
    item["status"] = "failed"
    item["result"] = {"content": [{"type": "text", "text": "boom"}], "structuredContent": None, "_meta": None}
    assert tool_result(item) == ToolResult("call_mcp_echo", "boom", True, "failed")


def test_tool_mcp_error_even_when_status_says_completed():
    assert tool_result(dict(MCP_FAILED, status="completed")).is_error is True


def test_tool_mcp_without_result():
    item = dict(MCP_ECHO, result=None)
    assert tool_result(item) == ToolResult("call_mcp_echo", "", False, "completed")
    item = {"type": "mcpToolCall", "id": "x"}
    assert tool_result(item) == ToolResult("x", "", False, "completed")


@pytest.mark.parametrize(
    "change",
    [{"server": None}, {"tool": None}, {"server": ""}, {"server": None, "tool": None}],
    ids=["no-server", "no-tool", "empty-server", "neither"],
)
def test_tool_mcp_missing_server_or_tool_is_generic(change):
    assert tool_call(dict(MCP_ECHO, **change)).name == "mcp_tool_call"


def test_tool_mcp_null_arguments_are_an_empty_object():
    assert tool_call(dict(MCP_ECHO, arguments=None)).arguments == "{}"
    assert tool_call({k: v for k, v in MCP_ECHO.items() if k != "arguments"}).arguments == "{}"


def test_tool_web_search():
    call = tool_call(WEB_SEARCH)
    assert call == ToolCall("ws_1", "web_search", '{"query":"codex app-server protocol"}', "webSearch")
    assert tool_result(WEB_SEARCH) == ToolResult("ws_1", "", False, "completed")


def test_tool_web_search_results_are_json():
    results = [{"url": "https://example.com", "title": "Example"}]
    assert tool_result(dict(WEB_SEARCH, results=results)).text == '[{"title":"Example","url":"https://example.com"}]'
    assert tool_result(dict(WEB_SEARCH, results=[])).text == ""


def test_tool_image_view():
    call = tool_call(IMAGE_VIEW)
    assert call == ToolCall("call_view", "view_image", '{"path":"/scratch/cxp/ws/misc_items/pixel.png"}', "imageView")
    assert tool_result(IMAGE_VIEW) == ToolResult("call_view", "", False, "completed")


@pytest.mark.parametrize(
    "item",
    [
        AGENT_MESSAGE_ITEM,
        REASONING_ITEM,
        PLAN_ITEM,
        USER_MESSAGE_ITEM,
        {"type": "contextCompaction", "id": "c1"},
        {"id": "x"},
    ],
    ids=lambda i: i.get("type", "untyped"),
)
def test_tool_non_tool_items_are_none(item):
    assert tool_call(item) is None
    assert tool_result(item) is None


@pytest.mark.parametrize(
    "item",
    [CMD_COMPLETED, PATCH_TWO_CHANGES, MCP_ECHO, WEB_SEARCH, IMAGE_VIEW],
    ids=lambda i: i["type"],
)
def test_tool_arguments_are_compact_json_with_sorted_keys(item):
    text = tool_call(item).arguments
    value = json.loads(text)
    assert text == json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def test_tool_arguments_sort_nested_keys_and_keep_unicode():
    item = dict(MCP_ECHO, arguments={"zeta": 1, "alpha": {"y": 2, "b": "grüß"}})
    assert tool_call(item).arguments == '{"alpha":{"b":"grüß","y":2},"zeta":1}'


def test_tool_items_table_names():
    assert set(TOOL_ITEMS) == {"commandExecution", "fileChange", "mcpToolCall", "webSearch", "imageView"}
    assert tool_call(CMD_COMPLETED).kind == "commandExecution"


# -- what a finished item may hold: each field a reader reads, of the wrong type ----------

# (item type, field, a value of the wrong JSON type, what the field must be).
# Each becomes an InvalidNotification naming the field, so no reader of the
# item (the step fold, the tool table) meets a type it does not expect.
ITEM_FIELD_TYPES = [
    ("agentMessage", "text", 5, "int", "a string"),
    ("reasoning", "summary", "one part", "str", "an array"),
    ("reasoning", "content", {}, "dict", "an array"),
    ("commandExecution", "command", ["ls"], "list", "a string"),
    ("commandExecution", "aggregatedOutput", 0, "int", "a string"),
    ("commandExecution", "exitCode", True, "bool", "an integer"),
    ("commandExecution", "status", 1, "int", "a string"),
    ("fileChange", "changes", {"path": "x"}, "dict", "an array"),
    ("fileChange", "status", False, "bool", "a string"),
    ("mcpToolCall", "server", 1, "int", "a string"),
    ("mcpToolCall", "tool", [], "list", "a string"),
    ("mcpToolCall", "result", "ok", "str", "an object"),
    ("mcpToolCall", "error", "boom", "str", "an object"),
    ("mcpToolCall", "status", {}, "dict", "a string"),
    ("webSearch", "query", 3, "int", "a string"),
    ("webSearch", "results", "none", "str", "an array"),
    ("imageView", "path", 1.5, "float", "a string"),
]


@pytest.mark.parametrize(
    "kind, field, value, got, what", ITEM_FIELD_TYPES, ids=[f"{k}.{f}" for k, f, *_ in ITEM_FIELD_TYPES]
)
def test_mapping_item_field_of_the_wrong_type_is_invalid(kind, field, value, got, what):
    for method in ("item/started", "item/completed"):
        params = {"threadId": THREAD, "turnId": TURN, "item": {"type": kind, "id": "i1", field: value}}
        event = to_event(method, params)
        assert event == InvalidNotification(method, params, f"{method}: {field} is {got}, not {what}")
        # null is always allowed: the field is absent.
        params = {"threadId": THREAD, "turnId": TURN, "item": {"type": kind, "id": "i1", field: None}}
        assert isinstance(to_event(method, params), (ItemStarted, ItemCompleted))


@pytest.mark.parametrize("field", ["summary", "content"])
def test_mapping_reasoning_parts_must_be_strings(field):
    params = {"threadId": THREAD, "turnId": TURN, "item": {"type": "reasoning", "id": "r", field: ["ok", 2]}}
    event = to_event("item/completed", params)
    assert isinstance(event, InvalidNotification)
    assert event.reason == f"item/completed: item.{field} holds an element that is not str"


def test_mapping_only_an_mcp_call_has_its_result_content_read():
    # Another item type with a "result" field of its own is not judged by the
    # MCP rule (codex adds fields; the mapping reads only what it uses).
    item = {"type": "dynamicToolCall", "id": "d1", "result": {"content": "plain text"}}
    assert to_event("item/completed", {"threadId": THREAD, "item": item}) == ItemCompleted(item)


def test_mapping_wrong_types_name_what_was_expected():
    base = {"threadId": THREAD, "turnId": TURN}
    cases = [
        (
            "item/reasoning/summaryTextDelta",
            {"itemId": "r", "delta": "x", "summaryIndex": "0"},
            "summaryIndex is str, not an integer",
        ),
        ("turn/plan/updated", {"plan": "step one"}, "plan is str, not an array"),
        ("error", {"willRetry": True, "error": {"message": 5}}, "message is int, not a string"),
        (
            "thread/tokenUsage/updated",
            {"tokenUsage": {"modelContextWindow": "big"}},
            "modelContextWindow is str, not an integer",
        ),
        ("item/agentMessage/delta", {"itemId": 7, "delta": "x"}, "itemId is int, not a string"),
    ]
    for method, params, reason in cases:
        params = dict(base, **params)
        assert to_event(method, params) == InvalidNotification(method, params, f"{method}: {reason}")


# Every field a row reads, of the wrong type or missing, in a copy of the real
# params above: the reason names that field (and what it must be), so a log of
# skipped notifications says what codex changed.
FIELD_NAMED = [
    (
        "error",
        dict(ERROR_RETRY, error=dict(ERROR_RETRY["error"], additionalDetails=401)),
        "additionalDetails is int, not a string",
    ),
    ("turn/plan/updated", dict(PLAN_UPDATED, plan=[{"status": "pending"}]), "step is missing"),
    ("turn/plan/updated", dict(PLAN_UPDATED, plan=[{"step": "Edit files", "status": None}]), "status is null"),
    ("turn/plan/updated", dict(PLAN_UPDATED, explanation=["why"]), "explanation is list, not a string"),
    (
        "thread/tokenUsage/updated",
        dict(TOKEN_USAGE, tokenUsage={"last": None, "total": 15}),
        "total is int, not an object",
    ),
    ("turn/completed", dict(TURN_FAILED, turn=dict(TURN_FAILED["turn"], error="boom")), "error is str, not an object"),
    ("turn/completed", dict(TURN_COMPLETED, turn=dict(TURN_COMPLETED["turn"], id=None)), "id is null"),
    (
        "turn/completed",
        dict(TURN_COMPLETED, turn=dict(TURN_COMPLETED["turn"], status=3)),
        "status is int, not a string",
    ),
    ("item/reasoning/summaryTextDelta", dict(SUMMARY_DELTA, itemId=None), "itemId is null"),
    ("item/reasoning/summaryTextDelta", dict(SUMMARY_DELTA, delta=["x"]), "delta is list, not a string"),
    ("item/reasoning/textDelta", dict(TEXT_DELTA, delta=None), "delta is null"),
    ("item/reasoning/textDelta", dict(TEXT_DELTA, contentIndex="0"), "contentIndex is str, not an integer"),
    ("item/plan/delta", dict(PLAN_DELTA, itemId=1), "itemId is int, not a string"),
    ("item/plan/delta", dict(PLAN_DELTA, delta=None), "delta is null"),
    ("item/commandExecution/outputDelta", dict(OUTPUT_DELTA, itemId=None), "itemId is null"),
    ("item/commandExecution/outputDelta", dict(OUTPUT_DELTA, delta={"text": "done"}), "delta is dict, not a string"),
]


@pytest.mark.parametrize("method, params, reason", FIELD_NAMED, ids=[f"{m}:{r}" for m, _, r in FIELD_NAMED])
def test_mapping_invalid_notifications_name_the_field(method, params, reason):
    assert to_event(method, params) == InvalidNotification(method, params, f"{method}: {reason}")


def test_mapping_retrying_error_without_a_message_has_an_empty_one():
    params = {"willRetry": True, "threadId": THREAD, "turnId": TURN, "error": {}}
    assert to_event("error", params) == RetryingError("", None, None)


def test_tool_mcp_text_block_without_text_is_empty():
    item = copy.deepcopy(MCP_ECHO)
    item["result"]["content"] = [{"type": "text"}, {"type": "text", "text": "second"}]
    assert tool_result(item).text == "\nsecond"


def test_tool_mcp_error_without_a_message_is_an_empty_error():
    assert tool_result(dict(MCP_FAILED, error={"code": 1})) == ToolResult("call_mcp_echo", "", True, "failed")


def test_tool_values_are_frozen_and_hashable():
    call, result = tool_call(CMD_COMPLETED), tool_result(CMD_COMPLETED)
    for value in (call, result, TOOL_ITEMS["commandExecution"]):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(value, dataclasses.fields(value)[0].name, "changed")
    assert {call: 1}[tool_call(CMD_COMPLETED)] == 1
    assert hash(result) == hash(tool_result(CMD_COMPLETED))


# -- the common case's fast checks agree with the long way --------------------------

_COMMAND = {
    "id": "call_1",
    "type": "commandExecution",
    "command": "ls",
    "aggregatedOutput": "a\n",
    "exitCode": 0,
    "status": "completed",
}
_BREAKDOWN = {"inputTokens": 5, "cachedInputTokens": 1, "outputTokens": 2, "reasoningOutputTokens": 0, "totalTokens": 7}


def _outcome(row: Any, params: Any) -> Any:
    """What a row makes of ``params``: its result, or the ProtocolError's words."""
    try:
        return row(copy.deepcopy(params))
    except ProtocolError as exc:
        return ("refused", str(exc))


@pytest.mark.parametrize(
    "item",
    [
        _COMMAND,
        {**_COMMAND, "exitCode": None, "aggregatedOutput": None},
        {**_COMMAND, "exitCode": True},  # a bool is no integer
        {**_COMMAND, "exitCode": 1.0},
        {**_COMMAND, "status": 3},
        {"id": "m", "type": "agentMessage", "text": "hi"},
        {"id": "m", "type": "agentMessage", "text": ["hi"]},
        {"id": "m", "type": "agentMessage"},  # a missing field reads as absent
        {"id": 7, "type": "agentMessage", "text": "hi"},
        {"type": "agentMessage", "text": "hi"},
        {"id": "m", "type": None},
        {"id": "m", "type": "somethingNew", "anything": [1]},
        {"id": "r", "type": "reasoning", "summary": ["a"], "content": [2]},
        {"id": "r", "type": "reasoning", "summary": ["a"], "content": ["b"]},
        {"id": "t", "type": "mcpToolCall", "server": "s", "tool": "t", "result": {"content": {}}, "status": "failed"},
        {"id": "t", "type": "mcpToolCall", "server": "s", "tool": "t", "result": None, "status": "completed"},
        ["not", "an", "object"],
        None,
    ],
)
def test_item_checks_by_exact_type_as_the_long_way_does(item: Any) -> None:
    params = {"threadId": "th", "turnId": "tu", "item": item}
    assert _outcome(_mapping._item, params) == _outcome(_mapping._checked_item, params)
    if item is _COMMAND:
        assert _mapping._item(params) is item  # passed as it came: nothing copied


@pytest.mark.parametrize(
    "usage",
    [
        {"last": _BREAKDOWN, "total": _BREAKDOWN, "modelContextWindow": 258400},
        {"last": _BREAKDOWN, "total": None, "modelContextWindow": None},
        {"last": {**_BREAKDOWN, "outputTokens": None}, "total": _BREAKDOWN},  # a null count is 0
        {"last": {**_BREAKDOWN, "outputTokens": False}, "total": _BREAKDOWN},
        {"last": {**_BREAKDOWN, "totalTokens": "7"}, "total": _BREAKDOWN},
        {"last": [1], "total": _BREAKDOWN},
        {"last": _BREAKDOWN, "total": _BREAKDOWN, "modelContextWindow": "big"},
        {"last": _BREAKDOWN, "total": _BREAKDOWN, "modelContextWindow": True},
        "not an object",
    ],
)
def test_token_usage_checks_by_exact_type_as_the_long_way_does(usage: Any) -> None:
    params = {"threadId": "th", "turnId": "tu", "tokenUsage": usage}
    assert _outcome(_mapping._token_usage, params) == _outcome(_mapping._checked_token_usage, params)


def test_a_usage_subclass_reads_a_breakdown_the_long_way() -> None:
    class Counted(Usage):
        pass

    counted = Counted.from_wire(dict(_BREAKDOWN))
    assert type(counted) is Counted and counted == Counted(5, 1, 2, 0, 7)
    assert Usage.from_wire(dict(_BREAKDOWN)) == Usage(5, 1, 2, 0, 7)
