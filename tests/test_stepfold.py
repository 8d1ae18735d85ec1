"""The step fold (pure): codex turn events → session-log writes.

Event sequences follow the recorded scenarios (``fixtures/0.149.1/``, the
transcripts and the golden ``*.session.jsonl``): items carry the real item
shapes, in the order the binary sends them.
"""

from __future__ import annotations

import itertools
from typing import Any, Dict, List, Optional, Tuple

import pytest

from codexmini._events import (
    AgentMessageDelta,
    CommandOutputDelta,
    DiffUpdated,
    ItemCompleted,
    ItemStarted,
    MessageDelta,
    MessagePlanDelta,
    MessageReasoningDelta,
    MessageStreamEnd,
    MessageSummaryDelta,
    PlanDelta,
    PlanUpdated,
    ReasoningSummaryDelta,
    ReasoningTextDelta,
    RetryingError,
    TokenUsage,
    TurnCompleted,
    Unmapped,
    Usage,
)
from codexmini._stepfold import StepFold, Write
from codexmini._turnfold import TurnFold

MODEL = "gpt-fake"
SOURCE = {"provider": "codex", "model": MODEL}
TURN = "01a22879-9c13-7550-ac03-cd56cb48bc99"
U1 = Usage(input_tokens=10, cached_input_tokens=2, output_tokens=5, reasoning_output_tokens=1, total_tokens=15)
U2 = Usage(input_tokens=10, cached_input_tokens=2, output_tokens=5, reasoning_output_tokens=1, total_tokens=15)
CMD = "/bin/bash -lc 'echo hello-stdout; echo hello-stderr 1>&2'"
CMD_ARGS = '{"command":"/bin/bash -lc \'echo hello-stdout; echo hello-stderr 1>&2\'"}'


# -- real item shapes ------------------------------------------------------------


def user_message(text: str = "say hi") -> Dict[str, Any]:
    return {
        "type": "userMessage",
        "id": "01a22879-9c31-7b71-8c65-263c78c031fa",
        "clientId": None,
        "content": [{"type": "text", "text": text, "text_elements": []}],
    }


def agent_message(item_id: str = "msg_1", text: str = "") -> Dict[str, Any]:
    return {
        "type": "agentMessage",
        "id": item_id,
        "text": text,
        "phase": None,
        "memoryCitation": None,
        "delivery": None,
    }


def reasoning(item_id: str = "rs_1", summary=(), content=()) -> Dict[str, Any]:
    return {"type": "reasoning", "id": item_id, "summary": list(summary), "content": list(content)}


def command(
    item_id: str = "call_cmd_1",
    status: str = "completed",
    output: Optional[str] = "hello-stdout\nhello-stderr\n",
    exit_code: Optional[int] = 0,
    cmd: str = CMD,
) -> Dict[str, Any]:
    done = status != "inProgress"
    return {
        "type": "commandExecution",
        "id": item_id,
        "pluginId": None,
        "scriptPath": None,
        "command": cmd,
        "cwd": "/scratch/cxp/ws/cmd_ok",
        "processId": "30116" if done else None,
        "source": "unifiedExecStartup" if done else "agent",
        "status": status,
        "commandActions": [{"type": "unknown", "command": cmd}],
        "aggregatedOutput": output if done else None,
        "exitCode": exit_code if done else None,
        "durationMs": 10 if done else None,
    }


def patch(item_id: str = "call_patch_1", status: str = "completed") -> Dict[str, Any]:
    return {
        "type": "fileChange",
        "id": item_id,
        "changes": [
            {"path": "/scratch/cxp/ws/patch_auto/hello.txt", "kind": {"type": "add"}, "diff": "hello\nworld\n"}
        ],
        "status": status,
    }


def plan_item(text: str = "") -> Dict[str, Any]:
    return {"type": "plan", "id": f"{TURN}-plan", "text": text}


def usage_event(last: Usage = U1, total: Usage = U1) -> TokenUsage:
    return TokenUsage(last, total, 258400)


def completed(status: str = "completed", error=None) -> TurnCompleted:
    return TurnCompleted(TURN, status, error)


class Folded:
    """A step fold beside the turn's books, as the agent runs them: every
    event is booked by the TurnFold, then folded; finish() reads the books."""

    def __init__(self, step: int, steps: Optional[StepFold] = None) -> None:
        counter = itertools.count(1)
        self.books = TurnFold(TURN, keep_items=False)  # the agent's: no history, the started tools
        self.steps = steps or StepFold(step=step, model=MODEL, new_id=lambda: f"id-{next(counter)}")

    def feed(self, event: Any) -> List[Write]:
        self.books.book(event)
        return self.steps.feed(event)

    def finish(self, end: Optional[TurnCompleted]) -> List[Write]:
        if end is not None and not self.books.done:
            self.books.book(end)
        return self.steps.finish(self.books, completed=end is not None)

    @property
    def usage(self) -> Usage:
        return self.books.usage

    @property
    def open_tools(self) -> Dict[str, Any]:
        """Tools started that the fold has not settled yet."""
        return {c.call_id: c for c in self.books.started_tools() if c.call_id not in self.steps._tools_seen}

    def __getattr__(self, name: str) -> Any:  # step, messages, tool_calls, ignored, steer, …
        return getattr(self.steps, name)


def folder(step: int = 1) -> Folded:
    return Folded(step)


def fold(events, end: Optional[TurnCompleted] = None, *, step: int = 1, f: Optional[Folded] = None) -> List[Write]:
    f = f or folder(step)
    out: List[Write] = []
    for event in events:
        out += f.feed(event)
    out += f.finish(end if end is not None else completed())
    return out


def message(id: str, content, step: int, usage: Optional[Usage] = None) -> Write:
    data: Dict[str, Any] = {"id": id, "content": content, "source": SOURCE}
    if usage is not None:
        data["usage"] = usage.to_log()
    return Write("assistant/message", data, step)


def text(t: str) -> Dict[str, str]:
    return {"type": "text", "text": t}


def thought(t: str) -> Dict[str, str]:
    return {"type": "reasoning", "text": t}


def call_block(call_id: str, name: str, arguments: str) -> Dict[str, str]:
    return {"type": "tool-call", "id": call_id, "name": name, "arguments": arguments}


def tool_call(call_id: str, name: str, arguments: str, kind: str, step: int) -> Write:
    return Write("tool/call", {"callId": call_id, "name": name, "arguments": arguments, "kind": kind}, step)


