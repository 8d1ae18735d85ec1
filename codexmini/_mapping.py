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
  session-log form (``docs/session-log.md``).  Other item types are not
  tools; the caller counts them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, FrozenSet, List, Mapping, Optional, Tuple, Type, Union, cast

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
from ._jsontext import encoder

if TYPE_CHECKING:  # the wire types of the pinned schema (codexmini.protocol): for the checker only
    from .protocol import (
        AccountRateLimitsUpdatedNotification,
        AgentMessageDeltaNotification,
        CommandExecutionOutputDeltaNotification,
        CommandExecutionThreadItem,
        ErrorNotification,
        FileChangeThreadItem,
        FileUpdateChange,
        ImageViewThreadItem,
        ItemCompletedNotification,
        ItemStartedNotification,
        McpToolCallError,
        McpToolCallResult,
        McpToolCallThreadItem,
        PlanDeltaNotification,
        RateLimitSnapshot,
        ReasoningSummaryTextDeltaNotification,
        ReasoningTextDeltaNotification,
        ThreadItem,
        ThreadTokenUsage,
        ThreadTokenUsageUpdatedNotification,
        TokenUsageBreakdown,
        Turn,
        TurnCompletedNotification,
        TurnDiffUpdatedNotification,
        TurnError,
        TurnPlanStep,
        TurnPlanUpdatedNotification,
        WebSearchThreadItem,
    )
    from .protocol import RateLimitWindow as WireRateLimitWindow

if TYPE_CHECKING:  # the checker sees the standard library; at run time, ._dataclasses (nothing compiled)
    from dataclasses import dataclass
else:
    from ._dataclasses import dataclass

Params = Mapping[str, Any]


# ---------------------------------------------------------------------------
# Reading the wire: typed readers.  Each raises ProtocolError naming the field,
# and to_event() -- the one place that decides -- turns that into an
# InvalidNotification instead of letting a KeyError end the turn.
#
# Static drift detection.  Every row below reads its params as the wire type
# of its method (``AgentMessageDeltaNotification`` …, from codexmini.protocol,
# imported for the type checker only), and every value read lands in a name or
# a parameter of the field's type: ``p.get("delta", _MISSING)`` is ``str`` while
# the schema has the field and ``object`` once a new schema drops it, which mypy
# refuses to pass as a ``str`` (mypy does not flag ``.get`` of an unknown key by
# itself).  The tables hold their rows as ``Callable[[Any], …]``: where frames
# enter is where the cast is.  Nothing here checks a type at run time that the
# readers did not check before.

_MISSING: Any = object()


def _get(value: Any, key: str, kinds: Tuple[type, ...], what: str, optional: bool) -> Any:
    if value is _MISSING or value is None:
        if optional:
            return None
        raise ProtocolError(f"{key} is {'missing' if value is _MISSING else 'null'}")
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise ProtocolError(f"{key} is {type(value).__name__}, not {what}")
    return value


def _str(value: Optional[str], key: str) -> str:
    checked: str = _get(value, key, (str,), "a string", False)
    return checked


def _opt_str(value: Optional[str], key: str) -> Optional[str]:
    checked: Optional[str] = _get(value, key, (str,), "a string", True)
    return checked


def _index(value: Optional[int], key: str) -> int:
    checked: Optional[int] = _get(value, key, (int,), "an integer", True)
    return checked or 0


def _obj(value: Optional[Mapping[str, Any]], key: str) -> Any:
    """An object: ``Any``, for the caller to name with its wire type."""
    return _get(value, key, (dict,), "an object", False)


def _opt_obj(value: Optional[Mapping[str, Any]], key: str) -> Any:
    return _get(value, key, (dict,), "an object", True)


def _opt_list(value: Optional[List[Any]], key: str) -> List[Any]:
    checked: Optional[List[Any]] = _get(value, key, (list,), "an array", True)
    return checked or []


