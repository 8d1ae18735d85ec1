"""Scripted codex turns for the thread and agent tests: :class:`CodexLike` behaviours.

Each class plays one kind of turn the way codex 0.149.1 does (the shapes come
from :mod:`codexmini.testing.codex_like`, copied from the real binary).  A
test runs one in memory -- ``FakeAppServer(Plain).launch`` as the client's or
the agent's launcher -- or, where the real process matters, as a child over
real pipes: ``FakeAppServer("support.thread_behaviours:ExitMidTurn").executable(dir,
[TESTS])``.  Every frame sent here is validated by the conformance plugin
(strict, experimental schema) through the client's tap; :class:`Unmapped` is
the one that sends a method the schema does not know, on purpose.

Two kinds of control a pipe cannot give, used only in memory: a behaviour
passed as an *instance* (``FakeAppServer(SlowStart())``) is the one the test
holds, so the test can open its gates (:class:`SlowStart`,
:class:`SlowHandshake`) or end a held turn itself (:meth:`AgentTurns.release`)
-- no sleeps, no timing.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, List, Mapping, Optional

from codexmini.testing.codex_like import (
    THREAD,
    TURN,
    TURN_ERROR,
    USAGE_1,
    USAGE_2,
    USAGE_SUM,
    CodexLike,
    agent_message,
    command,
    reasoning,
    user_message,
)
from codexmini.testing.fake_appserver import ServerSide, _StdioServerSide

#: tests/, the directory to put on a child's path to import ``support.thread_behaviours``.
TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OTHER_TURN = "01a22879-0000-7000-8000-00000000000b"
OTHER_THREAD = "01a22879-0000-7000-8000-00000000000c"
STEERED_ITEM = "01a22879-9c31-7b71-8c65-263c78c031fb"


class Exit(Exception):
    """Raised by a handler of a :class:`Mortal` behaviour: the fake exits with
    ``code``, as a child process dying mid-conversation."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class Mortal(CodexLike):
    """A behaviour whose handlers may end the process (:class:`Exit`)."""

    async def __call__(self, server: ServerSide) -> Optional[int]:
        try:
            return await super().__call__(server)
        except Exit as exc:
            if isinstance(server, _StdioServerSide):
                # Over real pipes, die at once: returning would leave
                # fake_appserver's asyncio.run() waiting for its stdin reader
                # thread, blocked in read() until the client closes stdin.
                os._exit(exc.code)
            return exc.code


# -- thread-level turns ------------------------------------------------------------


class Plain(CodexLike):
    """Reasoning, a command, a streamed message; two model calls' usage."""

    async def script(self, params: Mapping[str, Any]) -> None:
        ids = {"threadId": THREAD, "turnId": self.tid(None)}
        self.started(reasoning("rs_1"))
        self.note("item/reasoning/summaryPartAdded", {**ids, "itemId": "rs_1", "summaryIndex": 0})
        for part in ("**Planning** ", "the answer."):
            self.note("item/reasoning/summaryTextDelta", {**ids, "itemId": "rs_1", "delta": part, "summaryIndex": 0})
        self.completed(reasoning("rs_1", ["**Planning** the answer."]))
        self.started(command("call_cmd_1", "inProgress"))
        self.note("item/commandExecution/outputDelta", {**ids, "itemId": "call_cmd_1", "delta": "done\n"})
        self.completed(command("call_cmd_1", "completed"))
        self.usage(USAGE_1, USAGE_1)
        self.message("msg_1", "Hel", "lo")
        self.usage(USAGE_2, USAGE_SUM)
        self.finish(items=[agent_message("msg_1", "Hello")])


class Early(CodexLike):
    """turn/started and a delta arrive before the turn/start response (the
    delta even before its item/started)."""

    async def on_turn_start(self, rid: Any, params: Mapping[str, Any]) -> None:
        self.active = TURN
        self.count += 1
        self.opening(params)
        self.delta("msg_1", "early ")
        self.answer_turn_start(rid)
        self.started(agent_message("msg_1"))
        self.delta("msg_1", "late")
        self.completed(agent_message("msg_1", "early late"))
        self.finish(items=[agent_message("msg_1", "early late")])


