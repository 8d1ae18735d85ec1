"""The agent's inbox: what the user asked for, and for which turn.  Pure.

Three ways in: :meth:`Inbox.followup` queues messages for a
*new* turn; :meth:`Inbox.add` (the agent's ``steer`` and ``inject``) adds to
the *current* turn, claimed by its next step.  :meth:`Inbox.next_turn` hands
the driver the next turn's messages, :meth:`Inbox.claim` a step's.

Steered messages the agent sent into a running codex turn (``turn/steer``) but
codex never echoed go back in with :meth:`Inbox.requeue`, ahead of the rest --
unless the inbox was dropped (:meth:`Inbox.drop`, a cancel) since they were
taken: a dropped inbox stays dropped.

:class:`Pending` is the inbox as the session log keeps it (issue 30): the
messages logged ``inbox/queued`` and neither delivered since (a
``user/message`` with the same ``id``) nor dropped (``inbox/dropped``),
folded from the log's events one at a time, so a resumed agent runs them.

The messages are built here too: :func:`content_blocks` turns what a caller
gives (a string, or a list of blocks) into the blocks a ``user/message``
logs, and :func:`message_input` / :func:`message_images` turn a logged
message back into codex input items.
"""

from __future__ import annotations

import os
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from ._inputs import InputItem, image_input, text_input
from ._prompt import text_block

Message = Dict[str, Any]
Block = Dict[str, Any]
#: What a caller gives as a message: its text, or its blocks (``{"type": "text", "text": …}``,
#: ``{"type": "image", "path": …}``).
Content = Union[str, Sequence[Mapping[str, Any]]]


def content_blocks(content: Content, cwd: str) -> Tuple[List[Block], List[Block]]:
    """The blocks a ``user/message`` logs for ``content``, and those skipped.

    An image's path is made absolute against ``cwd`` (the directory codex
    runs in); an image without a usable path is skipped -- one bad image
    never fails a step.  Other blocks are kept as given."""
    if isinstance(content, str):
        return [text_block(content)], []
    kept: List[Block] = []
    skipped: List[Block] = []
    for given in content:
        block = dict(given)
        if block.get("type") == "image":
            path = block.get("path")
            if not isinstance(path, str) or not path:
                skipped.append(block)
                continue
            block["path"] = os.path.join(cwd, path)  # an absolute path stays as it is
        kept.append(block)
    return kept, skipped


def message_input(message: Mapping[str, Any]) -> List[InputItem]:
    """A logged message as codex input: its text and image blocks, in order."""
    items = []
    for block in message["content"]:
        if block.get("type") == "text":
            items.append(text_input(block["text"]))
        elif block.get("type") == "image" and block.get("path"):
            items.append(image_input(block["path"]))
    return items


def message_images(messages: Iterable[Mapping[str, Any]]) -> List[InputItem]:
    """The image blocks of ``messages`` as codex input (a step sends its text as the transcript)."""
    return [
        image_input(b["path"]) for m in messages for b in m["content"] if b.get("type") == "image" and b.get("path")
    ]


