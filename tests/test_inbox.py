"""The agent's inbox, pure: what the user asked for, and for which turn."""

from __future__ import annotations

from typing import Any, Dict

import pytest

from codexmini._inbox import Inbox, Pending, content_blocks, message_images, message_input, queued_message


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


def test_inbox_requeue_keeps_every_message_already_waiting():
    inbox = Inbox()
    inbox.add(msg("a"))
    inbox.add(msg("b"))
    inbox.requeue([msg("s")], inbox.generation)
    assert len(inbox) == 3
    assert inbox.claim() == [msg("s"), msg("a"), msg("b")]


def test_inbox_restore_turn_puts_a_turn_back_first_in_line():
    # A turn taken, then cancelled while its child was spawned: it runs next,
    # as one turn, before the followups queued meanwhile.
    inbox = Inbox()
    inbox.followup(msg("first"))
    inbox.followup(msg("second"))
    taken, messages = inbox.generation, inbox.next_turn()
    inbox.followup(msg("third"))
    inbox.restore_turn(messages, taken)
    assert len(inbox) == 3 and inbox.has_turn(idle=False)
    assert [inbox.next_turn() for _ in range(3)] == [[msg("first")], [msg("second")], [msg("third")]]


def test_inbox_restore_turn_keeps_the_batch_whole_and_owns_its_copy():
    inbox = Inbox()
    batch = [msg("a"), msg("b")]
    inbox.restore_turn(batch, inbox.generation)
    batch.append(msg("not part of it"))
    assert inbox.next_turn() == [msg("a"), msg("b")]
    assert not inbox.has_turn(idle=True)


def test_inbox_restore_turn_after_a_drop_or_with_nothing_restores_nothing():
    inbox = Inbox()
    taken = inbox.generation
    inbox.drop()
    inbox.restore_turn([msg("cancelled")], taken)
    assert len(inbox) == 0 and not inbox.has_turn(idle=True)
    inbox.restore_turn([], inbox.generation)
    assert inbox.followups == [] and not inbox.has_turn(idle=False)


def test_inbox_len_counts_followups_and_current_messages():
    inbox = Inbox()
    inbox.followup(msg("f"))
    inbox.add(msg("a"))
    inbox.add(msg("b"))
    assert len(inbox) == 3


# -- building the messages ---------------------------------------------------------


def test_inbox_content_of_a_string_is_one_text_block():
    assert content_blocks("hello", "/ws") == ([{"type": "text", "text": "hello"}], [])
    assert content_blocks("", "/ws") == ([{"type": "text", "text": ""}], [])


def test_inbox_content_blocks_keep_text_and_make_image_paths_absolute():
    given = [
        {"type": "text", "text": "look"},
        {"type": "image", "path": "shot.png"},
        {"type": "image", "path": "/abs/pic.png"},
        {"type": "custom", "x": 1},
    ]
    kept, skipped = content_blocks(given, "/ws")
    assert kept == [
        {"type": "text", "text": "look"},
        {"type": "image", "path": "/ws/shot.png"},
        {"type": "image", "path": "/abs/pic.png"},
        {"type": "custom", "x": 1},
    ]
    assert skipped == []
    assert given[1] == {"type": "image", "path": "shot.png"}  # the caller's blocks are not changed


def test_inbox_content_blocks_skip_an_image_without_a_usable_path():
    given = [
        {"type": "image"},
        {"type": "image", "path": ""},
        {"type": "image", "path": 7},
        {"type": "text", "text": "t"},
    ]
    kept, skipped = content_blocks(given, "/ws")
    assert kept == [{"type": "text", "text": "t"}]
    assert skipped == [{"type": "image"}, {"type": "image", "path": ""}, {"type": "image", "path": 7}]


