from __future__ import annotations

import json
import tracemalloc

import pytest

from codexmini._prompt import (
    JOIN_PIECES,
    NO_CONTENT,
    Message,
    Transcript,
    derive_messages,
    image_block,
    reasoning_block,
    render_section,
    serialize,
    text_block,
    tool_call_block,
)


def ev(seq, type_, data, turn=1, step=1):
    return {"v": 1, "seq": seq, "ts": 0.0, "type": type_, "turn": turn, "step": step, "data": data}


def session_events():
    """A two-turn session in the log's order (docs/session-log.md), with every event type the agent writes."""
    raw = [
        (
            "session/header",
            {
                "reason": "initial",
                "provider": "codex",
                "model": "m",
                "codexVersion": "0.149.1",
                "codexminiVersion": "0.1.0",
            },
        ),
        ("approval/policy", {"policy": "ask"}),
        ("turn/start", {}),
        ("step/start", {}),
        (
            "user/message",
            {
                "id": "u1",
                "content": [text_block("list the files"), image_block("/tmp/shot.png")],
                "source": {"kind": "user"},
            },
        ),
        (
            "assistant/message",
            {
                "id": "a1",
                "content": [
                    reasoning_block("I should run ls"),
                    text_block("Listing."),
                    tool_call_block("c1", "bash", '{"command":"ls"}'),
                ],
                "source": {"provider": "codex", "model": "m"},
            },
        ),
        ("tool/call", {"callId": "c1", "name": "bash", "arguments": '{"command":"ls"}', "kind": "commandExecution"}),
        (
            "tool/result",
            {"callId": "c1", "content": [text_block("a.txt\nb.txt")], "isError": False, "status": "completed"},
        ),
        ("step/end", {"reason": "tool"}),
        ("step/start", {}),
        (
            "assistant/message",
            {
                "id": "a2",
                "content": [text_block("Two files.")],
                "source": {"provider": "codex", "model": "m"},
                "usage": {"inputTokens": 1},
            },
        ),
        ("step/end", {"reason": "completed"}),
        ("turn/end", {"reason": "completed"}),
        ("turn/start", {}),
        ("step/start", {}),
        ("user/message", {"id": "u2", "content": [text_block("cat c.txt")], "source": {"kind": "user"}}),
        (
            "assistant/message",
            {
                "id": "a3",
                "content": [tool_call_block("c2", "bash", '{"command":"cat c.txt"}')],
                "source": {"provider": "codex", "model": "m"},
            },
        ),
        (
            "tool/call",
            {"callId": "c2", "name": "bash", "arguments": '{"command":"cat c.txt"}', "kind": "commandExecution"},
        ),
        ("tool/result", {"callId": "c2", "content": [], "isError": True, "status": "failed"}),
        ("approval/decision", {"method": "m", "itemId": "i", "decision": "decline", "by": "default"}),
        (
            "assistant/message",
            {"id": "a4", "content": [reasoning_block("hmm")], "source": {"provider": "codex", "model": "m"}},
        ),
        ("agent/error", {"message": "boom", "code": "UNKNOWN"}),
        ("turn/end", {"reason": "error", "error": {"message": "boom", "code": "UNKNOWN"}}),
    ]
    return [ev(i, t, d) for i, (t, d) in enumerate(raw)]


EXPECTED = """\
<user>
list the files
[image: /tmp/shot.png]
</user>

<assistant>
Listing.
[tool call: bash({"command":"ls"})]
</assistant>

<tool-result>
a.txt
b.txt
</tool-result>

<assistant>
Two files.
</assistant>

<user>
cat c.txt
</user>

<assistant>
[tool call: bash({"command":"cat c.txt"})]
</assistant>

<tool-result-error>
[failed]
(no output)
</tool-result-error>

<assistant>
(no content)
</assistant>"""


def test_blocks_have_the_spec_shapes():
    assert text_block("t") == {"type": "text", "text": "t"}
    assert reasoning_block("r") == {"type": "reasoning", "text": "r"}
    assert tool_call_block("i", "n", "{}") == {"type": "tool-call", "id": "i", "name": "n", "arguments": "{}"}
    assert image_block("/p") == {"type": "image", "path": "/p"}


