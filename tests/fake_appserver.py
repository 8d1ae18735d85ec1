"""A hand-written fake ``codex app-server`` for the client's transport tests.

Run as ``python fake_appserver.py BEHAVIOUR``.  It answers ``initialize`` like
the real binary and then behaves as the named entry of :data:`BEHAVIOURS`
says.  Every frame it writes must pass the same schema validation as the real
binary's: the conformance plugin validates them through the client's tap, so
this fake cannot drift from the protocol unnoticed.  Deliberately invalid
output (garbage lines, oversized lines) is not a frame and never reaches the
tap.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

THREAD = "01a22cd4-86d8-7bb1-a4b3-76b6caecb517"
TURN = "01a22cd4-86f6-7ad1-910f-518dfda94649"

INIT_RESULT = {
    "userAgent": "codexmini/0.149.1 (fake)",
    "codexHome": "/var/tmp/fake-codex-home",
    "platformFamily": "unix",
    "platformOs": "linux",
}


def write(frame) -> None:
    sys.stdout.write(json.dumps(frame) + "\n")
    sys.stdout.flush()


def raw(data: bytes) -> None:
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def delta(text: str, item: str = "msg_1") -> dict:
    return {
        "method": "item/agentMessage/delta",
        "params": {"threadId": THREAD, "turnId": TURN, "itemId": item, "delta": text},
        "emittedAtMs": 1796048455375,
    }


def frames():
    """Yield every frame the client writes."""
    for line in sys.stdin:
        line = line.strip()
        if line:
            yield json.loads(line)


def handshake(incoming) -> None:
    for frame in incoming:
        if frame.get("method") == "initialize":
            write({"id": frame["id"], "result": INIT_RESULT})
        elif frame.get("method") == "initialized":
            return


def loaded_list(rid, data=()) -> dict:
    return {"id": rid, "result": {"data": list(data), "nextCursor": None}}


# -- behaviours: each gets the iterator of client frames after the handshake --


def echo(incoming) -> None:
    """Answer thread/loaded/list requests; stop at EOF."""
    for frame in incoming:
        if frame.get("method") == "thread/loaded/list":
            write(loaded_list(frame["id"], [str(frame["id"])]))


def out_of_order(incoming) -> None:
    """Hold the first request until the second arrives, answer the second first."""
    first = next(incoming)
    second = next(incoming)
    write(loaded_list(second["id"], ["second"]))
    write(loaded_list(first["id"], ["first"]))
    echo(incoming)


def unknown_request(incoming) -> None:
    """Ask the client something it cannot know, then report what it said."""
    write({"id": 0, "method": "fake/unknownRequest", "params": {"threadId": THREAD}})
    answer = next(incoming)
    # Report the answer back through a valid notification the client routes.
    write(delta(json.dumps(answer)))
    echo(incoming)


def approval(incoming) -> None:
    """One command approval request; report the answer as a delta."""
    write(
        {
            "id": 0,
            "method": "item/commandExecution/requestApproval",
            "params": {
                "threadId": THREAD,
                "turnId": TURN,
                "itemId": "call_cmd_1",
                "startedAtMs": 1796048455375,
                "command": "/bin/bash -lc 'echo hi'",
                "cwd": "/var/tmp/ws",
                "reason": "need it",
            },
        }
    )
    answer = next(incoming)
    write(delta(json.dumps(answer)))
    echo(incoming)


def approval_resolved(incoming) -> None:
    """An approval request the server resolves on its own before any answer."""
    write(
        {
            "id": 0,
            "method": "item/fileChange/requestApproval",
            "params": {"threadId": THREAD, "turnId": TURN, "itemId": "call_patch_1", "startedAtMs": 1796048455375},
        }
    )
    time.sleep(0.05)
    write({"method": "serverRequest/resolved", "params": {"threadId": THREAD, "requestId": 0}, "emittedAtMs": 1})
    echo(incoming)


def big_line(incoming) -> None:
    """A 16 MiB notification, then a small one, then the answer."""
    first = next(incoming)
    write(delta("x" * (16 * 1024 * 1024)))
    write(delta("after"))
    write(loaded_list(first["id"]))
    echo(incoming)


def over_cap(incoming) -> None:
    """A line bigger than the client's cap (the test sets it to 1 MiB), then good frames."""
    first = next(incoming)
    raw(b'{"method":"item/agentMessage/delta","params":{"delta":"' + b"y" * (2 * 1024 * 1024) + b'"}}\n')
    write(delta("first-after"))
    write(delta("second-after"))
    write(loaded_list(first["id"]))
    echo(incoming)


def garbage(incoming) -> None:
    """Lines that are not frames, each followed by a good one."""
    first = next(incoming)
    for bad in (b"this is not json", b"[1,2,3]", b'"hello"', b'{"foo":1}', b"\xff\xfe{}", b'{"id":null,"result":{}}', b""):
        raw(bad + b"\n")
        write(delta("ok"))
    write(loaded_list(first["id"]))
    echo(incoming)