def tool_result(
    call_id: str, out: str, step: int, *, is_error: bool = False, status: str = "completed", **more: Any
) -> Write:
    content = [text(out)] if out else []
    data = {"callId": call_id, "content": content, "isError": is_error, "status": status, **more}
    return Write("tool/result", data, step)


def rotate(step: int) -> List[Write]:
    """The writes that close ``step`` at a segment boundary and open the next."""
    return [Write("step/end", {"reason": "segment"}, step), Write("step/start", {}, step + 1)]


def streamed_message(item_id: str, deltas: List[str]) -> list:
    """item/started, the deltas, item/completed of one agent message."""
    return [
        ItemStarted(agent_message(item_id)),
        *(AgentMessageDelta(item_id, d) for d in deltas),
        ItemCompleted(agent_message(item_id, "".join(deltas))),
    ]


def tool_events(item: Dict[str, Any]) -> list:
    started = dict(item, status="inProgress")
    if item["type"] == "commandExecution":
        started.update(aggregatedOutput=None, exitCode=None, processId=None)
    return [ItemStarted(started), ItemCompleted(item)]


PROLOGUE = [ItemStarted(user_message()), ItemCompleted(user_message())]


# -- plain ------------------------------------------------------------------------


def test_stepfold_plain_message_with_usage():
    # Scenario plain: six deltas, one message, one model call.
    events = [*PROLOGUE, *streamed_message("msg_1", ["Hel", "lo", ", ", "wor", "ld", "!"]), usage_event()]
    f = folder()
    assert fold(events, f=f) == [message("id-1", [text("Hello, world!")], 1, U1)]
    assert (f.step, f.messages, f.tool_calls, dict(f.ignored)) == (1, 1, 0, {})
    assert f.usage == U1


def test_stepfold_writes_nothing_until_the_turn_ends():
    f = folder()
    for event in [*PROLOGUE, *streamed_message("msg_1", ["Hi"]), usage_event()]:
        assert f.feed(event) == []


def test_stepfold_starting_step_number_is_kept():
    assert fold(streamed_message("msg_1", ["Hi"]), step=7) == [message("id-1", [text("Hi")], 7)]


def test_stepfold_usage_sums_every_model_call():
    events = [usage_event(U1, U1), *streamed_message("msg_1", ["Hi"]), usage_event(U2, U1 + U2)]
    assert fold(events) == [message("id-1", [text("Hi")], 1, U1 + U2)]


def test_stepfold_display_only_events_write_nothing():
    events = [
        PlanUpdated("Three steps.", (("Inspect repository", "inProgress"),)),
        DiffUpdated("diff --git a/x b/x\n"),
        RetryingError("Reconnecting... 1/5"),
        CommandOutputDelta("call_cmd_1", "line-2\n"),
        Unmapped("item/somethingNew", {"threadId": "t"}),
        completed(),
    ]
    f = folder()
    assert [w for e in events for w in f.feed(e)] == []
    assert f.finish(completed()) == []
    assert f.messages == 0


# -- reasoning --------------------------------------------------------------------


REASONING_SUMMARY = ["**Planning** the answer: look at inputs.", "**Checking** edge cases."]


def reasoning_events(item, summary_deltas=(), text_deltas=()):
    return [
        ItemStarted(reasoning(item["id"])),
        *(ReasoningSummaryDelta(item["id"], d, i) for i, d in summary_deltas),
        *(ReasoningTextDelta(item["id"], d, 0) for d in text_deltas),
        ItemCompleted(item),
    ]


def test_stepfold_reasoning_then_message_summary_first():
    # Scenario reasoning: two summary parts and raw content; the summary wins.
    item = reasoning(summary=REASONING_SUMMARY, content=["raw chain of thought text."])
    events = [
        *PROLOGUE,
        *reasoning_events(item, [(0, "**Planning** "), (0, "the answer"), (1, "**Checking**")], ["raw chain ", "of"]),
        *streamed_message("msg_1", ["Answer."]),
        usage_event(),
    ]
    assert fold(events) == [message("id-1", [thought("\n\n".join(REASONING_SUMMARY)), text("Answer.")], 1, U1)]


def test_stepfold_reasoning_from_content_when_summary_empty():
    item = reasoning(summary=[], content=["raw chain of thought text."])
    events = [*reasoning_events(item, (), ["raw chain ", "of thought text."]), *streamed_message("msg_1", ["A"])]
    assert fold(events) == [message("id-1", [thought("raw chain of thought text."), text("A")], 1)]


def test_stepfold_reasoning_blank_summary_falls_back_to_content():
    item = reasoning(summary=["", "  "], content=["the content"])
    assert fold([*reasoning_events(item), *streamed_message("msg_1", ["A"])])[0].data["content"][0] == thought(
        "the content"
    )


def test_stepfold_reasoning_from_streamed_deltas_when_both_empty():
    item = reasoning()
    events = [
        ItemStarted(reasoning()),
        ReasoningSummaryDelta("rs_1", "**Plan** ", 0),
        ReasoningSummaryDelta("rs_1", "it.", 0),
        # A plan delta is not reasoning, even under the same item id.
        PlanDelta("rs_1", "# plan\n"),
        ReasoningTextDelta("rs_1", "raw", 0),
        ItemCompleted(item),
        *streamed_message("msg_1", ["A"]),
    ]
    assert fold(events) == [message("id-1", [thought("**Plan** it."), text("A")], 1)]


def test_stepfold_reasoning_with_nothing_adds_no_block():
    events = [*reasoning_events(reasoning()), *streamed_message("msg_1", ["A"])]
    assert fold(events) == [message("id-1", [text("A")], 1)]


def test_stepfold_reasoning_only_turn_is_flushed_at_finish():
    item = reasoning(summary=["thinking"])
    assert fold([*reasoning_events(item), usage_event()]) == [message("id-1", [thought("thinking")], 1, U1)]


def test_stepfold_plan_mode_items_are_content_not_ignored():
    # Scenario plan_mode: the plan item lives inside the agent message.
    plan_text = "# Fix the bug\n- Step one: read code\n- Step two: patch it\n"
    events = [
        ItemStarted(agent_message("msg_1")),
        AgentMessageDelta("msg_1", "Here is my plan.\n\n"),
        ItemStarted(plan_item()),
        PlanDelta(f"{TURN}-plan", "# Fix the bug\n"),
        PlanDelta(f"{TURN}-plan", "- Step one: read code\n- Step two: patch it\n"),
        AgentMessageDelta("msg_1", "Tell me if it looks good."),
        ItemCompleted(plan_item(plan_text)),
        ItemCompleted(agent_message("msg_1", "Here is my plan.\n\nTell me if it looks good.")),
    ]
    f = folder()
    assert fold(events, f=f) == [message("id-1", [text("Here is my plan.\n\nTell me if it looks good.")], 1)]
    assert dict(f.ignored) == {}