class ThreadWarning(CodexLike):
    """A warning for the new thread before the thread/start response, as codex sends it."""

    async def on_thread_start(self, rid: Any, params: Mapping[str, Any]) -> None:
        self.note(
            "warning", {"threadId": THREAD, "message": "Under-development features enabled: request_permissions_tool."}
        )
        await super().on_thread_start(rid, params)


class Filtering(CodexLike):
    """Frames of another turn of this thread and of another thread, interleaved."""

    async def script(self, params: Mapping[str, Any]) -> None:
        self.delta("msg_x", "other turn", turn=OTHER_TURN)
        self.completed(agent_message("msg_x", "other turn"), turn=OTHER_TURN)
        self.usage(USAGE_2, USAGE_2, turn=OTHER_TURN)
        self.delta("msg_y", "other thread", thread=OTHER_THREAD)
        self.finish("completed", turn=OTHER_TURN)
        self.finish("failed", TURN_ERROR, thread=OTHER_THREAD)  # same turn id, other thread
        self.message("msg_1", "mine")
        self.usage(USAGE_1, USAGE_1)
        self.finish(items=[agent_message("msg_1", "mine")])


class Bookkeeping(CodexLike):
    """An item that never completes, one id completed three times, a delta
    before its item/started: all of which codex does (an interrupt, retries)."""

    async def script(self, params: Mapping[str, Any]) -> None:
        self.started(agent_message("msg_cut_1"))
        self.delta("msg_cut_1", "partial")
        self.error("Reconnecting... 1/5", True)
        for attempt in (1, 2, 3):
            self.started(agent_message("msg_inc"))
            self.delta("msg_inc", f"attempt {attempt}")
            self.completed(agent_message("msg_inc", f"attempt {attempt}"))
        self.delta("msg_late", "late ")
        self.started(agent_message("msg_late"))
        self.completed(agent_message("msg_late", "late answer"))
        self.finish(items=[agent_message("msg_late", "late answer")])


class Retrying(CodexLike):
    """Two retrying errors, then the answer."""

    async def script(self, params: Mapping[str, Any]) -> None:
        self.error("Reconnecting... 1/5", True)
        self.error("Reconnecting... 2/5", True)
        self.message("msg_1", "recovered")
        self.finish(items=[agent_message("msg_1", "recovered")])


BARE_ERROR = {"message": "boom", "codexErrorInfo": None, "additionalDetails": None}


class Failed(CodexLike):
    """error{willRetry:false}, then turn/completed; variant ``with-error`` (as
    codex does), ``no-error`` (turn.error null), ``bare`` (an error with
    neither ``codexErrorInfo`` nor ``additionalDetails``) or ``interrupted``."""

    async def script(self, params: Mapping[str, Any]) -> None:
        if self.variant == "bare":
            self.error("", False, BARE_ERROR)
            self.finish("failed", BARE_ERROR)
            return
        self.error("", False, TURN_ERROR)
        if self.variant == "interrupted":
            self.finish("interrupted", None)
        else:
            self.finish("failed", TURN_ERROR if self.variant == "with-error" else None)


class Interruptible(CodexLike):
    """A message starts streaming and waits; turn/interrupt ends the turn."""

    async def script(self, params: Mapping[str, Any]) -> None:
        self.started(agent_message("msg_1"))
        self.delta("msg_1", "Hel")


class NoActiveTurn(CodexLike):
    """The turn ends at once; a later turn/interrupt gets -32600."""

    async def script(self, params: Mapping[str, Any]) -> None:
        self.message("msg_1", "Hel", "lo")
        self.finish(items=[agent_message("msg_1", "Hello")])


class SilentInterrupt(Interruptible):
    """turn/interrupt is answered, but turn/completed never comes."""

    async def on_turn_interrupt(self, rid: Any, params: Mapping[str, Any]) -> None:
        self.write({"id": rid, "result": {}})


