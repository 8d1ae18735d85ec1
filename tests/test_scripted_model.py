"""Tests of the scripted Responses API: unit tests with a plain HTTP client,
and live tests (``-m live``) that check what the real codex makes of each
script kind."""

from __future__ import annotations

import http.client
import json
import logging
import os
import queue
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Any, Dict, Iterator, List, Optional, Tuple

import pytest

from codexmini._errors import CodexminiError, ConfigError
from codexmini.testing.live import scratch_dir
from codexmini.testing.scripted_model import (
    RequestView,
    ScriptedModel,
    ScriptError,
    main,
    matches,
    offered_tools,
    provider_flags,
    stream_events,
)
from conformance.versions import ByVersion, LiveCodex, live_codex, not_recorded

# ---------------------------------------------------------------------------
# helpers


def _function(name: str, **properties: Any) -> Dict[str, Any]:
    return {
        "type": "function",
        "name": name,
        "description": f"the {name} tool",
        "strict": False,
        "parameters": {"type": "object", "properties": properties, "additionalProperties": False},
    }


#: The tools of a request, in the shapes codex 0.149.1 and 0.171.0 send them
#: (abridged: one of each kind; recorded with the scripted model's request log).
TOOLS: List[Dict[str, Any]] = [
    _function("exec_command", cmd={"type": "string"}, yield_time_ms={"type": "number"}),
    _function("update_plan", plan={"type": "array"}),
    {
        "type": "custom",
        "name": "apply_patch",
        "description": "The `apply_patch` tool can be used to edit files. This is a FREEFORM tool.",
        "format": {"type": "grammar", "syntax": "lark", "definition": "start: begin_patch hunk+ end_patch"},
    },
    {
        "type": "namespace",
        "name": "mcp__probe",
        "description": "probe",
        "tools": [_function("echo", text={"type": "string"})],
    },
    {"type": "web_search", "external_web_access": False},
]


def request_body(prompt: str, *after: Dict[str, Any], tools: Optional[List[Any]] = None) -> Dict[str, Any]:
    """A request shaped like codex's: developer message, environment context,
    the prompt, then whatever items follow (tool calls and outputs); it
    offers :data:`TOOLS` unless told otherwise."""

    def msg(role: str, text: str) -> Dict[str, Any]:
        return {"type": "message", "role": role, "content": [{"type": "input_text", "text": text}]}

    items = [
        msg("developer", "<permissions instructions>"),
        msg("user", "<environment_context>\n  <cwd>/ws</cwd>\n</environment_context>"),
        msg("user", prompt),
        *after,
    ]
    return {"model": "gpt-fake", "stream": True, "input": items, "tools": TOOLS if tools is None else tools}


def call(
    model: ScriptedModel,
    body: Any = None,
    method: str = "POST",
    path: str = "/v1/responses",
    raw: Optional[bytes] = None,
) -> Tuple[int, Dict[str, str], bytes]:
    conn = http.client.HTTPConnection(model.host, model.port, timeout=10)
    try:
        data = raw if raw is not None else (json.dumps(body).encode() if method == "POST" else None)
        conn.request(method, path, body=data, headers={"content-type": "application/json"})
        resp = conn.getresponse()
        try:
            return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
        finally:
            resp.close()
    finally:
        conn.close()


def parse_sse(raw: bytes) -> List[Dict[str, Any]]:
    events = []
    for block in raw.decode().split("\n\n"):
        if block.strip():
            fields = dict(line.split(": ", 1) for line in block.strip().split("\n"))
            data = json.loads(fields["data"])
            assert fields["event"] == data["type"]
            events.append(data)
    return events


def stream(script: Dict[str, Any], prompt: str = "go", tools: Optional[List[Any]] = None) -> List[Dict[str, Any]]:
    """Serve ``script``, send one request, return its SSE events."""
    with ScriptedModel(script) as model:
        status, headers, raw = call(model, request_body(prompt, tools=tools))
    assert status == 200
    assert headers["content-type"] == "text/event-stream"
    return parse_sse(raw)


def one(*items: Dict[str, Any], **response: Any) -> Dict[str, Any]:
    return {"rules": [{"respond": dict(response, output=list(items))}]}


def types(events: List[Dict[str, Any]]) -> List[str]:
    return [e["type"][len("response.") :] for e in events]


def wait_for(predicate: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


# ---------------------------------------------------------------------------
# event sequences, one per item kind


def test_scripted_model_message_events() -> None:
    events = stream(one({"type": "message", "id": "msg_1", "deltas": ["Hel", "lo"]}))
    assert types(events) == [
        "created",
        "output_item.added",
        "content_part.added",
        "output_text.delta",
        "output_text.delta",
        "output_text.done",
        "content_part.done",
        "output_item.done",
        "completed",
    ]
    created, added, part_added, d1, d2, text_done, part_done, done, completed = events
    assert created["response"]["id"] == "resp_1"
    assert added["output_index"] == 0
    assert added["item"] == {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "in_progress",
        "content": [],
    }
    assert part_added["part"] == {"type": "output_text", "text": "", "annotations": []}
    assert [d1["delta"], d2["delta"]] == ["Hel", "lo"]
    assert d1["item_id"] == "msg_1" and d1["content_index"] == 0 and d1["output_index"] == 0
    assert text_done["text"] == "Hello"
    assert part_done["part"]["text"] == "Hello"
    assert done["item"]["status"] == "completed"
    assert done["item"]["content"] == [{"type": "output_text", "text": "Hello", "annotations": []}]
    assert completed["response"]["status"] == "completed"
    assert completed["response"]["output"] == [done["item"]]


def test_scripted_model_usage_defaults_and_overrides() -> None:
    default = stream(one({"type": "message", "deltas": []}))[-1]["response"]["usage"]
    assert default == {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 2},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 1},
        "total_tokens": 15,
    }
    usage = {"input_tokens": 100, "output_tokens": 7}
    custom = stream(one(usage=usage))[-1]["response"]["usage"]
    assert custom["input_tokens"] == 100 and custom["total_tokens"] == 107
    assert custom["input_tokens_details"] == {"cached_tokens": 2}


