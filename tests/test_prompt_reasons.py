"""How a tool call ended, as the next step's prompt says it (issue 30).

The model of the next step must tell apart a declined command, one that
failed (with its exit code), one that timed out and one that printed nothing.
Each test below takes codex's own items for one of those ends -- from the
recorded frames of codex 0.171.0 where a scenario has them, else the shapes
the 0.171.0 binary sent for ``exit 1`` and ``true`` (``tests/test_agent.py``'s
``test_agent_the_next_prompt_tells_each_end_of_a_command_apart`` runs all four
against the binary) -- folds them into log events (:class:`StepFold`, pure)
and shows the prompt text they become (:func:`serialize`): a pure function of
the log, so what the model reads is what is logged.

codex has no "timed out" status (``CommandExecutionStatus`` is ``inProgress``,
``completed``, ``failed``, ``declined``): exec_command never kills a command
on a timeout; one that outlives its ``yield_time_ms`` keeps running, codex
hands the model what it printed so far, and the turn can end before the
command does (its item/completed comes after turn/completed, or never).  The
log's word for it is ``abandoned``, with how the step ended and how long the
command had run.
"""

from __future__ import annotations

import itertools
import json
import os
from typing import Any, Callable, Dict, List, Mapping, Optional

import pytest

from codexmini._events import ItemCompleted, ItemStarted, TurnCompleted
from codexmini._prompt import NO_CONTENT, NO_OUTPUT, derive_messages, render_section, result_note, serialize
from codexmini._stepfold import StepFold, Write
from codexmini._turnfold import TurnFold

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "0.171.0")
TURN = "00000000-0000-7000-8000-000000000003"


def recorded_items(scenario: str, method: str) -> List[Dict[str, Any]]:
    """The commandExecution items of ``method`` frames codex sent in ``scenario``."""
    with open(os.path.join(FIXTURES, f"{scenario}.frames.jsonl"), encoding="utf-8") as fh:
        frames = [json.loads(line)["frame"] for line in fh if line.strip()]
    return [
        f["params"]["item"]
        for f in frames
        if f.get("method") == method and f["params"]["item"]["type"] == "commandExecution"
    ]


def observed(command: str, status: str, exit_code: int) -> Dict[str, Any]:
    """A command item as codex 0.171.0 completes it when the command printed
    nothing: ``aggregatedOutput`` null (not empty), the exit code, ``failed``
    for a non-zero one."""
    return {
        "aggregatedOutput": None,
        "command": command,
        "commandActions": [{"command": command.split(" ", 2)[-1], "type": "unknown"}],
        "completedAtMs": 0,
        "cwd": "/WORKSPACE",
        "durationMs": 0,
        "exitCode": exit_code,
        "id": "call_cmd_1",
        "pluginId": None,
        "processId": "1",
        "scriptPath": None,
        "source": "unifiedExecStartup",
        "startedAtMs": 0,
        "status": status,
        "type": "commandExecution",
    }


def running(item: Mapping[str, Any]) -> Dict[str, Any]:
    return dict(item, status="inProgress", aggregatedOutput=None, exitCode=None, durationMs=None, completedAtMs=None)


def fold(
    events: List[Any],
    *,
    ended: str = "completed",
    clock: Optional[Callable[[], float]] = None,
    before: Callable[[StepFold], None] = lambda f: None,
) -> List[Write]:
    """The writes of one codex turn (started by its ``events``), as the agent
    makes them: every event booked, then folded; ``before`` runs first (an
    approval answered)."""
    books = TurnFold(TURN, keep_items=False)
    ids = itertools.count(1)
    steps = StepFold(step=1, model="gpt-fake", new_id=lambda: f"id-{next(ids)}", clock=clock)
    before(steps)
    out: List[Write] = []
    for event in events:
        books.book(event)
        out += steps.feed(event)
    books.book(TurnCompleted(TURN, "completed" if ended == "completed" else "interrupted"))
    return out + steps.finish(books, True, ended)


def prompt(writes: List[Write]) -> str:
    """The prompt the next step sends, for a log of these writes."""
    return serialize(derive_messages({"type": w.type, "data": w.data} for w in writes))


def result(writes: List[Write]) -> Dict[str, Any]:
    (data,) = [w.data for w in writes if w.type == "tool/result"]
    return data


# -- one test per end ------------------------------------------------------------------