class ExitOnInterrupt(Mortal, Interruptible):
    """turn/interrupt is answered, then the process exits."""

    async def on_turn_interrupt(self, rid: Any, params: Mapping[str, Any]) -> None:
        self.write({"id": rid, "result": {}})
        raise Exit(0)


class ExitMidTurn(Mortal):
    """The child dies while the turn streams."""

    async def script(self, params: Mapping[str, Any]) -> None:
        self.started(agent_message("msg_1"))
        self.delta("msg_1", "Hel")
        self.server.stderr("fake: dying mid-turn on purpose")
        raise Exit(3)


class Silent(CodexLike):
    """The turn starts and then nothing comes until turn/interrupt."""

    async def script(self, params: Mapping[str, Any]) -> None:
        pass


class Steer(CodexLike):
    """A message streams and waits; turn/steer adds input and the turn ends."""

    async def script(self, params: Mapping[str, Any]) -> None:
        self.started(agent_message("msg_1"))
        self.delta("msg_1", "Working")

    async def steered(self, params: Mapping[str, Any]) -> None:
        self.completed(agent_message("msg_1", "Working"))
        steered = user_message(STEERED_ITEM, params.get("input") or [])
        self.started(steered)
        self.completed(steered)
        self.message("msg_2", "Steered.")
        self.finish(items=[agent_message("msg_2", "Steered.")])


class SlowStart(Interruptible):
    """Says it got turn/start (a warning), and answers it only once the test
    opens :attr:`gate`.  In memory only (the test holds the instance)."""

    def __init__(self, variant: str = "") -> None:
        super().__init__(variant)
        self.gate = asyncio.Event()

    async def on_turn_start(self, rid: Any, params: Mapping[str, Any]) -> None:
        self.note("warning", {"threadId": THREAD, "message": "got turn/start"})
        await self.gate.wait()
        await super().on_turn_start(rid, params)


class RejectTurn(CodexLike):
    """turn/start is refused the way codex refuses bad params (-32600)."""

    async def on_turn_start(self, rid: Any, params: Mapping[str, Any]) -> None:
        self.server.fail({"id": rid}, "Invalid request: missing field `input`")


class RejectThread(CodexLike):
    """thread/start is refused, as codex refuses a bad ``sandbox``."""

    async def on_thread_start(self, rid: Any, params: Mapping[str, Any]) -> None:
        self.server.fail({"id": rid}, "Invalid request: invalid type: integer `123`, expected string or map")


class Unmapped(CodexLike):
    """A notification method this schema does not have (a newer codex)."""

    async def script(self, params: Mapping[str, Any]) -> None:
        ids = {"threadId": THREAD, "turnId": self.tid(None)}
        self.note("item/hologram/delta", {**ids, "itemId": "h1", "delta": "3d"})
        self.finish()


# -- agent-level turns --------------------------------------------------------------


def last_user_text(params: Mapping[str, Any]) -> str:
    """The newest user message of a step's prompt (the serialized log)."""
    inputs = params.get("input") or [{}]
    text = str(inputs[0].get("text") or "")
    return text.rsplit("<user>\n", 1)[-1].split("\n</user>", 1)[0]


