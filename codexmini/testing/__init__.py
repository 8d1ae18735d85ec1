"""Test utilities for code that drives codex through codexmini (like ``trio.testing``).

* :class:`ScriptedModel` -- a loopback OpenAI Responses API server driven by a
  JSON script, so a real codex binary runs offline (the smoke run, the fixture
  recorder and the live tests use it).

Public: downstream projects may use these in their own tests.  Nothing here
is imported by ``import codexmini``.
"""

from __future__ import annotations

from .scripted_model import ScriptedModel, provider_flags, validate_script

__all__ = ["ScriptedModel", "provider_flags", "validate_script"]
