"""The recorded scenarios: what the real codex 0.149.1 does, and what codexmini makes of it.

Each :class:`~conformance.harness.Scenario` holds the model script, the
prompts, the codex flags and approval answers, and a ``check`` that asserts
on the events and the session log it must produce.  The same definition is
recorded (``make record``), replayed offline and run live; see
:mod:`conformance.harness`.  Triggers follow the protocol reference §3 (the
section is cited on each scenario).
"""

from __future__ import annotations

from typing import Any, Dict, List

from codexmini.events import AgentMessageDelta, ItemCompleted, TurnCompleted

from .harness import RunResult, Scenario

USAGE = {"input_tokens": 10, "cached_tokens": 2, "output_tokens": 5, "reasoning_tokens": 1}


def message(id_: str, *deltas: str) -> Dict[str, Any]:
    return {"type": "message", "id": id_, "deltas": list(deltas)}


def answer(*items: Dict[str, Any], **extra: Any) -> Dict[str, Any]:
    return {"output": list(items), "usage": USAGE, **extra}


def texts(result: RunResult) -> List[str]:
    """Text blocks of every assistant message, in log order."""
    return [
        b["text"]
        for e in result.of_type("assistant/message")
        for b in e["data"]["content"]
        if b["type"] == "text"
    ]


def turn_ends(result: RunResult) -> List[Dict[str, Any]]:
    return [e["data"] for e in result.of_type("turn/end")]


# -- plain (§3.1) ------------------------------------------------------------


def _check_plain(result: RunResult) -> None:
    deltas = [e.delta for e in result.events_of(AgentMessageDelta)]
    assert deltas == ["Hel", "lo", ", ", "wor", "ld", "!"]
    assert texts(result) == ["Hello, world!"]
    (end,) = turn_ends(result)
    assert end["reason"] == "completed"
    assert end["usage"]["totalTokens"] == 15
    (completed,) = result.events_of(TurnCompleted)
    assert completed.status == "completed"
    assert [i["type"] for i in completed.items] == ["userMessage", "agentMessage"]
    message_ = result.of_type("assistant/message")[0]["data"]
    assert message_["usage"] == end["usage"]


PLAIN = Scenario(
    name="plain",
    description="a streamed message with several deltas and usage",
    script={"rules": [], "default": answer(message("msg_1", "Hel", "lo", ", ", "wor", "ld", "!"))},
    prompts=("say hi",),
    check=_check_plain,
)


# -- command ok (§3.4) --------------------------------------------------------


def _command_script(cmd: str, final: str) -> Dict[str, Any]:
    return {
        "rules": [
            {"when": {"last_item": "function_call_output"}, "respond": answer(message("msg_final", final))},
        ],
        "default": answer(
            {"type": "function_call", "call_id": "call_cmd_1", "name": "exec_command", "arguments": {"cmd": cmd, "yield_time_ms": 10000}}
        ),
    }


def _check_cmd_ok(result: RunResult) -> None:
    (call,) = result.of_type("tool/call")
    assert call["data"]["name"] == "bash" and "echo hello-stdout" in call["data"]["arguments"]
    (res,) = result.of_type("tool/result")
    assert res["data"]["isError"] is False and res["data"]["status"] == "completed"
    assert res["data"]["content"] == [{"type": "text", "text": "hello-stdout\nhello-stderr\n"}]
    steps = [(e["type"], e["step"]) for e in result.session if e["type"] in ("step/start", "step/end")]
    assert steps == [("step/start", 1), ("step/end", 1), ("step/start", 2), ("step/end", 2)]
    assert texts(result) == ["Command finished."]
    items = [e.item for e in result.events_of(ItemCompleted) if e.item_type == "commandExecution"]
    assert items and items[0]["exitCode"] == 0


CMD_OK = Scenario(
    name="cmd_ok",
    description="exec_command that succeeds; stdout and stderr merged",
    script=_command_script("echo hello-stdout; echo hello-stderr 1>&2", "Command finished."),
    prompts=("run the command",),
    check=_check_cmd_ok,
)


SCENARIOS = {s.name: s for s in [PLAIN, CMD_OK]}

__all__ = ["SCENARIOS"]