class AgentTurns(Mortal):
    """One codex turn per agent step, scripted by the step's newest user message:

    * ``slow …`` -- a message starts streaming (``working on: …``) and the turn
      holds until the test calls :meth:`release` or codex gets turn/interrupt;
    * ``tool …`` -- a command runs (``echo done``), then the answer;
      ``burst …`` the same, every frame of it in one write;
    * ``sleep …`` -- a ``sleep 30`` command starts; variant ``die``: the child
      then exits (3), otherwise it holds (for a test that kills the child);
    * anything else -- the answer ``re: …`` at once, with one model call's usage.

    turn/steer is accepted and never echoed; :class:`EchoSteer`,
    :class:`RefuseSteer` and :class:`DieOnSteer` answer it otherwise.
    """

    holding = ""  # the held turn's streamed text

    async def script(self, params: Mapping[str, Any]) -> None:
        said = last_user_text(params)
        if said.startswith("slow"):
            self.holding = f"working on: {said}"
            self.started(agent_message("msg_1"))
            self.delta("msg_1", self.holding)
        elif said.startswith("burst"):  # the tool turn, as one write of codex's
            with self.server.one_write():
                self.tool_then_reply(said)
        elif said.startswith("tool"):
            self.tool_then_reply(said)
        elif said.startswith("sleep"):
            self.started(command("call_sleep", "inProgress", "/bin/bash -lc 'sleep 30'"))
            if self.variant == "die":
                self.server.stderr("fake: dying mid-step on purpose")
                raise Exit(3)
        else:
            self.reply(f"re: {said}")

    def tool_then_reply(self, said: str) -> None:
        self.started(command("call_cmd_1", "inProgress"))
        self.completed(command("call_cmd_1", "completed"))
        self.reply(f"re: {said}")

    def reply(self, text: str) -> None:
        self.message("msg_2", text)
        self.usage(USAGE_1, USAGE_1)
        self.finish(items=[agent_message("msg_2", text)])

    def release(self, text: str = "done") -> None:
        """End the held turn: its message completes, then the answer."""
        self.completed(agent_message("msg_1", self.holding))
        self.reply(text)


class EchoSteer(AgentTurns):
    """Accepts turn/steer and echoes the input (as codex does), then answers."""

    async def steered(self, params: Mapping[str, Any]) -> None:
        self.completed(agent_message("msg_1", self.holding))
        steered = user_message(STEERED_ITEM, params.get("input") or [])
        self.started(steered)
        self.completed(steered)
        self.reply("got the steer")


class RefuseSteer(AgentTurns):
    """turn/steer is refused: the codex turn ended meanwhile."""

    async def on_turn_steer(self, rid: Any, params: Mapping[str, Any]) -> None:
        self.server.fail({"id": rid}, "no active turn to steer")


class Approving(AgentTurns):
    """``approve …``: codex asks to run a command outside the sandbox
    (``item/commandExecution/requestApproval``, approval_accept shapes), runs
    it only if the answer is ``accept`` and says what it got."""

    asked = 0  # server-request ids: their own space, from 0

    async def script(self, params: Mapping[str, Any]) -> None:
        said = last_user_text(params)
        if not said.startswith("approve"):
            return await super().script(params)
        shell = "/bin/bash -lc 'echo escalated-ran > /var/tmp/outside.txt; echo done'"
        self.started(command("call_cmd_1", "inProgress", shell))
        rid, self.asked = self.asked, self.asked + 1
        ask = {
            "availableDecisions": ["accept", "cancel"],
            "command": shell,
            "commandActions": [{"command": "echo escalated-ran > /var/tmp/outside.txt; echo done", "type": "unknown"}],
            "cwd": "/var/tmp/ws",
            "environmentId": "local",
            "itemId": "call_cmd_1",
            "proposedExecpolicyAmendment": None,
            "reason": "Need to write outside the sandbox",
            "startedAtMs": 1,
            "threadId": THREAD,
            "turnId": self.tid(None),
        }
        self.write({"id": rid, "method": "item/commandExecution/requestApproval", "params": ask})
        answer = await self.server.recv(30)
        decision = ((answer or {}).get("result") or {}).get("decision")
        self.note("serverRequest/resolved", {"threadId": THREAD, "requestId": rid})
        self.completed(command("call_cmd_1", "completed" if decision == "accept" else "declined", shell))
        self.reply(f"decision: {decision}")


