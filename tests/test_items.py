"""codexmini._items: a turn's history as compressed JSON, decoded on access."""

from __future__ import annotations

import gc
import json
import marshal
import tracemalloc
import zlib
from typing import Any, Dict, List, Tuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codexmini._items import BLOCK_BYTES, ItemArchive, Items


def command(n: int) -> Dict[str, Any]:
    """A commandExecution item of the shape codex completes (fixtures/0.149.1/cmd_ok)."""
    return {
        "aggregatedOutput": f"codexmini/_wire.py:{n}:def encode(frame: Frame) -> bytes:\n",
        "command": "/bin/bash -lc 'python -m pytest -q tests/test_wire.py'",
        "commandActions": [{"command": "python -m pytest -q tests/test_wire.py", "type": "unknown"}],
        "cwd": "/home/dev/src/project",
        "durationMs": 280 + n,
        "exitCode": 0,
        "id": f"call_{n:024x}",
        "pluginId": None,
        "processId": "1",
        "scriptPath": None,
        "source": "unifiedExecStartup",
        "status": "completed",
        "type": "commandExecution",
    }


def message(n: int, text: str = "") -> Dict[str, Any]:
    return {
        "delivery": None,
        "id": f"msg_{n:040x}",
        "memoryCitation": None,
        "phase": None,
        "text": text or f" the value {n} — é ✓ `read_log`()\n",
        "type": "agentMessage",
    }


def archive_of(items: List[Dict[str, Any]]) -> ItemArchive:
    archive = ItemArchive()
    for item in items:
        archive.add(item["id"], item)
    return archive


def many(n: int) -> List[Dict[str, Any]]:
    return [command(i) if i % 2 else message(i) for i in range(n)]


def test_items_a_long_history_spans_blocks_and_reads_back_every_way() -> None:
    n = 1001
    items = many(n)
    assert sum(len(marshal.dumps(i)) for i in items) > 3 * BLOCK_BYTES  # several blocks, and a tail
    archive = archive_of(items)
    assert len(archive) == n and not archive.folded
    frozen = archive.freeze()
    assert len(frozen._blocks) >= 3 and frozen._tail
    assert len(frozen) == n
    assert list(frozen) == items
    assert list(reversed(frozen)) == items[::-1]
    assert [frozen[i] for i in range(n)] == items  # forwards: one decompression a block
    assert [frozen[-i] for i in range(1, n + 1)] == items[::-1]  # negative indices, backwards
    assert frozen[10:20] == tuple(items[10:20]) and frozen[::-97] == tuple(items[::-97])
    assert frozen == items and frozen == tuple(items) and items == frozen
    assert frozen == archive.freeze()  # another Items of the same texts
    for bad in (n, -n - 1):
        with pytest.raises(IndexError, match="item index out of range"):
            frozen[bad]


def test_items_hand_out_fresh_dicts_the_history_cannot_be_changed() -> None:
    frozen = archive_of([message(1)]).freeze()
    first = frozen[0]
    first["text"] = "changed"  # type: ignore[index]
    assert frozen[0]["text"] == message(1)["text"]
    assert frozen[0] is not frozen[0]


def test_items_equality_item_by_item_whatever_the_blocks() -> None:
    items = many(300)
    one = archive_of(items).freeze()
    other = Items(tail=tuple(marshal.dumps(i) for i in items))  # no blocks at all
    assert one._blocks != other._blocks
    assert one == other and other == one
    assert one != many(299) and one != [*items[:-1], message(10**6)]
    assert one != "not a sequence" and (one == {"a": 1}) is False
    assert Items() == () and Items() == [] and not Items()


def test_items_are_unhashable_like_the_dicts_they_hold_and_print_as_a_tuple() -> None:
    frozen = archive_of([message(1), command(2)]).freeze()
    with pytest.raises(TypeError):
        hash(frozen)
    assert repr(frozen) == repr((message(1), command(2)))
    assert repr(Items()) == "()"