def exit_mid_request(incoming) -> None:
    """Receive a request, complain on stderr, exit with code 7."""
    next(incoming)
    sys.stderr.write("\x1b[31mERROR\x1b[0m fake: giving up on purpose\n")
    sys.stderr.flush()
    os._exit(7)


def grandchild(incoming) -> None:
    """Start a long-lived grandchild in our process group, report its pid, go on."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    write(delta(str(child.pid)))
    echo(incoming)


def stderr_flood(incoming) -> None:
    """A very long stderr line and many short ones: the drain must survive."""
    sys.stderr.write("z" * (1 << 20) + "\n")
    for i in range(2000):
        sys.stderr.write(f"line {i}\n")
    sys.stderr.write("last words without newline")
    sys.stderr.flush()
    echo(incoming)


def global_and_threads(incoming) -> None:
    """Notifications for two threads and one global, before anyone subscribed."""
    first = next(incoming)
    other = "01a22cd4-0000-7000-8000-000000000002"
    write({"method": "configWarning", "params": {"summary": "global warning", "details": None}, "emittedAtMs": 1})
    write({"method": "warning", "params": {"threadId": THREAD, "message": "early"}, "emittedAtMs": 1})
    write({"method": "warning", "params": {"threadId": other, "message": "other thread"}, "emittedAtMs": 1})
    write(delta("d1"))
    write(loaded_list(first["id"]))
    echo(incoming)


def never_answer(incoming) -> None:
    """Read everything, answer nothing (request timeouts)."""
    for _ in incoming:
        pass


def ignore_stdin_close(incoming) -> None:
    """Keep running after stdin closes (close() must terminate it)."""
    import signal

    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    for _ in incoming:
        pass
    time.sleep(120)



# -- behaviours added for tests/test_client_more.py ---------------------------


def report_frames(incoming) -> None:
    """Report every later client frame as a delta (its JSON); answer the two
    requests the tests send.  ``config/mcpServer/reload`` takes no params."""
    for frame in incoming:
        write(delta(json.dumps(frame)))
        if frame.get("method") == "config/mcpServer/reload":
            write({"id": frame["id"], "result": {}})
        elif frame.get("method") == "thread/loaded/list":
            write(loaded_list(frame["id"]))


def report_argv(incoming) -> None:
    """Report argv (after the program) and a few environment variables, then echo.

    Started through an executable script (see :func:`run_as_codex`), so argv
    is what the client gave "codex": ``app-server -c key=value … extra``.
    """
    names = ("NO_COLOR", "CODEXMINI_FAKE_MARK", "OPENAI_API_KEY")
    write(delta(json.dumps({"argv": sys.argv[1:], "env": {n: os.environ.get(n) for n in names}})))
    echo(incoming)


def answer_twice(incoming) -> None:
    """Answer the first request twice, both lines in one write."""
    first = next(incoming)
    line = json.dumps(loaded_list(first["id"], ["once"])) + "\n"
    raw((line + line).encode())
    echo(incoming)


def last_line_unterminated(incoming) -> None:
    """Answer the first request with a final line that has no newline, then exit 0."""
    first = next(incoming)
    raw(json.dumps(loaded_list(first["id"], ["unterminated"])).encode())
    os._exit(0)


def close_stdout_on_request(incoming) -> None:
    """Receive a request, close stdout and keep running: the client must kill us."""
    next(incoming)
    sys.stdout.flush()
    os.close(1)
    time.sleep(120)


def close_stdin_and_linger(incoming) -> None:
    """Close stdin (the client's writes now break), say so, and keep running."""
    os.close(0)
    write(delta("stdin closed"))
    time.sleep(120)


def initialize_error(incoming) -> None:
    """Pre-handshake (see :data:`PRE_HANDSHAKE`): write our pid to
    ``$FAKE_PID_FILE``, answer ``initialize`` with an error, read until EOF."""
    with open(os.environ["FAKE_PID_FILE"], "w") as fh:
        fh.write(str(os.getpid()))
    for frame in incoming:
        if frame.get("method") == "initialize":
            write({"id": frame["id"], "error": {"code": -32600, "message": "fake: initialize refused"}})


#: Behaviours that replace the handshake: they see ``initialize`` themselves.
PRE_HANDSHAKE = frozenset({"initialize_error"})


def run_as_codex(behaviour_name: str) -> None:
    """Be a fake *codex binary*: an executable script that imports this module
    calls this, so ``sys.argv`` is codex's own (``app-server -c …``) and the
    behaviour is named by the script instead."""
    behaviour = BEHAVIOURS[behaviour_name]
    incoming = frames()
    if behaviour_name not in PRE_HANDSHAKE:
        handshake(incoming)
    behaviour(incoming)

BEHAVIOURS = {
    name: fn
    for name, fn in globals().items()
    if callable(fn) and getattr(fn, "__module__", None) == __name__ and fn.__code__.co_varnames[:1] == ("incoming",)
}


def main() -> None:
    behaviour = BEHAVIOURS[sys.argv[1]]
    incoming = frames()
    handshake(incoming)
    behaviour(incoming)


if __name__ == "__main__":
    main()