#: What the readers of a finished item (the step fold, :data:`TOOL_ITEMS`)
#: read, per item type: field → (JSON types allowed when present, what).
#: ``None`` is always allowed; a missing field reads as absent.  (Names only:
#: ``conformance/test_protocol_module.py`` checks each is a field of its
#: ``ThreadItem`` branch in the pinned schema.)
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


_NONE = type(None)

#: :data:`_ITEM_FIELDS` as the exact types ``json.loads`` makes (and null): a
#: field of one of these types passes without the long way's checks.
_ITEM_TYPES: Dict[str, Tuple[Tuple[str, FrozenSet[type]], ...]] = {
    kind: tuple((key, frozenset((*kinds, _NONE))) for key, (kinds, _) in fields.items())
    for kind, fields in _ITEM_FIELDS.items()
}


def _item(p: Union["ItemStartedNotification", "ItemCompletedNotification"]) -> "ThreadItem":
    item: Any = p.get("item")
    if type(item) is dict and type(item.get("id")) is str:
        # The common case (every tenth frame of a turn), checked by exact type:
        # anything else -- a missing field, a bool for an int, an array to walk,
        # an MCP result -- takes the long way, which says what is wrong.
        kind = item.get("type")
        if type(kind) is str and kind not in _ITEM_ELEMENTS and kind != "mcpToolCall":
            get = item.get
            for key, allowed in _ITEM_TYPES.get(kind, ()):
                if type(get(key)) not in allowed:
                    break
            else:
                return cast("ThreadItem", item)
    return _checked_item(p)


def _checked_item(p: Union["ItemStartedNotification", "ItemCompletedNotification"]) -> "ThreadItem":
    item: ThreadItem = _obj(p.get("item", _MISSING), "item")
    _str(item.get("id", _MISSING), "id")
    kind = _str(item.get("type", _MISSING), "type")
    for key, (kinds, what) in _ITEM_FIELDS.get(kind, {}).items():
        _get(item.get(key), key, kinds, what, True)
    for key, kinds in _ITEM_ELEMENTS.get(kind, {}).items():
        if any(not isinstance(e, kinds) for e in item.get(key) or ()):  # type: ignore[attr-defined]
            raise ProtocolError(f"item.{key} holds an element that is not {kinds[0].__name__}")
    if item["type"] == "mcpToolCall":
        result: Optional[McpToolCallResult] = item.get("result")
        content: Optional[List[Any]] = result.get("content") if result else None
        if not isinstance(content or [], list):  # the wire broke the schema
            raise ProtocolError("item.result.content is not an array")
    return item


# ---------------------------------------------------------------------------
# The notification table


def _error(p: "ErrorNotification") -> Optional[Event]:
    # willRetry:false is followed by turn/completed{failed} carrying the same
    # error (fixtures/<version>/err_500.frames.jsonl); only the retrying kind
    # is an event of its own.
    will_retry: Optional[bool] = p.get("willRetry")
    if not will_retry:
        return None
    err: TurnError = _obj(p.get("error", _MISSING), "error")
    return RetryingError(
        _opt_str(err.get("message"), "message") or "",
        _opt_str(err.get("additionalDetails"), "additionalDetails"),
        err.get("codexErrorInfo"),
    )


def _plan_step(step: "TurnPlanStep") -> Tuple[str, str]:
    if not isinstance(step, dict):
        raise ProtocolError("plan holds an element that is not an object")
    return _str(step.get("step", _MISSING), "step"), _str(step.get("status", _MISSING), "status")


def _plan_updated(p: "TurnPlanUpdatedNotification") -> Event:
    steps = tuple(_plan_step(step) for step in _opt_list(p.get("plan"), "plan"))
    return PlanUpdated(_opt_str(p.get("explanation"), "explanation"), steps)


#: A context window as parsed, and a breakdown (:meth:`Usage.from_wire` checks its counts).
_WINDOW_TYPES = frozenset((int, _NONE))
_BREAKDOWN_TYPES = frozenset((dict, _NONE))


