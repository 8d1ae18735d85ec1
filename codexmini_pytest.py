"""pytest fixtures for testing code that drives codex through codexmini.

Opt-in, so the package stays dependency-free: enable it with
``pytest_plugins = ["codexmini_pytest"]`` in a ``conftest.py``,
or ``pytest -p codexmini_pytest``.  Each fixture is a factory;
what it made is stopped or removed after the test.

* ``scripted_model(script)``: a started :class:`~codexmini.testing.ScriptedModel`
  (point codex at ``Launch(endpoint=ModelEndpoint(model.url))``).
* ``fake_appserver(behaviour=CodexLike)``: a :class:`~codexmini.testing.FakeAppServer`
  in memory; ``Launch(launcher=fake.launch)`` starts a client on it, no codex needed.
* ``live_codex(script)``: a :class:`~codexmini.testing.live.LiveCodex` -- the real
  codex against a scripted model, in a scratch root; ``live.launch`` starts it.
  The test is skipped, with the reason, when no codex binary is found.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, List, Mapping

import pytest

from codexmini._errors import BinaryNotFound
from codexmini.testing.codex_like import CodexLike
from codexmini.testing.fake_appserver import FakeAppServer
from codexmini.testing.live import LiveCodex
from codexmini.testing.scripted_model import ScriptedModel


@pytest.fixture
def scripted_model() -> Iterator[Callable[[Mapping[str, Any]], ScriptedModel]]:
    """``scripted_model(script)`` → a started :class:`ScriptedModel`, stopped after the test."""
    started: List[ScriptedModel] = []

    def make(script: Mapping[str, Any]) -> ScriptedModel:
        model = ScriptedModel(dict(script)).start()
        started.append(model)
        return model

    yield make
    for model in started:
        model.stop()


@pytest.fixture
def fake_appserver() -> Callable[..., FakeAppServer]:
    """``fake_appserver(behaviour=CodexLike, *args)`` → a :class:`FakeAppServer`
    (nothing to stop: its in-memory servers end with their clients)."""

    def make(behaviour: Any = CodexLike, *args: str) -> FakeAppServer:
        return FakeAppServer(behaviour, *args)

    return make


@pytest.fixture
def live_codex() -> Iterator[Callable[..., LiveCodex]]:
    """``live_codex(script, **options)`` → a :class:`LiveCodex` (the real codex
    on a scripted model), closed after the test; skips without a codex binary."""
    made: List[LiveCodex] = []

    def make(script: Mapping[str, Any], **options: Any) -> LiveCodex:
        try:
            live = LiveCodex(script, **options)
        except BinaryNotFound as exc:
            pytest.skip(f"no codex binary: {exc}")
        made.append(live)
        return live

    yield make
    for live in made:
        live.close()


__all__ = ["fake_appserver", "live_codex", "scripted_model"]