def test_scripted_model_reasoning_events() -> None:
    item = {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [["**Planning** ", "the answer"], ["**Checking** edge cases."]],
        "content": ["raw chain ", "of thought."],
    }
    events = stream(one(item))
    assert types(events) == [
        "created",
        "output_item.added",
        "reasoning_summary_part.added",
        "reasoning_summary_text.delta",
        "reasoning_summary_text.delta",
        "reasoning_summary_text.done",
        "reasoning_summary_part.done",
        "reasoning_summary_part.added",
        "reasoning_summary_text.delta",
        "reasoning_summary_text.done",
        "reasoning_summary_part.done",
        "reasoning_text.delta",
        "reasoning_text.delta",
        "reasoning_text.done",
        "output_item.done",
        "completed",
    ]
    assert events[1]["item"] == {"type": "reasoning", "id": "rs_1", "summary": []}
    assert [e["summary_index"] for e in events[2:11]] == [0, 0, 0, 0, 0, 1, 1, 1, 1]
    assert events[5]["text"] == "**Planning** the answer"
    assert [e["delta"] for e in events[11:13]] == ["raw chain ", "of thought."]
    assert events[13]["text"] == "raw chain of thought."
    done = events[14]["item"]
    assert done["summary"] == [
        {"type": "summary_text", "text": "**Planning** the answer"},
        {"type": "summary_text", "text": "**Checking** edge cases."},
    ]
    assert done["content"] == [{"type": "reasoning_text", "text": "raw chain of thought."}]
    assert isinstance(done["encrypted_content"], str)


def test_scripted_model_reasoning_summary_only() -> None:
    events = stream(one({"type": "reasoning", "summary": [["short"]]}))
    assert "reasoning_text.delta" not in types(events)
    done = events[-2]["item"]
    assert "content" not in done
    assert done["id"] == "rs_1_0"  # generated: request 1, output index 0


def test_scripted_model_function_call_events() -> None:
    args = {"cmd": "echo hi", "yield_time_ms": 10000}
    item = {
        "type": "function_call",
        "call_id": "call_cmd_1",
        "name": "exec_command",
        "arguments": args,
    }
    events = stream(one(item))
    assert types(events) == ["created", "output_item.added", "output_item.done", "completed"]
    added, done = events[1]["item"], events[2]["item"]
    assert added == {
        "type": "function_call",
        "id": "fc_1_0",
        "call_id": "call_cmd_1",
        "name": "exec_command",
        "arguments": "",
        "status": "in_progress",
    }
    assert json.loads(done["arguments"]) == args
    assert done["status"] == "completed"


def test_scripted_model_function_call_namespace_raw_arguments_and_streaming() -> None:
    item = {
        "type": "function_call",
        "id": "fc_9",
        "name": "echo",
        "namespace": "mcp__probe",
        "arguments": '{"text": "hi mcp"}',
        "stream_chunks": 3,
    }
    events = stream(one(item))
    assert types(events) == [
        "created",
        "output_item.added",
        "function_call_arguments.delta",
        "function_call_arguments.delta",
        "function_call_arguments.delta",
        "function_call_arguments.done",
        "output_item.done",
        "completed",
    ]
    assert "".join(e["delta"] for e in events[2:5]) == '{"text": "hi mcp"}'
    assert events[5]["arguments"] == '{"text": "hi mcp"}'
    done = events[6]["item"]
    assert done["namespace"] == "mcp__probe"
    assert done["call_id"] == "call_fc_9"  # generated from the item id
    assert done["arguments"] == '{"text": "hi mcp"}'


def test_scripted_model_custom_tool_call_events() -> None:
    patch = "*** Begin Patch\n*** Add File: hello.txt\n+hello\n*** End Patch\n"
    item = {
        "type": "custom_tool_call",
        "call_id": "call_patch_1",
        "name": "apply_patch",
        "input": patch,
        "stream_chunks": 2,
    }
    events = stream(one(item))
    assert types(events) == [
        "created",
        "output_item.added",
        "custom_tool_call_input.delta",
        "custom_tool_call_input.delta",
        "custom_tool_call_input.done",
        "output_item.done",
        "completed",
    ]
    assert events[1]["item"]["input"] == ""
    assert "".join(e["delta"] for e in events[2:4]) == patch
    assert events[4]["input"] == patch
    done = events[5]["item"]
    assert (done["type"], done["call_id"], done["input"]) == (
        "custom_tool_call",
        "call_patch_1",
        patch,
    )
    assert "namespace" not in done


def test_scripted_model_empty_tool_input_streams_one_empty_delta() -> None:
    item = {"type": "custom_tool_call", "name": "apply_patch", "input": "", "stream_chunks": 4}
    events = stream(one(item))
    assert [e["delta"] for e in events if e["type"].endswith(".delta")] == [""]


def test_scripted_model_web_search_call_events() -> None:
    events = stream(one({"type": "web_search_call", "id": "ws_1", "query": "codex protocol"}))
    assert types(events) == ["created", "output_item.added", "output_item.done", "completed"]
    assert events[1]["item"] == {"type": "web_search_call", "id": "ws_1", "status": "in_progress"}
    assert events[2]["item"]["action"] == {"type": "search", "query": "codex protocol"}


def test_scripted_model_several_items_get_their_output_index() -> None:
    events = stream(one({"type": "reasoning", "summary": [["a"]]}, {"type": "message", "deltas": ["b"]}))
    dones = [e for e in events if e["type"] == "response.output_item.done"]
    assert [e["output_index"] for e in dones] == [0, 1]
    assert [i["id"] for i in events[-1]["response"]["output"]] == ["rs_1_0", "msg_1_1"]


# ---------------------------------------------------------------------------
# tools: only what the request offers, in the form it offers them

PATCH = "*** Begin Patch\n*** Add File: a.txt\n+a\n*** End Patch\n"


def test_scripted_model_offered_tools_by_namespace_and_name() -> None:
    offered = offered_tools(request_body("x"))
    assert set(offered) == {
        (None, "apply_patch"),
        (None, "exec_command"),
        (None, "update_plan"),
        ("mcp__probe", "echo"),
    }
    assert offered[(None, "apply_patch")]["type"] == "custom"
    assert offered[("mcp__probe", "echo")]["type"] == "function"
    # Odd bodies offer nothing, and name-less or malformed entries are skipped.
    odd = [
        {"type": "web_search"},
        "x",
        {"type": "namespace", "name": "ns", "tools": "nope"},
        {"type": "function", "name": 3},
    ]
    assert offered_tools({"tools": odd}) == {}
    assert offered_tools({"tools": [{"type": "namespace", "name": "ns", "tools": [{"type": "function"}, 1]}]}) == {}
    assert offered_tools({"tools": "all of them"}) == offered_tools(None) == offered_tools([]) == {}


def script_error(script: Dict[str, Any], tools: Optional[List[Any]] = None) -> Tuple[ScriptedModel, Dict[str, Any]]:
    """Serve ``script`` to one request; it must be answered 400 with a script error."""
    with ScriptedModel(script) as model:
        status, headers, raw = call(model, request_body("go", tools=tools))
    assert status == 400 and headers["content-type"] == "application/json"
    return model, json.loads(raw)