def _token_usage(p: "ThreadTokenUsageUpdatedNotification") -> Event:
    usage: Any = p.get("tokenUsage")
    if type(usage) is dict:  # the common case (every tenth frame), checked by exact type
        window, last, total = usage.get("modelContextWindow"), usage.get("last"), usage.get("total")
        if type(window) in _WINDOW_TYPES and type(last) in _BREAKDOWN_TYPES and type(total) in _BREAKDOWN_TYPES:
            event: TokenUsage = _object_new(TokenUsage)  # without the frozen __init__
            fields = event.__dict__
            fields["last"] = Usage.from_wire(last)
            fields["total"] = Usage.from_wire(total)
            fields["context_window"] = window
            return event
    return _checked_token_usage(p)


def _checked_token_usage(p: "ThreadTokenUsageUpdatedNotification") -> Event:
    usage: ThreadTokenUsage = _obj(p.get("tokenUsage", _MISSING), "tokenUsage")
    window: Optional[int] = _get(usage.get("modelContextWindow"), "modelContextWindow", (int,), "an integer", True)
    last: Optional[TokenUsageBreakdown] = _opt_obj(usage.get("last"), "last")
    total: Optional[TokenUsageBreakdown] = _opt_obj(usage.get("total"), "total")
    return TokenUsage(Usage.from_wire(last), Usage.from_wire(total), window)


def _turn_completed(p: "TurnCompletedNotification") -> Event:
    # items/abandoned/usage are filled in by the turn, which saw the item/*
    # notifications: turn.items holds only the last agent message, or nothing.
    turn: Turn = _obj(p.get("turn", _MISSING), "turn")
    error: Optional[TurnError] = _opt_obj(turn.get("error"), "error")
    return TurnCompleted(_str(turn.get("id", _MISSING), "id"), _str(turn.get("status", _MISSING), "status"), error)


def _window(window: Optional["WireRateLimitWindow"], key: str) -> Optional[RateLimitWindow]:
    if window is None:
        return None
    checked: WireRateLimitWindow = _obj(window, key)
    used: int = _get(checked.get("usedPercent", _MISSING), "usedPercent", (int, float), "a number", False)
    minutes: Optional[int] = _get(checked.get("windowDurationMins"), "windowDurationMins", (int,), "an integer", True)
    resets: Optional[int] = _get(checked.get("resetsAt"), "resetsAt", (int,), "an integer", True)
    return RateLimitWindow(used, minutes, resets)


def _rate_limits(p: "AccountRateLimitsUpdatedNotification") -> Event:
    snapshot: RateLimitSnapshot = _obj(p.get("rateLimits", _MISSING), "rateLimits")
    return RateLimitsUpdated(
        _opt_str(snapshot.get("limitId"), "limitId"),
        _window(snapshot.get("primary"), "primary"),
        _window(snapshot.get("secondary"), "secondary"),
        snapshot,
    )


_object_new = object.__new__


def delta_row(cls: Type[AgentMessageDelta]) -> Callable[[Any], Event]:
    """The row of ``item/agentMessage/delta`` building ``cls`` events: the
    mapping's own builds :class:`AgentMessageDelta`, the agent's turns a
    subclass (:class:`~._events.MessageDelta`, its message id filled in by
    the step fold)."""

    def row(p: "AgentMessageDeltaNotification") -> Event:
        # The hot path (nine frames in ten of a turn): two type checks and a
        # frozen event built without dataclass __init__'s per-field
        # object.__setattr__.
        item_id: Optional[str] = p.get("itemId")
        delta: Optional[str] = p.get("delta")
        if type(item_id) is not str or type(delta) is not str:  # the long way: checked, or a ProtocolError
            item_id = str(_str(p.get("itemId", _MISSING), "itemId"))
            delta = str(_str(p.get("delta", _MISSING), "delta"))
        event = _object_new(cls)
        fields = event.__dict__
        fields["item_id"] = item_id
        fields["delta"] = delta
        return event

    return row


_agent_message_delta = delta_row(AgentMessageDelta)


