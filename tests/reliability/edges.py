"""Servers at the edges of the wire, as child processes over real pipes.

* :func:`limit_lines` -- a line at each limit the decoder has, one below it
  and one above (nesting :data:`~codexmini._wire.MAX_DEPTH` levels, the frame
  cap :data:`CAP`), with LF and CRLF endings, each between two ordinary
  frames: recorded codex 0.149.1 shapes (an ``item/started`` of an MCP tool
  call whose ``arguments`` nest, an ``item/agentMessage/delta`` padded to a
  size), so every one that decodes is a valid frame.
* :func:`chunked` -- a behaviour that answers the client's first request only
  after writing :func:`limit_lines` :data:`ROUNDS` times, each time cut at
  random (seeded) points and written piece by piece, pausing between pieces:
  whatever the reads bring, the client must see what one read would give.
* :class:`Asks` -- a codex whose every turn asks one question a caller
  answers with its own values (``item/tool/requestUserInput``, or an MCP
  elicitation with the ``elicitation`` variant) and says, in its last message,
  the answer it received: a caller's answer that cannot go on the wire must
  reach it as the fail-closed one.
"""

from __future__ import annotations

import asyncio
import copy
import json
import random
from typing import Any, Dict, List, Mapping, Tuple

from hostile import Hostile

from codexmini import _wire
from codexmini.testing import ServerSide
from codexmini.testing.codex_like import THREAD, TURN, USAGE_1, agent_message

#: The client's frame cap in the chunking test (``Limits(max_frame_bytes=CAP)``).
CAP = 4096
#: How often :func:`chunked` writes the lines, each time cut differently.
ROUNDS = 4

#: codex 0.149.1's ``item/started`` of an MCP tool call (fixtures/0.149.1/mcp_elicitation).
MCP_STARTED: Dict[str, Any] = {
    "emittedAtMs": 0,
    "method": "item/started",
    "params": {
        "item": {
            "appContext": None,
            "arguments": {"text": "hi mcp"},
            "durationMs": None,
            "error": None,
            "id": "call_mcp_echo",
            "pluginId": None,
            "readOnlyHint": None,
            "result": None,
            "server": "probe",
            "status": "inProgress",
            "tool": "echo",
            "type": "mcpToolCall",
        },
        "startedAtMs": 0,
        "threadId": THREAD,
        "turnId": TURN,
    },
}


def encoded(frame: Mapping[str, Any]) -> bytes:
    return json.dumps(frame, separators=(",", ":")).encode()


def deep_frame(depth: int) -> bytes:
    """The MCP item/started, nested ``depth`` levels deep in all: the frame,
    params, item and arguments are four, the rest are arrays in ``arguments``."""
    frame = copy.deepcopy(MCP_STARTED)
    line = encoded(frame)
    arrays = depth - 4
    return line.replace(b'{"text":"hi mcp"}', b'{"text":' + b"[" * arrays + b"0" + b"]" * arrays + b"}")


def delta_of_size(size: int, item: str = "msg_pad") -> bytes:
    """An ``item/agentMessage/delta`` line of exactly ``size`` bytes."""
    params = {"threadId": THREAD, "turnId": TURN, "itemId": item, "delta": ""}
    empty = encoded({"method": "item/agentMessage/delta", "params": params})
    params["delta"] = "d" * (size - len(empty))
    line = encoded({"method": "item/agentMessage/delta", "params": params})
    assert len(line) == size
    return line


def limit_lines() -> List[bytes]:
    """Every limit's lines (with their line ends), an ordinary frame between two."""
    between = delta_of_size(200, "msg_between") + b"\n"
    lines = [between]
    limit = _wire.MAX_DEPTH
    for line in [deep_frame(limit + step) for step in (-1, 0, 1)] + [delta_of_size(CAP + step) for step in (-1, 0, 1)]:
        for ending in (b"\n", b"\r\n"):
            lines += [line + ending, between]
    return lines


def cuts(rng: random.Random, size: int) -> List[int]:
    """Where to cut ``size`` bytes: a few random points, some one byte apart."""
    points = {rng.randrange(1, size) for _ in range(rng.randint(1, 40))}
    points |= {p + 1 for p in list(points)[:5] if p + 1 < size}
    return sorted(points)


def pieces(data: bytes, seed: int) -> List[bytes]:
    points = [0] + cuts(random.Random(seed), len(data)) + [len(data)]
    return [data[a:b] for a, b in zip(points, points[1:])]


async def chunked(server: ServerSide) -> None:
    """The limit lines, :data:`ROUNDS` times in random pieces, then the answer
    to the client's first request (so the client knows all of it was read)."""
    await server.handshake()
    async for request in server.requests():
        data = b"".join(limit_lines())
        for round_no in range(ROUNDS):
            for piece in pieces(data, round_no):
                server.send_raw(piece)
                await asyncio.sleep(0.001)  # a pause, so the reads tend to see the pieces apart
        server.send({"id": request["id"], "result": {"data": [], "nextCursor": None}})


# -- a codex that asks what a caller answers ---------------------------------------------

USER_INPUT = "item/tool/requestUserInput"
ELICITATION = "mcpServer/elicitation/request"

#: One question, as codex 0.149.1 asks it (fixtures/0.149.1/user_input).
QUESTION = {
    "header": "Color",
    "id": "color",
    "isOther": True,
    "isSecret": False,
    "options": [{"description": "warm", "label": "Red"}, {"description": "cool", "label": "Blue"}],
    "question": "Which color?",
}


def asked(variant: str, turn: str) -> Tuple[str, Dict[str, Any]]:
    """The method and params of the question a turn asks."""
    if variant == "elicitation":
        params: Dict[str, Any] = {
            "message": "Allow the probe MCP server to say something?",
            "mode": "form",
            "requestedSchema": {"properties": {}, "type": "object"},
            "serverName": "probe",
            "threadId": THREAD,
            "turnId": turn,
        }
        return ELICITATION, params
    params = {
        "autoResolutionMs": None,
        "isBlocking": False,
        "itemId": "call_rui_1",
        "questions": [QUESTION],
        "threadId": THREAD,
        "turnId": turn,
    }
    return USER_INPUT, params


class Asks(Hostile):
    """Every turn: a message ``before``, one question, and a last message
    ``after <the answer received, as JSON>``."""

    async def script(self, params: Mapping[str, Any]) -> None:
        self.message("msg_before", "before")
        rid = 100 + self.count
        method, question = asked(self.variant, self.tid(None))
        self.request(rid, question, method=method)
        answer = await self.answer_to(rid)
        after = "after " + json.dumps(answer, sort_keys=True)
        self.message("msg_after", after)
        self.usage(USAGE_1, USAGE_1)
        self.finish(items=[agent_message("msg_after", after)])