class Inbox:
    """Followups (one batch per turn) and the current turn's messages."""

    def __init__(self) -> None:
        self.followups: List[List[Message]] = []
        self.current: List[Message] = []
        self.generation = 0  # bumped by drop(): what was taken before is void

    def followup(self, message: Message) -> None:
        """A message for a new turn."""
        self.followups.append([message])

    def add(self, message: Message) -> None:
        """A message for the current turn's next step."""
        self.current.append(message)

    def has_turn(self, idle: bool) -> bool:
        """Whether a turn should run: a followup, or (when idle) messages for
        the current turn that nobody is running."""
        return bool(self.followups) or (idle and bool(self.current))

    def next_turn(self) -> List[Message]:
        """The messages a new turn starts with (its followup, then what was
        added for the current turn)."""
        batch = self.followups.pop(0) if self.followups else []
        return batch + self.claim()

    def claim(self) -> List[Message]:
        """What the current turn's next step delivers."""
        claimed, self.current = self.current, []
        return claimed

    def restore_turn(self, messages: List[Message], generation: int) -> None:
        """A turn taken at ``generation`` never started (cancelled while its
        child was spawned): its messages go back, first in line, as the next
        turn -- unless the inbox was dropped since."""
        if messages and generation == self.generation:
            self.followups.insert(0, list(messages))

    def requeue(self, messages: List[Message], generation: int) -> None:
        """Put back messages taken at ``generation`` (steers codex never
        echoed), first in line -- unless the inbox was dropped since."""
        if messages and generation == self.generation:
            self.current[:0] = messages

    def drop(self) -> None:
        """Forget everything queued, and what is in flight."""
        self.followups.clear()
        self.current.clear()
        self.generation += 1

    def __len__(self) -> int:
        return sum(len(b) for b in self.followups) + len(self.current)


#: How a message came into the inbox: ``inbox/queued``'s ``kind``.  A
#: ``followup`` is a turn of its own; an ``inject`` (and a ``steer`` that went
#: to the inbox instead of into a running codex turn) is for the next step.
QUEUED_KINDS = ("followup", "inject", "steer")


def queued_message(data: Mapping[str, Any]) -> Optional[Tuple[str, Message]]:
    """The ``(kind, message)`` an ``inbox/queued`` event's data holds, or
    ``None`` when it is not one: an ``id`` that is not a non-empty string, a
    ``kind`` not in :data:`QUEUED_KINDS`, a ``content`` that is not a list of
    objects, a ``source`` that is not an object."""
    id_, kind, content = data.get("id"), data.get("kind"), data.get("content")
    source = data.get("source", {"kind": "user"})
    if not (isinstance(id_, str) and id_ and kind in QUEUED_KINDS and isinstance(source, dict)):
        return None
    if not (isinstance(content, list) and all(isinstance(block, dict) for block in content)):
        return None
    return str(kind), {"id": id_, "content": content, "source": source}


class Pending:
    """The inbox messages a session log holds pending: logged ``inbox/queued``,
    and since neither delivered -- a ``user/message`` with the same ``id`` is
    the delivery, so the message and its claim are one line, and a crash can
    neither lose nor repeat it -- nor dropped (an ``inbox/dropped`` naming the
    ``id``).  Pure: :meth:`feed` it the log's events in order (those of
    :data:`TYPES`); it keeps the pending messages only, never the log.  An
    ``inbox/queued`` that is not one (:func:`queued_message`) counts as absent,
    as an invalid knob does."""

    TYPES = frozenset({"inbox/queued", "inbox/dropped", "user/message"})

    __slots__ = ("_queued",)

    def __init__(self) -> None:
        self._queued: Dict[str, Tuple[str, Message]] = {}  # by id, in the order logged

    def feed(self, event: Mapping[str, Any]) -> None:
        """One event of :data:`TYPES`."""
        type_, data = event["type"], event["data"]
        if type_ == "inbox/queued":
            found = queued_message(data)
            if found is not None:
                self._queued[found[1]["id"]] = found
        elif self._queued:  # (nothing pending, nothing to claim or drop: the usual case)
            ids = [data.get("id")] if type_ == "user/message" else data.get("ids")
            for id_ in ids if isinstance(ids, list) else ():
                if isinstance(id_, str):
                    self._queued.pop(id_, None)

    def __contains__(self, id_: object) -> bool:
        return isinstance(id_, str) and id_ in self._queued

    def __len__(self) -> int:
        return len(self._queued)

    def messages(self) -> List[Tuple[str, Message]]:
        """The pending messages, ``(kind, message)``, in the order they were queued."""
        return list(self._queued.values())


__all__ = [
    "QUEUED_KINDS",
    "Block",
    "Content",
    "Inbox",
    "Message",
    "Pending",
    "content_blocks",
    "message_images",
    "message_input",
    "queued_message",
]