def _summary_delta(p: "ReasoningSummaryTextDeltaNotification") -> Event:
    return ReasoningSummaryDelta(
        _str(p.get("itemId", _MISSING), "itemId"),
        _str(p.get("delta", _MISSING), "delta"),
        _index(p.get("summaryIndex"), "summaryIndex"),
    )


def _text_delta(p: "ReasoningTextDeltaNotification") -> Event:
    return ReasoningTextDelta(
        _str(p.get("itemId", _MISSING), "itemId"),
        _str(p.get("delta", _MISSING), "delta"),
        _index(p.get("contentIndex"), "contentIndex"),
    )


def _plan_delta(p: "PlanDeltaNotification") -> Event:
    return PlanDelta(_str(p.get("itemId", _MISSING), "itemId"), _str(p.get("delta", _MISSING), "delta"))


def _output_delta(p: "CommandExecutionOutputDeltaNotification") -> Event:
    return CommandOutputDelta(_str(p.get("itemId", _MISSING), "itemId"), _str(p.get("delta", _MISSING), "delta"))


def _item_started(p: "ItemStartedNotification") -> Event:
    event: ItemStarted = _object_new(ItemStarted)  # without the frozen __init__ (every tenth frame)
    event.__dict__["item"] = _item(p)
    return event


def _item_completed(p: "ItemCompletedNotification") -> Event:
    event: ItemCompleted = _object_new(ItemCompleted)
    event.__dict__["item"] = _item(p)
    return event


def _diff_updated(p: "TurnDiffUpdatedNotification") -> Event:
    return DiffUpdated(_str(p.get("diff", _MISSING), "diff"))


