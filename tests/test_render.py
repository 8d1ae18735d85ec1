"""The CLI's human output (``codexmini._render``): a live transcript of a turn.

:class:`EventPrinter` turns events into lines (agent text as it streams,
reasoning, each command when it starts and ends, patched files, MCP calls,
retries, a failed turn; an abandoned stream marked as such); :class:`Console`
colours only on a TTY and never with ``NO_COLOR``, and starts a new line
when one is needed.  Pure: every test writes to a ``StringIO``.  The CLI
that uses them is tested in tests/test_cli.py.
"""

from __future__ import annotations

import asyncio
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
from codexmini._render import Console, EventPrinter, Ticker, command_of, use_color


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
    t(RetryingError("Reconnecting... 2/5", "Connection failed: error sending request"))
    t(TurnCompleted("t", "failed", {"message": "boom"}))
    assert out.getvalue() == (
        "thinking\nHi\n$ ls\n  → exit 0\n  → exit 3\n  ✗ declined\n  → failed\n"
        "  patched a.txt (add, completed)\n  [probe/echo] completed\n"
        "codex is retrying the model: Reconnecting... 1/5\n"
        "codex is retrying the model: Reconnecting... 2/5 (Connection failed: error sending request)\n"
        "codex turn failed: boom\n"
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


class Tty(io.StringIO):
    def isatty(self):
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_render_status_line_on_a_terminal_is_replaced_by_what_comes_next():
    console = Console(Tty(), color=False)
    console.status("… 1s")
    console.status("… 2s")
    console.write("text\n")
    console.clear_status()  # nothing shown: nothing to clear
    console.write("more")
    console.status("… 3s")  # mid-line: no status
    assert console.stream.getvalue() == "… 1s\r\x1b[K… 2s\r\x1b[Ktext\nmore"


def test_render_status_line_never_reaches_a_pipe_or_a_file():
    console = Console(io.StringIO(), color=False)
    console.status("… 1s")
    console.clear_status()
    assert console.stream.getvalue() == ""


async def test_render_ticker_shows_the_time_elapsed_while_nothing_is_written():
    clock = Clock()
    console = Console(Tty(), color=False, clock=clock)
    ticker = Ticker(console, interval=0.001)
    clock.now += 7
    while "… 7s" not in console.stream.getvalue():
        await asyncio.sleep(0.001)
    console.write("x\n")  # something streamed: the status goes, no tick while it is recent
    shown = console.stream.getvalue()
    for _ in range(5):
        await asyncio.sleep(0.002)
    assert console.stream.getvalue() == shown
    clock.now += 5
    while "… 12s" not in console.stream.getvalue():
        await asyncio.sleep(0.001)
    ticker.stop()
    assert console.stream.getvalue().endswith("… 12s\r\x1b[K")
