"""Fake app-server behaviours for the client's tests (tests/test_client*.py).

Each behaviour is ``async def name(server) -> exit status`` for
:class:`codexmini.testing.FakeAppServer`: the same function runs in memory
(``AppServerClient.start(Launch(launcher=FakeAppServer(name).launch))``) or, named
``"support.behaviours:name"``, as a child process over real pipes
(``FakeAppServer("support.behaviours:name").executable(dir)``, see
:func:`tests.support.fake_client.codex_bin`).  Most run after :meth:`handshake`; the
ones that must see ``initialize`` themselves say so.

Every frame they send goes through the conformance validator (the plugin taps
every client), so these fakes are held to the real protocol; what is invalid
on purpose (garbage lines, answers nobody asked for) is declared by the test
with ``@pytest.mark.frame_problems``.  Where a behaviour must tell the test
what it saw (an answer, its argv), it reports it as the JSON text of an
``item/agentMessage/delta`` on :data:`THREAD`.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from typing import Any, Dict, Iterable, Optional

from codexmini.testing import ServerSide
from codexmini.testing.codex_like import turn_object

THREAD = "01a22cd4-86d8-7bb1-a4b3-76b6caecb517"
OTHER_THREAD = "01a22cd4-0000-7000-8000-000000000002"
TURN = "01a22cd4-86f6-7ad1-910f-518dfda94649"
EMITTED = 1796048455375
APPROVAL = "item/commandExecution/requestApproval"
APPROVAL_PARAMS = {
    "threadId": THREAD,
    "turnId": TURN,
    "itemId": "call_cmd_1",
    "startedAtMs": EMITTED,
    "command": "/bin/bash -lc 'echo hi'",
    "cwd": "/var/tmp/ws",
    "reason": "need it",
}
#: How long a fake that must be killed lingers (the client kills it long before).
LINGER = 120

Frame = Dict[str, Any]


def delta(text: str, item: str = "msg_1") -> Frame:
    return {
        "method": "item/agentMessage/delta",
        "params": {"threadId": THREAD, "turnId": TURN, "itemId": item, "delta": text},
        "emittedAtMs": EMITTED,
    }


def report(server: ServerSide, what: Any) -> None:
    """Tell the test ``what`` (JSON) through a delta it can subscribe to."""
    server.send(delta(json.dumps(what)))


def loaded_list(rid: Any, data: Iterable[str] = ()) -> Frame:
    return {"id": rid, "result": {"data": list(data), "nextCursor": None}}


def turn_completed() -> Frame:
    """A ``turn/completed`` in codex 0.149.1's shape."""
    params = {"threadId": THREAD, "turn": turn_object(TURN, "completed")}
    return {"method": "turn/completed", "params": params, "emittedAtMs": EMITTED}


async def lists(server: ServerSide) -> None:
    """Answer every ``thread/loaded/list`` with its own id; leave other
    requests unanswered; return at EOF."""
    async for request in server.requests():
        if request["method"] == "thread/loaded/list":
            server.send(loaded_list(request["id"], [str(request["id"])]))


async def next_request(server: ServerSide) -> Frame:
    async for request in server.requests():
        return request
    raise AssertionError("the client's input ended before its request")


# -- the conversation (in memory) ------------------------------------------------


async def echo(server: ServerSide) -> None:
    await server.handshake()
    await lists(server)


async def out_of_order(server: ServerSide) -> None:
    """Hold the first request until the second arrives; answer the second first."""
    await server.handshake()
    first = await next_request(server)
    second = await next_request(server)
    server.send(loaded_list(second["id"], ["second"]))
    server.send(loaded_list(first["id"], ["first"]))
    await lists(server)


async def unknown_request(server: ServerSide) -> None:
    """Ask something the client cannot know; report the answer."""
    await server.handshake()
    server.send({"id": 0, "method": "fake/unknownRequest", "params": {"threadId": THREAD}})
    report(server, await server.recv())
    await lists(server)


async def approval(server: ServerSide) -> None:
    """One command approval; report the answer."""
    await server.handshake()
    server.send({"id": 0, "method": APPROVAL, "params": APPROVAL_PARAMS})
    report(server, await server.recv())
    await lists(server)


#: (threadId, turnId) of each approval approvals_in_turns asks: three in two
#: turns, one in each of 64 more, then the first turn again.
ASKED_IN = [(THREAD, "a"), (THREAD, "a"), (THREAD, "b"), *[("t2", str(n)) for n in range(64)], (THREAD, "a")]


