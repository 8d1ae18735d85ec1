"""A hand-written fake ``codex app-server`` for the thread and turn tests.

Run as ``python fake_thread_server.py BEHAVIOUR [VARIANT]``.  It answers
``initialize``, ``thread/start``, ``turn/start``, ``turn/interrupt`` and
``turn/steer`` like the real 0.149.1 binary (shapes copied from
``shared/reference/codex-0.149.1-frames.md``), and plays a scripted turn per
behaviour: one class below each.  ``thread/loaded/list`` answers with the
methods and params of every frame the fake received so far (one JSON string
each), so a test can ask what really arrived on the server side.

Every frame written here is validated by the conformance plugin (strict,
experimental schema) through the client's tap, so this fake cannot drift
from the protocol unnoticed; the ``unmapped`` behaviour is the one that
sends a method the schema does not know, on purpose.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, Dict, Iterator, List, Optional

THREAD = "01a22879-9bfc-7961-a05c-6859166dc5e2"
TURNS = ["01a22879-9c13-7550-ac03-cd56cb48bc99", "01a22879-9c13-7550-ac03-cd56cb48bd00"]
TURN = TURNS[0]
OTHER_TURN = "01a22879-0000-7000-8000-00000000000b"
OTHER_THREAD = "01a22879-0000-7000-8000-00000000000c"
USER_ITEM = "01a22879-9c31-7b71-8c65-263c78c031fa"
EMITTED = 1795975388192

INIT_RESULT = {
    "userAgent": "codexmini/0.149.1 (fake)",
    "codexHome": "/var/tmp/fake-codex-home",
    "platformFamily": "unix",
    "platformOs": "linux",
}

#: last/total of the two model calls of a turn (approval_accept shapes).
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

COMMAND = "/bin/bash -lc 'echo done'"

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


# -- output ---------------------------------------------------------------------


def write(frame: Dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(frame) + "\n")
    sys.stdout.flush()


def note(method: str, params: Dict[str, Any]) -> Dict[str, Any]:
    return {"method": method, "params": params, "emittedAtMs": EMITTED}


def frames() -> Iterator[Dict[str, Any]]:
    for line in sys.stdin:
        line = line.strip()
        if line:
            yield json.loads(line)


# -- real shapes ----------------------------------------------------------------------


def thread_object(cwd: str) -> Dict[str, Any]:
    return {
        "id": THREAD,
        "extra": None,
        "sessionId": THREAD,
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
        "path": f"/var/tmp/fake-codex-home/sessions/rollout-{THREAD}.jsonl",
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


def thread_start_result(params: Dict[str, Any]) -> Dict[str, Any]:
    cwd = params.get("cwd") or "/var/tmp/ws"
    return {
        "thread": thread_object(cwd),
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
    turn: str, status: str = "inProgress", error=None, items=(), started: Optional[int] = 1795975388
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
    return {"type": "agentMessage", "id": item_id, "text": text, "phase": None, "memoryCitation": None, "delivery": None}


def reasoning(item_id: str, summary=(), content=()) -> Dict[str, Any]:
    return {"type": "reasoning", "id": item_id, "summary": list(summary), "content": list(content)}


def command(item_id: str, status: str) -> Dict[str, Any]:
    done = status != "inProgress"
    return {
        "type": "commandExecution",
        "id": item_id,
        "pluginId": None,
        "scriptPath": None,
        "command": COMMAND,
        "cwd": "/var/tmp/ws",
        "processId": "30116" if done else None,
        "source": "unifiedExecStartup" if done else "agent",
        "status": status,
        "commandActions": [{"type": "unknown", "command": "echo done"}],
        "aggregatedOutput": "done\n" if done else None,
        "exitCode": 0 if done else None,
        "durationMs": 10 if done else None,
    }


def user_message(item_id: str, inputs: List[Dict[str, Any]]) -> Dict[str, Any]:
    """The userMessage item echoing turn input, as codex does (text_elements and detail added)."""
    content = []
    for part in inputs:
        part = dict(part)
        if part.get("type") == "text":
            part.setdefault("text_elements", [])
        elif part.get("type") in ("localImage", "image"):
            part.setdefault("detail", None)
        content.append(part)
    return {"type": "userMessage", "id": item_id, "clientId": None, "content": content}


# -- the server --------------------------------------------------------------------------


class Base:
    """Answers like codex; subclasses script the turn in :meth:`script`."""

    def __init__(self, variant: str = "") -> None:
        self.variant = variant
        self.active: Optional[str] = None
        self.count = 0
        self.received: List[str] = []

    # scripted-turn helpers; ``turn`` defaults to the running turn

    def tid(self, turn: Optional[str]) -> str:
        return turn or self.active or TURN

    def started(self, item: Dict[str, Any], turn: Optional[str] = None, thread: str = THREAD) -> None:
        write(note("item/started", {"item": item, "threadId": thread, "turnId": self.tid(turn), "startedAtMs": EMITTED}))

    def completed(self, item: Dict[str, Any], turn: Optional[str] = None, thread: str = THREAD) -> None:
        write(note("item/completed", {"item": item, "threadId": thread, "turnId": self.tid(turn), "completedAtMs": EMITTED}))

    def delta(self, item_id: str, text: str, turn: Optional[str] = None, thread: str = THREAD) -> None:
        write(note("item/agentMessage/delta", {"threadId": thread, "turnId": self.tid(turn), "itemId": item_id, "delta": text}))

    def message(self, item_id: str, *parts: str) -> None:
        self.started(agent_message(item_id))
        for part in parts:
            self.delta(item_id, part)
        self.completed(agent_message(item_id, "".join(parts)))

    def usage(self, last: Dict[str, int], total: Dict[str, int], turn: Optional[str] = None) -> None:
        write(
            note(
                "thread/tokenUsage/updated",
                {
                    "threadId": THREAD,
                    "turnId": self.tid(turn),
                    "tokenUsage": {"total": total, "last": last, "modelContextWindow": 258400},
                },
            )
        )
        write(note("account/rateLimits/updated", {"rateLimits": RATE_LIMITS}))

    def error(self, message: str, will_retry: bool, error: Optional[Dict[str, Any]] = None) -> None:
        err = error or {
            "message": message,
            "codexErrorInfo": {"responseStreamDisconnected": {"httpStatusCode": 401}},
            "additionalDetails": "unexpected status 401 Unauthorized: Incorrect API key provided: sk-fake.",
        }
        write(note("error", {"error": err, "willRetry": will_retry, "threadId": THREAD, "turnId": self.tid(None)}))

    def status(self, kind: str) -> None:
        status: Dict[str, Any] = {"type": kind}
        if kind == "active":
            status["activeFlags"] = []
        write(note("thread/status/changed", {"threadId": THREAD, "status": status}))

    def finish(self, status: str = "completed", error=None, items=(), turn: Optional[str] = None, thread: str = THREAD) -> None:
        turn_id = self.tid(turn)
        if thread == THREAD and turn_id == self.active:
            self.status("systemError" if status == "failed" else "idle")
            self.active = None
        write(note("turn/completed", {"threadId": thread, "turn": turn_object(turn_id, status, error, items)}))

    def begin(self, rid: Any, params: Dict[str, Any]) -> None:
        """The turn/start response, then the turn's opening frames."""
        self.answer_turn_start(rid)
        self.opening(params)

    def answer_turn_start(self, rid: Any) -> None:
        if self.active is None:
            self.active = TURNS[self.count % len(TURNS)]
            self.count += 1
        write({"id": rid, "result": {"turn": turn_object(self.active, started=None)}})

    def opening(self, params: Dict[str, Any]) -> None:
        self.status("active")
        write(note("turn/started", {"threadId": THREAD, "turn": turn_object(self.tid(None))}))
        user = user_message(USER_ITEM, params.get("input") or [])
        self.started(user)
        self.completed(user)

    # requests

    def serve(self) -> None:
        for frame in frames():
            self.received.append(json.dumps({"method": frame.get("method"), "params": frame.get("params")}, sort_keys=True))
            if "method" not in frame or "id" not in frame:
                continue  # initialized, or a response
            getattr(self, "on_" + frame["method"].replace("/", "_"))(frame["id"], frame.get("params") or {})

    def on_initialize(self, rid: Any, params: Dict[str, Any]) -> None:
        write({"id": rid, "result": INIT_RESULT})

    def on_thread_start(self, rid: Any, params: Dict[str, Any]) -> None:
        result = thread_start_result(params)
        write({"id": rid, "result": result})
        write(note("thread/started", {"thread": result["thread"]}))

    def on_turn_start(self, rid: Any, params: Dict[str, Any]) -> None:
        self.begin(rid, params)
        self.script(params)

    def script(self, params: Dict[str, Any]) -> None:
        self.message("msg_1", "Hello")
        self.usage(USAGE_1, USAGE_1)
        self.finish(items=[agent_message("msg_1", "Hello")])

    def on_turn_interrupt(self, rid: Any, params: Dict[str, Any]) -> None:
        if self.active is None or params.get("turnId") != self.active:
            write({"id": rid, "error": {"code": -32600, "message": "no active turn to interrupt"}})
            return
        write({"id": rid, "result": {}})
        self.finish("interrupted")

    def on_turn_steer(self, rid: Any, params: Dict[str, Any]) -> None:
        expected = params.get("expectedTurnId")
        if self.active is None:
            write({"id": rid, "error": {"code": -32600, "message": "no active turn to steer"}})
        elif expected != self.active:
            message = f"expected active turn id `{expected}` but found `{self.active}`"
            write({"id": rid, "error": {"code": -32600, "message": message}})
        else:
            write({"id": rid, "result": {"turnId": self.active}})
            self.steered(params)

    def steered(self, params: Dict[str, Any]) -> None:
        pass

    def on_thread_loaded_list(self, rid: Any, params: Dict[str, Any]) -> None:
        write({"id": rid, "result": {"data": list(self.received), "nextCursor": None}})


