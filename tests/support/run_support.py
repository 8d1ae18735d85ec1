"""Shared by the ``run()``, structured-output and sync-facade tests.

* :class:`Echo` -- a :class:`CodexLike` turn whose final answer is the text of
  the turn's input (so a test chooses the answer with its prompt); input
  starting ``none`` finishes without any agent message.  Every frame it
  sends has the real binary's shapes and is validated by the conformance
  plugin.
* :class:`Live` -- :class:`~codexmini.testing.live.LiveCodex`: a scratch root,
  a :class:`ScriptedModel` and the Launch that points the pinned codex at it.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping

from codexmini._binary import find_codex
from codexmini._errors import BinaryNotFound
from codexmini.testing.codex_like import USAGE_1, CodexLike, agent_message
from codexmini.testing.live import LiveCodex

try:
    find_codex()
    HAVE_CODEX = True
except BinaryNotFound:
    HAVE_CODEX = False

USAGE = {"input_tokens": 10, "cached_tokens": 2, "output_tokens": 5, "reasoning_tokens": 1}
SCHEMA: Dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "integer"}, "why": {"type": "string"}},
    "required": ["answer", "why"],
    "additionalProperties": False,
}


def input_text(params: Mapping[str, Any]) -> str:
    inputs = params.get("input") or [{}]
    return str(inputs[0].get("text") or "")


class Echo(CodexLike):
    """The answer is the input's text, streamed in two parts; ``none…``: no answer."""

    async def script(self, params: Mapping[str, Any]) -> None:
        text = input_text(params)
        if text.startswith("none"):
            self.usage(USAGE_1, USAGE_1)
            self.finish()
            return
        half = len(text) // 2
        self.message("msg_1", text[:half], text[half:])
        self.usage(USAGE_1, USAGE_1)
        self.finish(items=[agent_message("msg_1", text)])


def message(*deltas: str) -> Dict[str, Any]:
    return {"output": [{"type": "message", "id": "msg_1", "deltas": list(deltas)}], "usage": USAGE}


def command(cmd: str) -> Dict[str, Any]:
    call = {
        "type": "function_call",
        "call_id": "call_1",
        "name": "exec_command",
        "arguments": {"cmd": cmd, "yield_time_ms": 30000},
    }
    return {"output": [call], "usage": USAGE}


class Live(LiveCodex):
    """The pinned codex pointed at a scripted model, in a scratch root (:class:`LiveCodex`)."""

    def __init__(self, script: Mapping[str, Any]) -> None:
        super().__init__(script, prefix="codexmini-run-")

    def bodies(self) -> List[Dict[str, Any]]:
        return [r["body"] for r in self.model.requests]