async def approvals_in_turns(server: ServerSide) -> None:
    """One approval per ASKED_IN entry and a server request no Reply answers
    (an auth refresh); once every answer is in, report their number and
    answer the client's requests."""
    await server.handshake()
    for rid, (thread, turn) in enumerate(ASKED_IN):
        server.send({"id": rid, "method": APPROVAL, "params": dict(APPROVAL_PARAMS, threadId=thread, turnId=turn)})
    refresh = {"reason": "unauthorized", "previousAccountId": None}
    server.send({"id": "refresh", "method": "account/chatgptAuthTokens/refresh", "params": refresh})
    answers, waiting = 0, []
    while answers < len(ASKED_IN) + 1:
        frame = await server.recv()
        assert frame is not None, "the client's input ended before its answers"
        if "method" in frame:
            waiting.append(frame)
        else:
            answers += 1
    report(server, answers)
    for request in waiting:
        server.send(loaded_list(request["id"]))
    await lists(server)


async def approval_twice(server: ServerSide) -> None:
    """The same approval twice with one id (codex never does); at the client's
    next request, report the answers received before it."""
    await server.handshake()
    frame = {"id": 0, "method": APPROVAL, "params": APPROVAL_PARAMS}
    server.send_raw((json.dumps(frame) + "\n").encode() * 2)
    request = await next_request(server)
    report(server, [f for f in server.received if "id" in f and "method" not in f])
    server.send(loaded_list(request["id"]))
    await lists(server)


async def approval_resolved(server: ServerSide) -> None:
    """A file-change approval that codex resolves on its own: the resolution
    comes when the client's next request arrives (the test sends one once its
    handler runs), before the answer to that request."""
    await server.handshake()
    params = {"threadId": THREAD, "turnId": TURN, "itemId": "call_patch_1", "startedAtMs": EMITTED}
    server.send({"id": 0, "method": "item/fileChange/requestApproval", "params": params})
    request = await next_request(server)
    server.notify("serverRequest/resolved", {"threadId": THREAD, "requestId": 0})
    server.send(loaded_list(request["id"], ["after the resolution"]))
    await lists(server)


async def approval_then_wait(server: ServerSide) -> None:
    """An approval, then nothing until the client's input ends (no answer expected)."""
    await server.handshake()
    server.send({"id": 0, "method": APPROVAL, "params": APPROVAL_PARAMS})
    await server.drain()


async def big_line(server: ServerSide) -> None:
    """A 16 MiB notification, then a small one, then the answer."""
    await server.handshake()
    first = await next_request(server)
    server.send(delta("x" * (16 * 1024 * 1024)))
    server.send(delta("after"))
    server.send(loaded_list(first["id"]))
    await lists(server)


async def over_cap(server: ServerSide) -> None:
    """A 2 MiB line (over the 1 MiB cap the test sets), then good frames."""
    await server.handshake()
    first = await next_request(server)
    server.send_raw(b'{"method":"item/agentMessage/delta","params":{"delta":"' + b"y" * (2 * 1024 * 1024) + b'"}}\n')
    server.send(delta("first-after"))
    server.send(delta("second-after"))
    server.send(loaded_list(first["id"]))
    await lists(server)


GARBAGE = (b"this is not json", b"[1,2,3]", b'"hello"', b'{"foo":1}', b"\xff\xfe{}", b'{"id":null,"result":{}}', b"")


async def garbage(server: ServerSide) -> None:
    """Lines that are not frames, each followed by a good one."""
    await server.handshake()
    first = await next_request(server)
    for bad in GARBAGE:
        server.send_raw(bad + b"\n")
        server.send(delta("ok"))
    server.send(loaded_list(first["id"]))
    await lists(server)


async def flood_thread(server: ServerSide) -> None:
    """Five deltas and a ``turn/completed`` for :data:`THREAD`, then the answer."""
    await server.handshake()
    first = await next_request(server)
    for i in range(5):
        server.send(delta(str(i)))
    server.send(turn_completed())
    server.send(loaded_list(first["id"]))
    await lists(server)


async def global_and_threads(server: ServerSide) -> None:
    """Notifications for two threads and one global, before anyone subscribed."""
    await server.handshake()
    first = await next_request(server)
    server.notify("configWarning", {"summary": "global warning", "details": None})
    server.notify("warning", {"threadId": THREAD, "message": "early"})
    server.notify("warning", {"threadId": OTHER_THREAD, "message": "other thread"})
    server.send(delta("d1"))
    server.send(loaded_list(first["id"]))
    await lists(server)