def test_reasons_a_declined_command_says_who_declined_it():
    # approval_decline: codex completes the item `declined`, no output, no exit code.
    (started,) = recorded_items("approval_decline", "item/started")
    (declined,) = recorded_items("approval_decline", "item/completed")
    assert (declined["status"], declined["exitCode"], declined["aggregatedOutput"]) == ("declined", None, None)
    writes = fold(
        [ItemStarted(started), ItemCompleted(declined)],
        before=lambda f: f.approval("call_cmd_1", "decline", "handler"),
    )
    assert result(writes) == {
        "callId": "call_cmd_1",
        "content": [],
        "isError": True,
        "status": "declined",
        "approval": {"decision": "decline", "by": "handler"},
    }
    assert prompt(writes) == (
        "<assistant>\n"
        '[tool call: bash({"command":"/bin/bash -lc \'echo escalated-ran > /OUTSIDE/escalated.txt; echo done\'"})]\n'
        "</assistant>\n\n"
        "<tool-result-error>\n"
        "[declined by the user (approval: decline)]\n"
        "</tool-result-error>"
    )


def test_reasons_a_failed_command_says_its_exit_code():
    # cmd_fail: `echo about-to-fail; exit 3`.
    (started,) = recorded_items("cmd_fail", "item/started")
    (failed,) = recorded_items("cmd_fail", "item/completed")
    writes = fold([ItemStarted(started), ItemCompleted(failed)])
    assert (result(writes)["status"], result(writes)["exitCode"]) == ("failed", 3)
    assert prompt(writes).endswith("<tool-result-error>\n[exit code 3]\nabout-to-fail\n\n</tool-result-error>")


def test_reasons_a_failed_command_without_output_is_not_a_decline():
    # `exit 1`: the case that rendered exactly like a decline before.
    failed = observed("/bin/bash -lc 'exit 1'", "failed", 1)
    writes = fold([ItemStarted(running(failed)), ItemCompleted(failed)])
    assert result(writes) == {"callId": "call_cmd_1", "content": [], "isError": True, "status": "failed", "exitCode": 1}
    assert prompt(writes) == (
        "<assistant>\n"
        '[tool call: bash({"command":"/bin/bash -lc \'exit 1\'"})]\n'
        "</assistant>\n\n"
        "<tool-result-error>\n"
        "[exit code 1]\n"
        f"{NO_OUTPUT}\n"
        "</tool-result-error>"
    )


def test_reasons_a_command_still_running_when_the_turn_ended_timed_out():
    # interrupt_command's `sleep 30` started and never completed; here the turn
    # ended on its own (codex stopped waiting for it: its yield time was up and
    # the model answered).  The fold's clock read 100.0 at its start, 130.25 at
    # the end of the turn.
    (started,) = recorded_items("interrupt_command", "item/started")
    assert not recorded_items("interrupt_command", "item/completed")
    writes = fold([ItemStarted(started)], clock=iter([100.0, 130.25]).__next__)
    assert result(writes) == {
        "callId": "call_cmd_1",
        "content": [{"type": "text", "text": "the tool call did not finish (the turn ended first)"}],
        "isError": True,
        "status": "abandoned",
        "stepEnd": "completed",
        "elapsedMs": 30250,
    }
    assert prompt(writes) == (
        "<assistant>\n"
        '[tool call: bash({"command":"/bin/bash -lc \'sleep 30\'"})]\n'
        "</assistant>\n\n"
        "<tool-result-error>\n"
        "[timed out after 30.2 s: still running when the turn ended]\n"
        "the tool call did not finish (the turn ended first)\n"
        "</tool-result-error>"
    )


def test_reasons_a_command_that_printed_nothing_says_no_output():
    # `true`: completed, exit code 0, aggregatedOutput null.
    quiet = observed("/bin/bash -lc true", "completed", 0)
    writes = fold([ItemStarted(running(quiet)), ItemCompleted(quiet)])
    assert result(writes) == {
        "callId": "call_cmd_1",
        "content": [],
        "isError": False,
        "status": "completed",
        "exitCode": 0,
    }
    assert prompt(writes) == (
        "<assistant>\n"
        '[tool call: bash({"command":"/bin/bash -lc true"})]\n'
        "</assistant>\n\n"
        "<tool-result>\n"
        f"{NO_OUTPUT}\n"
        "</tool-result>"
    )


def test_reasons_the_four_ends_are_four_different_texts():
    sections = {
        render_section(m)
        for m in derive_messages(
            {"type": "tool/result", "data": data}
            for data in (
                {
                    "status": "declined",
                    "isError": True,
                    "content": [],
                    "approval": {"decision": "decline", "by": "handler"},
                },
                {"status": "failed", "isError": True, "content": [], "exitCode": 1},
                {"status": "abandoned", "isError": True, "content": [], "stepEnd": "completed", "elapsedMs": 1000},
                {"status": "completed", "isError": False, "content": [], "exitCode": 0},
            )
        )
    }
    assert len(sections) == 4


