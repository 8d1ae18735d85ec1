"""The agent's inbox: what the user asked for, and for which turn.  Pure.

Three ways in: :meth:`Inbox.followup` queues messages for a
*new* turn; :meth:`Inbox.add` (the agent's ``steer`` and ``inject``) adds to
the *current* turn, claimed by its next step.  :meth:`Inbox.next_turn` hands
the driver the next turn's messages, :meth:`Inbox.claim` a step's.

Steered messages the agent sent into a running codex turn (``turn/steer``) but
codex never echoed go back in with :meth:`Inbox.requeue`, ahead of the rest --
unless the inbox was dropped (:meth:`Inbox.drop`, a cancel) since they were
taken: a dropped inbox stays dropped.

The messages are built here too: :func:`content_blocks` turns what a caller
gives (a string, or a list of blocks) into the blocks a ``user/message``
logs, and :func:`message_input` / :func:`message_images` turn a logged
message back into codex input items.
"""

from __future__ import annotations

import os
from typing import Any, Dict, Iterable, List, Mapping, Sequence, Tuple, Union

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


__all__ = ["Block", "Content", "Inbox", "Message", "content_blocks", "message_images", "message_input"]