async def never_answer(server: ServerSide) -> None:
    """Read everything, answer nothing; exit when the input ends."""
    await server.handshake()
    await server.drain()


async def answer_late(server: ServerSide) -> None:
    """Answer the first request only when the second arrives, then the second."""
    await server.handshake()
    first = await next_request(server)
    second = await next_request(server)
    server.send(loaded_list(first["id"], ["late"]))
    server.send(loaded_list(second["id"], ["on time"]))
    await lists(server)


async def answer_twice(server: ServerSide) -> None:
    """Answer the first request twice, both lines in one write."""
    await server.handshake()
    first = await next_request(server)
    line = json.dumps(loaded_list(first["id"], ["once"])).encode() + b"\n"
    server.send_raw(line + line)
    await lists(server)


async def unknown_response(server: ServerSide) -> None:
    """Answer ``thread/start`` with codex's error, and id 999 that nobody asked."""
    await server.handshake()
    start = await next_request(server)
    server.fail(start, "Not initialized")
    server.send({"id": 999, "result": {}})
    await lists(server)


async def blind_answer_at_eof(server: ServerSide) -> None:
    """Read nothing after the handshake (the client's big write blocks); when
    the client's input ends, answer request 2 anyway -- after close() failed it."""
    await server.handshake()
    server.stop_reading()
    await server.drain()
    server.send(loaded_list(2, ["too late"]))


async def blind_error_at_eof(server: ServerSide) -> None:
    """:func:`blind_answer_at_eof`, answering with an error."""
    await server.handshake()
    server.stop_reading()
    await server.drain()
    server.send({"id": 2, "error": {"code": -32600, "message": "too late"}})


async def approval_then_linger(server: ServerSide) -> None:
    """An approval, then outlive the client's input (in memory, only a signal ends us)."""
    await server.handshake()
    server.send({"id": 0, "method": APPROVAL, "params": APPROVAL_PARAMS})
    await asyncio.sleep(LINGER)


async def report_frames(server: ServerSide) -> None:
    """Report every later client frame; answer the two requests the tests send
    (``config/mcpServer/reload`` takes no params)."""
    while True:
        frame = await server.recv()
        if frame is None:
            return
        report(server, frame)
        if frame.get("method") == "config/mcpServer/reload":
            server.respond(frame, {})
        elif frame.get("method") == "thread/loaded/list":
            server.send(loaded_list(frame["id"]))


async def handshake_then_report(server: ServerSide) -> None:
    await server.handshake()
    await report_frames(server)


async def stop_reading(server: ServerSide) -> None:
    """Stop reading stdin after the handshake (the client's writes back up)."""
    await server.handshake()
    server.stop_reading()
    await asyncio.sleep(LINGER)


async def raises(server: ServerSide) -> None:
    """A behaviour with a bug: the fake exits 1, its traceback on stderr."""
    await server.handshake()
    await next_request(server)
    raise RuntimeError("the fake's own bug")


# -- pipes, processes and signals (as child processes; most also in memory) -------


async def exit_mid_request(server: ServerSide) -> int:
    """Receive a request, complain on stderr (in colour), exit 7."""
    await server.handshake()
    await next_request(server)
    server.stderr("\x1b[31mERROR\x1b[0m fake: giving up on purpose")
    return 7


async def close_stdout_on_request(server: ServerSide) -> None:
    """Receive a request, close stdout and keep running: the client must kill us."""
    await server.handshake()
    await next_request(server)
    server.close_output()
    await asyncio.sleep(LINGER)


async def close_stdin_and_linger(server: ServerSide) -> None:
    """Close stdin (the client's writes now break), say so, keep running."""
    await server.handshake()
    server.close_input()
    server.send(delta("stdin closed"))
    await asyncio.sleep(LINGER)


async def close_stdin_then_approval(server: ServerSide) -> None:
    """Close stdin, then ask for an approval whose answer cannot be delivered."""
    await server.handshake()
    server.close_input()
    server.send({"id": 0, "method": APPROVAL, "params": APPROVAL_PARAMS})
    await asyncio.sleep(LINGER)


async def last_line_unterminated(server: ServerSide) -> int:
    """Answer the first request with a last line without a newline, exit 0."""
    await server.handshake()
    first = await next_request(server)
    server.send_raw(json.dumps(loaded_list(first["id"], ["unterminated"])).encode())
    return 0