# -- messages ------------------------------------------------------------------------


def test_stepfold_consecutive_agent_messages_merge():
    events = [*streamed_message("msg_1", ["First."]), *streamed_message("msg_2", ["Second."]), usage_event()]
    f = folder()
    assert fold(events, f=f) == [message("id-1", [text("First."), text("Second.")], 1, U1)]
    assert f.messages == 1


def test_stepfold_empty_agent_message_adds_no_block():
    events = [ItemStarted(agent_message("msg_1")), ItemCompleted(agent_message("msg_1", ""))]
    f = folder()
    assert fold(events, f=f) == []
    assert f.messages == 0


def test_stepfold_empty_agent_message_beside_a_real_one():
    events = [*streamed_message("msg_1", []), *streamed_message("msg_2", ["Real."])]
    assert fold(events) == [message("id-1", [text("Real.")], 1)]


def test_stepfold_empty_agent_message_after_reasoning_keeps_the_reasoning():
    # A reasoning item, then an agent message with no text (codex 0.171.0's
    # review turn starts one and never fills it): the reasoning opens the
    # segment; the empty message adds no text block.
    events = [ItemCompleted(reasoning(summary=["Thinking."])), ItemCompleted(agent_message("msg_1", ""))]
    assert fold(events) == [message("id-1", [thought("Thinking.")], 1)]


def test_stepfold_streamed_message_completed_empty_ends_its_stream_uncommitted():
    f = folder()
    events = [
        ItemStarted(agent_message("msg_1")),
        AgentMessageDelta("msg_1", "par"),
        ItemCompleted(agent_message("msg_1", "")),
    ]
    assert fold(events, f=f) == []
    ends = [s for s in f.signals() if type(s).__name__ == "MessageStreamEnd"]
    assert [(e.item_id, e.committed) for e in ends] == [("msg_1", False)]


def test_stepfold_abandoned_agent_message_is_dropped():
    # err_stream_cut_then_ok: the cut message starts, streams, never completes.
    events = [
        ItemStarted(agent_message("msg_cut_1")),
        AgentMessageDelta("msg_cut_1", "partial"),
        RetryingError("Reconnecting... 1/5"),
        *streamed_message("msg_ok", ["Whole answer."]),
    ]
    assert fold(events) == [message("id-1", [text("Whole answer.")], 1)]


# -- tools --------------------------------------------------------------------------


def test_stepfold_tool_then_final_message_rotates_the_step():
    # Scenario cmd_ok (fixtures/0.149.1/cmd_ok.session.jsonl).
    f = folder()
    writes: List[Write] = []
    for event in [*PROLOGUE, *tool_events(command())]:
        writes += f.feed(event)
    assert writes == [
        message("id-1", [call_block("call_cmd_1", "bash", CMD_ARGS)], 1),
        tool_call("call_cmd_1", "bash", CMD_ARGS, "commandExecution", 1),
        tool_result("call_cmd_1", "hello-stdout\nhello-stderr\n", 1, exitCode=0),
    ]
    rest = fold([usage_event(U1), *streamed_message("msg_final", ["Command ", "finished."]), usage_event(U2)], f=f)
    assert rest == [
        *rotate(1),
        message("id-2", [text("Command finished.")], 2, U1 + U2),
    ]
    assert (f.step, f.messages, f.tool_calls) == (2, 2, 1)


def test_stepfold_message_then_tool_makes_one_message_with_the_call():
    events = [
        *streamed_message("msg_1", ["Let me look."]),
        *tool_events(command()),
    ]
    assert fold(events) == [
        message("id-1", [text("Let me look."), call_block("call_cmd_1", "bash", CMD_ARGS)], 1),
        tool_call("call_cmd_1", "bash", CMD_ARGS, "commandExecution", 1),
        tool_result("call_cmd_1", "hello-stdout\nhello-stderr\n", 1, exitCode=0),
    ]


def test_stepfold_reasoning_message_and_tool_in_one_segment():
    item = reasoning(summary=["Plan: run ls."])
    events = [*reasoning_events(item), *streamed_message("msg_1", ["Running ls."]), *tool_events(command())]
    assert fold(events)[0] == message(
        "id-1", [thought("Plan: run ls."), text("Running ls."), call_block("call_cmd_1", "bash", CMD_ARGS)], 1
    )


def test_stepfold_two_consecutive_tools_get_two_steps():
    second = command("call_cmd_2", cmd="/bin/bash -lc ls", output="a\n")
    second_args = '{"command":"/bin/bash -lc ls"}'
    events = [*tool_events(command()), usage_event(), *tool_events(second), usage_event()]
    f = folder()
    assert fold(events, f=f) == [
        message("id-1", [call_block("call_cmd_1", "bash", CMD_ARGS)], 1),
        tool_call("call_cmd_1", "bash", CMD_ARGS, "commandExecution", 1),
        tool_result("call_cmd_1", "hello-stdout\nhello-stderr\n", 1, exitCode=0),
        *rotate(1),
        message("id-2", [call_block("call_cmd_2", "bash", second_args)], 2),
        tool_call("call_cmd_2", "bash", second_args, "commandExecution", 2),
        tool_result("call_cmd_2", "a\n", 2, exitCode=0),
    ]
    # The turn ended right after a tool: no message carries the usage, the
    # folder still has it for turn/end.
    assert f.usage == U1 + U1
    assert (f.step, f.messages, f.tool_calls) == (2, 2, 2)


def test_stepfold_reasoning_delta_after_a_settled_tool_rotates_first():
    f = folder()
    writes: List[Write] = []
    for event in tool_events(command()):
        writes += f.feed(event)
    assert f.feed(ItemStarted(reasoning("rs_2"))) == []
    assert f.feed(ReasoningSummaryDelta("rs_2", "**Next**", 0)) == rotate(1)
    assert f.step == 2
    # Only once: the step holds no settled tool any more.
    assert f.feed(ReasoningTextDelta("rs_2", "more", 0)) == []
    assert f.feed(ItemCompleted(reasoning("rs_2", summary=["**Next** step."]))) == []
    rest = fold(streamed_message("msg_2", ["Done."]), f=f)
    assert rest == [message("id-2", [thought("**Next** step."), text("Done.")], 2)]


def test_stepfold_plan_delta_after_a_settled_tool_rotates():
    f = folder()
    for event in tool_events(command()):
        f.feed(event)
    assert f.feed(PlanDelta(f"{TURN}-plan", "# Plan\n")) == rotate(1)


