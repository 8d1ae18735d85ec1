"""Test utilities for code that drives codex through codexmini (like ``trio.testing``).

* :class:`ScriptedModel` -- a loopback OpenAI Responses API server driven by a
  JSON script, so a real codex binary runs offline (the smoke run, the fixture
  recorder and the live tests use it); it calls only the tools a request
  offers, in the form offered, and answers a script that asks for another
  with a :class:`ScriptError`.
* :class:`FakeAppServer` -- one fake ``codex app-server`` playing a scripted
  behaviour, in memory (a launcher for ``AppServerClient.start``) or as a
  child process over real pipes; :class:`CodexLike` is a behaviour with the
  real shapes of threads and turns.
* :class:`Recorder` -- record mode: a client's frames with codex, saved as a
  transcript that :func:`fake_from_recording` plays back without codex.

Public: downstream projects may use these in their own tests.  Nothing here
is imported by ``import codexmini``.
"""

from __future__ import annotations

from .codex_like import CodexLike
from .fake_appserver import FakeAppServer, FakeError, MemoryTransport, ServerSide
from .record import Recorder, fake_from_recording
from .scripted_model import ScriptedModel, ScriptError, provider_flags, validate_script

__all__ = [
    "CodexLike",
    "FakeAppServer",
    "FakeError",
    "MemoryTransport",
    "Recorder",
    "ScriptError",
    "ScriptedModel",
    "ServerSide",
    "fake_from_recording",
    "provider_flags",
    "validate_script",
]