class Reasons(AgentTurns):
    """One command per step, ending each way codex 0.171.0 ends one (shapes
    from the real binary: fixtures/0.171.0/approval_decline.frames.jsonl, and
    ``exit 1`` / ``true`` / a command outliving its ``yield_time_ms`` run
    through exec_command), then the answer ``ok``:

    * ``decline …`` -- codex asks to run ``touch ok.txt`` outside the sandbox
      and completes it ``declined`` unless the answer is ``accept``;
    * ``fail …`` -- ``exit 1``: ``failed``, exit code 1, no output (null);
    * ``timeout …`` -- ``sleep 3`` still runs when the model answers: the turn
      completes and the command never does (within it);
    * ``empty …`` -- ``true``: ``completed``, exit code 0, no output (null).
    """

    asked = 0

    async def script(self, params: Mapping[str, Any]) -> None:
        said = last_user_text(params)
        word = said.split(" ", 1)[0]
        if word not in ("decline", "fail", "timeout", "empty"):
            return await super().script(params)
        shell = {
            "decline": "/bin/bash -lc 'touch ok.txt'",
            "fail": "/bin/bash -lc 'exit 1'",
            "timeout": "/bin/bash -lc 'sleep 3'",
            "empty": "/bin/bash -lc true",
        }[word]
        item_id = f"call_{word}"
        self.started(command(item_id, "inProgress", shell))
        if word == "decline":
            decision = await self.ask(item_id, shell)
            self.completed(command(item_id, "completed" if decision == "accept" else "declined", shell))
        elif word == "fail":
            self.completed(dict(command(item_id, "failed", shell), aggregatedOutput=None, exitCode=1))
        elif word == "empty":
            self.completed(dict(command(item_id, "completed", shell), aggregatedOutput=None))
        self.reply("ok")  # "timeout": the command is still running

    async def ask(self, item_id: str, shell: str) -> Any:
        rid, self.asked = self.asked, self.asked + 1
        ask = {
            "availableDecisions": ["accept", "cancel"],
            "command": shell,
            "commandActions": [{"command": shell.split(" ", 2)[-1], "type": "unknown"}],
            "cwd": "/var/tmp/ws",
            "environmentId": "local",
            "itemId": item_id,
            "proposedExecpolicyAmendment": None,
            "reason": "test",
            "startedAtMs": 1,
            "threadId": THREAD,
            "turnId": self.tid(None),
        }
        self.write({"id": rid, "method": "item/commandExecution/requestApproval", "params": ask})
        answer = await self.server.recv(30)
        self.note("serverRequest/resolved", {"threadId": THREAD, "requestId": rid})
        return ((answer or {}).get("result") or {}).get("decision")


class AskUser(AgentTurns):
    """``ask …``: codex asks the user two questions and a third with no text
    (``item/tool/requestUserInput``, user_input shapes), then says which
    answers it got."""

    async def script(self, params: Mapping[str, Any]) -> None:
        said = last_user_text(params)
        if not said.startswith("ask"):
            return await super().script(params)
        from conformance.recorded import USER_INPUT_PARAMS

        questions = [
            *USER_INPUT_PARAMS["questions"],
            {"id": "blank", "header": "", "question": "", "isOther": False, "isSecret": False, "options": None},
        ]
        ask = dict(USER_INPUT_PARAMS, threadId=THREAD, turnId=self.tid(None), questions=questions)
        self.write({"id": 0, "method": "item/tool/requestUserInput", "params": ask})
        answer = await self.server.recv(30)
        got = sorted((((answer or {}).get("result") or {}).get("answers") or {}))
        self.note("serverRequest/resolved", {"threadId": THREAD, "requestId": 0})
        self.reply(f"answers: {', '.join(got) or 'none'}")


class DieOnSteer(AgentTurns):
    """turn/steer arrives and the child dies before answering it."""

    async def on_turn_steer(self, rid: Any, params: Mapping[str, Any]) -> None:
        self.server.stderr("fake: dying on turn/steer on purpose")
        raise Exit(3)


