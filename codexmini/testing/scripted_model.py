"""A loopback fake of the OpenAI Responses API, driven by a JSON script.

codex talks to its model with ``POST {base_url}/responses`` (``stream: true``)
and reads Server-Sent Events back.  :class:`ScriptedModel` is a stdlib
``ThreadingHTTPServer`` on ``127.0.0.1`` that answers each such request from a
**script**: an ordered list of rules, each a ``when`` condition on the request
body and the Response to send (a stream of output items, or an HTTP error).
The first rule that matches wins.  Each Response is turned into SSE events by
one table (:data:`ITEMS`, item type → builder), so adding an output kind is one
row.  A tool call is emitted in the form the request offers that tool
(:func:`offered_tools`); calling a tool the request does not offer is a
:class:`ScriptError`, answered HTTP 400 with the reason.  Every request is
logged in :attr:`ScriptedModel.requests`.

It powers the smoke run, the fixture recorder and the live tests;
``python -m codexmini.testing model SCRIPT.json [--port N]`` serves a script by
hand.  The script format, what each item becomes on the wire and the request
log: ``docs/scripted-model.md``.
"""

from __future__ import annotations

import argparse
import copy
import json
import logging
import re
import signal
import socketserver
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, Iterable, List, Optional, Set, Tuple

from .._errors import CodexminiError, ConfigError

log = logging.getLogger("codexmini.testing.scripted_model")

RESPONSES_PATH = "/v1/responses"
SOCKET_TIMEOUT_S = 30.0
USAGE_DEFAULTS = {"input_tokens": 10, "cached_tokens": 2, "output_tokens": 5, "reasoning_tokens": 1}

SseEvent = Dict[str, Any]

# ---------------------------------------------------------------------------
# Matching: what a rule's ``when`` looks at, extracted once per request.


