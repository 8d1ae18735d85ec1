"""Bounded prompts (issue 30), the pure part: long tool outputs cut in the
prompt (:func:`codexmini._prompt.cut_output`), the ``session/compaction``
event projected as a ``summary`` section that replaces the text before it,
the :class:`~codexmini._prompt.Transcript` that renders both incrementally,
and the summary call's input.  Plain events, no I/O (the agent's side:
``tests/test_agent_compaction.py``)."""

from __future__ import annotations

from typing import Any, Dict, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codexmini._prompt import (
    COMPACTION,
    COMPACTION_INSTRUCTION,
    NO_OUTPUT,
    TOOL_OUTPUT_BUDGET,
    Transcript,
    _cut,
    compaction_note,
    compaction_request,
    cut_output,
    derive_messages,
    is_compaction,
    serialize,
    text_block,
)


def ev(seq: int, type_: str, data: Dict[str, Any], turn: Optional[int] = 1, step: Optional[int] = 1) -> Dict[str, Any]:
    return {"v": 2, "seq": seq, "ts": 0.0, "type": type_, "turn": turn, "step": step, "data": data}


def user(seq: int, text: str) -> Dict[str, Any]:
    return ev(seq, "user/message", {"id": f"u{seq}", "content": [text_block(text)], "source": {"kind": "user"}})


def result(seq: int, text: str, **extra: Any) -> Dict[str, Any]:
    data = {"callId": "c", "content": [text_block(text)] if text else [], "isError": False, "status": "completed"}
    return ev(seq, "tool/result", {**data, **extra})


def compaction(seq: int, summary: Any, through: Optional[int] = None) -> Dict[str, Any]:
    data = {"summary": summary, "fromSeq": 0, "throughSeq": seq - 1 if through is None else through}
    return ev(seq, COMPACTION, {**data, "replacedChars": 10}, step=None)


# -- the cut --------------------------------------------------------------------------


def test_cut_output_keeps_what_fits_and_cuts_the_middle_of_the_rest():
    assert cut_output("abcdef", 6, 3) == "abcdef"
    cut = cut_output("0123456789", 4, 17)
    # head budget//2, tail the rest, between them what was left out and where it all is
    assert cut == (
        "01\n[... 6 of 10 characters left out here; the whole output is in the session log, event seq 17 ...]\n89"
    )
    assert cut_output("0123456789", 1, 5).endswith("...]\n9") and cut_output("0123456789", 1, 5).startswith("\n[")


def test_tool_results_are_cut_in_the_prompt_never_elsewhere():
    big = "x" * 50
    events = [user(0, big), result(1, big), ev(2, "assistant/message", {"content": [text_block(big)]})]
    whole = derive_messages(events)
    cut = derive_messages(events, output_budget=10)
    assert whole[1].content == (text_block(big),)
    assert cut[0] == whole[0] and cut[2] == whole[2]  # user and assistant text is not an output
    (text,) = [b["text"] for b in cut[1].content]
    assert text.startswith("xxxxx\n[... 40 of 50 characters left out here") and "event seq 1" in text
    assert events[1]["data"]["content"][0]["text"] == big  # the event itself is untouched


def test_the_format_names_the_event_and_the_default_budget():
    assert COMPACTION == "session/compaction"  # docs/session-log.md, the event types
    assert TOOL_OUTPUT_BUDGET == 16_000  # ... and the prompt


def test_an_output_as_long_as_its_budget_is_not_cut_nor_copied():
    data = {"callId": "c", "content": [text_block("x" * 8), {"type": "text"}], "status": "completed"}
    assert _cut(data, 8, 1) is data
    assert _cut({"content": [{"type": "text"}]}, 1, 1) == {"content": [{"type": "text"}]}
    cut = _cut({"content": [{"type": "text"}, text_block("yy")]}, 1, 1)
    assert cut["content"][0] == {"type": "text", "text": ""}  # a text block without text is an empty one


def test_the_cut_leaves_short_outputs_notes_and_other_blocks_alone():
    short = result(3, "fine")
    assert derive_messages([short], 10) == derive_messages([short])
    failed = result(4, "y" * 30, status="failed", exitCode=2)
    (message,) = derive_messages([failed], 10)
    assert message.content[0] == text_block("[exit code 2]")  # the note is short: kept
    assert "20 of 30 characters left out" in message.content[1]["text"]
    odd = ev(5, "tool/result", {"callId": "c", "content": [{"type": "image", "path": "p", "text": "z" * 30}]})
    assert derive_messages([odd], 10)[0].content == ({"type": "image", "path": "p", "text": "z" * 30},)
    empty = result(6, "")
    assert derive_messages([empty], 1)[0].content == (text_block(NO_OUTPUT),)


# -- the summary ------------------------------------------------------------------------


