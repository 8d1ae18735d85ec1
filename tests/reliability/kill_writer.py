"""A writer to kill: appends to a session log and acknowledges every append.

Run as ``python kill_writer.py``: a *zygote* that imports
:class:`codexmini.SessionLog` once and forks one writer per command, so that
hundreds of writers cost milliseconds each, not an interpreter start each.
Commands, one per line on stdin, answered on stdout:

* ``spawn LOG ACKS SEED`` → the writer's pid.  The writer opens ``LOG`` (as a
  resumed session does: a torn last line is truncated away, ``seq``
  continues), then appends :data:`EVENTS` events of random sizes -- a quarter
  of them large -- writing ``SEQ\\n`` to ``ACKS`` after each ``append``
  returned, then waits to be killed.
* ``reap PID`` → its wait status, once the test has killed it.

An event's text says what it must be (:func:`text`), so a reader can check
every acknowledged event byte for byte without knowing the writer's seed.
"""

from __future__ import annotations

import os
import random
import sys
import time

from codexmini import SessionLog

EVENTS = 12
LARGE = (128 * 1024, 512 * 1024)
SMALL = (1, 4096)


def text(seq: int, size: int) -> str:
    """The content of event ``seq``: its own description, then ``size`` filler characters."""
    filler = "0123456789abcdef"[seq % 16] * size
    return f"{seq}|{size}|{filler}"


def expected(seq: int, content: str) -> str:
    """What event ``seq`` must hold, read from the size its text claims."""
    size = int(content.split("|", 2)[1])
    return text(seq, size)


def write(path: str, acks: str, seed: int) -> None:
    rng = random.Random(seed)
    log = SessionLog.open(path)
    ack = os.open(acks, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    for _ in range(EVENTS):
        size = rng.randint(*(LARGE if rng.random() < 0.25 else SMALL))
        seq = len(log.events)
        log.append(
            "user/message",
            {"id": f"m{seq}", "content": [{"type": "text", "text": text(seq, size)}], "source": {"kind": "user"}},
        )
        os.write(ack, b"%d\n" % seq)
    while True:
        time.sleep(60)  # written everything: a kill now lands between writes


def main() -> int:
    for line in sys.stdin:
        words = line.split()
        if words[0] == "spawn":
            pid = os.fork()
            if pid == 0:
                try:
                    write(words[1], words[2], int(words[3]))
                finally:
                    os._exit(1)
            reply = pid
        else:
            reply = os.waitpid(int(words[1]), 0)[1]
        sys.stdout.write(f"{reply}\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
