"""A fake codex with the real shapes: threads, turns, items, usage.

:class:`CodexLike` is a behaviour for :class:`~.fake_appserver.FakeAppServer`
that answers ``initialize``, ``thread/start``, ``turn/start``,
``turn/interrupt`` and ``turn/steer`` the way codex 0.149.1 does (shapes from
the recordings under ``fixtures/0.149.1/``): the
``turn/start`` response before ``turn/started``, the ``userMessage`` echo, the
epilogue of ``thread/tokenUsage/updated`` and ``account/rateLimits/updated``,
``thread/status/changed`` around the turn.  Subclasses script a turn in
:meth:`CodexLike.script` with the helpers (:meth:`~CodexLike.message`,
:meth:`~CodexLike.started`, :meth:`~CodexLike.usage`, :meth:`~CodexLike.finish`…)
or override a request handler (``on_turn_start`` …).  ``thread/loaded/list``
answers with every frame received so far (method and params, one JSON string
each), so a test can ask what arrived on the server side.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, Optional, Sequence

from .._wire import Frame
from .fake_appserver import INIT_RESULT, ServerSide

THREAD = "01a22879-9bfc-7961-a05c-6859166dc5e2"
TURNS = ["01a22879-9c13-7550-ac03-cd56cb48bc99", "01a22879-9c13-7550-ac03-cd56cb48bd00"]
TURN = TURNS[0]
USER_ITEM = "01a22879-9c31-7b71-8c65-263c78c031fa"

#: ``last``/``total`` of two model calls (approval_accept shapes).
USAGE_1 = {
    "totalTokens": 15,
    "inputTokens": 10,
    "cachedInputTokens": 2,
    "cacheWriteInputTokens": 0,
    "outputTokens": 5,
    "reasoningOutputTokens": 1,
}
USAGE_2 = {
    "totalTokens": 30,
    "inputTokens": 20,
    "cachedInputTokens": 4,
    "cacheWriteInputTokens": 0,
    "outputTokens": 10,
    "reasoningOutputTokens": 2,
}
USAGE_SUM = {k: USAGE_1[k] + USAGE_2[k] for k in USAGE_1}

#: A usage limit hit: the ``account/rateLimits/updated`` snapshot codex sends,
#: with no thread, before the usage-limit failure (usage_limit), without the
#: one key only 0.171.0 declares (``normalModelSlug``): valid at both ends.
RATE_LIMITS_EXHAUSTED = {
    "limitId": "codex",
    "limitName": None,
    "primary": {"usedPercent": 100, "windowDurationMins": 300, "resetsAt": 1796130000},
    "secondary": {"usedPercent": 40, "windowDurationMins": 10080, "resetsAt": 1796216400},
    "credits": None,
    "individualLimit": None,
    "spendControlReached": None,
    "planType": None,
    "rateLimitReachedType": None,
}

RATE_LIMITS = {  # approval_accept; has no threadId (a global notification)
    "limitId": "codex",
    "limitName": None,
    "primary": None,
    "secondary": None,
    "credits": None,
    "individualLimit": None,
    "spendControlReached": None,
    "planType": None,
    "rateLimitReachedType": None,
}

TURN_ERROR = {  # err_400
    "message": '{"error": {"message": "Invalid \'input\': bad things.", "type": "invalid_request_error"}}',
    "codexErrorInfo": "other",
    "additionalDetails": None,
}

COMMAND = "/bin/bash -lc 'echo done'"


# -- real shapes ----------------------------------------------------------------------


def thread_object(cwd: str, thread_id: str = THREAD) -> Dict[str, Any]:
    return {
        "id": thread_id,
        "extra": None,
        "sessionId": thread_id,
        "forkedFromId": None,
        "parentThreadId": None,
        "preview": "",
        "ephemeral": False,
        "section": None,
        "sectionEnteredAt": None,
        "projectId": None,
        "historyMode": "legacy",
        "modelProvider": "fake",
        "createdAt": 1795975388,
        "updatedAt": 1795975388,
        "recencyAt": 1795975388,
        "status": {"type": "idle"},
        "path": f"/var/tmp/fake-codex-home/sessions/rollout-{thread_id}.jsonl",
        "cwd": cwd,
        "cliVersion": "0.149.1",
        "source": "vscode",
        "canAcceptDirectInput": True,
        "threadSource": None,
        "agentNickname": None,
        "agentRole": None,
        "gitInfo": None,
        "name": None,
        "turns": [],
    }


def thread_start_result(params: Mapping[str, Any], thread_id: str = THREAD) -> Dict[str, Any]:
    cwd = params.get("cwd") or "/var/tmp/ws"
    return {
        "thread": thread_object(cwd, thread_id),
        "model": params.get("model") or "gpt-fake",
        "modelProvider": "fake",
        "serviceTier": None,
        "cwd": cwd,
        "runtimeWorkspaceRoots": [cwd],
        "instructionSources": [],
        "approvalPolicy": params.get("approvalPolicy") or "on-request",
        "approvalsReviewer": "user",
        "sandbox": {
            "type": "workspaceWrite",
            "writableRoots": [],
            "networkAccess": False,
            "excludeTmpdirEnvVar": False,
            "excludeSlashTmp": False,
        },
        "activePermissionProfile": None,
        "reasoningEffort": None,
        "multiAgentMode": "explicitRequestOnly",
    }


def turn_object(
    turn: str,
    status: str = "inProgress",
    error: Any = None,
    items: Sequence[Any] = (),
    started: Optional[int] = 1795975388,
) -> Dict[str, Any]:
    done = status != "inProgress"
    return {
        "id": turn,
        "items": list(items),
        "itemsView": "summary" if items else "notLoaded",
        "status": status,
        "error": error,
        "startedAt": started,
        "completedAt": 1795975388 if done else None,
        "durationMs": 309 if done else None,
    }


def agent_message(item_id: str, text: str = "") -> Dict[str, Any]:
    return {
        "type": "agentMessage",
        "id": item_id,
        "text": text,
        "phase": None,
        "memoryCitation": None,
        "delivery": None,
    }


def reasoning(item_id: str, summary: Sequence[str] = (), content: Sequence[str] = ()) -> Dict[str, Any]:
    return {"type": "reasoning", "id": item_id, "summary": list(summary), "content": list(content)}


def command(item_id: str, status: str, command: str = COMMAND) -> Dict[str, Any]:
    done = status in ("completed", "failed")  # it ran; one declined (or in progress) has no process, output, code
    return {
        "type": "commandExecution",
        "id": item_id,
        "pluginId": None,
        "scriptPath": None,
        "command": command,
        "cwd": "/var/tmp/ws",
        "processId": "30116" if done else None,
        "source": "unifiedExecStartup" if done else "agent",
        "status": status,
        "commandActions": [{"type": "unknown", "command": "echo done"}],
        "aggregatedOutput": "done\n" if done else None,
        "exitCode": 0 if done else None,
        "durationMs": 10 if done else None,
    }


def user_message(item_id: str, inputs: Sequence[Mapping[str, Any]]) -> Dict[str, Any]:
    """The userMessage item echoing turn input, as codex does (text_elements and detail added)."""
    content = []
    for given in inputs:
        part = dict(given)
        if part.get("type") == "text":
            part.setdefault("text_elements", [])
        elif part.get("type") in ("localImage", "image"):
            part.setdefault("detail", None)
        content.append(part)
    return {"type": "userMessage", "id": item_id, "clientId": None, "content": content}


# -- the behaviour ----------------------------------------------------------------------


class CodexLike:
    """Answers like codex; subclasses script the turn in :meth:`script`.
    ``variant`` (the fake's first argument) lets one class script several
    flavours of a turn."""

    def __init__(self, variant: str = "") -> None:
        self.variant = variant
        self.active: Optional[str] = None
        self.count = 0
        self.received: List[str] = []
        self._server: Optional[ServerSide] = None

    @property
    def server(self) -> ServerSide:
        assert self._server is not None, "the behaviour is not running"
        return self._server

    async def __call__(self, server: ServerSide) -> Optional[int]:
        self._server = server
        if server.args and not self.variant:
            self.variant = server.args[0]
        while True:
            frame = await server.recv()
            if frame is None:
                return 0
            self.received.append(
                json.dumps({"method": frame.get("method"), "params": frame.get("params")}, sort_keys=True)
            )
            if "method" in frame and "id" in frame:
                handler = getattr(self, "on_" + str(frame["method"]).replace("/", "_"), None)
                if handler is None:
                    server.fail(frame, f"unknown method {frame['method']!r}")
                else:
                    await handler(frame["id"], frame.get("params") or {})

    # -- scripted-turn helpers; ``turn`` defaults to the running turn --------

    def write(self, frame: Frame) -> None:
        self.server.send(frame)

    def note(self, method: str, params: Mapping[str, Any]) -> None:
        self.server.notify(method, params)

    def tid(self, turn: Optional[str]) -> str:
        return turn or self.active or TURN

    def started(self, item: Mapping[str, Any], turn: Optional[str] = None, thread: str = THREAD) -> None:
        self.note("item/started", {"item": item, "threadId": thread, "turnId": self.tid(turn), "startedAtMs": 1})

    def completed(self, item: Mapping[str, Any], turn: Optional[str] = None, thread: str = THREAD) -> None:
        self.note("item/completed", {"item": item, "threadId": thread, "turnId": self.tid(turn), "completedAtMs": 1})

    def delta(self, item_id: str, text: str, turn: Optional[str] = None, thread: str = THREAD) -> None:
        params = {"threadId": thread, "turnId": self.tid(turn), "itemId": item_id, "delta": text}
        self.note("item/agentMessage/delta", params)

    def message(self, item_id: str, *parts: str) -> None:
        self.started(agent_message(item_id))
        for part in parts:
            self.delta(item_id, part)
        self.completed(agent_message(item_id, "".join(parts)))

    def usage(self, last: Mapping[str, int], total: Mapping[str, int], turn: Optional[str] = None) -> None:
        usage = {"total": dict(total), "last": dict(last), "modelContextWindow": 258400}
        self.note("thread/tokenUsage/updated", {"threadId": THREAD, "turnId": self.tid(turn), "tokenUsage": usage})
        self.note("account/rateLimits/updated", {"rateLimits": RATE_LIMITS})

    def error(self, message: str, will_retry: bool, error: Optional[Mapping[str, Any]] = None) -> None:
        err = error or {
            "message": message,
            "codexErrorInfo": {"responseStreamDisconnected": {"httpStatusCode": 401}},
            "additionalDetails": "unexpected status 401 Unauthorized: Incorrect API key provided: sk-fake.",
        }
        self.note("error", {"error": err, "willRetry": will_retry, "threadId": THREAD, "turnId": self.tid(None)})

    def status(self, kind: str) -> None:
        status: Dict[str, Any] = {"type": kind}
        if kind == "active":
            status["activeFlags"] = []
        self.note("thread/status/changed", {"threadId": THREAD, "status": status})

    def finish(
        self,
        status: str = "completed",
        error: Any = None,
        items: Sequence[Any] = (),
        turn: Optional[str] = None,
        thread: str = THREAD,
    ) -> None:
        turn_id = self.tid(turn)
        if thread == THREAD and turn_id == self.active:
            self.status("systemError" if status == "failed" else "idle")
            self.active = None
        self.note("turn/completed", {"threadId": thread, "turn": turn_object(turn_id, status, error, items)})

    def begin(self, rid: Any, params: Mapping[str, Any]) -> None:
        """The turn/start response, then the turn's opening frames."""
        self.answer_turn_start(rid)
        self.opening(params)

    def answer_turn_start(self, rid: Any) -> None:
        if self.active is None:
            self.active = TURNS[self.count % len(TURNS)]
            self.count += 1
        self.write({"id": rid, "result": {"turn": turn_object(self.active, started=None)}})

    def opening(self, params: Mapping[str, Any]) -> None:
        self.status("active")
        self.note("turn/started", {"threadId": THREAD, "turn": turn_object(self.tid(None))})
        user = user_message(USER_ITEM, params.get("input") or [])
        self.started(user)
        self.completed(user)

    # -- requests ------------------------------------------------------------

    async def on_initialize(self, rid: Any, params: Mapping[str, Any]) -> None:
        self.write({"id": rid, "result": INIT_RESULT})

    async def on_thread_start(self, rid: Any, params: Mapping[str, Any]) -> None:
        result = thread_start_result(params)
        self.write({"id": rid, "result": result})
        self.note("thread/started", {"thread": result["thread"]})

    async def on_turn_start(self, rid: Any, params: Mapping[str, Any]) -> None:
        self.begin(rid, params)
        await self.script(params)

    async def script(self, params: Mapping[str, Any]) -> None:
        """The turn after its opening frames (default: one message, one usage)."""
        self.message("msg_1", "Hello")
        self.usage(USAGE_1, USAGE_1)
        self.finish(items=[agent_message("msg_1", "Hello")])

    async def on_turn_interrupt(self, rid: Any, params: Mapping[str, Any]) -> None:
        if self.active is None or params.get("turnId") != self.active:
            self.write({"id": rid, "error": {"code": -32600, "message": "no active turn to interrupt"}})
            return
        self.write({"id": rid, "result": {}})
        self.finish("interrupted")

    async def on_turn_steer(self, rid: Any, params: Mapping[str, Any]) -> None:
        expected = params.get("expectedTurnId")
        if self.active is None:
            self.write({"id": rid, "error": {"code": -32600, "message": "no active turn to steer"}})
        elif expected != self.active:
            message = f"expected active turn id `{expected}` but found `{self.active}`"
            self.write({"id": rid, "error": {"code": -32600, "message": message}})
        else:
            self.write({"id": rid, "result": {"turnId": self.active}})
            await self.steered(params)

    async def steered(self, params: Mapping[str, Any]) -> None:
        """Input arrived with ``turn/steer`` (default: nothing happens)."""

    async def on_thread_unsubscribe(self, rid: Any, params: Mapping[str, Any]) -> None:
        self.write({"id": rid, "result": {"status": "unsubscribed"}})

    async def on_thread_loaded_list(self, rid: Any, params: Mapping[str, Any]) -> None:
        self.write({"id": rid, "result": {"data": list(self.received), "nextCursor": None}})


__all__ = [
    "COMMAND",
    "CodexLike",
    "RATE_LIMITS",
    "RATE_LIMITS_EXHAUSTED",
    "THREAD",
    "TURN",
    "TURNS",
    "TURN_ERROR",
    "USAGE_1",
    "USAGE_2",
    "USAGE_SUM",
    "USER_ITEM",
    "agent_message",
    "command",
    "reasoning",
    "thread_object",
    "thread_start_result",
    "turn_object",
    "user_message",
]
