"""What codex's own ``thread/compact/start`` gives a client (issue 30), on the codex
in ``$CODEXMINI_CODEX_BIN`` against the scripted model: the compaction turn's items,
the model request it makes, what ``thread/read`` stores, and the next turn's request.

    CODEXMINI_CODEX_BIN=$(python tools/codex_bin.py 0.149.1) NO_COLOR=1 PYTHONPATH=. python tools/compact_probe.py

On 0.149.1 and 0.171.0 alike: the ``contextCompaction`` item carries no summary text, and
the next request keeps the user messages verbatim (docs/session-log.md, **Compaction**)."""

import asyncio
import json
import sys

from codexmini import AppServerClient
from codexmini._threads import Thread
from codexmini.testing.live import LiveCodex

SCRIPT = {"rules": [], "default": {"output": [{"type": "message", "deltas": ["SUMMARY-TEXT-XYZ"]}]}}


async def main():
    with LiveCodex(SCRIPT, prefix="compact-probe-") as live:
        frames = []
        client = await AppServerClient.start(live.launch, tap=lambda d, f: frames.append((d, f)))
        async with client:
            # 1. a fresh thread, nothing in it: compact
            t0 = await Thread.start(client, cwd=live.ws, model="gpt-fake", sandbox="read-only", approval_policy="never")
            try:
                done = await asyncio.wait_for(t0.compact(), 60)
                print("empty thread compact:", done.status, [i.get("type") for i in done.items])
            except Exception as exc:
                print("empty thread compact raised:", type(exc).__name__, exc)
            print("requests after empty compact:", len(live.model.requests))
            # 2. a thread with one turn, then compact
            t = await Thread.start(client, cwd=live.ws, model="gpt-fake", sandbox="read-only", approval_policy="never")
            r = await t.run("the long prompt to summarise: ALPHA BETA GAMMA")
            print("turn:", r.status, r.final_response)
            n = len(live.model.requests)
            done = await asyncio.wait_for(t.compact(), 60)
            print("compact turn:", done.status, json.dumps(list(done.items))[:300])
            for req in live.model.requests[n:]:
                body = req["body"]
                print("compaction request path", req["path"], "input items:", len(body.get("input", [])))
                for item in body.get("input", []):
                    print("   ", item.get("type"), item.get("role"), json.dumps(item.get("content"))[:240])
            comp_frames = [f for d, f in frames if d == "in" and "contextCompaction" in json.dumps(f)]
            print(
                "frames mentioning contextCompaction:",
                len(comp_frames),
                "any with SUMMARY-TEXT:",
                any("SUMMARY-TEXT" in json.dumps(f) for f in comp_frames),
            )
            stored = await t.read(include_turns=True)
            for turn in stored.get("turns") or []:
                print("stored turn items:", json.dumps(turn.get("items"))[:400])
            # 3. the next turn: where is the summary?
            n = len(live.model.requests)
            await t.run("next")
            body = live.model.requests[n]["body"]
            print("next request input:")
            for item in body.get("input", []):
                print("   ", item.get("type"), item.get("role"), json.dumps(item.get("content"))[:200])
            sys.stdout.flush()


asyncio.run(main())