def test_scripted_model_a_tool_the_request_does_not_offer_is_a_script_error(caplog: pytest.LogCaptureFixture) -> None:
    call_ = {"type": "custom_tool_call", "call_id": "c1", "name": "apply_patch", "input": PATCH}
    script = {"rules": [{"name": "patch", "respond": {"output": [{"type": "message", "deltas": ["x"]}, call_]}}]}
    without_patch = [t for t in TOOLS if t.get("name") != "apply_patch"]
    with caplog.at_level(logging.ERROR, logger="codexmini.testing.scripted_model"):
        model, body = script_error(script, without_patch)
    message = body["error"]["message"]
    assert message.startswith(
        "scripted model: script error in rule 'patch': output[1]: a custom_tool_call of 'apply_patch',"
    )
    assert (
        "(model 'gpt-fake') does not offer that tool; it offers: exec_command, mcp__probe.echo, update_plan" in message
    )
    assert body["error"]["type"] == "invalid_request_error"
    (entry,) = model.requests
    assert entry["status"] == 400 and entry["rule"] == "patch" and entry["error"] == message[len("scripted model: ") :]
    assert model.errors == [entry["error"]]
    assert entry["error"] in caplog.text


@pytest.mark.parametrize(
    "item, tools, problem",
    [
        ({"type": "function_call", "name": "exec_command", "arguments": {}}, [], "it offers: none"),
        # An MCP tool is looked up under its namespace, not its bare name.
        ({"type": "function_call", "name": "echo", "arguments": {}}, None, "a function_call of 'echo'"),
        (
            {"type": "function_call", "name": "echo", "namespace": "mcp__other", "arguments": {}},
            None,
            "'mcp__other.echo'",
        ),
        ({"type": "web_search_call", "query": "q"}, [TOOLS[0]], "offers no web_search tool"),
    ],
)
def test_scripted_model_script_errors_name_the_tool(item: Dict[str, Any], tools: Any, problem: str) -> None:
    _, body = script_error(one(item), tools)
    assert problem in body["error"]["message"]


def test_scripted_model_custom_call_of_a_function_tool_becomes_a_function_call() -> None:
    # A codex that offered apply_patch as a function tool with one string
    # parameter gets a function_call with the patch as that parameter.
    as_function = [_function("apply_patch", input={"type": "string", "description": "the patch"})]
    item = {"type": "custom_tool_call", "call_id": "call_p", "name": "apply_patch", "input": PATCH, "stream_chunks": 2}
    events = stream(one(item), tools=as_function)
    assert types(events)[1:5] == [
        "output_item.added",
        "function_call_arguments.delta",
        "function_call_arguments.delta",
        "function_call_arguments.done",
    ]
    done = events[-2]["item"]
    assert (done["type"], done["id"], done["call_id"], done["name"]) == (
        "function_call",
        "fc_1_0",
        "call_p",
        "apply_patch",
    )
    assert json.loads(done["arguments"]) == {"input": PATCH}


def test_scripted_model_function_call_of_a_custom_tool_becomes_a_custom_call() -> None:
    item = {"type": "function_call", "call_id": "call_p", "name": "apply_patch", "arguments": {"input": PATCH}}
    done = stream(one(item))[-2]["item"]
    assert (done["type"], done["id"], done["call_id"], done["input"]) == (
        "custom_tool_call",
        "ctc_1_0",
        "call_p",
        PATCH,
    )


@pytest.mark.parametrize(
    "item, tools",
    [
        # A function tool with other parameters cannot take a freeform input ...
        ({"type": "custom_tool_call", "name": "exec_command", "input": "echo hi"}, None),
        ({"type": "custom_tool_call", "name": "f", "input": "x"}, [_function("f", n={"type": "integer"})]),
        ({"type": "custom_tool_call", "name": "f", "input": "x"}, [{"type": "function", "name": "f"}]),
        # ... and a custom tool takes one string, not a JSON object.
        ({"type": "function_call", "name": "apply_patch", "arguments": {"a": "x", "b": "y"}}, None),
        ({"type": "function_call", "name": "apply_patch", "arguments": '{"input": "x"}'}, None),
        ({"type": "function_call", "name": "apply_patch", "arguments": {"input": 3}}, None),
        # A kind of tool the model cannot call by name at all.
        ({"type": "function_call", "name": "f", "arguments": {}}, [{"type": "local_shell", "name": "f"}]),
    ],
)
def test_scripted_model_a_call_that_cannot_take_the_offered_form_is_a_script_error(
    item: Dict[str, Any], tools: Any
) -> None:
    _, body = script_error(one(item), tools)
    assert (
        "cannot be converted" in body["error"]["message"]
        and "write the call in the form offered" in body["error"]["message"]
    )


def test_scripted_model_stream_events_without_a_view_take_items_as_written() -> None:
    call_ = {"type": "custom_tool_call", "name": "anything", "input": "x"}
    events = stream_events({"output": [call_]}, 1)
    assert events[-2]["item"]["type"] == "custom_tool_call"
    with pytest.raises(ScriptError, match=r"output\[0\]: a custom_tool_call of 'anything'"):
        stream_events({"output": [call_]}, 1, RequestView(request_body("x")))


# ---------------------------------------------------------------------------
# stream endings


def test_scripted_model_failed_ends_with_response_failed() -> None:
    failed = {"code": "context_length_exceeded", "message": "too long"}
    events = stream(one({"type": "message", "deltas": ["x"]}, failed=failed))
    assert types(events)[-1] == "failed"
    assert events[-1]["response"]["status"] == "failed"
    assert events[-1]["response"]["error"] == failed


def test_scripted_model_incomplete_ends_with_response_incomplete() -> None:
    events = stream(one(incomplete="max_output_tokens"))
    assert types(events) == ["created", "incomplete"]
    assert events[-1]["response"]["incomplete_details"] == {"reason": "max_output_tokens"}


@pytest.mark.parametrize("cut", [0, 1, 4])
def test_scripted_model_cut_stream_sends_only_the_first_events(cut: int) -> None:
    events = stream(one({"type": "message", "deltas": ["a", "b", "c"]}, cut_after_events=cut))
    assert types(events) == ["created", "output_item.added", "content_part.added", "output_text.delta"][:cut]


# ---------------------------------------------------------------------------
# rules, times, default, errors, the request log


def test_scripted_model_rules_times_and_default() -> None:
    script = {
        "rules": [
            {"name": "boom", "times": 2, "respond": {"http_status": 500}},
            {"when": {"user_contains": "hello"}, "respond": {"output": []}},
        ],
        "default": {"output": [{"type": "message", "deltas": ["fallback"]}]},
    }
    with ScriptedModel(script) as model:
        statuses = [call(model, request_body("hello"))[0] for _ in range(3)]
        status, _, raw = call(model, request_body("other"))
    assert statuses == [500, 500, 200]
    assert status == 200 and parse_sse(raw)[-2]["item"]["content"][0]["text"] == "fallback"
    assert [(r["rule"], r["status"]) for r in model.requests] == [
        ("boom", 500),
        ("boom", 500),
        (1, 200),
        ("default", 200),
    ]


