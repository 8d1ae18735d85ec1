"""A hostile codex: one kind of bad server input per variant, inside a real turn.

:class:`Hostile` is a :class:`~codexmini.testing.CodexLike` behaviour (codex
0.149.1's real thread and turn shapes) whose turn is always the same three
parts -- a message ``before``, the bad input named by the variant, a message
``after`` -- then usage and ``turn/completed``.  The test checks that the bad
input became what it should (a counted, logged skip; a typed event; an answer)
and that ``before`` and ``after`` both arrived: nothing delivered before the
bad input was lost, and the conversation went on after it.

The variants are :data:`KINDS`, one function each, run as child processes
over real pipes (``FakeAppServer("hostile:Hostile", kind).executable(dir)``).
When the bad input is a server request, the function waits for the client's
answer and returns it; ``after`` then carries it as JSON text, so the test
sees exactly what codex would have received.  ``phase`` kinds misbehave
elsewhere: the first ``thread/start`` or ``turn/start`` answer, or
``initialize``.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any, Awaitable, Callable, Dict, Mapping, Optional

from codexmini.testing import ServerSide
from codexmini.testing.codex_like import (
    THREAD,
    USAGE_1,
    CodexLike,
    agent_message,
    thread_start_result,
    turn_object,
)

HERE = os.path.dirname(os.path.abspath(__file__))
OTHER_THREAD = "01a22879-0000-7000-8000-0000000000aa"
OTHER_TURN = "01a22879-0000-7000-8000-0000000000ab"
APPROVAL = "item/commandExecution/requestApproval"
#: A real command approval's params (codex 0.149.1), without the turn id.
APPROVAL_PARAMS = {
    "threadId": THREAD,
    "itemId": "call_cmd_1",
    "startedAtMs": 1796048455375,
    "command": "/bin/bash -lc 'echo hi'",
    "cwd": "/var/tmp/ws",
    "reason": "need it",
}
BIG = 16 * 1024 * 1024
#: A line over the cap the test sets for that kind (1 MiB).
OVER_CAP = 2 * 1024 * 1024
FLOOD = 5000

Send = Callable[["Hostile"], Awaitable[Optional[Any]]]
KINDS: Dict[str, Send] = {}


def kind(name: str) -> Callable[[Send], Send]:
    def register(fn: Send) -> Send:
        KINDS[name] = fn
        return fn

    return register


class Hostile(CodexLike):
    """Plays the variant ``self.variant`` (a key of :data:`KINDS`)."""

    def __init__(self, variant: str = "") -> None:
        super().__init__(variant)
        self.thread_starts = 0
        self.turn_starts = 0
        self.turn_rid: Any = None

    # -- the phase kinds: a bad answer to initialize, thread/start or turn/start --

    async def on_initialize(self, rid: Any, params: Mapping[str, Any]) -> None:
        if self.variant == "initialize_result_not_object":
            self.write({"id": rid, "result": ["not", "an", "object"]})
        else:
            await super().on_initialize(rid, params)

    async def on_thread_start(self, rid: Any, params: Mapping[str, Any]) -> None:
        self.thread_starts += 1
        if self.thread_starts == 1 and self.variant == "thread_start_without_thread_id":
            result = thread_start_result(params)
            result["thread"] = {"name": "no id here"}
            self.write({"id": rid, "result": result})
            return
        await super().on_thread_start(rid, params)

    async def on_turn_start(self, rid: Any, params: Mapping[str, Any]) -> None:
        self.turn_starts += 1
        self.turn_rid = rid
        if self.turn_starts == 1 and self.variant == "turn_start_without_turn_id":
            self.write({"id": rid, "result": {"turn": "not an object"}})
            return
        await super().on_turn_start(rid, params)

    # -- the turn ------------------------------------------------------------

    async def script(self, params: Mapping[str, Any]) -> None:
        self.message("msg_before", "before")
        send = KINDS.get(self.variant)
        answer = None if send is None else await send(self)
        after = "after" if answer is None else "after " + json.dumps(answer, sort_keys=True)
        self.message("msg_after", after)
        self.usage(USAGE_1, USAGE_1)
        self.finish(items=[agent_message("msg_after", after)])

    # -- helpers for the kinds ---------------------------------------------------

    def raw(self, data: bytes) -> None:
        self.server.send_raw(data)

    def params(self, **extra: Any) -> Dict[str, Any]:
        return {"threadId": THREAD, "turnId": self.tid(None), **extra}

    def request(self, rid: Any, params: Any, method: str = APPROVAL, with_params: bool = True) -> None:
        frame: Dict[str, Any] = {"id": rid, "method": method}
        if with_params:
            frame["params"] = params
        self.write(frame)

    async def answer_to(self, rid: Any) -> Any:
        """The client's answer to server request ``rid`` (other frames skipped)."""
        while True:
            frame = await self.server.recv(timeout=30)
            if frame is None:
                return "no answer"
            if frame.get("id") == rid and "method" not in frame:
                frame.pop("id")
                return frame