# -- behaviours ----------------------------------------------------------------------------


class Plain(Base):
    """Reasoning, a command, a streamed message; two model calls' usage."""

    def script(self, params: Dict[str, Any]) -> None:
        turn = self.tid(None)
        self.started(reasoning("rs_1"))
        ids = {"threadId": THREAD, "turnId": turn}
        write(note("item/reasoning/summaryPartAdded", {**ids, "itemId": "rs_1", "summaryIndex": 0}))
        for part in ("**Planning** ", "the answer."):
            write(note("item/reasoning/summaryTextDelta", {**ids, "itemId": "rs_1", "delta": part, "summaryIndex": 0}))
        self.completed(reasoning("rs_1", ["**Planning** the answer."]))
        self.started(command("call_cmd_1", "inProgress"))
        write(note("item/commandExecution/outputDelta", {**ids, "itemId": "call_cmd_1", "delta": "done\n"}))
        self.completed(command("call_cmd_1", "completed"))
        self.usage(USAGE_1, USAGE_1)
        self.message("msg_1", "Hel", "lo")
        self.usage(USAGE_2, USAGE_SUM)
        self.finish(items=[agent_message("msg_1", "Hello")])


class Early(Base):
    """turn/started and a delta arrive before the turn/start response (the
    delta even before its item/started)."""

    def on_turn_start(self, rid: Any, params: Dict[str, Any]) -> None:
        self.active = TURN
        self.count += 1
        self.opening(params)
        self.delta("msg_1", "early ")
        self.answer_turn_start(rid)
        self.started(agent_message("msg_1"))
        self.delta("msg_1", "late")
        self.completed(agent_message("msg_1", "early late"))
        self.finish(items=[agent_message("msg_1", "early late")])


