"""What a test of ``codexmini.sync`` or of its portal may leave behind: nothing.

:func:`nothing_left` wraps a test (each file's autouse fixture): no
``codexmini-sync`` loop thread started during it outlives it, and no sync
object is left in the open-object registry (``_portal._open``).
"""

from __future__ import annotations

import contextlib
import threading
from typing import Iterator, List

from codexmini import _portal

#: Every wait of the sync and portal tests is bounded by this.
BOUND = 30.0


def portal_threads() -> List[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("codexmini-sync-")]


@contextlib.contextmanager
def nothing_left() -> Iterator[None]:
    before = set(portal_threads())
    yield
    assert set(portal_threads()) - before == set(), "a codexmini.sync loop thread outlived its test"
    assert not _portal._open, f"left open: {list(_portal._open)}"