#: Method → row.  ``Callable[[Any], …]``: each row takes its method's params as
#: the wire type ``codexmini.protocol.SERVER_NOTIFICATIONS`` names (the frame
#: enters typed here; nothing is converted).
NOTIFICATIONS: Dict[str, Callable[[Any], Optional[Event]]] = {
    "item/agentMessage/delta": _agent_message_delta,
    "item/reasoning/summaryTextDelta": _summary_delta,
    "item/reasoning/textDelta": _text_delta,
    "item/plan/delta": _plan_delta,
    "turn/plan/updated": _plan_updated,
    "item/commandExecution/outputDelta": _output_delta,
    "item/started": _item_started,
    "item/completed": _item_completed,
    "thread/tokenUsage/updated": _token_usage,
    "turn/diff/updated": _diff_updated,
    "error": _error,
    "turn/completed": _turn_completed,
    # Global (no thread): a turn never sees it; a GLOBAL subscription's
    # events() does, and the RPC core keeps the last snapshot for turns that
    # fail on a usage limit.
    "account/rateLimits/updated": _rate_limits,
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
    exit_code: Optional[int] = None  # a command's, as codex reports it (none when it never ran)


#: Tool arguments and structured results as text: ``json.dumps(value,
#: ensure_ascii=False, sort_keys=True, separators=(",", ":"))``, from an encoder
#: built once (one per tool item adds up, ``make bench``).
_json = encoder(sort_keys=True)


def _failed(status: Optional[str]) -> bool:
    return status in ("failed", "declined")


def _command(item: "CommandExecutionThreadItem") -> ToolResult:
    exit_code: Optional[int] = item.get("exitCode")
    status: Optional[str] = item.get("status")
    output: Optional[str] = item.get("aggregatedOutput")
    error = _failed(status) or (exit_code is not None and exit_code != 0)
    return ToolResult(item["id"], output or "", error, status or "completed", exit_code)


def _patch(item: "FileChangeThreadItem") -> ToolResult:
    status: Optional[str] = item.get("status")
    done = status or "completed"
    return ToolResult(item["id"], f"patch {done}", _failed(done), done)


def _mcp_text(result: Optional["McpToolCallResult"]) -> str:
    parts = []
    content: Optional[List[Any]] = result.get("content") if result else None
    for block in content or ():
        if isinstance(block, Mapping) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        else:
            parts.append(_json(block))
    return "\n".join(parts)


def _mcp(item: "McpToolCallThreadItem") -> ToolResult:
    error: Optional[McpToolCallError] = item.get("error")
    status: Optional[str] = item.get("status")
    text = str(error.get("message", "")) if isinstance(error, Mapping) else _mcp_text(item.get("result"))
    return ToolResult(item["id"], text, bool(error) or _failed(status), status or "completed")


def _mcp_name(item: "McpToolCallThreadItem") -> str:
    server: Optional[str] = item.get("server")
    tool: Optional[str] = item.get("tool")
    return f"{server}/{tool}" if server and tool else "mcp_tool_call"


def _change(change: "FileUpdateChange") -> Dict[str, Any]:
    path: Optional[str] = change.get("path")
    kind: Any = change.get("kind")
    diff: Optional[str] = change.get("diff")
    return {"path": path, "kind": kind, "diff": diff}


def _changes(item: "FileChangeThreadItem") -> Any:
    changes: Optional[List[FileUpdateChange]] = item.get("changes")
    return {"changes": [_change(c) for c in changes or ()]}


def _mcp_arguments(item: "McpToolCallThreadItem") -> Any:
    args: Any = item.get("arguments")
    return {} if args is None else args


def _command_name(item: "CommandExecutionThreadItem") -> str:
    return "bash"


def _command_arguments(item: "CommandExecutionThreadItem") -> Any:
    command: Optional[str] = item.get("command")
    return {"command": command}


def _patch_name(item: "FileChangeThreadItem") -> str:
    return "apply_patch"


def _web_search_name(item: "WebSearchThreadItem") -> str:
    return "web_search"


def _web_search_arguments(item: "WebSearchThreadItem") -> Any:
    query: Optional[str] = item.get("query")
    return {"query": query}


def _web_search(item: "WebSearchThreadItem") -> ToolResult:
    results: Optional[List[Any]] = item.get("results")
    return ToolResult(item["id"], _json(results) if results else "", False, "completed")


def _view_image_name(item: "ImageViewThreadItem") -> str:
    return "view_image"


def _view_image_arguments(item: "ImageViewThreadItem") -> Any:
    path: Optional[str] = item.get("path")
    return {"path": path}


def _view_image(item: "ImageViewThreadItem") -> ToolResult:
    return ToolResult(item["id"], "", False, "completed")


@dataclass(frozen=True)
class ToolItem:
    """One tool item type's session-log form.  Each callable takes the item as
    its ``ThreadItem`` branch (``CommandExecutionThreadItem`` …): ``Any`` here,
    since the table is where an item of a known type enters."""

    name: Callable[[Any], str]
    arguments: Callable[[Any], Any]
    result: Callable[[Any], ToolResult]


TOOL_ITEMS: Dict[str, ToolItem] = {
    "commandExecution": ToolItem(_command_name, _command_arguments, _command),
    "fileChange": ToolItem(_patch_name, _changes, _patch),
    "mcpToolCall": ToolItem(_mcp_name, _mcp_arguments, _mcp),
    "webSearch": ToolItem(_web_search_name, _web_search_arguments, _web_search),
    "imageView": ToolItem(_view_image_name, _view_image_arguments, _view_image),
}


def tool_call(item: "ThreadItem") -> Optional[ToolCall]:
    """The tool call an item stands for, or ``None`` if it is not a tool."""
    kind: str = item.get("type", "")
    row = TOOL_ITEMS.get(kind)
    if row is None:
        return None
    return ToolCall(str(item["id"]), row.name(item), _json(row.arguments(item)), kind)


def tool_result(item: "ThreadItem") -> Optional[ToolResult]:
    """The result of a *finished* tool item, or ``None`` if it is not a tool."""
    kind: str = item.get("type", "")
    row = TOOL_ITEMS.get(kind)
    return None if row is None else row.result(item)


__all__ = [
    "IGNORED",
    "NOTIFICATIONS",
    "TOOL_ITEMS",
    "ToolCall",
    "ToolItem",
    "ToolResult",
    "delta_row",
    "to_event",
    "tool_call",
    "tool_result",
]