class ThreadWarning(Base):
    """A warning for the new thread before the thread/start response (reference §2)."""

    def on_thread_start(self, rid: Any, params: Dict[str, Any]) -> None:
        write(note("warning", {"threadId": THREAD, "message": "Under-development features enabled: request_permissions_tool."}))
        super().on_thread_start(rid, params)


class Filtering(Base):
    """Frames of another turn of this thread and of another thread, interleaved."""

    def script(self, params: Dict[str, Any]) -> None:
        self.delta("msg_x", "other turn", turn=OTHER_TURN)
        self.completed(agent_message("msg_x", "other turn"), turn=OTHER_TURN)
        self.usage(USAGE_2, USAGE_2, turn=OTHER_TURN)
        self.delta("msg_y", "other thread", thread=OTHER_THREAD)
        self.finish("completed", turn=OTHER_TURN)
        self.finish("failed", TURN_ERROR, thread=OTHER_THREAD)  # same turn id, other thread
        self.message("msg_1", "mine")
        self.usage(USAGE_1, USAGE_1)
        self.finish(items=[agent_message("msg_1", "mine")])


class Bookkeeping(Base):
    """An item that never completes, one id completed three times, a delta
    before its item/started (reference §0.5, §3.10)."""

    def script(self, params: Dict[str, Any]) -> None:
        self.started(agent_message("msg_cut_1"))
        self.delta("msg_cut_1", "partial")
        self.error("Reconnecting... 1/5", True)
        for attempt in (1, 2, 3):
            self.started(agent_message("msg_inc"))
            self.delta("msg_inc", f"attempt {attempt}")
            self.completed(agent_message("msg_inc", f"attempt {attempt}"))
        self.delta("msg_late", "late ")
        self.started(agent_message("msg_late"))
        self.completed(agent_message("msg_late", "late answer"))
        self.finish(items=[agent_message("msg_late", "late answer")])