def approval(hostile: Hostile) -> Dict[str, Any]:
    return {**APPROVAL_PARAMS, "turnId": hostile.tid(None)}


# -- lines that are not frames ------------------------------------------------------


@kind("not_json")
async def _not_json(h: Hostile) -> None:
    h.raw(b"this is not json\n")


@kind("truncated_json")
async def _truncated_json(h: Hostile) -> None:
    h.raw(b'{"method":"item/agentMessage/delta","params":{"threadId":\n')


@kind("json_array")
async def _json_array(h: Hostile) -> None:
    h.raw(b"[1,2,3]\n")


@kind("json_scalar")
async def _json_scalar(h: Hostile) -> None:
    h.raw(b'"hello"\n42\nnull\n')


@kind("invalid_utf8")
async def _invalid_utf8(h: Hostile) -> None:
    h.raw(b'{"method":"warning","params":{"message":"\xff\xfe"}}\n')


@kind("nul_and_control_bytes")
async def _nul(h: Hostile) -> None:
    h.raw(b"\x00\x01\x02\x1b[31m\x00\n")


@kind("deeply_nested_json")
async def _deep(h: Hostile) -> None:
    h.raw(b"[" * 100_000 + b"]" * 100_000 + b"\n")


@kind("over_the_frame_cap")
async def _over_cap(h: Hostile) -> None:
    h.delta("msg_cap", "y" * OVER_CAP)  # a good frame, but over the 1 MiB cap the client set


@kind("object_without_jsonrpc_shape")
async def _no_shape(h: Hostile) -> None:
    h.raw(b'{"foo":1}\n')


# -- odd ids and answers nobody asked for ----------------------------------------------


@kind("id_null")
async def _id_null(h: Hostile) -> None:
    h.write({"id": None, "result": {}})


@kind("id_float")
async def _id_float(h: Hostile) -> None:
    h.write({"id": 1.5, "result": {}})


@kind("id_bool")
async def _id_bool(h: Hostile) -> None:
    h.write({"id": True, "result": {}})


@kind("id_object")
async def _id_object(h: Hostile) -> None:
    h.write({"id": {"n": 1}, "result": {}})


@kind("method_not_a_string")
async def _method_number(h: Hostile) -> None:
    h.write({"method": 7, "params": h.params()})


@kind("result_and_error_together")
async def _result_and_error(h: Hostile) -> None:
    h.write({"id": 1, "result": {}, "error": {"code": -32600, "message": "both"}})


@kind("error_not_an_object")
async def _error_string(h: Hostile) -> None:
    h.write({"id": 1, "error": "boom"})


@kind("answer_to_an_unknown_id")
async def _unknown_id(h: Hostile) -> None:
    h.write({"id": 4242, "result": {}})
    h.write({"id": "never-sent", "error": {"code": -32600, "message": "nobody asked"}})


@kind("duplicate_response")
async def _duplicate(h: Hostile) -> None:
    h.write({"id": h.turn_rid, "result": {"turn": turn_object(h.tid(None), started=None)}})


# -- notifications of the wrong shape --------------------------------------------------------


@kind("unknown_method")
async def _unknown_method(h: Hostile) -> None:
    h.note("item/hologram/delta", h.params(itemId="msg_x", delta="?"))


@kind("unknown_thread")
async def _unknown_thread(h: Hostile) -> None:
    h.note("item/agentMessage/delta", {"threadId": OTHER_THREAD, "turnId": OTHER_TURN, "itemId": "msg_x", "delta": "x"})


