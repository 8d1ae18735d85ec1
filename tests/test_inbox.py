"""The agent's inbox, pure: what the user asked for, and for which turn."""

from __future__ import annotations

from typing import Any, Dict

from codexmini._inbox import Inbox


def msg(text: str) -> Dict[str, Any]:
    return {"id": text, "content": [{"type": "text", "text": text}], "source": {"kind": "user"}}


def test_inbox_starts_empty_with_no_turn():
    inbox = Inbox()
    assert len(inbox) == 0 and inbox.generation == 0
    assert not inbox.has_turn(idle=True) and not inbox.has_turn(idle=False)
    assert inbox.next_turn() == [] and inbox.claim() == []


def test_inbox_followups_are_one_turn_each_in_order():
    inbox = Inbox()
    inbox.followup(msg("one"))
    inbox.followup(msg("two"))
    assert len(inbox) == 2
    assert inbox.has_turn(idle=False)  # a followup is a turn, running or not
    assert inbox.next_turn() == [msg("one")]
    assert inbox.next_turn() == [msg("two")]
    assert not inbox.has_turn(idle=True)


def test_inbox_added_messages_are_claimed_by_the_next_step():
    inbox = Inbox()
    inbox.add(msg("a"))
    inbox.add(msg("b"))
    assert inbox.claim() == [msg("a"), msg("b")]
    assert inbox.claim() == [] and len(inbox) == 0


def test_inbox_added_messages_are_a_turn_only_when_idle():
    # While a turn runs its next step claims them; when nothing runs they
    # start a turn of their own (a steer while idle).
    inbox = Inbox()
    inbox.add(msg("steer"))
    assert not inbox.has_turn(idle=False)
    assert inbox.has_turn(idle=True)
    assert inbox.next_turn() == [msg("steer")]
    assert not inbox.has_turn(idle=True)


def test_inbox_next_turn_is_its_followup_then_the_current_messages():
    inbox = Inbox()
    inbox.add(msg("injected"))
    inbox.followup(msg("first"))
    inbox.followup(msg("second"))
    assert inbox.next_turn() == [msg("first"), msg("injected")]
    assert inbox.next_turn() == [msg("second")]


def test_inbox_requeue_puts_unechoed_steers_first_in_line():
    inbox = Inbox()
    taken = inbox.generation
    inbox.add(msg("later"))
    inbox.requeue([msg("s1"), msg("s2")], taken)
    assert inbox.claim() == [msg("s1"), msg("s2"), msg("later")]
    inbox.requeue([], taken)  # nothing to put back
    assert len(inbox) == 0


def test_inbox_drop_forgets_everything_and_voids_what_was_taken():
    inbox = Inbox()
    inbox.followup(msg("f"))
    inbox.add(msg("a"))
    taken = inbox.generation
    inbox.drop()
    assert len(inbox) == 0 and not inbox.has_turn(idle=True)
    assert inbox.generation == taken + 1
    # Steers taken before the drop stay dropped (a cancel() promise) ...
    inbox.requeue([msg("steered before the cancel")], taken)
    assert inbox.claim() == []
    # ... while those taken after it come back.
    inbox.requeue([msg("steered after")], inbox.generation)
    assert inbox.claim() == [msg("steered after")]
