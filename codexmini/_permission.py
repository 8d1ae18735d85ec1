"""Permissions: the thread options codex accepts, and the answer to every server request.  Pure.

codex asks the client through JSON-RPC *requests*, and an unanswered request
blocks the turn forever.  :data:`SERVER_REQUESTS` has one row for each
``ServerRequest`` method of the pinned schema (ten stable ones, plus
``currentTime/read`` in the experimental bundle codexmini opts into): how to
describe it to a caller (:func:`describe` → :class:`ApprovalRequest`), and how
to turn the caller's :class:`Reply` into a schema-valid result
(:func:`build_answer`).  With no caller, or on a caller's error or deadline,
:func:`fail_closed` answers ``decline`` (or the method's equivalent).
:func:`install_approvals` wires one async handler to every method a reply can
answer.  A conformance test checks the table against the schema's
``ServerRequest`` union and validates every answer.

The session's knob fold, which turns logged knobs into the thread's
(sandbox, approval policy) pair, is :mod:`._knobs`.
"""

from __future__ import annotations

from typing import (
    TYPE_CHECKING,
    Any,
    Awaitable,
    Callable,
    Dict,
    List,
    Literal,
    Mapping,
    Optional,
    Protocol,
    Tuple,
    Union,
    get_args,
)

from ._errors import ConfigError

if TYPE_CHECKING:  # each row reads its method's params as the pinned schema's type (codexmini.protocol)
    from .protocol import (
        ApplyPatchApprovalParams,
        CommandExecutionRequestApprovalParams,
        DynamicToolCallParams,
        ExecCommandApprovalParams,
        FileChangeRequestApprovalParams,
        McpServerElicitationRequestParams,
        PermissionsRequestApprovalParams,
        RequestPermissionProfile,
        ToolRequestUserInputParams,
        ToolRequestUserInputQuestion,
    )

    #: A v2 request about one item of one turn.
    ItemRequest = Union[
        CommandExecutionRequestApprovalParams,
        FileChangeRequestApprovalParams,
        PermissionsRequestApprovalParams,
        ToolRequestUserInputParams,
    ]
    LegacyRequest = Union[ApplyPatchApprovalParams, ExecCommandApprovalParams]

if TYPE_CHECKING:  # the checker sees the standard library; at run time, ._dataclasses (nothing compiled)
    from dataclasses import dataclass, field
else:
    from ._dataclasses import dataclass, field


# ---------------------------------------------------------------------------
# Thread options

#: The sandbox modes codex accepts (``thread/start``'s ``sandbox``).
SandboxMode = Literal["read-only", "workspace-write", "danger-full-access"]
#: The approval policies every supported codex accepts (``AskForApproval`` of
#: 0.149.1, its granular objects aside).
ApprovalPolicy = Literal["untrusted", "on-request", "never"]
SANDBOX_MODES: Tuple[str, ...] = get_args(SandboxMode)
APPROVAL_POLICIES: Tuple[str, ...] = get_args(ApprovalPolicy)


def check_thread_options(sandbox: Optional[str], approval_policy: Optional[str]) -> None:
    """:class:`~codexmini.ConfigError` for a sandbox or approval policy codex would refuse."""
    if sandbox is not None and sandbox not in SANDBOX_MODES:
        raise ConfigError(f"sandbox must be one of {SANDBOX_MODES}, not {sandbox!r}")
    if approval_policy is not None and approval_policy not in APPROVAL_POLICIES:
        raise ConfigError(f"approval_policy must be one of {APPROVAL_POLICIES}, not {approval_policy!r}")


# ---------------------------------------------------------------------------
# Server requests

ACCEPT = "accept"
ACCEPT_FOR_SESSION = "acceptForSession"
DECLINE = "decline"
CANCEL = "cancel"
DECISIONS = (ACCEPT, ACCEPT_FOR_SESSION, DECLINE, CANCEL)


@dataclass(frozen=True)
class Reply:
    """A caller's answer, method-neutral.

    ``decision`` is one of :data:`DECISIONS`.  ``answers`` (question id → list
    of strings) is read for ``item/tool/requestUserInput``; ``content`` for an
    accepted MCP elicitation.
    """

    decision: str
    answers: Optional[Mapping[str, Any]] = None
    content: Any = None

    def __post_init__(self) -> None:
        if self.decision not in DECISIONS:
            raise ConfigError(f"decision must be one of {DECISIONS}, not {self.decision!r}")


