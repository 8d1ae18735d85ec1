"""Mapping: wire notifications → codexmini events, finished items → tool calls.  Pure.

Two tables, both checked against the schema of every supported codex (the
oldest and the pin) by a conformance test, so a new codex release forces a
decision instead of silently dropping something:

* :data:`NOTIFICATIONS` maps every ``ServerNotification`` method the turn
  stream understands to a handler; :data:`IGNORED` lists every other method
  of those schemas, grouped by why it is ignored (a method only one version
  has says which).  A method in neither (a newer codex) becomes
  :class:`~.events.Unmapped`.
* :data:`TOOL_ITEMS` maps the item types that are tool calls to their
  session-log form (SPEC §4.3).  Other item types are not tools; the caller
  counts them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from ._errors import ProtocolError
from ._events import (
    AgentMessageDelta,
    CommandOutputDelta,
    DiffUpdated,
    Event,
    InvalidNotification,
    ItemCompleted,
    ItemStarted,
    PlanDelta,
    PlanUpdated,
    ReasoningSummaryDelta,
    ReasoningTextDelta,
    RetryingError,
    TokenUsage,
    TurnCompleted,
    Unmapped,
    Usage,
)

Params = Mapping[str, Any]


# ---------------------------------------------------------------------------
# Reading the wire: typed readers.  Each raises ProtocolError naming the field,
# and to_event() -- the one place that decides -- turns that into an
# InvalidNotification instead of letting a KeyError end the turn.

_MISSING: Any = object()


def _get(p: Params, key: str, kinds: Tuple[type, ...], what: str, optional: bool) -> Any:
    value = p.get(key, _MISSING)
    if value is _MISSING or value is None:
        if optional:
            return None
        raise ProtocolError(f"{key} is {'missing' if value is _MISSING else 'null'}")
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise ProtocolError(f"{key} is {type(value).__name__}, not {what}")
    return value


def _str(p: Params, key: str) -> str:
    value: str = _get(p, key, (str,), "a string", False)
    return value


def _opt_str(p: Params, key: str) -> Optional[str]:
    value: Optional[str] = _get(p, key, (str,), "a string", True)
    return value


def _index(p: Params, key: str) -> int:
    value: Optional[int] = _get(p, key, (int,), "an integer", True)
    return value or 0


def _obj(p: Params, key: str) -> Params:
    value: Params = _get(p, key, (dict,), "an object", False)
    return value


def _opt_obj(p: Params, key: str) -> Optional[Params]:
    value: Optional[Params] = _get(p, key, (dict,), "an object", True)
    return value


def _opt_list(p: Params, key: str) -> List[Any]:
    value: Optional[List[Any]] = _get(p, key, (list,), "an array", True)
    return value or []


#: What the readers of a finished item (the step fold, :data:`TOOL_ITEMS`)
#: read, per item type: field → (JSON types allowed when present, what).
#: ``None`` is always allowed; a missing field reads as absent.
_ITEM_FIELDS: Dict[str, Dict[str, Tuple[Tuple[type, ...], str]]] = {
    "agentMessage": {"text": ((str,), "a string")},
    "reasoning": {"summary": ((list,), "an array"), "content": ((list,), "an array")},
    "commandExecution": {
        "command": ((str,), "a string"),
        "aggregatedOutput": ((str,), "a string"),
        "exitCode": ((int,), "an integer"),
        "status": ((str,), "a string"),
    },
    "fileChange": {"changes": ((list,), "an array"), "status": ((str,), "a string")},
    "mcpToolCall": {
        "server": ((str,), "a string"),
        "tool": ((str,), "a string"),
        "result": ((dict,), "an object"),
        "error": ((dict,), "an object"),
        "status": ((str,), "a string"),
    },
    "webSearch": {"query": ((str,), "a string"), "results": ((list,), "an array")},
    "imageView": {"path": ((str,), "a string")},
}

#: Arrays whose elements a reader walks, per item type: field → element types.
_ITEM_ELEMENTS: Dict[str, Dict[str, Tuple[type, ...]]] = {
    "reasoning": {"summary": (str,), "content": (str,)},
    "fileChange": {"changes": (dict,)},
}


def _item(p: Params) -> Params:
    item = _obj(p, "item")
    _str(item, "id")
    kind = _str(item, "type")
    for key, (kinds, what) in _ITEM_FIELDS.get(kind, {}).items():
        _get(item, key, kinds, what, True)
    for key, kinds in _ITEM_ELEMENTS.get(kind, {}).items():
        if any(not isinstance(e, kinds) for e in item.get(key) or ()):
            raise ProtocolError(f"item.{key} holds an element that is not {kinds[0].__name__}")
    if kind == "mcpToolCall" and not isinstance((item.get("result") or {}).get("content") or [], list):
        raise ProtocolError("item.result.content is not an array")
    return item


# ---------------------------------------------------------------------------
# The notification table


def _error(p: Params) -> Optional[Event]:
    # willRetry:false is followed by turn/completed{failed} carrying the same
    # error (reference §3.10); only the retrying kind is an event of its own.
    if not p.get("willRetry"):
        return None
    err = _obj(p, "error")
    return RetryingError(_opt_str(err, "message") or "", _opt_str(err, "additionalDetails"), err.get("codexErrorInfo"))


def _plan_updated(p: Params) -> Event:
    steps = []
    for step in _opt_list(p, "plan"):
        if not isinstance(step, dict):
            raise ProtocolError("plan holds an element that is not an object")
        steps.append((_str(step, "step"), _str(step, "status")))
    return PlanUpdated(_opt_str(p, "explanation"), tuple(steps))


def _token_usage(p: Params) -> Event:
    usage = _obj(p, "tokenUsage")
    window: Optional[int] = _get(usage, "modelContextWindow", (int,), "an integer", True)
    return TokenUsage(Usage.from_wire(_opt_obj(usage, "last")), Usage.from_wire(_opt_obj(usage, "total")), window)


def _turn_completed(p: Params) -> Event:
    # items/abandoned/usage are filled in by the turn, which saw the item/*
    # notifications: turn.items is only a summary (reference §0.4).
    turn = _obj(p, "turn")
    return TurnCompleted(_str(turn, "id"), _str(turn, "status"), _opt_obj(turn, "error"))


_object_new = object.__new__


def _agent_message_delta(p: Params) -> Event:
    # The hot path (nine frames in ten of a turn): two type checks and a frozen
    # event built without dataclass __init__'s per-field object.__setattr__.
    item_id, delta = p.get("itemId"), p.get("delta")
    if type(item_id) is str and type(delta) is str:
        event = _object_new(AgentMessageDelta)
        fields = event.__dict__
        fields["item_id"] = item_id
        fields["delta"] = delta
        return event
    return AgentMessageDelta(_str(p, "itemId"), _str(p, "delta"))  # the precise error


NOTIFICATIONS: Dict[str, Callable[[Params], Optional[Event]]] = {
    "item/agentMessage/delta": _agent_message_delta,
    "item/reasoning/summaryTextDelta": lambda p: ReasoningSummaryDelta(
        _str(p, "itemId"), _str(p, "delta"), _index(p, "summaryIndex")
    ),
    "item/reasoning/textDelta": lambda p: ReasoningTextDelta(_str(p, "itemId"), _str(p, "delta"), _index(p, "contentIndex")),
    "item/plan/delta": lambda p: PlanDelta(_str(p, "itemId"), _str(p, "delta")),
    "turn/plan/updated": _plan_updated,
    "item/commandExecution/outputDelta": lambda p: CommandOutputDelta(_str(p, "itemId"), _str(p, "delta")),
    "item/started": lambda p: ItemStarted(_item(p)),
    "item/completed": lambda p: ItemCompleted(_item(p)),
    "thread/tokenUsage/updated": _token_usage,
    "turn/diff/updated": lambda p: DiffUpdated(_str(p, "diff")),
    "error": _error,
    "turn/completed": _turn_completed,
}

#: Every other ServerNotification method of codex 0.149.1, and why it is ignored.
IGNORED = frozenset(
    {
        # Turn and thread state that the turn stream already knows from its own
        # frames (turn/start's response, turn/completed).
        "turn/started",
        "thread/started",
        "thread/status/changed",
        "thread/settings/updated",
        "thread/compacted",
        "serverRequest/resolved",  # handled by the client, which cancels the handler
        # Detail that adds nothing a session log records: the finished item
        # carries the summary parts, the patch and the MCP result.
        "item/reasoning/summaryPartAdded",
        "item/commandExecution/terminalInteraction",
        "item/fileChange/outputDelta",
        "item/fileChange/patchUpdated",
        "item/mcpToolCall/progress",
        # Diagnostics meant for a UI, not for the turn.
        "warning",
        "guardianWarning",
        "deprecationNotice",
        "configWarning",
        "windows/worldWritableWarning",
        "windowsSandbox/setupCompleted",
        "mcpServer/startupStatus/updated",
        "mcpServer/oauthLogin/completed",
        "remoteControl/status/changed",
        "mcpServer/event/stream/notification",  # 0.171.0
        "thread/prediction/updated",  # 0.171.0
        "model/rerouted",
        "model/verification",
        "model/safetyBuffering/updated",
        "turn/moderationMetadata",
        # Automatic approval review (codexmini answers approvals itself).
        "item/autoApprovalReview/started",
        "item/autoApprovalReview/completed",
        "autoApprovalReview/strictReviewRequired",
        # Hooks.
        "hook/started",
        "hook/completed",
        # Thread management APIs codexmini does not call.
        "thread/archived",
        "thread/deleted",
        "thread/unarchived",
        "thread/closed",
        "thread/reverted",
        "thread/name/updated",
        "thread/goal/updated",
        "thread/goal/cleared",
        "thread/queue/changed",
        "thread/project/updated",
        "thread/environment/connected",
        "thread/environment/disconnected",
        "thread/readState/changed",  # 0.171.0: read markers for a UI, sent after every turn
        "thread/section/changed",  # 0.171.0
        "thread/attachment/updated",  # 0.171.0
        "thread/search/partial",  # 0.171.0: results of thread/search

        "project/changed",
        "skills/changed",
        # Standalone command/process/filesystem APIs codexmini does not call.
        "command/exec/outputDelta",
        "process/outputDelta",
        "process/exited",
        "fs/changed",
        "fuzzyFileSearch/sessionUpdated",
        "fuzzyFileSearch/sessionCompleted",
        # Accounts, apps and imports.
        "account/updated",
        "account/rateLimits/updated",
        "account/login/completed",
        "account/gatewayOAuth/changed",  # 0.171.0
        "modelProvider/authRecoveryStarted",  # 0.171.0
        "modelProvider/authRecoveryCompleted",  # 0.171.0
        "app/list/updated",
        "externalAgentConfig/import/progress",
        "externalAgentConfig/import/completed",
        # Realtime (voice) sessions.
        "thread/realtime/started",
        "thread/realtime/itemAdded",
        "thread/realtime/transcript/delta",
        "thread/realtime/transcript/done",
        "thread/realtime/outputAudio/delta",
        "thread/realtime/sdp",
        "thread/realtime/error",
        "thread/realtime/closed",
        "thread/realtime/item/started",  # 0.171.0
        "thread/realtime/item/completed",  # 0.171.0
        "thread/realtime/item/transcript/delta",  # 0.171.0
    }
)


def to_event(method: str, params: Params) -> Optional[Event]:
    """The event for one notification; ``None`` when it is ignored.

    The one place that decides what a notification becomes: a row of
    :data:`NOTIFICATIONS`, an ignored method, :class:`~._events.Unmapped` for a
    method this table does not know, or -- when a field the row reads is
    missing or of the wrong type -- :class:`~._events.InvalidNotification`.
    Nothing a server sends makes it raise."""
    handler = NOTIFICATIONS.get(method)
    if handler is not None:
        try:
            return handler(params)
        except ProtocolError as exc:
            return InvalidNotification(method, params, f"{method}: {exc.reason}")
    if method in IGNORED:
        return None
    return Unmapped(method, params)


# ---------------------------------------------------------------------------
# Tool items


@dataclass(frozen=True)
class ToolCall:
    call_id: str
    name: str
    arguments: str  # JSON text, as logged
    kind: str  # the codex item type


@dataclass(frozen=True)
class ToolResult:
    call_id: str
    text: str
    is_error: bool
    status: str


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _failed(item: Params) -> bool:
    return item.get("status") in ("failed", "declined")


def _command(item: Params) -> ToolResult:
    exit_code = item.get("exitCode")
    error = _failed(item) or (exit_code is not None and exit_code != 0)
    return ToolResult(item["id"], item.get("aggregatedOutput") or "", error, item.get("status") or "completed")


def _patch(item: Params) -> ToolResult:
    status = item.get("status") or "completed"
    return ToolResult(item["id"], f"patch {status}", _failed(item), status)


def _mcp_text(result: Any) -> str:
    parts = []
    for block in (result or {}).get("content") or ():
        if isinstance(block, Mapping) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        else:
            parts.append(_json(block))
    return "\n".join(parts)


def _mcp(item: Params) -> ToolResult:
    error = item.get("error")
    text = str(error.get("message", "")) if isinstance(error, Mapping) else _mcp_text(item.get("result"))
    return ToolResult(item["id"], text, bool(error) or _failed(item), item.get("status") or "completed")


def _mcp_name(item: Params) -> str:
    server, tool = item.get("server"), item.get("tool")
    return f"{server}/{tool}" if server and tool else "mcp_tool_call"


def _changes(item: Params) -> Any:
    return {
        "changes": [
            {"path": c.get("path"), "kind": c.get("kind"), "diff": c.get("diff")}
            for c in item.get("changes") or ()
        ]
    }


def _mcp_arguments(item: Params) -> Any:
    args = item.get("arguments")
    return {} if args is None else args


def _web_search(item: Params) -> ToolResult:
    results = item.get("results")
    return ToolResult(item["id"], _json(results) if results else "", False, "completed")


def _view_image(item: Params) -> ToolResult:
    return ToolResult(item["id"], "", False, "completed")


@dataclass(frozen=True)
class ToolItem:
    name: Callable[[Params], str]
    arguments: Callable[[Params], Any]
    result: Callable[[Params], ToolResult]


TOOL_ITEMS: Dict[str, ToolItem] = {
    "commandExecution": ToolItem(lambda i: "bash", lambda i: {"command": i.get("command")}, _command),
    "fileChange": ToolItem(lambda i: "apply_patch", _changes, _patch),
    "mcpToolCall": ToolItem(_mcp_name, _mcp_arguments, _mcp),
    "webSearch": ToolItem(lambda i: "web_search", lambda i: {"query": i.get("query")}, _web_search),
    "imageView": ToolItem(lambda i: "view_image", lambda i: {"path": i.get("path")}, _view_image),
}


def tool_call(item: Params) -> Optional[ToolCall]:
    """The tool call an item stands for, or ``None`` if it is not a tool."""
    row = TOOL_ITEMS.get(item.get("type", ""))
    if row is None:
        return None
    return ToolCall(str(item["id"]), row.name(item), _json(row.arguments(item)), item["type"])


def tool_result(item: Params) -> Optional[ToolResult]:
    """The result of a *finished* tool item, or ``None`` if it is not a tool."""
    row = TOOL_ITEMS.get(item.get("type", ""))
    return None if row is None else row.result(item)


__all__ = [
    "IGNORED",
    "NOTIFICATIONS",
    "TOOL_ITEMS",
    "ToolCall",
    "ToolItem",
    "ToolResult",
    "to_event",
    "tool_call",
    "tool_result",
]
