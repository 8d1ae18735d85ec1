"""The agent's inbox: what the user asked for, and for which turn.  Pure.

Three ways in: :meth:`Inbox.followup` queues messages for a
*new* turn; :meth:`Inbox.add` (the agent's ``steer`` and ``inject``) adds to
the *current* turn, claimed by its next step.  :meth:`Inbox.next_turn` hands
the driver the next turn's messages, :meth:`Inbox.claim` a step's.

Steered messages the agent sent into a running codex turn (``turn/steer``) but
codex never echoed go back in with :meth:`Inbox.requeue`, ahead of the rest --
unless the inbox was dropped (:meth:`Inbox.drop`, a cancel) since they were
taken: a dropped inbox stays dropped.
"""

from __future__ import annotations

from typing import Any, Dict, List

Message = Dict[str, Any]


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


__all__ = ["Inbox", "Message"]