@dataclass(frozen=True)
class ApprovalRequest:
    """A server request as a caller (an approval handler) sees it.

    ``method`` and ``params``: the request as codex sent it.  ``kind``: what
    it asks for -- ``command``, ``file_change``, ``permissions``,
    ``user_input``, ``elicitation``, ``mcp_tool_call``, ``dynamic_tool``, the
    legacy ``legacy_patch`` / ``legacy_command``, or one codexmini refuses by
    itself (``auth_refresh``, ``attestation``, ``current_time``).
    ``summary``: one line for a human (the command, the reason, the
    questions).  ``item_id``, ``thread_id``, ``turn_id``: what it is about,
    when the request says.  ``questions``: the questions of a
    ``user_input`` request that have a text (one without can be answered by
    nobody, so it is not shown).
    """

    method: str
    params: Mapping[str, Any]
    kind: str
    summary: str
    item_id: Optional[str] = None
    thread_id: Optional[str] = None
    turn_id: Optional[str] = None
    questions: Tuple[Mapping[str, Any], ...] = field(default=())


@dataclass(frozen=True)
class Answer:
    """What goes back on the wire: a ``result``, or (for refusals no result
    shape can express) a JSON-RPC ``error``."""

    result: Any = None
    error: Optional[Dict[str, Any]] = None
    decision: str = DECLINE


#: JSON-RPC error code codexmini uses when it refuses a request outright.
REFUSED = -32000


def _decision(reply: Reply) -> Answer:
    return Answer({"decision": reply.decision}, decision=reply.decision)


def _permissions(params: "PermissionsRequestApprovalParams", reply: Reply) -> Answer:
    if reply.decision in (ACCEPT, ACCEPT_FOR_SESSION):
        asked: RequestPermissionProfile = params.get("permissions") or {}
        granted = {}
        file_system: Any = asked.get("fileSystem")
        network: Any = asked.get("network")
        for key, value in (("fileSystem", file_system), ("network", network)):
            if value is not None:
                granted[key] = value
        scope = "session" if reply.decision == ACCEPT_FOR_SESSION else "turn"
        return Answer({"permissions": granted, "scope": scope}, decision=reply.decision)
    return Answer({"permissions": {}, "scope": "turn"}, decision=reply.decision)


def _question_ids(params: "ToolRequestUserInputParams") -> List[str]:
    questions: Optional[List[ToolRequestUserInputQuestion]] = params.get("questions")
    ids = []
    for question in questions or ():
        qid: object = question.get("id") if isinstance(question, Mapping) else None
        if isinstance(qid, str):
            ids.append(qid)
    return ids


def _user_input(params: "ToolRequestUserInputParams", reply: Reply) -> Answer:
    # Answers are keyed by the question ids codex asked: inventing an id would
    # answer a question nobody saw.
    asked = _question_ids(params)
    given = reply.answers or {}
    answers = {}
    if reply.decision in (ACCEPT, ACCEPT_FOR_SESSION):
        for qid in asked:
            value = given.get(qid)
            if isinstance(value, str):
                value = [value]
            if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value):
                answers[qid] = {"answers": list(value)}
    decision = ACCEPT if answers else DECLINE
    return Answer({"answers": answers}, decision=decision)


def _elicitation(params: "McpServerElicitationRequestParams", reply: Reply) -> Answer:
    action = {ACCEPT: "accept", ACCEPT_FOR_SESSION: "accept", DECLINE: "decline", CANCEL: "cancel"}[reply.decision]
    result: Dict[str, Any] = {"action": action}
    if action == "accept" and reply.content is not None:
        result["content"] = reply.content
    return Answer(result, decision=reply.decision)


def _dynamic_tool(params: "DynamicToolCallParams", reply: Reply) -> Answer:
    tool: Optional[str] = params.get("tool")
    text = f"codexmini has no implementation of dynamic tool {tool!r}"
    return Answer({"contentItems": [{"type": "inputText", "text": text}], "success": False}, decision=DECLINE)


def _refuse(what: str) -> Callable[[Mapping[str, Any], Reply], Answer]:
    def refuse(params: Mapping[str, Any], reply: Reply) -> Answer:
        # No result shape can say "no" (both need a token), so refuse with an
        # error; codex treats an error reply as a failure, never as consent.
        return Answer(error={"code": REFUSED, "message": f"codexmini does not provide {what}"})

    return refuse


_LEGACY = {ACCEPT: "approved", ACCEPT_FOR_SESSION: "approved_for_session", CANCEL: "abort"}


def _legacy(params: "LegacyRequest", reply: Reply) -> Answer:
    decision = _LEGACY.get(reply.decision) or {"denied": {"rejection": "declined by codexmini"}}
    return Answer({"decision": decision}, decision=reply.decision)


