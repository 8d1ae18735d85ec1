"""Run as a script by tests/test_agent_inbox.py: an agent on the session log
``argv[1]`` (workspace ``argv[2]``), on an in-memory fake codex whose ``slow``
turn holds until interrupted.  It starts that turn, and once codex streams it,
queues a followup and injects a message, then says ``queued`` on stdout and
waits -- for the SIGKILL the test sends it."""

import asyncio
import sys

from codexmini import Agent, AgentConfig, AgentMessageDelta, Launch, SessionLog
from codexmini.testing import FakeAppServer
from support import thread_behaviours as tb


async def main(path: str, ws: str) -> None:
    log = SessionLog.open(path)
    held = asyncio.Event()

    def on_event(event: object) -> None:
        if isinstance(event, AgentMessageDelta) and event.delta == "working on: slow one":
            held.set()

    ids = iter(range(1, 10**6))
    config = AgentConfig(cwd=ws, skills=False, launch=Launch(launcher=FakeAppServer(tb.AgentTurns).launch))
    agent = Agent(log, config, on_event=on_event, new_id=lambda: f"id-{next(ids)}")
    agent.followup("slow one")
    await held.wait()
    agent.followup("after the kill")
    agent.inject("injected mid-turn")
    print("queued", flush=True)
    await asyncio.Event().wait()  # until killed


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