def test_stepfold_tool_with_pending_reasoning_and_no_held_message():
    item = reasoning(summary=["I should list files."])
    events = [*reasoning_events(item), *tool_events(command())]
    assert fold(events) == [
        message("id-1", [thought("I should list files."), call_block("call_cmd_1", "bash", CMD_ARGS)], 1),
        tool_call("call_cmd_1", "bash", CMD_ARGS, "commandExecution", 1),
        tool_result("call_cmd_1", "hello-stdout\nhello-stderr\n", 1, exitCode=0),
    ]


def test_stepfold_failed_command_is_an_error_result():
    failed = command(
        status="failed", output="about-to-fail\n", exit_code=3, cmd="/bin/bash -lc 'echo about-to-fail; exit 3'"
    )
    writes = fold(tool_events(failed))
    assert writes[-1] == tool_result("call_cmd_1", "about-to-fail\n", 1, is_error=True, status="failed", exitCode=3)


def test_stepfold_declined_command_has_no_result_text():
    declined = command(status="declined", output=None, exit_code=None)
    assert fold(tool_events(declined))[-1] == tool_result("call_cmd_1", "", 1, is_error=True, status="declined")


def test_stepfold_declined_call_links_the_last_approval_answer_for_it():
    f = folder()
    f.approval("call_cmd_1", "accept", "handler")  # answered again later: the last answer wins
    f.approval("call_cmd_1", "cancel", "handler")
    f.approval("call_other", "decline", "default")  # another call's
    declined = command(status="declined", output=None, exit_code=None)
    writes = fold(tool_events(declined), f=f)
    assert writes[-1] == tool_result(
        "call_cmd_1", "", 1, is_error=True, status="declined", approval={"decision": "cancel", "by": "handler"}
    )
    # A copy: the fold's own record does not travel in the log's data.
    writes[-1].data["approval"]["by"] = "changed"
    assert f.steps._approvals["call_cmd_1"] == {"decision": "cancel", "by": "handler"}


def test_stepfold_a_call_that_ran_carries_no_approval():
    f = folder()
    f.approval("call_cmd_1", "accept", "handler")
    assert "approval" not in fold(tool_events(command()), f=f)[-1].data


def test_stepfold_declined_patch_links_its_approval_and_has_no_exit_code():
    f = folder()
    f.approval("call_patch_1", "decline", "timeout")
    assert fold(tool_events(patch(status="declined")), f=f)[-1] == tool_result(
        "call_patch_1",
        "patch declined",
        1,
        is_error=True,
        status="declined",
        approval={"decision": "decline", "by": "timeout"},
    )


def test_stepfold_file_change_tool():
    writes = fold(tool_events(patch()))
    arguments = (
        '{"changes":[{"diff":"hello\\nworld\\n","kind":{"type":"add"},"path":"/scratch/cxp/ws/patch_auto/hello.txt"}]}'
    )
    assert writes == [
        message("id-1", [call_block("call_patch_1", "apply_patch", arguments)], 1),
        tool_call("call_patch_1", "apply_patch", arguments, "fileChange", 1),
        tool_result("call_patch_1", "patch completed", 1),
    ]


def test_stepfold_tool_completed_without_started_is_still_logged():
    # imageView is started and completed together, but nothing requires the start.
    image = {"type": "imageView", "id": "call_view", "path": "/scratch/cxp/ws/misc_items/pixel.png"}
    writes = fold([ItemCompleted(image)])
    assert [w.type for w in writes] == ["assistant/message", "tool/call", "tool/result"]
    assert writes[1].data["name"] == "view_image"


# -- abandoned tools and finish -----------------------------------------------------------


ABANDONED_TEXT = "the tool call did not finish (the turn ended first)"


def test_stepfold_abandoned_tool_gets_an_error_result_at_finish():
    # Scenario interrupt_command: the command never gets item/completed.
    f = folder()
    events = [ItemStarted(command(status="inProgress")), CommandOutputDelta("call_cmd_1", "started\n"), usage_event()]
    assert [w for e in events for w in f.feed(e)] == []
    assert f.finish(completed("interrupted")) == [
        # The turn completed (interrupted): its usage goes on the last message written.
        message("id-1", [call_block("call_cmd_1", "bash", CMD_ARGS)], 1, U1),
        tool_call("call_cmd_1", "bash", CMD_ARGS, "commandExecution", 1),
        tool_result("call_cmd_1", ABANDONED_TEXT, 1, is_error=True, status="abandoned"),
    ]
    assert f.open_tools == {}
    assert f.tool_calls == 1
    # A second finish has nothing left to settle.
    assert f.finish(completed("interrupted")) == []


def test_stepfold_abandoned_tool_after_a_settled_tool_gets_its_own_step():
    events = [*tool_events(command()), ItemStarted(command("call_cmd_2", status="inProgress"))]
    writes = fold(events, completed("interrupted"))
    assert [(w.type, w.step) for w in writes] == [
        ("assistant/message", 1),
        ("tool/call", 1),
        ("tool/result", 1),
        ("step/end", 1),
        ("step/start", 2),
        ("assistant/message", 2),
        ("tool/call", 2),
        ("tool/result", 2),
    ]
    assert writes[-1].data["status"] == "abandoned"


class Clock:
    """A clock for the fold: ``readings`` in order, each read counted."""

    def __init__(self, *readings: float) -> None:
        self.readings = list(readings)
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        return self.readings.pop(0)


def timed(clock: Clock) -> Folded:
    counter = itertools.count(1)
    return Folded(1, StepFold(step=1, model=MODEL, new_id=lambda: f"id-{next(counter)}", clock=clock))


def test_stepfold_abandoned_tool_says_how_the_step_ended_and_how_long_it_ran():
    clock = Clock(10.0, 10.5, 13.0004)
    f = timed(clock)
    events = [
        *PROLOGUE,  # not a tool: no reading
        ItemStarted(command(status="inProgress")),  # 10.0
        ItemStarted(command(status="inProgress")),  # started again: the first start counts
        *tool_events(command("call_cmd_2")),  # 10.5, settled: no elapsedMs
        ItemStarted(reasoning("rs_9")),
    ]
    for event in events:
        f.feed(event)
    assert clock.reads == 2
    writes = f.steps.finish(f.books, True, "completed")  # 13.0004: read once
    assert clock.reads == 3
    assert writes[-1] == tool_result(
        "call_cmd_1", ABANDONED_TEXT, 2, is_error=True, status="abandoned", stepEnd="completed", elapsedMs=3000
    )


