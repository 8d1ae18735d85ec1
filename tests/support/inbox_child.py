"""Run as a script by tests/test_agent_inbox.py: an agent on the session log
``argv[1]`` (workspace ``argv[2]``), on an in-memory fake codex whose ``slow``
turns hold until released.  While turn 1 holds it queues a followup (turn 2)
and injects a message (turn 1's next step), releases turn 1; while turn 2
holds it queues another followup and injects another message, then says
``queued`` on stdout and waits -- for the SIGKILL the test sends it."""

import asyncio
import sys

from codexmini import Agent, AgentConfig, AgentMessageDelta, Launch, SessionLog
from codexmini.testing import FakeAppServer
from support import thread_behaviours as tb


async def main(path: str, ws: str) -> None:
    log = SessionLog.open(path)
    held = {"slow one": asyncio.Event(), "slow two": asyncio.Event()}

    def on_event(event: object) -> None:
        if isinstance(event, AgentMessageDelta) and event.delta.startswith("working on: "):
            held[event.delta[len("working on: ") :]].set()

    ids = iter(range(1, 10**6))
    behaviour = tb.AgentTurns()
    config = AgentConfig(cwd=ws, skills=False, launch=Launch(launcher=FakeAppServer(behaviour).launch))
    agent = Agent(log, config, on_event=on_event, new_id=lambda: f"id-{next(ids)}")
    agent.followup("slow one")
    await held["slow one"].wait()
    agent.followup("slow two")  # queued, then delivered: turn 2
    agent.inject("injected in turn 1")  # queued, then delivered: turn 1, step 2
    behaviour.release()
    await held["slow two"].wait()
    agent.followup("after the kill")
    agent.inject("injected mid-turn")
    print("queued", flush=True)
    await asyncio.Event().wait()  # until killed


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