def _text(content: Any) -> str:
    """The text of a message's content or a tool output: a string, or the
    ``text`` of each part (input_text, output_text) joined with newlines."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return "" if content is None else json.dumps(content)


ToolKey = Tuple[Optional[str], str]  # (namespace or None, name)


def offered_tools(body: Any) -> Dict[ToolKey, Dict[str, Any]]:
    """The tools a request offers, by (namespace, name): each top-level
    ``function``/``custom`` tool under ``(None, name)``, each tool inside a
    ``namespace`` tool (MCP servers, ``multi_agent_v1``) under ``(namespace,
    name)``.  Name-less tools (``web_search``, ``tool_search``) are not here."""
    tools = body.get("tools") if isinstance(body, dict) else None
    found: Dict[ToolKey, Dict[str, Any]] = {}
    for tool in tools if isinstance(tools, list) else []:
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            continue
        if tool.get("type") == "namespace":
            inner = tool.get("tools")
            for member in inner if isinstance(inner, list) else []:
                if isinstance(member, dict) and isinstance(member.get("name"), str):
                    found[(tool["name"], member["name"])] = member
        else:
            found[(None, tool["name"])] = tool
    return found


def _tool_types(body: Any) -> Set[str]:
    tools = body.get("tools") if isinstance(body, dict) else None
    return (
        {t["type"] for t in tools if isinstance(t, dict) and isinstance(t.get("type"), str)}
        if isinstance(tools, list)
        else set()
    )


class RequestView:
    """The parts of a request body that rules can test, and the tools it offers."""

    def __init__(self, body: Any) -> None:
        self.model = body.get("model") if isinstance(body, dict) else None
        self.tools = offered_tools(body)
        self.tool_types = _tool_types(body)
        items = body.get("input") if isinstance(body, dict) else None
        items = [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []
        # codex sends its own developer message and a role=user
        # <environment_context> message first; the prompt is the last user one.
        self.users = [_text(i.get("content")) for i in items if i.get("role") == "user"]
        self.outputs = [_text(i.get("output")) for i in items if str(i.get("type", "")).endswith("_call_output")]
        self.last = items[-1] if items else {}


def _contains(candidate: Any, wanted: str) -> bool:
    return isinstance(candidate, str) and wanted in candidate


def _equals(candidate: Any, wanted: str) -> bool:
    return isinstance(candidate, str) and candidate == wanted


#: when key -> (the candidates it looks at, how one is compared)
WHEN: Dict[str, Tuple[Callable[[RequestView], Iterable[Any]], Callable[[Any, str], bool]]] = {
    "user_contains": (lambda v: v.users[-1:], _contains),
    "input_contains": (lambda v: v.users + v.outputs, _contains),
    "last_item": (lambda v: [v.last.get("type")], _equals),
    "last_call_id": (lambda v: [v.last.get("call_id")], _equals),
    "tool_output_contains": (lambda v: v.outputs[-1:], _contains),
}


def matches(when: Dict[str, str], view: RequestView) -> bool:
    """True when every key of ``when`` holds for the request."""
    for key, wanted in when.items():
        pick, test = WHEN[key]
        if not any(test(candidate, wanted) for candidate in pick(view)):
            return False
    return True


# ---------------------------------------------------------------------------
# Validation: checkers take (value, JSON path) and raise ConfigError; objects
# are described by tables of their keys.

Check = Callable[[Any, str], None]


def _fail(path: str, problem: str) -> None:
    raise ConfigError(f"{path or 'script'}: {problem}")


def _check(ok: Callable[[Any], bool], problem: str) -> Check:
    def check(value: Any, path: str) -> None:
        if not ok(value):
            _fail(path, problem)

    return check


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


_any = _check(lambda v: True, "")
_str = _check(lambda v: isinstance(v, str), "must be a string")
_count = _check(lambda v: _is_int(v) and v >= 0, "must be a non-negative integer")
_positive = _check(lambda v: _is_int(v) and v >= 1, "must be a positive integer")
_millis = _check(lambda v: (_is_int(v) or isinstance(v, float)) and 0 <= v < 1e9, "must be a non-negative number")
_strings = _check(
    lambda v: isinstance(v, list) and all(isinstance(s, str) for s in v),
    "must be a list of strings",
)
# A string is sent as is, so a script can also hand codex malformed arguments.
_arguments = _check(lambda v: isinstance(v, (dict, str)), "must be an object or a JSON string")
_http_status = _check(lambda v: _is_int(v) and 200 <= v <= 599, "must be an integer from 200 to 599")
_headers = _check(
    lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()),
    "must be an object of strings",
)


def _nullable(check: Check) -> Check:
    def nullable(value: Any, path: str) -> None:
        if value is not None:
            check(value, path)

    return nullable


def _list_of(check: Check, problem: str) -> Check:
    def list_of(value: Any, path: str) -> None:
        if not isinstance(value, list):
            _fail(path, problem)
        for i, element in enumerate(value):
            check(element, f"{path}[{i}]")

    return list_of


def _object(fields: Dict[str, Check], required: Tuple[str, ...] = ()) -> Check:
    def check(value: Any, path: str) -> None:
        if not isinstance(value, dict):
            _fail(path, "must be an object")
        for key in value:
            if key not in fields:
                _fail(path, f"unknown key {key!r}")
        for key in required:
            if key not in value:
                _fail(path, f"missing key {key!r}")
        for key, child in value.items():
            fields[key](child, f"{path}.{key}" if path else key)

    return check


def _item(value: Any, path: str) -> None:
    if not isinstance(value, dict) or not isinstance(value.get("type"), str):
        _fail(path, "must be an object with a string 'type'")
    if value["type"] not in ITEMS:
        _fail(path, f"unknown item type {value['type']!r}")
    fields, required = ITEMS[value["type"]][:2]
    _object(dict(fields, type=_str), required)(value, path)


_HTTP_ERROR = _object({"http_status": _http_status, "body": _any, "headers": _headers})
_STREAM = _object(
    {
        "output": _list_of(_item, "must be a list of items"),
        "usage": _object(dict.fromkeys(USAGE_DEFAULTS, _count)),
        "delay_ms": _millis,
        "cut_after_events": _nullable(_count),
        "failed": _nullable(_object({"code": _str, "message": _str}, required=("code",))),
        "incomplete": _nullable(_str),
        "headers": _headers,
    }
)


def _response(value: Any, path: str) -> None:
    if isinstance(value, dict) and "http_status" in value:
        return _HTTP_ERROR(value, path)
    _STREAM(value, path)
    if value.get("failed") is not None and value.get("incomplete") is not None:
        _fail(path, "'failed' and 'incomplete' cannot both be set")


_RULE = _object(
    {
        "name": _str,
        "when": _object(dict.fromkeys(WHEN, _str)),
        "times": _positive,
        "respond": _response,
    },
    required=("respond",),
)
_SCRIPT = _object({"rules": _list_of(_RULE, "must be a list of rules"), "default": _response})


def validate_script(script: Any) -> Dict[str, Any]:
    """Check ``script`` against the format (``docs/scripted-model.md``); return a private deep copy."""
    _SCRIPT(script, "")
    return copy.deepcopy(script)


# ---------------------------------------------------------------------------
# SSE events: one builder per item type returns (its events, its final item).

Item = Dict[str, Any]
Builder = Callable[[Item, int], Tuple[List[SseEvent], Item]]


def _ev(kind: str, **fields: Any) -> SseEvent:
    return dict(type=f"response.{kind}", **fields)


def _chunks(text: str, n: int) -> List[str]:
    size = max(1, -(-len(text) // n))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _message(item: Item, at: int) -> Tuple[List[SseEvent], Item]:
    # codex turns each output_text.delta into one agentMessage delta (the `plain` scenario).
    text = "".join(item["deltas"])
    ref = dict(item_id=item["id"], output_index=at, content_index=0)
    started = {
        "type": "message",
        "id": item["id"],
        "role": "assistant",
        "status": "in_progress",
        "content": [],
    }
    part = {"type": "output_text", "text": text, "annotations": []}
    done = dict(started, status="completed", content=[part])
    events = [
        _ev("output_item.added", output_index=at, item=started),
        _ev("content_part.added", part=dict(part, text=""), **ref),
        *[_ev("output_text.delta", delta=d, **ref) for d in item["deltas"]],
        _ev("output_text.done", text=text, **ref),
        _ev("content_part.done", part=part, **ref),
        _ev("output_item.done", output_index=at, item=done),
    ]
    return events, done


def _reasoning(item: Item, at: int) -> Tuple[List[SseEvent], Item]:
    # Summary parts, then the raw reasoning_text (the `reasoning` scenario); codex
    # sends summaryPartAdded for every part, index 0 included.
    ref = dict(item_id=item["id"], output_index=at)
    started = {"type": "reasoning", "id": item["id"], "summary": []}
    events = [_ev("output_item.added", output_index=at, item=started)]
    done: Item = dict(started, summary=[])
    for i, deltas in enumerate(item.get("summary", [])):
        part = {"type": "summary_text", "text": "".join(deltas)}
        events.append(_ev("reasoning_summary_part.added", summary_index=i, part=dict(part, text=""), **ref))
        events += [_ev("reasoning_summary_text.delta", summary_index=i, delta=d, **ref) for d in deltas]
        events.append(_ev("reasoning_summary_text.done", summary_index=i, text=part["text"], **ref))
        events.append(_ev("reasoning_summary_part.done", summary_index=i, part=part, **ref))
        done["summary"].append(part)
    if "content" in item:
        text = "".join(item["content"])
        events += [_ev("reasoning_text.delta", content_index=0, delta=d, **ref) for d in item["content"]]
        events.append(_ev("reasoning_text.done", content_index=0, text=text, **ref))
        done["content"] = [{"type": "reasoning_text", "text": text}]
    # codex sends it back in the next request's input and never decodes it.
    done["encrypted_content"] = f"scripted-{item['id']}"
    events.append(_ev("output_item.done", output_index=at, item=done))
    return events, done


def _tool_call(field: str, delta: str) -> Builder:
    """function_call (commands, MCP tools) and custom_tool_call (apply_patch) differ only in
    the name of their payload and of its delta event."""

    def build(item: Item, at: int) -> Tuple[List[SseEvent], Item]:
        payload = item[field] if isinstance(item[field], str) else json.dumps(item[field])
        call_id = item.get("call_id", f"call_{item['id']}")
        started = {"type": item["type"], "id": item["id"], "call_id": call_id, "name": item["name"]}
        if "namespace" in item:  # MCP tools must be namespaced: codex refuses a flat mcp__server__tool name
            started["namespace"] = item["namespace"]
        started.update({field: "", "status": "in_progress"})
        done = dict(started, **{field: payload, "status": "completed"})
        ref = dict(item_id=item["id"], output_index=at)
        events = [_ev("output_item.added", output_index=at, item=started)]
        if item.get("stream_chunks"):
            events += [_ev(f"{delta}.delta", delta=c, **ref) for c in _chunks(payload, item["stream_chunks"])]
            events.append(_ev(f"{delta}.done", **{field: payload}, **ref))
        events.append(_ev("output_item.done", output_index=at, item=done))
        return events, done

    return build


def _web_search(item: Item, at: int) -> Tuple[List[SseEvent], Item]:
    # codex starts a webSearch item with query "" and
    # action "other", and completes it with the done item's search action.
    started = {"type": "web_search_call", "id": item["id"], "status": "in_progress"}
    done = dict(started, status="completed", action={"type": "search", "query": item["query"]})
    events = [
        _ev("output_item.added", output_index=at, item=started),
        _ev("output_item.done", output_index=at, item=done),
    ]
    return events, done


_CALL = {"id": _str, "call_id": _str, "name": _str, "stream_chunks": _count}

#: item type -> (its keys in a script, the required ones, its builder, the prefix of generated ids)
ITEMS: Dict[str, Tuple[Dict[str, Check], Tuple[str, ...], Builder, str]] = {
    "message": ({"id": _str, "deltas": _strings}, ("deltas",), _message, "msg"),
    "reasoning": (
        {
            "id": _str,
            "summary": _list_of(_strings, "must be a list of lists of strings"),
            "content": _strings,
        },
        (),
        _reasoning,
        "rs",
    ),
    "function_call": (
        dict(_CALL, arguments=_arguments, namespace=_str),
        ("name", "arguments"),
        _tool_call("arguments", "function_call_arguments"),
        "fc",
    ),
    "custom_tool_call": (
        dict(_CALL, input=_str),
        ("name", "input"),
        _tool_call("input", "custom_tool_call_input"),
        "ctc",
    ),
    "web_search_call": ({"id": _str, "query": _str}, ("query",), _web_search, "ws"),
}


class ScriptError(ConfigError):
    """The script asks for something this request does not allow (a tool it
    does not offer, or in a form that cannot be converted)."""


def _qualified(key: ToolKey) -> str:
    return f"{key[0]}.{key[1]}" if key[0] else key[1]


def _single_string_parameter(tool: Dict[str, Any]) -> Optional[str]:
    """The name of a function tool's only parameter, if it is a string."""
    parameters = tool.get("parameters")
    properties = parameters.get("properties") if isinstance(parameters, dict) else None
    if isinstance(properties, dict) and len(properties) == 1:
        ((name, schema),) = properties.items()
        if isinstance(schema, dict) and schema.get("type") == "string":
            return str(name)
    return None