def test_stepfold_several_abandoned_tools_share_one_reading():
    clock = Clock(1.0, 2.0, 5.0)
    f = timed(clock)
    for event in [
        ItemStarted(command("call_a", status="inProgress")),
        ItemStarted(command("call_b", status="inProgress")),
    ]:
        f.feed(event)
    writes = f.steps.finish(f.books, False, "aborted")
    results = [w.data for w in writes if w.type == "tool/result"]
    assert [(r["callId"], r["stepEnd"], r["elapsedMs"]) for r in results] == [
        ("call_a", "aborted", 4000),
        ("call_b", "aborted", 3000),
    ]
    assert clock.reads == 3


def test_stepfold_a_clock_that_went_back_gives_zero_and_nothing_abandoned_reads_nothing():
    clock = Clock(5.0, 4.0)
    f = timed(clock)
    f.feed(ItemStarted(command(status="inProgress")))
    assert f.steps.finish(f.books, True, "error")[-1].data["elapsedMs"] == 0
    quiet = Clock(1.0)
    g = timed(quiet)
    for event in tool_events(command()):
        g.feed(event)
    g.steps.finish(g.books, True, "completed")
    assert quiet.reads == 1  # the start only


def test_stepfold_abandoned_tool_the_fold_never_saw_start_has_no_elapsed_time():
    # The books saw it start (a burst cut short), the fold did not: no reading to subtract.
    clock = Clock()
    f = timed(clock)
    f.books.book(ItemStarted(command(status="inProgress")))
    data = f.steps.finish(f.books, True, "aborted")[-1].data
    assert (data["stepEnd"], "elapsedMs" in data, clock.reads) == ("aborted", False, 0)


def test_stepfold_finish_without_turn_completed_attaches_no_usage():
    # The stream ended without turn/completed (the child died): usage is not certain.
    f = folder()
    for event in [*streamed_message("msg_1", ["Partial answer."]), usage_event()]:
        f.feed(event)
    assert f.finish(None) == [message("id-1", [text("Partial answer.")], 1)]
    assert f.usage == U1


def test_stepfold_finish_without_turn_completed_still_settles_open_tools():
    f = folder()
    f.feed(ItemStarted(command(status="inProgress")))
    writes = f.finish(None)
    assert [w.type for w in writes] == ["assistant/message", "tool/call", "tool/result"]
    assert "usage" not in writes[0].data
    assert writes[-1].data["status"] == "abandoned"


def test_stepfold_finish_flushes_pending_reasoning_without_a_message():
    f = folder()
    for event in reasoning_events(reasoning(summary=["half a thought"])):
        f.feed(event)
    assert f.finish(completed("interrupted")) == [message("id-1", [thought("half a thought")], 1)]


def test_stepfold_finish_on_an_empty_turn_writes_nothing():
    f = folder()
    assert f.finish(completed("failed", {"message": "boom"})) == []
    assert f.messages == 0


# -- counters -----------------------------------------------------------------------------


def test_stepfold_non_tool_non_content_items_are_counted_as_ignored():
    events = [
        *PROLOGUE,
        ItemCompleted({"type": "contextCompaction", "id": "c1"}),
        ItemCompleted(
            {"type": "dynamicToolCall", "id": "d1", "tool": "lookup", "arguments": {}, "status": "completed"}
        ),
        ItemCompleted({"type": "contextCompaction", "id": "c2"}),
        ItemCompleted(plan_item("# plan")),
        ItemCompleted(reasoning()),
    ]
    f = folder()
    assert fold(events, f=f) == []
    assert dict(f.ignored) == {"contextCompaction": 2, "dynamicToolCall": 1}


def test_stepfold_started_non_tool_items_are_not_tracked():
    f = folder()
    f.feed(ItemStarted(agent_message("msg_1")))
    f.feed(ItemStarted({"type": "contextCompaction", "id": "c1"}))
    assert f.open_tools == {}


def test_stepfold_counters_over_a_mixed_turn():
    events = [
        *reasoning_events(reasoning(summary=["a"])),
        *streamed_message("msg_1", ["one"]),
        *tool_events(command()),
        *tool_events(patch()),
        *streamed_message("msg_2", ["two"]),
        *streamed_message("msg_3", ["three"]),
        usage_event(),
    ]
    f = folder()
    writes = fold(events, f=f)
    assert [w.type for w in writes].count("assistant/message") == f.messages == 3
    assert [w.type for w in writes].count("tool/call") == f.tool_calls == 2
    assert writes[-1] == message("id-3", [text("two"), text("three")], 3, U1)
    assert f.step == 3


def test_stepfold_default_ids_are_unique_hex():
    f = Folded(1, StepFold(step=1, model=MODEL))
    writes = fold([*streamed_message("m1", ["a"]), *tool_events(command()), *streamed_message("m2", ["b"])], f=f)
    ids = [w.data["id"] for w in writes if w.type == "assistant/message"]
    assert len(ids) == 2 and len(set(ids)) == 2
    assert all(len(i) == 32 and int(i, 16) >= 0 for i in ids)


# -- known bugs -------------------------------------------------------------------------------


def test_stepfold_same_agent_message_completed_again_is_not_repeated():
    # Scenario err_incomplete: msg_inc is started, streamed and completed on
    # every retry; here three attempts, then the turn fails.
    events = []
    for attempt in (1, 2, 3):
        events += [RetryingError("Reconnecting...")] if attempt > 1 else []
        events += streamed_message("msg_inc", [f"partial {attempt}"])
    writes = fold(events, completed("failed", {"message": "incomplete"}))
    assert writes == [message("id-1", [text("partial 3")], 1)]


def test_stepfold_usage_on_the_message_flushed_with_an_abandoned_tool():
    events = [
        *streamed_message("msg_1", ["Running the build."]),
        ItemStarted(command(status="inProgress")),
        usage_event(),
    ]
    writes = fold(events, completed("interrupted"))
    assert writes[0] == message("id-1", [text("Running the build."), call_block("call_cmd_1", "bash", CMD_ARGS)], 1, U1)


# -- steering: steered input is logged where codex echoes it ------------------------------

STEER = {"id": "u-steer", "content": [{"type": "text", "text": "late words"}], "source": {"kind": "user"}}
SKILL = {
    "id": "u-skill",
    "content": [{"type": "text", "text": "<skill_content>"}],
    "source": {"kind": "skill-invocation"},
}
OTHER = {"id": "u-other", "content": [{"type": "text", "text": "and more"}], "source": {"kind": "user"}}