def test_scripted_model_no_match_is_400_and_logged() -> None:
    script = {"rules": [{"when": {"user_contains": "nope"}, "respond": {"output": []}}]}
    with ScriptedModel(script) as model:
        status, headers, raw = call(model, request_body("say hi"))
    assert status == 400
    assert headers["content-type"] == "application/json"
    error = json.loads(raw)["error"]
    assert error["type"] == "invalid_request_error"
    assert "no rule matched" in error["message"] and "'say hi'" in error["message"]
    assert model.requests == [{"path": "/v1/responses", "body": request_body("say hi"), "rule": None, "status": 400}]


def test_scripted_model_unknown_paths_are_404_and_logged() -> None:
    with ScriptedModel({"default": {"output": []}}) as model:
        get = call(model, method="GET", path="/v1/models")
        post = call(model, {"x": 1}, path="/v1/other?q=1")
    assert get[0] == post[0] == 404
    assert "GET /v1/models" in json.loads(get[2])["error"]["message"]
    assert [(r["path"], r["body"], r["rule"], r["status"]) for r in model.requests] == [
        ("/v1/models", None, None, 404),
        ("/v1/other", {"x": 1}, None, 404),
    ]


def test_scripted_model_http_error_status_headers_and_body() -> None:
    body = {"error": {"type": "server_error", "message": "boom"}}
    script = {
        "rules": [
            {
                "when": {"user_contains": "json"},
                "respond": {"http_status": 429, "body": body, "headers": {"Retry-After": "1"}},
            },
            {"when": {"user_contains": "text"}, "respond": {"http_status": 401, "body": "go away"}},
            {"respond": {"http_status": 503}},
        ]
    }
    with ScriptedModel(script) as model:
        status, headers, raw = call(model, request_body("json"))
        assert (status, headers["retry-after"], json.loads(raw)) == (429, "1", body)
        assert headers["content-type"] == "application/json"
        status, headers, raw = call(model, request_body("text"))
        assert (status, headers["content-type"], raw) == (401, "text/plain", b"go away")
        status, _, raw = call(model, request_body("other"))
        assert status == 503 and json.loads(raw)["error"]["message"] == "scripted model: HTTP 503"


def test_scripted_model_request_log_keeps_bodies_in_order() -> None:
    with ScriptedModel({"default": {"output": []}}) as model:
        call(model, request_body("first"))
        call(model, raw=b"not json")
        call(model, raw=b"")
    assert [r["body"] for r in model.requests] == [request_body("first"), None, None]
    assert all(r["rule"] == "default" and r["status"] == 200 for r in model.requests)


def test_scripted_model_set_script_replaces_and_resets_times() -> None:
    first = {"rules": [{"name": "once", "times": 1, "respond": {"output": []}}]}
    with ScriptedModel(first) as model:
        assert call(model, request_body("a"))[0] == 200
        assert call(model, request_body("a"))[0] == 400
        model.set_script(first)
        assert call(model, request_body("a"))[0] == 200
        with pytest.raises(ConfigError):
            model.set_script({"rules": 1})
        assert call(model, request_body("a"))[0] == 400  # the old script is kept
        model.set_script({"default": {"http_status": 418}})
        assert call(model, request_body("a"))[0] == 418
    assert [r["rule"] for r in model.requests] == ["once", None, "once", None, "default"]


# ---------------------------------------------------------------------------
# matching


def _call_output(kind: str, call_id: str, output: Any) -> Dict[str, Any]:
    return {"type": kind, "call_id": call_id, "output": output}


def test_scripted_model_user_contains_looks_at_the_last_user_message_only() -> None:
    view = RequestView(request_body("say hi"))
    assert matches({"user_contains": "say hi"}, view)
    assert not matches({"user_contains": "environment_context"}, view)
    assert matches({"input_contains": "environment_context"}, view)
    assert matches({}, view)


def test_scripted_model_tool_output_matching() -> None:
    body = request_body(
        "run it",
        {"type": "function_call", "call_id": "call_1", "name": "exec_command", "arguments": "{}"},
        _call_output("function_call_output", "call_1", "Output:\nhi\n"),
        {"type": "custom_tool_call", "call_id": "call_2", "name": "apply_patch", "input": ""},
        _call_output("custom_tool_call_output", "call_2", [{"type": "input_text", "text": "Success"}]),
    )
    view = RequestView(body)
    assert matches({"last_item": "custom_tool_call_output", "last_call_id": "call_2"}, view)
    assert matches({"tool_output_contains": "Success", "user_contains": "run"}, view)
    assert not matches({"tool_output_contains": "hi"}, view)  # only the last output
    assert matches({"input_contains": "hi\n"}, view)
    assert not matches({"last_call_id": "call_1"}, view)
    assert not matches({"last_item": "message", "tool_output_contains": "Success"}, view)


def test_scripted_model_matching_odd_bodies() -> None:
    assert RequestView(None).users == [] and RequestView(None).last == {}
    assert not matches({"last_item": "message"}, RequestView({"input": "text"}))
    odd = {
        "input": [
            "not an item",
            {"role": "user", "content": "plain string content"},
            _call_output("function_call_output", "c", {"structured": True}),
            _call_output("function_call_output", "d", None),
        ]
    }
    view = RequestView(odd)
    assert view.users == ["plain string content"]
    assert view.outputs == ['{"structured": true}', ""]
    assert matches({"input_contains": "structured"}, view)


# ---------------------------------------------------------------------------
# concurrency, delays, stop


def read_event(resp: http.client.HTTPResponse) -> Dict[str, Any]:
    lines: List[bytes] = []
    while True:
        line = resp.readline()
        assert line, "the stream ended"
        if line == b"\n":
            return parse_sse(b"".join(lines))[0]
        lines.append(line)


def test_scripted_model_serves_concurrently_and_stop_aborts_slow_streams() -> None:
    slow = {"output": [{"type": "message", "deltas": ["a", "b"]}], "delay_ms": 60000}
    script = {
        "rules": [
            {"when": {"user_contains": "slow"}, "respond": slow},
            {"when": {"user_contains": "fast"}, "respond": {"output": []}},
        ]
    }
    model = ScriptedModel(script).start()
    conn = http.client.HTTPConnection(model.host, model.port, timeout=10)
    try:
        conn.request("POST", "/v1/responses", body=json.dumps(request_body("slow")))
        resp = conn.getresponse()
        try:
            assert read_event(resp)["type"] == "response.created"
            # The slow stream now sleeps a minute before its next event; a
            # second request is answered in the meantime.
            status, _, raw = call(model, request_body("fast"))
            assert status == 200 and types(parse_sse(raw)) == ["created", "completed"]
            model.stop()
            assert resp.read() == b""  # abandoned, not finished
        finally:
            resp.close()
    finally:
        conn.close()
        model.stop()
    model.stop()  # idempotent
    assert [r["rule"] for r in model.requests] == [0, 1]