class EndThenRefuseSteer(AgentTurns):
    """turn/steer arrives; the held turn finishes at once, and the steer is
    refused ("no active turn") only once the test opens :attr:`gate` -- so the
    step's end sees the steer unechoed before its caller sees the refusal.
    In memory only."""

    def __init__(self, variant: str = "") -> None:
        super().__init__(variant)
        self._gate: Optional[asyncio.Event] = None
        self.refusals: "List[asyncio.Task[None]]" = []

    @property
    def gate(self) -> asyncio.Event:
        """Made on first use, on the running loop (Python 3.9 binds an Event
        to a loop when it is made, and the test builds this outside one)."""
        if self._gate is None:
            self._gate = asyncio.Event()
        return self._gate

    async def on_turn_steer(self, rid: Any, params: Mapping[str, Any]) -> None:
        self.release()

        async def refuse() -> None:
            await self.gate.wait()
            self.server.fail({"id": rid}, "no active turn to steer")

        self.refusals.append(asyncio.ensure_future(refuse()))


class SlowHandshake(AgentTurns):
    """``initialize`` is answered only once the test opens :attr:`gate`;
    :attr:`initializing` says it arrived.  In memory only."""

    def __init__(self, variant: str = "") -> None:
        super().__init__(variant)
        self.gate = asyncio.Event()
        self.initializing = asyncio.Event()

    async def on_initialize(self, rid: Any, params: Mapping[str, Any]) -> None:
        self.initializing.set()
        await self.gate.wait()
        await super().on_initialize(rid, params)


class CutStream(AgentTurns):
    """``cut …``: the answer's stream is cut and codex retries (as in the
    ``stream_cut_then_ok`` scenario): ``msg_cut`` streams ``Partial``, a
    retrying ``error`` follows, then ``msg_ok`` streams and completes."""

    async def script(self, params: Mapping[str, Any]) -> None:
        said = last_user_text(params)
        if not said.startswith("cut"):
            return await super().script(params)
        self.started(agent_message("msg_cut"))
        self.delta("msg_cut", "Partial")
        self.error("Reconnecting... 1/5", True)
        self.started(agent_message("msg_ok"))
        self.delta("msg_ok", "Recovered")
        self.delta("msg_ok", " answer.")
        self.completed(agent_message("msg_ok", "Recovered answer."))
        self.usage(USAGE_1, USAGE_1)
        self.finish(items=[agent_message("msg_ok", "Recovered answer.")])


class LingerOnClose(AgentTurns):
    """Once its input ends (the client closes it), the child lingers until the
    test opens :attr:`gate`: a slow shutdown.  :attr:`closing` says it began.
    In memory only."""

    def __init__(self, variant: str = "") -> None:
        super().__init__(variant)
        self.gate = asyncio.Event()
        self.closing = asyncio.Event()

    async def __call__(self, server: Any) -> Optional[int]:
        code = await super().__call__(server)
        self.closing.set()
        await self.gate.wait()
        return code


__all__ = [
    "AgentTurns",
    "AskUser",
    "CutStream",
    "LingerOnClose",
    "Approving",
    "Bookkeeping",
    "DieOnSteer",
    "EchoSteer",
    "Early",
    "Exit",
    "ExitMidTurn",
    "ExitOnInterrupt",
    "Failed",
    "Filtering",
    "Interruptible",
    "Mortal",
    "NoActiveTurn",
    "OTHER_THREAD",
    "OTHER_TURN",
    "Plain",
    "RefuseSteer",
    "RejectThread",
    "RejectTurn",
    "Retrying",
    "Silent",
    "SilentInterrupt",
    "SlowHandshake",
    "SlowStart",
    "Steer",
    "TESTS",
    "ThreadWarning",
    "Unmapped",
    "last_user_text",
]


class InvalidDeltas(CodexLike):
    """Twelve deltas without their ``delta`` (hostile, not codex: every one
    is an ``InvalidNotification``), then a plain completed turn."""

    async def script(self, params: Mapping[str, Any]) -> None:
        ids = {"threadId": THREAD, "turnId": self.tid(None), "itemId": "m"}
        for _ in range(12):
            self.note("item/agentMessage/delta", ids)
        self.finish()