def echo(text: str = "late words", item_id: str = "01a22879-steer") -> list:
    """codex echoes a steer as a userMessage item of its own."""
    item = dict(user_message(text), id=item_id)
    return [ItemStarted(item), ItemCompleted(item)]


def feed_all(f: Folded, events) -> List[Write]:
    return [w for event in events for w in f.feed(event)]


def test_stepfold_steer_is_logged_at_its_echo_after_the_answer_it_interrupted():
    f = folder()
    assert feed_all(f, [*PROLOGUE, *streamed_message("msg_1", ["Working on it."])]) == []
    f.steer([STEER])
    assert feed_all(f, echo()) == [message("id-1", [text("Working on it.")], 1), Write("user/message", STEER, 1)]
    assert fold([*streamed_message("msg_2", ["Done."]), usage_event()], f=f) == [
        message("id-2", [text("Done.")], 1, U1)
    ]
    assert f.unechoed() == [] and f.step == 1


def test_stepfold_steer_pending_when_the_prompt_is_echoed_waits_for_its_own_echo():
    # The steer is sent before codex echoes the step's prompt: the prompt's
    # userMessage is not the steer's.
    f = folder()
    f.steer([STEER])
    assert feed_all(f, PROLOGUE) == []
    assert feed_all(f, streamed_message("msg_1", ["Hi."])) == []
    assert feed_all(f, echo()) == [message("id-1", [text("Hi.")], 1), Write("user/message", STEER, 1)]
    assert f.unechoed() == []


def test_stepfold_steers_are_logged_in_the_order_sent_one_group_per_echo():
    f = folder()
    feed_all(f, PROLOGUE)
    f.steer([STEER, SKILL])  # a message and the skill it invoked: one turn/steer
    f.steer([OTHER])
    # Nothing held: the echo writes only the steered messages.
    assert feed_all(f, echo()) == [Write("user/message", STEER, 1), Write("user/message", SKILL, 1)]
    assert feed_all(f, echo("and more", "01a22879-steer-2")) == [Write("user/message", OTHER, 1)]
    assert f.unechoed() == []


def test_stepfold_unsteer_forgets_a_refused_steer():
    # codex refused the turn/steer: the agent queues the message for the next
    # step instead, so the fold must not log it at some later echo.
    f = folder()
    feed_all(f, PROLOGUE)
    f.steer([STEER])
    f.steer([OTHER])
    assert f.unsteer([STEER]) is True
    assert f.unsteer([{"id": "never steered"}]) is False  # harmless
    assert feed_all(f, echo("and more")) == [Write("user/message", OTHER, 1)]
    assert f.unsteer([OTHER]) is False  # echoed: logged, not the caller's to re-deliver
    f.steer([STEER])
    assert f.unsteer([STEER]) is True
    assert f.unechoed() == []
    f.steer([STEER])
    assert f.unechoed() == [STEER]
    assert f.unsteer([STEER]) is False  # handed back at the turn's end: not again


def test_stepfold_unechoed_hands_back_every_pending_steer_once():
    f = folder()
    f.steer([STEER, SKILL])
    f.steer([OTHER])
    assert fold([*PROLOGUE, *streamed_message("msg_1", ["Hi."])], f=f) == [message("id-1", [text("Hi.")], 1)]
    assert f.unechoed() == [STEER, SKILL, OTHER]
    assert f.unechoed() == []


def test_stepfold_a_user_message_echo_without_a_steer_writes_nothing():
    f = folder()
    assert feed_all(f, [*PROLOGUE, *streamed_message("msg_1", ["Hi."]), *echo()]) == []
    assert f.finish(completed()) == [message("id-1", [text("Hi.")], 1)]


def test_stepfold_steer_after_a_tool_is_logged_in_the_tools_step():
    f = folder()
    feed_all(f, [*PROLOGUE, *tool_events(command())])
    f.steer([STEER])
    assert feed_all(f, echo()) == [Write("user/message", STEER, 1)]
    rest = fold(streamed_message("msg_2", ["Seen."]), f=f)
    assert rest == [*rotate(1), message("id-2", [text("Seen.")], 2)]


# -- reasoning that only streams -------------------------------------------------------------


def test_stepfold_reasoning_only_as_raw_text_deltas():
    events = [
        ItemStarted(reasoning()),
        ReasoningTextDelta("rs_1", "raw ", 0),
        ReasoningTextDelta("rs_1", "thought", 0),
        ReasoningTextDelta("rs_1", "second part", 1),
        ItemCompleted(reasoning()),
        *streamed_message("msg_1", ["A"]),
    ]
    assert fold(events) == [message("id-1", [thought("raw thought\n\nsecond part"), text("A")], 1)]


def test_stepfold_streamed_summary_parts_are_joined_in_index_order():
    events = [
        ReasoningSummaryDelta("rs_1", "second", 1),
        ReasoningSummaryDelta("rs_1", "first", 0),
        ReasoningSummaryDelta("rs_1", "", 2),
        ItemCompleted(reasoning()),
    ]
    assert fold(events) == [message("id-1", [thought("first\n\nsecond")], 1)]


def test_stepfold_raw_reasoning_delta_after_a_settled_tool_rotates_the_step():
    f = folder()
    feed_all(f, tool_events(command()))
    assert f.feed(ReasoningTextDelta("rs_2", "next", 0)) == rotate(1)
    assert f.feed(ItemCompleted(reasoning("rs_2"))) == []
    assert f.finish(completed()) == [message("id-2", [thought("next")], 2)]


def test_stepfold_reasoning_item_completed_without_deltas_after_a_tool_starts_a_segment_with_the_next_message():
    f = folder()
    feed_all(f, tool_events(command()))
    assert f.feed(ItemCompleted(reasoning("rs_2", summary=["why"]))) == []
    # An empty agent message still carries the pending reasoning into a new segment.
    assert f.feed(ItemCompleted(agent_message("msg_2", ""))) == rotate(1)
    assert f.finish(completed()) == [message("id-2", [thought("why")], 2)]


# -- messages: empty ones, last completion wins ---------------------------------------------


def test_stepfold_empty_message_after_a_tool_neither_rotates_nor_writes():
    f = folder()
    writes = feed_all(f, [*tool_events(command()), *streamed_message("msg_2", [])])
    assert [w.type for w in writes] == ["assistant/message", "tool/call", "tool/result"]
    assert f.finish(completed()) == []
    assert (f.step, f.messages) == (1, 1)


def test_stepfold_message_completed_again_with_no_text_keeps_the_last_completion():
    # Last completion wins, even when the retry came back empty.
    events = [
        *streamed_message("msg_inc", ["partial"]),
        RetryingError("Reconnecting..."),
        ItemCompleted(dict(agent_message("msg_inc"), text=None)),
    ]
    assert fold(events) == [message("id-1", [text("")], 1)]