def in_offered_form(spec: Item, view: RequestView) -> Item:
    """``spec`` as the request offers its tool (``docs/scripted-model.md``), or
    :class:`ScriptError` saying what the request offers instead."""
    kind = spec["type"]
    if kind == "web_search_call":
        if "web_search" not in view.tool_types:
            raise ScriptError(f"a web_search_call, but this request offers no web_search tool (model {view.model!r})")
        return spec
    if kind not in ("function_call", "custom_tool_call"):
        return spec
    key: ToolKey = (spec.get("namespace"), spec["name"])
    tool = view.tools.get(key)
    if tool is None:
        offered = ", ".join(sorted(_qualified(k) for k in view.tools)) or "none"
        raise ScriptError(
            f"a {kind} of {_qualified(key)!r}, but this request (model {view.model!r}) does not offer that tool; "
            f"it offers: {offered}"
        )
    offered_as = tool.get("type")
    if (kind, offered_as) in (("function_call", "function"), ("custom_tool_call", "custom")):
        return spec
    common = {k: v for k, v in spec.items() if k in ("id", "call_id", "name", "namespace", "stream_chunks")}
    if kind == "custom_tool_call" and offered_as == "function":
        parameter = _single_string_parameter(tool)
        if parameter is not None:
            return dict(common, type="function_call", arguments={parameter: spec["input"]})
    elif kind == "function_call" and offered_as == "custom":
        arguments = spec["arguments"]
        values = list(arguments.values()) if isinstance(arguments, dict) else []
        if len(values) == 1 and isinstance(values[0], str):
            return dict(common, type="custom_tool_call", input=values[0])
    raise ScriptError(
        f"a {kind} of {_qualified(key)!r}, but this request offers it as a {offered_as!r} tool "
        "and the call cannot be converted (a freeform input maps only onto a function tool with one string "
        "parameter, and back); write the call in the form offered"
    )