def test_derive_messages_projects_only_messages_and_results():
    msgs = derive_messages(session_events())
    assert [m.role for m in msgs] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    user, assistant, tool = msgs[:3]
    assert user.source == {"kind": "user"}
    assert user.content == (text_block("list the files"), image_block("/tmp/shot.png"))
    assert assistant.source == {"provider": "codex", "model": "m"}
    assert assistant.content[2] == tool_call_block("c1", "bash", '{"command":"ls"}')
    assert (tool.call_id, tool.is_error, tool.source) == ("c1", False, None)
    assert msgs[6].is_error is True


def test_derive_messages_tolerates_missing_data():
    msgs = derive_messages([{"type": "user/message"}, {"type": "tool/result", "data": {}}, {}])
    assert msgs == [Message("user", ()), Message("tool", ())]


def test_serialize_full_session_exactly():
    assert serialize(derive_messages(session_events())) == EXPECTED


def test_serialize_empty_conversation_is_empty_text():
    assert serialize([]) == ""


@pytest.mark.parametrize(
    "message, section",
    [
        (Message("user", (text_block("hi"),)), "<user>\nhi\n</user>"),
        (Message("user", ()), "<user>\n(no content)\n</user>"),
        (Message("user", (text_block(""),)), "<user>\n(no content)\n</user>"),
        (Message("assistant", (reasoning_block("secret"),)), "<assistant>\n(no content)\n</assistant>"),
        (
            Message("assistant", (reasoning_block("x"), text_block("a"), text_block("b"))),
            "<assistant>\na\nb\n</assistant>",
        ),
        (
            Message("assistant", (tool_call_block("c", "apply_patch", '{"x": [1, 2]}'),)),
            '<assistant>\n[tool call: apply_patch({"x": [1, 2]})]\n</assistant>',
        ),
        (Message("user", (image_block("a b.png"),)), "<user>\n[image: a b.png]\n</user>"),
        (Message("tool", (text_block("ok"),), call_id="c"), "<tool-result>\nok\n</tool-result>"),
        (
            Message("tool", (text_block("no"),), call_id="c", is_error=True),
            "<tool-result-error>\nno\n</tool-result-error>",
        ),
        (Message("tool", (), is_error=True), "<tool-result-error>\n(no content)\n</tool-result-error>"),
        (Message("user", ({"type": "audio", "data": "…"}, text_block("x"))), "<user>\nx\n</user>"),
    ],
)
def test_render_section_every_block_kind(message, section):
    assert render_section(message) == section


def test_render_section_arguments_are_the_stored_text_verbatim():
    # Not re-encoded: whitespace and key order are what the log holds.
    args = '{ "b":1,  "a":"é" }'
    assert render_section(Message("assistant", (tool_call_block("c", "f", args),))) == (
        f"<assistant>\n[tool call: f({args})]\n</assistant>"
    )


def test_render_section_non_text_arguments_shown_as_json():
    block = {"type": "tool-call", "id": "c", "name": "f", "arguments": {"a": "é"}}
    assert render_section(Message("assistant", (block,))) == ('<assistant>\n[tool call: f({"a": "é"})]\n</assistant>')


def test_serialize_sections_joined_by_blank_line():
    msgs = [Message("user", (text_block("a"),)), Message("assistant", (text_block("b"),))]
    assert serialize(msgs) == "<user>\na\n</user>\n\n<assistant>\nb\n</assistant>"
    assert NO_CONTENT == "(no content)"


def test_transcript_equals_serialize_on_every_prefix():
    events = session_events()
    for cut in range(len(events) + 1):
        prefix = events[:cut]
        expected = serialize(derive_messages(prefix))
        assert Transcript().extend(prefix).text() == expected
        # The same prefix, fed in uneven chunks, as a live log grows.
        t = Transcript()
        i, size = 0, 1
        while i < cut:
            t.extend(prefix[i : i + size])
            assert t.text() == serialize(derive_messages(prefix[: i + size]))
            i, size = i + size, size % 3 + 1
        assert t.text() == expected
        assert len(t) == len(derive_messages(prefix))


def test_transcript_extend_returns_self_and_counts_its_sections():
    t = Transcript()
    assert t.extend([]) is t
    assert t.text() == "" and len(t) == 0
    t.extend(session_events()[:5])
    assert len(t) == 1