def test_a_compaction_is_a_summary_section_that_replaces_what_came_before():
    events = [user(0, "first"), result(1, "out"), compaction(2, "S1"), user(3, "second")]
    text = serialize(derive_messages(events))
    assert text == (f"<summary>\n{compaction_note({'throughSeq': 1})}\nS1\n</summary>\n\n<user>\nsecond\n</user>")
    assert compaction_note({"throughSeq": 1}) == (
        "[a summary of the session up to event seq 1; the whole record is in the session log]"
    )
    # a later compaction replaces the earlier one too
    more = events + [compaction(4, "S2"), user(5, "third")]
    assert serialize(derive_messages(more)).startswith("<summary>\n[a summary of the session up to event seq 3;")
    assert "S1" not in serialize(derive_messages(more))


def test_a_compaction_without_a_string_summary_counts_as_absent():
    events = [user(0, "first"), compaction(1, None), user(2, "second")]
    assert serialize(derive_messages(events)) == "<user>\nfirst\n</user>\n\n<user>\nsecond\n</user>"
    assert not is_compaction(events[1]) and is_compaction(compaction(1, ""))
    assert not is_compaction({"type": COMPACTION, "data": []}) and not is_compaction(user(0, "x"))


@pytest.mark.parametrize("cut", range(0, 8))
def test_the_transcript_is_serialize_however_the_log_is_split(cut):
    events = [
        user(0, "a"),
        result(1, "o" * 40),
        compaction(2, "S1"),
        user(3, "b"),
        result(4, "p" * 40),
        compaction(5, "S2"),
        user(6, "c"),
    ]
    transcript = Transcript(output_budget=12)
    transcript.extend(events[:cut]).extend(events[cut:])
    assert transcript.text() == serialize(derive_messages(events, 12))
    assert len(transcript) == 2


#: One event of a random log: (kind, text length).
_EVENT = st.tuples(st.sampled_from(["user", "result", "compaction", "bad-compaction", "knob"]), st.integers(0, 60))


@settings(max_examples=200, deadline=None)
@given(st.lists(_EVENT, max_size=30), st.integers(1, 40), st.data())
def test_the_transcript_is_serialize_for_any_log_budget_and_split(kinds, budget, data):
    makers = {
        "user": lambda seq, n: user(seq, "u" * n),
        "result": lambda seq, n: result(seq, "r" * n),
        "compaction": lambda seq, n: compaction(seq, "s" * n),
        "bad-compaction": lambda seq, n: compaction(seq, n),
        "knob": lambda seq, n: ev(seq, "sandbox/mode", {"mode": "read-only"}, None, None),
    }
    events = [makers[kind](seq, n) for seq, (kind, n) in enumerate(kinds)]
    cuts = sorted(data.draw(st.lists(st.integers(0, len(events)), max_size=3)))
    transcript = Transcript(output_budget=budget)
    for start, stop in zip([0, *cuts], [*cuts, len(events)]):
        transcript.extend(events[start:stop])
    text = transcript.text()
    assert text == serialize(derive_messages(events, budget))
    # it starts at the last compaction that counts, and no output in it is longer than the budget
    counted = [e for e in events if is_compaction(e)]
    if counted:
        assert text.startswith(f"<summary>\n{compaction_note(counted[-1]['data'])}\n")
    for e in events:
        if e["type"] == "tool/result" and e["data"]["content"] and e["seq"] > (counted[-1]["seq"] if counted else -1):
            assert cut_output(e["data"]["content"][0]["text"], budget, e["seq"]) in text


def test_the_transcript_measures_the_next_prompt_and_knows_when_a_compaction_would_help():
    transcript = Transcript()
    assert transcript.size_with([]) == 0 and not transcript.compactable()
    message = {"id": "u", "content": [text_block("hello")], "source": {"kind": "user"}}
    assert transcript.size_with([message, message]) == len("<user>\nhello\n</user>\n\n<user>\nhello\n</user>")
    transcript.extend([user(0, "a")])
    assert transcript.size_with([message]) == len(transcript.text()) + len("\n\n<user>\nhello\n</user>")
    assert transcript.compactable()
    transcript.extend([compaction(1, "S")])
    assert not transcript.compactable()  # a summary alone: nothing to replace
    transcript.extend([user(2, "b")])
    assert transcript.compactable()


def test_the_summary_call_asks_for_a_summary_of_the_prompt_it_replaces():
    assert compaction_request("<user>\nhi\n</user>") == f"{COMPACTION_INSTRUCTION}\n\n<user>\nhi\n</user>"
    assert compaction_request("<user>\nhi\n</user>", 18) == f"{COMPACTION_INSTRUCTION}\n\n<user>\nhi\n</user>"
    # longer than the budget: its head (the previous summary) and tail (the latest work) are kept
    assert compaction_request("<summary>S</summary>, then the rest", 12) == (
        f"{COMPACTION_INSTRUCTION}\n\n<summa\n[... 23 of 35 characters left out here; the whole session is in "
        "the session log ...]\ne rest"
    )
    assert "Do not run any command" in COMPACTION_INSTRUCTION