async def ignore_stdin_close(server: ServerSide) -> None:
    """Outlive stdin's end and ignore SIGTERM: only SIGKILL ends us.  As a
    process only (in memory it would make the test process ignore SIGTERM)."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    await server.handshake()
    await server.drain()
    await asyncio.sleep(LINGER)


async def grandchild(server: ServerSide) -> None:
    """Start a long-lived grandchild (it inherits our pipes), report its pid."""
    await server.handshake()
    child = subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({LINGER})"])
    report(server, child.pid)
    await lists(server)


async def stderr_flood(server: ServerSide) -> None:
    """One 1 MiB stderr line, 2000 short ones, a last one without newline."""
    os.write(2, b"z" * (1 << 20) + b"\n" + "".join(f"line {i}\n" for i in range(2000)).encode())
    os.write(2, b"last words without newline")
    await server.handshake()
    await lists(server)


async def stderr_long_line(server: ServerSide) -> None:
    """One 1 MiB stderr line split over many reads, then one short line."""
    os.write(2, b"z" * (1 << 20) + b"\nthe line after\n")
    await server.handshake()
    await lists(server)


#: codex's own log lines, as it writes them on stderr (one of each kind).
CODEX_STDERR = (
    "2026-12-03T08:03:39.314194Z ERROR codex_app_server: the model provider refused the key",
    "2026-12-03T08:03:39.314194Z ERROR codex_app_server: Codex could not find bubblewrap on PATH. Install it.",
    "2026-12-03T08:03:39.314194Z  WARN codex_core: a warning",
    "2026-12-03T08:03:39.314194Z  INFO codex_core: some info",
    "not a log line at all",
)


async def stderr_levels(server: ServerSide) -> None:
    """codex's log lines of each level on stderr, then the handshake."""
    os.write(2, "".join(line + "\n" for line in CODEX_STDERR).encode())
    await server.handshake()
    await lists(server)


async def doctor_refusals(server: ServerSide) -> None:
    """A codex whose account store and threads are broken: ``account/read``
    and ``thread/start`` are refused."""
    await server.handshake()
    async for request in server.requests():
        server.fail(request, f"{request['method']} is broken here")


async def report_argv(server: ServerSide) -> None:
    """Report codex's argv (after the program) and a few variables."""
    await server.handshake()
    names = ("NO_COLOR", "CODEXMINI_FAKE_MARK", "OPENAI_API_KEY")
    report(server, {"argv": server.argv[1:], "env": {n: server.env.get(n) for n in names}, "cwd": server.cwd})
    await lists(server)


async def initialize_error(server: ServerSide) -> None:
    """Refuse ``initialize`` (codex's -32600), write our pid to ``$FAKE_PID_FILE``,
    exit when the input ends (as codex does)."""
    pid_file: Optional[str] = server.env.get("FAKE_PID_FILE")
    if pid_file:
        with open(pid_file, "w") as fh:
            fh.write(str(os.getpid()))
    request = await server.expect("initialize")
    server.fail(request, "fake: initialize refused")
    await server.drain()


# -- the fake's own machinery (tests/test_fake_appserver.py) ------------------------


async def expect_thread_start(server: ServerSide) -> None:
    """After the handshake, insist on ``thread/start`` (a FakeError: exit 3)."""
    await server.handshake()
    await server.expect("thread/start", timeout=10)


async def silent_client(server: ServerSide) -> None:
    """Expect ``initialize`` within a moment; a client that sends nothing fails it."""
    await server.expect("initialize", timeout=0.01)


async def stdio_tour(server: ServerSide) -> int:
    """Use every operation of the server side once: stderr, a report, stop and
    close stdin, a last frame, close stdout; exit 5."""
    await server.handshake()
    server.stderr("to stderr")
    server.stderr("already terminated\n")
    report(server, {"args": server.args, "argv": server.argv, "cwd": server.cwd})
    server.stop_reading()
    server.stop_reading()  # twice: harmless
    server.close_input()
    assert await server.recv() is None
    server.send(delta("after close_input"))
    server.close_output()
    return 5


async def close_input_after_eof(server: ServerSide) -> int:
    """Read to EOF, then close stdin too: the end of input is told once."""
    await server.handshake()
    await server.drain()
    server.close_input()
    return 0 if server._frames.empty() else 4  # no second "end of input" queued


class Numbered:
    """A behaviour class: every launch gets a fresh instance built with the fake's args."""

    made: "list[Numbered]" = []

    def __init__(self, *args: str) -> None:
        self.args = list(args)
        Numbered.made.append(self)

    async def __call__(self, server: ServerSide) -> None:
        await server.handshake()
        report(server, {"args": self.args, "instance": len(Numbered.made)})
        await lists(server)