def test_scripted_model_lifecycle() -> None:
    model = ScriptedModel({"rules": []})
    with pytest.raises(CodexminiError, match="no port until it is started"):
        assert model.url
    model.stop()  # before start: nothing to do
    with model:
        assert model.start() is model  # already running
        url = model.url
        assert url == f"http://127.0.0.1:{model.port}/v1"
    with pytest.raises(OSError):
        call(model, request_body("x"))  # closed
    assert ScriptedModel({}, port=4242).url == "http://127.0.0.1:4242/v1"


def test_scripted_model_survives_a_client_that_hangs_up(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="codexmini.testing.scripted_model")
    huge = one({"type": "message", "deltas": ["x" * 8_000_000]})
    with ScriptedModel(huge) as model:
        conn = http.client.HTTPConnection(model.host, model.port, timeout=10)
        try:
            conn.request("POST", "/v1/responses", body=json.dumps(request_body("go")))
            resp = conn.getresponse()
            resp.read(100)
            resp.close()
        finally:
            conn.close()
        wait_for(lambda: "went away mid-stream" in caplog.text)
        assert call(model, request_body("again"))[0] == 200


def test_scripted_model_logs_a_broken_request(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="codexmini.testing.scripted_model")
    with ScriptedModel({"default": {"output": []}}) as model:
        with socket.create_connection((model.host, model.port), timeout=10) as sock:
            sock.sendall(b"POST /v1/responses HTTP/1.1\r\nContent-Length: abc\r\n\r\n")
            assert sock.recv(100) == b""  # closed without an answer
        wait_for(lambda: "error serving" in caplog.text)
        assert model.requests == []


# ---------------------------------------------------------------------------
# validation


BAD_SCRIPTS = [
    ([], "script: must be an object"),
    ({"rulez": []}, "script: unknown key 'rulez'"),
    ({"rules": {}}, "rules: must be a list of rules"),
    ({"rules": [{}]}, "rules[0]: missing key 'respond'"),
    ({"rules": [{"respond": {}, "times": 0}]}, "rules[0].times: must be a positive integer"),
    ({"rules": [{"respond": {}, "times": True}]}, "rules[0].times: must be a positive integer"),
    ({"rules": [{"respond": {}, "when": {"user": "x"}}]}, "rules[0].when: unknown key 'user'"),
    (
        {"rules": [{"respond": {}, "when": {"last_item": 1}}]},
        "rules[0].when.last_item: must be a string",
    ),
    ({"rules": [{"respond": {}, "name": None}]}, "rules[0].name: must be a string"),
    (
        {"rules": [{"respond": {}}, {}, {"respond": {"output": [{"type": "foo"}]}}]},
        "rules[1]: missing key 'respond'",
    ),
    (
        {"rules": [{"respond": {}}, {"respond": {}}, {"respond": {"output": [{"type": "foo"}]}}]},
        "rules[2].respond.output[0]: unknown item type 'foo'",
    ),
    (
        {"default": {"output": [{"deltas": []}]}},
        "default.output[0]: must be an object with a string 'type'",
    ),
    (
        {"default": {"output": ["message"]}},
        "default.output[0]: must be an object with a string 'type'",
    ),
    ({"default": {"output": {}}}, "default.output: must be a list of items"),
    ({"default": {"output": [{"type": "message"}]}}, "default.output[0]: missing key 'deltas'"),
    (
        {"default": {"output": [{"type": "message", "deltas": "Hello"}]}},
        "default.output[0].deltas: must be a list of strings",
    ),
    (
        {"default": {"output": [{"type": "message", "deltas": [], "text": "x"}]}},
        "default.output[0]: unknown key 'text'",
    ),
    (
        {"default": {"output": [{"type": "reasoning", "summary": ["flat"]}]}},
        "default.output[0].summary[0]: must be a list of strings",
    ),
    (
        {"default": {"output": [{"type": "reasoning", "summary": "flat"}]}},
        "default.output[0].summary: must be a list of lists of strings",
    ),
    (
        {"default": {"output": [{"type": "function_call", "name": "f", "arguments": 3}]}},
        "default.output[0].arguments: must be an object or a JSON string",
    ),
    (
        {"default": {"output": [{"type": "function_call", "arguments": {}}]}},
        "default.output[0]: missing key 'name'",
    ),
    (
        {"default": {"output": [{"type": "custom_tool_call", "name": "p", "input": "", "namespace": "n"}]}},
        "default.output[0]: unknown key 'namespace'",
    ),
    (
        {"default": {"output": [{"type": "custom_tool_call", "name": "p", "input": "", "stream_chunks": -1}]}},
        "default.output[0].stream_chunks: must be a non-negative integer",
    ),
    (
        {"default": {"output": [{"type": "web_search_call"}]}},
        "default.output[0]: missing key 'query'",
    ),
    (
        {"default": {"usage": {"input_tokens": -1}}},
        "default.usage.input_tokens: must be a non-negative integer",
    ),
    ({"default": {"usage": {"tokens": 1}}}, "default.usage: unknown key 'tokens'"),
    ({"default": {"delay_ms": "slow"}}, "default.delay_ms: must be a non-negative number"),
    ({"default": {"delay_ms": float("inf")}}, "default.delay_ms: must be a non-negative number"),
    (
        {"default": {"cut_after_events": 1.5}},
        "default.cut_after_events: must be a non-negative integer",
    ),
    ({"default": {"failed": {"message": "x"}}}, "default.failed: missing key 'code'"),
    ({"default": {"failed": "server_error"}}, "default.failed: must be an object"),
    ({"default": {"incomplete": 1}}, "default.incomplete: must be a string"),
    (
        {"default": {"failed": {"code": "x"}, "incomplete": "max_output_tokens"}},
        "default: 'failed' and 'incomplete' cannot both be set",
    ),
    ({"default": {"http_status": 99}}, "default.http_status: must be an integer from 200 to 599"),
    ({"default": {"http_status": 500, "output": []}}, "default: unknown key 'output'"),
    (
        {"default": {"http_status": 500, "headers": {"a": 1}}},
        "default.headers: must be an object of strings",
    ),
    ({"default": "oops"}, "default: must be an object"),
]