class CompletedRightAfterADelta(CodexLike):
    """A delta and the interrupted ``turn/completed`` written at once (one
    read), so both are queued before the consumer sees the first."""

    async def script(self, params: Mapping[str, Any]) -> None:
        with self.server.one_write():
            self.started(agent_message("msg_1"))
            self.delta("msg_1", "Hel")
            self.finish("interrupted")


class RateLimited(CodexLike):
    """A turn whose model call reports the account's limits (usage_limit, 0.171.0 shapes)."""

    def __init__(self, snapshot: Any, fail: bool) -> None:
        super().__init__()
        self.snapshot = snapshot
        self.fail = fail

    async def script(self, params: Mapping[str, Any]) -> None:
        self.note("account/rateLimits/updated", {"rateLimits": self.snapshot})
        if self.fail:  # the error and turn/completed of the usage_limit recordings
            turn_error = {
                "message": "You've hit your usage limit.",
                "codexErrorInfo": "usageLimitExceeded",
                "additionalDetails": None,
            }
            self.note("error", {"error": turn_error, "willRetry": False, "threadId": THREAD, "turnId": self.tid(None)})
            self.finish("failed", error=turn_error)
        else:
            self.finish()


def big_output(n: Any, size: int) -> str:
    """Command ``n``'s output: ``size`` characters that say where they begin
    and end, made at the cost of one string repetition."""
    head, tail = f"output {n} begins\n", f"\noutput {n} ends\n"
    return head + "." * max(0, size - len(head) - len(tail)) + tail


class Compacting(Mortal):
    """The bounded-prompt sessions (issue 30), one codex turn per step:

    * a summary call (its input starts with the agent's compaction
      instruction) answers ``summary K: …``, naming the newest ``big`` it
      read -- or, by ``variant``: ``fail-summary`` fails it,
      ``empty-summary`` completes it without an answer, ``die-summary``
      exits mid-call, ``hold-summary`` streams and holds the first one until
      it is interrupted, ``quiet-summary`` answers without a token count;
    * a step whose newest user message is ``big N`` runs a command whose
      output is :func:`big_output` of ``size`` characters, then answers;
    * anything else is answered ``re: …``.

    ``summaries`` counts the summary calls, ``prompts`` holds every step's
    prompt (the summary calls' inputs are in ``requests``)."""

    def __init__(self, variant: str = "", size: int = 500_000) -> None:
        super().__init__(variant)
        self.size = size
        self.summaries = 0
        self.prompts: List[str] = []
        self.requests: List[str] = []

    async def script(self, params: Mapping[str, Any]) -> None:
        from codexmini._prompt import COMPACTION_INSTRUCTION

        text = str((params.get("input") or [{}])[0].get("text") or "")
        if text.startswith(COMPACTION_INSTRUCTION):
            self.requests.append(text)
            self.summaries += 1
            self.summarise(text)
            return
        self.prompts.append(text)
        said = last_user_text(params)
        if said.startswith("big"):
            done = dict(command("call_big", "completed"), aggregatedOutput=big_output(said.split()[-1], self.size))
            self.started(command("call_big", "inProgress"))
            self.completed(done)
        self.reply(f"re: {said}")

    def summarise(self, text: str) -> None:
        if self.variant == "fail-summary":
            self.finish("failed", error=TURN_ERROR)
        elif self.variant == "empty-summary":
            self.finish()
        elif self.variant == "die-summary":
            raise Exit(3)
        elif self.variant == "hold-summary" and self.summaries == 1:
            self.started(agent_message("msg_s"))
            self.delta("msg_s", "summarising")
        elif self.variant == "quiet-summary":  # an answer, and no token count
            self.message("msg_s", "summary without usage")
            self.finish(items=[agent_message("msg_s", "summary without usage")])
        else:
            newest = last_user_text({"input": [{"text": text}]})
            self.reply(f"summary {self.summaries}: the user asked for outputs up to {newest!r}")

    def reply(self, text: str) -> None:
        self.message("msg_2", text)
        self.usage(USAGE_1, USAGE_1)
        self.finish(items=[agent_message("msg_2", text)])