def _summary_command(p: "CommandExecutionRequestApprovalParams") -> str:
    command: Optional[str] = p.get("command")
    return str(command or "")


def _summary_reason(p: Union["FileChangeRequestApprovalParams", "PermissionsRequestApprovalParams"]) -> str:
    reason: Optional[str] = p.get("reason")
    return str(reason or "")


def answerable(question: object) -> bool:
    """A question someone can answer: it has text (not blank) and an id (a
    non-empty string) that the answer can be keyed by.  Only those are shown
    to a handler; the others are logged as unanswered where they have an id."""
    if not isinstance(question, Mapping):
        return False
    text, qid = question.get("question"), question.get("id")
    return isinstance(text, str) and bool(text.strip()) and isinstance(qid, str) and bool(qid)


def _summary_questions(p: "ToolRequestUserInputParams") -> str:
    questions: Optional[List[ToolRequestUserInputQuestion]] = p.get("questions")
    return "; ".join(q["question"].strip() for q in questions or () if answerable(q))


def _summary_message(p: "McpServerElicitationRequestParams") -> str:
    message: Optional[str] = p.get("message")
    return str(message or "")


def _summary_tool(p: "DynamicToolCallParams") -> str:
    tool: Optional[str] = p.get("tool")
    return str(tool or "")


def _summary_patch(p: "ApplyPatchApprovalParams") -> str:
    changes: Optional[Mapping[str, Any]] = p.get("fileChanges")
    return ", ".join(sorted(changes or {}))


def _summary_exec(p: "ExecCommandApprovalParams") -> str:
    command: Optional[List[str]] = p.get("command")
    if isinstance(command, list):
        return " ".join(str(c) for c in command)
    return ""  # off-schema: execCommandApproval always carries its command list


def _summary_none(p: Mapping[str, Any]) -> str:
    return ""


@dataclass(frozen=True)
class RequestKind:
    """One server-request method: its kind, how to summarise it and how to
    build the answer.  Each callable takes the params as the method's wire type
    (``Any`` here: the table is where a request enters)."""

    kind: str
    summary: Callable[[Any], str]
    build: Callable[[Any, Reply], Answer]


#: Every ``ServerRequest`` method of codex 0.149.1 (experimental bundle), with its kind and answer.
SERVER_REQUESTS: Dict[str, RequestKind] = {
    "item/commandExecution/requestApproval": RequestKind("command", _summary_command, lambda p, r: _decision(r)),
    "item/fileChange/requestApproval": RequestKind("file_change", _summary_reason, lambda p, r: _decision(r)),
    "item/permissions/requestApproval": RequestKind("permissions", _summary_reason, _permissions),
    "item/tool/requestUserInput": RequestKind("user_input", _summary_questions, _user_input),
    "mcpServer/elicitation/request": RequestKind("elicitation", _summary_message, _elicitation),
    "item/tool/call": RequestKind("dynamic_tool", _summary_tool, _dynamic_tool),
    "account/chatgptAuthTokens/refresh": RequestKind("auth_refresh", _summary_none, _refuse("ChatGPT auth tokens")),
    "attestation/generate": RequestKind("attestation", _summary_none, _refuse("client attestation")),
    # Experimental: "read the current time from an external clock owned by the
    # client".  codexmini owns no such clock; refusing makes codex use its own.
    "currentTime/read": RequestKind("current_time", _summary_none, _refuse("an external clock")),
    "applyPatchApproval": RequestKind("legacy_patch", _summary_patch, _legacy),
    "execCommandApproval": RequestKind("legacy_command", _summary_exec, _legacy),
}


def describe(method: str, params: Mapping[str, Any]) -> ApprovalRequest:
    """The caller's view of a server request (``KeyError`` if the method is unknown).

    The ids are read by the same names whatever the method (the v2 names
    first, then the legacy ones), so they are read from the params as sent,
    untyped; each row's summary reads its own method's wire type."""
    row = SERVER_REQUESTS[method]
    kind = row.kind
    meta = params.get("_meta")
    if kind == "elicitation" and isinstance(meta, Mapping) and meta.get("codex_approval_kind") == "mcp_tool_call":
        # MCP tool approvals arrive as elicitations (recorded: fixtures/<version>/mcp_elicitation).
        kind = "mcp_tool_call"
    # A question with no text, or no id to key its answer by, cannot be
    # answered by anyone: not shown.  One with an id is still counted as
    # unanswered where the answer is logged.
    questions = tuple(q for q in params.get("questions") or () if answerable(q))
    return ApprovalRequest(
        method=method,
        params=params,
        kind=kind,
        summary=row.summary(params),
        item_id=params.get("itemId") or params.get("callId"),
        thread_id=params.get("threadId") or params.get("conversationId"),
        turn_id=params.get("turnId"),
        questions=questions,
    )


