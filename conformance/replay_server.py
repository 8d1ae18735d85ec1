"""A fake ``codex app-server`` that plays the server side of a recorded transcript.

Run as ``python replay_server.py app-server [-c …]`` (the client spawns it in
place of codex).  Configuration comes from the environment:

``CODEXMINI_REPLAY_TRANSCRIPT``  the ``<scenario>.frames.jsonl`` to play
``CODEXMINI_REPLAY_PATHS``       JSON ``{"/real/dir": "/PLACEHOLDER", …}`` for this run
``CODEXMINI_REPLAY_REPORT``      where to write the verdict (JSON)
``CODEXMINI_REPLAY_VERSION``     codexmini's version (normalised away when comparing)
``CODEXMINI_REPLAY_WAIT``        seconds to wait for an expected client frame (default 20)

Theory of operation
-------------------
The transcript is the client's view of a real run: every frame in both
directions, in the order the client saw them.  The server walks it.  A
server frame (``"in"``) is written at once, with placeholder paths mapped to
this run's directories.  A client frame (``"out"``) must have been received:
client frames are read as they come, normalised with the same rules as the
recording, and matched against the expected one -- in any order among those
received so far, since concurrent requests may leave the client in another
order.  A frame that never matches, an expected frame that does not arrive
in time, or a client frame left over at the end is a *mismatch*: the report
says which, and the server exits with status 3 so the client under test
fails fast with ``ProcessExited`` instead of hanging.

The report (``{"ok", "mismatches", "matched", "argv"}``) also carries the
command line the server was started with, normalised, for comparison with
the recording's.  Standard library only: it runs under any Python 3.
"""

from __future__ import annotations

import json
import os
import select
import sys
import time
from typing import Any, Dict, List, Optional

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from conformance.normalize import Normaliser, normalise_argv  # noqa: E402

MISMATCH_EXIT = 3


class Replayer:
    def __init__(self, transcript: List[Dict[str, Any]], normaliser: Normaliser, wait: float) -> None:
        self.transcript = transcript
        self.norm = normaliser
        self.wait = wait
        self.received: List[Any] = []  # normalised client frames not matched yet
        self.matched = 0
        self.mismatches: List[str] = []
        self._buf = b""
        self._eof = False

    def _read_some(self, timeout: float) -> bool:
        """Read what stdin has (waiting up to ``timeout``); False at EOF."""
        if self._eof:
            return False
        ready, _, _ = select.select([sys.stdin.buffer], [], [], timeout)
        if not ready:
            return True
        chunk = os.read(sys.stdin.fileno(), 1 << 16)
        if not chunk:
            self._eof = True
            return False
        self._buf += chunk
        while b"\n" in self._buf:
            line, self._buf = self._buf.split(b"\n", 1)
            if line.strip():
                try:
                    self.received.append(self.norm.normalise(json.loads(line)))
                except ValueError:
                    self.mismatches.append(f"client sent a line that is not JSON: {line[:200]!r}")
        return True

    def _take(self, expected: Any) -> bool:
        for i, frame in enumerate(self.received):
            if frame == expected:
                del self.received[i]
                self.matched += 1
                return True
        return False

    def expect(self, expected: Any) -> bool:
        deadline = time.monotonic() + self.wait
        while not self._take(expected):
            left = deadline - time.monotonic()
            if left <= 0 or not self._read_some(min(left, 0.5)):
                got = "\n    ".join(json.dumps(f)[:600] for f in self.received) or "(nothing)"
                self.mismatches.append(
                    f"expected client frame #{self.matched + 1} not received:\n    {json.dumps(expected)[:600]}\n"
                    f"  received instead:\n    {got}"
                )
                return False
        return True

    def emit(self, frame: Any) -> None:
        sys.stdout.write(json.dumps(self.norm.denormalise(frame), ensure_ascii=False) + "\n")
        sys.stdout.flush()

    def run(self) -> bool:
        for entry in self.transcript:
            if entry["dir"] == "in":
                self.emit(entry["frame"])
            elif not self.expect(entry["frame"]):
                return False
        # The transcript is over: wait for the client to hang up.
        while self._read_some(self.wait):
            pass
        for frame in self.received:
            self.mismatches.append(f"client sent a frame the recording does not have: {json.dumps(frame)[:600]}")
        return not self.mismatches


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv if argv is None else argv
    env = os.environ
    with open(env["CODEXMINI_REPLAY_TRANSCRIPT"], encoding="utf-8") as fh:
        transcript = [json.loads(line) for line in fh if line.strip()]
    paths = json.loads(env.get("CODEXMINI_REPLAY_PATHS", "{}"))
    norm = Normaliser(paths, version=env.get("CODEXMINI_REPLAY_VERSION"))
    replayer = Replayer(transcript, norm, float(env.get("CODEXMINI_REPLAY_WAIT", "20")))
    ok = replayer.run()
    report = {
        "ok": ok,
        "mismatches": replayer.mismatches,
        "matched": replayer.matched,
        "argv": normalise_argv(argv, norm, sys.executable),
    }
    target = env.get("CODEXMINI_REPLAY_REPORT")
    if target:
        with open(target, "w", encoding="utf-8") as fh:
            json.dump(report, fh, indent=1)
    if not ok:
        sys.stderr.write("replay mismatch:\n" + "\n".join(replayer.mismatches) + "\n")
        sys.stderr.flush()
    return 0 if ok else MISMATCH_EXIT


if __name__ == "__main__":
    sys.exit(main())
