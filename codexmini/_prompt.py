"""The conversation and the prompt text, as pure functions of the session log.

Theory of operation
-------------------
Every step runs on a *fresh* codex thread, so codex remembers nothing: the
model's whole context is the text produced here from the session log.  Hence
the invariant **what the model sees is exactly what is logged** -- the prompt
is a pure function of the log prefix, and nothing reaches the model that a
reader of the log cannot see (SPEC §4.6).

Two stages:

* :func:`derive_messages` projects events onto messages.  Only three event
  types are projected (``user/message``, ``assistant/message``,
  ``tool/result``); ``tool/call`` is not, because the assistant message that
  precedes it already carries the same call as a ``tool-call`` block.  The
  projection looks at one event at a time, so
  ``derive(a + b) == derive(a) + derive(b)``.
* :func:`serialize` renders each message as one tagged section and joins the
  sections with a blank line.  Reasoning blocks are not transcribed (the model
  reasons afresh on every query); images become a placeholder naming the file
  (the bytes travel as ``localImage`` items, by path).

Because both stages work message by message, an appended event can never
change an earlier section.  :class:`Transcript` exploits that: it renders each
message once and keeps the section, so a long session costs linear work in
the log rather than quadratic.

No I/O, no clock, no environment: events are plain dicts (SPEC §5).
"""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, Iterable, List, Mapping, NamedTuple, Optional, Tuple

Block = Dict[str, Any]
Event = Mapping[str, Any]

#: Shown instead of an empty body, so the model never sees an empty section.
NO_CONTENT = "(no content)"


class Message(NamedTuple):
    """One conversation message derived from one log event.  A tuple, not a
    dataclass: one object per message instead of two (no ``__dict__``), which
    keeps the garbage collector's work linear in a long log (``make bench``:
    ``serialize_scaling``)."""

    role: str  # "user" | "assistant" | "tool"
    content: Tuple[Block, ...]
    call_id: Optional[str] = None
    is_error: bool = False
    source: Optional[Dict[str, Any]] = None


# -- blocks (SPEC §5) ------------------------------------------------------


def text_block(text: str) -> Block:
    return {"type": "text", "text": text}


def reasoning_block(text: str) -> Block:
    return {"type": "reasoning", "text": text}


def tool_call_block(id: str, name: str, arguments: str) -> Block:
    return {"type": "tool-call", "id": id, "name": name, "arguments": arguments}


def image_block(path: str) -> Block:
    return {"type": "image", "path": path}


# -- derive ---------------------------------------------------------------


def _content(data: Mapping[str, Any]) -> Tuple[Block, ...]:
    return tuple(data.get("content") or ())


def _user(data: Mapping[str, Any]) -> Message:
    return Message("user", _content(data), source=data.get("source"))


def _assistant(data: Mapping[str, Any]) -> Message:
    return Message("assistant", _content(data), source=data.get("source"))


def _tool(data: Mapping[str, Any]) -> Message:
    return Message("tool", _content(data), call_id=data.get("callId"), is_error=bool(data.get("isError")))


#: The projected event types; every other type is not part of the conversation.
_PROJECTIONS: Dict[str, Callable[[Mapping[str, Any]], Message]] = {
    "user/message": _user,
    "assistant/message": _assistant,
    "tool/result": _tool,
}


def derive_messages(events: Iterable[Event]) -> List[Message]:
    """The conversation held by ``events``, in log order."""
    out: List[Message] = []
    for event in events:
        project = _PROJECTIONS.get(event.get("type", ""))
        if project is not None:
            out.append(project(event.get("data") or {}))
    return out


# -- serialize --------------------------------------------------------------


def _arguments(block: Block) -> str:
    args = block.get("arguments", "")
    # The log stores arguments as JSON *text*; anything else was built by hand
    # and is shown as the JSON it stands for rather than as a Python repr.
    return args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)


#: How each block type is transcribed.  A type missing here -- ``reasoning``,
#: or one a newer writer invented -- is not transcribed.
_BLOCK_RENDERERS: Dict[str, Callable[[Block], str]] = {
    "text": lambda b: str(b.get("text", "")),
    "tool-call": lambda b: f"[tool call: {b.get('name', '')}({_arguments(b)})]",
    "image": lambda b: f"[image: {b.get('path', '')}]",
}


def _tag(message: Message) -> str:
    if message.role == "tool":
        return "tool-result-error" if message.is_error else "tool-result"
    return message.role


def render_section(message: Message) -> str:
    """One message as its tagged section (no separator)."""
    parts = []
    for block in message.content:
        render = _BLOCK_RENDERERS.get(block.get("type", ""))
        if render is not None:
            parts.append(render(block))
    body = "\n".join(parts) or NO_CONTENT
    tag = _tag(message)
    return f"<{tag}>\n{body}\n</{tag}>"


SEPARATOR = "\n\n"


def serialize(messages: Iterable[Message]) -> str:
    """The prompt text for ``messages``: sections joined by a blank line."""
    return SEPARATOR.join(render_section(m) for m in messages)


class Transcript:
    """An append-only, incrementally rendered :func:`serialize`.

    ``Transcript().extend(events).text() == serialize(derive_messages(events))``
    for every event list, however it is split across ``extend`` calls: each
    message is rendered exactly once, when its event is appended, and its
    section is kept.  Feed it the log as it grows (``extend(new_events)``);
    never feed an event twice.
    """

    def __init__(self) -> None:
        # The sections only: the messages are the log's, and keeping them here
        # too would hold a long session twice.
        self._sections: List[str] = []
        self._text: Optional[str] = ""

    def extend(self, events: Iterable[Event]) -> "Transcript":
        new = derive_messages(events)
        if new:
            self._sections.extend(self.render(m) for m in new)
            self._text = None  # joined lazily: several extends, one join
        return self

    def render(self, message: Message) -> str:
        """Render one section; called once per message (a hook for tests)."""
        return render_section(message)

    def __len__(self) -> int:
        """How many sections (messages) it holds."""
        return len(self._sections)

    def text(self) -> str:
        if self._text is None:
            self._text = SEPARATOR.join(self._sections)
        return self._text


__all__ = [
    "NO_CONTENT",
    "Message",
    "Transcript",
    "derive_messages",
    "image_block",
    "reasoning_block",
    "render_section",
    "serialize",
    "text_block",
    "tool_call_block",
]