@pytest.mark.parametrize("script, message", BAD_SCRIPTS, ids=[m for _, m in BAD_SCRIPTS])
def test_scripted_model_rejects_bad_scripts(script: Any, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        ScriptedModel(script)
    assert str(info.value) == message


def test_scripted_model_accepts_the_documented_nulls() -> None:
    null: Dict[str, Any] = {
        "output": [],
        "cut_after_events": None,
        "failed": None,
        "incomplete": None,
        "delay_ms": 0.5,
    }
    assert types(stream({"default": null})) == ["created", "completed"]


def test_scripted_model_copies_the_script() -> None:
    deltas = ["a"]
    model = ScriptedModel({"default": {"output": [{"type": "message", "deltas": deltas}]}})
    deltas.append("b")
    with model:
        events = parse_sse(call(model, request_body("x"))[2])
    assert events[-2]["item"]["content"][0]["text"] == "a"


# ---------------------------------------------------------------------------
# from_file, provider_flags, main


def test_scripted_model_from_file(tmp_path: Any) -> None:
    good = tmp_path / "script.json"
    good.write_text(json.dumps({"default": {"http_status": 402}}))
    with ScriptedModel.from_file(good) as model:
        assert call(model, request_body("x"))[0] == 402
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ConfigError, match="bad.json: cannot read the script"):
        ScriptedModel.from_file(bad)
    with pytest.raises(ConfigError, match="missing.json: cannot read the script"):
        ScriptedModel.from_file(tmp_path / "missing.json")
    invalid = tmp_path / "invalid.json"
    invalid.write_text(json.dumps({"rules": [{}]}))
    with pytest.raises(ConfigError, match=r"^rules\[0\]: missing key 'respond'$"):
        ScriptedModel.from_file(invalid)


def test_scripted_model_provider_flags() -> None:
    assert provider_flags("http://127.0.0.1:5/v1") == [
        "-c",
        'model_provider="codexmini"',
        "-c",
        'model_providers.codexmini={name="codexmini",base_url="http://127.0.0.1:5/v1",'
        'wire_api="responses",env_key="CODEXMINI_API_KEY"}',
    ]
    assert provider_flags("http://h/v1", provider="fake", env_key="FAKE_KEY")[3] == (
        'model_providers.fake={name="fake",base_url="http://h/v1",wire_api="responses",env_key="FAKE_KEY"}'
    )
    with pytest.raises(ConfigError, match="provider name 'a.b'"):
        provider_flags("http://h/v1", provider="a.b")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_scripted_model_main_serves_until_sigterm(tmp_path: Any, capsys: pytest.CaptureFixture) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"default": {"output": []}}))
    port = _free_port()
    probe = ScriptedModel({}, port=port)  # only for its host and port

    def poke_then_stop() -> None:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                call(probe, request_body("hello"))
                break
            except OSError:
                time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGTERM)

    before = signal.getsignal(signal.SIGTERM)
    helper = threading.Thread(target=poke_then_stop)
    helper.start()
    try:
        assert main([str(script), "--port", str(port)]) == 0
    finally:
        helper.join(15)
    assert signal.getsignal(signal.SIGTERM) is before
    out = capsys.readouterr().out
    assert out == f"http://127.0.0.1:{port}/v1\nserved 1 requests\n"


def test_scripted_model_main_rejects_a_bad_script(tmp_path: Any, capsys: pytest.CaptureFixture) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"rules": "x"}))
    assert main([str(script)]) == 2
    assert capsys.readouterr().err == "error: rules: must be a list of rules\n"


def test_scripted_model_runs_as_a_module(tmp_path: Any) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"default": {"output": [{"type": "message", "deltas": ["hi"]}]}}))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.Popen(
        [sys.executable, "-m", "codexmini.testing", "model", str(script)],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    try:
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            assert sel.select(timeout=20), "no URL printed"
        url = proc.stdout.readline().decode().strip()
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        assert url == f"http://127.0.0.1:{port}/v1"
        model = ScriptedModel({}, port=port)
        assert types(parse_sse(call(model, request_body("x"))[2]))[-1] == "completed"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0
    assert out == b"served 1 requests\n"
    assert b"-> 200" in err  # requests are logged to stderr


# ---------------------------------------------------------------------------
# live: what the real codex makes of each script kind

#: The binary the live suite runs against (``make test-live CODEX=<v>`` picks another).
LIVE = live_codex()
TURN_TIMEOUT_S = 90.0
#: A model slug for which codex offers apply_patch, by version (``make drift
#: TO=0.171.0`` found 0.171.0 no longer offers it for gpt-5.4).
PATCH_MODEL = ByVersion({"0.149.1": "gpt-5.4", "0.171.0": "gpt-5.5"}, why="which slug codex offers apply_patch for")
#: How many requests a response.incomplete costs with one stream retry:
#: 0.149.1 retries it like a disconnect, 0.171.0 fails the turn at once.
INCOMPLETE_REQUESTS = ByVersion({"0.149.1": 2, "0.171.0": 1}, why="whether codex retries response.incomplete")


class RawCodex:
    """A minimal JSON-RPC driver of ``codex app-server`` over stdio, kept here
    so these tests check the scripted model without the real client."""

    def __init__(self, root: str, url: str, model: str, extra: List[str]) -> None:
        self.home = os.path.join(root, "home")
        self.ws = os.path.join(root, "ws")
        os.makedirs(self.home)
        os.makedirs(self.ws)
        with open(os.path.join(self.home, "config.toml"), "w") as f:
            f.write(f'[projects."{self.ws}"]\ntrust_level = "trusted"\n')
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": os.environ.get("HOME", root),
            "CODEX_HOME": self.home,  # not under /tmp: codex refuses helper binaries there
            "CODEXMINI_API_KEY": "sk-scripted",
            "NO_COLOR": "1",
        }
        assert isinstance(LIVE, LiveCodex)
        args = [LIVE.path, "app-server", *provider_flags(url), "-c", f'model="{model}"', *extra]
        self.stderr = open(os.path.join(root, "stderr.txt"), "wb")
        self.proc = subprocess.Popen(
            args,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            env=env,
            cwd=self.ws,
        )
        self.frames: "queue.Queue[Optional[Dict[str, Any]]]" = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.seen: List[Dict[str, Any]] = []
        self.server_requests: List[Dict[str, Any]] = []
        self.next_id = 1

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.frames.put(json.loads(line))
        self.frames.put(None)

    def send(self, frame: Dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(frame) + "\n").encode())
        self.proc.stdin.flush()

    def until(self, done: Any) -> Dict[str, Any]:
        """Read frames (kept in ``self.seen``) up to the first one ``done`` accepts."""
        deadline = time.monotonic() + TURN_TIMEOUT_S
        while True:
            try:
                frame = self.frames.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"codex said nothing in time; last: {self.seen[-3:]}") from None
            assert frame is not None, "codex exited"
            if "id" in frame and "method" in frame:  # nothing should ask under approvalPolicy never
                self.server_requests.append(frame)
                self.send({"id": frame["id"], "error": {"code": -32601, "message": "not handled"}})
            self.seen.append(frame)
            if done(frame):
                return frame

    def request(self, method: str, params: Dict[str, Any]) -> Dict[str, Any]:
        rid, self.next_id = self.next_id, self.next_id + 1
        self.send({"id": rid, "method": method, "params": params})
        reply = self.until(lambda f: f.get("id") == rid and "method" not in f)
        assert "result" in reply, reply
        return reply["result"]

    def turn(self, prompt: str) -> List[Dict[str, Any]]:
        """Start a thread, run one turn; the notifications up to turn/completed."""
        self.request(
            "initialize",
            {"clientInfo": {"name": "codexmini-tests", "version": "0"}, "capabilities": {}},
        )
        params = {"cwd": self.ws, "sandbox": "workspace-write", "approvalPolicy": "never"}
        thread = self.request("thread/start", params)["thread"]["id"]
        start = len(self.seen)
        self.request("turn/start", {"threadId": thread, "input": [{"type": "text", "text": prompt}]})
        self.until(lambda f: f.get("method") == "turn/completed")
        return [f for f in self.seen[start:] if "method" in f and "id" not in f]

    def close(self) -> None:
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.close()  # codex exits at once when stdin closes
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        finally:
            self.reader.join(10)
            assert self.proc.stdout is not None
            self.proc.stdout.close()
            self.stderr.close()