class Retrying(Base):
    """Two retrying errors, then the answer."""

    def script(self, params: Dict[str, Any]) -> None:
        self.error("Reconnecting... 1/5", True)
        self.error("Reconnecting... 2/5", True)
        self.message("msg_1", "recovered")
        self.finish(items=[agent_message("msg_1", "recovered")])


class Failed(Base):
    """error{willRetry:false}, then turn/completed; VARIANT: ``with-error``
    (as codex does), ``no-error`` (turn.error null), ``interrupted``."""

    def script(self, params: Dict[str, Any]) -> None:
        self.error("", False, TURN_ERROR)
        if self.variant == "interrupted":
            self.finish("interrupted", None)
        else:
            self.finish("failed", TURN_ERROR if self.variant == "with-error" else None)


class Interruptible(Base):
    """A message starts streaming and waits; turn/interrupt ends the turn."""

    def script(self, params: Dict[str, Any]) -> None:
        self.started(agent_message("msg_1"))
        self.delta("msg_1", "Hel")


class NoActiveTurn(Base):
    """The turn ends at once; a later turn/interrupt gets -32600."""

    def script(self, params: Dict[str, Any]) -> None:
        self.message("msg_1", "Hel", "lo")
        self.finish(items=[agent_message("msg_1", "Hello")])


class SilentInterrupt(Interruptible):
    """turn/interrupt is answered, but turn/completed never comes."""

    def on_turn_interrupt(self, rid: Any, params: Dict[str, Any]) -> None:
        write({"id": rid, "result": {}})


class ExitOnInterrupt(Interruptible):
    """turn/interrupt is answered, then the process exits."""

    def on_turn_interrupt(self, rid: Any, params: Dict[str, Any]) -> None:
        write({"id": rid, "result": {}})
        os._exit(0)


class ExitMidTurn(Base):
    """The child dies while the turn streams."""

    def script(self, params: Dict[str, Any]) -> None:
        self.started(agent_message("msg_1"))
        self.delta("msg_1", "Hel")
        sys.stderr.write("fake: dying mid-turn on purpose\n")
        sys.stderr.flush()
        os._exit(3)


class Silent(Base):
    """The turn starts and then nothing comes until turn/interrupt."""

    def script(self, params: Dict[str, Any]) -> None:
        pass


class Steer(Base):
    """A message streams and waits; turn/steer adds input and the turn ends."""

    def script(self, params: Dict[str, Any]) -> None:
        self.started(agent_message("msg_1"))
        self.delta("msg_1", "Working")

    def steered(self, params: Dict[str, Any]) -> None:
        self.completed(agent_message("msg_1", "Working"))
        steered = user_message("01a22879-9c31-7b71-8c65-263c78c031fb", params.get("input") or [])
        self.started(steered)
        self.completed(steered)
        self.message("msg_2", "Steered.")
        self.finish(items=[agent_message("msg_2", "Steered.")])


class SlowStart(Interruptible):
    """Says it got turn/start (a warning), answers it only after a pause."""

    def on_turn_start(self, rid: Any, params: Dict[str, Any]) -> None:
        write(note("warning", {"threadId": THREAD, "message": "got turn/start"}))
        time.sleep(0.5)
        super().on_turn_start(rid, params)


class RejectTurn(Base):
    """turn/start is refused the way codex refuses bad params (reference §3.14)."""

    def on_turn_start(self, rid: Any, params: Dict[str, Any]) -> None:
        write({"id": rid, "error": {"code": -32600, "message": "Invalid request: missing field `input`"}})


class Unmapped(Base):
    """A notification method this schema does not have (a newer codex)."""

    def script(self, params: Dict[str, Any]) -> None:
        write(note("item/hologram/delta", {"threadId": THREAD, "turnId": self.tid(None), "itemId": "h1", "delta": "3d"}))
        self.finish()


BEHAVIOURS = {
    "plain": Plain,
    "simple": Base,
    "early": Early,
    "thread_warning": ThreadWarning,
    "filtering": Filtering,
    "bookkeeping": Bookkeeping,
    "retrying": Retrying,
    "failed": Failed,
    "interruptible": Interruptible,
    "no_active_turn": NoActiveTurn,
    "silent_interrupt": SilentInterrupt,
    "exit_on_interrupt": ExitOnInterrupt,
    "exit_mid_turn": ExitMidTurn,
    "silent": Silent,
    "steer": Steer,
    "slow_start": SlowStart,
    "reject_turn": RejectTurn,
    "unmapped": Unmapped,
}


def main() -> None:
    behaviour = BEHAVIOURS[sys.argv[1]](sys.argv[2] if len(sys.argv) > 2 else "")
    behaviour.serve()


if __name__ == "__main__":
    main()
