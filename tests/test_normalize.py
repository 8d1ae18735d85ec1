"""``codexmini.testing.normalize``: what makes two recordings comparable.

The :class:`Normaliser` rewrites what changes from run to run (ids, times,
paths, ports, the machine in a user agent) to stable placeholders; the
replay (tests/test_replay.py) and the scenario harness
(``conformance/harness.py``) use it on every frame.  Here: versions left
alone without a version to replace, and a ``userAgent`` that is not one.
"""

from __future__ import annotations

from codexmini.testing.normalize import Normaliser


def test_normaliser_without_a_version_leaves_version_strings() -> None:
    norm = Normaliser()
    assert norm.text("codexmini/0.2.0 at http://127.0.0.1:4711/v1") == "codexmini/0.2.0 at http://127.0.0.1:PORT/v1"


def test_normaliser_user_agent_that_is_not_one_is_normalised_as_text() -> None:
    norm = Normaliser({"/var/tmp/x": "/WS"})
    assert norm.normalise({"userAgent": "no slash in /var/tmp/x"}) == {"userAgent": "no slash in /WS"}
    assert norm.normalise({"userAgent": "codex/1.2 (Linux; x) xterm"}) == {"userAgent": "codex/1.2 (OS) TERM (CLIENT)"}
