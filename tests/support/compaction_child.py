"""Run as a script by tests/test_agent_compaction.py: an agent session on the
in-memory fake playing ``Compacting`` that runs ``big N`` turns until it
compacts, and stops between the summary call and the append: the append of
the ``session/compaction`` writes a marker (the summary in hand, the log's
size then) and blocks, and the test kills this process with SIGKILL there."""

import asyncio
import json
import os
import sys
import time
from typing import Any

from codexmini import Agent, _session
from codexmini._prompt import COMPACTION
from codexmini.testing import FakeAppServer
from support import thread_behaviours as tb
from support.fake_client import agent_config

root = sys.argv[1]
path = os.path.join(root, "session.jsonl")
marker = os.path.join(root, "summarised")
real = _session.SessionLog.append_many


def append_many(self: Any, entries: Any) -> Any:
    entries = list(entries)
    for type_, data, _, _ in entries:
        if type_ == COMPACTION:  # the summary is in hand; nothing of it is written yet
            with open(marker + ".tmp", "w", encoding="utf-8") as fh:
                json.dump({"summary": data["summary"], "size": os.path.getsize(self.path)}, fh)
            os.rename(marker + ".tmp", marker)
            while True:  # killed here
                time.sleep(60)
    return real(self, entries)


_session.SessionLog.append_many = append_many  # type: ignore[method-assign]


async def main() -> None:
    ws = os.path.join(root, "ws")
    os.makedirs(ws, exist_ok=True)
    fake = FakeAppServer(tb.Compacting(size=50_000))
    config = agent_config(
        cwd=ws,
        model="gpt-fake",
        codex_home=os.path.join(root, "home"),
        launcher=fake.launch,
        tool_output_budget=2_000,
        prompt_budget=10_000,
    )
    with _session.SessionLog.open(path) as log:
        async with Agent(log, config) as agent:
            for n in range(50):
                await agent.run(f"big {n}")
    sys.exit("never compacted")


asyncio.run(main())
