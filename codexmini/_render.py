"""Human output for the CLI: a live transcript of a turn, coloured only on a TTY.

:class:`Console` writes to one stream and decides once whether to colour
(a terminal, and ``NO_COLOR`` unset, https://no-color.org).  :class:`EventPrinter`
turns codexmini events into lines as they arrive: agent text streamed as is,
reasoning dimmed, each tool call when it starts (``$ command``) and when it
ends (exit status, patched files), codex's retries with their reason.
:class:`Ticker` shows, on a terminal, the time elapsed while nothing streams.
"""

from __future__ import annotations

import asyncio
import time
from typing import IO, Any, Callable, Mapping, Optional

from ._events import (
    AgentMessageDelta,
    Event,
    ItemCompleted,
    ItemStarted,
    MessageStreamEnd,
    ReasoningSummaryDelta,
    ReasoningTextDelta,
    RetryingError,
    TurnCompleted,
)

_STYLES = {"dim": "2", "bold": "1", "red": "31", "green": "32", "yellow": "33", "cyan": "36"}


def isatty(stream: IO[str]) -> bool:
    check = getattr(stream, "isatty", None)
    return bool(check and check())


def use_color(stream: IO[str], env: Mapping[str, str]) -> bool:
    """Colours only on a terminal, and never with ``NO_COLOR`` set."""
    return isatty(stream) and not env.get("NO_COLOR")


class Console:
    def __init__(self, stream: IO[str], color: bool, clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream
        self.color = color
        #: A terminal: a status line may be shown and replaced.
        self.tty = isatty(stream)
        self.at_line_start = True
        self.clock = clock
        #: When something was last written (a status line aside).
        self.last_write = clock()
        self._status = False

    def style(self, text: str, *styles: str) -> str:
        if not self.color or not styles or not text:
            return text
        codes = ";".join(_STYLES[s] for s in styles)
        return f"\x1b[{codes}m{text}\x1b[0m"

    def write(self, text: str, *styles: str) -> None:
        if not text:
            return
        if self._status:  # the status line goes; what comes takes its place
            self.stream.write("\r\x1b[K")
            self._status = False
        self.stream.write(self.style(text, *styles))
        self.stream.flush()
        self.at_line_start = text.endswith("\n")
        self.last_write = self.clock()

    def status(self, text: str) -> None:
        """On a terminal, at the start of a line: ``text`` on a line the next
        write replaces.  Elsewhere nothing (a pipe or a file keeps no status)."""
        if self.tty and self.at_line_start:
            self.stream.write(("\r\x1b[K" if self._status else "") + self.style(text, "dim"))
            self.stream.flush()
            self._status = True

    def clear_status(self) -> None:
        if self._status:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._status = False

    def line(self, text: str = "", *styles: str) -> None:
        """Write ``text`` on a line of its own."""
        if not self.at_line_start:
            self.write("\n")
        self.write(text + "\n", *styles)


def command_of(item: Mapping[str, Any]) -> str:
    """The command as the model wrote it (codex wraps it in ``bash -lc``)."""
    actions = item.get("commandActions") or []
    if len(actions) == 1 and isinstance(actions[0], Mapping) and actions[0].get("command"):
        return str(actions[0]["command"])
    return str(item.get("command") or "")


class EventPrinter:
    """Renders one turn's events on a :class:`Console`."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._mode: Optional[str] = None  # "text" or "reasoning": what the current line holds

    def __call__(self, event: Event) -> None:
        c = self.console
        if isinstance(event, AgentMessageDelta):
            self._switch("text")
            c.write(event.delta)
        elif isinstance(event, (ReasoningSummaryDelta, ReasoningTextDelta)):
            self._switch("reasoning")
            c.write(event.delta, "dim")
        elif isinstance(event, ItemStarted) and event.item_type == "commandExecution":
            self._switch(None)
            c.line(f"$ {command_of(event.item)}", "cyan")
        elif isinstance(event, ItemCompleted):
            self._completed(event.item)
        elif isinstance(event, MessageStreamEnd) and not event.committed:
            # What streamed above never reached the log (a cut stream codex
            # retried, an interrupt): say so, so it is not read as the answer.
            self._switch(None)
            c.line("  [the text above was abandoned: it is not in the session log]", "dim", "yellow")
        elif isinstance(event, RetryingError):
            self._switch(None)
            reason = f"{event.message} ({event.details})" if event.details else event.message
            c.line(f"codex is retrying the model: {reason}", "yellow")
        elif isinstance(event, TurnCompleted):
            self._switch(None)
            if event.status == "failed":
                c.line(f"codex turn failed: {event.error_message}", "red")

    def _switch(self, mode: Optional[str]) -> None:
        if mode != self._mode and not self.console.at_line_start:
            self.console.write("\n")
        self._mode = mode

    def _completed(self, item: Mapping[str, Any]) -> None:
        c = self.console
        kind = item.get("type")
        if kind == "commandExecution":
            self._switch(None)
            status, code = item.get("status"), item.get("exitCode")
            if status == "declined":
                c.line("  ✗ declined", "yellow")
            elif code is not None:
                c.line(f"  → exit {code}", "green" if code == 0 else "red")
            else:
                c.line(f"  → {status}", "red" if status == "failed" else "dim")
        elif kind == "fileChange":
            self._switch(None)
            status = item.get("status")
            for change in item.get("changes") or ():
                what = (change.get("kind") or {}).get("type", "change")
                c.line(
                    f"  patched {change.get('path')} ({what}, {status})", "green" if status == "completed" else "yellow"
                )
        elif kind == "mcpToolCall":
            self._switch(None)
            c.line(f"  [{item.get('server')}/{item.get('tool')}] {item.get('status')}", "cyan")


def compaction_line(data: Mapping[str, Any]) -> str:
    """How the CLI shows a ``session/compaction`` (its ``data``): which events
    the summary stands for, and how much shorter the prompt became."""
    summary = data.get("summary")
    return (
        f"[compacted the session: events {data.get('fromSeq')} to {data.get('throughSeq')} "
        f"({data.get('replacedChars')} characters of prompt) are now a summary of "
        f"{len(summary) if isinstance(summary, str) else 0} characters]"
    )


class Ticker:
    """While it runs, a :class:`Console` on a terminal shows ``… 12s`` (the
    time since the ticker started) whenever nothing was written for
    ``interval`` seconds; the next output replaces it.  ``stop()`` ends it."""

    def __init__(self, console: Console, interval: float = 1.0) -> None:
        self.console = console
        self.interval = interval
        self.started = console.clock()
        self._task = asyncio.get_running_loop().create_task(self._tick())

    async def _tick(self) -> None:
        c = self.console
        while True:
            await asyncio.sleep(self.interval)
            now = c.clock()
            if now - c.last_write >= self.interval:
                c.status(f"… {now - self.started:.0f}s")

    def stop(self) -> None:
        self._task.cancel()
        self.console.clear_status()


__all__ = ["Console", "EventPrinter", "Ticker", "command_of", "compaction_line", "isatty", "use_color"]