@kind("other_turn_completed")
async def _other_turn(h: Hostile) -> None:
    h.finish(turn=OTHER_TURN)


@kind("params_not_an_object")
async def _params_list(h: Hostile) -> None:
    h.write({"method": "item/agentMessage/delta", "params": ["threadId", THREAD]})


@kind("params_missing")
async def _params_missing(h: Hostile) -> None:
    h.write({"method": "turn/diff/updated"})


@kind("item_missing")
async def _item_missing(h: Hostile) -> None:
    h.note("item/completed", h.params(completedAtMs=1))


@kind("item_not_an_object")
async def _item_string(h: Hostile) -> None:
    h.note("item/started", h.params(item="agentMessage", startedAtMs=1))


@kind("item_field_wrong_type")
async def _item_field(h: Hostile) -> None:
    item = {"type": "commandExecution", "id": "call_x", "command": ["ls"], "status": "completed"}
    h.note("item/completed", h.params(item=item, completedAtMs=1))


@kind("delta_missing")
async def _delta_missing(h: Hostile) -> None:
    h.note("item/agentMessage/delta", h.params(itemId="msg_before"))


@kind("delta_wrong_type")
async def _delta_number(h: Hostile) -> None:
    h.note("item/agentMessage/delta", h.params(itemId="msg_before", delta=42))


@kind("token_count_not_a_number")
async def _tokens(h: Hostile) -> None:
    last = dict(USAGE_1, inputTokens="many")
    usage = {"total": dict(USAGE_1), "last": last, "modelContextWindow": 258400}
    h.note("thread/tokenUsage/updated", h.params(tokenUsage=usage))


@kind("turn_not_an_object")
async def _turn_string(h: Hostile) -> None:
    h.note("turn/completed", {"threadId": THREAD, "turn": "completed"})


@kind("plan_not_an_array")
async def _plan(h: Hostile) -> None:
    h.note("turn/plan/updated", h.params(explanation=None, plan="step one"))


@kind("resolved_params_not_an_object")
async def _resolved_params(h: Hostile) -> None:
    h.write({"method": "serverRequest/resolved", "params": [0]})
    h.write({"method": "serverRequest/resolved", "params": 7})


@kind("resolved_unhashable_request_id")
async def _resolved_unhashable(h: Hostile) -> None:
    h.note("serverRequest/resolved", {"threadId": THREAD, "requestId": [0, 1]})
    h.note("serverRequest/resolved", {"threadId": THREAD, "requestId": {"id": 0}})


@kind("resolved_unknown_request")
async def _resolved_unknown(h: Hostile) -> None:
    h.note("serverRequest/resolved", {"threadId": THREAD, "requestId": 4242})


@kind("delta_flood_over_the_queue")  # waited for (back-pressure, the default)
@kind("delta_flood_over_a_dropping_queue")  # dropped (Limits.overflow="drop")
async def _flood(h: Hostile) -> None:
    for i in range(FLOOD):
        h.delta("msg_flood", str(i % 10))
    await asyncio.sleep(0)


# -- lines that are frames, delivered as they are ------------------------------------------


@kind("line_of_16_mib")
async def _big(h: Hostile) -> None:
    h.delta("msg_big", "x" * BIG)


@kind("crlf_and_split_writes")
async def _split(h: Hostile) -> None:
    line = json.dumps({"method": "item/agentMessage/delta", "params": h.params(itemId="msg_split", delta="split")})
    data = line.encode() + b"\r\n"
    for start in range(0, len(data), 16):
        h.raw(data[start : start + 16])
        await asyncio.sleep(0.001)


# -- server requests: every one with an id and a method is answered ---------------------------


@kind("approval_params_null")
async def _approval_null(h: Hostile) -> Any:
    h.request(0, None)
    return await h.answer_to(0)


@kind("approval_params_missing")
async def _approval_missing(h: Hostile) -> Any:
    h.request(0, None, with_params=False)
    return await h.answer_to(0)


@kind("request_unknown_method")
async def _request_unknown(h: Hostile) -> Any:
    h.request(0, {"threadId": THREAD}, method="fake/unknownRequest")
    return await h.answer_to(0)


@kind("approval_handler_raises")
async def _handler_raises(h: Hostile) -> Any:
    h.request(0, approval(h))
    return await h.answer_to(0)