def test_stepfold_message_completed_again_after_it_was_written_is_new_text():
    # Only while its message is held does a completion replace the text.
    f = folder()
    feed_all(f, [*streamed_message("msg_1", ["one"]), *tool_events(command())])
    feed_all(f, [*reasoning_events(reasoning("rs_2", summary=["then"])), *streamed_message("msg_2", ["two"])])
    feed_all(f, [ItemCompleted(agent_message("msg_1", "one again"))])
    assert f.finish(completed())[-1] == message("id-2", [thought("then"), text("two"), text("one again")], 2)


def test_stepfold_item_of_an_empty_type_is_counted_as_ignored():
    f = folder()
    assert fold([ItemCompleted({"type": "", "id": "x"}), ItemCompleted({"type": "plan", "id": "p"})], f=f) == []
    assert dict(f.ignored) == {"": 1}


# -- usage and finish ------------------------------------------------------------------------


def test_stepfold_usage_goes_on_the_last_message_only():
    # Two tools still running when the turn completes: two messages, one usage.
    events = [
        ItemStarted(command(status="inProgress")),
        ItemStarted(command("call_cmd_2", status="inProgress")),
        usage_event(),
    ]
    writes = fold(events, completed("interrupted"))
    messages = [w for w in writes if w.type == "assistant/message"]
    assert [(m.step, "usage" in m.data) for m in messages] == [(1, False), (2, True)]
    assert messages[1].data["usage"] == U1.to_log()


def test_stepfold_finish_defaults_to_a_completed_turn():
    f = folder()
    feed_all(f, [*streamed_message("msg_1", ["Hi."]), usage_event(), completed()])
    assert f.steps.finish(f.books) == [message("id-1", [text("Hi.")], 1, U1)]


def test_stepfold_write_is_a_frozen_value():
    write = Write("step/start", {}, 1)
    with pytest.raises(AttributeError):
        write.step = 2  # type: ignore[misc]
    assert write == Write("step/start", {}, 1) and write != Write("step/start", {}, 2)


# -- streams: MessageDelta and MessageStreamEnd -----------------------------------------------


def signals_of(f: Folded, events) -> list:
    """Feed ``events``; the writes' types and the stream signals, in order."""
    out = []
    for event in events:
        out += [w.type for w in f.feed(event)]
        out += f.signals()
    return out


def test_stepfold_stream_is_committed_when_its_message_is_written():
    f = folder()
    seen = signals_of(f, streamed_message("msg_1", ["Hel", "lo"]))
    assert seen == [
        MessageDelta(message_id="id-1", item_id="msg_1", delta="Hel"),
        MessageDelta(message_id="id-1", item_id="msg_1", delta="lo"),
    ]
    assert f.finish(completed()) == [message("id-1", [text("Hello")], 1)]
    assert f.signals() == [MessageStreamEnd("id-1", "msg_1", committed=True)]
    assert f.signals() == []


def test_stepfold_stream_method_announces_the_message_the_text_becomes():
    # The agent's hot path: stream() per delta, without feed().
    f = folder()
    assert f.steps.stream(AgentMessageDelta("msg_1", "Hi")) == MessageDelta(
        message_id="id-1", item_id="msg_1", delta="Hi"
    )
    assert f.steps.stream(AgentMessageDelta("msg_2", "also")) == MessageDelta(
        message_id="id-1", item_id="msg_2", delta="also"
    )
    assert f.signals() == []
    feed_all(f, [ItemCompleted(agent_message("msg_1", "Hi")), ItemCompleted(agent_message("msg_2", "also"))])
    assert f.finish(completed()) == [message("id-1", [text("Hi"), text("also")], 1)]
    assert f.signals() == [MessageStreamEnd("id-1", "msg_1", True), MessageStreamEnd("id-1", "msg_2", True)]


@pytest.mark.parametrize("held", [False, True])
def test_stepfold_streaming_folds_as_stream_does_without_building_an_event(held):
    # An agent with no listener calls streaming(): the same ids, writes and
    # stream ends as stream(), nothing returned.
    def play(method: str) -> Any:
        f = folder()
        if held:
            feed_all(
                f, [*reasoning_events(reasoning(summary=["plan"])), ItemCompleted(agent_message("msg_0", "First."))]
            )
        call = getattr(f.steps, method)
        shown = [call(AgentMessageDelta("msg_1", part)) for part in ("Hel", "lo")]
        shown.append(call(AgentMessageDelta("msg_2", "also")))
        feed_all(f, [ItemCompleted(agent_message("msg_1", "Hello")), ItemCompleted(agent_message("msg_2", "also"))])
        return shown, f.finish(completed()), f.signals(), f.steps.new_id()

    (streamed, *folded), (announced, *same) = play("stream"), play("streaming")
    assert announced == [None, None, None] and [d.message_id for d in streamed] == ["id-1"] * 3
    assert same == folded


def test_stepfold_stream_while_a_message_is_held_is_announced_for_that_message():
    f = folder()
    feed_all(f, [*reasoning_events(reasoning(summary=["plan"])), ItemCompleted(agent_message("msg_0", "First."))])
    assert f.steps.stream(AgentMessageDelta("msg_1", "Sec")) == MessageDelta(
        message_id="id-1", item_id="msg_1", delta="Sec"
    )
    feed_all(f, [ItemCompleted(agent_message("msg_1", "Second."))])
    assert f.finish(completed()) == [message("id-1", [thought("plan"), text("First."), text("Second.")], 1)]
    assert f.signals() == [MessageStreamEnd("id-1", "msg_1", True)]


def test_stepfold_stream_cut_and_retried_is_abandoned_and_the_retry_committed():
    # err_stream_cut_then_ok: the cut message never completes; codex retries
    # with a new item, which streams into the same (still unwritten) message.
    f = folder()
    events = [
        ItemStarted(agent_message("msg_cut_1")),
        AgentMessageDelta("msg_cut_1", "partial"),
        RetryingError("Reconnecting... 1/5"),
        usage_event(),
        *streamed_message("msg_ok", ["Whole."]),
    ]
    assert signals_of(f, events) == [
        MessageDelta(message_id="id-1", item_id="msg_cut_1", delta="partial"),
        MessageStreamEnd("id-1", "msg_cut_1", committed=False),
        MessageDelta(message_id="id-1", item_id="msg_ok", delta="Whole."),
    ]
    assert f.finish(completed()) == [message("id-1", [text("Whole.")], 1, U1)]
    assert f.signals() == [MessageStreamEnd("id-1", "msg_ok", committed=True)]