def build_answer(method: str, params: Mapping[str, Any], reply: Reply) -> Answer:
    """Turn a caller's reply into the wire answer for ``method``."""
    return SERVER_REQUESTS[method].build(params, reply)


def fail_closed(method: str, params: Mapping[str, Any]) -> Answer:
    """The answer when nobody (or nothing in time) decided: decline."""
    return build_answer(method, params, Reply(DECLINE))


#: The server requests a :class:`Reply` can answer (approvals and questions);
#: the rest codexmini refuses by itself (auth refresh, attestation, a clock).
ANSWERABLE = frozenset(m for m in SERVER_REQUESTS if build_answer(m, {}, Reply(DECLINE)).error is None)

#: Answers one approval (or question) codex asks: ``await handler(request)`` → a reply.
ApprovalHandler = Callable[[ApprovalRequest], Awaitable[Reply]]


class _Answers(Protocol):  # pragma: no cover - a typing Protocol: its stub never runs
    def on_request(self, method: str, handler: Callable[[str, Dict[str, Any]], Awaitable[Any]]) -> None: ...


def install_approvals(client: _Answers, handler: ApprovalHandler) -> None:
    """Answer every approval and question codex can ask with ``handler``:
    each server request a :class:`Reply` can answer (the rest keep the
    client's fail-closed default) is shown to it as an :class:`ApprovalRequest`."""

    async def answer(method: str, params: Dict[str, Any]) -> Any:
        reply = await handler(describe(method, params))
        return build_answer(method, params, reply).result

    for method in sorted(ANSWERABLE):
        client.on_request(method, answer)


def reply_from_flag(auto_approve: bool) -> Reply:
    """The policy answer used by non-interactive callers."""
    return Reply(ACCEPT if auto_approve else DECLINE)


#: Wire decision words that are not the log's own, in the log's words: the
#: v1 ``ReviewDecision`` values and the object forms' keys.  Anything else
#: is logged as the wire said it.
_WORDS = {
    "approved": ACCEPT,
    "approved_for_session": ACCEPT_FOR_SESSION,
    "approved_execpolicy_amendment": ACCEPT,
    "acceptWithExecpolicyAmendment": ACCEPT,
    "denied": DECLINE,
    "timed_out": DECLINE,
    "abort": CANCEL,
}


def unanswered(method: str, params: Mapping[str, Any], frame: Mapping[str, Any]) -> List[str]:
    """The ids of the questions codex asked (``item/tool/requestUserInput``)
    that the answer ``frame`` leaves without an answer."""
    if method != "item/tool/requestUserInput":
        return []
    result = frame.get("result")
    answers = result.get("answers") if isinstance(result, Mapping) else None
    given = answers if isinstance(answers, Mapping) else {}
    asked = [q.get("id") for q in params.get("questions") or () if isinstance(q, Mapping)]
    return [qid for qid in asked if isinstance(qid, str) and qid not in given]


def decision_of(frame: Mapping[str, Any]) -> str:
    """The decision an answer frame carries, in the session log's words
    (``approval/decision``), whatever answered it (a handler, the default, a
    deadline): one of :data:`DECISIONS` for every answer codexmini builds."""
    result = frame.get("result")
    if "error" in frame or not isinstance(result, Mapping):
        return DECLINE
    decision = result.get("decision")
    if isinstance(decision, Mapping):  # object forms: denied, amendments
        decision = next(iter(decision), DECLINE)
    if isinstance(decision, str):
        return _WORDS.get(decision, decision)
    if "action" in result:
        return {"accept": ACCEPT, "cancel": CANCEL}.get(str(result["action"]), DECLINE)
    if "permissions" in result:
        return (
            (ACCEPT_FOR_SESSION if result.get("scope") == "session" else ACCEPT) if result["permissions"] else DECLINE
        )
    if "answers" in result:
        return ACCEPT if result["answers"] else DECLINE
    return DECLINE


__all__ = [
    "ACCEPT",
    "ACCEPT_FOR_SESSION",
    "ANSWERABLE",
    "APPROVAL_POLICIES",
    "Answer",
    "ApprovalHandler",
    "ApprovalRequest",
    "CANCEL",
    "DECISIONS",
    "DECLINE",
    "REFUSED",
    "SERVER_REQUESTS",
    "Reply",
    "SANDBOX_MODES",
    "build_answer",
    "check_thread_options",
    "decision_of",
    "describe",
    "fail_closed",
    "install_approvals",
    "reply_from_flag",
    "unanswered",
]