def _usage(usage: Dict[str, int]) -> Dict[str, Any]:
    u = dict(USAGE_DEFAULTS, **usage)
    return {
        "input_tokens": u["input_tokens"],
        "input_tokens_details": {"cached_tokens": u["cached_tokens"]},
        "output_tokens": u["output_tokens"],
        "output_tokens_details": {"reasoning_tokens": u["reasoning_tokens"]},
        "total_tokens": u["input_tokens"] + u["output_tokens"],
    }


def stream_events(response: Dict[str, Any], seq: int, view: Optional[RequestView] = None) -> List[SseEvent]:
    """Every SSE event of a stream Response; ``seq`` (the request's number)
    makes the generated ids unique within a server's life.  With the
    request's ``view``, every tool call takes the form the request offers its
    tool, and one it does not offer raises :class:`ScriptError` naming the
    output item (without a view the items are taken as written)."""
    resp_id = f"resp_{seq}"
    events = [_ev("created", response={"id": resp_id, "status": "in_progress", "output": []})]
    final = []
    for at, spec in enumerate(response.get("output", [])):
        if view is not None:
            try:
                spec = in_offered_form(spec, view)
            except ScriptError as exc:
                raise ScriptError(f"output[{at}]: {exc}") from None
        build, prefix = ITEMS[spec["type"]][2:]
        built, done = build(dict(spec, id=spec.get("id", f"{prefix}_{seq}_{at}")), at)
        events += built
        final.append(done)
    body: Dict[str, Any] = {"id": resp_id, "output": final}
    if response.get("failed") is not None:
        # codex retries server_error like a disconnect but fails at
        # once on context_length_exceeded.
        events.append(_ev("failed", response=dict(body, status="failed", error=response["failed"])))
    elif response.get("incomplete") is not None:
        details = {"reason": response["incomplete"]}
        events.append(_ev("incomplete", response=dict(body, status="incomplete", incomplete_details=details)))
    else:
        usage = _usage(response.get("usage", {}))
        events.append(_ev("completed", response=dict(body, status="completed", usage=usage)))
    return events