# -- the note, line by line ------------------------------------------------------------


@pytest.mark.parametrize(
    "approval, note",
    [
        ({"decision": "decline", "by": "handler"}, "declined by the user (approval: decline)"),
        ({"decision": "cancel", "by": "handler"}, "declined by the user (approval: cancel)"),
        ({"decision": "decline", "by": "default"}, "declined by default: no one was asked (approval: decline)"),
        ({"decision": "decline", "by": "timeout"}, "declined: no answer in time (approval: decline)"),
        ({"decision": "decline", "by": "error"}, "declined: the approval handler failed (approval: decline)"),
        (
            {"decision": "decline", "by": "close"},
            "declined: the client closed before anyone answered (approval: decline)",
        ),
        ({"decision": "decline", "by": "someone-new"}, "declined (someone-new) (approval: decline)"),
        ({"decision": "decline"}, "declined (approval: decline)"),
        ({"by": "handler"}, "declined by the user"),
        ({}, "declined"),
        (None, "declined"),  # an older log, or a decline codexmini did not answer
        ("decline", "declined"),  # not an object: a hand-written log
    ],
)
def test_reasons_note_of_a_declined_call(approval, note):
    data: Dict[str, Any] = {"status": "declined"}
    if approval is not None:
        data["approval"] = approval
    assert result_note(data) == note


@pytest.mark.parametrize(
    "more, note",
    [
        ({"stepEnd": "completed", "elapsedMs": 500}, "timed out after 0.5 s: still running when the turn ended"),
        ({"stepEnd": "aborted", "elapsedMs": 12000}, "interrupted after 12.0 s: the turn was cancelled"),
        ({"stepEnd": "blocked", "elapsedMs": 0}, "interrupted after 0.0 s: an approval was answered cancel"),
        ({"stepEnd": "error", "elapsedMs": 61000}, "cut short after 61.0 s: the turn ended in an error"),
        ({"stepEnd": "completed"}, "timed out: still running when the turn ended"),  # the fold had no clock
        ({"stepEnd": "segment", "elapsedMs": 1500}, "did not finish after 1.5 s"),  # a reason of no abandoned tool
        ({"elapsedMs": 1500}, "did not finish after 1.5 s"),
        ({"elapsedMs": 1.5}, None),  # not an integer: not shown
        ({"stepEnd": 3}, None),
        ({}, None),  # an older log: its text says it did not finish
    ],
)
def test_reasons_note_of_an_abandoned_call(more, note):
    assert result_note({"status": "abandoned", **more}) == note


@pytest.mark.parametrize(
    "data, note",
    [
        ({"status": "failed", "exitCode": 3}, "exit code 3"),
        ({"status": "completed", "exitCode": 2}, "exit code 2"),  # a non-zero code whatever the status
        ({"status": "failed", "exitCode": -9}, "exit code -9"),
        ({"status": "failed"}, "failed"),  # failed with no exit code (codex refused a malformed approval answer)
        ({"status": "failed", "exitCode": 0}, "failed"),
        ({"status": "failed", "exitCode": True}, "failed"),  # not an integer
        ({"status": "completed", "exitCode": 0}, None),
        ({"status": "completed"}, None),
        ({}, None),
    ],
)
def test_reasons_note_of_a_call_that_ran(data, note):
    assert result_note(data) == note


# -- the body --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data, body",
    [
        ({"status": "completed", "content": []}, [NO_OUTPUT]),
        ({"status": "completed", "content": [{"type": "text", "text": ""}]}, [NO_OUTPUT]),
        ({"status": "failed", "content": [], "exitCode": 1}, ["[exit code 1]", NO_OUTPUT]),
        ({"status": "completed", "content": [{"type": "text", "text": "hi"}]}, ["hi"]),
        ({"status": "completed", "content": [{"type": "image", "path": "/p.png"}]}, ["[image: /p.png]"]),
        # Did not run: the note alone, no "(no output)".
        ({"status": "declined", "content": []}, ["[declined]"]),
        # An older or hand-written result without a status: as before.
        ({"content": []}, [NO_CONTENT]),
        ({}, [NO_CONTENT]),
    ],
)
def test_reasons_body_of_a_result(data, body):
    (message,) = derive_messages([{"type": "tool/result", "data": data}])
    assert render_section(message).split("\n")[1:-1] == body
