"""Replay: a fake app-server behaviour that plays a recorded transcript.

The transcript is the client's view of a real run (``fixtures/<version>/
<scenario>.frames.jsonl``: ``{"dir": "in"|"out", "frame": …}`` lines, volatile
values normalised by :class:`~.normalize.Normaliser`).  :class:`Replay` walks
it: a server frame (``"in"``) is sent at once, placeholder paths mapped to
this run's directories; a client frame (``"out"``) must have been received --
normalised with the same rules and matched in any order among those received
so far, since concurrent requests may leave the client in another order.  A
frame that never matches, an expected frame that does not arrive within
``wait`` seconds, or a client frame left over at the end is a *mismatch*: the
behaviour exits with status 3, so the client under test fails fast with
``ProcessExited`` instead of hanging.  :attr:`Replay.report` says what
happened (``ok``, ``mismatches``, ``matched``, the normalised ``argv``).

Run in memory (``FakeAppServer(Replay(...))``) or as a process with
:func:`from_env` (``CODEXMINI_REPLAY_TRANSCRIPT``, ``…_PATHS``, ``…_VERSION``,
``…_WAIT``, ``…_REPORT``: where to write the report as JSON).
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any, Dict, List, Optional

from .fake_appserver import FakeError, ServerSide
from .normalize import Normaliser, normalise_argv

MISMATCH_EXIT = 3


def load_transcript(path: str) -> List[Dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


class Replay:
    """Plays ``transcript`` as the server; a behaviour for :class:`~.fake_appserver.FakeAppServer`."""

    def __init__(self, transcript: List[Dict[str, Any]], normaliser: Normaliser, wait: float = 20.0) -> None:
        self.transcript = transcript
        self.norm = normaliser
        self.wait = wait
        self.received: List[Any] = []  # normalised client frames not matched yet
        self.matched = 0
        self.mismatches: List[str] = []
        self.argv: List[str] = []

    @property
    def ok(self) -> bool:
        return not self.mismatches

    @property
    def report(self) -> Dict[str, Any]:
        return {"ok": self.ok, "mismatches": list(self.mismatches), "matched": self.matched, "argv": self.argv}

    async def __call__(self, server: ServerSide) -> int:
        if self.argv:
            raise FakeError("a transcript is one process's conversation: this replay already ran")
        self.argv = normalise_argv(server.argv, self.norm, sys.executable)
        for entry in self.transcript:
            if entry["dir"] == "in":
                server.send(self.norm.denormalise(entry["frame"]))
            elif not await self._expect(server, entry["frame"]):
                break
        else:
            # The transcript is over: wait for the client to hang up.
            while True:
                frame = await server.recv(self.wait)
                if frame is None:
                    break
                self.received.append(self.norm.normalise(frame))
            for frame in self.received:
                self.mismatches.append(f"client sent a frame the recording does not have: {json.dumps(frame)[:600]}")
        if self.mismatches:
            server.stderr("replay mismatch:\n" + "\n".join(self.mismatches))
            return MISMATCH_EXIT
        return 0

    async def _expect(self, server: ServerSide, expected: Any) -> bool:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.wait
        while not self._take(expected):
            left = deadline - loop.time()
            frame = await server.recv(left) if left > 0 else None
            if frame is None:
                got = "\n    ".join(json.dumps(f)[:600] for f in self.received) or "(nothing)"
                self.mismatches.append(
                    f"expected client frame #{self.matched + 1} not received:\n    {json.dumps(expected)[:600]}\n"
                    f"  received instead:\n    {got}"
                )
                return False
            self.received.append(self.norm.normalise(frame))
        return True

    def _take(self, expected: Any) -> bool:
        for i, frame in enumerate(self.received):
            if frame == expected:
                del self.received[i]
                self.matched += 1
                return True
        return False


async def from_env(server: ServerSide) -> int:
    """The replay as a process: configured by ``CODEXMINI_REPLAY_*`` variables."""
    env = server.env
    replay = Replay(
        load_transcript(env["CODEXMINI_REPLAY_TRANSCRIPT"]),
        Normaliser(json.loads(env.get("CODEXMINI_REPLAY_PATHS", "{}")), version=env.get("CODEXMINI_REPLAY_VERSION")),
        float(env.get("CODEXMINI_REPLAY_WAIT", "20")),
    )
    code = await replay(server)
    target: Optional[str] = env.get("CODEXMINI_REPLAY_REPORT")
    if target:
        with open(target, "w", encoding="utf-8") as fh:
            json.dump(replay.report, fh, indent=1)
    return code


__all__ = ["MISMATCH_EXIT", "Replay", "from_env", "load_transcript"]