@kind("approval_handler_hangs")
async def _handler_hangs(h: Hostile) -> Any:
    h.request(0, approval(h))
    return await h.answer_to(0)


@kind("approval_handler_raises_cancelled")
async def _handler_cancelled(h: Hostile) -> Any:
    h.request(0, approval(h))
    return await h.answer_to(0)


@kind("approval_string_id")
async def _approval_string_id(h: Hostile) -> Any:
    h.request("approval-1", approval(h))
    return await h.answer_to("approval-1")


class Steady(CodexLike):
    """A long-running codex for the soak: every turn a message, an approval
    (answered by the client's default policy), usage -- and a little hostility
    that must cost nothing: a line that is not JSON and a notification for a
    thread nobody will ever claim (one new thread per turn).  Keeps no history
    of its own, so the fake's memory is flat and the client's is what is
    measured."""

    async def script(self, params: Mapping[str, Any]) -> None:
        self.received.clear()
        self.server.received.clear()
        n = self.count
        self.message("msg_1", "Hello")
        self.raw_line(b"not json, turn %08d" % n)
        stray = "01a22879-0000-7000-8000-%012d" % n
        self.note("warning", {"threadId": stray, "message": "for nobody"})
        self.write({"id": n, "method": APPROVAL, "params": {**APPROVAL_PARAMS, "turnId": self.tid(None)}})
        answer = None
        while answer is None:
            frame = await self.server.recv(timeout=30)
            if frame is None:
                return
            if frame.get("id") == n and "method" not in frame:
                answer = frame
        self.usage(USAGE_1, USAGE_1)
        self.finish(items=[agent_message("msg_1", "Hello")])

    def raw_line(self, data: bytes) -> None:
        self.server.send_raw(data + b"\n")


#: The unclaimed flood: threads x frames of about 8 KiB -- over the client's
#: 8 MiB bound in bytes, under its bounds in threads (32) and frames (512).
UNCLAIMED_THREADS, UNCLAIMED_FRAMES, UNCLAIMED_DELTA = 3, 400, 8 * 1024


def unclaimed_thread(n: int) -> str:
    return "01a22879-0000-7000-8000-%012d" % (900 + n)


async def unclaimed_flood(server: ServerSide) -> None:
    """Notifications for threads nobody subscribed to (yet), then the answer
    to the client's first request: the client must hold them within bounds."""
    await server.handshake()
    async for request in server.requests():
        for n in range(UNCLAIMED_THREADS):
            for i in range(UNCLAIMED_FRAMES):
                params = {
                    "threadId": unclaimed_thread(n),
                    "turnId": OTHER_TURN,
                    "itemId": f"m{i}",
                    "delta": "u" * UNCLAIMED_DELTA,
                }
                server.notify("item/agentMessage/delta", params)
        server.send({"id": request["id"], "result": {"data": [], "nextCursor": None}})


#: The secrets the suite plants in the parent environment (and the endpoint's key).
SECRET_NAMES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "CODEXMINI_API_KEY")


class Tattler(CodexLike):
    """A codex that tells which secrets it got: its turn's message is the JSON
    list of the secret *names* in its environment (never the values).  The
    ``crash`` variant then prints its whole environment to stderr, the secrets
    last, and dies -- the worst a child can do with what it was given."""

    async def script(self, params: Mapping[str, Any]) -> None:
        present = json.dumps(sorted(n for n in SECRET_NAMES if n in os.environ))
        self.message("msg_1", present)
        if self.variant == "crash":
            names = sorted(os.environ, key=lambda n: (n in SECRET_NAMES, n))
            self.server.stderr("\n".join(f"{n}={os.environ[n]}" for n in names))
            os._exit(1)
        self.usage(USAGE_1, USAGE_1)
        self.finish(items=[agent_message("msg_1", present)])


__all__ = [
    "APPROVAL",
    "BIG",
    "FLOOD",
    "HERE",
    "Hostile",
    "KINDS",
    "OTHER_THREAD",
    "OVER_CAP",
    "SECRET_NAMES",
    "Steady",
    "Tattler",
    "UNCLAIMED_DELTA",
    "UNCLAIMED_FRAMES",
    "UNCLAIMED_THREADS",
    "unclaimed_flood",
    "unclaimed_thread",
]