@pytest.fixture
def live() -> Iterator[Any]:
    """``live(script, prompt, model=..., extra=...)`` runs one codex turn
    against the script: (notifications, the model's request log, workspace)."""
    if isinstance(LIVE, str):
        pytest.skip(LIVE)
    if not LIVE.recorded:
        pytest.skip(not_recorded(LIVE))
    root = scratch_dir("codexmini-scripted-")
    runs = 0

    def run(
        script: Dict[str, Any], prompt: str, model: str = "gpt-fake", extra: Tuple[str, ...] = ()
    ) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]], str]:
        nonlocal runs
        runs += 1
        with ScriptedModel(script) as scripted:
            codex = RawCodex(os.path.join(root, str(runs)), scripted.url, model, list(extra))
            try:
                notes = codex.turn(prompt)
                assert codex.server_requests == []
            finally:
                codex.close()
        return notes, scripted.requests, codex.ws

    try:
        yield run
    finally:
        shutil.rmtree(root, ignore_errors=True)


def items(notes: List[Dict[str, Any]], method: str, kind: str) -> List[Dict[str, Any]]:
    return [n["params"]["item"] for n in notes if n["method"] == method and n["params"]["item"]["type"] == kind]


def params(notes: List[Dict[str, Any]], method: str) -> List[Dict[str, Any]]:
    return [n["params"] for n in notes if n["method"] == method]


def completed_turn(notes: List[Dict[str, Any]]) -> Dict[str, Any]:
    assert notes[-1]["method"] == "turn/completed"
    return notes[-1]["params"]["turn"]


@pytest.mark.live
def test_scripted_model_live_streamed_message(live: Any) -> None:
    script = {
        "rules": [
            {
                "name": "hi",
                "when": {"user_contains": "say hi"},
                "respond": {
                    "output": [{"type": "message", "id": "msg_1", "deltas": ["Hel", "lo", "!"]}],
                    "usage": {
                        "input_tokens": 100,
                        "cached_tokens": 20,
                        "output_tokens": 7,
                        "reasoning_tokens": 3,
                    },
                },
            }
        ]
    }
    notes, requests, _ = live(script, "say hi")
    assert [p["delta"] for p in params(notes, "item/agentMessage/delta")] == ["Hel", "lo", "!"]
    assert [(i["id"], i["text"]) for i in items(notes, "item/completed", "agentMessage")] == [("msg_1", "Hello!")]
    last = params(notes, "thread/tokenUsage/updated")[-1]["tokenUsage"]["last"]
    assert (last["inputTokens"], last["cachedInputTokens"], last["outputTokens"]) == (100, 20, 7)
    assert (last["reasoningOutputTokens"], last["totalTokens"]) == (3, 107)
    assert completed_turn(notes)["status"] == "completed"
    assert [(r["path"], r["rule"], r["status"]) for r in requests] == [("/v1/responses", "hi", 200)]


@pytest.mark.live
def test_scripted_model_live_reasoning(live: Any) -> None:
    reasoning = {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [["**Planning** ", "the answer"], ["**Checking** edge cases."]],
        "content": ["raw chain ", "of thought."],
    }
    answer = {"type": "message", "deltas": ["ok"]}
    notes, _, _ = live(one(reasoning, answer), "think first")
    assert [p["summaryIndex"] for p in params(notes, "item/reasoning/summaryPartAdded")] == [0, 1]
    assert [(p["summaryIndex"], p["delta"]) for p in params(notes, "item/reasoning/summaryTextDelta")] == [
        (0, "**Planning** "),
        (0, "the answer"),
        (1, "**Checking** edge cases."),
    ]
    assert [p["delta"] for p in params(notes, "item/reasoning/textDelta")] == [
        "raw chain ",
        "of thought.",
    ]
    # (0.171.0 adds the item's startedAtMs/completedAtMs.)
    keys = ("type", "id", "summary", "content")
    assert [{k: i[k] for k in keys} for i in items(notes, "item/completed", "reasoning")] == [
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": ["**Planning** the answer", "**Checking** edge cases."],
            "content": ["raw chain of thought."],
        }
    ]
    assert completed_turn(notes)["status"] == "completed"


@pytest.mark.live
def test_scripted_model_live_exec_command(live: Any) -> None:
    call_ = {
        "type": "function_call",
        "call_id": "call_cmd_1",
        "name": "exec_command",
        "arguments": {"cmd": "echo hi", "yield_time_ms": 10000},
        "stream_chunks": 3,
    }
    script = {
        "rules": [
            {
                "name": "answer",
                "when": {
                    "last_item": "function_call_output",
                    "last_call_id": "call_cmd_1",
                    "tool_output_contains": "hi",
                },
                "respond": {"output": [{"type": "message", "deltas": ["the command said hi"]}]},
            },
            {"name": "call", "when": {"user_contains": "run it"}, "respond": {"output": [call_]}},
        ]
    }
    notes, requests, ws = live(script, "run it")
    started = items(notes, "item/started", "commandExecution")
    done = items(notes, "item/completed", "commandExecution")
    assert [i["id"] for i in started] == [i["id"] for i in done] == ["call_cmd_1"]
    assert done[0]["status"] == "completed" and done[0]["exitCode"] == 0
    assert done[0]["commandActions"] == [{"type": "unknown", "command": "echo hi"}]
    assert done[0]["cwd"] == ws
    assert [r["rule"] for r in requests] == ["call", "answer"]
    assert items(notes, "item/completed", "agentMessage")[-1]["text"] == "the command said hi"
    assert completed_turn(notes)["status"] == "completed"