def test_stepfold_other_events_leave_a_stream_open():
    f = folder()
    events = [
        AgentMessageDelta("msg_1", "a"),
        usage_event(),
        ItemStarted(command(status="inProgress")),
        DiffUpdated("d"),
    ]
    assert signals_of(f, events) == [MessageDelta(message_id="id-1", item_id="msg_1", delta="a")]
    assert signals_of(f, [ItemCompleted(agent_message("msg_1", "a")), *tool_events(command())[1:]]) == [
        "assistant/message",
        "tool/call",
        "tool/result",
        MessageStreamEnd("id-1", "msg_1", committed=True),
    ]


def test_stepfold_stream_cut_short_by_the_end_of_the_turn_is_abandoned():
    f = folder()
    signals_of(f, [*streamed_message("msg_1", ["Done."]), AgentMessageDelta("msg_2", "and th")])
    assert f.finish(None) == [message("id-1", [text("Done.")], 1)]
    assert f.signals() == [MessageStreamEnd("id-1", "msg_1", True), MessageStreamEnd("id-1", "msg_2", False)]
    assert f.finish(completed()) == [] and f.signals() == []


def test_stepfold_stream_superseded_by_a_message_written_without_it_is_abandoned():
    # msg_a streams before anything is held (the next message's id is
    # reserved for it); a tool finishes first, and its message takes that id.
    f = folder()
    assert signals_of(f, [AgentMessageDelta("msg_a", "Let me")]) == [
        MessageDelta(message_id="id-1", item_id="msg_a", delta="Let me")
    ]
    assert signals_of(f, tool_events(command())) == ["assistant/message", "tool/call", "tool/result"]
    seen = signals_of(f, [ItemCompleted(agent_message("msg_a", "Let me see."))])
    assert seen == ["step/end", "step/start", MessageStreamEnd("id-1", "msg_a", committed=False)]
    assert f.finish(completed()) == [message("id-2", [text("Let me see.")], 2)]
    assert f.signals() == []


def test_stepfold_stream_of_a_message_that_completes_empty_is_abandoned():
    f = folder()
    signals_of(f, [AgentMessageDelta("msg_1", "")])
    assert signals_of(f, [ItemCompleted(agent_message("msg_1", ""))]) == [
        MessageStreamEnd("id-1", "msg_1", committed=False)
    ]
    assert f.finish(completed()) == [] and f.signals() == []


def test_stepfold_message_that_never_streamed_has_no_stream_signals():
    f = folder()
    feed_all(f, [ItemCompleted(agent_message("msg_1", "Quiet."))])
    assert f.finish(completed()) == [message("id-1", [text("Quiet.")], 1)]
    assert f.signals() == []


def test_stepfold_retried_completion_commits_its_stream_once():
    # err_incomplete: the same item streams and completes on every attempt.
    f = folder()
    events = []
    for attempt in (1, 2):
        events += [RetryingError("Reconnecting...")] if attempt > 1 else []
        events += streamed_message("msg_inc", [f"partial {attempt}"])
    signals_of(f, events)
    assert f.finish(None) == [message("id-1", [text("partial 2")], 1)]
    assert f.signals() == [MessageStreamEnd("id-1", "msg_inc", committed=True)]


def test_stepfold_item_without_a_type_is_counted_as_ignored_under_the_empty_type():
    f = folder()
    assert fold([ItemCompleted({"id": "x"}), ItemCompleted({"type": "", "id": "y"})], f=f) == []
    assert dict(f.ignored) == {"": 2}


# -- reasoning and plan deltas carry their message id (issue 30.6) ----------------------------


def test_stepfold_reasoning_and_plan_deltas_carry_the_id_of_the_message_they_flow_into():
    item = reasoning(summary=["Think."], content=["raw"])
    events = [
        *PROLOGUE,
        *reasoning_events(item, [(0, "Think.")], ["raw"]),
        PlanDelta("t-plan", "# Plan\n"),
        ItemCompleted(plan_item("# Plan\n")),
        *streamed_message("msg_1", ["Done."]),
    ]
    f = folder()
    seen = signals_of(f, events)
    assert seen == [
        MessageSummaryDelta(item_id="rs_1", delta="Think.", summary_index=0, message_id="id-1"),
        MessageReasoningDelta(item_id="rs_1", delta="raw", content_index=0, message_id="id-1"),
        MessagePlanDelta(item_id="t-plan", delta="# Plan\n", message_id="id-1"),
        MessageDelta(item_id="msg_1", delta="Done.", message_id="id-1"),
    ]
    # Each is the raw event's type too: a listener that tests isinstance still sees it.
    assert isinstance(seen[0], ReasoningSummaryDelta) and isinstance(seen[2], PlanDelta)
    # The id is the message the reasoning is written in.
    assert f.finish(completed()) == [message("id-1", [thought("Think."), text("Done.")], 1)]


def test_stepfold_reasoning_after_a_tool_flows_into_the_next_message_of_the_next_segment():
    cmd = command()
    events = [*PROLOGUE, *streamed_message("msg_1", ["Let me look."]), *tool_events(cmd)]
    f = folder()
    signals_of(f, events)
    seen = signals_of(f, [ReasoningSummaryDelta("rs_2", "Seen it.")])
    # The delta opened the next segment (a step of its own), then was shown in it.
    assert seen == ["step/end", "step/start", MessageSummaryDelta(item_id="rs_2", delta="Seen it.", message_id="id-2")]
    feed_all(f, [ItemCompleted(reasoning("rs_2", summary=["Seen it."]))])
    writes = f.finish(completed())
    assert writes[-1] == message("id-2", [thought("Seen it.")], 2)


def test_stepfold_without_a_listener_stamps_nothing_and_logs_the_same_ids():
    def play(shows: bool) -> Tuple[List[Write], List[Any]]:
        counter = itertools.count(1)
        steps = StepFold(step=1, model=MODEL, new_id=lambda: f"id-{next(counter)}", shows=shows)
        f = Folded(1, steps)
        events = [*reasoning_events(reasoning(summary=["S"]), [(0, "S")], ["t"]), PlanDelta("p", "x")]
        writes: List[Write] = []
        for event in events:
            writes += f.feed(event)
        return writes + f.finish(completed()), f.signals()

    shown, quiet = play(True), play(False)
    assert shown[0] == quiet[0] == [message("id-1", [thought("S")], 1)]
    assert len(shown[1]) == 3 and quiet[1] == []
