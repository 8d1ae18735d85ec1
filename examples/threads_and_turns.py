"""Threads and turns: one ``AppServerClient``, a ``Thread``, turns as streams of typed events.

A client is one ``codex app-server`` process; a thread is one codex
conversation; a turn is an async iterator of small frozen events
(``AgentMessageDelta``, ``ItemStarted``/``ItemCompleted``, ``TokenUsage``, ...,
``TurnCompleted`` last).  Here the scripted model has codex run a command in
the first turn, and the second turn shows the thread remembers the first.

Prints:

    > Run echo hello from codex, then tell me what it printed.
    $ echo hello from codex
      exit 0: hello from codex
    It printed: hello from codex.
    [turn completed, 30 tokens]
    > And what did I ask you first?
    You asked me to run echo.
    [turn completed, 15 tokens]
"""

import asyncio
import shutil
import tempfile

from codexmini import (
    AgentMessageDelta,
    AppServerClient,
    ItemCompleted,
    ItemStarted,
    Launch,
    ModelEndpoint,
    Thread,
    TurnCompleted,
)
from codexmini.testing import ScriptedModel

FIRST = "Run echo hello from codex, then tell me what it printed."
SECOND = "And what did I ask you first?"

SCRIPT = {
    "rules": [
        {  # the second turn: the request carries the first turn's prompt, so the thread remembers it
            "when": {"user_contains": SECOND, "input_contains": FIRST},
            "respond": {"output": [{"type": "message", "deltas": ["You asked me ", "to run echo."]}]},
        },
        {  # the command's output came back: answer
            "when": {"last_call_id": "call_echo", "tool_output_contains": "hello from codex"},
            "respond": {"output": [{"type": "message", "deltas": ["It printed: ", "hello from codex."]}]},
        },
    ],
    # the first request: call codex's command tool
    "default": {
        "output": [
            {
                "type": "function_call",
                "call_id": "call_echo",
                "name": "exec_command",
                "arguments": {"cmd": "echo hello from codex", "yield_time_ms": 10000},
            }
        ]
    },
}


async def ask(thread: Thread, prompt: str) -> None:
    """One turn, printed as its events arrive."""
    print(">", prompt)
    async with thread.turn(prompt) as turn:
        async for event in turn:
            if isinstance(event, AgentMessageDelta):
                print(event.delta, end="", flush=True)  # the answer, as it streams
            elif isinstance(event, (ItemStarted, ItemCompleted)):
                item = event.item  # the wire's ThreadItem (codexmini.protocol), as codex sent it
                if item["type"] != "commandExecution":  # (a type checker narrows the union on it)
                    continue
                if isinstance(event, ItemStarted):
                    print("$", item["commandActions"][0]["command"])
                else:
                    print(f"  exit {item['exitCode']}: {(item['aggregatedOutput'] or '').strip()}")
            elif isinstance(event, TurnCompleted):
                print(f"\n[turn {event.status}, {event.usage.total_tokens} tokens]")


async def main() -> None:
    workspace = tempfile.mkdtemp(prefix="codexmini-example-")
    try:
        with ScriptedModel(SCRIPT) as model:
            launch = Launch(endpoint=ModelEndpoint(model.url))
            async with await AppServerClient.start(launch) as client:
                # gpt-5.5: a model slug for which codex offers its command tool (the scripted
                # model calls only the tools a request offers)
                thread = await Thread.start(
                    client, cwd=workspace, model="gpt-5.5", sandbox="read-only", approval_policy="never"
                )
                await ask(thread, FIRST)
                await ask(thread, SECOND)
    finally:
        shutil.rmtree(workspace, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
