"""The CLI's human output (``codexmini._render``): a live transcript of a turn.

:class:`EventPrinter` turns events into lines (agent text as it streams,
reasoning, each command when it starts and ends, patched files, MCP calls,
retries, a failed turn; an abandoned stream marked as such); :class:`Console`
colours only on a TTY and never with ``NO_COLOR``, and starts a new line
when one is needed.  Pure: every test writes to a ``StringIO``.  The CLI
that uses them is tested in tests/test_cli.py.
"""

from __future__ import annotations

import io

from codexmini._events import (
    AgentMessageDelta,
    ItemCompleted,
    ItemStarted,
    MessageStreamEnd,
    ReasoningSummaryDelta,
    RetryingError,
    TurnCompleted,
)
from codexmini._render import Console, EventPrinter, command_of, use_color


def test_render_transcript_lines():
    out = io.StringIO()
    t = EventPrinter(Console(out, color=False))
    cmd = {
        "type": "commandExecution",
        "id": "c",
        "command": "/bin/bash -lc 'ls'",
        "commandActions": [{"type": "unknown", "command": "ls"}],
    }
    t(ReasoningSummaryDelta("r", "thinking"))
    t(AgentMessageDelta("m", "Hi"))
    t(ItemStarted(cmd))
    t(ItemCompleted({**cmd, "status": "completed", "exitCode": 0}))
    t(ItemCompleted({**cmd, "status": "failed", "exitCode": 3}))
    t(ItemCompleted({**cmd, "status": "declined", "exitCode": None}))
    t(ItemCompleted({**cmd, "status": "failed", "exitCode": None}))
    t(
        ItemCompleted(
            {
                "type": "fileChange",
                "id": "p",
                "status": "completed",
                "changes": [{"path": "a.txt", "kind": {"type": "add"}}],
            }
        )
    )
    t(ItemCompleted({"type": "mcpToolCall", "id": "x", "server": "probe", "tool": "echo", "status": "completed"}))
    t(ItemCompleted({"type": "agentMessage", "id": "m", "text": "Hi"}))
    t(RetryingError("Reconnecting... 1/5"))
    t(TurnCompleted("t", "failed", {"message": "boom"}))
    assert out.getvalue() == (
        "thinking\nHi\n$ ls\n  → exit 0\n  → exit 3\n  ✗ declined\n  → failed\n"
        "  patched a.txt (add, completed)\n  [probe/echo] completed\nretrying: Reconnecting... 1/5\ncodex turn failed: boom\n"
    )


def test_render_colour_only_on_a_tty_and_never_with_no_color():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    assert use_color(Tty(), {}) is True
    assert use_color(Tty(), {"NO_COLOR": "1"}) is False
    assert use_color(io.StringIO(), {}) is False
    console = Console(Tty(), color=True)
    console.write("x", "red", "bold")
    console.write("")
    assert console.stream.getvalue() == "\x1b[31;1mx\x1b[0m"
    assert (
        command_of({"command": "/bin/bash -lc 'a; b'", "commandActions": [{"command": "a"}, {"command": "b"}]})
        == "/bin/bash -lc 'a; b'"
    )


def test_render_line_starts_a_new_line_when_needed():
    console = Console(io.StringIO(), color=False)
    console.write("partial")
    console.line("next")
    console.line("again")
    assert console.stream.getvalue() == "partial\nnext\nagain\n"


def test_render_an_abandoned_stream_is_marked_and_a_committed_one_is_not():
    out = io.StringIO()
    t = EventPrinter(Console(out, color=False))
    t(AgentMessageDelta("m", "Hel"))
    t(MessageStreamEnd("msg-1", "m", committed=False))
    t(AgentMessageDelta("m2", "Hello"))
    t(MessageStreamEnd("msg-2", "m2", committed=True))
    assert out.getvalue() == "Hel\n  [the text above was abandoned: it is not in the session log]\nHello"