def encode_event(event: SseEvent) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()


# ---------------------------------------------------------------------------
# The server.


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = SOCKET_TIMEOUT_S  # applied to the connection by StreamRequestHandler.setup
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("scripted model: " + format, *args)

    def do_POST(self) -> None:
        self.server.model._answer(self)

    do_GET = do_POST


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: Tuple[str, int], model: ScriptedModel) -> None:
        self.host = address[0]
        super().__init__(address, _Handler)
        self.model = model
        self.stopping = threading.Event()
        self.active: Set[threading.Thread] = set()
        self.timeout = 0.05  # the poll interval of ScriptedModel._loop

    def server_bind(self) -> None:
        # HTTPServer.server_bind() would call socket.getfqdn(), a DNS lookup.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.host, self.server_address[1]

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        me = threading.current_thread()
        self.active.add(me)
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.active.discard(me)

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.warning("scripted model: error serving %s", client_address, exc_info=True)


def _http_error(status: int, kind: str, message: str) -> Dict[str, Any]:
    """A Response of our own, shaped like an OpenAI error."""
    return {
        "http_status": status,
        "body": {"error": {"type": kind, "message": f"scripted model: {message}"}},
    }


class ScriptedModel:
    """See the module docstring.  Use as ``with ScriptedModel(script) as m:``."""

    def __init__(self, script: Dict[str, Any], host: str = "127.0.0.1", port: int = 0) -> None:
        self.host = host
        self.port = port
        self.requests: List[Dict[str, Any]] = []
        #: Every script error, in order: the requests it answered with HTTP 400.
        self.errors: List[str] = []
        self._lock = threading.Lock()
        self._running: Optional[Tuple[_Server, threading.Thread]] = None
        self._seq = 0
        self.set_script(script)

    @classmethod
    def from_file(cls, path: Any, host: str = "127.0.0.1", port: int = 0) -> ScriptedModel:
        try:
            with open(path, encoding="utf-8") as f:
                script = json.load(f)
        except (OSError, ValueError) as exc:
            raise ConfigError(f"{path}: cannot read the script: {exc}") from exc
        return cls(script, host, port)

    def set_script(self, script: Dict[str, Any]) -> None:
        """Replace the script (validated first) and reset every ``times`` counter."""
        checked = validate_script(script)
        with self._lock:
            self._script = checked
            self._used = [0] * len(checked.get("rules", []))

    @property
    def url(self) -> str:
        """The ``base_url`` for codex."""
        if not self.port:
            raise CodexminiError("the scripted model has no port until it is started")
        return f"http://{self.host}:{self.port}/v1"

    def start(self) -> ScriptedModel:
        if self._running is None:
            server = _Server((self.host, self.port), self)
            self.port = server.server_address[1]
            thread = threading.Thread(target=self._loop, args=(server,), name="scripted-model", daemon=True)
            thread.start()
            self._running = (server, thread)
            log.info("scripted model: listening on %s", self.url)
        return self

    @staticmethod
    def _loop(server: _Server) -> None:
        # handle_request() returns after server.timeout, so the stop event is
        # seen promptly; socketserver's shutdown() could wait forever instead.
        while not server.stopping.is_set():
            server.handle_request()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop serving: abort running streams, join the threads (within
        ``timeout`` seconds in all) and close the socket.  Idempotent."""
        if self._running is None:
            return
        (server, thread), self._running = self._running, None
        deadline = time.monotonic() + timeout
        server.stopping.set()
        for t in [thread, *list(server.active)]:
            t.join(max(0.0, deadline - time.monotonic()))
        server.server_close()

    def __enter__(self) -> ScriptedModel:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- one request --------------------------------------------------------

    def _choose(self, view: RequestView) -> Tuple[Any, Optional[Dict[str, Any]], int]:
        """(rule label, its Response or None, the request's number)."""
        with self._lock:  # requests arrive concurrently; `times` must hold exactly
            self._seq += 1
            for i, rule in enumerate(self._script.get("rules", [])):
                used_up = self._used[i] >= rule.get("times", float("inf"))
                if not used_up and matches(rule.get("when", {}), view):
                    self._used[i] += 1
                    return rule.get("name", i), rule["respond"], self._seq
            if "default" in self._script:
                return "default", self._script["default"], self._seq
            return None, None, self._seq

    def _answer(self, h: _Handler) -> None:
        raw = h.rfile.read(int(h.headers.get("content-length") or 0))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        path = h.path.split("?", 1)[0]
        h.close_connection = True  # a stream's end is the connection's end
        view = RequestView(body)
        if h.command == "POST" and path == RESPONSES_PATH:
            rule, response, seq = self._choose(view)
        else:
            missing = _http_error(404, "not_found", f"no endpoint {h.command} {path}")
            rule, response, seq = None, missing, 0
        if response is None:
            last_user = (view.users or [""])[-1][:200]
            problem = f"no rule matched this request (last user message: {last_user!r})"
            response = _http_error(400, "invalid_request_error", problem)
        entry: Dict[str, Any] = {"path": path, "body": body, "rule": rule}
        events: List[SseEvent] = []
        if "http_status" not in response:
            try:
                events = stream_events(response, seq, view)
            except ScriptError as exc:
                entry["error"] = f"script error in rule {rule!r}: {exc}"
                log.error("scripted model: %s", entry["error"])
                response = _http_error(400, "invalid_request_error", entry["error"])
        entry["status"] = status = response.get("http_status", 200)
        log.info("scripted model: %s %s -> %s (rule %r)", h.command, path, status, rule)
        with self._lock:
            self.requests.append(entry)
            if "error" in entry:
                self.errors.append(entry["error"])
        if "http_status" in response:
            self._send_body(h, response)
        else:
            self._stream(h, response, events)

    @staticmethod
    def _send_body(h: _Handler, response: Dict[str, Any]) -> None:
        status = response["http_status"]
        body = response.get("body", _http_error(status, "scripted_error", f"HTTP {status}")["body"])
        raw = isinstance(body, str)  # a string body is sent verbatim
        data = body.encode() if raw else json.dumps(body).encode()
        headers = {"content-type": "text/plain" if raw else "application/json"}
        headers.update({k.lower(): v for k, v in response.get("headers", {}).items()})
        headers.update({"content-length": str(len(data)), "connection": "close"})
        h.send_response(status)
        for name, value in headers.items():
            h.send_header(name, value)
        h.end_headers()
        h.wfile.write(data)

    @staticmethod
    def _stream(h: _Handler, response: Dict[str, Any], events: List[SseEvent]) -> None:
        cut = response.get("cut_after_events")
        if cut is not None:
            log.info("scripted model: cutting the stream after %d of %d events", cut, len(events))
            events = events[:cut]
        delay = response.get("delay_ms", 0) / 1000.0
        h.send_response(200)
        h.send_header("content-type", "text/event-stream")
        h.send_header("cache-control", "no-cache")
        h.send_header("connection", "close")
        for name, value in response.get("headers", {}).items():
            h.send_header(name.lower(), value)
        h.end_headers()
        try:
            for n, event in enumerate(events):
                if n and delay and h.server.stopping.wait(delay):
                    return  # stop() during a slow stream: abandon it
                h.wfile.write(encode_event(event))
                h.wfile.flush()
        except OSError as exc:  # codex hung up (turn/interrupt, a retry): nobody to tell
            log.info("scripted model: the client went away mid-stream: %s", exc)


# ---------------------------------------------------------------------------
# codex command-line glue and the CLI.

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def provider_flags(url: str, provider: str = "codexmini", env_key: str = "CODEXMINI_API_KEY") -> List[str]:
    """The ``-c`` arguments that point codex at ``url``: a model provider of its own, the key read from ``env_key``."""
    if not _BARE_KEY.match(provider):
        raise ConfigError(f"provider name {provider!r} must be letters, digits, '_' or '-'")
    # JSON string escapes are valid TOML basic-string escapes.
    table = ",".join(
        f"{k}={json.dumps(v)}"
        for k, v in (
            ("name", provider),
            ("base_url", url),
            ("wire_api", "responses"),
            ("env_key", env_key),
        )
    )
    return [
        "-c",
        f"model_provider={json.dumps(provider)}",
        "-c",
        f"model_providers.{provider}={{{table}}}",
    ]


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m codexmini.testing model",
        description="Serve a scripted Responses API on 127.0.0.1.",
    )
    parser.add_argument("script", help="the JSON script")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (default: any free port)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        model = ScriptedModel.from_file(args.script, port=args.port)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    # One wait, no polling loop: a signal that lands before the wait starts
    # only sets the event early (lock waits resume after a handler on POSIX).
    stopped = threading.Event()
    previous = {sig: signal.signal(sig, lambda signum, frame: stopped.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        with model:
            print(model.url, flush=True)
            stopped.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    print(f"served {len(model.requests)} requests", flush=True)
    return 0


__all__ = [
    "ITEMS",
    "RequestView",
    "ScriptError",
    "ScriptedModel",
    "WHEN",
    "in_offered_form",
    "main",
    "matches",
    "offered_tools",
    "provider_flags",
    "stream_events",
    "validate_script",
]
