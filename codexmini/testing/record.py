"""Record mode: a client's conversation with codex, saved to replay later without codex.

A :class:`Recorder` is a frame tap (``AppServerClient.start(launch,
tap=recorder)``): it keeps every frame each way.  ``save(path)`` writes the
transcript as JSON lines ``{"dir": "in"|"out", "frame": …}`` -- ``in`` what
codex sent, ``out`` what the client sent -- with volatile values normalised
(ids, times, the directories named in ``paths``, see :class:`~.normalize.Normaliser`),
the same format as the project's own recordings.  :func:`fake_from_recording` makes a
:class:`~.fake_appserver.FakeAppServer` that plays a saved transcript back:
it sends what codex sent and expects what the client sent (in any order,
normalised alike); a client that sends anything else makes the fake exit
(status 3) with the difference on its stderr, so the code under test fails
fast instead of hanging.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, Optional

from .fake_appserver import FakeAppServer
from .normalize import Normaliser
from .replay import Replay, load_transcript


class Recorder:
    """Every frame of one client, each way; a tap.  ``paths`` maps the
    directories of this run (a workspace, ``CODEX_HOME``) to placeholders
    (``{"/var/tmp/ws-1": "{WS}"}``) that :func:`fake_from_recording` maps back."""

    def __init__(self, paths: Optional[Mapping[str, str]] = None) -> None:
        self.paths = dict(paths or {})
        self.frames: List[Dict[str, Any]] = []

    def __call__(self, direction: str, frame: Mapping[str, Any]) -> None:
        self.frames.append({"dir": direction, "frame": json.loads(json.dumps(frame))})  # a copy, as sent

    def transcript(self) -> List[Dict[str, Any]]:
        """The frames so far, normalised (one numbering of ids for the whole conversation)."""
        norm = Normaliser(self.paths)
        return [{"dir": entry["dir"], "frame": norm.normalise(entry["frame"])} for entry in self.frames]

    def save(self, path: str) -> None:
        """Write :meth:`transcript` to ``path``, one JSON line per frame."""
        with open(path, "w", encoding="utf-8") as fh:
            for entry in self.transcript():
                fh.write(json.dumps(entry, ensure_ascii=False) + "\n")


def fake_from_recording(path: str, paths: Optional[Mapping[str, str]] = None, wait: float = 20.0) -> FakeAppServer:
    """A fake app-server playing the transcript saved at ``path``; ``paths``
    maps this run's directories to the placeholders of the recording."""
    return FakeAppServer(Replay(load_transcript(path), Normaliser(paths), wait))


__all__ = ["Recorder", "fake_from_recording"]