@pytest.mark.live
def test_scripted_model_live_apply_patch(live: Any) -> None:
    patch = "*** Begin Patch\n*** Add File: hello.txt\n+hello\n*** End Patch\n"
    call_ = {
        "type": "custom_tool_call",
        "call_id": "call_patch_1",
        "name": "apply_patch",
        "input": patch,
    }
    script = {
        "rules": [
            {
                "name": "answer",
                "when": {
                    "last_item": "custom_tool_call_output",
                    "tool_output_contains": "hello.txt",
                },
                "respond": {"output": [{"type": "message", "deltas": ["patched"]}]},
            },
            {"name": "patch", "respond": {"output": [call_]}},
        ]
    }
    # apply_patch is offered (as a custom tool) only for some slugs.
    assert isinstance(LIVE, LiveCodex) and LIVE.version is not None
    notes, requests, ws = live(script, "patch please", model=PATCH_MODEL.at(LIVE.version))
    done = items(notes, "item/completed", "fileChange")
    assert [(i["id"], i["status"]) for i in done] == [("call_patch_1", "completed")]
    assert done[0]["changes"] == [{"path": os.path.join(ws, "hello.txt"), "kind": {"type": "add"}, "diff": "hello\n"}]
    assert params(notes, "turn/diff/updated")
    with open(os.path.join(ws, "hello.txt")) as f:
        assert f.read() == "hello\n"
    assert [r["rule"] for r in requests] == ["patch", "answer"]
    assert completed_turn(notes)["status"] == "completed"


@pytest.mark.live
def test_scripted_model_live_web_search(live: Any) -> None:
    search = {"type": "web_search_call", "id": "ws_1", "query": "codex app-server protocol"}
    notes, _, _ = live(one(search, {"type": "message", "deltas": ["found it"]}), "search")
    assert items(notes, "item/started", "webSearch")[0]["action"] == {"type": "other"}
    done = items(notes, "item/completed", "webSearch")
    assert [(i["id"], i["query"]) for i in done] == [("ws_1", "codex app-server protocol")]
    assert done[0]["action"]["type"] == "search"


# codex retries a failing model 5 times at two levels (30 HTTP calls, about
# 24 s, for an HTTP 500); the provider's own keys bring that down to 1 + 1.
LOW_RETRIES = (
    "-c",
    "model_providers.codexmini.request_max_retries=1",
    "-c",
    "model_providers.codexmini.stream_max_retries=1",
)


@pytest.mark.live
def test_scripted_model_live_http_500_fails_the_turn(live: Any) -> None:
    boom = {"http_status": 500, "body": {"error": {"type": "server_error", "message": "boom"}}}
    notes, requests, _ = live({"rules": [{"name": "boom", "respond": boom}]}, "hi", extra=LOW_RETRIES)
    assert [r["status"] for r in requests] == [500] * 4  # 2 stream attempts x 2 request attempts
    errors = params(notes, "error")
    assert [e["willRetry"] for e in errors] == [True, False]
    assert errors[0]["error"]["message"] == "Reconnecting... 1/1"
    turn = completed_turn(notes)
    assert turn["status"] == "failed"
    assert turn["error"]["codexErrorInfo"] == "internalServerError"


@pytest.mark.live
def test_scripted_model_live_cut_stream_then_ok(live: Any) -> None:
    cut = {"output": [{"type": "message", "deltas": ["partial", "more"]}], "cut_after_events": 4}
    ok = {"output": [{"type": "message", "id": "msg_ok", "deltas": ["fine"]}]}
    script = {"rules": [{"name": "cut", "times": 2, "respond": cut}, {"name": "ok", "respond": ok}]}
    notes, requests, _ = live(script, "hi")
    assert [r["rule"] for r in requests] == ["cut", "cut", "ok"]
    started = [i["id"] for i in items(notes, "item/started", "agentMessage")]
    completed = [i["id"] for i in items(notes, "item/completed", "agentMessage")]
    assert len(started) == 3 and started[-1] == "msg_ok"
    assert completed == ["msg_ok"]  # the two cut messages are never completed
    retries = params(notes, "error")
    assert [e["willRetry"] for e in retries] == [True, True]
    assert "stream closed before response.completed" in retries[0]["error"]["additionalDetails"]
    assert completed_turn(notes)["status"] == "completed"


@pytest.mark.live
def test_scripted_model_live_response_failed_context_window(live: Any) -> None:
    failed = {"code": "context_length_exceeded", "message": "too long"}
    notes, requests, _ = live(one(failed=failed), "hi")
    assert len(requests) == 1  # not retried
    turn = completed_turn(notes)
    assert turn["status"] == "failed"
    assert turn["error"]["codexErrorInfo"] == "contextWindowExceeded"


@pytest.mark.live
def test_scripted_model_live_response_incomplete(live: Any) -> None:
    response = one({"type": "message", "id": "msg_inc", "deltas": ["part"]}, incomplete="max_output_tokens")
    notes, requests, _ = live(response, "hi", extra=LOW_RETRIES)
    assert isinstance(LIVE, LiveCodex) and LIVE.version is not None
    attempts = INCOMPLETE_REQUESTS.at(LIVE.version)
    assert len(requests) == attempts
    # the same item id is started and completed once per attempt
    assert [i["id"] for i in items(notes, "item/completed", "agentMessage")] == ["msg_inc"] * attempts
    turn = completed_turn(notes)
    assert turn["status"] == "failed"
    assert "max_output_tokens" in turn["error"]["message"]


@pytest.mark.live
def test_scripted_model_live_refuses_a_tool_codex_did_not_offer(live: Any) -> None:
    # gpt-fake has no apply_patch in any version: the script's call is refused
    # with the reason, which codex reports as the turn's error.
    call_ = {
        "type": "custom_tool_call",
        "call_id": "call_p",
        "name": "apply_patch",
        "input": "*** Begin Patch\n*** End Patch\n",
    }
    notes, requests, _ = live({"rules": [{"name": "patch", "respond": {"output": [call_]}}]}, "patch please")
    (request,) = requests
    assert request["status"] == 400 and "does not offer that tool" in request["error"]
    turn = completed_turn(notes)
    assert turn["status"] == "failed"
    assert "script error in rule 'patch'" in turn["error"]["message"]
    assert not items(notes, "item/started", "fileChange")
