"""The conversation and the prompt text, as pure functions of the session log.

Theory of operation
-------------------
Every step runs on a *fresh* codex thread, so codex remembers nothing: the
model's whole context is the text produced here from the session log.  Hence
the invariant **what the model sees is exactly what is logged** -- the prompt
is a pure function of the log prefix, and nothing reaches the model that a
reader of the log cannot see (``docs/session-log.md`` describes the result).

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

No I/O, no clock, no environment: events are plain dicts, as read from the log.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple

if TYPE_CHECKING:  # the checker sees the standard library; at run time, ._dataclasses (nothing compiled)
    from typing import NamedTuple
else:
    from ._dataclasses import NamedTuple

Block = Dict[str, Any]
LogEntry = Mapping[str, Any]

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


# -- blocks (the content of messages and results) --------------------------


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


def iter_messages(events: Iterable[LogEntry]) -> Iterator[Message]:
    """The conversation held by ``events``, in log order, one message at a time."""
    for event in events:
        project = _PROJECTIONS.get(event.get("type", ""))
        if project is not None:
            yield project(event.get("data") or {})


def derive_messages(events: Iterable[LogEntry]) -> List[Message]:
    """The conversation held by ``events``, in log order."""
    return list(iter_messages(events))


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


def _pieces(message: Message) -> List[str]:
    """One message's section as the strings that make it up, in order.

    The block texts are the log's own string objects, not copies: a caller that
    joins many sections at once copies each text exactly once."""
    tag = _tag(message)
    pieces = [f"<{tag}>\n"]
    for block in message.content:
        render = _BLOCK_RENDERERS.get(block.get("type", ""))
        if render is not None:
            pieces += (render(block), "\n")
    if len(pieces) == 1 or (len(pieces) == 3 and not pieces[1]):
        pieces = [pieces[0], NO_CONTENT, "\n"]  # no body, or one empty one
    pieces.append(f"</{tag}>")
    return pieces


def render_section(message: Message) -> str:
    """One message as its tagged section (no separator)."""
    return "".join(_pieces(message))


SEPARATOR = "\n\n"


def serialize(messages: Iterable[Message]) -> str:
    """The prompt text for ``messages``: sections joined by a blank line."""
    return SEPARATOR.join(render_section(m) for m in messages)


class Transcript:
    """An append-only, incrementally rendered :func:`serialize`.

    ``Transcript().extend(events).text() == serialize(derive_messages(events))``
    for every event list, however it is split across ``extend`` calls: each
    message is rendered exactly once, when its event is appended, and its
    pieces are kept.  Feed it the log as it grows (``extend(new_events)``);
    never feed an event twice.
    """

    def __init__(self) -> None:
        # The sections' pieces only, whose texts are the log's own strings: no
        # message and no copy of a text is kept, so a long session is held
        # once, and ``text()`` copies each text once (into the prompt).
        self._pieces: List[str] = []
        self._sections = 0
        self._text: Optional[str] = ""

    def extend(self, events: Iterable[LogEntry]) -> "Transcript":
        # Message by message, never a list of them: a message is dropped as
        # soon as its pieces exist, so a long log leaves no trail of live
        # tuples for the collector to walk (``make bench``: serialize_scaling).
        before = self._sections
        for message in iter_messages(events):
            if self._sections:
                self._pieces.append(SEPARATOR)
            self._pieces += self.render(message)
            self._sections += 1
        if self._sections != before:
            self._text = None  # joined lazily: several extends, one join
        return self

    def render(self, message: Message) -> List[str]:
        """One section's pieces; called once per message (a hook for tests)."""
        return _pieces(message)

    def __len__(self) -> int:
        """How many sections (messages) it holds."""
        return self._sections

    def text(self) -> str:
        if self._text is None:
            self._text = "".join(self._pieces)
        return self._text


__all__ = [
    "NO_CONTENT",
    "Message",
    "Transcript",
    "derive_messages",
    "image_block",
    "iter_messages",
    "reasoning_block",
    "render_section",
    "serialize",
    "text_block",
    "tool_call_block",
]