def test_items_the_last_completion_of_an_id_wins_in_the_order_of_the_first() -> None:
    archive = archive_of([message(1, "first"), command(2), message(3)])
    archive.add(message(1)["id"], message(1, "again"))  # a retried response completes it again
    assert archive.folded and len(archive) == 4
    frozen = archive.freeze()
    assert [i["id"] for i in frozen] == [message(1)["id"], command(2)["id"], message(3)["id"]]
    assert frozen[0]["text"] == "again"
    assert archive.by_id() == {i["id"]: i for i in frozen}


def test_items_a_shared_id_hash_only_costs_a_decode(monkeypatch: pytest.MonkeyPatch) -> None:
    # Two ids with one hash: the archive cannot tell, folds, and loses nothing.
    archive = ItemArchive()
    monkeypatch.setattr(archive, "_hashes", {hash("b")})
    archive.add("a", {"id": "a", "type": "x"})
    archive.add("b", {"id": "b", "type": "y"})
    assert archive.folded
    assert archive.freeze() == [{"id": "a", "type": "x"}, {"id": "b", "type": "y"}]


def test_items_keep_json_values_exactly() -> None:
    odd = {
        "id": "odd",
        "type": "x",
        "text": "line\nbreak \ud800 lone surrogate, \u2028, nul \x00",
        "big": 2**70,
        "float": 0.1,
        "nested": {"a": [1, None, True, False, "é"]},
    }
    assert archive_of([odd]).freeze()[0] == odd


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b", "c", "d"]),
            st.recursive(
                st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                max_leaves=8,
            ),
        ),
        max_size=30,
    )
)
def test_items_freeze_is_the_fold_of_the_completions(completions: List[Tuple[str, Any]]) -> None:
    archive, expected = ItemArchive(), {}
    for item_id, payload in completions:
        item = {"id": item_id, "payload": payload}
        archive.add(item_id, item)
        expected[item_id] = item
    assert archive.freeze() == list(expected.values())


def test_items_a_long_turns_history_costs_a_fraction_of_its_dicts() -> None:
    """Counted, not timed: 8,000 items (the bench's turn) as decoded dicts
    and in the archive, by tracemalloc."""
    n = 8000

    def traced(build: Any) -> Tuple[Any, int]:
        gc.collect()
        tracemalloc.start()
        try:
            kept = build()
            return kept, tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()

    texts = [json.dumps(i) for i in many(n)]  # what the wire decoder hands over: fresh dicts
    dicts, as_dicts = traced(lambda: [json.loads(t) for t in texts])
    frozen, as_archive = traced(lambda: archive_of([json.loads(t) for t in texts]).freeze())
    assert frozen == dicts
    assert as_dicts > 8_000_000  # a thousand bytes and more an item
    assert as_archive * 8 < as_dicts, (as_archive, as_dicts)
    assert frozen.compressed_bytes <= as_archive


def test_items_a_big_item_is_a_block_of_its_own_not_compressed(monkeypatch: pytest.MonkeyPatch) -> None:
    # One 8 MiB command output among small items: compressing it would cost more
    # than decoding its line did, so it is kept as marshal wrote it -- and every
    # read gives it back in its place.
    compressed: List[int] = []
    real = zlib.compress
    monkeypatch.setattr(zlib, "compress", lambda data, level: compressed.append(len(data)) or real(data, level))
    big = dict(command(1007), aggregatedOutput="x" * (8 << 20))
    after = [message(2000 + i) for i in range(3)]
    items = [*many(40), big, *after, dict(command(1008), aggregatedOutput="y" * BLOCK_BYTES)]
    frozen = archive_of(items).freeze()
    assert frozen == items and list(reversed(frozen)) == items[::-1]
    assert frozen[40] == big and frozen[-1] == items[-1] and frozen[39] == items[39]
    assert compressed and max(compressed) < BLOCK_BYTES  # only the small items' blocks were compressed
    raw = len(marshal.dumps(big))
    assert frozen.compressed_bytes > raw  # the big one's own bytes, as they were
    # Big ones back to back, the first one first: each its own block.
    again = archive_of([big, items[-1]]).freeze()
    assert again == [big, items[-1]] and again.compressed_bytes > raw + BLOCK_BYTES
