"""A fake ``codex app-server`` for the bench: stdlib only, one file, no codexmini.

``python fake_appserver.py --spec SERVER.json --turn TURN.jsonl [codex args…]``

It answers ``initialize``, ``thread/start``, ``turn/start`` and
``turn/interrupt`` with the results recorded from codex 0.149.1 (copied into
``SERVER.json`` by :mod:`tools.benchlib.workload`), then, after each
``turn/start`` result, writes the pre-built turn: ``TURN.jsonl``, whose thread
and turn ids are placeholders replaced here by the ids of this thread and turn
(so a turn's frames name that turn, as codex's do).  The substitution happens
*before* the ``turn/start`` result is written; the readers start their clocks
at the first notification, so it is not measured.  Any other request gets the
-32600 error codex uses for everything.  Arguments it does not know (the
``app-server -c key=value`` the client adds) are ignored.

It never outlives its reader: stdin EOF ends it, a broken pipe ends it, and an
alarm ends it after ``--lifetime`` seconds whatever happens.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys


def thread_id(n: int) -> str:
    return f"019a22cd-86d8-7bb1-a4b3-{n:012x}"


def turn_id(n: int) -> str:
    return f"019a22cd-86f6-7ad1-910f-{n:012x}"


class FakeServer:
    def __init__(self, spec: dict, turn: bytes, out) -> None:
        self.spec = spec
        self.turn = turn
        self.out = out
        self.threads = 0
        self.turns = 0

    def _ids(self, text: str, thread: str, turn: str = "") -> str:
        text = text.replace(self.spec["thread_placeholder"], thread)
        return text.replace(self.spec["turn_placeholder"], turn) if turn else text

    def _write(self, data: bytes) -> None:
        self.out.write(data)
        self.out.flush()

    def _result(self, rid, method: str, thread: str = "", turn: str = "") -> bytes:
        result = json.dumps(self.spec["responses"][method], separators=(",", ":"), ensure_ascii=False)
        line = f'{{"id":{json.dumps(rid)},"result":{self._ids(result, thread, turn)}}}\n'
        return line.encode("utf-8")

    def handle(self, msg: dict) -> None:
        method, rid = msg.get("method"), msg.get("id")
        if rid is None:
            return  # a notification (initialized): nothing to answer
        params = msg.get("params") or {}
        if method == "initialize":
            self._write(self._result(rid, method))
        elif method == "thread/start":
            self.threads += 1
            tid = thread_id(self.threads)
            after = "".join(
                self._ids(json.dumps(f, separators=(",", ":"), ensure_ascii=False), tid) + "\n"
                for f in self.spec["after_thread_start"]
            )
            self._write(self._result(rid, method, tid) + after.encode("utf-8"))
        elif method == "turn/start":
            self.turns += 1
            tid, uid = str(params.get("threadId", "")), turn_id(self.turns)
            body = self.turn.replace(self.spec["thread_placeholder_bytes"], tid.encode())
            body = body.replace(self.spec["turn_placeholder_bytes"], uid.encode())
            self._write(self._result(rid, method, tid, uid))
            self._write(body)
        elif method == "turn/interrupt":
            self._write(b'{"id":%s,"result":{}}\n' % json.dumps(rid).encode())
        else:
            error = {"code": -32600, "message": f"unsupported by the bench's fake: {method}"}
            self._write(json.dumps({"id": rid, "error": error}).encode() + b"\n")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", required=True)
    parser.add_argument("--turn", required=True)
    parser.add_argument("--lifetime", type=int, default=900)
    args, _codex_args = parser.parse_known_args(argv)
    signal.alarm(args.lifetime)  # default action: terminate
    with open(args.spec, encoding="utf-8") as fh:
        spec = json.load(fh)
    spec["thread_placeholder_bytes"] = spec["thread_placeholder"].encode()
    spec["turn_placeholder_bytes"] = spec["turn_placeholder"].encode()
    with open(args.turn, "rb") as fh:
        turn = fh.read()
    server = FakeServer(spec, turn, sys.stdout.buffer)
    try:
        for line in sys.stdin.buffer:
            if line.strip():
                server.handle(json.loads(line))
    except (BrokenPipeError, ConnectionResetError):
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
