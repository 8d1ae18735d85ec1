"""The agent over a durable session log, closed and resumed.

``Agent`` runs turns over a ``SessionLog``: an append-only JSONL file that is
the session's single source of truth.  Every step is a fresh codex thread
whose input is the log so far, so resuming a session -- in this process or
another, tomorrow -- is opening its log again.  Here a first agent runs one
turn and closes; a second one reopens the log, and the scripted model answers
the second question only if the first exchange reached it.

Prints:

    > Remember the word teal.
    Noted: teal.
    [completed]
    > Which word did I ask you to remember?
    You asked me to remember teal.
    [completed]
    the log, read back:
      turn 1 user: Remember the word teal.
      turn 1 assistant: Noted: teal.
      turn 2 user: Which word did I ask you to remember?
      turn 2 assistant: You asked me to remember teal.
"""

import asyncio
import os
import shutil
import tempfile

from codexmini import Agent, AgentConfig, Event, Launch, MessageDelta, ModelEndpoint, SessionLog, read_log
from codexmini.testing import ScriptedModel

SCRIPT = {
    "rules": [
        {  # the second question, with the first exchange in the input: the session was resumed
            "when": {"user_contains": "Which word", "input_contains": "Noted: teal."},
            "respond": {"output": [{"type": "message", "deltas": ["You asked me ", "to remember teal."]}]},
        }
    ],
    "default": {"output": [{"type": "message", "deltas": ["Noted: ", "teal."]}]},
}


def show(event: Event) -> None:
    """The agent's events as they happen: here only its streamed text."""
    if isinstance(event, MessageDelta):
        print(event.delta, end="", flush=True)


async def turn(log_path: str, config: AgentConfig, prompt: str) -> None:
    """Open the session log, run one turn, close everything."""
    with SessionLog.open(log_path) as log:  # creates the file, or reads it back and continues it
        async with Agent(log, config, on_event=show) as agent:
            print(">", prompt)
            end = await agent.run(prompt)  # the turn/end event's data
            print(f"\n[{end['reason']}]")


async def main() -> None:
    workspace = tempfile.mkdtemp(prefix="codexmini-example-")
    try:
        log_path = os.path.join(workspace, "session.jsonl")
        with ScriptedModel(SCRIPT) as model:
            config = AgentConfig(cwd=workspace, launch=Launch(endpoint=ModelEndpoint(model.url)))
            await turn(log_path, config, "Remember the word teal.")
            await turn(log_path, config, "Which word did I ask you to remember?")  # a new agent, the same log
        print("the log, read back:")
        for event in read_log(log_path).events:  # one JSON object a line (docs/session-log.md)
            if event["type"] in ("user/message", "assistant/message"):
                who = event["type"].split("/")[0]
                text = "".join(block["text"] for block in event["data"]["content"] if block["type"] == "text")
                print(f"  turn {event['turn']} {who}: {text}")
    finally:
        shutil.rmtree(workspace, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