def test_inbox_message_input_is_the_text_and_images_in_order():
    message = {
        "id": "m",
        "content": [
            {"type": "text", "text": "a"},
            {"type": "image", "path": "/ws/p.png"},
            {"type": "image", "path": ""},
            {"type": "reasoning", "text": "not input"},
            {"type": "text", "text": "b"},
        ],
    }
    assert message_input(message) == [
        {"type": "text", "text": "a"},
        {"type": "localImage", "path": "/ws/p.png"},
        {"type": "text", "text": "b"},
    ]
    assert message_input({"content": []}) == []


def test_inbox_message_images_are_every_image_of_the_messages():
    first = {"content": [{"type": "text", "text": "a"}, {"type": "image", "path": "/1.png"}]}
    second = {"content": [{"type": "image", "path": "/2.png"}, {"type": "image"}]}
    assert message_images([first, second]) == [
        {"type": "localImage", "path": "/1.png"},
        {"type": "localImage", "path": "/2.png"},
    ]
    assert message_images([]) == []


# -- the inbox the log keeps ---------------------------------------------------------


def ev(type_: str, **data: Any) -> Dict[str, Any]:
    return {"type": type_, "data": data}


def queued(id_: str, kind: str = "followup") -> Dict[str, Any]:
    return ev("inbox/queued", id=id_, kind=kind, content=[{"type": "text", "text": id_}], source={"kind": "user"})


def test_inbox_pending_is_what_was_queued_and_neither_delivered_nor_dropped():
    pending = Pending()
    assert len(pending) == 0 and pending.messages() == []
    pending.feed(ev("user/message", id="a"))  # nothing pending: nothing to claim
    for event in (queued("a"), queued("b", "inject"), queued("c", "steer"), queued("d")):
        pending.feed(event)
    assert len(pending) == 4 and "a" in pending and "z" not in pending and ["a"] not in pending
    pending.feed(ev("user/message", id="b", content=[], source={"kind": "user"}))  # delivered
    pending.feed(ev("inbox/dropped", ids=["c", "unknown"], reason="cancel"))
    assert pending.messages() == [
        ("followup", {"id": "a", "content": [{"type": "text", "text": "a"}], "source": {"kind": "user"}}),
        ("followup", {"id": "d", "content": [{"type": "text", "text": "d"}], "source": {"kind": "user"}}),
    ]
    pending.feed(ev("user/message", id="a"))
    pending.feed(ev("user/message", id="a"))  # claimed once; again is nothing
    assert [m["id"] for _, m in pending.messages()] == ["d"]


def test_inbox_pending_ignores_what_names_nothing_it_can_use():
    pending = Pending()
    pending.feed(queued("a"))
    pending.feed(ev("user/message", id=["a"]))  # an id that is no string
    pending.feed(ev("user/message"))  # no id
    pending.feed(ev("inbox/dropped", ids="a", reason="cancel"))  # not a list
    pending.feed(ev("inbox/dropped", ids=[1, None, ["a"]], reason="cancel"))
    assert [m["id"] for _, m in pending.messages()] == ["a"]


@pytest.mark.parametrize(
    "data",
    [
        {"kind": "followup", "content": []},
        {"id": "", "kind": "followup", "content": []},
        {"id": 7, "kind": "followup", "content": []},
        {"id": "x", "kind": "later", "content": []},
        {"id": "x", "content": []},
        {"id": "x", "kind": "followup"},
        {"id": "x", "kind": "followup", "content": "text"},
        {"id": "x", "kind": "followup", "content": ["text"]},
        {"id": "x", "kind": "followup", "content": [], "source": "user"},
    ],
)
def test_inbox_an_invalid_queued_entry_counts_as_absent(data):
    assert queued_message(data) is None
    pending = Pending()
    pending.feed({"type": "inbox/queued", "data": data})
    assert len(pending) == 0


def test_inbox_a_queued_entry_without_a_source_is_the_user_s():
    assert queued_message({"id": "x", "kind": "inject", "content": []}) == (
        "inject",
        {"id": "x", "content": [], "source": {"kind": "user"}},
    )
