"""A turn's completed items, kept compact: compressed in blocks.  Pure.

Theory of operation
-------------------
A long turn completes thousands of items (an agent message per model answer,
a command per tool call), and as decoded JSON each costs about two
kilobytes: every key string, every small value, every dict its own object
(``json.loads`` shares nothing between two calls).  Kept that way for
:attr:`~codexmini.TurnCompleted.items`, the history of a 200,000-notification
turn held 14 MB -- more than the rest of the client together.

:class:`ItemArchive` keeps each completed item serialized instead -- by
``marshal``, which writes the JSON types (dicts, lists, strings, numbers,
``None``, booleans) four times faster than ``json`` and reads them three
times faster; the bytes never leave the process, so the format's
version-specific nature costs nothing -- and every :data:`BLOCK_BYTES` of
them is compressed (``zlib`` level 1: the items of one turn repeat their
keys, paths and commands, and compress about six to one).  An item that is
:data:`BLOCK_BYTES` or more by itself -- one big command output, one big
file -- is a block of its own and is not compressed: compressing an 8 MiB
item took longer than decoding its JSON line (``make bench``'s large frame
went from 1.0 to 1.5x the raw reader), and such items are few; it costs its
own size, as the decoded string would.  :class:`Items`
is the frozen result: an immutable :class:`~collections.abc.Sequence` that
decodes on access -- one block at a time, the last one decoded kept for the
next access -- and equals any tuple or list of the same items.  Each access
returns fresh dicts: the history cannot be changed through what it hands
out.

The last completion of an id wins, in the order of first completion (the
wire completes an item again when codex retries a cut model response).
Rather than remember every id, the archive keeps their hashes; a completion
whose id hash was seen before marks the archive *folded*, and freezing it
then decodes everything once and keeps one entry per id (a rare path: a
retried response, or two ids with one 64-bit hash, which costs the decode
and nothing else).

No I/O: ``marshal`` and ``zlib`` only.  Items are JSON values (what the wire
decodes, nested at most :data:`._wire.MAX_DEPTH` deep, well within marshal's limit).
"""

from __future__ import annotations

import marshal
import zlib
from bisect import bisect_right
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Set, Tuple

Item = Mapping[str, Any]

#: Serialized bytes per compressed block: small enough that decoding one
#: item decodes few others, large enough that the repetition compresses.
BLOCK_BYTES = 64 << 10
LEVEL = 1  # zlib's fastest: most of the ratio, a fraction of the time

_dumps, _loads = marshal.dumps, marshal.loads
#: The bytes (compressed or not), each item's end offset in them uncompressed, compressed.
_Block = Tuple[bytes, Tuple[int, ...], bool]


class ItemArchive:
    """The completed items of a turn as they arrive (:meth:`add`), frozen
    into :class:`Items` at the end (:meth:`freeze`)."""

    __slots__ = ("_blocks", "_ends", "_tail", "_tail_bytes", "_hashes", "folded")

    def __init__(self) -> None:
        self._blocks: List[_Block] = []
        self._ends: List[int] = []  # items in blocks[:i + 1]
        self._tail: List[bytes] = []  # serialized items not yet in a block
        self._tail_bytes = 0
        self._hashes: Set[int] = set()
        #: An id was (or may have been) completed twice: :meth:`freeze` folds.
        self.folded = False

    def __len__(self) -> int:
        """Completions kept (an id completed twice counts twice until frozen)."""
        return (self._ends[-1] if self._ends else 0) + len(self._tail)

    def add(self, item_id: str, item: Item) -> None:
        """Keep one completed item (JSON: a dict of the wire)."""
        key = hash(item_id)
        if key in self._hashes:
            self.folded = True
        else:
            self._hashes.add(key)
        data = _dumps(item)  # type: ignore[arg-type]  # a JSON value: marshal writes every JSON type
        if len(data) >= BLOCK_BYTES:  # big by itself: a block of its own, as it is
            if self._tail:
                self._seal()
            self._tail.append(data)
            self._seal(compress=False)
            return
        self._tail.append(data)
        self._tail_bytes += len(data)
        if self._tail_bytes >= BLOCK_BYTES:
            self._seal()

    def _seal(self, compress: bool = True) -> None:
        ends, end = [], 0
        for data in self._tail:
            end += len(data)
            ends.append(end)
        joined = b"".join(self._tail)
        self._blocks.append((zlib.compress(joined, LEVEL) if compress else joined, tuple(ends), compress))
        self._ends.append(len(self))
        self._tail, self._tail_bytes = [], 0

    def freeze(self) -> "Items":
        """The items, in order of first completion, the last completion of
        each id winning."""
        items = Items(tuple(self._blocks), tuple(self._ends), tuple(self._tail))
        if not self.folded:
            return items
        by_id: Dict[Any, Item] = {}
        for item in items:
            by_id[item["id"]] = item  # a dict keeps the first insertion's place
        again = ItemArchive()
        for item_id, item in by_id.items():
            again.add(item_id, item)
        return again.freeze()

    def by_id(self) -> Dict[str, Item]:
        """Every item kept so far, by id (decoded now: a snapshot)."""
        return {item["id"]: item for item in self.freeze()}


class Items(Sequence[Item]):
    """A turn's completed items, decoded on access (see the module)."""

    __slots__ = ("_blocks", "_ends", "_tail", "_cache")

    def __init__(
        self, blocks: Tuple[_Block, ...] = (), ends: Tuple[int, ...] = (), tail: Tuple[bytes, ...] = ()
    ) -> None:
        self._blocks = blocks
        self._ends = ends
        self._tail = tail
        self._cache: Optional[Tuple[int, List[bytes]]] = None  # (block, its items' bytes)

    def __len__(self) -> int:
        return (self._ends[-1] if self._ends else 0) + len(self._tail)

    def _records(self, block: int) -> Sequence[bytes]:
        if block == len(self._blocks):
            return self._tail
        cache = self._cache
        if cache is None or cache[0] != block:
            payload, ends, compressed = self._blocks[block]
            data = zlib.decompress(payload) if compressed else payload
            cache = self._cache = (block, [data[a:b] for a, b in zip((0, *ends), ends)])
        return cache[1]

    def __getitem__(self, index: Any) -> Any:  # an Item for an int, a tuple of them for a slice
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        size = len(self)
        position = index + size if index < 0 else index
        if not 0 <= position < size:
            raise IndexError("item index out of range")
        block = bisect_right(self._ends, position)
        first = self._ends[block - 1] if block else 0
        return _loads(self._records(block)[position - first])

    def __iter__(self) -> Iterator[Item]:
        blocks = range(len(self._blocks) + 1)
        return (_loads(data) for block in blocks for data in self._records(block))

    def __reversed__(self) -> Iterator[Item]:
        blocks = range(len(self._blocks), -1, -1)
        return (_loads(data) for block in blocks for data in reversed(self._records(block)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Items) and (self._blocks, self._ends, self._tail) == (
            other._blocks,
            other._ends,
            other._tail,
        ):
            return True  # the same bytes (else item by item: blocks may be cut elsewhere)
        if isinstance(other, (Items, tuple, list)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to tuples of dicts, which hash to nothing

    def __repr__(self) -> str:
        return repr(tuple(self))

    @property
    def compressed_bytes(self) -> int:
        """What the items cost: the blocks (compressed, or a big item's own) and the uncompressed tail."""
        return sum(len(payload) for payload, _, _ in self._blocks) + sum(map(len, self._tail))


__all__ = ["BLOCK_BYTES", "ItemArchive", "Items"]