class CountingTranscript(Transcript):
    def __init__(self):
        super().__init__()
        self.renders = 0

    def render(self, message):
        self.renders += 1
        return super().render(message)


def test_transcript_renders_each_message_once():
    # Linear cost: appending N messages one at a time, reading the text after
    # each append, renders N sections -- not 1 + 2 + ... + N.
    t = CountingTranscript()
    n = 500
    for i in range(n):
        t.extend([ev(i, "user/message", {"id": str(i), "content": [text_block(str(i))], "source": {"kind": "user"}})])
        t.text()
        t.text()
    assert t.renders == n
    assert t.text() == serialize(
        derive_messages([ev(i, "user/message", {"content": [text_block(str(i))]}) for i in range(n)])
    )


def test_transcript_non_message_events_render_nothing():
    t = CountingTranscript()
    t.extend([ev(0, "turn/start", {}), ev(1, "tool/call", {"callId": "c"})])
    assert (t.renders, t.text()) == (0, "")


def test_serialize_is_pure_function_of_log_text():
    # Round-tripping the events through JSON (as the log does) changes nothing.
    events = session_events()
    again = [json.loads(json.dumps(e)) for e in events]
    assert serialize(derive_messages(again)) == serialize(derive_messages(events))


def test_message_is_a_frozen_value():
    # Derived messages are a projection of the log: nothing may edit one after the fact.
    message = derive_messages(session_events())[0]
    with pytest.raises(AttributeError):
        message.role = "assistant"  # type: ignore[misc]


@pytest.mark.parametrize(
    "block, shown",
    [
        ({"type": "text"}, NO_CONTENT),
        ({"type": "tool-call", "id": "c"}, "[tool call: ()]"),
        ({"type": "tool-call", "id": "c", "name": "bash"}, "[tool call: bash()]"),
        ({"type": "image"}, "[image: ]"),
    ],
    ids=["text", "tool-call", "tool-call-without-arguments", "image"],
)
def test_render_section_a_block_missing_a_field_shows_it_empty(block, shown):
    # A hand-built or truncated block: the model sees the field as empty, not a placeholder of ours.
    assert render_section(Message("assistant", (block,))) == f"<assistant>\n{shown}\n</assistant>"


def test_transcript_holds_its_text_once():
    # The events are read from the log file and dropped once rendered: the
    # transcript keeps the prompt's text and nothing else (no pieces, no
    # second copy), so a long session costs its prompt's memory once.
    tracemalloc.start()
    try:
        events = [ev(i, "user/message", {"content": [text_block(f"{i:06d}" + "x" * 20_000)]}) for i in range(200)]
        t = Transcript().extend(events[:70]).extend(events[70:])
        size = len(t.text())  # UCS-1: a byte a character
        del events
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert size > 4_000_000
    assert size <= held < size * 1.05
    assert t.text() == serialize(
        derive_messages(
            [ev(i, "user/message", {"content": [text_block(f"{i:06d}" + "x" * 20_000)]}) for i in range(200)]
        )
    )


def test_transcript_joins_a_block_of_messages_not_each_one():
    # Three messages are far fewer pieces than JOIN_PIECES: nothing is joined
    # until text() asks (a join per message would copy more, and more often).
    events = [ev(i, "user/message", {"content": [text_block(str(i))]}) for i in range(3)]
    t = Transcript().extend(events)
    assert t._text == "" and len(t._pending) == 3 * 4 + 2  # 4 pieces a section, 2 separators
    assert t.text() == serialize(derive_messages(events)) and t._pending == []


def test_transcript_joins_its_pieces_a_block_at_a_time():
    # More than JOIN_PIECES pending pieces are joined during extend(), so a
    # whole log fed at once never holds all its pieces.
    t = CountingTranscript()
    events = [ev(i, "user/message", {"content": [text_block(str(i))]}) for i in range(JOIN_PIECES)]
    t.extend(events)
    assert len(t._pending) < JOIN_PIECES and t._text  # joined on the way
    assert t.text() == serialize(derive_messages(events)) and t._pending == []


def test_two_empty_blocks_are_a_body_of_one_newline():
    # As "\n".join(["", ""]): only an empty body, or a single empty text, is "(no content)".
    message = Message("user", (text_block(""), text_block("")))
    assert render_section(message) == "<user>\n\n\n</user>"
